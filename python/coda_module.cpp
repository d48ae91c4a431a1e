// coda's Python API, the C++ half (issue 22 item 3): the module coda._coda, which the pure-Python
// package python/coda/ wraps. It calls the same library functions as the CLI (sim::run_files,
// mapper::map_graph, dse::run_sweep, validation::compare_corpus, workload::load_source), or the
// CLI itself in this process for the commands with many options (serve, train, report), and hands
// each result back as the JSON the CLI writes (run.json, a sweep's results.json, corpus.json),
// which the Python side parses into dicts. Every call returns one JSON envelope:
//   {"ok": true, "value": ...}  or  {"ok": false, "message": "...", "diagnostics": [...]}
// so that a located diagnostic (file, line, column, path, message, hint) reaches Python whole
// and becomes coda.CodaError there; nothing here raises but pybind11's own argument checks.
// Library code does not print, and neither does this module.

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "arch/arch_spec.h"
#include "arch/hardware_model.h"
#include "cli/commands.h"
#include "cli/sweep_command.h"
#include "core/data_type.h"
#include "core/diagnostics.h"
#include "core/results.h"
#include "core/text.h"
#include "core/version.h"
#include "core/yaml_reader.h"
#include "dse/sweep.h"
#include "dse/sweep_spec.h"
#include "dse/sweep_store.h"
#include "mapper/fusion.h"
#include "mapper/search.h"
#include "reports/layer_table.h"
#include "sim/driver.h"
#include "validation/corpus.h"
#include "validation/corpus_compare.h"
#include "workloads/op.h"
#include "workloads/source.h"
#include "workloads/summary.h"

namespace py = pybind11;
using Json = nlohmann::ordered_json;

namespace coda::python {
namespace {

Json diagnostic_json(const Diagnostic& d) {
  return Json{{"severity", d.severity == Severity::Error ? "error" : "warning"},
              {"file", d.where.file},
              {"line", d.where.line},
              {"column", d.where.column},
              {"path", d.path},
              {"message", d.message},
              {"hint", d.hint},
              {"text", format(d)}};
}

std::string ok(Json value) { return dump_json(Json{{"ok", true}, {"value", std::move(value)}}); }

std::string failed(const std::string& message, const Diagnostics& diags = {}) {
  Json list = Json::array();
  for (const Diagnostic& d : diags.all()) list.push_back(diagnostic_json(d));
  return dump_json(Json{{"ok", false}, {"message", message}, {"diagnostics", std::move(list)}});
}

std::string failed(const Diagnostics& diags) {
  return failed(fmt::format("{} error{}", diags.error_count(), diags.error_count() == 1 ? "" : "s"),
                diags);
}

// Runs `body` (which returns an envelope), turning an exception the libraries throw for a bad
// name or a failed file into a failed envelope.
template <class Body>
std::string guarded(Body&& body) {
  try {
    return body();
  } catch (const ConfigError& e) {
    return failed(e.what(), e.diagnostics());
  } catch (const std::exception& e) {
    return failed(e.what());
  }
}

// An arch document, read once and edited by path (Python's coda.Arch holds one).
class ArchDoc {
 public:
  ArchDoc(YamlDocument doc, std::string label) : doc_(std::move(doc)), label_(std::move(label)) {}

  const YamlDocument& doc() const { return doc_; }
  YamlDocument& doc() { return doc_; }
  const std::string& label() const { return label_; }
  void set_label(std::string label) { label_ = std::move(label); }

  // The document validated into a spec, with its identity; nullopt with the reasons in `diags`.
  std::optional<arch::LoadedArch> loaded(Diagnostics& diags) const {
    auto spec = arch::read_arch_spec(doc_.root(), diags);
    if (!spec) return std::nullopt;
    return arch::LoadedArch{std::move(*spec), label_, doc_.content_hash()};
  }

 private:
  YamlDocument doc_;
  std::string label_;  // the file it came from, or what edited it
};

// An ArchDoc cannot travel inside a JSON envelope, so it comes beside one: the document, or
// nullopt and the failed envelope (Python unwraps the envelope first).
std::pair<std::optional<ArchDoc>, std::string> load_arch(const std::string& file) {
  Diagnostics diags;
  auto doc = YamlDocument::load(file, diags);
  if (!doc) return {std::nullopt, failed(diags)};
  ArchDoc arch(std::move(*doc), file);
  if (!arch.loaded(diags)) return {std::nullopt, failed(diags)};
  return {std::move(arch), ok(nullptr)};
}

// A copy of `arch` with `values` ({path, YAML text}) set and validated: the copy, or none and a
// failed envelope. A value that does not validate is reported at "coda.Arch.with_values" (its
// node has no place in the file), the rest where the file has them.
std::pair<py::object, std::string> with_values(
    const ArchDoc& arch, const std::vector<std::pair<std::string, std::string>>& values) {
  const SourceLocation here{"coda.Arch.with_values", 0, 0};
  ArchDoc copy(arch.doc().clone(), arch.label());
  std::string label = arch.label() + " with";
  Diagnostics diags;
  for (const auto& [path, value] : values) {
    std::string why, hint;
    if (!dse::set_arch_value(copy.doc(), path, value, why, hint))
      diags.error(here, path, why, hint);
    label += fmt::format(" {}={}", path, value);
  }
  if (diags.has_errors()) return {py::none(), failed(diags)};
  copy.set_label(label);
  Diagnostics checked;
  if (copy.loaded(checked)) return {py::cast(std::move(copy)), ok(nullptr)};
  for (const Diagnostic& d : checked.all()) {
    const bool set_here =
        std::any_of(values.begin(), values.end(), [&](const auto& v) { return v.first == d.path; });
    const SourceLocation where = set_here ? here : d.where;
    if (d.severity == Severity::Error)
      diags.error(where, d.path, d.message, d.hint);
    else
      diags.warning(where, d.path, d.message, d.hint);
  }
  return {py::none(), failed(diags)};
}

Json arch_summary(const arch::LoadedArch& arch) {
  const arch::HardwareModel hw(arch.spec);
  return Json{{"name", arch.spec.name},
              {"description", arch.spec.description},
              {"compute", arch::describe_compute(arch.spec)},
              {"clock_hz", hw.clock().value},
              {"content_hash", results::hex_hash(arch.content_hash)},
              {"files", arch.path}};
}

// The workload a Python coda.Workload describes: its YAML form (read_workload_source's keys,
// as a sweep's workload entry), relative paths against `base`.
std::optional<workload::WorkloadSource> read_source(const std::string& text,
                                                    const std::string& base, Diagnostics& diags) {
  auto doc = YamlDocument::parse(text, "coda.Workload", diags);
  if (!doc) return std::nullopt;
  const YamlReader root = doc->root();
  if (!root.expect_map(diags)) return std::nullopt;
  auto source = workload::read_workload_source(root, base, diags);
  root.reject_unknown_keys(diags);
  if (diags.has_errors()) return std::nullopt;
  return source;
}

std::string workload_summary(const std::string& text, const std::string& base) {
  return guarded([&] {
    Diagnostics diags;
    const auto source = read_source(text, base, diags);
    if (!source) return failed(diags);
    auto loaded = workload::load_source(*source, diags);
    if (!loaded) return failed(diags);
    Json summary = workload::summarize(loaded->graph);
    summary["describe"] = workload::describe(*source);
    summary["notes"] = loaded->notes;
    Json ops = Json::array();
    for (const workload::Op& op : loaded->graph.ops)
      ops.push_back(Json{{"name", op.name}, {"kind", std::string(workload::to_string(op.kind))}});
    summary["op_list"] = std::move(ops);
    return ok(std::move(summary));
  });
}

// The options coda.run takes, as a JSON object (Python builds it from its keyword arguments).
bool read_run_options(const Json& o, sim::RunFiles& files, Diagnostics& diags) {
  const auto text = [&](const char* key) -> std::optional<std::string> {
    if (!o.contains(key) || o[key].is_null()) return std::nullopt;
    return o[key].get<std::string>();
  };
  const SourceLocation here{"coda.run", 0, 0};
  if (const auto precision = text("precision")) {
    files.precision = parse_data_type(*precision);
    if (!files.precision)
      diags.error(here, "precision", fmt::format("unknown precision '{}'", *precision),
                  "e.g. int8, fp8, fp16, bf16, fp32");
  }
  if (const auto fusion = text("fusion")) {
    files.fusion = mapper::parse_fusion_mode(*fusion);
    if (!files.fusion)
      diags.error(here, "fusion", fmt::format("unknown fusion '{}'", *fusion),
                  "none, epilogue or all");
  }
  if (const auto attention = text("attention")) {
    files.attention = arch::parse_attention_impl(*attention);
    if (!files.attention)
      diags.error(here, "attention", fmt::format("unknown attention '{}'", *attention),
                  "fa2, fa3 or triton");
  }
  if (const auto decode = text("decode_attention")) {
    files.decode_attention = arch::parse_decode_attention(*decode);
    if (!files.decode_attention)
      diags.error(here, "decode_attention", fmt::format("unknown class '{}'", *decode),
                  "grouped, per_head or fa2_forward");
  }
  if (const auto launch = text("launch")) {
    if (*launch == "eager" || *launch == "graph")
      files.eager = *launch == "eager";
    else
      diags.error(here, "launch", fmt::format("unknown launch '{}'", *launch), "graph or eager");
  }
  if (const auto engine = text("engine")) {
    if (*engine != "analytical")
      diags.error(here, "engine",
                  fmt::format("the Python API runs the analytical engine, not '{}'", *engine),
                  "leave engine out, or run `coda run --engine systemc` for the SystemC engine");
  }
  if (o.contains("skip_unsupported")) files.skip_unsupported = o["skip_unsupported"].get<bool>();
  if (o.contains("search") && o["search"].is_object()) {
    const Json& s = o["search"];
    mapper::ScheduleSearch search;
    search.settings.budget.max_evaluations = mapper::kCommandEvaluations;
    if (s.contains("objective")) {
      const auto objective = mapper::parse_objective(s["objective"].get<std::string>());
      if (objective)
        search.goal.objective = *objective;
      else
        diags.error(here, "search.objective", "unknown objective",
                    "one of: " + mapper::objective_list());
    }
    if (s.contains("strategy")) {
      const auto strategy = mapper::parse_strategy(s["strategy"].get<std::string>());
      if (strategy)
        search.settings.strategy = *strategy;
      else
        diags.error(here, "search.strategy", "unknown strategy",
                    "one of: " + mapper::strategy_list());
    }
    if (s.contains("evaluations"))
      search.settings.budget.max_evaluations = s["evaluations"].get<std::uint64_t>();
    if (s.contains("seed")) search.settings.seed = s["seed"].get<std::uint64_t>();
    files.search = search;
  }
  return !diags.has_errors();
}

std::string run(const ArchDoc& arch, const std::string& workload_text, const std::string& base,
                const std::string& options_text) {
  return guarded([&] {
    Diagnostics diags;
    sim::RunFiles files;
    files.arch = arch.label();
    files.arch_spec = arch.loaded(diags);
    files.source = read_source(workload_text, base, diags);
    if (!read_run_options(Json::parse(options_text), files, diags) || !files.arch_spec ||
        !files.source)
      return failed(diags);
    const auto result = sim::run_files(files, diags);
    if (!result) return failed(diags);
    Json value{{"run", Json(*result)},
               {"layers_csv", reports::format_layers_csv(*result)},
               {"run_time_seconds", results::run_time(*result).value},
               {"workload_notes", result->workload_notes}};
    return ok(std::move(value));
  });
}

std::string map(const ArchDoc& arch, const std::string& workload_text, const std::string& base,
                const std::string& precision) {
  return guarded([&] {
    Diagnostics diags;
    const auto loaded_arch = arch.loaded(diags);
    const auto source = read_source(workload_text, base, diags);
    std::optional<DataType> type;
    if (!precision.empty()) {
      type = parse_data_type(precision);
      if (!type)
        diags.error({"coda.map", 0, 0}, "precision",
                    fmt::format("unknown precision '{}'", precision), "e.g. int8, fp16, bf16");
    }
    if (!loaded_arch || !source || diags.has_errors()) return failed(diags);
    auto loaded = workload::load_source(*source, diags);
    if (!loaded) return failed(diags);
    if (type)
      for (workload::Op& op : loaded->graph.ops)
        for (workload::TensorAccess& access : op.space.accesses) access.dtype = *type;
    const arch::HardwareModel hw(loaded_arch->spec);
    mapper::SearchSettings settings;
    settings.budget.max_evaluations = mapper::kCommandEvaluations;
    mapper::MappingCache cache;
    const auto mapped = mapper::map_graph(loaded->graph, hw, mapper::SearchGoal{}, settings, cache);
    Json rows = Json::array();
    for (const auto& m : mapped) {
      Json row{{"op", m.op}, {"cached", m.cached}};
      if (!m.outcome || !m.outcome->found()) {
        row["mapped"] = false;
        row["why"] = m.outcome ? std::string("no valid mapping") : m.why;
      } else {
        const mapper::MappingCost& c = m.outcome->best.front().cost;
        row["mapped"] = true;
        row["cycles"] = c.cycles;
        row["seconds"] = c.cycles / hw.clock().value;
        row["energy_j"] = c.energy_pj * 1e-12;
        row["utilization"] = c.utilization;
        row["evaluated"] = m.outcome->evaluated;
        row["valid"] = m.outcome->valid;
      }
      rows.push_back(std::move(row));
    }
    return ok(std::move(rows));
  });
}

// Runs the sweep `spec_file` into the store `db` (created, or resumed when it holds this same
// sweep), holding its folder's lock as `coda sweep` does, and returns the exports (results.json's
// object and results.csv's text) and the outcome.
std::string sweep(const std::string& spec_file, const std::string& db, unsigned threads) {
  return guarded([&] {
    Diagnostics diags;
    const auto spec = dse::load_sweep_spec(spec_file, diags);
    if (!spec) return failed(diags);
    std::string why;
    cli::SweepFolderLock lock;  // before the store: it outlives it
    if (!lock.acquire(std::filesystem::path(db).parent_path(), why)) return failed(why);
    std::error_code ec;
    auto store =
        std::filesystem::exists(db, ec)
            ? dse::SweepStore::open(db, spec->hash, why)
            : dse::SweepStore::create(db, spec->hash, spec->name, dse::store_axes(*spec), why);
    if (!store) return failed(why);
    const auto outcome = dse::run_sweep(*spec, *store, {.threads = threads}, diags);
    if (!outcome) return failed(diags);
    const std::vector<dse::SweepRow> rows = store->rows();
    Json value{{"results", Json::parse(dse::export_json(*spec, rows))},
               {"csv", dse::export_csv(*spec, rows)},
               {"outcome", Json{{"points", outcome->points},
                                {"already_done", outcome->already_done},
                                {"ran", outcome->ran},
                                {"infeasible", outcome->infeasible},
                                {"seconds", outcome->seconds}}}};
    return ok(std::move(value));
  });
}

std::string validate(const std::string& manifest, bool fit) {
  return guarded([&] {
    Diagnostics diags;
    const auto corpus = validation::load_corpus(manifest, diags);
    if (!corpus) return failed(diags);
    const auto top = validation::corpus_root(std::filesystem::path(manifest).parent_path());
    std::string why;
    const auto report = validation::compare_corpus(
        *corpus,
        {.fit = fit,
         .pricing = {.llm_dir =
                         (top ? *top : std::filesystem::path(".")) / "configs/workloads/llm"}},
        why);
    if (!report) return failed(why);
    return ok(Json{{"report", Json::parse(validation::corpus_report_json(*report, *corpus))},
                   {"text", validation::corpus_report_text(*report, *corpus)}});
  });
}

// `coda ARGS...` in this process (cli::run_main): its exit status, what it printed and what it
// said on stderr. coda.serve, coda.train and coda.report are built on it.
std::tuple<int, std::string, std::string> command(const std::vector<std::string>& args) {
  std::vector<const char*> argv{"coda"};
  for (const std::string& arg : args) argv.push_back(arg.c_str());
  std::ostringstream out, err;
  int status = 1;
  try {
    status = cli::run_main(argv, out, err);
  } catch (const std::exception& e) {
    err << "error: " << e.what() << "\n";
  }
  return {status, out.str(), err.str()};
}

}  // namespace
}  // namespace coda::python

PYBIND11_MODULE(_coda, m) {
  using coda::python::ArchDoc;
  m.doc() = "coda's C++ core; use the coda package, which wraps it";
  m.attr("version") = std::string(coda::kVersion);

  py::class_<ArchDoc>(m, "ArchDoc")
      .def_property_readonly("label", &ArchDoc::label)
      .def("text", [](const ArchDoc& a) { return a.doc().text(); })
      .def("summary",
           [](const ArchDoc& a) {
             return coda::python::guarded([&] {
               coda::Diagnostics diags;
               const auto loaded = a.loaded(diags);
               return loaded ? coda::python::ok(coda::python::arch_summary(*loaded))
                             : coda::python::failed(diags);
             });
           })
      .def("get",
           [](const ArchDoc& a, const std::string& path) {
             std::string why, hint;
             const auto value = coda::dse::arch_value(a.doc(), path, why, hint);
             if (value) return coda::python::ok(*value);
             coda::Diagnostics diags;
             diags.error({"coda.Arch.get", 0, 0}, path, why, hint);
             return coda::python::failed(diags);
           })
      // A copy with `values` ({path: YAML text}) set and validated; the copy, or a failed
      // envelope as the second item.
      .def("with_values",
           [](const ArchDoc& a, const std::vector<std::pair<std::string, std::string>>& values)
               -> std::pair<py::object, std::string> {
             return coda::python::with_values(a, values);
           });

  m.def("load_arch", [](const std::string& file) -> std::pair<py::object, std::string> {
    auto [arch, envelope] = coda::python::load_arch(file);
    if (!arch) return {py::none(), envelope};
    return {py::cast(std::move(*arch)), envelope};
  });
  m.def("workload_summary", &coda::python::workload_summary);
  m.def("run", &coda::python::run);
  m.def("map", &coda::python::map);
  m.def("sweep", &coda::python::sweep, py::call_guard<py::gil_scoped_release>());
  m.def("validate", &coda::python::validate, py::call_guard<py::gil_scoped_release>());
  m.def("command", &coda::python::command, py::call_guard<py::gil_scoped_release>());
}
