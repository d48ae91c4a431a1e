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
