#include "reports/stored_results.h"

#include <array>
#include <exception>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/sweep_metrics.h"
#include "reports/json_locator.h"

namespace coda::reports {
namespace {

using Json = nlohmann::ordered_json;

enum class Kind { Object, Array, String, Unsigned, Number, Boolean };

std::string_view expected(Kind kind) {
  switch (kind) {
    case Kind::Object: return "an object";
    case Kind::Array: return "an array";
    case Kind::String: return "a string";
    case Kind::Unsigned: return "a whole number, 0 or more";
    case Kind::Number: return "a number";
    case Kind::Boolean: return "true or false";
  }
  return "?";
}

std::string_view found(const Json& j) {
  if (j.is_null()) return "null";
  if (j.is_boolean()) return "a boolean";
  if (j.is_number_unsigned()) return "a whole number";
  if (j.is_number_integer()) return "a negative number";
  if (j.is_number_float()) return "a fractional number";
  if (j.is_string()) return "a string";
  if (j.is_array()) return "an array";
  return "an object";
}

bool is(const Json& j, Kind kind) {
  switch (kind) {
    case Kind::Object: return j.is_object();
    case Kind::Array: return j.is_array();
    case Kind::String: return j.is_string();
    case Kind::Unsigned: return j.is_number_unsigned();
    case Kind::Number: return j.is_number();
    case Kind::Boolean: return j.is_boolean();
  }
  return false;
}

// A place in the document: its JSON pointer (to locate it) and its path as users read it.
struct Where {
  std::string pointer;  // "/ops/3/cost"
  std::string path;     // "ops[3].cost"
  Where key(std::string_view k) const {
    return {fmt::format("{}/{}", pointer, k), path.empty() ? std::string(k)
                                                            : fmt::format("{}.{}", path, k)};
  }
  Where index(std::size_t i) const {
    return {fmt::format("{}/{}", pointer, i), fmt::format("{}[{}]", path, i)};
  }
};

// Checks the shape of a parsed document and reports each problem where it is written.
class Checker {
 public:
  Checker(std::string_view text, std::string file, Diagnostics& diags)
      : text_(text), file_(std::move(file)), diags_(diags) {}

  void error(const Where& where, std::string message, std::string hint = {}) const {
    diags_.error(locate_json(text_, where.pointer, file_), where.path, std::move(message),
                 std::move(hint));
  }

  bool expect(const Json& j, const Where& where, Kind kind) const {
    if (is(j, kind)) return true;
    error(where, fmt::format("expected {}, found {}", expected(kind), found(j)));
    return false;
  }

  // The member `key` of the object `j` if it is present and of `kind`; a missing member is an
  // error when `required`, a member of another kind always is.
  const Json* field(const Json& j, const Where& where, std::string_view key, Kind kind,
                    bool required = true) const {
    const auto it = j.find(key);
    if (it == j.end()) {
      if (required)
        error(where, fmt::format("missing required key '{}'", key),
              fmt::format("'{}' is {}", key, expected(kind)));
      return nullptr;
    }
    return expect(*it, where.key(key), kind) ? &*it : nullptr;
  }

  // The member `key` of `j` into `v` when present and a number (unsigned integer); an error
  // otherwise (field()), leaving `v` as it was.
  void number(const Json& j, const Where& where, std::string_view key, double& v) const {
    if (const Json* f = field(j, where, key, Kind::Number)) v = f->get<double>();
  }
  void whole(const Json& j, const Where& where, std::string_view key, std::uint64_t& v) const {
    if (const Json* f = field(j, where, key, Kind::Unsigned)) v = f->get<std::uint64_t>();
  }

  // Checks that every key of `keys` is in object `j` with `kind`.
  void fields(const Json& j, const Where& where, std::initializer_list<std::string_view> keys,
              Kind kind) const {
    for (const std::string_view key : keys) field(j, where, key, kind);
  }

  // Calls `each(element, where)` for each element of the array `key` of `j` that is an object.
  template <class F>
  void objects(const Json& j, const Where& where, std::string_view key, F&& each,
               bool required = true) const {
    const Json* array = field(j, where, key, Kind::Array, required);
    if (array == nullptr) return;
    for (std::size_t i = 0; i < array->size(); ++i)
      if (expect((*array)[i], where.key(key).index(i), Kind::Object))
        each((*array)[i], where.key(key).index(i));
  }

  // Checks that every element of the array `key` of `j` is a string.
  void strings(const Json& j, const Where& where, std::string_view key) const {
    const Json* array = field(j, where, key, Kind::Array);
    if (array == nullptr) return;
    for (std::size_t i = 0; i < array->size(); ++i)
      expect((*array)[i], where.key(key).index(i), Kind::String);
  }

 private:
  std::string_view text_;
  std::string file_;
  Diagnostics& diags_;
};

// Parses `text`; a syntax error becomes a diagnostic at the byte where parsing stopped.
std::optional<Json> parse(std::string_view text, const std::string& file, Diagnostics& diags,
                          std::string_view what) {
  try {
    return Json::parse(text.begin(), text.end());
  } catch (const Json::parse_error& e) {
    std::string message = e.what();
    // "[json.exception.parse_error.101] parse error at line 1, column 5: syntax error ..."
    if (const auto column = message.find(", column "); column != std::string::npos)
      if (const auto colon = message.find(": ", column); colon != std::string::npos)
        message = message.substr(colon + 2);
    // nlohmann counts the byte it stopped at from 1.
    diags.error(location_at(text, e.byte > 0 ? e.byte - 1 : 0, file), "", message,
                fmt::format("expected {}", what));
  } catch (const Json::exception& e) {
    // nlohmann throws out_of_range (not parse_error) for a number too large for a double.
    diags.error({file, 1, 1}, "", fmt::format("not valid JSON: {}", e.what()),
                "numbers must fit a double (about 1.8e308)");
  }
  return std::nullopt;
}

void check_cost(const Checker& c, const Json& j, const Where& where) {
  c.fields(j, where,
           {"cycles", "compute_cycles", "stall_cycles", "macs", "sram_read_bytes",
            "sram_write_bytes", "dram_read_bytes", "dram_write_bytes"},
           Kind::Unsigned);
  c.field(j, where, "energy_joules", Kind::Number, false);
}

// The tile-level engines' optional stall breakdown (an op's and the run's).
void check_stalls(const Checker& c, const Json& j, const Where& where) {
  if (const Json* s = c.field(j, where, "stalls", Kind::Object, false))
    c.fields(*s, where.key("stalls"),
             {"dram_bandwidth", "dram_latency", "bank_conflicts", "network", "launch"},
             Kind::Unsigned);
}

void check_op(const Checker& c, const Json& op, const Where& where) {
  c.field(op, where, "name", Kind::String);
  if (const Json* unit = c.field(op, where, "unit", Kind::String, false)) {
    const auto text = unit->get<std::string>();
    if (!results::parse_op_unit(text))
      c.error(where.key("unit"), fmt::format("unknown unit '{}'", text),
              "expected " + results::op_unit_names());
  }
  if (const Json* mapping = c.field(op, where, "mapping", Kind::Object))
    for (const auto& [name, value] : mapping->items())
      c.expect(value, where.key("mapping").key(name), Kind::Unsigned);
  if (const Json* cost = c.field(op, where, "cost", Kind::Object))
    check_cost(c, *cost, where.key("cost"));
  c.fields(op, where, {"mapping_efficiency", "compute_utilization", "arithmetic_intensity"},
           Kind::Number);
  if (const Json* bound = c.field(op, where, "bound", Kind::String)) {
    const auto text = bound->get<std::string>();
    if (!results::parse_bound(text))
      c.error(where.key("bound"), fmt::format("unknown bound '{}'", text),
              "expected " + results::bound_names());
  }
  c.objects(op, where, "traffic", [&](const Json& t, const Where& at) {
    c.fields(t, at, {"tensor", "level"}, Kind::String);
    c.fields(t, at, {"read_bytes", "write_bytes"}, Kind::Unsigned);
  });
  c.field(op, where, "loop_nest", Kind::String, false);
  c.field(op, where, "precision", Kind::String, false);
  check_stalls(c, op, where);
}

void check_run(const Checker& c, const Json& root) {
  const Where top;
  if (const Json* p = c.field(root, top, "provenance", Kind::Object)) {
    const Where at = top.key("provenance");
    c.fields(*p, at, {"coda_version", "engine"}, Kind::String);
    c.objects(*p, at, "inputs", [&](const Json& in, const Where& w) {
      c.fields(in, w, {"role", "path", "hash"}, Kind::String);
    });
  }
  c.fields(root, top, {"arch", "workload"}, Kind::String);
  if (const Json* clock = c.field(root, top, "clock_hz", Kind::Number);
      clock != nullptr && !(clock->get<double>() > 0))
    c.error(top.key("clock_hz"), "must be above 0", "the clock in Hz, e.g. 700000000");
  c.field(root, top, "processing_elements", Kind::Unsigned);
  c.field(root, top, "area_mm2", Kind::Number, false);
  if (const Json* total = c.field(root, top, "total", Kind::Object))
    check_cost(c, *total, top.key("total"));
  c.objects(root, top, "ops", [&](const Json& op, const Where& w) { check_op(c, op, w); });
  c.objects(root, top, "skipped", [&](const Json& s, const Where& w) {
    c.fields(s, w, {"name", "reason"}, Kind::String);
  });
  c.field(root, top, "mapper", Kind::String, false);
  if (const Json* fusion = c.field(root, top, "fusion", Kind::Object, false)) {
    const Where at = top.key("fusion");
    c.field(*fusion, at, "mode", Kind::String);
    c.objects(*fusion, at, "groups", [&](const Json& g, const Where& w) {
      c.field(g, w, "kind", Kind::String);
      c.strings(g, w, "ops");
      c.field(g, w, "dram_bytes_saved", Kind::Unsigned);
    });
    c.objects(*fusion, at, "rejected", [&](const Json& g, const Where& w) {
      c.fields(g, w, {"kind", "reason"}, Kind::String);
      c.strings(g, w, "ops");
    });
  }
  if (const Json* memory = c.field(root, top, "memory", Kind::Object, false)) {
    const Where at = top.key("memory");
    c.fields(*memory, at, {"status", "reason"}, Kind::String);
    if (const auto status = memory->find("status");
        status != memory->end() && status->is_string() &&
        !results::parse_fit_status(status->get<std::string>()))
      c.error(at.key("status"), fmt::format("unknown status '{}'", status->get<std::string>()),
              "expected " + results::fit_status_names());
    c.fields(*memory, at,
             {"needed_bytes", "available_bytes", "weights_bytes", "kv_cache_bytes",
              "optimizer_state_bytes", "activations_bytes", "on_chip_bytes", "ops_over_on_chip"},
             Kind::Unsigned);
  }
  check_stalls(c, root, top);
  c.objects(root, top, "activity", [&](const Json& a, const Where& w) {
    c.field(a, w, "level", Kind::String);
    c.fields(a, w, {"bytes", "busy_cycles"}, Kind::Unsigned);
    c.field(a, w, "utilization", Kind::Number);
  }, false);
  if (root.contains("engine_notes")) c.strings(root, top, "engine_notes");
  if (root.contains("workload_notes")) c.strings(root, top, "workload_notes");
}

// The objectives: the first entries of results::kSweepMetrics (core/sweep_metrics.h), the one
// table the sweep's exports follow too.
constexpr std::array<SweepObjective, results::kSweepObjectiveCount> make_objectives() {
  std::array<SweepObjective, results::kSweepObjectiveCount> out{};
  for (std::size_t i = 0; i < out.size(); ++i) {
    const results::SweepMetricInfo& m = results::kSweepMetrics.at(i);
    out.at(i) = {m.objective, m.key, m.unit, m.minimised, m.label};
  }
  return out;
}
constexpr std::array<SweepObjective, results::kSweepObjectiveCount> kObjectives = make_objectives();

std::optional<SweepRow> read_sweep_row(const Checker& c, const Json& r, const Where& where,
                                       const std::vector<SweepAxis>& axes) {
  SweepRow row;
  bool ok = true;
  if (const Json* point = c.field(r, where, "point", Kind::Unsigned))
    row.point = point->get<std::uint64_t>();
  else
    ok = false;
  if (const Json* workload = c.field(r, where, "workload", Kind::String))
    row.workload = workload->get<std::string>();
  else
    ok = false;
  if (const Json* values = c.field(r, where, "values", Kind::Object)) {
    for (const SweepAxis& axis : axes) {
      const Json* value = c.field(*values, where.key("values"), axis.path, Kind::String);
      row.values.push_back(value != nullptr ? value->get<std::string>() : std::string());
      ok = ok && value != nullptr;
    }
  } else {
    ok = false;
  }
  if (const Json* status = c.field(r, where, "status", Kind::String)) {
    const std::string text = status->get<std::string>();
    if (const auto parsed = results::parse_row_status(text)) {
      row.status = *parsed;
    } else {
      c.error(where.key("status"), fmt::format("unknown status '{}'", text),
              "expected " + enum_names(results::kRowStatuses));
      ok = false;
    }
  } else {
    ok = false;
  }
  if (const Json* feasible = c.field(r, where, "feasible", Kind::Boolean))
    row.feasible = feasible->get<bool>();
  else
    ok = false;
  if (row.status == results::RowStatus::Ok) {
    if (const Json* metrics = c.field(r, where, "metrics", Kind::Object)) {
      // Before the one metric table, results.json named two metrics without their units.
      if (metrics->contains("perf_per_watt") && !metrics->contains("perf_per_watt_tops_per_w")) {
        c.error(where.key("metrics"),
                "written by an older coda (metrics.perf_per_watt; now perf_per_watt_tops_per_w, "
                "as in results.csv)",
                "run the same coda sweep into its folder again: it reuses the store and rewrites "
                "results.json");
        return std::nullopt;
      }
      for (const results::SweepMetricInfo& metric : results::kSweepMetrics) {
        const std::string_view name = metric.key;
        const Json* m = c.field(*metrics, where.key("metrics"), name, Kind::Number);
        if (m != nullptr) row.metrics.emplace(std::string(name), m->get<double>());
        ok = ok && m != nullptr;
      }
    } else {
      ok = false;
    }
  } else if (const Json* reason = c.field(r, where, "reason", Kind::String, false)) {
    row.reason = reason->get<std::string>();
  }
  return ok ? std::optional(std::move(row)) : std::nullopt;
}

}  // namespace

std::span<const SweepObjective> sweep_objectives() { return kObjectives; }

const SweepObjective* find_sweep_objective(std::string_view name) {
  for (const SweepObjective& o : kObjectives)
    if (o.name == name) return &o;
  return nullptr;
}

std::optional<results::RunResult> read_run_json(std::string_view text, const std::string& file,
                                                Diagnostics& diags) {
  const std::optional<Json> root = parse(text, file, diags, "a run.json as `coda run --out` writes");
  if (!root) return std::nullopt;
  const Checker c(text, file, diags);
  if (!c.expect(*root, {}, Kind::Object)) return std::nullopt;
  const auto errors_before = diags.error_count();
  check_run(c, *root);
  if (diags.error_count() != errors_before) return std::nullopt;
  try {
    return root->get<results::RunResult>();
  } catch (const std::exception& e) {  // a field or name the check above does not know about
    diags.error({file, 1, 1}, "", fmt::format("cannot read the run: {}", e.what()));
    return std::nullopt;
  }
}

std::optional<SweepResults> read_sweep_json(std::string_view text, const std::string& file,
                                            Diagnostics& diags) {
  const std::optional<Json> root =
      parse(text, file, diags, "a results.json as `coda sweep --out` writes");
  if (!root) return std::nullopt;
  const Checker c(text, file, diags);
  if (!c.expect(*root, {}, Kind::Object)) return std::nullopt;
  const auto errors_before = diags.error_count();
  const Where top;
  SweepResults out;
  if (const Json* name = c.field(*root, top, "sweep", Kind::String)) out.name = name->get<std::string>();
  if (const Json* hash = c.field(*root, top, "spec_hash", Kind::String))
    out.spec_hash = hash->get<std::string>();
  if (const Json* spec = c.field(*root, top, "spec", Kind::String, false))
    out.spec_file = spec->get<std::string>();
  if (const Json* sampling = c.field(*root, top, "sampling", Kind::String))
    out.sampling = sampling->get<std::string>();
  c.objects(*root, top, "axes", [&](const Json& a, const Where& w) {
    const Json* path = c.field(a, w, "path", Kind::String);
    c.strings(a, w, "values");
    const Json* base = c.field(a, w, "base", Kind::String, false);
    if (path != nullptr && diags.error_count() == errors_before)
      out.axes.push_back(
          {path->get<std::string>(), a.at("values").get<std::vector<std::string>>(),
           base != nullptr ? std::optional(base->get<std::string>()) : std::nullopt});
  });
  c.strings(*root, top, "objectives");
  if (diags.error_count() != errors_before) return std::nullopt;
  out.objectives = root->at("objectives").get<std::vector<std::string>>();
  for (std::size_t i = 0; i < out.objectives.size(); ++i)
    if (find_sweep_objective(out.objectives[i]) == nullptr) {
      std::string names;
      for (const SweepObjective& o : kObjectives)
        names += fmt::format("{}{}", names.empty() ? "" : ", ", o.name);
      c.error(top.key("objectives").index(i),
              fmt::format("unknown objective '{}'", out.objectives[i]),
              fmt::format("expected one of: {}", names));
    }
  c.objects(*root, top, "results", [&](const Json& r, const Where& w) {
    if (auto row = read_sweep_row(c, r, w, out.axes)) out.rows.push_back(std::move(*row));
  });
  if (diags.error_count() != errors_before) return std::nullopt;
  return out;
}

bool is_train_json(std::string_view text) {
  const Json root = Json::parse(text, nullptr, false);
  return root.is_object() && root.contains("training_step");
}

std::optional<TrainingStepResult> read_train_json(std::string_view text, const std::string& file,
                                                  Diagnostics& diags) {
  const std::optional<Json> root =
      parse(text, file, diags, "a training step as `coda train --json` writes");
  if (!root) return std::nullopt;
  const Checker c(text, file, diags);
  if (!c.expect(*root, {}, Kind::Object)) return std::nullopt;
  const auto errors_before = diags.error_count();
  const Where top;
  const Json* step = c.field(*root, top, "training_step", Kind::Object);
  if (step == nullptr) return std::nullopt;
  const Where at = top.key("training_step");
  TrainingStepResult out;
  if (const Json* f = c.field(*step, at, "model", Kind::String)) out.model = f->get<std::string>();
  if (const Json* f = c.field(*step, at, "arch", Kind::String)) out.arch = f->get<std::string>();
  c.whole(*step, at, "seq", out.seq);
  c.whole(*step, at, "tokens", out.tokens);
  c.number(*step, at, "step_s", out.step_s);
  c.number(*step, at, "tokens_per_s", out.tokens_per_s);
  c.number(*step, at, "mfu", out.mfu);
  c.number(*step, at, "hfu", out.hfu);
  c.whole(*step, at, "memory_per_chip_bytes", out.memory_per_chip_bytes);
  c.whole(*step, at, "critical_stage", out.critical_stage);
  if (const Json* f = c.field(*step, at, "fits", Kind::Boolean)) out.fits = f->get<bool>();
  if (const auto it = step->find("capacity_bytes"); it != step->end() && !it->is_null()) {
    if (c.expect(*it, at.key("capacity_bytes"), Kind::Unsigned))
      out.capacity_bytes = it->get<std::uint64_t>();
  }
  std::uint64_t micro_batches = 1;
  if (const Json* l = c.field(*step, at, "layout", Kind::Object)) {
    const Where lw = at.key("layout");
    std::uint64_t tp = 0, pp = 0, dp = 0, mbs = 0, vp = 1, zero = 0;
    c.whole(*l, lw, "tp", tp);
    c.whole(*l, lw, "pp", pp);
    c.whole(*l, lw, "dp", dp);
    c.whole(*l, lw, "chips", out.chips);
    c.whole(*l, lw, "micro_batch_size", mbs);
    c.whole(*l, lw, "micro_batches", micro_batches);
    c.whole(*l, lw, "virtual_stages", vp);
    c.whole(*l, lw, "zero", zero);
    std::string recompute;
    if (const Json* f = c.field(*l, lw, "recompute", Kind::String)) recompute = f->get<std::string>();
    bool sp = false;
    if (const Json* f = c.field(*l, lw, "sequence_parallel", Kind::Boolean)) sp = f->get<bool>();
    out.layout = fmt::format("tp {}{} pp {}{} dp {}, micro-batch {} x {}, recompute {}, ZeRO {}",
                             tp, sp ? " (SP)" : "", pp,
                             vp > 1 ? fmt::format(" (x{} virtual)", vp) : "", dp, mbs,
                             micro_batches, recompute, zero);
  }
  c.objects(*step, at, "stages", [&](const Json& j, const Where& w) {
    TrainingStage st;
    c.whole(j, w, "stage", st.stage);
    if (const Json* f = c.field(j, w, "layer_ranges", Kind::String)) st.layers = f->get<std::string>();
    c.number(j, w, "compute_s", st.compute_s);
    double tp_per_micro_batch = 0;
    c.number(j, w, "tp_comm_s", tp_per_micro_batch);
    st.tp_comm_s = tp_per_micro_batch * static_cast<double>(micro_batches);
    c.number(j, w, "bubble_s", st.bubble_s);
    c.number(j, w, "dp_exposed_s", st.dp_exposed_s);
    c.number(j, w, "optimizer_s", st.optimizer_s);
    c.number(j, w, "end_s", st.end_s);
    if (const Json* m = c.field(j, w, "memory", Kind::Object))
      c.whole(*m, w.key("memory"), "total_bytes", st.memory_bytes);
    out.stages.push_back(std::move(st));
  });
  if (diags.error_count() != errors_before) return std::nullopt;
  if (out.stages.empty() || out.critical_stage >= out.stages.size()) {
    c.error(at.key("critical_stage"),
            fmt::format("stage {} of {} stages", out.critical_stage, out.stages.size()),
            "critical_stage names one of `stages`");
    return std::nullopt;
  }
  return out;
}

bool is_serve_json(std::string_view text) {
  const Json root = Json::parse(text, nullptr, false);
  return root.is_object() && root.contains("config") && root.contains("kv_cache") &&
         root.contains("summary");
}

std::optional<ServingResult> read_serve_json(std::string_view text, const std::string& file,
                                             Diagnostics& diags) {
  const std::optional<Json> root = parse(text, file, diags, "serve.json as `coda serve` writes");
  if (!root) return std::nullopt;
  const Checker c(text, file, diags);
  if (!c.expect(*root, {}, Kind::Object)) return std::nullopt;
  const auto errors_before = diags.error_count();
  const Where top;
  ServingResult out;
  const auto text_of = [&](const Json& j, const Where& w, std::string_view key, std::string& v) {
    if (const Json* f = c.field(j, w, key, Kind::String)) v = f->get<std::string>();
  };
  const auto latency = [&](const Json& j, const Where& w, std::string_view key, ServingLatency& v) {
    if (const Json* f = c.field(j, w, key, Kind::Object)) {
      c.number(*f, w.key(key), "p50", v.p50);
      c.number(*f, w.key(key), "p99", v.p99);
    }
  };
  // A summary object (serve_output.h's summary_json) into a point.
  const auto point = [&](const Json& j, const Where& w, ServingPoint& p) {
    c.number(j, w, "requests_per_s", p.requests_per_s);
    c.number(j, w, "output_tokens_per_s", p.output_tokens_per_s);
    latency(j, w, "ttft_s", p.ttft);
    latency(j, w, "tpot_s", p.tpot);
    if (const Json* f = c.field(j, w, "meets_slo", Kind::Boolean)) p.meets_slo = f->get<bool>();
  };
  if (const Json* config = c.field(*root, top, "config", Kind::Object)) {
    const Where w = top.key("config");
    text_of(*config, w, "model", out.model);
    text_of(*config, w, "arch", out.arch);
    c.whole(*config, w, "tp", out.tp);
    c.whole(*config, w, "replicas", out.replicas);
    text_of(*config, w, "arrivals", out.arrivals);
    c.whole(*config, w, "requests", out.requests);
    c.number(*config, w, "rate", out.summary.rate);
    if (const Json* slo = c.field(*config, w, "slo", Kind::Object)) {
      c.number(*slo, w.key("slo"), "ttft_s", out.slo_ttft_s);
      c.number(*slo, w.key("slo"), "tpot_s", out.slo_tpot_s);
    }
  }
  if (const Json* kv = c.field(*root, top, "kv_cache", Kind::Object))
    c.whole(*kv, top.key("kv_cache"), "blocks", out.kv_blocks);
  if (const Json* summary = c.field(*root, top, "summary", Kind::Object)) {
    const Where w = top.key("summary");
    point(*summary, w, out.summary);
    latency(*summary, w, "itl_s", out.itl);
    latency(*summary, w, "e2e_s", out.e2e);
    c.number(*summary, w, "goodput_rps", out.goodput_rps);
    c.number(*summary, w, "slo_attainment", out.slo_attainment);
    c.number(*summary, w, "mean_batch", out.mean_batch);
    c.number(*summary, w, "kv_utilisation_mean", out.kv_utilisation_mean);
    c.number(*summary, w, "kv_utilisation_max", out.kv_utilisation_max);
    c.whole(*summary, w, "preemptions", out.preemptions);
  }
  if (root->contains("rate_curve"))
    c.objects(*root, top, "rate_curve", [&](const Json& j, const Where& w) {
      ServingPoint p;
      c.number(j, w, "rate", p.rate);
      if (const Json* s = c.field(j, w, "summary", Kind::Object)) point(*s, w.key("summary"), p);
      out.curve.push_back(p);
    });
  if (diags.error_count() != errors_before) return std::nullopt;
  return out;
}

}  // namespace coda::reports
