#include "workloads/op.h"

#include <gtest/gtest.h>

#include "workloads/builders.h"
#include "workloads/graph.h"

namespace coda::workload {
namespace {

TEST(GemmView, PlainConv) {
  // N=2, 8x8 input, C=4 -> K=6 filters, 3x3, stride 1, pad 1: P = Q = (8 + 2 - 3)/1 + 1 = 8.
  const Conv2dParams p{.batch = 2, .in_h = 8, .in_w = 8, .in_channels = 4, .filter_h = 3,
                       .filter_w = 3, .out_channels = 6, .pad_h = 1, .pad_w = 1};
  const Op op = make_conv2d("conv", p, 8, 8);
  // MACs = N*K*C*P*Q*R*S = 2*6*4*8*8*3*3 = 27648.
  EXPECT_EQ(mac_count(op), 27648u);
  // m = N*P*Q = 128 output pixels, n = K = 6, k = C*R*S = 36, batch = groups = 1.
  EXPECT_EQ(gemm_view(op), (GemmView{.batch = 1, .m = 128, .n = 6, .k = 36}));
}

TEST(GemmView, GroupedConv) {
  // Same conv in 2 groups: 2 channels and 3 filters per group.
  const Conv2dParams p{.batch = 2, .in_h = 8, .in_w = 8, .in_channels = 4, .filter_h = 3,
                       .filter_w = 3, .out_channels = 6, .pad_h = 1, .pad_w = 1, .groups = 2};
  const Op op = make_conv2d("conv", p, 8, 8);
  // MACs = N*G*K'*C'*P*Q*R*S = 2*2*3*2*8*8*3*3 = 13824 (half the ungrouped conv).
  EXPECT_EQ(mac_count(op), 13824u);
  // batch = 2 groups, m = 2*8*8 = 128, n = 3 filters per group, k = 2*3*3 = 18.
  EXPECT_EQ(gemm_view(op), (GemmView{.batch = 2, .m = 128, .n = 3, .k = 18}));
}

TEST(GemmView, DepthwiseConv) {
  // Depthwise 3x3 on 4 channels, 8x8, pad 1: groups = channels = filters = 4.
  const Conv2dParams p{.in_h = 8, .in_w = 8, .in_channels = 4, .filter_h = 3, .filter_w = 3,
                       .out_channels = 4, .pad_h = 1, .pad_w = 1, .groups = 4};
  const Op op = make_conv2d("dw", p, 8, 8);
  // MACs = 4 groups * 64 pixels * 9 taps = 2304.
  EXPECT_EQ(mac_count(op), 2304u);
  EXPECT_EQ(gemm_view(op), (GemmView{.batch = 4, .m = 64, .n = 1, .k = 9}));
}

TEST(GemmView, ConvIndexExpressions) {
  const Conv2dParams p{.in_h = 9, .in_w = 9, .in_channels = 4, .filter_h = 3, .filter_w = 3,
                       .out_channels = 6, .stride_h = 2, .stride_w = 2, .pad_h = 1, .pad_w = 1,
                       .groups = 2};
  const Op op = make_conv2d("conv", p, 5, 5);
  ASSERT_EQ(op.space.dims.size(), 8u);
  EXPECT_EQ(op.space.dims[3].name, "c");
  const TensorAccess& ifmap = op.space.accesses[0];
  EXPECT_EQ(ifmap.role, TensorRole::Input);
  ASSERT_EQ(ifmap.indices.size(), 4u);
  // channel = g*C' + c with C' = 2; row = p*2 + r - 1.
  EXPECT_EQ(ifmap.indices[1].terms[0].dim, 1u);
  EXPECT_EQ(ifmap.indices[1].terms[0].coefficient, 2);
  EXPECT_EQ(ifmap.indices[2].terms[0].dim, 4u);
  EXPECT_EQ(ifmap.indices[2].terms[0].coefficient, 2);
  EXPECT_EQ(ifmap.indices[2].offset, -1);
  EXPECT_EQ(op.space.accesses[2].role, TensorRole::Output);
}

TEST(GemmView, Gemm) {
  const Op op = make_gemm("g", 16, 8, 4);
  EXPECT_EQ(mac_count(op), 16u * 8u * 4u);  // 512
  EXPECT_EQ(gemm_view(op), (GemmView{.batch = 1, .m = 16, .n = 8, .k = 4}));
}

TEST(GemmView, BatchedGemm) {
  // BERT-base attention scores: 12 heads of [512 x 64] x [64 x 512].
  const Op op = make_batched_gemm("scores", 12, 512, 512, 64);
  EXPECT_EQ(mac_count(op), 201326592u);  // 12 * 512 * 512 * 64
  EXPECT_EQ(gemm_view(op), (GemmView{.batch = 12, .m = 512, .n = 512, .k = 64}));
}

TEST(GemmView, ComesFromIndexingNotNames) {
  // Rename every dim and tensor of a GEMM: the view is unchanged.
  Op op = make_gemm("not_a_conv", 3, 5, 7);
  for (Dim& d : op.space.dims) d.name = "x" + d.name;
  for (TensorAccess& a : op.space.accesses) a.tensor = "t" + a.tensor;
  EXPECT_EQ(gemm_view(op), (GemmView{.batch = 1, .m = 3, .n = 5, .k = 7}));
}

TEST(Graph, TotalMacs) {
  Graph g{"g", "hand", {}, {}};
  g.add(make_gemm("a", 2, 3, 4));
  g.add(make_gemm("b", 1, 1, 5));
  EXPECT_EQ(total_macs(g), 24u + 5u);
}

TEST(ConvOutputExtent, FloorConvention) {
  EXPECT_EQ(conv_output_extent(224, 7, 2, 3), 112u);  // (224 + 6 - 7)/2 + 1 = 111 + 1
  EXPECT_EQ(conv_output_extent(224, 7, 2, 0), 109u);  // floor(217/2) + 1 = 108 + 1
  EXPECT_EQ(conv_output_extent(56, 3, 1, 1), 56u);    // (56 + 2 - 3)/1 + 1
  EXPECT_EQ(conv_output_extent(56, 1, 2, 0), 28u);    // floor(55/2) + 1 = 27 + 1
  EXPECT_EQ(conv_output_extent(227, 11, 4, 0), 55u);  // 216/4 + 1
  EXPECT_EQ(conv_output_extent(5, 5, 1, 0), 1u);
}

TEST(ConvOutputExtent, ScaleSimCeilConvention) {
  EXPECT_EQ(scalesim_output_extent(224, 7, 2), 110u);  // ceil(217/2) + 1 = 109 + 1
  EXPECT_EQ(scalesim_output_extent(229, 7, 2), 112u);  // 222/2 + 1, exact
  EXPECT_EQ(scalesim_output_extent(58, 3, 1), 56u);
  EXPECT_EQ(scalesim_output_extent(7, 7, 3), 1u);
}

}  // namespace
}  // namespace coda::workload
