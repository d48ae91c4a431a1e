#pragma once
// Executes one op's tile program (mapper/tile_program.h) against a DRAM model, step by step:
// the timing core a tile-level engine (the SystemC engine of issue 6) wraps. Plain C++.
//
// Rules, per step s (the DRAM level's loop iterations, in order):
//   loads     the streams whose tile changes at s read it from DRAM (inputs, weights; outputs
//             read back partial sums when the tile is revisited), one burst per stream, issued
//             at `issue(s)`: with double buffering the tiles of step s load while step s-1
//             computes (issue(s) = start of compute of s-1; s = 0 at cycle 0); without, only once
//             s-1 is done (issue(s) = end of compute of s-1). They are requested before step
//             s-1's drains.
//   compute   starts when its loads have arrived and step s-1 is done; lasts the program's
//             compute_cycles_per_step.
//   drains    an output tile left at s+1 (or at the end) is written to DRAM once step s is done;
//             writes share the DRAM with reads, in the order they are issued.
// The op ends when its last step is done and its last drain has arrived.
//
// Tiles live at addresses laid out per tensor: tensor t's region holds its `visits` distinct
// tiles one after another, each of the stream's bytes per event; a tile's number is the
// mixed-radix value of the indices of the loops (within the stream's depth) that index the
// tensor. Regions start on row boundaries, tensor after tensor.

#include <cstdint>

#include "mapper/loop_nest_model.h"
#include "mapper/tile_program.h"
#include "sim/timing/dram_model.h"

namespace coda::sim::timing {

struct TileRun {
  double cycles = 0;          // the op's end
  double compute_cycles = 0;  // steps x compute per step
  double stall_cycles = 0;    // compute waiting for loads (or for the last drain at the end)
  std::uint64_t steps = 0;
  std::uint64_t bursts = 0;
  double read_bytes = 0;
  double write_bytes = 0;
  DramStats dram;
};

TileRun execute(const mapper::TileProgram& program, const mapper::LoopNestProblem& problem,
                const DramParams& dram, bool double_buffered);

}  // namespace coda::sim::timing
