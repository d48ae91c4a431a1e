// The IR's counting rules (mac_count, flop_count, tensor_bytes, storage_bytes), its enum names,
// and verify(). Every expected value is derived by hand in the comment beside it, from the
// per-point costs listed in workloads/op.cpp (flops_per_point).

#include <gtest/gtest.h>

#include "workloads/builders.h"
#include "workloads/data_type.h"
#include "workloads/graph.h"
#include "workloads/op.h"
#include "workloads/tensor.h"

namespace coda::workload {
namespace {

TEST(IrCounts, GemmAndConv) {
  const Op gemm = make_gemm("g", 2, 3, 4, DataType::Int8);
  // m*n*k = 2*3*4 = 24 MACs, 2 FLOPs each.
  EXPECT_EQ(mac_count(gemm), 24u);
  EXPECT_EQ(flop_count(gemm), 48u);
  // int8: A 2*4 + B 4*3 + C 2*3 = 8 + 12 + 6 = 26 bytes.
  EXPECT_EQ(tensor_bytes(gemm), Bytes{26});
  EXPECT_EQ(tensor_bytes(gemm, TensorRole::Weight), Bytes{12});

  // 5x5 input, 2 channels, 4 filters of 3x3, stride 1, no padding: output 3x3.
  const Conv2dParams p{.in_h = 5, .in_w = 5, .in_channels = 2, .filter_h = 3, .filter_w = 3,
                       .out_channels = 4};
  const Op conv = make_conv2d("c", p, 3, 3);
  // N*G*K*C*P*Q*R*S = 1*1*4*2*3*3*3*3 = 648 MACs, 1296 FLOPs.
  EXPECT_EQ(mac_count(conv), 648u);
  EXPECT_EQ(flop_count(conv), 1296u);
}

TEST(IrCounts, ElementwiseWithBroadcastBias) {
  // A bias over the channel axis of [2, 3, 4, 5] fp16.
  const Op op = make_elementwise("bias", Function::Add, {2, 3, 4, 5}, DataType::Fp16,
                                 {{TensorRole::Weight, {1}}});
  ASSERT_EQ(op.space.accesses.size(), 3u);
  EXPECT_EQ(op.space.accesses[1].shape, (std::vector<std::uint64_t>{3}));
  // One add per output point: 2*3*4*5 = 120; no MACs.
  EXPECT_EQ(mac_count(op), 0u);
  EXPECT_EQ(flop_count(op), 120u);
  // x 120*2 = 240, bias 3*2 = 6, y 240: 486 bytes.
  EXPECT_EQ(tensor_bytes(op), Bytes{486});
}

TEST(IrCounts, Reduction) {
  // Sum over axis 1 of [4, 8] fp32: one add per input point = 32; output [4].
  const Op op = make_reduction("sum", Function::Sum, {4, 8}, {1}, DataType::Fp32);
  EXPECT_EQ(op.space.accesses[1].shape, (std::vector<std::uint64_t>{4}));
  EXPECT_EQ(mac_count(op), 0u);
  EXPECT_EQ(flop_count(op), 32u);
  // x 32*4 = 128, y 4*4 = 16: 144 bytes.
  EXPECT_EQ(tensor_bytes(op), Bytes{144});
}

TEST(IrCounts, Normalizations) {
  // Over the last axis of [2, 16]: 32 points.
  const Op softmax = make_normalization("sm", Function::Softmax, {2, 16}, {1}, DataType::Fp16);
  EXPECT_EQ(softmax.space.accesses.size(), 2u);  // x, y: no scale
  EXPECT_EQ(flop_count(softmax), 5u * 32);       // max, sub, exp, sum, div
  const Op layer_norm =
      make_normalization("ln", Function::LayerNorm, {2, 16}, {1}, DataType::Fp16);
  EXPECT_EQ(layer_norm.space.accesses.size(), 3u);  // x, scale[16], y
  EXPECT_EQ(flop_count(layer_norm), 8u * 32);       // mean 1, variance 3, normalize 2, affine 2
  const Op rms_norm = make_normalization("rms", Function::RmsNorm, {2, 16}, {1}, DataType::Fp16);
  EXPECT_EQ(flop_count(rms_norm), 4u * 32);  // square-add 2, normalize 1, scale 1
  // Batch norm over the channels of [1, 8, 4, 4]: 128 points, scale and shift [8].
  const Op batch_norm =
      make_normalization("bn", Function::BatchNorm, {1, 8, 4, 4}, {1}, DataType::Fp16);
  ASSERT_EQ(batch_norm.space.accesses.size(), 4u);
  EXPECT_EQ(batch_norm.space.accesses[2].tensor, "shift");
  EXPECT_EQ(flop_count(batch_norm), 2u * 128);  // x * scale + shift
  // x 256 + scale 16 + shift 16 + y 256 bytes.
  EXPECT_EQ(tensor_bytes(batch_norm), Bytes{544});
  for (const Op* op : {&softmax, &layer_norm, &rms_norm, &batch_norm}) EXPECT_EQ(mac_count(*op), 0u);
}

TEST(IrCounts, Pool2d) {
  // 2x2 max pool, stride 2, on [1, 2, 4, 4]: output 2x2; n*c*p*q*r*s = 1*2*2*2*2*2 = 32 window
  // points, one compare each.
  const Pool2dParams p{.channels = 2, .in_h = 4, .in_w = 4, .kernel_h = 2, .kernel_w = 2,
                       .stride_h = 2, .stride_w = 2};
  const Op op = make_pool2d("pool", Function::MaxPool, p, 2, 2, DataType::Int8);
  EXPECT_EQ(mac_count(op), 0u);
  EXPECT_EQ(flop_count(op), 32u);
  // x 32 + y 8 bytes.
  EXPECT_EQ(tensor_bytes(op), Bytes{40});
}

TEST(IrCounts, AttentionNonCausal) {
  const Op op = make_attention(
      "attn", {.heads = 2, .kv_heads = 2, .q_len = 4, .kv_len = 4, .head_dim = 8},
      DataType::Fp16);
  // 2 heads * 4*4 pairs * d 8, for Q K^T and again for P V: 2 * 2*16*8 = 512.
  EXPECT_EQ(mac_count(op), 512u);
  // 2 * 512 + softmax 5 per score * 2 heads * 16 pairs = 1024 + 160.
  EXPECT_EQ(flop_count(op), 1184u);
}

TEST(IrCounts, AttentionCausal) {
  const Op op = make_attention(
      "attn", {.heads = 2, .kv_heads = 2, .q_len = 4, .kv_len = 4, .head_dim = 8, .causal = true},
      DataType::Fp16);
  // Kept pairs per head: q*kv - q*(q-1)/2 = 16 - 6 = 10. MACs 2 * 2*10*8 = 320.
  EXPECT_EQ(mac_count(op), 320u);
  // 2 * 320 + 5 * 2 * 10 = 640 + 100.
  EXPECT_EQ(flop_count(op), 740u);
}

TEST(IrCounts, AttentionGroupedQuery) {
  const Op op = make_attention(
      "attn", {.heads = 8, .kv_heads = 2, .q_len = 4, .kv_len = 16, .head_dim = 64},
      DataType::Fp16);
  // Dims b 1, hk 2, g 8/2 = 4; K and V have the 2 kv heads.
  EXPECT_EQ(op.space.dims[2].extent, 4u);
  EXPECT_EQ(op.space.accesses[1].shape, (std::vector<std::uint64_t>{1, 2, 16, 64}));
  // 8 query heads * 4*16 pairs * 64, twice: 2 * 8*64*64 = 65536.
  EXPECT_EQ(mac_count(op), 65536u);
  // 2 * 65536 + 5 * 8 * 64 = 131072 + 2560.
  EXPECT_EQ(flop_count(op), 133632u);
  // fp16: Q 8*4*64*2 = 4096, K and V 2*16*64*2 = 4096 each, O 4096: 16384 bytes.
  EXPECT_EQ(tensor_bytes(op), Bytes{16384});
}

TEST(IrCounts, DataMovementAndEmbedding) {
  const Op transpose =
      make_data_movement("t", Function::Transpose, {{2, 3}}, {{3, 2}}, DataType::Fp32);
  EXPECT_EQ(transpose.space.dims[0].extent, 6u);  // output elements
  EXPECT_EQ(mac_count(transpose), 0u);
  EXPECT_EQ(flop_count(transpose), 0u);
  EXPECT_EQ(tensor_bytes(transpose), Bytes{48});  // 6*4 in, 6*4 out

  const Op embed = make_embedding("emb", 100, 16, 4, DataType::Bf16);
  ASSERT_EQ(embed.space.accesses.size(), 3u);
  EXPECT_EQ(embed.space.accesses[0].dtype, DataType::Int32);
  EXPECT_EQ(embed.space.accesses[1].role, TensorRole::Weight);
  EXPECT_EQ(flop_count(embed), 0u);
  // ids 4*4 = 16, table 100*16*2 = 3200, out 4*16*2 = 128: 3344 bytes.
  EXPECT_EQ(tensor_bytes(embed), Bytes{3344});
}

TEST(IrCounts, Collectives) {
  // Per rank [8, 4] fp32 among 4 ranks.
  const Op rs = make_collective("rs", Function::ReduceScatter, {8, 4}, 4, DataType::Fp32);
  EXPECT_EQ(rs.kind, OpKind::Collective);
  EXPECT_EQ(rs.space.accesses[1].shape, (std::vector<std::uint64_t>{2, 4}));  // 8 / 4 ranks
  EXPECT_EQ(std::get<CollectiveSpec>(rs.attributes).ranks, 4u);
  EXPECT_EQ(tensor_bytes(rs), Bytes{128 + 32});
  const Op ag = make_collective("ag", Function::AllGather, {8, 4}, 4, DataType::Fp32);
  EXPECT_EQ(ag.space.accesses[1].shape, (std::vector<std::uint64_t>{32, 4}));  // 8 * 4 ranks
  const Op ar = make_collective("ar", Function::AllReduce, {8, 4}, 4, DataType::Fp32);
  EXPECT_EQ(ar.space.accesses[1].shape, (std::vector<std::uint64_t>{8, 4}));
  for (const Op* op : {&rs, &ag, &ar}) {
    EXPECT_EQ(mac_count(*op), 0u);
    EXPECT_EQ(flop_count(*op), 0u);  // the reduction's adds are not counted
  }
}

TEST(IrCounts, AdamW) {
  const Op op = make_adamw("adam", {10}, DataType::Bf16, DataType::Bf16, DataType::Fp32);
  // 15 FLOPs per parameter.
  EXPECT_EQ(flop_count(op), 150u);
  EXPECT_EQ(mac_count(op), 0u);
  // Reads param 20 + grad 20 + m 40 + v 40; writes param 20 + m 40 + v 40: 220 bytes.
  EXPECT_EQ(tensor_bytes(op), Bytes{220});
}

TEST(IrBytes, StorageRoundsInt4Up) {
  // int4: ceil(elements * 4 / 8).
  EXPECT_EQ(storage_bytes(std::vector<std::uint64_t>{3}, DataType::Int4), Bytes{2});   // 12 bits
  EXPECT_EQ(storage_bytes(std::vector<std::uint64_t>{5, 3}, DataType::Int4), Bytes{8});  // 60 bits
  EXPECT_EQ(storage_bytes(std::vector<std::uint64_t>{4}, DataType::Int4), Bytes{2});   // 16 bits
  EXPECT_EQ(storage_bytes(std::vector<std::uint64_t>{}, DataType::Int4), Bytes{1});    // scalar
  EXPECT_EQ(storage_bytes(std::vector<std::uint64_t>{}, DataType::Fp32), Bytes{4});
  EXPECT_EQ(storage_bytes(std::vector<std::uint64_t>{2, 3}, DataType::Tf32), Bytes{24});
  EXPECT_EQ(storage_bytes(Tensor{"t", {7}, DataType::Fp8E4M3}), Bytes{7});

  // Quantize fp32 [3] to int4: x 12 bytes, y ceil(12 bits / 8) = 2; 4 FLOPs per point.
  const Op q = make_elementwise("q", Function::Quantize, {3}, DataType::Fp32, {}, DataType::Int4);
  EXPECT_EQ(tensor_bytes(q), Bytes{14});
  EXPECT_EQ(flop_count(q), 12u);
}

TEST(IrNames, DataTypesRoundTrip) {
  EXPECT_EQ(data_type_names().size(), 9u);
  for (const auto& [name, type] : data_type_names()) {
    EXPECT_EQ(to_string(type), name);
    EXPECT_EQ(parse_data_type(name), type);
  }
  EXPECT_EQ(to_string(DataType::Fp8E5M2), "fp8_e5m2");
  EXPECT_EQ(parse_data_type("fp64"), std::nullopt);
  EXPECT_EQ(parse_data_type("FP32"), std::nullopt);  // names are lower case
}

TEST(IrNames, OpKindsAndFunctionsRoundTrip) {
  for (unsigned i = 0; i <= static_cast<unsigned>(OpKind::Optimizer); ++i) {
    const auto kind = static_cast<OpKind>(i);
    EXPECT_NE(to_string(kind), "unknown");
    EXPECT_EQ(parse_op_kind(to_string(kind)), kind);
  }
  for (unsigned i = 0; i <= static_cast<unsigned>(Function::AdamW); ++i) {
    const auto f = static_cast<Function>(i);
    EXPECT_NE(to_string(f), "unknown");
    EXPECT_EQ(parse_function(to_string(f)), f);
  }
  EXPECT_EQ(to_string(OpKind::DataMovement), "data_movement");
  EXPECT_EQ(to_string(Function::ReduceScatter), "reduce_scatter");
  EXPECT_EQ(parse_op_kind("Contraction"), std::nullopt);
  EXPECT_EQ(parse_function("softmaxx"), std::nullopt);
}

// A GEMM feeding a ReLU: A[2][4] x B[4][3] -> C[2][3] -> relu -> y.
Graph connected_graph() {
  Graph g;
  g.name = "mlp";
  g.add(make_gemm("fc", 2, 3, 4, DataType::Fp16));
  g.add(make_elementwise("relu", Function::Relu, {2, 3}, DataType::Fp16), {g.ops[0].tensors[2]});
  return g;
}

TEST(IrVerify, CleanConnectedGraph) {
  const Graph g = connected_graph();
  // fc.A, fc.B, fc.C, relu.y: relu reads fc.C rather than a fresh tensor.
  ASSERT_EQ(g.tensors.size(), 4u);
  EXPECT_EQ(g.tensor(g.ops[1].tensors[0]).name, "fc.C");
  EXPECT_EQ(g.tensor(g.ops[0].tensors[1]).kind, TensorKind::Weight);
  EXPECT_TRUE(verify(g).empty());
}

TEST(IrVerify, ShapeMismatch) {
  Graph g = connected_graph();
  g.tensors[2].shape = {2, 5};  // fc.C
  // Both ops bound to fc.C disagree with it.
  EXPECT_EQ(verify(g), (std::vector<std::string>{
                           "op 'fc': access 'C' is [2, 3] fp16 but tensor 'fc.C' is [2, 5] fp16",
                           "op 'relu': access 'x' is [2, 3] fp16 but tensor 'fc.C' is [2, 5] fp16",
                       }));
}

TEST(IrVerify, OutputIndexOutOfRange) {
  Graph g;
  g.add(make_gemm("fc", 2, 3, 4, DataType::Fp16));
  g.ops[0].space.accesses[2].indices[0].offset = 1;  // C[m + 1][n]: m + 1 reaches 2
  EXPECT_EQ(verify(g), (std::vector<std::string>{
                           "op 'fc': output 'C' rank 0 is indexed over [1, 2] but has extent 2"}));
}

TEST(IrVerify, InputMayReachIntoPaddingButMustOverlap) {
  Graph g;
  g.add(make_gemm("fc", 2, 3, 4, DataType::Fp16));
  g.ops[0].space.accesses[0].indices[1].offset = -2;  // A[m][k - 2]: [-2, 1] overlaps [0, 3]
  EXPECT_TRUE(verify(g).empty());
  g.ops[0].space.accesses[0].indices[1].offset = 4;  // [4, 7]: misses the tensor
  EXPECT_EQ(verify(g), (std::vector<std::string>{
                           "op 'fc': input 'A' rank 1 is indexed over [4, 7] but has extent 4"}));
}

TEST(IrVerify, TwoWriters) {
  Graph g;
  g.add(make_elementwise("r1", Function::Relu, {4}, DataType::Int8));  // r1.x -> r1.y
  g.add(make_elementwise("r2", Function::Relu, {4}, DataType::Int8),
        {g.ops[0].tensors[0], g.ops[0].tensors[1]});  // r1.x -> r1.y again
  EXPECT_EQ(verify(g), (std::vector<std::string>{
                           "tensor 'r1.y' is written by op 'r1' and again by op 'r2'"}));
}

TEST(IrVerify, ReadBeforeWrite) {
  Graph g;
  g.add(make_elementwise("r1", Function::Relu, {4}, DataType::Int8));  // reads r1.x
  const TensorId in = g.add_tensor({"in", {4}, DataType::Int8});
  g.add(make_elementwise("r2", Function::Relu, {4}, DataType::Int8),
        {in, g.ops[0].tensors[0]});  // writes r1.x after r1 read it
  EXPECT_EQ(verify(g), (std::vector<std::string>{
                           "tensor 'r1.x' is read by op 'r1' before op 'r2' writes it"}));
}

TEST(IrVerify, InPlaceUpdatesAreAllowed) {
  Graph g;
  const TensorId param = g.add_tensor({"w", {10}, DataType::Bf16, TensorKind::Weight});
  const TensorId grad = g.add_tensor({"dw", {10}, DataType::Bf16, TensorKind::Gradient});
  const TensorId m = g.add_tensor({"m", {10}, DataType::Fp32, TensorKind::OptimizerState});
  const TensorId v = g.add_tensor({"v", {10}, DataType::Fp32, TensorKind::OptimizerState});
  // Two steps, each reading and writing param, m and v in place: neither a second writer nor
  // a read before a write.
  for (const char* name : {"step1", "step2"})
    g.add(make_adamw(name, {10}, DataType::Bf16, DataType::Bf16, DataType::Fp32),
          {param, grad, m, v, param, m, v});
  EXPECT_TRUE(verify(g).empty());
  EXPECT_EQ(g.tensors.size(), 4u);
}

TEST(IrVerify, ZeroExtentBadBindingAndBadOutput) {
  Graph g;
  g.add(make_gemm("fc", 2, 3, 4, DataType::Fp16));
  g.ops[0].space.dims[2].extent = 0;
  g.ops[0].tensors[1] = TensorId{9};
  g.outputs = {TensorId{7}};
  EXPECT_EQ(verify(g), (std::vector<std::string>{
                           "graph output is tensor #7 of 3",
                           "op 'fc': dim 'k' has extent 0",
                           "op 'fc': access 'B' is bound to tensor #9 of 3",
                       }));
}

TEST(IrGraph, EqualityCoversEveryField) {
  const Graph a = connected_graph();
  Graph b = a;
  EXPECT_EQ(a, b);
  b.outputs = {TensorId{3}};
  EXPECT_NE(a, b);
  b = a;
  b.ops[1].source.line = 3;
  EXPECT_NE(a, b);
}

}  // namespace
}  // namespace coda::workload

namespace coda::workload {
namespace {

TEST(TensorBytes, CountsOnlyThePartAnOpTouches) {
  // Appending one row to a [8][4] fp16 cache: dims {r: 1, c: 4}; the output is indexed
  // [r + 5][c], so it touches one row: 4 * 2 = 8 bytes, not the cache's 8*4*2 = 64.
  Op append = make_elementwise("append", Function::Copy, {1, 4}, DataType::Fp16);
  append.space.accesses[1].shape = {8, 4};
  append.space.accesses[1].indices[0].offset = 5;
  EXPECT_EQ(tensor_bytes(append, TensorRole::Output), Bytes{8});
  EXPECT_EQ(tensor_bytes(append, TensorRole::Input), Bytes{8});
  // A padded conv reads its whole input even though its index range reaches past the edges:
  // 3x3, pad 1, on a 1x1x4x4 int8 input -> rows -1..4 clipped to 0..3: 16 bytes.
  const Op conv = make_conv2d("c", {.in_h = 4, .in_w = 4, .filter_h = 3, .filter_w = 3,
                                    .pad_h = 1, .pad_w = 1},
                              4, 4);
  EXPECT_EQ(tensor_bytes(conv, TensorRole::Input), Bytes{16});
}

}  // namespace
}  // namespace coda::workload
