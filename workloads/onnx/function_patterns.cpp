#include "workloads/onnx/function_patterns.h"

#include <algorithm>
#include <iterator>
#include <cmath>
#include <map>
#include <set>
#include <string_view>

#include "workloads/onnx/shape_folding.h"

namespace coda::workload::onnx {

const char* to_string(RecognisedFunction f) {
  switch (f) {
    case RecognisedFunction::RmsNorm:
      return "rms_norm";
    case RecognisedFunction::LayerNorm:
      return "layer_norm";
    case RecognisedFunction::Gelu:
      return "gelu";
    case RecognisedFunction::Silu:
      return "silu";
  }
  return "?";
}

namespace {

constexpr std::size_t kNone = static_cast<std::size_t>(-1);

bool near(std::optional<double> value, double target) {
  return value && std::fabs(*value - target) <= 1e-3 * std::fabs(target);
}

class Matcher {
 public:
  Matcher(const ::onnx::GraphProto& g, const PatternValues& v) : g_(g), v_(v) {
    for (int i = 0; i < g.node_size(); ++i) {
      const auto& node = g.node(i);
      const auto index = static_cast<std::size_t>(i);
      for (const std::string& out : node.output())
        if (!out.empty()) producer_.emplace(out, index);
      for (const std::string& in : node.input())
        if (!in.empty()) readers_[in].push_back(index);
      // A node that reads only constants computes one (an Identity of a shared weight).
      const bool all_constant =
          node.input_size() > 0 &&
          std::all_of(node.input().begin(), node.input().end(),
                      [&](const std::string& in) { return in.empty() || constant(in); });
      if (all_constant)
        for (const std::string& out : node.output()) derived_.insert(out);
    }
    for (const auto& out : g.output()) results_.insert(out.name());
  }

  std::vector<FunctionMatch> run() {
    std::vector<FunctionMatch> found;
    std::vector<bool> used(static_cast<std::size_t>(g_.node_size()), false);
    for (std::size_t i = 0; i < used.size(); ++i) {
      const std::string& type = g_.node(static_cast<int>(i)).op_type();
      std::optional<FunctionMatch> m;
      if (type == "ReduceMean") m = norm(i);
      if (type == "Erf") m = gelu_erf(i);
      if (type == "Tanh") m = gelu_tanh(i);
      if (type == "Sigmoid") m = silu(i);
      if (!m ||
          std::any_of(m->nodes.begin(), m->nodes.end(), [&](std::size_t n) { return used[n]; }))
        continue;
      for (const std::size_t n : m->nodes) used[n] = true;
      found.push_back(std::move(*m));
    }
    std::sort(found.begin(), found.end(), [](const FunctionMatch& a, const FunctionMatch& b) {
      return a.nodes.back() < b.nodes.back();
    });
    return found;
  }

 private:
  using Nodes = std::set<std::size_t>;

  const ::onnx::NodeProto& node(std::size_t i) const { return g_.node(static_cast<int>(i)); }
  bool constant(const std::string& name) const {
    return v_.is_constant(name) || derived_.count(name) > 0;
  }
  std::optional<double> scalar(const std::string& name) const {
    return constant(name) ? v_.scalar(name) : std::nullopt;
  }
  std::size_t producer(const std::string& name) const {
    const auto it = producer_.find(name);
    return it == producer_.end() ? kNone : it->second;
  }
  bool is(std::size_t n, std::string_view type) const {
    return n != kNone && node(n).op_type() == type &&
           (node(n).domain().empty() || node(n).domain() == "ai.onnx");
  }
  // The value before any Casts and Identities that lead to `name`, adding them to `nodes`.
  std::string before_casts(std::string name, Nodes& nodes) const {
    for (std::size_t p = producer(name); is(p, "Cast") || is(p, "Identity"); p = producer(name)) {
      if (node(p).input_size() < 1) break;
      nodes.insert(p);
      name = node(p).input(0);
    }
    return name;
  }
  // The one node that reads `name` (none when it has other readers or is a graph result), past
  // any Casts and Identities between (added to `nodes`).
  std::size_t only_reader(std::string name, Nodes& nodes) const {
    while (true) {
      const auto it = readers_.find(name);
      if (it == readers_.end() || it->second.size() != 1 || results_.count(name) > 0) return kNone;
      const std::size_t r = it->second.front();
      if (!is(r, "Cast") && !is(r, "Identity")) return r;
      nodes.insert(r);
      name = node(r).output(0);
    }
  }
  // For a two-input node, the input that is not `name` (compared past Casts); empty if neither.
  std::string other(std::size_t n, const std::string& name, Nodes& nodes) const {
    const auto& nd = node(n);
    if (nd.input_size() != 2) return {};
    Nodes scratch;
    if (nd.input(0) == name || before_casts(nd.input(0), scratch) == name) {
      before_casts(nd.input(0), nodes);
      return nd.input(1);
    }
    if (nd.input(1) == name || before_casts(nd.input(1), scratch) == name) {
      before_casts(nd.input(1), nodes);
      return nd.input(0);
    }
    return {};
  }
  // The input of a two-input node that is a constant scalar near `target`: the other one.
  std::string other_than_scalar(std::size_t n, double target) const {
    const auto& nd = node(n);
    if (nd.input_size() != 2) return {};
    if (near(scalar(nd.input(1)), target)) return nd.input(0);
    if (near(scalar(nd.input(0)), target)) return nd.input(1);
    return {};
  }
  // The Mul that alone reads `value` (past Casts) and multiplies it by x (past Casts), added to
  // `nodes` with the Casts on its way; kNone otherwise.
  std::size_t product_with(const std::string& value, const std::string& x, Nodes& nodes) const {
    const std::size_t m = only_reader(value, nodes);
    if (!is(m, "Mul")) return kNone;
    const std::string o = other(m, value, nodes);
    if (o.empty() || before_casts(o, nodes) != x) return kNone;
    nodes.insert(m);
    return m;
  }
  // A ReduceMean over the last axis only, keeping it.
  bool mean_over_last_axis(std::size_t n) const {
    const auto& nd = node(n);
    if (!is(n, "ReduceMean") || nd.input_size() < 1) return false;
    std::int64_t keep = 1;
    std::optional<std::vector<std::int64_t>> axes;
    for (const auto& a : nd.attribute()) {
      if (a.name() == "keepdims") keep = a.i();
      if (a.name() == "axes") axes = std::vector<std::int64_t>(a.ints().begin(), a.ints().end());
    }
    if (nd.input_size() >= 2 && !nd.input(1).empty()) axes = v_.ints(nd.input(1));
    const auto shape = v_.shape(nd.input(0));
    if (keep != 1 || !axes || axes->size() != 1 || !shape || shape->empty()) return false;
    const auto rank = static_cast<std::int64_t>(shape->size());
    return (*axes)[0] == -1 || (*axes)[0] == rank - 1;
  }
  // A constant over the last axis of `x`: shape [H].
  bool over_last_axis(const std::string& c, const std::string& x) const {
    const auto cs = v_.shape(c), xs = v_.shape(x);
    return constant(c) && cs && xs && !xs->empty() && cs->size() == 1 && (*cs)[0] == xs->back();
  }
  // The pattern as a match, when its intermediates stay inside it and `out` is written last.
  // A Cast or Identity of x whose result is also read outside (an fp32 export's x.to(float32)
  // feeding the residual too) is left out of the pattern: it is imported on its own, and the
  // pattern's op reads x.
  std::optional<FunctionMatch> finish(RecognisedFunction f, Nodes nodes, const std::string& x,
                                      const std::string& out, std::string weight = {},
                                      std::string bias = {}) const {
    for (auto it = nodes.begin(); it != nodes.end();) {
      const auto& nd = node(*it);
      const bool boundary = (is(*it, "Cast") || is(*it, "Identity")) && nd.input_size() == 1 &&
                            nodes.count(producer(nd.input(0))) == 0;
      const auto readers = readers_.find(nd.output(0));
      const bool read_outside = results_.count(nd.output(0)) > 0 ||
                                (readers != readers_.end() &&
                                 std::any_of(readers->second.begin(), readers->second.end(),
                                             [&](std::size_t r) { return nodes.count(r) == 0; }));
      it = boundary && read_outside ? nodes.erase(it) : std::next(it);
    }
    if (nodes.empty() || producer(out) != *nodes.rbegin()) return std::nullopt;
    for (const std::size_t n : nodes)
      for (const std::string& o : node(n).output()) {
        if (o.empty() || o == out) continue;
        if (results_.count(o) > 0) return std::nullopt;
        if (const auto it = readers_.find(o); it != readers_.end())
          for (const std::size_t r : it->second)
            if (nodes.count(r) == 0) return std::nullopt;
      }
    if (nodes.count(producer(x)) > 0) return std::nullopt;
    return FunctionMatch{f,  {nodes.begin(), nodes.end()}, x, std::move(weight), std::move(bias),
                         out};
  }

  // rms_norm and layer_norm, from the mean of the squares (`v`).
  std::optional<FunctionMatch> norm(std::size_t v) const {
    if (!mean_over_last_axis(v)) return std::nullopt;
    Nodes nodes{v};
    const std::size_t square = producer(before_casts(node(v).input(0), nodes));
    std::string base;
    if (is(square, "Pow") && node(square).input_size() == 2 &&
        near(scalar(node(square).input(1)), 2.0)) {
      base = before_casts(node(square).input(0), nodes);
    } else if (is(square, "Mul") && node(square).input_size() == 2) {
      Nodes a, b;
      base = before_casts(node(square).input(0), a);
      if (before_casts(node(square).input(1), b) != base) return std::nullopt;
      nodes.insert(a.begin(), a.end());
      nodes.insert(b.begin(), b.end());
    } else {
      return std::nullopt;
    }
    nodes.insert(square);
    const std::size_t add = only_reader(node(v).output(0), nodes);  // + eps, any scalar
    if (!is(add, "Add")) return std::nullopt;
    const std::string eps = other(add, node(v).output(0), nodes);
    if (eps.empty() || !scalar(eps)) return std::nullopt;
    nodes.insert(add);
    const std::size_t sqrt = only_reader(node(add).output(0), nodes);
    if (!is(sqrt, "Sqrt")) return std::nullopt;
    nodes.insert(sqrt);
    const std::string& root = node(sqrt).output(0);
    const std::size_t r = only_reader(root, nodes);
    std::string normalized;
    const bool reciprocal =
        is(r, "Reciprocal") || (is(r, "Div") && node(r).input_size() == 2 &&
                                node(r).input(1) == root && near(scalar(node(r).input(0)), 1.0));
    if (reciprocal) {
      nodes.insert(r);
      const std::size_t m = product_with(node(r).output(0), base, nodes);
      if (m == kNone) return std::nullopt;
      normalized = node(m).output(0);
    } else if (is(r, "Div") && node(r).input_size() == 2 && node(r).input(1) == root &&
               before_casts(node(r).input(0), nodes) == base) {
      nodes.insert(r);
      normalized = node(r).output(0);
    } else {
      return std::nullopt;
    }
    // Centred (x - mean(x)): layer_norm of x; else rms_norm of the base.
    RecognisedFunction f = RecognisedFunction::RmsNorm;
    std::string x = base;
    const std::size_t sub = producer(base);
    if (is(sub, "Sub") && node(sub).input_size() == 2) {
      Nodes centred{sub};
      const std::string x0 = before_casts(node(sub).input(0), centred);
      const std::size_t mean = producer(before_casts(node(sub).input(1), centred));
      if (mean != kNone && mean_over_last_axis(mean) &&
          before_casts(node(mean).input(0), centred) == x0) {
        centred.insert(mean);
        nodes.insert(centred.begin(), centred.end());
        f = RecognisedFunction::LayerNorm;
        x = x0;
      }
    }
    // The scale (required), and layer_norm's shift.
    const std::size_t scale = only_reader(normalized, nodes);
    if (!is(scale, "Mul")) return std::nullopt;
    const std::string weight = other(scale, normalized, nodes);
    if (weight.empty() || !over_last_axis(weight, x)) return std::nullopt;
    nodes.insert(scale);
    std::string out = node(scale).output(0);
    std::string bias;
    if (f == RecognisedFunction::LayerNorm) {
      Nodes shift_nodes;
      const std::size_t shift = only_reader(out, shift_nodes);
      if (is(shift, "Add")) {
        const std::string b = other(shift, out, shift_nodes);
        if (!b.empty() && over_last_axis(b, x)) {
          nodes.insert(shift_nodes.begin(), shift_nodes.end());
          nodes.insert(shift);
          bias = b;
          out = node(shift).output(0);
        }
      }
    }
    return finish(f, nodes, x, out, weight, bias);
  }

  // 1 + erf(...) or 1 + tanh(...) at `a`: the product with 0.5 and x that ends a GELU.
  std::optional<FunctionMatch> gelu_tail(const std::string& a, const std::string& x,
                                         Nodes& nodes) const {
    const std::size_t m = only_reader(a, nodes);
    if (!is(m, "Mul")) return std::nullopt;
    nodes.insert(m);
    const std::string o = other(m, a, nodes);
    if (o.empty()) return std::nullopt;
    Nodes scratch;
    if (before_casts(o, scratch) == x) {  // x * (1 + erf), then * 0.5
      before_casts(o, nodes);
      const std::size_t half = only_reader(node(m).output(0), nodes);
      if (!is(half, "Mul") || other_than_scalar(half, 0.5).empty()) return std::nullopt;
      nodes.insert(half);
      return finish(RecognisedFunction::Gelu, nodes, x, node(half).output(0));
    }
    if (near(scalar(o), 0.5)) {  // 0.5 * (1 + erf), then * x
      const std::size_t times_x = product_with(node(m).output(0), x, nodes);
      if (times_x == kNone) return std::nullopt;
      return finish(RecognisedFunction::Gelu, nodes, x, node(times_x).output(0));
    }
    const std::size_t half_x = producer(o);  // (x * 0.5) * (1 + erf)
    if (!is(half_x, "Mul")) return std::nullopt;
    const std::string xo = other_than_scalar(half_x, 0.5);
    if (xo.empty() || before_casts(xo, nodes) != x) return std::nullopt;
    nodes.insert(half_x);
    return finish(RecognisedFunction::Gelu, nodes, x, node(m).output(0));
  }

  // The Add of 1 that reads `value` (erf's or tanh's output).
  std::size_t plus_one(const std::string& value, Nodes& nodes) const {
    const std::size_t add = only_reader(value, nodes);
    return is(add, "Add") && !other_than_scalar(add, 1.0).empty() ? add : kNone;
  }

  std::optional<FunctionMatch> gelu_erf(std::size_t e) const {
    if (node(e).input_size() != 1) return std::nullopt;
    const std::size_t scale = producer(node(e).input(0));
    std::string x;
    if (is(scale, "Div") && node(scale).input_size() == 2 &&
        near(scalar(node(scale).input(1)), std::sqrt(2.0)))
      x = node(scale).input(0);
    else if (is(scale, "Mul"))
      x = other_than_scalar(scale, 1.0 / std::sqrt(2.0));
    if (x.empty()) return std::nullopt;
    Nodes nodes{scale, e};
    x = before_casts(x, nodes);
    const std::size_t add = plus_one(node(e).output(0), nodes);
    if (add == kNone) return std::nullopt;
    nodes.insert(add);
    return gelu_tail(node(add).output(0), x, nodes);
  }

  // Whether `value` is x^3: Pow(x, 3), or x * (x * x) as torch exports x ** 3 below opset 15
  // (its nodes added to `nodes`).
  bool cube(const std::string& value, const std::string& x, Nodes& nodes) const {
    const std::size_t p = producer(value);
    Nodes found{p};
    if (is(p, "Pow") && node(p).input_size() == 2 && near(scalar(node(p).input(1)), 3.0) &&
        before_casts(node(p).input(0), found) == x) {
      nodes.insert(found.begin(), found.end());
      return true;
    }
    if (!is(p, "Mul") || node(p).input_size() != 2) return false;
    for (int side = 0; side < 2; ++side) {
      Nodes f{p};
      const std::size_t square = producer(node(p).input(1 - side));
      if (before_casts(node(p).input(side), f) != x || !is(square, "Mul") ||
          node(square).input_size() != 2 || before_casts(node(square).input(0), f) != x ||
          before_casts(node(square).input(1), f) != x)
        continue;
      f.insert(square);
      nodes.insert(f.begin(), f.end());
      return true;
    }
    return false;
  }

  std::optional<FunctionMatch> gelu_tanh(std::size_t t) const {
    if (node(t).input_size() != 1) return std::nullopt;
    const std::size_t scale = producer(node(t).input(0));
    if (!is(scale, "Mul")) return std::nullopt;
    const std::string u = other_than_scalar(scale, std::sqrt(2.0 / 3.14159265358979323846));
    const std::size_t sum = producer(u);
    if (u.empty() || !is(sum, "Add") || node(sum).input_size() != 2) return std::nullopt;
    for (int side = 0; side < 2; ++side) {
      Nodes nodes{scale, t, sum};
      const std::string x = before_casts(node(sum).input(side), nodes);
      const std::size_t cubic = producer(node(sum).input(1 - side));
      if (!is(cubic, "Mul")) continue;
      if (!cube(other_than_scalar(cubic, 0.044715), x, nodes)) continue;
      nodes.insert(cubic);
      const std::size_t add = plus_one(node(t).output(0), nodes);
      if (add == kNone) return std::nullopt;
      nodes.insert(add);
      return gelu_tail(node(add).output(0), x, nodes);
    }
    return std::nullopt;
  }

  std::optional<FunctionMatch> silu(std::size_t s) const {
    if (node(s).input_size() != 1) return std::nullopt;
    Nodes nodes{s};
    const std::string x = before_casts(node(s).input(0), nodes);
    const std::size_t m = product_with(node(s).output(0), x, nodes);
    if (m == kNone) return std::nullopt;
    return finish(RecognisedFunction::Silu, nodes, x, node(m).output(0));
  }

  const ::onnx::GraphProto& g_;
  const PatternValues& v_;
  std::map<std::string, std::size_t, std::less<>> producer_;
  std::map<std::string, std::vector<std::size_t>, std::less<>> readers_;
  std::set<std::string, std::less<>> derived_;
  std::set<std::string, std::less<>> results_;
};

}  // namespace

std::vector<FunctionMatch> find_function_patterns(const ::onnx::GraphProto& graph,
                                                  const PatternValues& values) {
  return Matcher(graph, values).run();
}

}  // namespace coda::workload::onnx
