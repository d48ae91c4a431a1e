// Contractions priced from the mapper's searched loop nest (ScheduleOptions::search,
// sim/analytical/unit_costs.h's evaluate_loop_nest), on hand-derivable configs.

#include <cmath>

#include <gtest/gtest.h>

#include "mapper/schedule.h"
#include "sim/analytical/analytical_engine.h"
#include "testing/test_hardware.h"
#include "workloads/builders.h"

namespace coda::sim::analytical {
namespace {

using testing::kMiniGpu;
using testing::kTinyArray;
using testing::parse_arch;

workload::Graph one_op(workload::Op op) {
  workload::Graph g{"g", "", {}, {}};
  g.add(std::move(op));
  return g;
}

mapper::ScheduleOptions searched(mapper::Strategy strategy, std::uint64_t evaluations) {
  mapper::ScheduleSearch search;
  search.settings.strategy = strategy;
  search.settings.budget.max_evaluations = evaluations;
  return {.search = search};
}

TEST(LoopNestPricing, ExhaustiveSearchFindsTheHandOptimumOnASystolicArray) {
  // GEMM M=8, N=8, K=64 (4096 MACs) on 64 PEs: every PE does at least 4096 / 64 = 64 MACs, and
  // every pass costs at least R + C - 2 = 14 cycles of fill and drain (output stationary; 22
  // for the others), so no mapping beats 64 + 14 = 78 cycles; the array holding m x n with k
  // streamed through (one pass) achieves it. The closed form's output-stationary fold is the
  // same: Sr = 8, Sc = 8, T = 64, one fold of 64 + 8 + 8 - 2 = 78.
  const auto hw = parse_arch(kTinyArray);
  const workload::Graph g = one_op(workload::make_gemm("g", 8, 8, 64));
  const mapper::Schedule s = mapper::schedule_graph(g, hw, searched(mapper::Strategy::Exhaustive, 5'000'000));
  ASSERT_EQ(s.ops.size(), 1u);
  ASSERT_TRUE(s.ops[0].loop_nest) << s.ops[0].loop_nest_why;
  const results::RunResult run = AnalyticalEngine().run(s, hw, {});
  ASSERT_EQ(run.ops.size(), 1u);
  const results::OpResult& op = run.ops[0];
  EXPECT_EQ(op.unit, results::OpUnit::Systolic);
  EXPECT_EQ(op.cost.cycles, Cycles{78});
  EXPECT_EQ(op.cost.compute_cycles, Cycles{78});
  EXPECT_EQ(op.cost.stall_cycles, Cycles{0});
  EXPECT_EQ(op.bound, results::Bound::Compute);
  EXPECT_DOUBLE_EQ(op.compute_utilization, 4096.0 / (64.0 * 78.0));
  EXPECT_FALSE(op.loop_nest.empty());
  // Compulsory DRAM traffic and no more: A 8x64 and B 64x8 read once, C 8x8 written once.
  EXPECT_EQ(op.cost.dram_reads, Bytes{1024});
  EXPECT_EQ(op.cost.dram_writes, Bytes{64});
  // Energy: the loop nest's dynamic energy plus static power over the 78 cycles.
  const mapper::MappingCost& c = s.ops[0].loop_nest->cost;
  EXPECT_NEAR(op.cost.energy.value,
              c.energy_pj * 1e-12 + hw.energy().static_power.value * 78e-9,
              1e-9 * op.cost.energy.value);

  // Its tile program: whichever of the equally fast mappings the search kept, its steps add up
  // to the 78 on-chip cycles (DRAM bandwidth is unlimited, so nothing else takes time).
  const mapper::TileProgram& program = s.ops[0].loop_nest->program;
  EXPECT_DOUBLE_EQ(static_cast<double>(program.steps) * program.compute_cycles_per_step, 78);

  const mapper::Schedule fixed = mapper::schedule_graph(g, hw);
  EXPECT_FALSE(fixed.ops[0].loop_nest);
  EXPECT_EQ(AnalyticalEngine().run(fixed, hw, {}).ops[0].cost.compute_cycles, Cycles{78});
}

TEST(LoopNestPricing, TensorCoresAddTheKernelLaunch) {
  // kMiniGpu: a 64x64x64 fp16 GEMM is 262144 MACs over 4 SMs x 512 lanes: at least 128 cycles
  // of compute, far below the 4 us launch (4000 cycles at 1 GHz) the GPU model charges every
  // kernel: the op is launch-bound and takes the loop nest's cycles + 4000.
  const auto hw = parse_arch(kMiniGpu);
  const workload::Graph g = one_op(workload::make_gemm("g", 64, 64, 64, DataType::Fp16));
  const mapper::Schedule s = mapper::schedule_graph(g, hw, searched(mapper::Strategy::Heuristic, 5000));
  ASSERT_TRUE(s.ops[0].loop_nest) << s.ops[0].loop_nest_why;
  const double nest = s.ops[0].loop_nest->cost.cycles;
  EXPECT_GE(nest, 128.0);
  const results::OpResult op = AnalyticalEngine().run(s, hw, {}).ops.at(0);
  EXPECT_EQ(op.unit, results::OpUnit::TensorCore);
  EXPECT_EQ(op.cost.cycles.value, static_cast<std::uint64_t>(std::ceil(nest)) + 4000);
  EXPECT_EQ(op.bound, results::Bound::Latency);
}

TEST(LoopNestPricing, RepeatedShapesAreSearchedOnceThroughASharedCache) {
  const auto hw = parse_arch(kTinyArray);
  workload::Graph g{"g", "", {}, {}};
  g.add(workload::make_gemm("a", 8, 8, 64));
  g.add(workload::make_gemm("b", 8, 8, 64));
  g.add(workload::make_gemm("c", 8, 16, 64));
  mapper::MappingCache cache;
  mapper::ScheduleOptions options = searched(mapper::Strategy::Heuristic, 2000);
  options.search->cache = &cache;
  const mapper::Schedule s = mapper::schedule_graph(g, hw, options);
  ASSERT_EQ(s.ops.size(), 3u);
  EXPECT_FALSE(s.ops[0].loop_nest->cached);
  EXPECT_TRUE(s.ops[1].loop_nest->cached);
  EXPECT_EQ(s.ops[1].loop_nest->evaluated, 0u);
  EXPECT_FALSE(s.ops[2].loop_nest->cached);
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(s.ops[0].loop_nest->mapping, s.ops[1].loop_nest->mapping);
}

}  // namespace
}  // namespace coda::sim::analytical
