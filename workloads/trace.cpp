#include "workloads/trace.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <utility>
#include <variant>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/text.h"
#include "core/yaml_reader.h"

namespace coda::workload {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::uint64_t kSchemaVersion = 1;
// Limits that keep every product in verify() and the FLOP counts far from overflow.
constexpr std::uint64_t kMaxExtent = std::uint64_t{1} << 32;
constexpr std::int64_t kMaxCoefficient = std::int64_t{1} << 16;
constexpr std::int64_t kMaxOffset = std::int64_t{1} << 32;
constexpr std::size_t kMaxDims = 64;
// An op whose dims could not be read: its dim indices are not checked (one error is enough).
constexpr std::size_t kDimsUnknown = std::numeric_limits<std::size_t>::max();

// ---------------------------------------------------------------------------------------------
// Writing

Json index_json(const IndexExpr& index) {
  Json terms = Json::array();
  for (const IndexTerm& t : index.terms) terms.push_back({{"dim", t.dim}, {"coefficient", t.coefficient}});
  return {{"terms", std::move(terms)}, {"offset", index.offset}};
}

Json op_json(const Op& op) {
  Json dims = Json::array();
  for (const Dim& d : op.space.dims) dims.push_back({{"name", d.name}, {"extent", d.extent}});
  Json accesses = Json::array();
  for (const TensorAccess& a : op.space.accesses) {
    Json indices = Json::array();
    for (const IndexExpr& index : a.indices) indices.push_back(index_json(index));
    accesses.push_back({{"role", to_string(a.role)},
                        {"tensor", a.tensor},
                        {"shape", a.shape},
                        {"dtype", to_string(a.dtype)},
                        {"indices", std::move(indices)}});
  }
  Json tensors = Json::array();
  for (const TensorId t : op.tensors) tensors.push_back(t.value);
  Json j = {{"name", op.name},
            {"kind", to_string(op.kind)},
            {"function", to_string(op.function)},
            {"dims", std::move(dims)},
            {"accesses", std::move(accesses)},
            {"tensors", std::move(tensors)}};
  if (const auto* a = std::get_if<AttentionSpec>(&op.attributes)) {
    j["attributes"] = {{"causal", a->causal}};
    if (a->backward) j["attributes"]["backward"] = true;
    if (a->softcap > 0) j["attributes"]["softcap"] = a->softcap;
    if (a->window > 0) j["attributes"]["window"] = a->window;
    if (a->context_parallel > 1) j["attributes"]["context_parallel"] = a->context_parallel;
  }
  else if (const auto* c = std::get_if<CollectiveSpec>(&op.attributes))
    j["attributes"] = {{"ranks", c->ranks}};
  if (op.source != SourceLocation{})
    j["source"] = {{"file", op.source.file}, {"line", op.source.line}, {"column", op.source.column}};
  return j;
}

// ---------------------------------------------------------------------------------------------
// Reading

template <class E>
std::vector<std::pair<std::string_view, E>> enum_names() {
  std::vector<std::pair<std::string_view, E>> names;
  for (unsigned i = 0; i < 256; ++i) {
    const auto value = static_cast<E>(i);
    const std::string_view name = to_string(value);
    if (name == "unknown") break;
    names.emplace_back(name, value);
  }
  return names;
}

std::string child(std::string_view path, std::string_view key) {
  return path.empty() ? std::string(key) : fmt::format("{}.{}", path, key);
}
std::string item(std::string_view path, std::size_t i) { return fmt::format("{}[{}]", path, i); }

std::string_view type_name(const Json& j) {
  if (j.is_null()) return "null";
  if (j.is_boolean()) return "a boolean";
  if (j.is_number()) return "a number";
  if (j.is_string()) return "a string";
  if (j.is_array()) return "an array";
  return "an object";
}

class Reader {
 public:
  Reader(const std::string& file, Diagnostics& diags) : file_(file), diags_(diags) {}

  void error(const std::string& path, std::string message, std::string hint = {}) {
    diags_.error({file_, 0, 0}, path, std::move(message), std::move(hint));
  }

  bool expect(const Json& j, bool ok, const std::string& path, std::string_view what) {
    if (!ok) error(path, fmt::format("expected {}, found {}", what, type_name(j)));
    return ok;
  }

  // Reports every key of `object` not in `known`, with a did-you-mean.
  void reject_unknown_keys(const Json& object, const std::string& path,
                           std::initializer_list<std::string_view> known) {
    const std::vector<std::string_view> names(known);
    for (const auto& [key, value] : object.items()) {
      if (std::find(names.begin(), names.end(), key) != names.end()) continue;
      const auto close = did_you_mean(key, names);
      error(child(path, key),
            close ? fmt::format("unknown key (did you mean '{}'?)", *close) : "unknown key",
            close ? std::string() : fmt::format("valid keys here: {}", fmt::join(names, ", ")));
    }
  }

  // The value at `key`, or null (after reporting it when `required`).
  const Json* member(const Json& object, std::string_view key, const std::string& path,
                     bool required) {
    const auto it = object.find(key);
    if (it != object.end()) return &*it;
    if (required) error(path, fmt::format("missing required key '{}'", key));
    return nullptr;
  }

  bool read(const Json& j, const std::string& path, std::string& out) {
    if (!expect(j, j.is_string(), path, "a string")) return false;
    out = j.get<std::string>();
    return true;
  }
  bool read(const Json& j, const std::string& path, bool& out) {
    if (!expect(j, j.is_boolean(), path, "true or false")) return false;
    out = j.get<bool>();
    return true;
  }
  bool read(const Json& j, const std::string& path, std::uint64_t& out, std::uint64_t min,
            std::uint64_t max) {
    if (!expect(j, j.is_number_unsigned() || j.is_number_integer(), path, "a whole number"))
      return false;
    if (!j.is_number_unsigned()) {
      error(path, fmt::format("must be at least {}, not {}", min, j.get<std::int64_t>()));
      return false;
    }
    out = j.get<std::uint64_t>();
    if (out < min || out > max) {
      error(path, out < min ? fmt::format("must be at least {}, not {}", min, out)
                            : fmt::format("{} is out of range (at most {})", out, max));
      return false;
    }
    return true;
  }
  // A finite number above zero (a scale, a cap).
  bool read(const Json& j, const std::string& path, double& out) {
    if (!expect(j, j.is_number(), path, "a number")) return false;
    out = j.get<double>();
    if (std::isfinite(out) && out > 0) return true;
    error(path, fmt::format("must be above 0, not {}", dump_json(j)));
    return false;
  }
  bool read(const Json& j, const std::string& path, std::int64_t& out, std::int64_t limit) {
    if (!expect(j, j.is_number_integer(), path, "a whole number")) return false;
    const bool too_big = j.is_number_unsigned() &&
                         j.get<std::uint64_t>() > static_cast<std::uint64_t>(limit);
    out = too_big ? limit + 1 : j.get<std::int64_t>();
    if (out < -limit || out > limit) {
      error(path, fmt::format("{} is out of range (magnitude at most {})", dump_json(j), limit));
      return false;
    }
    return true;
  }
  template <class E>
  bool read_enum(const Json& j, const std::string& path,
                 const std::vector<std::pair<std::string_view, E>>& table, E& out) {
    std::string text;
    if (!read(j, path, text)) return false;
    std::vector<std::string_view> names;
    for (const auto& [name, value] : table) {
      if (name == text) {
        out = value;
        return true;
      }
      names.push_back(name);
    }
    const auto close = did_you_mean(text, names);
    error(path,
          close ? fmt::format("\"{}\" is not valid (did you mean '{}'?)", text, *close)
                : fmt::format("\"{}\" is not valid", text),
          fmt::format("expected one of: {}", fmt::join(names, ", ")));
    return false;
  }

  // Required or optional keys, read with `read`.
  template <class T>
  bool field(const Json& object, std::string_view key, const std::string& path, bool required,
             T& out) {
    const Json* j = member(object, key, path, required);
    return j != nullptr && read(*j, child(path, key), out);
  }
  bool field(const Json& object, std::string_view key, const std::string& path, bool required,
             std::uint64_t& out, std::uint64_t min, std::uint64_t max) {
    const Json* j = member(object, key, path, required);
    return j != nullptr && read(*j, child(path, key), out, min, max);
  }
  bool field(const Json& object, std::string_view key, const std::string& path, bool required,
             std::int64_t& out, std::int64_t limit) {
    const Json* j = member(object, key, path, required);
    return j != nullptr && read(*j, child(path, key), out, limit);
  }
  template <class E>
  bool enum_field(const Json& object, std::string_view key, const std::string& path,
                  bool required, const std::vector<std::pair<std::string_view, E>>& table, E& out) {
    const Json* j = member(object, key, path, required);
    return j != nullptr && read_enum(*j, child(path, key), table, out);
  }

  // An array at `key` (required); null when absent or not an array.
  const Json* array(const Json& object, std::string_view key, const std::string& path) {
    const Json* j = member(object, key, path, true);
    if (j == nullptr || !expect(*j, j->is_array(), child(path, key), "an array")) return nullptr;
    return j;
  }

  bool shape(const Json& object, const std::string& path, std::vector<std::uint64_t>& out) {
    const Json* j = array(object, "shape", path);
    if (j == nullptr) return false;
    bool ok = true;
    out.clear();
    for (std::size_t i = 0; i < j->size(); ++i) {
      std::uint64_t extent = 0;
      ok = read((*j)[i], item(child(path, "shape"), i), extent, 1, kMaxExtent) && ok;
      out.push_back(extent);
    }
    return ok;
  }

 private:
  const std::string& file_;
  Diagnostics& diags_;
};

struct Tables {
  std::vector<std::pair<std::string_view, DataType>> dtypes;
  std::vector<std::pair<std::string_view, TensorKind>> tensor_kinds =
      enum_names<TensorKind>();
  std::vector<std::pair<std::string_view, OpKind>> op_kinds = enum_names<OpKind>();
  std::vector<std::pair<std::string_view, Function>> functions = enum_names<Function>();
  std::vector<std::pair<std::string_view, TensorRole>> roles = enum_names<TensorRole>();
  Tables() {
    for (const auto& entry : data_type_names()) dtypes.push_back(entry);
  }
};

void read_tensor(Reader& r, const Tables& t, const Json& j, const std::string& path, Graph& g) {
  Tensor tensor;
  if (r.expect(j, j.is_object(), path, "an object")) {
    r.reject_unknown_keys(j, path, {"name", "shape", "dtype", "kind"});
    r.field(j, "name", path, true, tensor.name);
    r.shape(j, path, tensor.shape);
    r.enum_field(j, "dtype", path, true, t.dtypes, tensor.dtype);
    r.enum_field(j, "kind", path, true, t.tensor_kinds, tensor.kind);
  }
  g.tensors.push_back(std::move(tensor));
}

IndexExpr read_index(Reader& r, const Json& j, const std::string& path, std::size_t dims) {
  IndexExpr index;
  if (!r.expect(j, j.is_object(), path, "an object")) return index;
  r.reject_unknown_keys(j, path, {"terms", "offset"});
  r.field(j, "offset", path, true, index.offset, kMaxOffset);
  const Json* terms = r.array(j, "terms", path);
  if (terms == nullptr) return index;
  for (std::size_t i = 0; i < terms->size(); ++i) {
    const Json& tj = (*terms)[i];
    const std::string tpath = item(child(path, "terms"), i);
    IndexTerm term;
    if (r.expect(tj, tj.is_object(), tpath, "an object")) {
      r.reject_unknown_keys(tj, tpath, {"dim", "coefficient"});
      std::uint64_t dim = 0;
      if (r.field(tj, "dim", tpath, true, dim, 0, std::numeric_limits<std::uint64_t>::max())) {
        if (dim >= dims && dims != kDimsUnknown)
          r.error(child(tpath, "dim"),
                  fmt::format("dim index {} is out of range (the op has {} dims)", dim, dims));
        term.dim = static_cast<std::size_t>(dim);
      }
      r.field(tj, "coefficient", tpath, true, term.coefficient, kMaxCoefficient);
    }
    index.terms.push_back(term);
  }
  return index;
}

TensorAccess read_access(Reader& r, const Tables& t, const Json& j, const std::string& path,
                         std::size_t dims) {
  TensorAccess a;
  if (!r.expect(j, j.is_object(), path, "an object")) return a;
  r.reject_unknown_keys(j, path, {"role", "tensor", "shape", "dtype", "indices"});
  r.enum_field(j, "role", path, true, t.roles, a.role);
  r.field(j, "tensor", path, true, a.tensor);
  const bool shape_ok = r.shape(j, path, a.shape);
  r.enum_field(j, "dtype", path, true, t.dtypes, a.dtype);
  if (const Json* indices = r.array(j, "indices", path)) {
    for (std::size_t i = 0; i < indices->size(); ++i)
      a.indices.push_back(read_index(r, (*indices)[i], item(child(path, "indices"), i), dims));
    if (shape_ok && !a.indices.empty() && a.indices.size() != a.shape.size())
      r.error(child(path, "indices"),
              fmt::format("{} index expressions for a tensor of rank {}", a.indices.size(),
                          a.shape.size()),
              "give one per rank, or none for data movement and collectives");
  }
  return a;
}

void read_attributes(Reader& r, const Json& j, const std::string& path, Op& op) {
  if (!r.expect(j, j.is_object(), path, "an object")) return;
  r.reject_unknown_keys(j, path,
                        {"causal", "backward", "softcap", "window", "context_parallel", "ranks"});
  if (j.contains("causal") && j.contains("ranks")) {
    r.error(path, "has both 'causal' (attention) and 'ranks' (collective)");
    return;
  }
  if (j.contains("causal") || j.contains("backward") || j.contains("softcap") ||
      j.contains("window") || j.contains("context_parallel")) {
    AttentionSpec spec;
    const char* key = j.contains("causal")     ? "causal"
                      : j.contains("backward") ? "backward"
                      : j.contains("softcap")  ? "softcap"
                      : j.contains("window")   ? "window"
                                               : "context_parallel";
    if (op.kind != OpKind::Attention)
      r.error(child(path, key), fmt::format("only attention ops have '{}', not {}", key,
                                            to_string(op.kind)));
    const bool backward_ok =
        !j.contains("backward") || r.field(j, "backward", path, false, spec.backward);
    const bool softcap_ok =
        !j.contains("softcap") || r.field(j, "softcap", path, false, spec.softcap);
    const bool window_ok =
        !j.contains("window") ||
        r.field(j, "window", path, false, spec.window, 1, std::numeric_limits<std::int64_t>::max());
    std::uint64_t cp = 1;
    const bool cp_ok =
        !j.contains("context_parallel") || r.field(j, "context_parallel", path, false, cp, 1,
                                                   std::numeric_limits<std::uint32_t>::max());
    spec.context_parallel = static_cast<std::uint32_t>(cp);
    const bool causal_ok = r.field(j, "causal", path, true, spec.causal);
    if (causal_ok && window_ok && spec.window > 0 && !spec.causal)
      r.error(child(path, "window"),
              "a sliding window needs 'causal': true (each query sees the last 'window' keys up "
              "to its position)");
    else if (causal_ok && cp_ok && cp > 1 && (!spec.causal || spec.window > 0))
      r.error(child(path, "context_parallel"),
              "context parallelism splits a causal attention without a window: give 'causal': "
              "true and no 'window', or 'context_parallel': 1");
    else if (causal_ok && backward_ok && softcap_ok && window_ok && cp_ok)
      op.attributes = spec;
  } else if (j.contains("ranks")) {
    std::uint64_t ranks = 0;
    if (op.kind != OpKind::Collective)
      r.error(child(path, "ranks"), fmt::format("only collective ops have 'ranks', not {}",
                                                to_string(op.kind)));
    if (r.field(j, "ranks", path, true, ranks, 1, std::numeric_limits<std::uint32_t>::max()))
      op.attributes = CollectiveSpec{static_cast<std::uint32_t>(ranks)};
  }
}

void read_op(Reader& r, const Tables& t, const Json& j, const std::string& path, Graph& g) {
  Op op;
  if (!r.expect(j, j.is_object(), path, "an object")) {
    g.ops.push_back(std::move(op));
    return;
  }
  r.reject_unknown_keys(j, path,
                        {"name", "kind", "function", "dims", "accesses", "tensors", "attributes",
                         "source"});
  r.field(j, "name", path, true, op.name);
  const bool kind_ok = r.enum_field(j, "kind", path, true, t.op_kinds, op.kind);
  r.enum_field(j, "function", path, false, t.functions, op.function);
  std::size_t dim_count = kDimsUnknown;
  if (const Json* dims = r.array(j, "dims", path)) {
    dim_count = std::min(dims->size(), kMaxDims);
    if (dims->size() > kMaxDims)
      r.error(child(path, "dims"), fmt::format("{} dims is too many (at most {})", dims->size(),
                                               kMaxDims));
    for (std::size_t i = 0; i < dims->size() && i < kMaxDims; ++i) {
      const Json& dj = (*dims)[i];
      const std::string dpath = item(child(path, "dims"), i);
      Dim dim;
      if (r.expect(dj, dj.is_object(), dpath, "an object")) {
        r.reject_unknown_keys(dj, dpath, {"name", "extent"});
        r.field(dj, "name", dpath, true, dim.name);
        r.field(dj, "extent", dpath, true, dim.extent, 1, kMaxExtent);
      }
      op.space.dims.push_back(std::move(dim));
    }
  }
  if (const Json* accesses = r.array(j, "accesses", path))
    for (std::size_t i = 0; i < accesses->size(); ++i)
      op.space.accesses.push_back(read_access(r, t, (*accesses)[i],
                                              item(child(path, "accesses"), i), dim_count));
  if (const Json* tensors = r.array(j, "tensors", path)) {
    for (std::size_t i = 0; i < tensors->size(); ++i) {
      std::uint64_t id = 0;
      const std::string tpath = item(child(path, "tensors"), i);
      if (r.read((*tensors)[i], tpath, id, 0, std::numeric_limits<std::uint32_t>::max()) &&
          id >= g.tensors.size())
        r.error(tpath, fmt::format("tensor index {} is out of range (the trace has {} tensors)",
                                   id, g.tensors.size()));
      op.tensors.push_back(TensorId{static_cast<std::uint32_t>(id)});
    }
    if (tensors->size() != op.space.accesses.size())
      r.error(child(path, "tensors"),
              fmt::format("binds {} tensors for {} accesses", tensors->size(),
                          op.space.accesses.size()),
              "bind one tensor per access, in the same order");
  }
  if (const Json* attributes = r.member(j, "attributes", path, false))
    read_attributes(r, *attributes, child(path, "attributes"), op);
  if (const Json* source = r.member(j, "source", path, false)) {
    const std::string spath = child(path, "source");
    if (r.expect(*source, source->is_object(), spath, "an object")) {
      r.reject_unknown_keys(*source, spath, {"file", "line", "column"});
      std::uint64_t line = 0, column = 0;
      r.field(*source, "file", spath, true, op.source.file);
      r.field(*source, "line", spath, true, line, 0, std::numeric_limits<int>::max());
      r.field(*source, "column", spath, true, column, 0, std::numeric_limits<int>::max());
      op.source.line = static_cast<int>(line);
      op.source.column = static_cast<int>(column);
    }
  }
  // mac_count and flop_count rely on make_attention's dims b, hk, g, q, kv, d (and e).
  if (kind_ok && op.kind == OpKind::Attention) {
    const auto& dims = op.space.dims;
    if (dims.size() != 6 && !(dims.size() == 7 && dims[6].name == "e")) {
      r.error(child(path, "dims"),
              fmt::format("an attention op has 6 dims (b, hk, g, q, kv, d), or 7 with the value "
                          "head dim e last, not {}",
                          dims.size()));
    } else if (const auto* spec = std::get_if<AttentionSpec>(&op.attributes);
               spec != nullptr && spec->causal &&
               op.space.dims[4].extent < op.space.dims[3].extent) {
      r.error(child(path, "attributes.causal"),
              fmt::format("a causal attention needs kv ({}) >= q ({})", op.space.dims[4].extent,
                          op.space.dims[3].extent));
    }
  }
  g.ops.push_back(std::move(op));
}


}  // namespace

std::string write_trace(const Graph& graph) {
  Json tensors = Json::array();
  for (const Tensor& t : graph.tensors)
    tensors.push_back({{"name", t.name},
                       {"shape", t.shape},
                       {"dtype", to_string(t.dtype)},
                       {"kind", to_string(t.kind)}});
  Json outputs = Json::array();
  for (const TensorId t : graph.outputs) outputs.push_back(t.value);
  Json ops = Json::array();
  for (const Op& op : graph.ops) ops.push_back(op_json(op));
  const Json j = {{"schema_version", kSchemaVersion},
                  {"name", graph.name},
                  {"source", graph.source},
                  {"tensors", std::move(tensors)},
                  {"outputs", std::move(outputs)},
                  {"ops", std::move(ops)}};
  return dump_json(j, 2) + "\n";
}

std::optional<Graph> read_trace(std::string_view text, const std::string& file,
                                Diagnostics& diags) {
  Json root;
  try {
    root = Json::parse(text.begin(), text.end());
  } catch (const Json::parse_error& e) {
    std::string message = e.what();
    // "[json.exception.parse_error.101] parse error at line 1, column 5: syntax error ..."
    if (const auto column = message.find(", column "); column != std::string::npos)
      if (const auto colon = message.find(": ", column); colon != std::string::npos)
        message = message.substr(colon + 2);
    // nlohmann counts the byte it stopped at from 1.
    diags.error(location_at(text, e.byte > 0 ? e.byte - 1 : 0, file), "", message,
                "see docs/trace_format.md for the format");
    return std::nullopt;
  } catch (const Json::exception& e) {
    // nlohmann throws out_of_range (not parse_error) for a number too large for a double.
    diags.error({file, 1, 1}, "", fmt::format("not valid JSON: {}", e.what()),
                "numbers must fit a double (about 1.8e308)");
    return std::nullopt;
  }
  const auto errors_before = diags.error_count();
  Reader r(file, diags);
  if (!r.expect(root, root.is_object(), "", "a JSON object at the top")) return std::nullopt;
  const Tables tables;
  r.reject_unknown_keys(root, "", {"schema_version", "name", "source", "tensors", "outputs", "ops"});
  std::uint64_t version = 0;
  if (r.field(root, "schema_version", "", true, version, 0,
              std::numeric_limits<std::uint64_t>::max()) &&
      version != kSchemaVersion)
    r.error("schema_version", fmt::format("unsupported schema_version {}", version),
            fmt::format("this coda reads schema_version {}", kSchemaVersion));
  Graph graph;
  r.field(root, "name", "", true, graph.name);
  r.field(root, "source", "", false, graph.source);
  if (const Json* tensors = r.array(root, "tensors", ""))
    for (std::size_t i = 0; i < tensors->size(); ++i)
      read_tensor(r, tables, (*tensors)[i], item("tensors", i), graph);
  if (const Json* outputs = r.member(root, "outputs", "", false);
      outputs != nullptr && r.expect(*outputs, outputs->is_array(), "outputs", "an array")) {
    for (std::size_t i = 0; i < outputs->size(); ++i) {
      std::uint64_t id = 0;
      const std::string path = item("outputs", i);
      if (r.read((*outputs)[i], path, id, 0, std::numeric_limits<std::uint32_t>::max()) &&
          id >= graph.tensors.size())
        r.error(path, fmt::format("tensor index {} is out of range (the trace has {} tensors)",
                                  id, graph.tensors.size()));
      graph.outputs.push_back(TensorId{static_cast<std::uint32_t>(id)});
    }
  }
  if (const Json* ops = r.array(root, "ops", ""))
    for (std::size_t i = 0; i < ops->size(); ++i)
      read_op(r, tables, (*ops)[i], item("ops", i), graph);
  if (diags.error_count() != errors_before) return std::nullopt;
  for (const std::string& problem : verify(graph))
    diags.error({file, 0, 0}, "", problem, "the trace's dataflow is inconsistent");
  if (diags.error_count() != errors_before) return std::nullopt;
  return graph;
}

}  // namespace coda::workload
