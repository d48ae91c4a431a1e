#pragma once
// Reading the results coda stores: a run.json (`coda run --out`) and a sweep's results.json
// (`coda sweep --out`, docs/sweeps.md). Every problem is a Diagnostic located in the file
// (file:line:col, the JSON path, what would be valid); nothing is read from a half-valid file.

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/diagnostics.h"
#include "core/results.h"
#include "core/sweep_metrics.h"

namespace coda::reports {

// run.json -> RunResult, through core's from_json once the shape has been checked (every field
// from_json reads is present with the right JSON type; `bound` is compute, memory or latency).
std::optional<results::RunResult> read_run_json(std::string_view text, const std::string& file,
                                                Diagnostics& diags);

struct SweepAxis {
  std::string path;                 // "array.rows"
  std::vector<std::string> values;  // as written in the arch YAML: "64", "1 MiB", "34 GB/s"
  // The base arch's value at `path` (results.json's "base"; absent for a workload axis and in
  // a results.json of an older coda): what the base design has.
  std::optional<std::string> base;
};

// One row of results.json: one point on one workload.
struct SweepRow {
  std::uint64_t point = 0;
  std::string workload;
  std::vector<std::string> values;  // one per axis, in the axes' order
  results::RowStatus status = results::RowStatus::Ok;
  bool feasible = false;
  // By results::kSweepMetrics's keys (core/sweep_metrics.h): "latency_s", "throughput_per_s",
  // "energy_j", "edp_js", "perf_per_watt_tops_per_w", "perf_per_mm2_tops_per_mm2", "area_mm2",
  // "power_w" (rows with status ok only).
  std::map<std::string, double, std::less<>> metrics;
  std::string reason;  // why a row is infeasible
};

struct SweepResults {
  std::string name;
  std::string spec_hash;
  std::string sampling;
  std::vector<SweepAxis> axes;
  std::vector<std::string> objectives;  // the spec's, e.g. "latency", "energy"
  std::vector<SweepRow> rows;
  // The spec the sweep ran, as its command named it (relative to the folder it ran in); empty
  // in a results.json written before 2026-12-06, which does not say.
  std::string spec_file;
};

// A sweep objective (docs/sweeps.md): the metric of a row that holds it, its unit, and whether
// less is better.
struct SweepObjective {
  std::string_view name;    // "latency"
  std::string_view metric;  // "latency_s"
  std::string_view unit;    // "s"
  bool minimise = true;
  std::string_view label;  // "latency", "performance per watt": a chart axis's words
};

// latency, throughput, energy, edp, perf_per_watt, perf_per_mm2, in that order.
std::span<const SweepObjective> sweep_objectives();
const SweepObjective* find_sweep_objective(std::string_view name);  // null when unknown

// One training step as `coda train --json` writes it (sim/training_step.h's StepReport): what a
// report shows of it.
struct TrainingStage {
  std::uint64_t stage = 0;
  std::string layers;        // "0-15", or with virtual stages "0-3,16-19"
  double compute_s = 0;      // all micro-batches' forward + backward
  double tp_comm_s = 0;      // of compute_s: TP's collectives, all micro-batches
  double bubble_s = 0;
  double dp_exposed_s = 0;
  double optimizer_s = 0;
  double end_s = 0;
  std::uint64_t memory_bytes = 0;
};
struct TrainingStepResult {
  std::string model;
  std::string arch;
  std::string layout;        // "tp 2 pp 4 dp 1, micro-batch 1 x 8, recompute full, ZeRO 1"
  std::uint64_t chips = 0;
  std::uint64_t seq = 0;
  std::uint64_t tokens = 0;
  double step_s = 0;
  double tokens_per_s = 0;
  double mfu = 0;
  double hfu = 0;
  std::uint64_t memory_per_chip_bytes = 0;
  std::optional<std::uint64_t> capacity_bytes;
  bool fits = true;
  std::uint64_t critical_stage = 0;
  std::vector<TrainingStage> stages;
};
// A file `coda train --json` wrote: an object with `training_step`. Checks every field read.
std::optional<TrainingStepResult> read_train_json(std::string_view text, const std::string& file,
                                                  Diagnostics& diags);
// Whether `text` is such a file (a JSON object with a `training_step` member); false for
// anything else, including text that is not JSON.
bool is_train_json(std::string_view text);

// A serving simulation as `coda serve --out` writes serve.json (sim/serving/serve_output.h): what
// a report shows of it. Latencies in seconds.
struct ServingLatency {
  double p50 = 0, p99 = 0;
};
struct ServingPoint {         // one point of a latency-vs-rate curve
  double rate = 0;            // offered, requests/s
  double requests_per_s = 0;  // served
  double output_tokens_per_s = 0;
  ServingLatency ttft, tpot;
  bool meets_slo = true;
};
struct ServingResult {
  std::string model;
  std::string arch;
  std::uint64_t tp = 1;
  std::uint64_t replicas = 1;
  std::string arrivals;  // offline, poisson, gamma, closed
  std::uint64_t requests = 0;
  double slo_ttft_s = 0, slo_tpot_s = 0;  // 0: no limit
  ServingPoint summary;                   // the run the files hold (rate: its configured rate)
  ServingLatency itl, e2e;
  double goodput_rps = 0;
  double slo_attainment = 1;
  double mean_batch = 0;
  double kv_utilisation_mean = 0, kv_utilisation_max = 0;
  std::uint64_t preemptions = 0;
  std::uint64_t kv_blocks = 0;
  std::vector<ServingPoint> curve;  // rate_curve, by rate; empty when none
};
// A serve.json (an object with `config`, `kv_cache` and `summary`). Checks every field read.
std::optional<ServingResult> read_serve_json(std::string_view text, const std::string& file,
                                             Diagnostics& diags);
bool is_serve_json(std::string_view text);

// Also checks that each objective is one of sweep_objectives().
std::optional<SweepResults> read_sweep_json(std::string_view text, const std::string& file,
                                            Diagnostics& diags);

}  // namespace coda::reports
