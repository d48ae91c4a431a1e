#pragma once
// What a tile-level engine runs, in plain values: the chip's memory system (DRAM channels with
// their row-buffer timing, the on-chip path to them) and every op of a schedule as a tile
// program. The SystemC engine (sim/systemc/) builds its modules from these; docs/systemc.md
// gives the rules.
//
// Cores: an NPU's cores (spec.cores) each run a share of every op's steps (step s on core
// s mod cores, each step at 1 / cores of the chip's rate, so their work adds up to the op's);
// a GPU's SMs are one grid (the loop nests already spread an op over them): one engine core.
// The path to DRAM: per core, a NoC link (noc.bandwidth, average_hops x hop_latency) when the
// chip has several cores and a NoC; on a GPU, the SM-to-L2 crossbar shared by the grid (the
// first chip-level memory's read bandwidth and latency); otherwise none.
// DRAM: dram.bandwidth over dram.channels; the row-buffer timing (banks, row size, tRP + tRCD)
// and the access latency from dram.timing / dram.latency when the config states them, else the
// technology's typical figures (chip_plan.cpp cites them); `notes` says which.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "arch/hardware_model.h"
#include "core/results.h"
#include "mapper/schedule.h"
#include "mapper/tile_program.h"
#include "sim/analytical/analytical_engine.h"
#include "sim/timing/dram_model.h"
#include "sim/timing/link_model.h"

namespace coda::sim::timing {

struct ChipParams {
  std::uint32_t cores = 1;
  DramParams dram;
  std::optional<LinkParams> link;  // the path from a core to DRAM; nullopt: none
  bool link_shared = false;        // one link for every core (GPU) rather than one per core
  bool double_buffered = true;
  double clock_hz = 1e9;
  std::vector<std::string> notes;  // where each timing figure came from, one line each
  friend bool operator==(const ChipParams&, const ChipParams&) = default;
};

ChipParams chip_params(const arch::HardwareModel& hw);

// One op as the engine runs it.
struct OpWork {
  std::size_t result = 0;  // index into the analytical result's ops
  mapper::TileProgram program;
  double launch_cycles = 0;  // before its first step: a GPU kernel launch
  bool split = true;         // its steps are shared among the cores
  // Steps whose tiles may load ahead of compute (prefetch_depth).
  std::uint64_t prefetch = 1;
  bool from_loop_nest = false;
  friend bool operator==(const OpWork&, const OpWork&) = default;
};

// Largest bytes one step of a streamed op moves (streaming_steps).
inline constexpr double kMaxStreamTileBytes = 256.0 * 1024;
inline constexpr std::uint64_t kMaxStreamSteps = 4096;

// The steps a streamed op's `bytes` take: one per half of the outermost on-chip level's
// capacity per instance (double buffered), at most kMaxStreamTileBytes each, at most
// kMaxStreamSteps in all, at least one.
std::uint64_t streaming_steps(double bytes, const arch::HardwareModel& hw);

// How many steps' loads fit in half the outermost on-chip level (all its instances; the other
// half holds the tiles being computed on): at least 1 (double buffering), at most
// kMaxPrefetch. A DMA engine runs that far ahead of compute.
inline constexpr std::uint64_t kMaxPrefetch = 64;
std::uint64_t prefetch_depth(const mapper::TileProgram& program, const arch::HardwareModel& hw);

// Every op the closed forms priced (`priced`: analytical::price_ops of the same schedule and
// hardware, priced[i] for schedule.ops[i]; a skipped op has no work), each work's `result` its
// index among the priced ops (assemble_run's ops):
// contractions with a loop-nest mapping run its tile program; every other op streams its DRAM
// traffic (streaming_steps) while computing for its closed form's compute cycles; collectives,
// which use chip-to-chip links the tile engine does not model, compute for their whole time.
// Every op that launches a kernel first pays its fixed cost (unit_costs.h's op_fixed_seconds, the
// same figure the analytical engine adds; a collective's is inside its priced time). A fused
// attention backward's helper kernels (unit_costs.h, kHelperReadBytes) are a second work of the
// same result right after its main one: their bytes streamed with no compute, after a vector
// kernel's fixed cost each; chip_result adds the two.
std::vector<OpWork> plan_ops(const mapper::Schedule& schedule,
                             std::span<const analytical::PricedOp> priced,
                             const arch::HardwareModel& hw);

// A whole plan: what the SystemC engine hands its worker process (sim/systemc/worker_main.cpp).
struct ChipPlan {
  ChipParams chip;
  std::vector<OpWork> works;
  friend bool operator==(const ChipPlan&, const ChipPlan&) = default;
};

// The plan as JSON and back, exactly: every double prints in its shortest round-trip form, so
// from_json(to_json(plan)) == plan. from_json throws nlohmann::json::exception when a field is
// missing or of the wrong type, std::runtime_error when a value is out of range (a tensor role
// that is not one).
void to_json(nlohmann::ordered_json& j, const ChipPlan& plan);
void from_json(const nlohmann::ordered_json& j, ChipPlan& plan);

}  // namespace coda::sim::timing
