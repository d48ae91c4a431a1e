#include "sim/timing/tile_executor.h"

#include <algorithm>
#include <cmath>
#include <deque>

namespace coda::sim::timing {
namespace {

std::uint64_t round_up(std::uint64_t value, std::uint64_t to) {
  return to == 0 ? value : (value + to - 1) / to * to;
}

// Charges `wait` cycles to the causes of `critical`, in proportion to the parts of its time.
void charge(Stalls& stalls, double wait, const AccessTiming& critical) {
  const double parts[] = {std::max(critical.latency, 0.0), std::max(critical.bandwidth, 0.0),
                          std::max(critical.bank, 0.0), std::max(critical.network, 0.0)};
  const double whole = parts[0] + parts[1] + parts[2] + parts[3];
  if (whole <= 0) {
    stalls.bandwidth += wait;
    return;
  }
  stalls.latency += wait * parts[0] / whole;
  stalls.bandwidth += wait * parts[1] / whole;
  stalls.bank += wait * parts[2] / whole;
  stalls.network += wait * parts[3] / whole;
}

// The cycles of `step` when the program's compute divides into whole cycles: an integer
// partition of the total, so stall-free steps add up to it exactly.
double step_cycles(const mapper::TileProgram& program, std::uint64_t step) {
  const double total = program.compute_cycles_per_step * static_cast<double>(program.steps);
  const double whole = std::round(total);
  if (std::abs(total - whole) > 1e-9 * std::max(1.0, whole))
    return program.compute_cycles_per_step;
  const auto steps = static_cast<double>(program.steps);
  return std::floor(whole * static_cast<double>(step + 1) / steps) -
         std::floor(whole * static_cast<double>(step) / steps);
}

}  // namespace

Stalls& Stalls::operator+=(const Stalls& other) {
  bandwidth += other.bandwidth;
  latency += other.latency;
  bank += other.bank;
  network += other.network;
  return *this;
}

TileLayout::TileLayout(const mapper::TileProgram& program, std::uint64_t base,
                       std::uint64_t row_bytes) {
  const std::uint64_t align = std::max<std::uint64_t>(row_bytes, 1);
  std::uint64_t next = round_up(base, align);
  for (const mapper::TileStream& s : program.streams) {
    const double per_tile =
        std::max({s.read_bytes_per_event, s.write_bytes_per_event, s.read_back_bytes});
    const auto bytes = static_cast<std::uint64_t>(std::ceil(per_tile));
    tile_bytes_.push_back(bytes);
    base_.push_back(next);
    next = round_up(next + bytes * s.visits, align);
  }
  end_ = next;
}

std::uint64_t TileLayout::address(const mapper::TileProgram& program, std::size_t stream,
                                  std::uint64_t step) const {
  return base_[stream] + mapper::tile_at(program, program.streams[stream], step) *
                             tile_bytes_[stream];
}

TileRun execute_share(const mapper::TileProgram& program, const TileLayout& layout,
                      const Share& share, bool double_buffered, double start,
                      const MemoryPort& port) {
  TileRun run;
  run.start = start;
  const std::size_t streams = program.streams.size();

  struct Arrival {
    double at = 0;
    AccessTiming critical;  // the request that arrived last
  };
  const auto burst = [&](std::size_t t, std::uint64_t step, double bytes, double now, bool write,
                         Arrival& arrival) {
    if (bytes <= 0) return;
    ++run.bursts;
    const AccessTiming timing = port(layout.address(program, t, step),
                                     static_cast<std::uint64_t>(std::ceil(bytes)), now, write);
    if (timing.arrival > arrival.at) arrival = {timing.arrival, timing};
  };
  // Loads of `step`, issued at `issue`.
  const auto load = [&](std::uint64_t step, double issue) {
    Arrival loaded{issue, {}};
    for (std::size_t t = 0; t < streams; ++t) {
      const mapper::TileStream& s = program.streams[t];
      const mapper::StreamEvent e = mapper::event_at(program, s, step);
      if (!e.changes) continue;
      double bytes = s.read_bytes_per_event;
      if (e.revisit) bytes += s.read_back_bytes;
      run.read_bytes += bytes;
      burst(t, step, bytes, issue, false, loaded);
    }
    return loaded;
  };

  double previous_end = start;  // compute end of the share's previous step
  Arrival drained{start, {}};
  // Loads in flight, oldest first: those of the share's next `ahead` steps. With double
  // buffering, the first `prefetch` steps load at the start, and step j + prefetch loads when
  // step j starts computing; without, step j + 1 loads when step j is done.
  const std::uint64_t ahead = double_buffered ? std::max<std::uint64_t>(share.prefetch, 1) : 1;
  std::deque<Arrival> in_flight;
  std::uint64_t next_load = share.first;  // the next step to request
  const auto request_until = [&](std::uint64_t limit, double issue) {
    for (; next_load < program.steps && next_load < limit; next_load += share.stride)
      in_flight.push_back(load(next_load, issue));
  };
  request_until(share.first + ahead * share.stride, start);
  for (std::uint64_t step = share.first; step < program.steps; step += share.stride) {
    ++run.steps;
    const Arrival loaded = in_flight.front();
    in_flight.pop_front();
    const double begin = std::max(loaded.at, previous_end);
    if (loaded.at > previous_end) charge(run.stalls, loaded.at - previous_end, loaded.critical);
    const double compute = step_cycles(program, step) * share.compute_scale;
    const double end = begin + compute;
    run.compute_cycles += compute;
    // Later steps' tiles: while this one computes (double buffering) or after it. Requested
    // before this step's drains, so reads go first.
    request_until(step + (ahead + 1) * share.stride, double_buffered ? begin : end);
    // Drains: output tiles left at step + 1 of the program, or at its end.
    for (std::size_t t = 0; t < streams; ++t) {
      const mapper::TileStream& s = program.streams[t];
      if (s.write_bytes_per_event <= 0) continue;
      const bool leaves =
          step + 1 == program.steps || mapper::event_at(program, s, step + 1).changes;
      if (!leaves) continue;
      run.write_bytes += s.write_bytes_per_event;
      burst(t, step, s.write_bytes_per_event, end, true, drained);
    }
    previous_end = end;
  }
  run.cycles = std::max(previous_end, drained.at);
  if (drained.at > previous_end) charge(run.stalls, drained.at - previous_end, drained.critical);
  run.stall_cycles = run.stalls.total();
  return run;
}

TileRun execute(const mapper::TileProgram& program, const DramParams& dram_params,
                bool double_buffered) {
  DramModel dram(dram_params);
  const TileLayout layout(program, 0, dram_params.row_bytes);
  const MemoryPort port = [&dram](std::uint64_t address, std::uint64_t bytes, double now,
                                  bool /*write*/) { return dram.access_timed(address, bytes, now); };
  return execute_share(program, layout, {}, double_buffered, 0.0, port);
}

}  // namespace coda::sim::timing
