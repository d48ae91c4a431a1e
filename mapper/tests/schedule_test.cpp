// Placement of every op kind on a unit (mapper/schedule.h), precision rules, and the split of a
// systolic op over a chip's arrays.

#include "mapper/schedule.h"

#include <gtest/gtest.h>

#include "testing/test_hardware.h"
#include "workloads/builders.h"

namespace coda::mapper {
namespace {

using testing::kMiniGpu;
using testing::kMiniNpu;
using testing::parse_arch;
using workload::Function;

workload::Graph graph_of(std::vector<workload::Op> ops) {
  workload::Graph g{"g", "", {}, {}};
  for (auto& op : ops) g.add(std::move(op));
  return g;
}

TEST(Schedule, PlacesEachKindOnItsUnit) {
  const auto hw = parse_arch(kMiniGpu);
  const Schedule s = schedule_graph(
      graph_of({workload::make_gemm("fc", 64, 32, 16, DataType::Fp16),
                workload::make_elementwise("act", Function::Relu, {64, 32}, DataType::Fp16),
                workload::make_data_movement("t", Function::Transpose, {{64, 32}}, {{32, 64}},
                                             DataType::Fp16),
                workload::make_data_movement("r", Function::Reshape, {{64, 32}}, {{2048}},
                                             DataType::Fp16),
                workload::make_collective("ar", Function::AllReduce, {1024}, 8, DataType::Fp16)}),
      hw);
  ASSERT_TRUE(s.unsupported.empty()) << s.unsupported[0].reason;
  ASSERT_EQ(s.ops.size(), 5u);
  EXPECT_EQ(s.ops[0].placement, Placement::TensorCore);
  const auto& tc = std::get<TensorCoreWork>(s.ops[0].work);
  EXPECT_EQ(tc.gemm, (workload::GemmView{1, 64, 32, 16}));
  EXPECT_EQ(tc.input_bytes, 2u);
  EXPECT_EQ(s.ops[0].macs, 32768u);  // 64 * 32 * 16

  EXPECT_EQ(s.ops[1].placement, Placement::Vector);
  EXPECT_EQ(s.ops[1].precision, DataType::Fp16);
  const auto& v = std::get<VectorWork>(s.ops[1].work);
  EXPECT_EQ(v.elements, 2048u);        // 64 * 32 output points
  EXPECT_EQ(v.reads, Bytes{4096});     // 2048 fp16
  EXPECT_EQ(v.writes, Bytes{4096});

  EXPECT_EQ(s.ops[2].placement, Placement::Transfer);
  EXPECT_EQ(std::get<TransferWork>(s.ops[2].work), (TransferWork{Bytes{4096}, Bytes{4096}}));
  EXPECT_EQ(std::get<TransferWork>(s.ops[3].work), TransferWork{});  // a reshape moves nothing

  EXPECT_EQ(s.ops[4].placement, Placement::Collective);
  EXPECT_EQ(std::get<CollectiveWork>(s.ops[4].work),
            (CollectiveWork{Function::AllReduce, 8, Bytes{2048}}));
}

// cuBLAS's fast kernels need every operand's contiguous dimension in whole 16-byte vectors
// (arch::kGemmAlignmentBytes). make_gemm stores A [m][k], B [k][n], C [m][n]: k and n are
// contiguous, m never is. fp16: 50,257 x 2 = 100,514 bytes (not a multiple of 16), 50,264 x 2 =
// 100,528 = 16 x 6,283.
TEST(Schedule, AGemmIsUnalignedWhenAnOperandsRowIsNotWholeSixteenByteVectors) {
  const auto hw = parse_arch(kMiniGpu);
  const auto aligned = [&](workload::Op op) {
    const Schedule s = schedule_graph(graph_of({std::move(op)}), hw);
    return std::get<TensorCoreWork>(s.ops.at(0).work).aligned;
  };
  EXPECT_FALSE(aligned(workload::make_gemm("lm_head", 64, 50257, 64, DataType::Fp16)));  // B, C
  EXPECT_FALSE(aligned(workload::make_gemm("dx", 64, 64, 50257, DataType::Fp16)));       // A
  EXPECT_TRUE(aligned(workload::make_gemm("padded", 64, 50264, 64, DataType::Fp16)));
  EXPECT_TRUE(aligned(workload::make_gemm("odd_m", 63, 64, 64, DataType::Fp16)));
  // A 3x3 convolution's filter rows are 6 bytes, but its operands are laid out by the
  // implicit-GEMM kernel: not judged.
  workload::Conv2dParams p;
  p.in_h = p.in_w = 8;
  p.in_channels = p.out_channels = 16;
  p.filter_h = p.filter_w = 3;
  EXPECT_TRUE(aligned(workload::make_conv2d("conv", p, 6, 6, DataType::Fp16)));
}

TEST(Schedule, AMatrixUnitWithoutThePrecisionCannotRunTheOp) {
  const auto hw = parse_arch(kMiniGpu);
  const auto g = graph_of({workload::make_gemm("fc", 64, 32, 16, DataType::Int8)});
  const Schedule s = schedule_graph(g, hw);
  ASSERT_EQ(s.unsupported.size(), 1u);
  EXPECT_EQ(s.unsupported[0].reason,
            "a contraction op is in int8, which 'mini-gpu''s tensor_core unit 'tc' does not "
            "compute (it does: fp16); give the workload that precision, or run with --precision");
  // --precision fp16 runs it.
  const Schedule forced = schedule_graph(g, hw, {DataType::Fp16});
  ASSERT_EQ(forced.ops.size(), 1u);
  EXPECT_EQ(forced.ops[0].precision, DataType::Fp16);
  EXPECT_EQ(std::get<TensorCoreWork>(forced.ops[0].work).input_bytes, 2u);
}

TEST(Schedule, AVectorUnitWithoutThePrecisionComputesInFp32) {
  const auto hw = parse_arch(kMiniGpu);
  const Schedule s = schedule_graph(
      graph_of({workload::make_elementwise("act", Function::Gelu, {8}, DataType::Bf16)}), hw);
  ASSERT_EQ(s.ops.size(), 1u);
  EXPECT_EQ(s.ops[0].precision, DataType::Fp32);
}

TEST(Schedule, CollectivesNeedEnoughChips) {
  const auto hw = parse_arch(kMiniGpu);
  const Schedule s = schedule_graph(
      graph_of({workload::make_collective("ar", Function::AllReduce, {1024}, 16, DataType::Fp16)}),
      hw);
  ASSERT_EQ(s.unsupported.size(), 1u);
  EXPECT_EQ(s.unsupported[0].reason,
            "a collective op (all_reduce) spans 16 ranks, but 'mini-gpu' joins 8 chips");
  // An NPU without links cannot run a collective over several ranks.
  const Schedule npu = schedule_graph(
      graph_of({workload::make_collective("ar", Function::AllReduce, {1024}, 2, DataType::Int8)}),
      parse_arch(kMiniNpu));
  ASSERT_EQ(npu.unsupported.size(), 1u);
  EXPECT_EQ(npu.unsupported[0].reason,
            "a collective op (all_reduce) over 2 ranks cannot run on 'mini-npu': it has no "
            "chip-to-chip links (add interconnect: to the arch)");
}

TEST(Schedule, ASystolicOpIsSplitOverTheChipsArrays) {
  const auto hw = parse_arch(kMiniNpu);  // 2 cores x 2 arrays
  const Schedule s =
      schedule_graph(graph_of({workload::make_gemm("fc", 64, 64, 16, DataType::Int8)}), hw);
  ASSERT_EQ(s.ops.size(), 1u);
  const SystolicMapping& m = s.ops[0].mapping;
  // N >= M, so N = 64 is cut into 4 slices of 16: each array runs M=64, N=16, K=16.
  EXPECT_EQ(m.arrays, 4u);
  EXPECT_EQ(m.gemm, (workload::GemmView{1, 64, 16, 16}));
  // WS on 16x8: Sr = K = 16 (1 row fold), Sc = N = 16 (2 column folds), T = M = 64.
  EXPECT_EQ(m.row_folds, 1u);
  EXPECT_EQ(m.col_folds, 2u);
  EXPECT_EQ(m.t, 64u);

  // Groups go first: 6 groups over 4 arrays leave ceil(6/4) = 2 per array; a dim smaller than
  // the arrays uses only as many arrays as it has rows.
  workload::GemmView groups{6, 8, 8, 8};
  EXPECT_EQ(split_over_arrays(groups, 4), 4u);
  EXPECT_EQ(groups, (workload::GemmView{2, 8, 8, 8}));
  workload::GemmView narrow{1, 2, 3, 8};
  EXPECT_EQ(split_over_arrays(narrow, 4), 3u);  // N = 3 >= M = 2: 3 arrays of one column
  EXPECT_EQ(narrow, (workload::GemmView{1, 2, 1, 8}));
}

// Groups that do not divide over the arrays: 5 experts' GEMMs (M 1, N 64, K 32, a MoE decode
// step) on the 4 arrays. WS on 16x8, a fold 1 + 2 x 16 + 8 - 2 = 39 cycles. Split by groups,
// an array runs 2 of them, each K/16 = 2 row folds x N/8 = 8 column folds: 2 x 16 x 39 = 1248
// cycles. Cutting N into 4 slices of 16 instead, an array runs all 5 at 2 x 2 folds: 5 x 4 x 39
// = 780. The cut wins. Eight experts divide evenly: 2 x 16 x 39 = 1248 either way, and the tie
// keeps the groups (no operand shared between arrays).
TEST(Schedule, UnevenGroupsAreCutAcrossTheArraysInstead) {
  const auto hw = parse_arch(kMiniNpu);
  const auto mapping = [&](std::uint64_t experts) {
    const Schedule s = schedule_graph(
        graph_of({workload::make_batched_gemm("experts", experts, 1, 64, 32, DataType::Int8)}), hw);
    EXPECT_EQ(s.ops.size(), 1u);
    return s.ops.empty() ? SystolicMapping{} : s.ops[0].mapping;
  };
  const SystolicMapping five = mapping(5);
  EXPECT_EQ(five.arrays, 4u);
  EXPECT_EQ(five.split, GemmDim::N);
  EXPECT_EQ(five.gemm, (workload::GemmView{5, 1, 16, 32}));
  EXPECT_EQ(five.gemm.batch * five.row_folds * five.col_folds * fold_cycles(five, hw), 780u);
  const SystolicMapping eight = mapping(8);
  EXPECT_EQ(eight.arrays, 4u);
  EXPECT_FALSE(eight.split);
  EXPECT_EQ(eight.gemm, (workload::GemmView{2, 1, 64, 32}));
  EXPECT_EQ(eight.gemm.batch * eight.row_folds * eight.col_folds * fold_cycles(eight, hw), 1248u);
}

// Attention is placed as decompose-attention's three parts; unfused without a fusion plan.
TEST(Schedule, AttentionIsPlacedAsItsThreeParts) {
  const auto hw = parse_arch(kMiniGpu);
  const Schedule s = schedule_graph(
      graph_of({workload::make_attention(
          "attn", {.heads = 4, .kv_heads = 2, .q_len = 128, .kv_len = 128, .head_dim = 64},
          DataType::Fp16)}),
      hw);
  ASSERT_TRUE(s.unsupported.empty()) << s.unsupported[0].reason;
  ASSERT_EQ(s.ops.size(), 1u);
  EXPECT_EQ(s.ops[0].placement, Placement::Attention);
  const auto& work = std::get<AttentionWork>(s.ops[0].work);
  EXPECT_FALSE(work.fused);
  ASSERT_EQ(work.parts.size(), 3u);
  // Grouped-query heads stack along m: batch = b x kv heads = 2, m = 2 query heads x 128 q.
  EXPECT_EQ(std::get<TensorCoreWork>(work.parts[0].work).gemm,
            (workload::GemmView{2, 256, 128, 64}));
  EXPECT_EQ(work.parts[1].placement, Placement::Vector);
  EXPECT_EQ(std::get<TensorCoreWork>(work.parts[2].work).gemm,
            (workload::GemmView{2, 256, 64, 128}));
  EXPECT_EQ(work.all_pairs, 4ULL * 128 * 128);
  EXPECT_EQ(work.pairs, work.all_pairs);
  EXPECT_EQ(work.reads, Bytes{(4ULL + 2 + 2) * 128 * 64 * 2});  // Q, K, V in fp16
  EXPECT_EQ(work.writes, Bytes{4ULL * 128 * 64 * 2});           // O

  // Without a vector unit the softmax part cannot run, so neither can the op.
  const Schedule npu = schedule_graph(
      graph_of({workload::make_attention(
          "attn", {.heads = 1, .kv_heads = 1, .q_len = 8, .kv_len = 8, .head_dim = 8},
          DataType::Int8)}),
      parse_arch(kMiniNpu));
  ASSERT_EQ(npu.unsupported.size(), 1u);
  EXPECT_EQ(npu.unsupported[0].reason,
            "an attention op runs its GEMMs on the matrix unit and its softmax on the vector "
            "unit; its part 'attn.softmax' cannot run: a normalization op (softmax) cannot run on "
            "'mini-npu': a systolic array computes contractions only, and this one has no vector "
            "unit");
}

// MLA's absorbed decode (docs/llm.md): 4 query heads over one KV head whose keys are the
// cache's rows (d 576) and whose values are their first 512 columns, K and V bound to the one
// cache tensor [1][1][64][576]. The parts: Q K^T batch 1, m 4, n 64, k 576; P V n 512, k 64.
// DRAM reads: Q 4 x 576 x 2 = 4,608 bytes and the cache once, 64 x 576 x 2 = 73,728 (not
// also its 512 columns as V: 65,536 more); O 4 x 512 x 2 = 4,096 written.
TEST(Schedule, AttentionReadsATensorBoundToKeysAndValuesOnce) {
  const auto hw = parse_arch(kMiniGpu);
  const workload::AttentionParams p{
      .heads = 4, .kv_heads = 1, .q_len = 1, .kv_len = 64, .head_dim = 576, .value_dim = 512};
  workload::Graph g{"g", "", {}, {}};
  const std::vector<std::uint64_t> rows{1, 1, 64, 576};
  const workload::TensorId q = g.add_tensor({"q", {1, 4, 1, 576}, DataType::Fp16});
  const workload::TensorId cache = g.add_tensor({"cache", rows, DataType::Fp16});
  workload::Op op = workload::make_attention("attn", p, DataType::Fp16);
  op.space.accesses[2].shape = rows;
  g.add(std::move(op), {q, cache, cache});
  const Schedule s = schedule_graph(g, hw);
  ASSERT_TRUE(s.unsupported.empty()) << s.unsupported[0].reason;
  const auto& work = std::get<AttentionWork>(s.ops[0].work);
  EXPECT_EQ(work.head_dim, 576u);
  EXPECT_EQ(work.value_dim, 512u);
  EXPECT_EQ(work.reads, Bytes{4'608 + 73'728});
  EXPECT_EQ(work.writes, Bytes{4'096});
  EXPECT_EQ(std::get<TensorCoreWork>(work.parts[0].work).gemm, (workload::GemmView{1, 4, 64, 576}));
  EXPECT_EQ(std::get<TensorCoreWork>(work.parts[2].work).gemm, (workload::GemmView{1, 4, 512, 64}));
}

// The backward op (make_attention_backward) as its five parts, each a GEMM of the forward's
// size or the softmax's backward over b x heads x q x kv scores. Shape: b 1, 4 query heads over
// 2 kv heads (g 2), q = kv = 128, d 64, fp16. gemm_view's classes per part (batch, m, n, k):
//   dV = P^T dO   batch b hk = 2, m kv = 128, n d = 64, k g q = 256
//   dP = dO V^T   batch 2, m g q = 256, n kv = 128, k d = 64
//   dQ = dS K     batch 2, m 256, n d = 64, k kv = 128
//   dK = dS^T Q   batch 2, m kv = 128, n 64, k 256
// Their MACs: 4 x (2 x 256 x 128 x 64) = 2 x the forward's 2 x 4 x 128 x 128 x 64.
TEST(Schedule, AttentionBackwardIsPlacedAsItsFiveParts) {
  const auto hw = parse_arch(kMiniGpu);
  const workload::AttentionParams p{.heads = 4, .kv_heads = 2, .q_len = 128, .kv_len = 128,
                                    .head_dim = 64};
  const Schedule s =
      schedule_graph(graph_of({workload::make_attention_backward("attn", p, DataType::Fp16)}), hw);
  ASSERT_TRUE(s.unsupported.empty()) << s.unsupported[0].reason;
  ASSERT_EQ(s.ops.size(), 1u);
  const auto& work = std::get<AttentionWork>(s.ops[0].work);
  EXPECT_TRUE(work.backward);
  EXPECT_FALSE(work.fused);
  ASSERT_EQ(work.parts.size(), 5u);
  const auto gemm = [&](std::size_t i) {
    return std::get<TensorCoreWork>(work.parts[i].work).gemm;
  };
  EXPECT_EQ(gemm(0), (workload::GemmView{2, 128, 64, 256}));  // dV
  EXPECT_EQ(gemm(1), (workload::GemmView{2, 256, 128, 64}));  // dP
  EXPECT_EQ(gemm(3), (workload::GemmView{2, 256, 64, 128}));  // dQ
  EXPECT_EQ(gemm(4), (workload::GemmView{2, 128, 64, 256}));  // dK
  std::uint64_t part_macs = 0;
  for (const std::size_t i : {0UL, 1UL, 3UL, 4UL}) part_macs += work.parts[i].macs;
  EXPECT_EQ(part_macs, 4ULL * 2 * 256 * 128 * 64);
  EXPECT_EQ(s.ops[0].macs, 2ULL * (2ULL * 4 * 128 * 128 * 64));
  // The softmax's backward reads P and dP and writes dS: 4 x 128 x 128 fp16 each.
  const auto& softmax = std::get<VectorWork>(work.parts[2].work);
  EXPECT_EQ(softmax.reads, Bytes{2ULL * 4 * 128 * 128 * 2});
  EXPECT_EQ(softmax.writes, Bytes{4ULL * 128 * 128 * 2});
  // The op itself reads Q, K, V, O and dO and writes dQ, dK and dV once.
  EXPECT_EQ(work.reads, Bytes{(4ULL + 2 + 2 + 4 + 4) * 128 * 64 * 2});
  EXPECT_EQ(work.writes, Bytes{(4ULL + 2 + 2) * 128 * 64 * 2});
}

}  // namespace
}  // namespace coda::mapper
