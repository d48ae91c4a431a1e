// The residency planner (mapper/residency.h): which activations stay on chip across ops and
// which weights stay cached across runs, each decision with its bytes or its reason, and how
// schedule_graph applies them. Every expected value is derived in a comment.

#include "mapper/residency.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "mapper/schedule.h"
#include "testing/test_hardware.h"
#include "workloads/builders.h"

namespace coda::mapper {
namespace {

using testing::kEdgeNpu;
using testing::kMiniGpu;
using testing::parse_arch;
using workload::TensorId;

// One 8x8 int8 weight-stationary array, a 4 KiB scratchpad for inputs and weights (shares of
// 2 KiB each) and an accumulator for outputs, which is not part of the pool (it holds no
// inputs); 1 GB/s of DRAM at 1 GHz, 1 B per cycle.
constexpr std::string_view kResNpu = R"(schema_version: 2
name: res-npu
clock: 1 GHz
compute:
  - name: mxu
    kind: systolic
    array: {rows: 8, cols: 8, dataflow: weight_stationary}
    macs_per_pe: {int8: 1}
  - {name: simd, kind: vector, ops_per_cycle: {int8: 64}}
memory:
  - {name: spad, capacity: 4 KiB, holds: [inputs, weights]}
  - {name: acc, capacity: 4 KiB, holds: [outputs]}
dram: {bandwidth: 1 GB/s}
)";

// l1: C1[256][8] = A[256][1] x B1[1][8]; l2: C2 = C1 x B2[8][8]; l3: C3 = C2 x B3[8][8]; int8.
// Tensors: 0 A (256 B), 1 B1 (8 B), 2 C1 (2048 B), 3 B2 (64 B), 4 C2 (2048 B), 5 B3, 6 C3.
workload::Graph three_layers() {
  workload::Graph g{"chain", "", {}, {}, {}};
  g.add(workload::make_gemm("l1", 256, 8, 1, DataType::Int8));
  g.add(workload::make_gemm("l2", 256, 8, 8, DataType::Int8), {TensorId{2}});
  g.add(workload::make_gemm("l3", 256, 8, 8, DataType::Int8), {TensorId{4}});
  return g;
}

std::vector<OpTraits> all_run(const workload::Graph& g) {
  return std::vector<OpTraits>(g.ops.size());
}

TEST(Residency, AChainKeepsWhatFitsBesideWhatIsAlreadyResident) {
  const auto hw = parse_arch(kResNpu);
  const workload::Graph g = three_layers();
  const ResidencyPlan plan = plan_residency(g, hw, {}, all_run(g), true);
  EXPECT_TRUE(plan.activations);
  EXPECT_EQ(plan.pool, Bytes{4096});  // spad only: acc holds no inputs
  EXPECT_FALSE(plan.weights.has_value());
  // C1 (2048 B), l1 -> l2. While l1 runs: 2048 + l1's buffers: A min(256, 2048) + B1 8 = 2312
  // <= 4096. While l2 runs: 2048 + B2's 64 (C2 goes to the accumulator, outside the pool) =
  // 2112. Kept; it saves l1's write and l2's read: 2 x 2048.
  ASSERT_EQ(plan.kept.size(), 1u);
  EXPECT_EQ(plan.kept[0], (KeptTensor{TensorId{2}, Bytes{2048}, 0, 1, 1, Bytes{2ULL * 2048}}));
  // C2 (2048 B), l2 -> l3. While l2 runs, C1 is resident: 2048 + 2048 + 64 = 4160 > 4096.
  ASSERT_EQ(plan.rejected.size(), 1u);
  EXPECT_EQ(plan.rejected[0].tensor, TensorId{4});
  EXPECT_EQ(plan.rejected[0].reason,
            "'l2.C' (2 KiB) does not fit the 4 KiB of on-chip memory holding inputs on 'res-npu' "
            "while 'l2' runs: 2 KiB is held by other tensors and its own buffers need 64 B");
  // C3 is the graph's result (no op reads it): not a candidate. A is a graph input.
  EXPECT_EQ(total_dram_bytes_saved(plan), Bytes{4096});

  // Applied: l1 writes C1 to the buffer and l2 reads it there.
  const Schedule s = schedule_graph(g, hw, {.fusion = FusionMode::All});
  EXPECT_EQ(s.residency, plan);
  EXPECT_EQ(s.ops[0].on_chip, (OnChipOperands{false, false, true}));
  EXPECT_EQ(s.ops[0].dram_writes_saved, Bytes{2048});
  EXPECT_EQ(s.ops[1].on_chip, (OnChipOperands{true, false, false}));
  EXPECT_EQ(s.ops[1].dram_reads_saved, Bytes{2048});
  EXPECT_EQ(s.ops[2].on_chip, OnChipOperands{});
  // Not in the other modes.
  EXPECT_EQ(schedule_graph(g, hw, {.fusion = FusionMode::Epilogue}).residency, ResidencyPlan{});
}

// Two contractions, as depth-first fusion used to take them (it is subsumed by residency).
// l1: C1[M][256] = A[M][16] x B1[16][256]; l2: C2[M][64] = C1 x B2[256][64]; int8.
workload::Graph two_layers(std::uint64_t m) {
  workload::Graph g{"g", "", {}, {}, {}};
  g.add(workload::make_gemm("l1", m, 256, 16, DataType::Int8));
  g.add(workload::make_gemm("l2", m, 64, 256, DataType::Int8), {TensorId{2}});
  return g;
}

TEST(Residency, AnActivationLargerThanTheChipGoesThroughDram) {
  const auto npu = parse_arch(kEdgeNpu);
  // M = 64: C1 is 64 x 256 x 1 B = 16 KiB. edge-npu's pool is its 64 KiB scratchpad (shares of
  // 32 KiB for inputs and weights). While l1 runs: 16 KiB + A (1 KiB) + B1 (4 KiB) = 21 KiB;
  // while l2 runs: 16 KiB + B2 (16 KiB) = 32 KiB. Kept: 2 x 16384 B saved.
  const workload::Graph small = two_layers(64);
  const ResidencyPlan fits = plan_residency(small, npu, {}, all_run(small), true);
  ASSERT_EQ(fits.kept.size(), 1u);
  EXPECT_EQ(fits.kept[0].dram_bytes_saved, Bytes{2ULL * 16384});
  EXPECT_TRUE(fits.rejected.empty());

  // M = 512: C1 is 512 x 256 = 128 KiB, twice the scratchpad.
  const workload::Graph big = two_layers(512);
  const ResidencyPlan too_big = plan_residency(big, npu, {}, all_run(big), true);
  EXPECT_TRUE(too_big.kept.empty());
  ASSERT_EQ(too_big.rejected.size(), 1u);
  EXPECT_EQ(too_big.rejected[0].reason,
            "'l1.C' (128 KiB) does not fit the 64 KiB of on-chip memory holding inputs on "
            "'edge-npu'");

  // Tensor cores: no residency plan (the GPU's pricing is left as it was).
  const auto gpu = parse_arch(kMiniGpu);
  workload::Graph fp16{"g", "", {}, {}, {}};
  fp16.add(workload::make_gemm("l1", 64, 256, 16, DataType::Fp16));
  fp16.add(workload::make_gemm("l2", 64, 64, 256, DataType::Fp16), {TensorId{2}});
  EXPECT_EQ(schedule_graph(fp16, gpu, {.fusion = FusionMode::All}).residency, ResidencyPlan{});
}

TEST(Residency, AResidualBranchStaysUntilItsLastReader) {
  const auto hw = parse_arch(kResNpu);
  // l1: X[256][8] = A[256][1] x B1; l2: Y = X x B2[8][8]; add: Z = X + Y (the shortcut).
  // Tensors: 0 A, 1 B1, 2 X, 3 B2, 4 Y, 5 Z.
  workload::Graph g{"residual", "", {}, {}, {}};
  g.add(workload::make_gemm("l1", 256, 8, 1, DataType::Int8));
  g.add(workload::make_gemm("l2", 256, 8, 8, DataType::Int8), {TensorId{2}});
  g.add(workload::make_elementwise("add", workload::Function::Add, {256, 8}, DataType::Int8,
                                   {{workload::TensorRole::Input, {}}}),
        {TensorId{4}, TensorId{2}});
  // Fusion (all) makes l2 + add an epilogue group: Y is a tile inside it, no candidate.
  const Schedule s = schedule_graph(g, hw, {.fusion = FusionMode::All});
  ASSERT_EQ(s.fusion.groups.size(), 1u);
  EXPECT_EQ(s.fusion.groups[0].intermediates, (std::vector<TensorId>{TensorId{4}}));
  // X (2048 B) lives from l1 to add, read twice. While l1 runs: 2048 + 256 + 8; while l2 runs:
  // 2048 + 64; while add runs: 2048 (Y is a tile; Z goes to the accumulator's role). Kept;
  // saved: l1's write, l2's read and add's read = 3 x 2048.
  ASSERT_EQ(s.residency.kept.size(), 1u);
  EXPECT_EQ(s.residency.kept[0],
            (KeptTensor{TensorId{2}, Bytes{2048}, 0, 2, 2, Bytes{3ULL * 2048}}));
  // add reads neither X nor Y from DRAM and writes Z (2048 B).
  const auto& add = std::get<VectorWork>(s.ops[2].work);
  EXPECT_EQ(add.reads, Bytes{0});
  EXPECT_EQ(add.writes, Bytes{2048});
}

TEST(Residency, OpsThatDoNotRunOrReadFromDramKeepTheirTensorsInDram) {
  const auto hw = parse_arch(kResNpu);
  const workload::Graph g = three_layers();
  std::vector<OpTraits> traits = all_run(g);
  traits[1].runs = false;                // l2 skipped: C1 and C2 go through DRAM
  const ResidencyPlan skipped = plan_residency(g, hw, {}, traits, true);
  EXPECT_TRUE(skipped.kept.empty());
  ASSERT_EQ(skipped.rejected.size(), 2u);
  EXPECT_EQ(skipped.rejected[0].reason,
            "'l2' cannot run on 'res-npu', so 'l1.C' goes through DRAM");
  EXPECT_EQ(skipped.rejected[1].reason,
            "'l2' cannot run on 'res-npu', so 'l2.C' goes through DRAM");
  traits[1] = {.runs = true, .prices_on_chip = false};  // as an attention op would be
  EXPECT_EQ(plan_residency(g, hw, {}, traits, true).rejected.at(0).reason,
            "'l2' is a contraction op, whose cost model reads and writes its operands in DRAM");
}

// Four GEMMs C[8][8] = A[8][8] x W[8][8], chained, int8: every tensor 64 B. The scratchpad holds
// inputs and weights (shares of 128 B) and caches weights; outputs go to the accumulator.
constexpr std::string_view kCacheNpu = R"(schema_version: 2
name: cache-npu
clock: 1 GHz
compute:
  - name: mxu
    kind: systolic
    array: {rows: 8, cols: 8, dataflow: weight_stationary}
    macs_per_pe: {int8: 1}
memory:
  - {name: spad, capacity: 256 B, holds: [inputs, weights], caches_weights: true}
  - {name: acc, capacity: 256 B, holds: [outputs]}
dram: {bandwidth: 1 GB/s}
)";

workload::Graph four_layers() {
  workload::Graph g{"four", "", {}, {}, {}};
  g.add(workload::make_gemm("l1", 8, 8, 8, DataType::Int8));  // tensors 0 A, 1 W1, 2 C1
  for (std::uint32_t i = 2; i <= 4; ++i)                       // W_i = 2i - 1, C_i = 2i
    g.add(workload::make_gemm(fmt::format("l{}", i), 8, 8, 8, DataType::Int8),
          {TensorId{2 * i - 2}});
  return g;
}

TEST(Residency, WeightsAreCachedInGraphOrderUntilOneDoesNotFit) {
  const auto hw = parse_arch(kCacheNpu);
  const workload::Graph g = four_layers();
  // The reserve: each op's buffers with nothing resident, A 64 + W 64 = 128 B (C goes to the
  // accumulator). Budget = min(256, 256 - 128) = 128 B: W1 (64) and W2 (128) fit, W3 does not,
  // so W3 and W4 stream every run.
  const Schedule s = schedule_graph(g, hw);  // FusionMode::None: caching is the hardware's
  ASSERT_TRUE(s.residency.weights.has_value());
  const WeightCache& cache = *s.residency.weights;
  EXPECT_EQ(cache.levels, std::vector<std::string>{"spad"});
  EXPECT_EQ(cache.capacity, Bytes{256});
  EXPECT_EQ(cache.reserve, Bytes{128});
  EXPECT_EQ(cache.budget, Bytes{128});
  EXPECT_EQ(cache.tensors, (std::vector<TensorId>{TensorId{1}, TensorId{3}}));
  EXPECT_EQ(cache.streamed_tensors, (std::vector<TensorId>{TensorId{5}, TensorId{7}}));
  EXPECT_EQ(cache.cached, Bytes{128});
  EXPECT_EQ(cache.streamed, Bytes{128});
  EXPECT_EQ(cache.dram_bytes_saved, Bytes{128});  // l1's and l2's reads of their weights
  EXPECT_FALSE(s.residency.activations);
  EXPECT_EQ(s.ops[0].on_chip, (OnChipOperands{false, true, false}));
  EXPECT_EQ(s.ops[1].on_chip, (OnChipOperands{false, true, false}));
  EXPECT_EQ(s.ops[2].on_chip, OnChipOperands{});

  // With --fusion all, activations fill what the cache leaves: 256 - 128 = 128 B. C1 (64 B)
  // while l1 runs: 128 cached + 64 + A's 64 = 256 <= 256; while l2 runs: 128 + 64 = 192. Kept.
  // C2 while l2 runs: 128 + 64 (C1) + 64 = 256; while l3 runs: 128 + 64 + W3's 64 = 256. Kept.
  // C3 while l3 runs: 128 + 64 (C2) + 64 + 64 (W3) = 320 > 256: rejected; so C3 and l4 stream.
  const Schedule all = schedule_graph(g, hw, {.fusion = FusionMode::All});
  ASSERT_EQ(all.residency.kept.size(), 2u);
  EXPECT_EQ(all.residency.kept[1].tensor, TensorId{4});
  ASSERT_EQ(all.residency.rejected.size(), 1u);
  EXPECT_EQ(all.residency.rejected[0].reason,
            "'l3.C' (64 B) does not fit the 256 B of on-chip memory holding inputs on "
            "'cache-npu' while 'l3' runs: 192 B is held by other tensors and its own buffers "
            "need 64 B");
}

}  // namespace
}  // namespace coda::mapper
