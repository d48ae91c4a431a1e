#include "sim/analytical/timeline.h"

#include <cstdint>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/trace_events.h"

namespace coda::sim::analytical {

void write_sequential_trace(std::ostream& out, const results::RunResult& run) {
  const double clock_hz = run.clock.value > 0 ? run.clock.value : 1.0;
  const double us_per_cycle = 1e6 / clock_hz;
  nlohmann::ordered_json events = trace_events_start(run);
  std::vector<results::OpUnit> units;  // a track per unit, in order of first use
  const auto track = [&](results::OpUnit unit) {
    for (std::size_t i = 0; i < units.size(); ++i)
      if (units[i] == unit) return i;
    units.push_back(unit);
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", 1}, {"tid", units.size()},
                      {"args", {{"name", results::to_string(unit)}}}});
    return units.size() - 1;
  };
  std::uint64_t at = 0;  // cycles
  for (const results::OpResult& op : run.ops) {
    const std::uint64_t cycles = op.cost.cycles.value;
    const double bytes =
        static_cast<double>(op.cost.dram_reads.value + op.cost.dram_writes.value);
    const double seconds = static_cast<double>(cycles) / clock_hz;
    const std::size_t tid = track(op.unit) + 1;
    events.push_back({{"name", op.name},
                      {"cat", results::to_string(op.unit)},
                      {"ph", "X"},
                      {"ts", static_cast<double>(at) * us_per_cycle},
                      {"dur", static_cast<double>(cycles) * us_per_cycle},
                      {"pid", 1},
                      {"tid", tid},
                      {"args",
                       {{"macs", op.cost.macs},
                        {"compute_cycles", op.cost.compute_cycles.value},
                        {"stall_cycles", op.cost.stall_cycles.value},
                        {"dram_read_bytes", op.cost.dram_reads.value},
                        {"dram_write_bytes", op.cost.dram_writes.value},
                        {"bound", std::string(results::to_string(op.bound))}}}});
    events.push_back({{"name", "dram bandwidth (GB/s)"},
                      {"ph", "C"},
                      {"ts", static_cast<double>(at) * us_per_cycle},
                      {"pid", 1},
                      {"args", {{"GB/s", seconds > 0 ? bytes / seconds / 1e9 : 0.0}}}});
    at += cycles;
  }
  events.push_back({{"name", "dram bandwidth (GB/s)"},
                    {"ph", "C"},
                    {"ts", static_cast<double>(at) * us_per_cycle},
                    {"pid", 1},
                    {"args", {{"GB/s", 0.0}}}});
  write_trace_document(out, std::move(events), run, clock_hz);
}

}  // namespace coda::sim::analytical
