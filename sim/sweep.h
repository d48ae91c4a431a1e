#pragma once
// The sweep executor: runs every point of a SweepSpec (sim/sweep_spec.h) on every workload, in
// memory, on worker threads, and writes each finished point to a SweepStore
// (sim/sweep_store.h) in its own transaction. Points already in the store are skipped, so an
// interrupted sweep resumes where it stopped and ends with the rows an uninterrupted one writes.
//
// Per point x workload: latency = the run's seconds; throughput = 1 / latency (runs of the
// workload, i.e. samples of its batch, per second); energy in joules; edp = energy x latency;
// perf_per_watt = TOPS/W (2 ops per MAC); perf_per_mm2 = TOPS per mm2 of RunResult.area.
// Constraints: area <= max_area_mm2, average power <= max_power_w, memory.status == "fits".
// A point whose values make an invalid arch, or a workload the arch cannot run, is a row with
// status "infeasible" and the diagnostics as its reason.

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/diagnostics.h"
#include "sim/sweep_spec.h"
#include "sim/sweep_store.h"
#include "workloads/graph.h"

namespace coda::mapper {
class MappingCache;
}

namespace coda::sim {

struct SweepProgress {
  std::uint64_t done = 0;        // points finished in this run
  std::uint64_t total = 0;       // points this run will run
  std::uint64_t infeasible = 0;  // of `done`, points with an infeasible row
  double elapsed_s = 0;
};

struct SweepOptions {
  unsigned threads = 0;                // 0: every hardware thread
  std::optional<std::uint64_t> limit;  // stop after this many new points
  // Called after each stored point, from a worker thread, never two calls at once.
  std::function<void(const SweepProgress&)> progress;
};

struct SweepOutcome {
  std::uint64_t points = 0;          // in the spec
  std::uint64_t already_done = 0;    // found in the store
  std::uint64_t ran = 0;             // run and stored now
  std::uint64_t remaining = 0;       // still missing (after --limit)
  std::uint64_t infeasible = 0;      // of `ran`
  double seconds = 0;
};

// Loads the workloads once and runs the missing points. nullopt when a workload cannot be read,
// or the store fails (the reasons are in `diags`).
std::optional<SweepOutcome> run_sweep(const SweepSpec& spec, SweepStore& store,
                                      const SweepOptions& options, Diagnostics& diags);

// Runs one point on every workload (graphs in spec.workloads order). Thread-safe.
SweepPointRecord evaluate_point(const SweepSpec& spec, std::span<const workload::Graph> graphs,
                                std::uint64_t index, const SweepPoint& point,
                                mapper::MappingCache* cache = nullptr);

// One row per point x workload: point, workload, the axes, status, feasible, the spec's
// objectives, area_mm2, power_w, memory, the verdict of each constraint the spec sets, reason.
std::string export_csv(const SweepSpec& spec, const std::vector<SweepRow>& rows);
// {"sweep", "spec_hash", "axes", "objectives", "constraints", "results": [...]}; each result
// holds what the CSV row holds, without the RunResult (that stays in the store).
std::string export_json(const SweepSpec& spec, const std::vector<SweepRow>& rows);

}  // namespace coda::sim
