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

// A GEMM that adds into its output (C += A B, as a weight gradient accumulates over
// micro-batches: an Input access reads C at C's own indices). That input is the accumulator, not
// an operand: m and n stay m and n (reading it as an operand made n index input, weight and output,
// a batch of n GEMMs of one column each).
TEST(GemmView, AccumulatorInputIsNoOperand) {
  Op op = make_gemm("dw", 16, 8, 4);
  TensorAccess c_in = op.space.accesses.back();
  c_in.role = TensorRole::Input;
  c_in.tensor = "C_in";
  op.space.accesses.insert(op.space.accesses.end() - 1, c_in);
  EXPECT_EQ(gemm_view(op), (GemmView{.batch = 1, .m = 16, .n = 8, .k = 4}));
  EXPECT_EQ(mac_count(op), 16u * 8u * 4u);
}

// make_attention_backward: Q, K, V, O, dO in, dQ, dK, dV out. b 2, 8 heads over 2 kv heads,
// q 3, kv 5, d 4, causal: kept pairs per head 3 x 5 - 3 x 2 / 2 = 12; the forward's MACs
// 2 x (2 x 8) x 12 x 4 = 1536, the backward's four GEMMs twice that, 3072; FLOPs 2 x 3072 +
// 2 x (2 x 8 x 12) for dS = P (dP - D) = 6528.
TEST(AttentionBackward, FormMacsAndFlops) {
  const AttentionParams p{.batch = 2, .heads = 8, .kv_heads = 2, .q_len = 3, .kv_len = 5,
                          .head_dim = 4, .causal = true};
  const Op fwd = make_attention("a", p, DataType::Bf16);
  const Op bwd = make_attention_backward("a.bwd", p, DataType::Bf16);
  EXPECT_EQ(attention_form(fwd), AttentionForm::Forward);
  EXPECT_EQ(attention_form(bwd), AttentionForm::Backward);
  EXPECT_EQ(attention_form(make_gemm("g", 2, 2, 2)), AttentionForm::None);
  ASSERT_EQ(bwd.space.accesses.size(), 8u);
  EXPECT_EQ(bwd.space.accesses[4].tensor, "dO");
  EXPECT_EQ(bwd.space.accesses[6].tensor, "dK");
  EXPECT_EQ(bwd.space.accesses[6].shape, (std::vector<std::uint64_t>{2, 2, 5, 4}));
  EXPECT_EQ(mac_count(fwd), 1536u);
  EXPECT_EQ(mac_count(bwd), 3072u);
  EXPECT_EQ(flop_count(bwd), 6528u);
  Op broken = bwd;
  broken.space.accesses.pop_back();  // no dV
  EXPECT_EQ(attention_form(broken), AttentionForm::None);
}

// Kept pairs, by hand (query i at position p = kv - q + i keeps min(p + 1, W) keys):
//   q = kv = 8, window 3: 1 + 2 + 3 + 3 x 5 = 21 (causal alone: 8 x 9 / 2 = 36);
//   q 3, kv 5, window 4: keys 3, 4, 4 = 11; q 2, kv 10, window 4: 4 + 4 = 8;
//   one decode query over 10 keys, window 4: 4; a window at least the context changes nothing.
// The backward keeps the same pairs: b 1, 2 heads, q = kv = 8, d 4, window 3: forward MACs
// 2 x 2 x 21 x 4 = 336, backward 672.
TEST(AttentionWindow, KeptPairs) {
  EXPECT_EQ(attention_kept_pairs(8, 8, true, 3), 21u);
  EXPECT_EQ(attention_kept_pairs(8, 8, true, 0), 36u);
  EXPECT_EQ(attention_kept_pairs(3, 5, true, 4), 11u);
  EXPECT_EQ(attention_kept_pairs(2, 10, true, 4), 8u);
  EXPECT_EQ(attention_kept_pairs(1, 10, true, 4), 4u);
  EXPECT_EQ(attention_kept_pairs(8, 8, true, 8), 36u);
  EXPECT_EQ(attention_kept_pairs(8, 8, true, 100), 36u);
  EXPECT_EQ(attention_kept_pairs(3, 5, false, 0), 15u);
  const AttentionParams p{.heads = 2,
                          .kv_heads = 2,
                          .q_len = 8,
                          .kv_len = 8,
                          .head_dim = 4,
                          .causal = true,
                          .window = 3};
  const Op fwd = make_attention("a", p, DataType::Bf16);
  EXPECT_EQ(std::get<AttentionSpec>(fwd.attributes).window, 3u);
  EXPECT_EQ(mac_count(fwd), 336u);
  EXPECT_EQ(mac_count(make_attention_backward("a.bwd", p, DataType::Bf16)), 672u);
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
