#pragma once
// What a tile-level run of a chip produced, in plain values, and what is made from it: the
// RunResult (the same type the analytical engine returns) and a Chrome trace-event timeline.
// The SystemC engine's worker fills a ChipOutcome, sends it to the parent process as JSON, and
// the parent builds the result and the trace here. Plain C++.
//
// Ops run one after another: op k starts when every core has finished op k-1 (its dependency;
// the schedule is in topological order), launches (GPU), then each core runs its share
// (share_of). The op's cycles run from its start to the last core's end; its stalls are that
// core's, by cause, plus the launch.

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/results.h"
#include "sim/timing/chip_plan.h"
#include "sim/timing/tile_executor.h"

namespace coda::sim::timing {

struct OpTiming {
  double start = 0;  // when the previous op was done everywhere
  double end = 0;    // when its last core was done
  std::vector<TileRun> shares;  // per core that had steps
};

// What the simulation did, for benchmarks: requests, tile steps, and how often a core yielded.
struct SimulationStats {
  std::uint64_t transactions = 0;  // memory requests (b_transport calls)
  std::uint64_t steps = 0;         // tile steps executed, over every core
  std::uint64_t syncs = 0;         // quantum-keeper synchronisations (context switches)
};

struct ChipOutcome {
  std::vector<OpTiming> ops;  // one per OpWork
  std::vector<results::LevelActivity> activity;
  SimulationStats stats;
};

// Core `core`'s share of `work` on a chip of `cores`: steps core, core + active, ... at
// 1 / active of the chip's rate, where active = min(cores, steps) (an op of fewer steps than
// cores runs on that many); nullopt for a core with no steps, and for every core but 0 when the
// op is not split.
std::optional<Share> share_of(const OpWork& work, std::uint32_t core, std::uint32_t cores);

// The RunResult: the analytical result's ops (traffic, MACs, energy, mapping) with the times of
// the tile-level run: cycles, compute cycles (the critical core's), stall cycles and their causes,
// and the bound (latency when the launch outlasts the rest, memory when the op waited for memory
// and its DRAM bytes take longer than its compute at the DRAM's bandwidth, else compute);
// energy's static part follows the new time. `engine` names the engine in the provenance.
results::RunResult chip_result(results::RunResult analytical, const std::vector<OpWork>& works,
                               const ChipOutcome& outcome, const ChipParams& chip,
                               const arch::HardwareModel& hw, std::string_view engine);

// The timeline in the Chrome trace-event format (the JSON object form, which Perfetto and
// chrome://tracing open): one complete event ("ph": "X") per op per core, on thread `core`,
// timestamps in microseconds, args with its steps, compute and stall cycles.
void write_chrome_trace(std::ostream& out, const std::vector<OpWork>& works,
                        const ChipOutcome& outcome, const results::RunResult& run,
                        const ChipParams& chip);

void to_json(nlohmann::ordered_json& j, const ChipOutcome& outcome);
void from_json(const nlohmann::ordered_json& j, ChipOutcome& outcome);

}  // namespace coda::sim::timing
