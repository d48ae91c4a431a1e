#include "mapper/schedule.h"

#include <gtest/gtest.h>

#include "testing/test_hardware.h"
#include "workloads/builders.h"

namespace coda::mapper {
namespace {

using arch::Dataflow;
using testing::make_array;

TEST(SystolicMapping, GemmOnEachDataflow) {
  // GEMM M=100, N=20, K=30 on an 8x16 array.
  const workload::Op gemm = workload::make_gemm("g", 100, 20, 30);
  const auto os = map_onto_array(gemm, make_array({.rows = 8, .cols = 16}));
  EXPECT_EQ(os.sr, 100u);  // OS: Sr = M
  EXPECT_EQ(os.sc, 20u);   //     Sc = N
  EXPECT_EQ(os.t, 30u);    //     T  = K
  EXPECT_EQ(os.row_folds, 13u);  // ceil(100 / 8)
  EXPECT_EQ(os.col_folds, 2u);   // ceil(20 / 16)

  const auto ws = map_onto_array(
      gemm, make_array({.rows = 8, .cols = 16, .dataflow = Dataflow::WeightStationary}));
  EXPECT_EQ(ws.sr, 30u);  // WS: Sr = K
  EXPECT_EQ(ws.sc, 20u);  //     Sc = N
  EXPECT_EQ(ws.t, 100u);  //     T  = M
  EXPECT_EQ(ws.row_folds, 4u);  // ceil(30 / 8)
  EXPECT_EQ(ws.col_folds, 2u);

  const auto is = map_onto_array(
      gemm, make_array({.rows = 8, .cols = 16, .dataflow = Dataflow::InputStationary}));
  EXPECT_EQ(is.sr, 30u);  // IS: Sr = K
  EXPECT_EQ(is.sc, 100u); //     Sc = M
  EXPECT_EQ(is.t, 20u);   //     T  = N
  EXPECT_EQ(is.row_folds, 4u);
  EXPECT_EQ(is.col_folds, 7u);  // ceil(100 / 16)
}

TEST(SystolicMapping, ConvBecomesAGemmOfPixelsFiltersAndWindow) {
  // 3x3 conv, 8 channels -> 16 filters on a 10x10 input, stride 1, no padding: 8x8 output.
  // M' = 8*8 = 64 pixels, N' = 16 filters, K' = 3*3*8 = 72.
  const workload::Op conv = workload::make_conv2d(
      "c", {.in_h = 10, .in_w = 10, .in_channels = 8, .filter_h = 3, .filter_w = 3,
            .out_channels = 16},
      8, 8);
  const auto os = map_onto_array(conv, make_array({.rows = 32, .cols = 32}));
  EXPECT_EQ(os.sr, 64u);
  EXPECT_EQ(os.sc, 16u);
  EXPECT_EQ(os.t, 72u);
  EXPECT_EQ(os.row_folds, 2u);
  EXPECT_EQ(os.col_folds, 1u);
  EXPECT_EQ(os.gemm.batch, 1u);
}

TEST(SystolicMapping, GroupsPackSideBySideInABlockDiagonalGemm) {
  // A 3x3 depthwise conv, 32 channels, 56x56 out: 32 groups of M' = 3136, N'g = 1, K'g = 9.
  const workload::Op dw = workload::make_conv2d(
      "dw", {.in_h = 56, .in_w = 56, .in_channels = 32, .filter_h = 3, .filter_w = 3,
             .out_channels = 32, .pad_h = 1, .pad_w = 1, .groups = 32},
      56, 56);
  EXPECT_TRUE(groups_can_pack(dw.space));
  const auto hw = make_array({.rows = 32, .cols = 32, .dataflow = Dataflow::WeightStationary});
  // The fixed rule runs one group at a time: Sr = K'g = 9, Sc = N'g = 1, 32 packs of 1.
  const SystolicMapping one = map_onto_array(dw, hw);
  EXPECT_EQ(one.packed, 1u);
  EXPECT_EQ(one.sr, 9u);
  EXPECT_EQ(one.sc, 1u);
  EXPECT_EQ(one.passes(), 32u);
  // 7 side by side: K' = 63 rows (2 row folds), N' = 7 columns, M' = 3136 shared; 5 packs, the
  // last with 32 - 4 x 7 = 4 groups.
  const SystolicMapping seven = with_packing(one, hw, 7);
  EXPECT_EQ(seven.sr, 63u);
  EXPECT_EQ(seven.sc, 7u);
  EXPECT_EQ(seven.t, 3136u);
  EXPECT_EQ(seven.row_folds, 2u);
  EXPECT_EQ(seven.col_folds, 1u);
  EXPECT_EQ(seven.passes(), 5u);
  EXPECT_EQ(seven.last_pack(), 4u);
  // Candidates: 1 .. min(32 groups, 32 rows or columns).
  const std::vector<std::uint64_t> candidates = packing_candidates(one, hw);
  ASSERT_EQ(candidates.size(), 32u);
  EXPECT_EQ(candidates.front(), 1u);
  EXPECT_EQ(candidates.back(), 32u);
  // On an 8x16 array, at most 16 of them.
  EXPECT_EQ(packing_candidates(map_onto_array(dw, make_array({.rows = 8, .cols = 16})),
                               make_array({.rows = 8, .cols = 16}))
                .size(),
            16u);
  // Ungrouped ops have nothing to pack.
  const workload::Op gemm = workload::make_gemm("g", 64, 64, 64);
  EXPECT_FALSE(groups_can_pack(gemm.space));
  EXPECT_EQ(packing_candidates(map_onto_array(gemm, hw), hw), std::vector<std::uint64_t>{1});
  // A batched GEMM's batch indexes A, B and C: its batches pack like groups.
  EXPECT_TRUE(groups_can_pack(workload::make_batched_gemm("b", 4, 8, 8, 8).space));
}

TEST(SystolicMapping, ScheduleKeepsGraphOrderAndMacs) {
  workload::Graph g{"two", "", {}, {}};
  g.add(workload::make_gemm("a", 2, 3, 4));
  g.add(workload::make_gemm("b", 5, 6, 7));
  const Schedule s = schedule_graph(g, make_array({}));
  ASSERT_EQ(s.ops.size(), 2u);
  EXPECT_EQ(s.ops[0].name, "a");
  EXPECT_EQ(s.ops[0].macs, 24u);   // 2*3*4
  EXPECT_EQ(s.ops[1].macs, 210u);  // 5*6*7
}

TEST(SystolicMapping, OpsWithoutAUnitAreReportedNotMapped) {
  workload::Graph g{"mixed", "", {}, {}};
  g.add(workload::make_gemm("fc", 4, 4, 4));
  g.add(workload::make_elementwise("relu", workload::Function::Relu, {4, 4},
                                   workload::DataType::Int8));
  const Schedule s = schedule_graph(g, make_array({}));
  ASSERT_EQ(s.ops.size(), 1u);
  EXPECT_EQ(s.ops[0].name, "fc");
  ASSERT_EQ(s.unsupported.size(), 1u);
  EXPECT_EQ(s.unsupported[0].name, "relu");
  EXPECT_EQ(s.unsupported[0].reason,
            "an elementwise op (relu) cannot run on 'test-array': a systolic array computes "
            "contractions only, and this one has no vector unit");
}

}  // namespace
}  // namespace coda::mapper
