#include "sim/timing/chip_run.h"

#include <algorithm>
#include <cmath>
#include <ostream>
#include <utility>

#include <nlohmann/json.hpp>

#include "sim/trace_events.h"

namespace coda::sim::timing {
namespace {

Cycles whole(double cycles) {
  return Cycles{static_cast<std::uint64_t>(std::llround(std::max(cycles, 0.0)))};
}

// The share that ended last; null when there is none.
const TileRun* critical_share(const OpTiming& op) {
  const TileRun* critical = nullptr;
  for (const TileRun& share : op.shares)
    if (critical == nullptr || share.cycles > critical->cycles) critical = &share;
  return critical;
}

}  // namespace

std::optional<Share> share_of(const OpWork& work, std::uint32_t core, std::uint32_t cores) {
  const std::uint64_t steps = work.program.steps;
  const std::uint64_t active = work.split ? std::min<std::uint64_t>(cores, steps) : 1;
  if (core >= active) return std::nullopt;
  return Share{core, active, static_cast<double>(active), work.prefetch};
}

results::RunResult chip_result(results::RunResult analytical, const std::vector<OpWork>& works,
                               const ChipOutcome& outcome, const ChipParams& chip,
                               const arch::HardwareModel& hw, std::string_view engine) {
  results::RunResult run = std::move(analytical);
  run.provenance.engine = std::string(engine);
  run.total = {};
  results::StallBreakdown all;
  const double static_watts = hw.energy().static_power.value;
  std::vector<bool> timed(run.ops.size(), false);
  for (std::size_t i = 0; i < works.size() && i < outcome.ops.size(); ++i) {
    const OpWork& work = works[i];
    const OpTiming& timing = outcome.ops[i];
    results::OpResult& op = run.ops[work.result];
    // A result's second work (a fused attention backward's helper kernels) adds to its first.
    const bool more = timed[work.result];
    timed[work.result] = true;
    const Cycles cycles = whole(timing.end - timing.start);
    const TileRun* critical = critical_share(timing);
    const Stalls stalls = critical != nullptr ? critical->stalls : Stalls{};
    const Cycles compute = whole(critical != nullptr ? critical->compute_cycles : 0.0);
    results::StallBreakdown breakdown{whole(stalls.bandwidth), whole(stalls.latency),
                                      whole(stalls.bank), whole(stalls.network),
                                      whole(work.launch_cycles)};
    all += breakdown;
    if (more) {
      op.cost.cycles = Cycles{op.cost.cycles.value + cycles.value};
      op.cost.compute_cycles =
          Cycles{op.cost.compute_cycles.value + std::min(compute, cycles).value};
      op.cost.stall_cycles = Cycles{op.cost.cycles.value - op.cost.compute_cycles.value};
      if (op.stalls)
        *op.stalls += breakdown;
      else
        op.stalls = breakdown;
      op.cost.energy.value += static_watts * static_cast<double>(cycles.value) / chip.clock_hz;
      continue;
    }
    const Cycles before = op.cost.cycles;
    op.cost.cycles = cycles;
    op.cost.compute_cycles = std::min(compute, cycles);
    op.cost.stall_cycles = Cycles{cycles.value - op.cost.compute_cycles.value};
    op.stalls = breakdown;
    // What sets its time: the launch when it outlasts the rest; otherwise the busier of the
    // compute and the DRAM (its bytes at the DRAM's bandwidth), as the roofline says, provided
    // the op did wait for memory.
    const double busy = critical != nullptr ? critical->compute_cycles : 0.0;
    const double dram_time =
        chip.dram.bytes_per_cycle > 0
            ? static_cast<double>(op.cost.dram_reads.value + op.cost.dram_writes.value) /
                  chip.dram.bytes_per_cycle
            : 0.0;
    op.bound = work.launch_cycles > busy && work.launch_cycles >= stalls.total()
                   ? results::Bound::Latency
               : stalls.total() > 0 && dram_time >= busy ? results::Bound::Memory
                                                         : results::Bound::Compute;
    if (hw.processing_elements() > 0 && op.cost.compute_cycles.value > 0 &&
        op.unit == results::OpUnit::Systolic)
      op.compute_utilization =
          static_cast<double>(op.cost.macs) /
          (static_cast<double>(hw.processing_elements()) *
           static_cast<double>(op.cost.compute_cycles.value));
    // Static power follows the op's new time.
    op.cost.energy.value += static_watts *
                            (static_cast<double>(cycles.value) -
                             static_cast<double>(before.value)) /
                            chip.clock_hz;
    op.cost.energy.value = std::max(op.cost.energy.value, 0.0);
  }
  for (const results::OpResult& op : run.ops) run.total = run.total + op.cost;
  run.stalls = all;
  run.activity = outcome.activity;
  run.engine_notes = chip.notes;
  return run;
}

void write_chrome_trace(std::ostream& out, const std::vector<OpWork>& works,
                        const ChipOutcome& outcome, const results::RunResult& run,
                        const ChipParams& chip) {
  const double us_per_cycle = 1e6 / chip.clock_hz;
  nlohmann::ordered_json events = trace_events_start(run);
  for (std::uint32_t core = 0; core < chip.cores; ++core)
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", 1}, {"tid", core},
                      {"args", {{"name", "core " + std::to_string(core)}}}});
  for (std::size_t i = 0; i < works.size() && i < outcome.ops.size(); ++i) {
    const results::OpResult& op = run.ops[works[i].result];
    const OpTiming& timing = outcome.ops[i];
    if (works[i].launch_cycles > 0)
      events.push_back({{"name", "launch"}, {"cat", "launch"}, {"ph", "X"},
                        {"ts", timing.start * us_per_cycle},
                        {"dur", works[i].launch_cycles * us_per_cycle}, {"pid", 1}, {"tid", 0},
                        {"args", {{"op", op.name}}}});
    for (std::size_t core = 0; core < timing.shares.size(); ++core) {
      const TileRun& share = timing.shares[core];
      events.push_back(
          {{"name", op.name},
           {"cat", results::to_string(op.unit)},
           {"ph", "X"},
           {"ts", share.start * us_per_cycle},
           {"dur", (share.cycles - share.start) * us_per_cycle},
           {"pid", 1},
           {"tid", core},
           {"args",
            {{"steps", share.steps},
             {"compute_cycles", share.compute_cycles},
             {"stall_dram_bandwidth", share.stalls.bandwidth},
             {"stall_dram_latency", share.stalls.latency},
             {"stall_bank_conflicts", share.stalls.bank},
             {"stall_network", share.stalls.network},
             {"dram_read_bytes", share.read_bytes},
             {"dram_write_bytes", share.write_bytes}}}});
    }
  }
  write_trace_document(out, std::move(events), run, chip.clock_hz);
}

void to_json(nlohmann::ordered_json& j, const ChipOutcome& outcome) {
  nlohmann::ordered_json ops = nlohmann::ordered_json::array();
  for (const OpTiming& op : outcome.ops) {
    nlohmann::ordered_json shares = nlohmann::ordered_json::array();
    for (const TileRun& s : op.shares)
      shares.push_back({s.start, s.cycles, s.compute_cycles, s.stall_cycles, s.stalls.bandwidth,
                        s.stalls.latency, s.stalls.bank, s.stalls.network, s.steps, s.bursts,
                        s.read_bytes, s.write_bytes});
    ops.push_back({{"start", op.start}, {"end", op.end}, {"shares", shares}});
  }
  nlohmann::ordered_json activity = nlohmann::ordered_json::array();
  for (const results::LevelActivity& a : outcome.activity)
    activity.push_back({a.level, a.bytes.value, a.busy.value, a.utilization});
  j = {{"ops", ops},
       {"activity", activity},
       {"stats", {outcome.stats.transactions, outcome.stats.steps, outcome.stats.syncs}}};
}

void from_json(const nlohmann::ordered_json& j, ChipOutcome& outcome) {
  outcome = {};
  for (const auto& op : j.at("ops")) {
    OpTiming timing{op.at("start").get<double>(), op.at("end").get<double>(), {}};
    for (const auto& s : op.at("shares")) {
      TileRun run;
      run.start = s.at(0).get<double>();
      run.cycles = s.at(1).get<double>();
      run.compute_cycles = s.at(2).get<double>();
      run.stall_cycles = s.at(3).get<double>();
      run.stalls = {s.at(4).get<double>(), s.at(5).get<double>(), s.at(6).get<double>(),
                    s.at(7).get<double>()};
      run.steps = s.at(8).get<std::uint64_t>();
      run.bursts = s.at(9).get<std::uint64_t>();
      run.read_bytes = s.at(10).get<double>();
      run.write_bytes = s.at(11).get<double>();
      timing.shares.push_back(run);
    }
    outcome.ops.push_back(std::move(timing));
  }
  const auto& stats = j.at("stats");
  outcome.stats = {stats.at(0).get<std::uint64_t>(), stats.at(1).get<std::uint64_t>(),
                   stats.at(2).get<std::uint64_t>()};
  for (const auto& a : j.at("activity"))
    outcome.activity.push_back({a.at(0).get<std::string>(), Bytes{a.at(1).get<std::uint64_t>()},
                                Cycles{a.at(2).get<std::uint64_t>()}, a.at(3).get<double>()});
}

}  // namespace coda::sim::timing
