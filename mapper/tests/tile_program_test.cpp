// The tile program of a loop-nest mapping (mapper/tile_program.h), on the GEMM 4x4x4 mappings
// whose DRAM traffic mapper/tests/loop_nest_model_test.cpp derives by hand.

#include "mapper/tile_program.h"

#include <vector>

#include <gtest/gtest.h>

#include "workloads/builders.h"

namespace coda::mapper {
namespace {

// GEMM dims m, n, k; tensors A[m][k] (input), B[k][n] (weight), C[m][n] (output); int8.
enum : std::size_t { kM, kN, kK };
enum : std::size_t { kA, kB, kC };

// One 20 B buffer feeding one MAC lane, then DRAM (unlimited bandwidth).
Hierarchy buffer_and_dram() {
  Hierarchy h;
  h.compute = {.unit = "mac", .pes = 1, .macs_per_pe_per_cycle = 1};
  h.levels = {{.name = "buffer", .capacity_bytes = 20},
              {.name = "dram", .shared_port = true}};
  return h;
}

struct Walk {
  std::vector<std::uint64_t> changes;   // steps at which the stream's tile changes
  std::vector<std::uint64_t> revisits;  // ... to a tile seen before
  double read_bytes = 0;
  double write_bytes = 0;
};

// Executes the program step by step for one stream, as an engine would.
Walk walk(const TileProgram& p, std::size_t t) {
  Walk w;
  const TileStream& s = p.streams[t];
  for (std::uint64_t step = 0; step < p.steps; ++step) {
    const StreamEvent e = event_at(p, s, step);
    if (!e.changes) continue;
    w.changes.push_back(step);
    w.read_bytes += s.read_bytes_per_event;
    w.write_bytes += s.write_bytes_per_event;
    if (e.revisit) {
      w.revisits.push_back(step);
      w.read_bytes += s.read_back_bytes;
    }
  }
  return w;
}

TEST(TileProgram, InputStationaryOrderLoadsATwiceAndBEveryStep) {
  // Buffer tile m 2, n 2, k 4; DRAM loops m 2 (outer), n 2 (inner): 4 steps. A[m][k] changes
  // with m only: at steps 0 and 2, 8 B each (16 B: the model's A reads). B[k][n] and C[m][n]
  // change with n: every step, B 8 B (32 B), C drains 4 B (16 B), never revisited (k is wholly
  // on chip). Compute: 64 MACs on one lane, 16 cycles per step.
  const workload::Op gemm = workload::make_gemm("g", 4, 4, 4);
  const LoopNestProblem problem = compile_problem(gemm.space);
  Mapping m = make_mapping(2, 3);
  m.levels[0].temporal = {2, 2, 4};
  m.levels[1].temporal = {2, 2, 1};
  set_order(m, 1, {kM, kN});
  const MappingCost cost = evaluate(problem, m, buffer_and_dram());
  ASSERT_TRUE(cost.ok());
  const TileProgram p = make_tile_program(problem, m, cost);
  ASSERT_EQ(p.loops.size(), 2u);
  EXPECT_EQ(p.loops[0], (TileLoop{kM, 2}));
  EXPECT_EQ(p.loops[1], (TileLoop{kN, 2}));
  EXPECT_EQ(p.steps, 4u);
  EXPECT_DOUBLE_EQ(p.compute_cycles_per_step, 16);

  const Walk a = walk(p, kA);
  EXPECT_EQ(a.changes, (std::vector<std::uint64_t>{0, 2}));
  EXPECT_DOUBLE_EQ(a.read_bytes, 16);
  const Walk b = walk(p, kB);
  EXPECT_EQ(b.changes, (std::vector<std::uint64_t>{0, 1, 2, 3}));
  EXPECT_DOUBLE_EQ(b.read_bytes, 32);
  const Walk c = walk(p, kC);
  EXPECT_EQ(c.changes.size(), 4u);
  EXPECT_TRUE(c.revisits.empty());
  EXPECT_DOUBLE_EQ(c.write_bytes, 16);
  EXPECT_DOUBLE_EQ(c.read_bytes, 0);
}

TEST(TileProgram, ReductionLoopOutsideRevisitsOutputTiles) {
  // Buffer tile m 4, n 2, k 2; DRAM loops k 2 (outer), n 2 (inner). C[m][n] changes with n:
  // 4 events over 2 distinct tiles; at steps 2 and 3 (k = 1) it returns to a tile whose partial
  // sums it drained at steps 0 and 1: 2 read-backs of 8 B (the model's 16 B of C reads), 4
  // drains of 8 B (32 B). A[m][k] changes with k only (steps 0, 2: 16 B); B[k][n] every step
  // (4 x 4 B = 16 B).
  const workload::Op gemm = workload::make_gemm("g", 4, 4, 4);
  const LoopNestProblem problem = compile_problem(gemm.space);
  Mapping m = make_mapping(2, 3);
  m.levels[0].temporal = {4, 2, 2};
  m.levels[1].temporal = {1, 2, 2};
  set_order(m, 1, {kK, kN});
  const MappingCost cost = evaluate(problem, m, buffer_and_dram());
  ASSERT_TRUE(cost.ok());
  const TileProgram p = make_tile_program(problem, m, cost);
  const Walk c = walk(p, kC);
  EXPECT_EQ(c.changes, (std::vector<std::uint64_t>{0, 1, 2, 3}));
  EXPECT_EQ(c.revisits, (std::vector<std::uint64_t>{2, 3}));
  EXPECT_DOUBLE_EQ(c.write_bytes, 32);
  EXPECT_DOUBLE_EQ(c.read_bytes, 16);
  EXPECT_EQ(p.streams[kC].visits, 2u);
  // C's tile is numbered by n alone: 0, 1, then 0, 1 again as k moves on.
  for (std::uint64_t step = 0; step < 4; ++step)
    EXPECT_EQ(tile_at(p, p.streams[kC], step), step % 2);
  const Walk a = walk(p, kA);
  EXPECT_EQ(a.changes, (std::vector<std::uint64_t>{0, 2}));
  EXPECT_DOUBLE_EQ(a.read_bytes, 16);
  EXPECT_DOUBLE_EQ(walk(p, kB).read_bytes, 16);
}

TEST(TileProgram, EverythingOnChipIsOneStep) {
  // A 2x2x1 GEMM wholly in the buffer (A 2 B, B 2 B, C 4 B): no DRAM loops, one step, every
  // tensor moves once; 4 MACs on one lane.
  const workload::Op gemm = workload::make_gemm("g", 2, 2, 1);
  const LoopNestProblem problem = compile_problem(gemm.space);
  Mapping m = make_mapping(2, 3);
  m.levels[0].temporal = {2, 2, 1};
  const MappingCost cost = evaluate(problem, m, buffer_and_dram());
  ASSERT_TRUE(cost.ok());
  const TileProgram p = make_tile_program(problem, m, cost);
  EXPECT_TRUE(p.loops.empty());
  EXPECT_EQ(p.steps, 1u);
  for (const TileStream& s : p.streams) {
    EXPECT_EQ(s.depth, -1);
    EXPECT_EQ(s.events, 1u);
  }
  EXPECT_DOUBLE_EQ(walk(p, kA).read_bytes, 2);   // A 2x1
  EXPECT_DOUBLE_EQ(walk(p, kB).read_bytes, 2);   // B 1x2
  EXPECT_DOUBLE_EQ(walk(p, kC).write_bytes, 4);  // C 2x2
  EXPECT_DOUBLE_EQ(p.compute_cycles_per_step, 4);
}

TEST(TileProgram, StreamingProgramSplitsTrafficEvenly) {
  // 1000 compute cycles, 4096 B read and 1024 B written in 4 steps: 250 cycles, 1024 B in and
  // 256 B out per step, a new tile of each at every step and never one revisited.
  const TileProgram p = make_streaming_program(4, 1000, 4096, 1024);
  EXPECT_EQ(p.steps, 4u);
  EXPECT_DOUBLE_EQ(p.compute_cycles_per_step, 250);
  ASSERT_EQ(p.streams.size(), 2u);
  const Walk in = walk(p, 0);
  EXPECT_EQ(in.changes, (std::vector<std::uint64_t>{0, 1, 2, 3}));
  EXPECT_DOUBLE_EQ(in.read_bytes, 4096);
  const Walk out = walk(p, 1);
  EXPECT_TRUE(out.revisits.empty());
  EXPECT_DOUBLE_EQ(out.write_bytes, 1024);
  for (std::uint64_t step = 0; step < 4; ++step) EXPECT_EQ(tile_at(p, p.streams[1], step), step);
  // No traffic: no streams; one step computes it all.
  const TileProgram idle = make_streaming_program(1, 7, 0, 0);
  EXPECT_TRUE(idle.streams.empty());
  EXPECT_DOUBLE_EQ(idle.compute_cycles_per_step, 7);
}

}  // namespace
}  // namespace coda::mapper
