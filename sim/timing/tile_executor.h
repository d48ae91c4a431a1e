#pragma once
// Executes an op's tile program (mapper/tile_program.h), or one core's share of it, against a
// memory port, step by step: the timing core the SystemC engine (sim/systemc/) wraps. Plain C++.
//
// Rules, per step s of the share (steps first, first + stride, ... of the program, in order):
//   loads     the streams whose tile changes at s read it from DRAM (inputs, weights; outputs
//             read back partial sums when the tile is revisited), one burst per stream. With
//             double buffering the tiles of the share's step j + prefetch are requested when
//             step j starts computing (the first `prefetch` steps' at the share's start):
//             prefetch 1 is classic double buffering, more lets small tiles run ahead when the
//             buffer holds several (Share::prefetch); without double buffering, step j + 1's
//             tiles are requested once step j is done. Loads are requested before that step's
//             drains.
//   compute   starts when its loads have arrived and the previous step is done; lasts the
//             program's compute_cycles_per_step x the share's compute_scale.
//   drains    an output tile left at the next step of the program (or at its end) is written
//             to DRAM once step s is done; writes share the port with reads, in issue order.
// The share ends when its last step is done and its last drain has arrived. Issue times never
// decrease, so a port may advance a clock with them (the SystemC shell's quantum keeper).
//
// Stalls: the time compute waits is charged to the causes of the load that arrived last, in
// proportion to where its time went (its AccessTiming: latency, bandwidth, bank conflicts,
// network). The wait for the last drain at the end is charged the same way.
//
// Tiles live at addresses laid out per tensor (TileLayout): tensor t's region holds its `visits`
// distinct tiles one after another, each of the stream's bytes per event; a tile's number is
// mapper::tile_at. Regions start on row boundaries, tensor after tensor, from a base address.

#include <cstdint>
#include <functional>
#include <vector>

#include "mapper/tile_program.h"
#include "sim/timing/dram_model.h"

namespace coda::sim::timing {

// Cycles compute waited, by cause.
struct Stalls {
  double bandwidth = 0;  // DRAM bandwidth (data transfer and queueing)
  double latency = 0;    // DRAM access latency
  double bank = 0;       // bank conflicts: row-buffer misses
  double network = 0;    // on-chip network / SM-to-L2 path
  double total() const { return bandwidth + latency + bank + network; }
  Stalls& operator+=(const Stalls& other);
};

struct TileRun {
  double start = 0;           // the share's first cycle
  double cycles = 0;          // its end
  double compute_cycles = 0;  // steps x compute per step (x scale)
  double stall_cycles = 0;    // compute waiting for loads (or for the last drain at the end)
  Stalls stalls;              // stall_cycles by cause
  std::uint64_t steps = 0;
  std::uint64_t bursts = 0;
  double read_bytes = 0;
  double write_bytes = 0;
};

// Where each stream's tiles live.
class TileLayout {
 public:
  TileLayout(const mapper::TileProgram& program, std::uint64_t base, std::uint64_t row_bytes);
  std::uint64_t address(const mapper::TileProgram& program, std::size_t stream,
                        std::uint64_t step) const;
  std::uint64_t end() const { return end_; }  // first byte after the last region

 private:
  std::vector<std::uint64_t> base_;
  std::vector<std::uint64_t> tile_bytes_;
  std::uint64_t end_ = 0;
};

// A memory request: `bytes` at `address`, issued at cycle `now`, a write or a read.
using MemoryPort =
    std::function<AccessTiming(std::uint64_t address, std::uint64_t bytes, double now, bool write)>;

// Steps first, first + stride, ... of the program; compute per step x compute_scale; with double
// buffering, the tiles of up to `prefetch` steps ahead in flight.
struct Share {
  std::uint64_t first = 0;
  std::uint64_t stride = 1;
  double compute_scale = 1;
  std::uint64_t prefetch = 1;
};

TileRun execute_share(const mapper::TileProgram& program, const TileLayout& layout,
                      const Share& share, bool double_buffered, double start,
                      const MemoryPort& port);

// The whole program on its own DRAM (a fresh DramModel), from cycle 0.
TileRun execute(const mapper::TileProgram& program, const DramParams& dram, bool double_buffered);

}  // namespace coda::sim::timing
