#include "sim/timing/tile_executor.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace coda::sim::timing {
namespace {

std::uint64_t round_up(std::uint64_t value, std::uint64_t to) {
  return to == 0 ? value : (value + to - 1) / to * to;
}

}  // namespace

TileRun execute(const mapper::TileProgram& program, const mapper::LoopNestProblem& problem,
                const DramParams& dram_params, bool double_buffered) {
  DramModel dram(dram_params);
  TileRun run;
  run.steps = program.steps;
  const std::size_t streams = program.streams.size();

  // Regions: one per tensor, row-aligned.
  std::vector<std::uint64_t> base(streams, 0);
  std::vector<std::uint64_t> tile_bytes(streams, 0);
  std::uint64_t next = 0;
  for (std::size_t t = 0; t < streams; ++t) {
    const mapper::TileStream& s = program.streams[t];
    const double per_tile = std::max({s.read_bytes_per_event, s.write_bytes_per_event,
                                      s.read_back_bytes});
    tile_bytes[t] = static_cast<std::uint64_t>(std::ceil(per_tile));
    base[t] = next;
    next = round_up(next + tile_bytes[t] * s.visits, std::max<std::uint64_t>(dram_params.row_bytes, 1));
  }
  const auto burst = [&](std::size_t t, std::uint64_t step, double bytes, double now) {
    if (bytes <= 0) return now;
    ++run.bursts;
    const std::uint64_t tile = mapper::tile_at(program, program.streams[t], problem, step);
    return dram.access(base[t] + tile * tile_bytes[t],
                       static_cast<std::uint64_t>(std::ceil(bytes)), now);
  };

  // Loads of step s, issued at `issue`; returns when they have all arrived.
  const auto load = [&](std::uint64_t step, double issue) {
    double loaded = issue;
    for (std::size_t t = 0; t < streams; ++t) {
      const mapper::TileStream& s = program.streams[t];
      const mapper::StreamEvent e = mapper::event_at(program, s, problem, step);
      if (!e.changes) continue;
      double bytes = s.read_bytes_per_event;
      if (e.revisit) bytes += s.read_back_bytes;
      run.read_bytes += bytes;
      loaded = std::max(loaded, burst(t, step, bytes, issue));
    }
    return loaded;
  };

  double loaded = load(0, 0.0);
  double previous_end = 0;  // compute end of step s-1
  double writes_done = 0;
  for (std::uint64_t step = 0; step < program.steps; ++step) {
    const double start = std::max(loaded, previous_end);
    const double end = start + program.compute_cycles_per_step;
    run.stall_cycles += start - previous_end;
    // The next step's tiles: while this one computes (double buffering) or after it. Requested
    // before this step's drains, so reads go first.
    if (step + 1 < program.steps) loaded = load(step + 1, double_buffered ? start : end);
    // Drains: output tiles left at step + 1, or at the end.
    for (std::size_t t = 0; t < streams; ++t) {
      const mapper::TileStream& s = program.streams[t];
      if (s.write_bytes_per_event <= 0) continue;
      const bool leaves = step + 1 == program.steps ||
                          mapper::event_at(program, s, problem, step + 1).changes;
      if (!leaves) continue;
      run.write_bytes += s.write_bytes_per_event;
      writes_done = std::max(writes_done, burst(t, step, s.write_bytes_per_event, end));
    }
    previous_end = end;
  }
  run.compute_cycles = static_cast<double>(program.steps) * program.compute_cycles_per_step;
  run.cycles = std::max(previous_end, writes_done);
  run.stall_cycles += run.cycles - previous_end;
  run.dram = dram.stats();
  return run;
}

}  // namespace coda::sim::timing
