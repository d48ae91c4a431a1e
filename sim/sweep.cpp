#include "sim/sweep.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "arch/hardware_model.h"
#include "core/results.h"
#include "mapper/schedule.h"
#include "mapper/search.h"
#include "sim/driver.h"
#include "sim/engine.h"
#include "workloads/importers.h"

namespace coda::sim {
namespace {

// Every error of `diags`, one after another on one line (they go into a CSV cell).
std::string errors_text(const Diagnostics& diags) {
  std::string text;
  for (const Diagnostic& d : diags.all())
    if (d.severity == Severity::Error) text += (text.empty() ? "" : "; ") + format(d);
  return text.empty() ? "no result (no diagnostic given)" : text;
}

// The in-memory equivalent of run_files for an arch already built and a graph already read.
std::optional<results::RunResult> run_workload(const workload::Graph& graph,
                                               const arch::HardwareModel& hw,
                                               const SweepWorkload& w, mapper::MappingCache* cache,
                                               std::string& why) {
  EngineRegistry registry;
  register_builtin_engines(registry);
  const auto engine = registry.create("analytical");
  std::optional<mapper::ScheduleSearch> search;
  if (w.search_mapper) search = mapper::ScheduleSearch{{}, {}, cache};
  const mapper::Schedule schedule =
      mapper::schedule_graph(graph, hw, mapper::ScheduleOptions{w.precision, w.fusion, search});
  if (!schedule.unsupported.empty()) {
    const mapper::UnsupportedOp& op = schedule.unsupported.front();
    why = fmt::format("{} op{} this arch cannot run, e.g. '{}': {}", schedule.unsupported.size(),
                      schedule.unsupported.size() == 1 ? "" : "s", op.name, op.reason);
    return std::nullopt;
  }
  return run_schedule(*engine, schedule, graph, hw, search);
}

std::string verdict(bool checked, bool known, bool pass) {
  if (!checked) return "unchecked";
  if (!known) return "unknown";
  return pass ? "pass" : "fail";
}

void fill_metrics(SweepRow& row, const results::RunResult& run, const SweepConstraints& limits) {
  const double seconds = results::run_time(run).value;
  row.latency_s = seconds;
  row.throughput_per_s = seconds > 0 ? 1.0 / seconds : 0.0;
  row.energy_j = run.total.energy.value;
  row.edp_js = row.energy_j * seconds;
  row.perf_per_watt = results::tops_per_watt(run);
  row.area_mm2 = run.area.value;
  row.perf_per_mm2 = row.area_mm2 > 0 && seconds > 0
                         ? 2.0 * static_cast<double>(run.total.macs) / seconds / 1e12 /
                               row.area_mm2
                         : 0.0;
  row.power_w = results::average_power(run).value;
  row.memory_status = run.memory.status;
  row.area_verdict = verdict(limits.max_area_mm2.has_value(), row.area_mm2 > 0,
                             row.area_mm2 <= limits.max_area_mm2.value_or(0));
  row.power_verdict = verdict(limits.max_power_w.has_value(), seconds > 0,
                              row.power_w <= limits.max_power_w.value_or(0));
  row.memory_verdict = verdict(limits.fits_memory, true, run.memory.status == "fits");
  const std::array<const std::string*, 3> verdicts{&row.area_verdict, &row.power_verdict,
                                                   &row.memory_verdict};
  row.feasible = std::none_of(verdicts.begin(), verdicts.end(), [](const std::string* v) {
    return *v == "fail" || *v == "unknown";
  });
}

double metric(const SweepRow& row, SweepObjective objective) {
  switch (objective) {
    case SweepObjective::Latency: return row.latency_s;
    case SweepObjective::Throughput: return row.throughput_per_s;
    case SweepObjective::Energy: return row.energy_j;
    case SweepObjective::Edp: return row.edp_js;
    case SweepObjective::PerfPerWatt: return row.perf_per_watt;
    case SweepObjective::PerfPerMm2: return row.perf_per_mm2;
  }
  return 0;
}

std::string_view unit_suffix(SweepObjective objective) {
  switch (objective) {
    case SweepObjective::Latency: return "latency_s";
    case SweepObjective::Throughput: return "throughput_per_s";
    case SweepObjective::Energy: return "energy_j";
    case SweepObjective::Edp: return "edp_js";
    case SweepObjective::PerfPerWatt: return "perf_per_watt_tops_per_w";
    case SweepObjective::PerfPerMm2: return "perf_per_mm2_tops_per_mm2";
  }
  return "?";
}

std::string csv_cell(std::string_view text) {
  if (text.find_first_of(",\"\n\r") == std::string_view::npos) return std::string(text);
  std::string quoted = "\"";
  for (const char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + "\"";
}

}  // namespace

SweepPointRecord evaluate_point(const SweepSpec& spec, std::span<const workload::Graph> graphs,
                                std::uint64_t index, const SweepPoint& point,
                                mapper::MappingCache* cache) {
  SweepPointRecord record;
  record.index = index;
  nlohmann::ordered_json values = nlohmann::ordered_json::object();
  for (const auto& [path, value] : point_values(spec, point)) values[path] = value;
  record.axis_values = values.dump();

  Diagnostics diags;
  std::uint64_t arch_hash = 0;
  std::optional<arch::HardwareModel> hw;
  std::string arch_reason;
  try {
    if (auto arch = apply_point(spec, point, diags, &arch_hash)) hw.emplace(std::move(*arch));
  } catch (const std::exception& e) {
    diags.error({spec.arch.string(), 0, 0}, "", fmt::format("internal error: {}", e.what()));
  }
  if (!hw) arch_reason = errors_text(diags);
  record.arch_hash = results::hex_hash(arch_hash);

  for (std::size_t i = 0; i < spec.workloads.size() && i < graphs.size(); ++i) {
    const SweepWorkload& w = spec.workloads[i];
    SweepRow row;
    row.point = index;
    row.axis_values = record.axis_values;
    row.arch_hash = record.arch_hash;
    row.workload = i;
    row.workload_name = w.name;
    std::optional<results::RunResult> run;
    std::string why = arch_reason;
    if (hw) {
      try {
        run = run_workload(graphs[i], *hw, w, cache, why);
      } catch (const std::exception& e) {
        why = fmt::format("internal error: {}", e.what());
      }
    }
    if (run) {
      run.value().provenance.inputs = {
          {"arch", spec.arch.string(), record.arch_hash},
          {"workload", w.file.string(), results::hex_hash(file_hash(w.file))}};
      fill_metrics(row, *run, spec.constraints);
      row.run_json = nlohmann::ordered_json(*run).dump();
    } else {
      row.status = "infeasible";
      row.reason = why;
      row.feasible = false;
    }
    record.rows.push_back(std::move(row));
  }
  return record;
}

std::optional<SweepOutcome> run_sweep(const SweepSpec& spec, SweepStore& store,
                                      const SweepOptions& options, Diagnostics& diags) {
  const auto start = std::chrono::steady_clock::now();
  const auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  std::vector<workload::Graph> graphs;
  bool graphs_ok = true;
  for (const SweepWorkload& w : spec.workloads) {
    auto graph = workload::load_workload(w.file, diags);
    if (graph)
      graphs.push_back(std::move(*graph));
    else
      graphs_ok = false;
  }
  if (!graphs_ok) return std::nullopt;

  const std::vector<SweepPoint> points = enumerate_points(spec);
  const std::set<std::uint64_t> done = store.done_points();
  SweepOutcome outcome;
  outcome.points = points.size();
  std::vector<std::uint64_t> todo;
  for (std::uint64_t i = 0; i < points.size(); ++i) {
    if (done.contains(i))
      ++outcome.already_done;
    else
      todo.push_back(i);
  }
  if (options.limit && todo.size() > *options.limit)
    todo.resize(static_cast<std::size_t>(*options.limit));
  outcome.remaining = outcome.points - outcome.already_done - todo.size();

  mapper::MappingCache cache;
  unsigned threads = options.threads > 0 ? options.threads : std::thread::hardware_concurrency();
  threads = std::max(1U, std::min<unsigned>(threads, static_cast<unsigned>(
                                                         std::max<std::size_t>(todo.size(), 1))));
  std::atomic<std::size_t> next{0};
  std::mutex mutex;  // guards the store, `outcome` and `failure`
  std::optional<std::string> failure;
  const auto work = [&] {
    for (;;) {
      const std::size_t slot = next.fetch_add(1);
      if (slot >= todo.size()) return;
      const std::uint64_t index = todo[slot];
      const SweepPointRecord record =
          evaluate_point(spec, graphs, index, points[static_cast<std::size_t>(index)], &cache);
      const std::scoped_lock lock(mutex);
      if (failure) return;
      std::string why;
      if (!store.write_point(record, why)) {
        failure = why;
        return;
      }
      ++outcome.ran;
      if (std::any_of(record.rows.begin(), record.rows.end(),
                      [](const SweepRow& r) { return r.status != "ok"; }))
        ++outcome.infeasible;
      if (options.progress)
        options.progress({outcome.ran, todo.size(), outcome.infeasible, elapsed()});
    }
  };
  {
    std::vector<std::jthread> pool;
    for (unsigned t = 0; t < threads; ++t) pool.emplace_back(work);
  }
  outcome.seconds = elapsed();
  if (failure) {
    diags.error({}, "", fmt::format("cannot write the sweep store: {}", *failure));
    return std::nullopt;
  }
  return outcome;
}

std::string export_csv(const SweepSpec& spec, const std::vector<SweepRow>& rows) {
  std::vector<std::string> header{"point", "workload"};
  for (const SweepAxis& axis : spec.axes) header.push_back(axis.path);
  header.insert(header.end(), {"status", "feasible"});
  for (const SweepObjective o : spec.objectives) header.emplace_back(unit_suffix(o));
  header.insert(header.end(), {"area_mm2", "power_w", "memory"});
  if (spec.constraints.max_area_mm2) header.emplace_back("max_area_mm2");
  if (spec.constraints.max_power_w) header.emplace_back("max_power_w");
  if (spec.constraints.fits_memory) header.emplace_back("fits_memory");
  header.emplace_back("reason");
  std::string text;
  for (std::size_t i = 0; i < header.size(); ++i)
    text += (i == 0 ? "" : ",") + csv_cell(header[i]);
  text += "\n";
  for (const SweepRow& r : rows) {
    std::vector<std::string> cells{fmt::format("{}", r.point), r.workload_name};
    const auto values = nlohmann::ordered_json::parse(r.axis_values, nullptr, false);
    for (const SweepAxis& axis : spec.axes)
      cells.push_back(values.is_object() && values.contains(axis.path)
                          ? values[axis.path].get<std::string>()
                          : std::string());
    cells.push_back(r.status);
    cells.emplace_back(r.feasible ? "yes" : "no");
    const bool ok = r.status == "ok";
    for (const SweepObjective o : spec.objectives)
      cells.push_back(ok ? fmt::format("{}", metric(r, o)) : std::string());
    cells.push_back(ok ? fmt::format("{}", r.area_mm2) : std::string());
    cells.push_back(ok ? fmt::format("{}", r.power_w) : std::string());
    cells.push_back(r.memory_status);
    if (spec.constraints.max_area_mm2) cells.push_back(r.area_verdict);
    if (spec.constraints.max_power_w) cells.push_back(r.power_verdict);
    if (spec.constraints.fits_memory) cells.push_back(r.memory_verdict);
    cells.push_back(r.reason);
    for (std::size_t i = 0; i < cells.size(); ++i)
      text += (i == 0 ? "" : ",") + csv_cell(cells[i]);
    text += "\n";
  }
  return text;
}

std::string export_json(const SweepSpec& spec, const std::vector<SweepRow>& rows) {
  nlohmann::ordered_json j;
  j["sweep"] = spec.name;
  j["spec_hash"] = results::hex_hash(spec.hash);
  j["sampling"] = to_string(spec.sampling.method);
  nlohmann::ordered_json axes = nlohmann::ordered_json::array();
  for (const SweepAxis& axis : spec.axes) axes.push_back({{"path", axis.path}, {"values", axis.values}});
  j["axes"] = axes;
  nlohmann::ordered_json objectives = nlohmann::ordered_json::array();
  for (const SweepObjective o : spec.objectives) objectives.push_back(to_string(o));
  j["objectives"] = objectives;
  nlohmann::ordered_json constraints = nlohmann::ordered_json::object();
  if (spec.constraints.max_area_mm2) constraints["max_area_mm2"] = *spec.constraints.max_area_mm2;
  if (spec.constraints.max_power_w) constraints["max_power_w"] = *spec.constraints.max_power_w;
  if (spec.constraints.fits_memory) constraints["fits_memory"] = true;
  j["constraints"] = constraints;
  nlohmann::ordered_json results = nlohmann::ordered_json::array();
  for (const SweepRow& r : rows) {
    nlohmann::ordered_json row;
    row["point"] = r.point;
    row["workload"] = r.workload_name;
    row["values"] = nlohmann::ordered_json::parse(r.axis_values, nullptr, false);
    row["arch_hash"] = r.arch_hash;
    row["status"] = r.status;
    row["feasible"] = r.feasible;
    if (r.status == "ok") {
      row["metrics"] = {{"latency_s", r.latency_s},           {"throughput_per_s", r.throughput_per_s},
                        {"energy_j", r.energy_j},             {"edp_js", r.edp_js},
                        {"perf_per_watt", r.perf_per_watt},   {"perf_per_mm2", r.perf_per_mm2},
                        {"area_mm2", r.area_mm2},             {"power_w", r.power_w}};
      row["memory"] = r.memory_status;
      row["constraints"] = {{"max_area_mm2", r.area_verdict},
                            {"max_power_w", r.power_verdict},
                            {"fits_memory", r.memory_verdict}};
    } else {
      row["reason"] = r.reason;
    }
    results.push_back(std::move(row));
  }
  j["results"] = results;
  return j.dump(2) + "\n";
}

}  // namespace coda::sim
