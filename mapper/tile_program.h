#pragma once
// The tile program of a loop-nest mapping: the sequence of tile transfers and computations a
// cycle-approximate engine executes for one op, in compressed form (loops and streams, not an
// expanded list, so a million-tile op costs nothing to describe).
//
// A step is one iteration of the DRAM level's temporal loops: the outermost on-chip memories
// hold one tile of every tensor, the chip computes on them for `compute_cycles_per_step`, and
// DRAM moves the tiles that change between steps. Everything inside a step (the on-chip levels'
// own loops, their transfers, the PE array) is the loop-nest model's, averaged over the steps:
// compute_cycles_per_step = the loop nest's cycles without DRAM (the larger of compute and every
// on-chip level's bandwidth-bound time) / steps.
//
// Each tensor is a stream. Its tile changes when any loop from the outermost down to the
// innermost loop that indexes it advances (`depth`; loops inside it do not touch the tile: it
// stays while they turn, as the loop-nest model's stationarity rule says); these are its
// `events`, the product of those loops' counts. At each event an input or weight stream reads
// its new tile from DRAM; an output stream drains the tile it leaves to DRAM, and reads back
// the partial sums of the tile it enters when it has been there before (a revisit: some loop
// within depth that does not index it has moved off 0). Bytes per event are the loop-nest cost's
// DRAM bytes of the tensor divided by its events (or read-backs), so the program moves exactly
// the bytes the loop-nest model prices, tile by tile. When a tensor's tiles live below an
// on-chip level that has its own loops (a schema-1 array's filter SRAM under the ifmap SRAM),
// those inner reloads are folded into its events' bytes.

#include <cstdint>
#include <vector>

#include "mapper/loop_nest_model.h"
#include "mapper/mapping.h"
#include "workloads/op.h"

namespace coda::mapper {

struct TileLoop {
  std::uint8_t dim = 0;
  std::uint64_t count = 1;
  friend bool operator==(const TileLoop&, const TileLoop&) = default;
};

struct TileStream {
  std::uint8_t tensor = 0;  // index into the op's accesses
  workload::TensorRole role = workload::TensorRole::Input;
  int depth = -1;                    // innermost loop (index into loops) indexing the tensor;
                                     // -1: none, the tile never changes (one event, at step 0)
  std::uint32_t indexed_loops = 0;   // bit k: loops[k] indexes the tensor
  std::uint64_t events = 1;          // product of loops[0..depth] counts
  std::uint64_t visits = 1;          // distinct tiles: product of the indexing loops' counts
  double read_bytes_per_event = 0;   // inputs, weights: the new tile at every event
  double write_bytes_per_event = 0;  // outputs: the drain of the tile left, at every event
  double read_back_bytes = 0;        // outputs: partial sums read at every revisit
  friend bool operator==(const TileStream&, const TileStream&) = default;
};

struct TileProgram {
  std::vector<TileLoop> loops;  // the DRAM level's temporal loops with count > 1, outermost first
  std::uint64_t steps = 1;      // product of the loops' counts
  double compute_cycles_per_step = 0;
  std::vector<TileStream> streams;  // one per tensor the op accesses
  friend bool operator==(const TileProgram&, const TileProgram&) = default;
};

// The program of `mapping` with its cost (precondition: cost.ok(), cost from the same problem,
// mapping and hierarchy).
TileProgram make_tile_program(const LoopNestProblem& problem, const Mapping& mapping,
                              const MappingCost& cost);

// A program that streams an op's DRAM traffic in `steps` equal tiles: one loop of `steps`, an
// input stream reading read_bytes / steps and an output stream draining write_bytes / steps at
// every step (no revisits), computing compute_cycles in all. For ops the closed forms price
// (vector, transfer, fixed-rule contractions), whose traffic has no loop nest to follow.
TileProgram make_streaming_program(std::uint64_t steps, double compute_cycles, double read_bytes,
                                   double write_bytes);

// The number of the tile stream `stream` holds at `step`: the mixed-radix value of the indices of
// the loops within its depth that index its tensor (0 .. visits - 1).
std::uint64_t tile_at(const TileProgram& program, const TileStream& stream, std::uint64_t step);

// What a stream does at a step: whether its tile changes there (step 0: every stream loads its
// first tile), and whether that tile has been visited before (outputs read back partial sums).
struct StreamEvent {
  bool changes = false;
  bool revisit = false;
};
StreamEvent event_at(const TileProgram& program, const TileStream& stream, std::uint64_t step);

}  // namespace coda::mapper
