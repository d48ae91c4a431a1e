#pragma once
// The sweep executor: runs every point of a SweepSpec (dse/sweep_spec.h) on every workload, in
// memory, on worker threads, and writes each finished point to a SweepStore
// (dse/sweep_store.h) as it finishes (SweepWriter: group commit). Points already in the store are
// skipped, so an interrupted sweep resumes where it stopped and ends with the rows an
// uninterrupted one writes. Under mpirun the CLI's MPI glue (cli/sweep_mpi.h) splits the points
// over ranks with the same pieces (load_sweep_inputs, plan_sweep, run_points, SweepWriter).
//
// Shared once per sweep, not per point: the workloads are read once, each worker thread reads
// the base arch once (PointArchBuilder) and sets each point's values in its copy, and a point
// stores a compact summary of each run, not the whole RunResult.
//
// Per point x workload: latency = the run's seconds; throughput = 1 / latency (runs of the
// workload, i.e. samples of its batch, per second); energy in joules; edp = energy x latency;
// perf_per_watt = TOPS/W (2 ops per MAC); perf_per_mm2 = TOPS per mm2 of RunResult.area.
// Constraints: area <= max_area_mm2, average power <= max_power_w, memory.status == "fits".
// A point whose values make an invalid arch, or a workload the arch cannot run, is a row with
// status "infeasible" and the diagnostics as its reason.

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/diagnostics.h"
#include "core/results.h"
#include "mapper/memory_plan.h"
#include "sim/engine.h"
#include "dse/sweep_spec.h"
#include "dse/sweep_store.h"
#include "workloads/graph.h"

namespace coda::mapper {
class MappingCache;
}

namespace coda::dse {

struct SweepProgress {
  std::uint64_t done = 0;        // points stored in this run
  std::uint64_t total = 0;       // points this run will run
  std::uint64_t infeasible = 0;  // of `done`, points with an infeasible row
  double elapsed_s = 0;
};

struct SweepOptions {
  unsigned threads = 0;                // 0: every core this process may run on
  std::optional<std::uint64_t> limit;  // stop after this many new points
  // Called after each commit to the store (one or more points), from the store's writer
  // thread, never two calls at once. The library does not print: the CLI renders this.
  std::function<void(const SweepProgress&)> progress;
  // Where the spec's engine comes from; null: register_builtin_engines'.
  const sim::EngineRegistry* engines = nullptr;
  // Set (by another thread: a signal's watcher) to stop early: no worker takes a new point, the
  // points in flight finish and are stored, and the outcome says `interrupted`. Null: never.
  const std::atomic<bool>* stop = nullptr;
};

struct SweepOutcome {
  std::uint64_t points = 0;          // in the spec
  std::uint64_t already_done = 0;    // found in the store
  std::uint64_t ran = 0;             // run and stored now
  std::uint64_t remaining = 0;       // still missing (after --limit)
  std::uint64_t infeasible = 0;      // of `ran`
  double seconds = 0;
  bool interrupted = false;          // options.stop was set before every planned point ran
};

// The workloads a sweep's workload axes make (dse/sweep_spec.h, WorkloadParam), built once per
// workload and combination of those axes' values and shared by the worker threads. Grows with
// the combinations (a handful of batches x sequence lengths), not with the points.
class WorkloadCache {
 public:
  struct Entry {
    std::optional<workload::Graph> graph;  // nullopt: the source could not be built (`why`)
    mapper::MemoryPlan memory_plan;
    std::string source;  // workload::describe
    std::string hash;    // 16 hex digits of workload::source_hash
    std::string why;     // the diagnostics of a source that could not be built
  };
  // The workload `w` (spec.workloads[workload] with the point's workload axes applied), `key`
  // its axes' value indices. Thread-safe; two threads may build the same entry at once, and the
  // first stored is kept.
  std::shared_ptr<const Entry> get(std::size_t workload, const SweepWorkload& w,
                                   const std::vector<std::uint32_t>& key);

 private:
  std::mutex mutex_;
  std::map<std::pair<std::size_t, std::vector<std::uint32_t>>, std::shared_ptr<const Entry>>
      entries_;
};

// What every point of a sweep shares, made once per sweep (and per MPI rank): the workloads
// read, their files' content hashes (for each run's provenance), their memory plans (which
// depend on the graph only) and the points (made as they are asked for: each worker thread
// copies the sequence).
struct SweepInputs {
  std::vector<workload::Graph> graphs;       // spec.workloads order
  std::vector<std::string> workload_hashes;  // 16 hex digits per workload (source_hash)
  std::vector<std::string> workload_sources;  // workload::describe of each, for provenance
  std::vector<mapper::MemoryPlan> memory_plans;  // plan_memory of each graph (graph-only)
  PointSequence points;                          // PointSequence(spec)
  std::shared_ptr<const sim::Engine> engine;      // spec.engine, made once; shared by the threads
  std::shared_ptr<WorkloadCache> workloads = std::make_shared<WorkloadCache>();  // workload axes
};
// nullopt when a workload cannot be read or the spec's engine is not in `engines` (null:
// register_builtin_engines', the analytical one; the CLI adds the SystemC engine).
std::optional<SweepInputs> load_sweep_inputs(const SweepSpec& spec, Diagnostics& diags,
                                             const sim::EngineRegistry* engines = nullptr);

// Which points a run runs: the ones missing from the store, in index order, the first `limit`.
// Kept as one bit a point (stored or not), so the plan of a million points takes 125 KB; a
// TodoCursor hands out the points to run.
struct SweepPlan {
  std::uint64_t points = 0;
  std::uint64_t already_done = 0;
  std::uint64_t to_run = 0;     // the points this run runs
  std::uint64_t remaining = 0;  // missing after this run
  std::vector<bool> stored;     // [point]: already in the store (SweepStore::stored_points)
};
// `stored`: one flag per point; a shorter list leaves the rest missing.
SweepPlan plan_sweep(std::uint64_t points, std::vector<bool> stored,
                     std::optional<std::uint64_t> limit);

// A plan's points to run, in index order, one at a time: the first plan.to_run points that are
// not stored. Not thread-safe (callers hold a lock); the plan must outlive it.
class TodoCursor {
 public:
  explicit TodoCursor(const SweepPlan& plan) : plan_(&plan) {}
  std::optional<std::uint64_t> next();
  std::uint64_t handed() const { return handed_; }  // points handed out so far

 private:
  const SweepPlan* plan_;
  std::uint64_t at_ = 0;  // the next index to look at
  std::uint64_t handed_ = 0;
};
// Every point a plan runs, at once (tests and small callers).
std::vector<std::uint64_t> todo_list(const SweepPlan& plan);

// The worker threads `threads` asks for: itself when above 0, else the cores this process may
// run on (its CPU affinity: under mpirun, the cores the rank is bound to), never more than
// `points` nor less than 1.
unsigned worker_threads(unsigned threads, std::size_t points);

// Receives each finished point; false (with `why`) stops the run.
using PointSink = std::function<bool(SweepPointRecord record, std::string& why)>;

// Gives the next point to run (an index into inputs.points), or nothing once there are none
// left; called from every worker thread at once, so it must be thread-safe. It may block until
// a point is at hand (MPI ranks wait for their next share).
using PointSource = std::function<std::optional<std::uint64_t>()>;

// Runs the points drawn from `next` as the workers get free on `threads` worker threads and
// hands each finished one to `sink`, never two calls at once, in the order they finish.
// `points` (how many there will be, at most) only bounds the number of threads. Each worker
// builds its points' archs with its own PointArchBuilder and makes them with its own copy of
// inputs.points; `cache` (may be null) is the mapping cache of the workloads with `mapper:
// search`. False with `why` when the sink refused a point or the base arch cannot be read.
bool run_points(const SweepSpec& spec, const SweepInputs& inputs, const PointSource& next,
                std::size_t points, unsigned threads, const PointSink& sink,
                mapper::MappingCache* cache, std::string& why);

// Writes points into a store from its own thread with group commit: the points that arrive
// while a transaction commits, or within 100 ms of the previous commit, go together into the next
// one (one transaction and one sync per batch, at most 1024 points, so a point is durable within
// about 100 ms and one commit of finishing, and the store keeps up with many points per second on
// a slow disk). put() is thread-safe.
class SweepWriter {
 public:
  // `total`: the points this run will put, for progress. `progress` may be empty.
  SweepWriter(SweepStore& store, std::uint64_t total,
              std::function<void(const SweepProgress&)> progress);
  ~SweepWriter();
  SweepWriter(const SweepWriter&) = delete;
  SweepWriter& operator=(const SweepWriter&) = delete;

  // Queues a point; false with the store's error once a write has failed (nothing more is
  // written then).
  bool put(SweepPointRecord record, std::string& why);
  // Waits until every point put so far is written and stops the thread; false with the
  // store's error. Called by the destructor too.
  bool finish(std::string& why);
  std::uint64_t written() const;
  std::uint64_t infeasible() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Loads the inputs once and runs the missing points. nullopt when a workload cannot be read,
// or the store fails (the reasons are in `diags`).
std::optional<SweepOutcome> run_sweep(const SweepSpec& spec, SweepStore& store,
                                      const SweepOptions& options, Diagnostics& diags);

// The spec's axes as a store records them (SweepStore::create).
std::vector<StoreAxis> store_axes(const SweepSpec& spec);

// Runs point `index` (its value indices `point`: inputs.points.at(index)) on every workload, its
// arch built by `archs` (one per thread).
SweepPointRecord evaluate_point(const SweepSpec& spec, const SweepInputs& inputs,
                                PointArchBuilder& archs, std::uint64_t index,
                                const SweepPoint& point, mapper::MappingCache* cache = nullptr);

// The compact form of a run a row stores (SweepRow::run_summary; docs/sweeps.md, "The store"):
// one JSON object with the run's identity, totals and memory footprint and, per op, one array of
// the values in "op_columns" order (name, unit, cycles, compute and stall cycles, MACs, SRAM and
// DRAM reads and writes, energy, bound, arithmetic intensity, utilisation, mapping efficiency).
// Written with fmt, not a JSON tree: it is made once per point x workload.
std::string run_summary(const results::RunResult& run);

// One row per point x workload: point, workload, the axes, status, feasible, the spec's
// objectives, area_mm2, power_w, memory, the verdict of each constraint the spec sets, reason.
std::string export_csv(const SweepSpec& spec, const std::vector<SweepRow>& rows);
// {"sweep", "spec_hash", "axes", "objectives", "constraints", "results": [...]}; each result
// holds what the CSV row holds, without the run summary (that stays in the store).
std::string export_json(const SweepSpec& spec, const std::vector<SweepRow>& rows);

// The same exports a piece at a time, so that a caller can write them while it reads the rows
// from the store one by one (memory that does not grow with the points): export_csv is
// csv_header + csv_line per row; export_json is json_head, then json_separator(i) + json_row
// per row i, then json_tail(rows).
std::string csv_header(const SweepSpec& spec);
std::string csv_line(const SweepSpec& spec, const SweepRow& row);
std::string json_head(const SweepSpec& spec);
std::string_view json_separator(std::size_t index);
std::string json_row(const SweepSpec& spec, const SweepRow& row);
std::string json_tail(std::size_t rows);

}  // namespace coda::dse
