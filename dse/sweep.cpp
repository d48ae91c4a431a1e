#include "dse/sweep.h"

#include <sched.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <iterator>
#include <mutex>
#include <thread>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "arch/hardware_model.h"
#include "core/csv.h"
#include "core/sweep_metrics.h"
#include "core/text.h"
#include "mapper/schedule.h"
#include "mapper/search.h"
#include "sim/analytical/analytical_engine.h"
#include "sim/driver.h"
#include "sim/engine.h"
#include "workloads/importers.h"

namespace coda::dse {
namespace {

// Every error of `diags`, one after another on one line (they go into a CSV cell).
std::string errors_text(const Diagnostics& diags) {
  std::string text;
  for (const Diagnostic& d : diags.all())
    if (d.severity == Severity::Error) text += (text.empty() ? "" : "; ") + format(d);
  return text.empty() ? "no result (no diagnostic given)" : text;
}

// The in-memory equivalent of run_files for an arch already built and a graph already read.
std::optional<results::RunResult> run_workload(const sim::Engine& engine, const workload::Graph& graph,
                                               const mapper::MemoryPlan& memory_plan,
                                               const arch::HardwareModel& hw,
                                               const SweepWorkload& w, mapper::MappingCache* cache,
                                               std::string& why) {
  std::optional<mapper::ScheduleSearch> search;
  if (w.search_mapper) search = mapper::ScheduleSearch{w.search_goal, w.search_settings, cache};
  // As in run_files: SCALE-Sim's stalls are the analytical engine's fold walk's only.
  if (hw.spec().dram.model == arch::DramModel::ScaleSim &&
      (search || engine.name() != "analytical")) {
    why = "dram.model: scalesim times the analytical engine's folds as SCALE-Sim does; the search "
          "mapper and other engines time DRAM with coda's own memory model";
    return std::nullopt;
  }
  const mapper::Schedule schedule = mapper::schedule_graph(
      graph, hw,
      mapper::ScheduleOptions{
          w.precision,
          w.fusion.value_or(hw.spec().calibration.fusion.value_or(mapper::FusionMode::None)),
          search, &memory_plan});
  if (!schedule.unsupported.empty()) {
    const mapper::UnsupportedOp& op = schedule.unsupported.front();
    why = fmt::format("{} op{} this arch cannot run, e.g. '{}': {}", schedule.unsupported.size(),
                      schedule.unsupported.size() == 1 ? "" : "s", op.name, op.reason);
    return std::nullopt;
  }
  return sim::run_schedule(engine, schedule, graph, hw, search);
}

Verdict verdict(bool checked, bool known, bool pass) {
  if (!checked) return Verdict::Unchecked;
  if (!known) return Verdict::Unknown;
  return pass ? Verdict::Pass : Verdict::Fail;
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
  row.memory_verdict =
      verdict(limits.fits_memory, true, run.memory.status == results::FitStatus::Fits);
  const std::array<Verdict, 3> verdicts{row.area_verdict, row.power_verdict, row.memory_verdict};
  row.feasible = std::none_of(verdicts.begin(), verdicts.end(), [](Verdict v) {
    return v == Verdict::Fail || v == Verdict::Unknown;
  });
}

// A JSON string literal (quotes and escapes) for the run summary.
std::string quoted(const std::string& text) { return dump_json(nlohmann::json(text)); }

// The cores this process may run on (its affinity mask), at least 1.
unsigned usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
    return static_cast<unsigned>(CPU_COUNT(&set));
  return std::max(1U, std::thread::hardware_concurrency());
}

// The objective's column (results.csv) and key (results.json): results::kSweepMetrics, whose
// first entries are the objectives in SweepObjective's order.
std::string_view unit_suffix(SweepObjective objective) {
  return results::kSweepMetrics.at(static_cast<std::size_t>(objective)).key;
}

// A row's metrics in results::kSweepMetrics's order (an objective's is at its index).
std::array<double, results::kSweepMetrics.size()> metric_values(const SweepRow& r) {
  return {r.latency_s, r.throughput_per_s, r.energy_j, r.edp_js,
          r.perf_per_watt, r.perf_per_mm2, r.area_mm2, r.power_w};
}

}  // namespace

std::optional<SweepInputs> load_sweep_inputs(const SweepSpec& spec, Diagnostics& diags,
                                             const sim::EngineRegistry* engines) {
  SweepInputs inputs;
  bool ok = true;
  sim::EngineRegistry builtin;
  if (engines == nullptr) sim::register_builtin_engines(builtin);
  try {
    inputs.engine = (engines != nullptr ? *engines : builtin).create(spec.engine);
  } catch (const std::invalid_argument& e) {
    diags.error({spec.file.string(), 0, 0}, "engine", e.what());
    ok = false;
  }
  for (const SweepWorkload& w : spec.workloads) {
    auto loaded = workload::load_source(w.source, diags);
    if (loaded)
      inputs.graphs.push_back(std::move(loaded->graph));
    else
      ok = false;
    inputs.workload_hashes.push_back(results::hex_hash(workload::source_hash(w.source)));
    inputs.workload_sources.push_back(workload::describe(w.source));
  }
  if (!ok) return std::nullopt;
  for (const workload::Graph& graph : inputs.graphs)
    inputs.memory_plans.push_back(mapper::plan_memory(graph));
  inputs.points = PointSequence(spec);
  return inputs;
}

SweepPlan plan_sweep(std::uint64_t points, std::vector<bool> stored,
                     std::optional<std::uint64_t> limit) {
  SweepPlan plan;
  plan.points = points;
  stored.resize(static_cast<std::size_t>(points), false);
  plan.already_done = static_cast<std::uint64_t>(std::count(stored.begin(), stored.end(), true));
  const std::uint64_t missing = points - plan.already_done;
  plan.to_run = limit ? std::min(missing, *limit) : missing;
  plan.remaining = missing - plan.to_run;
  plan.stored = std::move(stored);
  return plan;
}

std::optional<std::uint64_t> TodoCursor::next() {
  if (handed_ == plan_->to_run) return std::nullopt;
  while (plan_->stored[static_cast<std::size_t>(at_)]) ++at_;  // to_run points are left unstored
  ++handed_;
  return at_++;
}

std::vector<std::uint64_t> todo_list(const SweepPlan& plan) {
  std::vector<std::uint64_t> out;
  TodoCursor cursor(plan);
  while (const auto i = cursor.next()) out.push_back(*i);
  return out;
}

unsigned worker_threads(unsigned threads, std::size_t points) {
  const unsigned wanted = threads > 0 ? threads : usable_cores();
  return std::max(1U, static_cast<unsigned>(std::min<std::size_t>(wanted, points)));
}

std::string run_summary(const results::RunResult& run) {
  std::string text;
  auto out = std::back_inserter(text);
  const results::Cost& t = run.total;
  fmt::format_to(out,
                 R"({{"summary_version":1,"arch":{},"workload":{},"engine":{},"mapper":{},)"
                 R"("fusion_mode":{},"clock_hz":{},"processing_elements":{},"area_mm2":{},)",
                 quoted(run.arch), quoted(run.workload), quoted(run.provenance.engine),
                 quoted(run.mapper), quoted(run.fusion_mode), run.clock.value,
                 run.processing_elements, run.area.value);
  fmt::format_to(out,
                 R"("total":{{"cycles":{},"compute_cycles":{},"stall_cycles":{},"macs":{},)"
                 R"("sram_reads":{},"sram_writes":{},"dram_reads":{},"dram_writes":{},)"
                 R"("energy_j":{}}},)",
                 t.cycles.value, t.compute_cycles.value, t.stall_cycles.value, t.macs,
                 t.sram_reads.value, t.sram_writes.value, t.dram_reads.value,
                 t.dram_writes.value, t.energy.value);
  const results::MemoryFootprint& m = run.memory;
  fmt::format_to(out,
                 R"("memory":{{"status":{},"needed_bytes":{},"available_bytes":{},)"
                 R"("weights_bytes":{},"kv_cache_bytes":{},"optimizer_state_bytes":{},)"
                 R"("activations_bytes":{},"on_chip_bytes":{}}},"skipped":{},"fused_groups":{},)",
                 quoted(std::string(results::to_string(m.status))), m.needed.value,
                 m.available.value, m.weights.value, m.kv_cache.value, m.optimizer_state.value,
                 m.activations.value, m.on_chip.value, run.skipped.size(), run.fusion.size());
  fmt::format_to(out, R"("op_columns":["name","unit","cycles","compute_cycles","stall_cycles",)"
                      R"("macs","sram_reads","sram_writes","dram_reads","dram_writes","energy_j",)"
                      R"("bound","arithmetic_intensity","compute_utilization",)"
                      R"("mapping_efficiency"],"ops":[)");
  for (std::size_t i = 0; i < run.ops.size(); ++i) {
    const results::OpResult& op = run.ops[i];
    const results::Cost& c = op.cost;
    fmt::format_to(out, R"({}[{},{},{},{},{},{},{},{},{},{},{},"{}",{},{},{}])", i == 0 ? "" : ",",
                   quoted(op.name), quoted(std::string(results::to_string(op.unit))),
                   c.cycles.value, c.compute_cycles.value, c.stall_cycles.value, c.macs,
                   c.sram_reads.value, c.sram_writes.value, c.dram_reads.value, c.dram_writes.value,
                   c.energy.value, results::to_string(op.bound), op.arithmetic_intensity,
                   op.compute_utilization, op.mapping_efficiency);
  }
  fmt::format_to(out, "]}}");
  return text;
}

std::shared_ptr<const WorkloadCache::Entry> WorkloadCache::get(
    std::size_t workload, const SweepWorkload& w, const std::vector<std::uint32_t>& key) {
  auto id = std::make_pair(workload, key);
  {
    const std::scoped_lock lock(mutex_);
    if (const auto it = entries_.find(id); it != entries_.end()) return it->second;
  }
  auto entry = std::make_shared<Entry>();
  entry->source = workload::describe(w.source);
  entry->hash = results::hex_hash(workload::source_hash(w.source));
  Diagnostics diags;
  if (auto loaded = workload::load_source(w.source, diags)) {
    entry->memory_plan = mapper::plan_memory(loaded->graph);
    entry->graph = std::move(loaded->graph);
  } else {
    entry->why = errors_text(diags);
  }
  const std::scoped_lock lock(mutex_);
  return entries_.try_emplace(std::move(id), std::move(entry)).first->second;
}

std::vector<StoreAxis> store_axes(const SweepSpec& spec) {
  std::vector<StoreAxis> axes;
  for (const SweepAxis& axis : spec.axes) axes.push_back({axis.path, axis.values});
  return axes;
}

SweepPointRecord evaluate_point(const SweepSpec& spec, const SweepInputs& inputs,
                                PointArchBuilder& archs, std::uint64_t index,
                                const SweepPoint& point, mapper::MappingCache* cache) {
  SweepPointRecord record;
  record.index = index;
  for (const std::size_t v : point) record.values.push_back(static_cast<std::uint32_t>(v));

  Diagnostics diags;
  std::uint64_t arch_hash = 0;
  std::optional<arch::HardwareModel> hw;
  std::string arch_reason;
  bool arch_failed = false;  // coda's own failure, not the design's
  try {
    if (auto arch = archs.build(point, diags, &arch_hash)) hw.emplace(std::move(*arch));
  } catch (const std::exception& e) {
    diags.error({spec.arch.string(), 0, 0}, "", fmt::format("internal error: {}", e.what()));
    arch_failed = true;
  }
  if (!hw) arch_reason = errors_text(diags);
  record.arch_hash = results::hex_hash(arch_hash);

  const sim::analytical::AnalyticalEngine analytical;
  const sim::Engine& engine = inputs.engine ? *inputs.engine : analytical;
  // The workload axes' value indices: the key of the point's workloads in the cache.
  std::vector<std::uint32_t> workload_key;
  for (std::size_t a = 0; a < spec.axes.size() && a < point.size(); ++a)
    if (spec.axes[a].workload) workload_key.push_back(record.values[a]);
  for (std::size_t i = 0; i < spec.workloads.size() && i < inputs.graphs.size(); ++i) {
    SweepWorkload w = spec.workloads[i];
    const workload::Graph* graph = &inputs.graphs[i];
    const mapper::MemoryPlan* memory_plan = &inputs.memory_plans[i];
    std::string workload_source = inputs.workload_sources[i];
    std::string workload_hash = inputs.workload_hashes[i];
    std::string workload_why;
    std::shared_ptr<const WorkloadCache::Entry> built;  // keeps the graph alive
    if (!workload_key.empty()) {
      if (!apply_workload_axes(spec, point, w, workload_why)) {
        graph = nullptr;
      } else {
        built = inputs.workloads->get(i, w, workload_key);
        graph = built->graph ? &*built->graph : nullptr;
        memory_plan = &built->memory_plan;
        workload_source = built->source;
        workload_hash = built->hash;
        workload_why = built->why;
      }
    }
    SweepRow row;
    row.point = index;
    row.values = record.values;
    row.arch_hash = record.arch_hash;
    row.workload = i;
    row.workload_name = w.name;
    std::optional<results::RunResult> run;
    std::string why = arch_reason;
    bool failed = arch_failed;
    if (hw && graph == nullptr) {  // the point's workload cannot be built: not a design fault
      why = workload_why;
    } else if (hw) {
      try {
        run = run_workload(engine, *graph, *memory_plan, *hw, w, cache, why);
      } catch (const std::exception& e) {
        why = fmt::format("internal error: {}", e.what());
        failed = true;
      }
    }
    if (run) {
      run.value().provenance.inputs = {{"arch", spec.arch.string(), record.arch_hash},
                                       {"workload", workload_source, workload_hash}};
      fill_metrics(row, *run, spec.constraints);
      row.run_summary = run_summary(*run);
    } else {
      row.status = failed ? RowStatus::Error : RowStatus::Infeasible;
      row.reason = why;
      row.feasible = false;
    }
    record.rows.push_back(std::move(row));
  }
  return record;
}

bool run_points(const SweepSpec& spec, const SweepInputs& inputs, const PointSource& next,
                std::size_t points, unsigned threads, const PointSink& sink,
                mapper::MappingCache* cache, std::string& why) {
  std::mutex mutex;  // guards the sink's calls and `failure`
  std::optional<std::string> failure;
  std::atomic<bool> stop{false};
  const auto work = [&] {
    Diagnostics diags;
    auto archs = PointArchBuilder::create(spec, diags);
    if (!archs) {
      const std::scoped_lock lock(mutex);
      if (!failure) failure = diags.format_all();
      stop = true;
      return;
    }
    PointSequence sequence = inputs.points;  // this thread's place in the points
    while (!stop) {
      const std::optional<std::uint64_t> index = next();
      if (!index) return;
      SweepPointRecord record =
          evaluate_point(spec, inputs, *archs, *index, sequence.at(*index), cache);
      const std::scoped_lock lock(mutex);
      if (failure) return;
      std::string reason;
      if (!sink(std::move(record), reason)) {
        failure = reason;
        stop = true;
        return;
      }
    }
  };
  {
    std::vector<std::jthread> pool;
    const unsigned n = worker_threads(threads, points);
    for (unsigned t = 0; t < n; ++t) pool.emplace_back(work);
  }
  if (!failure) return true;
  why = *failure;
  return false;
}

// ---- SweepWriter ----

struct SweepWriter::State {
  static constexpr std::chrono::milliseconds kCommitInterval{100};
  static constexpr std::size_t kMaxBatch = 1024;

  SweepStore& store;
  std::uint64_t total = 0;
  std::function<void(const SweepProgress&)> progress;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  std::mutex mutex;  // guards everything below
  std::condition_variable wake;  // for the writer: points queued, or closing
  std::deque<SweepPointRecord> queue;
  bool closing = false;
  std::optional<std::string> failure;
  std::uint64_t written = 0;
  std::uint64_t infeasible = 0;
  std::jthread thread;

  State(SweepStore& s, std::uint64_t t, std::function<void(const SweepProgress&)> p)
      : store(s), total(t), progress(std::move(p)) {}

  void run() {
    std::unique_lock lock(mutex);
    auto last_commit = std::chrono::steady_clock::now() - kCommitInterval;
    for (;;) {
      wake.wait(lock, [&] { return !queue.empty() || closing; });
      if (queue.empty()) return;
      // Commits at most once per kCommitInterval (unless kMaxBatch points wait): a sync costs
      // the same for one point as for hundreds.
      wake.wait_until(lock, last_commit + kCommitInterval,
                      [&] { return closing || queue.size() >= kMaxBatch; });
      last_commit = std::chrono::steady_clock::now();
      std::vector<SweepPointRecord> batch(std::make_move_iterator(queue.begin()),
                                          std::make_move_iterator(queue.end()));
      queue.clear();
      lock.unlock();
      std::string why;
      const bool ok = store.write_points(batch, why);
      const auto bad = static_cast<std::uint64_t>(
          std::count_if(batch.begin(), batch.end(), [](const SweepPointRecord& r) {
            return std::any_of(r.rows.begin(), r.rows.end(),
                               [](const SweepRow& row) {
                                 return row.status == RowStatus::Infeasible;
                               });
          }));
      lock.lock();
      if (!ok) {
        failure = why;
        queue.clear();
        return;
      }
      written += batch.size();
      infeasible += bad;
      if (progress) {
        const SweepProgress now{
            written, total, infeasible,
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()};
        lock.unlock();  // the callback may print; workers keep queueing meanwhile
        progress(now);
        lock.lock();
      }
    }
  }
};

SweepWriter::SweepWriter(SweepStore& store, std::uint64_t total,
                         std::function<void(const SweepProgress&)> progress)
    : state_(std::make_unique<State>(store, total, std::move(progress))) {
  state_->thread = std::jthread([s = state_.get()] { s->run(); });
}

SweepWriter::~SweepWriter() {
  std::string ignored;
  finish(ignored);
}

bool SweepWriter::put(SweepPointRecord record, std::string& why) {
  const std::scoped_lock lock(state_->mutex);
  if (state_->failure) {
    why = *state_->failure;
    return false;
  }
  state_->queue.push_back(std::move(record));
  // The writer waits for the first point of a batch, then for the interval or a full batch.
  if (state_->queue.size() == 1 || state_->queue.size() >= State::kMaxBatch)
    state_->wake.notify_one();
  return true;
}

bool SweepWriter::finish(std::string& why) {
  {
    std::unique_lock lock(state_->mutex);
    state_->closing = true;
    state_->wake.notify_one();
  }
  if (state_->thread.joinable()) state_->thread.join();
  const std::scoped_lock lock(state_->mutex);
  if (!state_->failure) return true;
  why = *state_->failure;
  return false;
}

std::uint64_t SweepWriter::written() const {
  const std::scoped_lock lock(state_->mutex);
  return state_->written;
}

std::uint64_t SweepWriter::infeasible() const {
  const std::scoped_lock lock(state_->mutex);
  return state_->infeasible;
}

std::optional<SweepOutcome> run_sweep(const SweepSpec& spec, SweepStore& store,
                                      const SweepOptions& options, Diagnostics& diags) {
  const auto start = std::chrono::steady_clock::now();
  const auto inputs = load_sweep_inputs(spec, diags, options.engines);
  if (!inputs) return std::nullopt;
  const std::uint64_t points = inputs->points.size();
  const SweepPlan plan = plan_sweep(points, store.stored_points(points), options.limit);
  SweepOutcome outcome;
  outcome.points = plan.points;
  outcome.already_done = plan.already_done;
  outcome.remaining = plan.remaining;

  mapper::MappingCache cache;
  SweepWriter writer(store, plan.to_run, options.progress);
  std::string why;
  std::mutex todo_mutex;
  TodoCursor todo(plan);
  const PointSource source = [&]() -> std::optional<std::uint64_t> {
    if (options.stop != nullptr && options.stop->load()) return std::nullopt;
    const std::scoped_lock lock(todo_mutex);
    return todo.next();
  };
  const bool ran = run_points(
      spec, *inputs, source, static_cast<std::size_t>(plan.to_run), options.threads,
      [&writer](SweepPointRecord record, std::string& reason) {
        return writer.put(std::move(record), reason);
      },
      &cache, why);
  std::string write_why;
  const bool written = writer.finish(write_why);
  outcome.ran = writer.written();
  if (outcome.ran < plan.to_run) {  // stopped early: the rest is still missing
    outcome.interrupted = options.stop != nullptr && options.stop->load();
    outcome.remaining += plan.to_run - outcome.ran;
  }
  outcome.infeasible = writer.infeasible();
  outcome.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!written) {
    diags.error({}, "", fmt::format("cannot write the sweep store: {}", write_why));
    return std::nullopt;
  }
  if (!ran) {
    diags.error({}, "", fmt::format("the sweep stopped: {}", why));
    return std::nullopt;
  }
  return outcome;
}

std::string csv_header(const SweepSpec& spec) {
  std::vector<std::string> header{"point", "workload"};
  for (const SweepAxis& axis : spec.axes) header.push_back(axis.path);
  header.insert(header.end(), {"status", "feasible"});
  for (const SweepObjective o : spec.objectives) header.emplace_back(unit_suffix(o));
  for (std::size_t i = results::kSweepObjectiveCount; i < results::kSweepMetrics.size(); ++i)
    header.emplace_back(results::kSweepMetrics[i].key);  // area_mm2, power_w
  header.emplace_back("memory");
  if (spec.constraints.max_area_mm2) header.emplace_back("max_area_mm2");
  if (spec.constraints.max_power_w) header.emplace_back("max_power_w");
  if (spec.constraints.fits_memory) header.emplace_back("fits_memory");
  header.emplace_back("reason");
  std::string text;
  for (std::size_t i = 0; i < header.size(); ++i)
    text += (i == 0 ? "" : ",") + csv_cell(header[i]);
  return text + "\n";
}

namespace {

// The text of a row's value on axis `a` (empty when the row has none there: never from a store
// of this spec, whose hash the store checks).
std::string value_text(const SweepSpec& spec, const SweepRow& r, std::size_t a) {
  const std::vector<std::string>& values = spec.axes[a].values;
  return a < r.values.size() && r.values[a] < values.size() ? values[r.values[a]] : std::string();
}

}  // namespace

std::string csv_line(const SweepSpec& spec, const SweepRow& r) {
  std::vector<std::string> cells{fmt::format("{}", r.point), r.workload_name};
  for (std::size_t a = 0; a < spec.axes.size(); ++a) cells.push_back(value_text(spec, r, a));
  cells.emplace_back(to_string(r.status));
  cells.emplace_back(r.feasible ? "yes" : "no");
  const bool ok = r.status == RowStatus::Ok;
  const auto metrics = metric_values(r);
  const auto cell = [&](std::size_t i) { return ok ? fmt::format("{}", metrics[i]) : std::string(); };
  for (const SweepObjective o : spec.objectives) cells.push_back(cell(static_cast<std::size_t>(o)));
  for (std::size_t i = results::kSweepObjectiveCount; i < metrics.size(); ++i)  // area, power
    cells.push_back(cell(i));
  cells.emplace_back(r.memory_status ? results::to_string(*r.memory_status) : "");
  if (spec.constraints.max_area_mm2) cells.emplace_back(to_string(r.area_verdict));
  if (spec.constraints.max_power_w) cells.emplace_back(to_string(r.power_verdict));
  if (spec.constraints.fits_memory) cells.emplace_back(to_string(r.memory_verdict));
  cells.push_back(r.reason);
  std::string text;
  for (std::size_t i = 0; i < cells.size(); ++i)
    text += (i == 0 ? "" : ",") + csv_cell(cells[i]);
  return text + "\n";
}

std::string export_csv(const SweepSpec& spec, const std::vector<SweepRow>& rows) {
  std::string text = csv_header(spec);
  for (const SweepRow& r : rows) text += csv_line(spec, r);
  return text;
}

namespace {

// The document's top level without "results", as dump_json writes it with indent 2.
std::string json_document_head(const SweepSpec& spec) {
  nlohmann::ordered_json j;
  j["sweep"] = spec.name;
  j["spec_hash"] = results::hex_hash(spec.hash);
  j["spec"] = spec.file.generic_string();  // coda report rereads it to write the chosen designs
  j["sampling"] = to_string(spec.sampling.method);
  nlohmann::ordered_json axes = nlohmann::ordered_json::array();
  for (const SweepAxis& axis : spec.axes) {
    nlohmann::ordered_json entry{{"path", axis.path}, {"values", axis.values}};
    if (axis.base) entry["base"] = *axis.base;  // the base arch's value: the base design's
    axes.push_back(std::move(entry));
  }
  j["axes"] = axes;
  nlohmann::ordered_json objectives = nlohmann::ordered_json::array();
  for (const SweepObjective o : spec.objectives) objectives.push_back(to_string(o));
  j["objectives"] = objectives;
  nlohmann::ordered_json constraints = nlohmann::ordered_json::object();
  if (spec.constraints.max_area_mm2) constraints["max_area_mm2"] = *spec.constraints.max_area_mm2;
  if (spec.constraints.max_power_w) constraints["max_power_w"] = *spec.constraints.max_power_w;
  if (spec.constraints.fits_memory) constraints["fits_memory"] = true;
  j["constraints"] = constraints;
  std::string text = dump_json(j, 2);
  text.resize(text.size() - 2);  // "\n}": the document goes on with "results"
  return text;
}

}  // namespace

std::string json_head(const SweepSpec& spec) {
  return json_document_head(spec) + ",\n  \"results\": [";
}

std::string_view json_separator(std::size_t index) { return index == 0 ? "\n" : ",\n"; }

std::string json_row(const SweepSpec& spec, const SweepRow& r) {
  nlohmann::ordered_json row;
  row["point"] = r.point;
  row["workload"] = r.workload_name;
  nlohmann::ordered_json axis_values = nlohmann::ordered_json::object();
  for (std::size_t a = 0; a < spec.axes.size(); ++a)
    axis_values[spec.axes[a].path] = value_text(spec, r, a);
  row["values"] = std::move(axis_values);
  row["arch_hash"] = r.arch_hash;
  row["status"] = to_string(r.status);
  row["feasible"] = r.feasible;
  if (r.status == RowStatus::Ok) {
    nlohmann::ordered_json metrics;
    const auto values = metric_values(r);
    for (std::size_t i = 0; i < values.size(); ++i)
      metrics[std::string(results::kSweepMetrics[i].key)] = values[i];
    row["metrics"] = std::move(metrics);
    row["memory"] = r.memory_status ? results::to_string(*r.memory_status) : "";
    row["constraints"] = {{"max_area_mm2", to_string(r.area_verdict)},
                          {"max_power_w", to_string(r.power_verdict)},
                          {"fits_memory", to_string(r.memory_verdict)}};
  } else {
    row["reason"] = r.reason;
  }
  // Indented as an element of "results" (two levels deep) in the document's indent of 2.
  std::string text = "    ";
  for (const char c : dump_json(row, 2)) {
    text += c;
    if (c == '\n') text += "    ";
  }
  return text;
}

std::string json_tail(std::size_t rows) { return rows == 0 ? "]\n}\n" : "\n  ]\n}\n"; }

std::string export_json(const SweepSpec& spec, const std::vector<SweepRow>& rows) {
  std::string text = json_head(spec);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    text += json_separator(i);
    text += json_row(spec, rows[i]);
  }
  return text + json_tail(rows.size());
}

}  // namespace coda::dse
