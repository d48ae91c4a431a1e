#include "workloads/onnx/shape_folding.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace coda::workload::onnx {
namespace {

using T = ::onnx::TensorProto;

// A folded value: its dims and its elements, as doubles (exact for the integers of shapes, far
// below 2^53) with the ONNX element type it has.
struct Value {
  std::vector<std::int64_t> dims;
  std::vector<double> data;
  std::int32_t type = T::INT64;
};

// The elements of `dims`; SIZE_MAX for a negative dim or a count past kMaxFoldedElements'
// reach (so any bytes are safe: fuzz/onnx_fuzz.cpp).
std::size_t count(const std::vector<std::int64_t>& dims) {
  std::size_t n = 1;
  for (const std::int64_t d : dims) {
    if (d < 0 || (d > 0 && n > (std::size_t{1} << 40) / static_cast<std::size_t>(d)))
      return std::numeric_limits<std::size_t>::max();
    n *= static_cast<std::size_t>(d);
  }
  return n;
}

// `d` as an integer when it is one within +-2^53 (a value of a shape computation).
std::optional<std::int64_t> as_int(double d) {
  if (!std::isfinite(d) || std::fabs(d) > 9007199254740992.0 || d != std::trunc(d))
    return std::nullopt;
  return static_cast<std::int64_t>(d);
}

// The single element of a value, as an integer.
std::optional<std::int64_t> scalar_int(const Value* v) {
  if (v == nullptr || v->data.size() != 1) return std::nullopt;
  return as_int(v->data[0]);
}

bool integral_type(std::int32_t type) {
  return type == T::INT64 || type == T::INT32 || type == T::BOOL || type == T::INT8 ||
         type == T::UINT8;
}
bool float_type(std::int32_t type) {
  return type == T::FLOAT || type == T::DOUBLE || type == T::FLOAT16 || type == T::BFLOAT16;
}

template <class Raw>
void append_raw(const std::string& raw, std::vector<double>& out) {
  for (std::size_t i = 0; i + sizeof(Raw) <= raw.size(); i += sizeof(Raw)) {
    Raw v{};
    std::memcpy(&v, raw.data() + i, sizeof(Raw));  // ONNX raw_data is little-endian, as x86
    out.push_back(static_cast<double>(v));
  }
}

// A constant's value, when it is small and of a type folded here.
std::optional<Value> value_of(const T& t) {
  Value v;
  v.dims.assign(t.dims().begin(), t.dims().end());
  for (const std::int64_t d : v.dims)
    if (d < 0) return std::nullopt;
  const std::size_t n = count(v.dims);
  if (n > kMaxFoldedElements) return std::nullopt;
  v.type = t.data_type();
  if (v.type == T::INT64 || v.type == T::INT32) {
    for (const std::int64_t i : integer_values(t)) v.data.push_back(static_cast<double>(i));
  } else if (v.type == T::FLOAT) {
    if (t.has_raw_data())
      append_raw<float>(t.raw_data(), v.data);
    else
      v.data.assign(t.float_data().begin(), t.float_data().end());
  } else if (v.type == T::DOUBLE) {
    if (t.has_raw_data())
      append_raw<double>(t.raw_data(), v.data);
    else
      v.data.assign(t.double_data().begin(), t.double_data().end());
  } else {
    return std::nullopt;
  }
  if (v.data.size() != n) return std::nullopt;  // stripped, or stored short
  return v;
}

T tensor_of(const std::string& name, const Value& v) {
  T t;
  t.set_name(name);
  for (const std::int64_t d : v.dims) t.add_dims(d);
  if (float_type(v.type)) {
    t.set_data_type(T::FLOAT);
    for (const double x : v.data) t.add_float_data(static_cast<float>(x));
  } else if (v.type == T::BOOL || v.type == T::INT32) {  // ONNX stores bools in int32_data
    t.set_data_type(v.type);
    for (const double x : v.data) t.add_int32_data(static_cast<std::int32_t>(x));
  } else {
    t.set_data_type(T::INT64);
    for (const double x : v.data) t.add_int64_data(static_cast<std::int64_t>(x));
  }
  return t;
}


std::int64_t int_attribute(const ::onnx::NodeProto& node, std::string_view name,
                           std::int64_t fallback) {
  const auto* a = find_attribute(node, name);
  return a != nullptr && a->has_i() ? a->i() : fallback;
}

// Numpy broadcasting of two values of at most one dimension's difference in their element
// counts: equal counts, or one of them a single element. nullopt otherwise.
std::optional<Value> broadcast(const Value& a, const Value& b,
                               const std::function<double(double, double)>& f) {
  Value out;
  if (a.data.empty() || b.data.empty()) return std::nullopt;
  const bool a_one = a.data.size() == 1, b_one = b.data.size() == 1;
  if (a.data.size() != b.data.size() && !a_one && !b_one) return std::nullopt;
  // The result has the shape of the operand with more elements (or, as many, more dims).
  const Value& bigger = a.data.size() != b.data.size() ? (a.data.size() > b.data.size() ? a : b)
                                                       : (a.dims.size() >= b.dims.size() ? a : b);
  out.dims = bigger.dims;
  const std::size_t n = std::max(a.data.size(), b.data.size());
  for (std::size_t i = 0; i < n; ++i)
    out.data.push_back(f(a.data[a_one ? 0 : i], b.data[b_one ? 0 : i]));
  out.type = float_type(a.type) || float_type(b.type) ? T::FLOAT : a.type;
  return out;
}

// The element count a Slice or Gather index addresses, wrapped as ONNX wraps negatives.
std::int64_t wrap(std::int64_t i, std::int64_t n) { return i < 0 ? i + n : i; }

using Known = std::map<std::string, Value, std::less<>>;

std::optional<Value> evaluate(const ::onnx::NodeProto& node, const Known& known,
                              const std::map<std::string, std::vector<std::int64_t>>& shapes) {
  const std::string& op = node.op_type();
  if (!node.domain().empty() && node.domain() != "ai.onnx") return std::nullopt;
  if (node.output_size() != 1) return std::nullopt;
  if (op == "Shape") {
    if (node.input_size() < 1) return std::nullopt;
    const auto s = shapes.find(node.input(0));
    if (s == shapes.end()) return std::nullopt;
    const auto rank = static_cast<std::int64_t>(s->second.size());
    const std::int64_t start =
        std::clamp(wrap(int_attribute(node, "start", 0), rank), std::int64_t{0}, rank);
    const std::int64_t end =
        std::clamp(wrap(int_attribute(node, "end", rank), rank), std::int64_t{0}, rank);
    Value v;
    for (std::int64_t i = start; i < end; ++i)
      v.data.push_back(static_cast<double>(s->second[static_cast<std::size_t>(i)]));
    v.dims = {static_cast<std::int64_t>(v.data.size())};
    return v;
  }
  // Every other op: every input known.
  std::vector<const Value*> in;
  for (const std::string& name : node.input()) {
    if (name.empty()) {
      in.push_back(nullptr);
      continue;
    }
    const auto it = known.find(name);
    if (it == known.end()) return std::nullopt;
    in.push_back(&it->second);
  }
  if (in.empty() || in[0] == nullptr) return std::nullopt;
  const Value& x = *in[0];
  const auto binary = [&](const std::function<double(double, double)>& f) -> std::optional<Value> {
    if (in.size() != 2 || in[1] == nullptr) return std::nullopt;
    return broadcast(x, *in[1], f);
  };
  const bool integral = integral_type(x.type);
  if (op == "Add") return binary(std::plus<>());
  if (op == "Sub") return binary(std::minus<>());
  if (op == "Mul") return binary(std::multiplies<>());
  if (op == "Div")
    return binary([integral](double a, double b) {
      if (b == 0) return std::numeric_limits<double>::quiet_NaN();
      return integral ? std::trunc(a / b) : a / b;
    });
  if (op == "Mod") return binary([](double a, double b) { return b == 0 ? a : std::fmod(a, b); });
  if (op == "Max") return binary([](double a, double b) { return std::max(a, b); });
  if (op == "Min") return binary([](double a, double b) { return std::min(a, b); });
  if (op == "Equal") {
    auto v = binary([](double a, double b) { return a == b ? 1.0 : 0.0; });
    if (v) v->type = T::BOOL;
    return v;
  }
  if (op == "Less" || op == "Greater") {
    const bool less = op == "Less";
    auto v = binary([less](double a, double b) { return (less ? a < b : a > b) ? 1.0 : 0.0; });
    if (v) v->type = T::BOOL;
    return v;
  }
  const auto unary = [&](const std::function<double(double)>& f) {
    Value v = x;
    for (double& d : v.data) d = f(d);
    return v;
  };
  if (op == "Neg") return unary([](double a) { return -a; });
  if (op == "Sqrt") return unary([](double a) { return std::sqrt(a); });
  if (op == "Reciprocal") return unary([](double a) { return 1.0 / a; });
  if (op == "Floor") return unary([](double a) { return std::floor(a); });
  if (op == "Ceil") return unary([](double a) { return std::ceil(a); });
  if (op == "Identity") return x;
  if (op == "Cast") {
    const std::int64_t to = int_attribute(node, "to", T::INT64);
    Value v = x;
    if (integral_type(static_cast<std::int32_t>(to))) {
      for (double& d : v.data) d = std::trunc(d);
      v.type = static_cast<std::int32_t>(to) == T::INT32 ? T::INT32 : T::INT64;
    } else if (float_type(static_cast<std::int32_t>(to))) {
      v.type = T::FLOAT;
    } else {
      return std::nullopt;
    }
    return v;
  }
  if (op == "Unsqueeze" || op == "Squeeze") {
    std::vector<std::int64_t> axes;
    if (in.size() >= 2 && in[1] != nullptr) {
      for (const double a : in[1]->data) {
        const auto i = as_int(a);
        if (!i) return std::nullopt;
        axes.push_back(*i);
      }
    } else if (const auto* a = find_attribute(node, "axes"); a != nullptr)
      axes.assign(a->ints().begin(), a->ints().end());
    Value v = x;
    if (op == "Unsqueeze") {
      const auto rank = static_cast<std::int64_t>(x.dims.size() + axes.size());
      for (std::int64_t& a : axes) a = wrap(a, rank);
      std::sort(axes.begin(), axes.end());
      for (const std::int64_t a : axes) {
        if (a < 0 || a > static_cast<std::int64_t>(v.dims.size())) return std::nullopt;
        v.dims.insert(v.dims.begin() + a, 1);
      }
    } else {
      const auto rank = static_cast<std::int64_t>(x.dims.size());
      std::vector<std::int64_t> dims;
      for (std::int64_t d = 0; d < rank; ++d) {
        const bool listed = std::any_of(axes.begin(), axes.end(),
                                        [&](std::int64_t a) { return wrap(a, rank) == d; });
        const std::int64_t extent = x.dims[static_cast<std::size_t>(d)];
        if ((axes.empty() && extent == 1) || (listed && extent == 1)) continue;
        if (listed) return std::nullopt;  // squeezing a dim that is not 1
        dims.push_back(extent);
      }
      v.dims = dims;
    }
    return v;
  }
  if (op == "Concat") {
    if (x.dims.size() > 1) return std::nullopt;  // shape vectors only
    Value v;
    v.type = x.type;
    for (const Value* p : in) {
      if (p == nullptr || p->dims.size() > 1) return std::nullopt;
      v.data.insert(v.data.end(), p->data.begin(), p->data.end());
    }
    v.dims = {static_cast<std::int64_t>(v.data.size())};
    return v;
  }
  if (op == "Gather") {
    if (in.size() != 2 || in[1] == nullptr || x.dims.size() != 1) return std::nullopt;
    if (int_attribute(node, "axis", 0) != 0) return std::nullopt;
    Value v;
    v.type = x.type;
    v.dims = in[1]->dims;
    const auto n = static_cast<std::int64_t>(x.data.size());
    for (const double i : in[1]->data) {
      const auto index = as_int(i);
      if (!index) return std::nullopt;
      const std::int64_t at = wrap(*index, n);
      if (at < 0 || at >= n) return std::nullopt;
      v.data.push_back(x.data[static_cast<std::size_t>(at)]);
    }
    return v;
  }
  if (op == "Slice") {  // of a shape vector: starts, ends, axes (0), steps
    if (x.dims.size() != 1 || in.size() < 3) return std::nullopt;
    const auto first = scalar_int(in[1]), last = scalar_int(in[2]);
    if (!first || !last) return std::nullopt;
    if (in.size() >= 4 && in[3] != nullptr) {
      const auto axis = scalar_int(in[3]);
      if (!axis || wrap(*axis, 1) != 0) return std::nullopt;
    }
    if (in.size() >= 5 && in[4] != nullptr && scalar_int(in[4]) != std::optional<std::int64_t>(1))
      return std::nullopt;
    const auto n = static_cast<std::int64_t>(x.data.size());
    const auto clamp_to = [n](std::int64_t i) {
      return std::clamp(i >= n ? n : wrap(i, n), std::int64_t{0}, n);
    };
    const std::int64_t start = clamp_to(*first), end = clamp_to(*last);
    Value v;
    v.type = x.type;
    for (std::int64_t i = start; i < end; ++i)
      v.data.push_back(x.data[static_cast<std::size_t>(i)]);
    v.dims = {static_cast<std::int64_t>(v.data.size())};
    return v;
  }
  if (op == "Range") {
    if (in.size() != 3 || x.data.size() != 1 || in[1] == nullptr || in[2] == nullptr ||
        in[1]->data.size() != 1 || in[2]->data.size() != 1)
      return std::nullopt;
    const double start = x.data[0], limit = in[1]->data[0], delta = in[2]->data[0];
    if (delta == 0 || !std::isfinite(start) || !std::isfinite(limit) || !std::isfinite(delta))
      return std::nullopt;
    const double n = std::max(std::ceil((limit - start) / delta), 0.0);
    if (n > static_cast<double>(kMaxFoldedElements)) return std::nullopt;
    Value v;
    v.type = x.type;
    for (std::size_t i = 0; i < static_cast<std::size_t>(n); ++i)
      v.data.push_back(start + static_cast<double>(i) * delta);
    v.dims = {static_cast<std::int64_t>(v.data.size())};
    return v;
  }
  if (op == "Reshape") {  // of a small value: the target shape, with 0 and -1
    if (in.size() != 2 || in[1] == nullptr) return std::nullopt;
    Value v = x;
    v.dims.clear();
    std::int64_t known_product = 1, infer = -1;
    for (std::size_t i = 0; i < in[1]->data.size(); ++i) {
      const auto target = as_int(in[1]->data[i]);
      if (!target || *target < -1 || *target > static_cast<std::int64_t>(kMaxFoldedElements))
        return std::nullopt;
      std::int64_t d = *target;
      if (d == 0 && i < x.dims.size()) d = x.dims[i];
      if (d == -1) {
        if (infer >= 0) return std::nullopt;
        infer = static_cast<std::int64_t>(i);
      } else {
        known_product *= d;
      }
      v.dims.push_back(d);
    }
    if (infer >= 0) {
      if (known_product <= 0) return std::nullopt;
      v.dims[static_cast<std::size_t>(infer)] =
          static_cast<std::int64_t>(x.data.size()) / known_product;
    }
    if (count(v.dims) != x.data.size()) return std::nullopt;
    return v;
  }
  if (op == "Where") {
    if (in.size() != 3 || in[1] == nullptr || in[2] == nullptr) return std::nullopt;
    const std::size_t n = std::max({x.data.size(), in[1]->data.size(), in[2]->data.size()});
    for (const Value* p : in)
      if (p->data.size() != n && p->data.size() != 1) return std::nullopt;
    Value v = in[1]->data.size() == n ? *in[1] : *in[2];
    v.data.clear();
    const auto at = [n](const Value& p, std::size_t i) {
      return p.data[p.data.size() == n ? i : 0];
    };
    for (std::size_t i = 0; i < n; ++i)
      v.data.push_back(at(x, i) != 0 ? at(*in[1], i) : at(*in[2], i));
    return v;
  }
  if (op == "Trilu") {  // a small 2-D (or batched) mask: keep the lower or upper triangle
    if (x.dims.size() < 2) return std::nullopt;
    std::int64_t k = 0;
    if (in.size() >= 2 && in[1] != nullptr) {
      const auto given = scalar_int(in[1]);
      if (!given) return std::nullopt;
      k = *given;
    }
    const bool upper = int_attribute(node, "upper", 1) != 0;
    const std::int64_t rows = x.dims[x.dims.size() - 2], cols = x.dims.back();
    if (rows <= 0 || cols <= 0) return std::nullopt;
    Value v = x;
    for (std::size_t i = 0; i < v.data.size(); ++i) {
      const auto flat = static_cast<std::int64_t>(i);
      const std::int64_t c = flat % cols, r = (flat / cols) % rows;
      const bool keep = upper ? c - r >= k : c - r <= k;
      if (!keep) v.data[i] = 0;
    }
    return v;
  }
  if (op == "Expand") {  // numpy's two-way broadcast of a small value to a shape
    if (in.size() != 2 || in[1] == nullptr || in[1]->dims.size() != 1) return std::nullopt;
    std::vector<std::int64_t> target;
    for (const double d : in[1]->data) {
      const auto extent = as_int(d);
      if (!extent || *extent < 0) return std::nullopt;
      target.push_back(*extent);
    }
    const std::size_t rank = std::max(target.size(), x.dims.size());
    const auto padded = [rank](const std::vector<std::int64_t>& dims) {
      std::vector<std::int64_t> p(rank - dims.size(), 1);
      p.insert(p.end(), dims.begin(), dims.end());
      return p;
    };
    const std::vector<std::int64_t> from = padded(x.dims), to = padded(target);
    Value v;
    v.type = x.type;
    for (std::size_t i = 0; i < rank; ++i) {
      if (from[i] != to[i] && from[i] != 1 && to[i] != 1) return std::nullopt;
      v.dims.push_back(std::max(from[i], to[i]));
    }
    const std::size_t n = count(v.dims);
    if (n > kMaxFoldedElements) return std::nullopt;
    for (std::size_t flat = 0; flat < n; ++flat) {
      std::size_t rest = flat, source = 0, stride = 1;
      for (std::size_t i = rank; i-- > 0;) {
        const auto extent = static_cast<std::size_t>(v.dims[i]);
        const std::size_t index = rest % extent;
        rest /= extent;
        if (from[i] != 1) source += index * stride;
        stride *= static_cast<std::size_t>(from[i]);
      }
      v.data.push_back(x.data[source]);
    }
    return v;
  }
  if (op == "ConstantOfShape") {
    if (x.dims.size() != 1) return std::nullopt;
    Value v;
    for (const double d : x.data) {
      const auto extent = as_int(d);
      if (!extent || *extent < 0) return std::nullopt;
      v.dims.push_back(*extent);
    }
    if (count(v.dims) > kMaxFoldedElements) return std::nullopt;
    double fill = 0;
    v.type = T::FLOAT;
    if (const auto* a = find_attribute(node, "value"); a != nullptr && a->has_t()) {
      const auto filled = value_of(a->t());
      if (!filled || filled->data.size() != 1) return std::nullopt;
      fill = filled->data[0];
      v.type = filled->type;
    }
    v.data.assign(count(v.dims), fill);
    return v;
  }
  return std::nullopt;
}

// A Split of a small 1-D value along axis 0 into the parts its `split` input (or attribute)
// sizes, or into equal parts: one value per output; nullopt otherwise.
std::optional<std::vector<Value>> split_values(const ::onnx::NodeProto& node, const Known& known) {
  if (node.op_type() != "Split" || (!node.domain().empty() && node.domain() != "ai.onnx") ||
      node.input_size() < 1 || node.output_size() < 1)
    return std::nullopt;
  const auto x = known.find(node.input(0));
  if (x == known.end() || x->second.dims.size() != 1) return std::nullopt;
  if (wrap(int_attribute(node, "axis", 0), 1) != 0) return std::nullopt;
  const auto n = static_cast<std::int64_t>(x->second.data.size());
  std::vector<std::int64_t> sizes;
  if (node.input_size() >= 2 && !node.input(1).empty()) {
    const auto s = known.find(node.input(1));
    if (s == known.end()) return std::nullopt;
    for (const double d : s->second.data) {
      const auto size = as_int(d);
      if (!size || *size < 0) return std::nullopt;
      sizes.push_back(*size);
    }
  } else if (const auto* a = find_attribute(node, "split"); a != nullptr) {
    sizes.assign(a->ints().begin(), a->ints().end());
  } else {
    const std::int64_t parts = node.output_size();
    if (n % parts != 0) return std::nullopt;
    sizes.assign(static_cast<std::size_t>(parts), n / parts);
  }
  if (sizes.size() != static_cast<std::size_t>(node.output_size())) return std::nullopt;
  std::vector<Value> out;
  std::int64_t at = 0;
  for (const std::int64_t size : sizes) {
    if (size < 0 || at + size > n) return std::nullopt;
    Value v;
    v.type = x->second.type;
    v.dims = {size};
    v.data.assign(x->second.data.begin() + at, x->second.data.begin() + at + size);
    at += size;
    out.push_back(std::move(v));
  }
  if (at != n) return std::nullopt;
  return out;
}

}  // namespace

const ::onnx::AttributeProto* find_attribute(const ::onnx::NodeProto& node, std::string_view name) {
  for (const auto& a : node.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

std::optional<double> scalar_value(const ::onnx::TensorProto& t) {
  const auto v = value_of(t);
  if (!v || v->data.size() != 1) return std::nullopt;
  return v->data[0];
}

std::vector<std::int64_t> integer_values(const ::onnx::TensorProto& t) {
  // Little-endian integers of `width` bytes, sign-extended (no detour through double: an int64
  // beyond 2^53 would not survive it).
  const auto raw_ints = [](const std::string& raw, std::size_t width) {
    std::vector<std::int64_t> out;
    for (std::size_t i = 0; i + width <= raw.size(); i += width) {
      std::uint64_t v = 0;
      for (std::size_t b = 0; b < width; ++b)
        v |= static_cast<std::uint64_t>(static_cast<unsigned char>(raw[i + b])) << (8 * b);
      if (width == 4)
        out.push_back(static_cast<std::int32_t>(static_cast<std::uint32_t>(v)));
      else
        out.push_back(static_cast<std::int64_t>(v));
    }
    return out;
  };
  std::vector<std::int64_t> values;
  if (t.data_type() == T::INT64) {
    if (t.has_raw_data())
      values = raw_ints(t.raw_data(), 8);
    else
      values.assign(t.int64_data().begin(), t.int64_data().end());
  } else if (t.data_type() == T::INT32) {
    if (t.has_raw_data())
      values = raw_ints(t.raw_data(), 4);
    else
      values.assign(t.int32_data().begin(), t.int32_data().end());
  }
  return values;
}

namespace {

// The static shape of every value that has one: the graph's inputs, value_info, outputs and
// initializers.
std::map<std::string, std::vector<std::int64_t>> static_shapes(const ::onnx::GraphProto& graph) {
  std::map<std::string, std::vector<std::int64_t>> shapes;
  const auto static_shape = [&](const ::onnx::ValueInfoProto& v) {
    if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) return;
    std::vector<std::int64_t> dims;
    for (const auto& d : v.type().tensor_type().shape().dim()) {
      if (!d.has_dim_value() || d.dim_value() < 0) return;
      dims.push_back(d.dim_value());
    }
    shapes[v.name()] = std::move(dims);
  };
  for (const auto& v : graph.input()) static_shape(v);
  for (const auto& v : graph.value_info()) static_shape(v);
  for (const auto& v : graph.output()) static_shape(v);
  for (const auto& t : graph.initializer())
    shapes[t.name()].assign(t.dims().begin(), t.dims().end());
  return shapes;
}

// The output dims of an Einsum in explicit form ("ij,jk->ik", no ellipsis) over inputs of the
// given shapes; nullopt when the equation is not of that form or the shapes disagree with it.
std::optional<std::vector<std::int64_t>> einsum_dims(
    std::string_view equation, const std::vector<std::vector<std::int64_t>>& inputs) {
  std::string eq;
  for (const char c : equation)
    if (c != ' ') eq.push_back(c);
  const auto arrow = eq.find("->");
  if (arrow == std::string::npos || eq.find('.') != std::string::npos) return std::nullopt;
  std::map<char, std::int64_t> extent;
  std::size_t operand = 0, axis = 0;
  for (std::size_t i = 0; i <= arrow; ++i) {
    const char c = i < arrow ? eq[i] : ',';
    if (c == ',') {
      if (operand >= inputs.size() || axis != inputs[operand].size()) return std::nullopt;
      ++operand;
      axis = 0;
      continue;
    }
    if (!std::isalpha(static_cast<unsigned char>(c)) || operand >= inputs.size() ||
        axis >= inputs[operand].size())
      return std::nullopt;
    const std::int64_t d = inputs[operand][axis++];
    const auto [it, inserted] = extent.emplace(c, d);
    if (!inserted && it->second != d) {
      if (it->second != 1 && d != 1) return std::nullopt;  // broadcasting a 1 only
      it->second = std::max(it->second, d);
    }
  }
  if (operand != inputs.size()) return std::nullopt;
  std::vector<std::int64_t> out;
  for (std::size_t i = arrow + 2; i < eq.size(); ++i) {
    const auto it = extent.find(eq[i]);
    if (it == extent.end()) return std::nullopt;
    out.push_back(it->second);
  }
  return out;
}

}  // namespace

std::size_t complete_einsum_shapes(::onnx::GraphProto& graph) {
  const auto shapes = static_shapes(graph);
  std::size_t completed = 0;
  for (const auto& node : graph.node()) {
    if (node.op_type() != "Einsum" || node.output_size() != 1 || node.output(0).empty() ||
        shapes.count(node.output(0)) > 0)
      continue;
    std::vector<std::vector<std::int64_t>> inputs;
    for (const std::string& in : node.input()) {
      const auto it = shapes.find(in);
      if (it == shapes.end()) break;
      inputs.push_back(it->second);
    }
    const auto* eq = find_attribute(node, "equation");
    if (eq == nullptr || inputs.size() != static_cast<std::size_t>(node.input_size())) continue;
    const auto dims = einsum_dims(eq->s(), inputs);
    if (!dims) continue;
    ::onnx::ValueInfoProto* info = nullptr;
    for (auto& v : *graph.mutable_value_info())
      if (v.name() == node.output(0)) info = &v;
    if (info == nullptr) {
      info = graph.add_value_info();
      info->set_name(node.output(0));
    }
    auto* tensor_type = info->mutable_type()->mutable_tensor_type();
    if (!tensor_type->has_elem_type()) tensor_type->set_elem_type(T::FLOAT);
    auto* shape = tensor_type->mutable_shape();
    shape->clear_dim();
    for (const std::int64_t d : *dims) shape->add_dim()->set_dim_value(d);
    ++completed;
  }
  return completed;
}

std::size_t fold_shape_arithmetic(::onnx::GraphProto& graph) {
  auto shapes = static_shapes(graph);
  Known known;
  for (const auto& t : graph.initializer())
    if (auto v = value_of(t)) known.emplace(t.name(), std::move(*v));
  for (const auto& node : graph.node())
    if (node.op_type() == "Constant" && node.output_size() == 1)
      if (const auto* a = find_attribute(node, "value"); a != nullptr && a->has_t())
        if (auto v = value_of(a->t())) known.emplace(node.output(0), std::move(*v));

  std::vector<bool> folded(static_cast<std::size_t>(graph.node_size()), false);
  std::size_t count_folded = 0;
  for (int i = 0; i < graph.node_size(); ++i) {
    const ::onnx::NodeProto& node = graph.node(i);
    if (node.op_type() == "Constant") continue;
    if (auto parts = split_values(node, known)) {
      for (int o = 0; o < node.output_size(); ++o) {
        if (node.output(o).empty()) continue;
        auto& part = (*parts)[static_cast<std::size_t>(o)];
        shapes[node.output(o)] = part.dims;
        known.insert_or_assign(node.output(o), std::move(part));
      }
      folded[static_cast<std::size_t>(i)] = true;
      ++count_folded;
      continue;
    }
    auto v = evaluate(node, known, shapes);
    if (!v || v->data.size() > kMaxFoldedElements || count(v->dims) != v->data.size()) continue;
    // Only what the initializer can hold exactly: integers within 2^53, floats within range.
    const bool floating = float_type(v->type);
    if (std::any_of(v->data.begin(), v->data.end(), [&](double d) {
          return floating ? !std::isfinite(d) || std::fabs(d) > std::numeric_limits<float>::max()
                          : !as_int(d).has_value();
        }))
      continue;
    shapes[node.output(0)] = v->dims;
    known.insert_or_assign(node.output(0), std::move(*v));
    folded[static_cast<std::size_t>(i)] = true;
    ++count_folded;
  }
  if (count_folded == 0) return 0;
  ::onnx::GraphProto rewritten_nodes;
  for (int i = 0; i < graph.node_size(); ++i) {
    if (!folded[static_cast<std::size_t>(i)]) {
      *rewritten_nodes.add_node() = graph.node(i);
      continue;
    }
    for (const std::string& out : graph.node(i).output())
      if (!out.empty()) *graph.add_initializer() = tensor_of(out, known.at(out));
  }
  graph.mutable_node()->Swap(rewritten_nodes.mutable_node());
  return count_folded;
}

}  // namespace coda::workload::onnx
