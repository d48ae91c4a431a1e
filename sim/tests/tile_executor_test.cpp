// The tile-level timing core (sim/timing/): the DRAM channel and row-buffer model, and one op's
// tile program executed against it, derived by hand.

#include "sim/timing/tile_executor.h"

#include <gtest/gtest.h>

#include "workloads/builders.h"

namespace coda::sim::timing {
namespace {

TEST(DramModel, SequentialStreamOpensEachRowOnceAndHidesTheOpenings) {
  // 64 KiB from address 0, one channel of 16 B/cycle, 4 banks of 2 KiB rows, 30 cycles to open
  // a row, 256 B chunks: 32 rows, each opened once (8 chunks: 1 miss, 7 hits). Rows 0-3 (banks
  // 0-3) all open at 30, then move 128 cycles each; row r >= 4 opens once its bank has moved row
  // r - 4, 30 cycles, while rows r-3..r-1 (384 cycles) use the bus: hidden. 30 + 32 x 128 = 4126,
  // plus the 20-cycle latency.
  DramModel dram({.bytes_per_cycle = 16, .latency_cycles = 20, .banks_per_channel = 4,
                  .row_bytes = 2048, .row_miss_cycles = 30});
  EXPECT_DOUBLE_EQ(dram.access(0, 65536, 0), 4126 + 20);
  EXPECT_EQ(dram.stats().row_misses, 32u);
  EXPECT_EQ(dram.stats().row_hits, 224u);
  EXPECT_DOUBLE_EQ(dram.stats().busy_cycles, 4096);
  EXPECT_DOUBLE_EQ(dram.stats().row_miss_cycles, 32 * 30);
}

TEST(DramModel, StridedAccessesMissEveryTime) {
  // 16 reads of 256 B, 8 KiB apart (4 banks x 2 KiB rows: the same bank, a new row each time):
  // each waits for the bank's previous transfer, 30 cycles to open its row, then 256 / 16 = 16
  // cycles of data: 16 x 46 = 736 cycles, against 256 for the same bytes streamed from one open
  // row: the row-buffer effect.
  DramModel dram({.bytes_per_cycle = 16, .banks_per_channel = 4, .row_bytes = 2048,
                  .row_miss_cycles = 30});
  double done = 0;
  for (std::uint64_t i = 0; i < 16; ++i) done = dram.access(i * 8192, 256, 0);
  EXPECT_DOUBLE_EQ(done, 736);
  EXPECT_EQ(dram.stats().row_misses, 16u);
  EXPECT_EQ(dram.stats().row_hits, 0u);
}

TEST(DramModel, ChannelsServeInterleavedChunksInParallel) {
  // 64 KiB over 2 channels of 16 B/cycle (32 B/cycle in all), 256 B interleave: each channel
  // holds 32 KiB as 16 of its own 2 KiB rows, streamed as in the single-channel case above:
  // 30 + 16 x 128 = 2078, in parallel.
  DramModel dram({.bytes_per_cycle = 32, .channels = 2, .banks_per_channel = 4, .row_bytes = 2048,
                  .row_miss_cycles = 30});
  EXPECT_DOUBLE_EQ(dram.access(0, 65536, 0), 2078);
  EXPECT_EQ(dram.stats().row_misses, 32u);
}

// GEMM 4x4x4 (A[m][k], B[k][n], C[m][n], int8) on one MAC lane under a 20 B buffer: buffer tile
// m 2, n 2, k 4; DRAM loops m 2 (outer), n 2: 4 steps of 16 cycles. Per step: A's 8 B tile loads
// at steps 0 and 2, B's 8 B at every step, C's 4 B tile drains after every step.
struct Gemm {
  workload::Op op = workload::make_gemm("g", 4, 4, 4);
  mapper::LoopNestProblem problem = mapper::compile_problem(op.space);
  mapper::TileProgram program;
  Gemm() {
    mapper::Hierarchy h;
    h.compute = {.unit = "mac", .pes = 1, .macs_per_pe_per_cycle = 1};
    h.levels = {{.name = "buffer", .capacity_bytes = 20}, {.name = "dram", .shared_port = true}};
    mapper::Mapping m = mapper::make_mapping(2, 3);
    m.levels[0].temporal = {2, 2, 4};
    m.levels[1].temporal = {2, 2, 1};
    mapper::set_order(m, 1, {0, 1});
    const mapper::MappingCost cost = mapper::evaluate(problem, m, h);
    program = mapper::make_tile_program(problem, m, cost);
  }
};

TEST(TileExecutor, IdealMemoryGivesTheStallFreeCycles) {
  // Unlimited bandwidth, no latency: 4 steps x 16 cycles, no stall.
  const Gemm g;
  const TileRun run = execute(g.program, {}, true);
  EXPECT_DOUBLE_EQ(run.cycles, 64);
  EXPECT_DOUBLE_EQ(run.compute_cycles, 64);
  EXPECT_DOUBLE_EQ(run.stall_cycles, 0);
  EXPECT_DOUBLE_EQ(run.read_bytes, 48);  // A 16 + B 32: the loop-nest model's DRAM reads
  EXPECT_DOUBLE_EQ(run.write_bytes, 16);
}

TEST(TileExecutor, DoubleBufferingOverlapsLoadsWithCompute) {
  // DRAM 1 B/cycle, one queue. Double-buffered:
  //   step 0: A 8 B [0, 8), B 8 B [8, 16); compute [16, 32)
  //   step 1 loads at 16: B [16, 24); drain C0 at 32: [32, 36); compute [32, 48)
  //   step 2 loads at 32: A [36, 44), B [44, 52); drain C1 at 48: [52, 56); compute [52, 68)
  //   step 3 loads at 52: B [56, 64); drain C2 at 68: [68, 72); compute [68, 84)
  //   drain C3 at 84: [84, 88). Cycles 88: compute 64, stalls 16 + 4 + 4 (end) = 24.
  // Never below the analytical bound: max(64 compute, 64 B / 1 B per cycle) = 64.
  const Gemm g;
  const TileRun run = execute(g.program, {.bytes_per_cycle = 1}, true);
  EXPECT_DOUBLE_EQ(run.cycles, 88);
  EXPECT_DOUBLE_EQ(run.stall_cycles, 24);
  EXPECT_EQ(run.bursts, 6u + 4u);  // loads A 2, B 4; drains 4
  // Single-buffered, each step's loads wait for the previous step:
  //   step 0: loads [0, 16), compute [16, 32); step 1: B [32, 40), C0 [40, 44), compute [40, 56)
  //   step 2: A [56, 64), B [64, 72), C1 [72, 76), compute [72, 88)
  //   step 3: B [88, 96), C2 [96, 100), compute [96, 112); C3 [112, 116). Cycles 116.
  EXPECT_DOUBLE_EQ(execute(g.program, {.bytes_per_cycle = 1}, false).cycles, 116);
}

}  // namespace
}  // namespace coda::sim::timing
