// The fusion planner (mapper/fusion.h): each rule, its bytes and its rejections, and how
// schedule_graph applies a plan. Every expected value is derived in a comment.

#include "mapper/fusion.h"

#include <gtest/gtest.h>

#include "mapper/schedule.h"
#include "testing/graph_checks.h"
#include "testing/test_hardware.h"
#include "workloads/builders.h"

namespace coda::mapper {
namespace {

using testing::kMiniGpu;
using testing::kMiniNpu;
using testing::gemm_bias_relu;
using testing::parse_arch;
using workload::Function;
using workload::TensorId;
using workload::TensorRole;

TEST(Fusion, ModesParseAndPrint) {
  for (const FusionMode mode :
       {FusionMode::None, FusionMode::Eager, FusionMode::Epilogue, FusionMode::All})
    EXPECT_EQ(parse_fusion_mode(to_string(mode)), mode);
  EXPECT_EQ(parse_fusion_mode("fused"), std::nullopt);
  EXPECT_EQ(to_string(FusionKind::ConvBnRelu), "conv_bn_relu");
}

TEST(Fusion, NoneFusesNothingAndLeavesTheScheduleAsItWas) {
  const auto hw = parse_arch(kMiniGpu);
  const auto g = gemm_bias_relu();
  const FusionPlan plan = plan_fusion(g, hw, FusionMode::None);
  EXPECT_EQ(plan, FusionPlan{});
  const Schedule s = schedule_graph(g, hw);  // default: FusionMode::None
  EXPECT_TRUE(s.fusion.groups.empty());
  ASSERT_EQ(s.ops.size(), 3u);
  EXPECT_EQ(s.ops[0].dram_writes_saved, Bytes{});
  // bias reads C (64 x 32 x 2 = 4096 B) and b (32 x 2 = 64 B), writes Y1 (4096 B).
  EXPECT_EQ(std::get<VectorWork>(s.ops[1].work).reads, Bytes{4096 + 64});
  EXPECT_EQ(std::get<VectorWork>(s.ops[1].work).writes, Bytes{4096});
}

// Eager PyTorch: F.linear's bias rides in cuBLASLt's epilogue, the ReLU is a kernel of its own.
TEST(Fusion, EagerFusesAGemmWithItsBiasOnly) {
  const auto hw = parse_arch(kMiniGpu);
  const auto g = gemm_bias_relu();
  const FusionPlan plan = plan_fusion(g, hw, FusionMode::Eager);
  ASSERT_EQ(plan.groups.size(), 1u);
  EXPECT_EQ(plan.groups[0].kind, FusionKind::Epilogue);
  EXPECT_EQ(plan.groups[0].ops, (std::vector<std::size_t>{0, 1}));
  // Only C stays on chip (64 x 32 x 2 = 4096 B), written once and read once: 8192 B saved.
  EXPECT_EQ(plan.groups[0].intermediates, (std::vector<TensorId>{TensorId{2}}));
  EXPECT_EQ(total_dram_bytes_saved(plan), Bytes{8192});
}

TEST(Fusion, GemmBiasReluIsOneEpilogueGroup) {
  const auto hw = parse_arch(kMiniGpu);
  const auto g = gemm_bias_relu();
  const FusionPlan plan = plan_fusion(g, hw, FusionMode::Epilogue);
  ASSERT_EQ(plan.groups.size(), 1u);
  const FusionGroup& group = plan.groups[0];
  EXPECT_EQ(group.kind, FusionKind::Epilogue);
  EXPECT_EQ(group.ops, (std::vector<std::size_t>{0, 1, 2}));
  EXPECT_EQ(group.intermediates, (std::vector<TensorId>{TensorId{2}, TensorId{4}}));
  // C and Y1 stay on chip, M x N x bytes = 64 x 32 x 2 = 4096 B each. Unfused, each is written
  // once and read once: saved = 2 intermediates x 2 accesses x 4096 = 16384 B.
  EXPECT_EQ(group.intermediate_bytes, Bytes{2ULL * 64 * 32 * 2});
  EXPECT_EQ(group.dram_bytes_saved, Bytes{2ULL * 2 * 64 * 32 * 2});
  EXPECT_EQ(total_dram_bytes_saved(plan), Bytes{16384});
  // The tile is a 128 x 128 thread-block tile, capped at C's 2048 elements: 4096 B, against
  // mini-gpu's 100 KiB of shared memory per SM.
  EXPECT_EQ(group.on_chip_bytes, Bytes{4096});
  EXPECT_EQ(group.on_chip_capacity, Bytes{100ULL * 1024});
  EXPECT_TRUE(plan.rejected.empty());

  // Applied: the GEMM's write of C is recorded for the engine to take off; the vector ops lose
  // their reads and writes of C and Y1 (bias keeps reading b: 64 B; relu keeps writing Y2).
  const Schedule s = schedule_graph(g, hw, {.fusion = FusionMode::Epilogue});
  ASSERT_EQ(s.ops.size(), 3u);
  EXPECT_EQ(s.ops[0].dram_writes_saved, Bytes{4096});
  EXPECT_EQ(s.ops[0].dram_reads_saved, Bytes{});
  EXPECT_EQ(std::get<VectorWork>(s.ops[1].work).reads, Bytes{64});
  EXPECT_EQ(std::get<VectorWork>(s.ops[1].work).writes, Bytes{0});
  EXPECT_EQ(std::get<VectorWork>(s.ops[2].work).reads, Bytes{0});
  EXPECT_EQ(std::get<VectorWork>(s.ops[2].work).writes, Bytes{4096});
  EXPECT_EQ(s.ops[1].fusion_group, std::optional<std::size_t>{0});
  EXPECT_EQ(s.fusion, plan);
}

TEST(Fusion, ATensorWithASecondReaderStaysInDram) {
  const auto hw = parse_arch(kMiniGpu);
  workload::Graph g{"g", "", {}, {}, {}};
  g.add(workload::make_gemm("fc", 64, 32, 16, DataType::Fp16));  // C = tensor 2
  g.add(workload::make_elementwise("fc.relu", Function::Relu, {64, 32}, DataType::Fp16),
        {TensorId{2}});
  g.add(workload::make_elementwise("other", Function::Sigmoid, {64, 32}, DataType::Fp16),
        {TensorId{2}});
  const FusionPlan plan = plan_fusion(g, hw, FusionMode::All);
  EXPECT_TRUE(plan.groups.empty());
  ASSERT_EQ(plan.rejected.size(), 1u);
  EXPECT_EQ(plan.rejected[0].kind, FusionKind::Epilogue);
  EXPECT_EQ(plan.rejected[0].ops, (std::vector<std::size_t>{0, 1}));
  EXPECT_EQ(plan.rejected[0].reason, "'fc.C' is also read by 'other'");

  // A result of the graph must reach DRAM too.
  workload::Graph result = gemm_bias_relu();
  result.outputs = {TensorId{2}, TensorId{5}};
  const FusionPlan kept = plan_fusion(result, hw, FusionMode::Epilogue);
  EXPECT_TRUE(kept.groups.empty());
  ASSERT_EQ(kept.rejected.size(), 1u);
  EXPECT_EQ(kept.rejected[0].reason, "'fc.C' is a result of the graph");
}

TEST(Fusion, AGroupWithAnOpTheHardwareCannotRunDoesNotFuse) {
  // mini-gpu's tensor cores compute fp16 only: an int8 GEMM cannot run, so its epilogue does not
  // fuse and relu keeps its DRAM traffic.
  const auto hw = parse_arch(kMiniGpu);
  workload::Graph g{"g", "", {}, {}, {}};
  g.add(workload::make_gemm("fc", 64, 32, 16, DataType::Int8));
  g.add(workload::make_elementwise("fc.relu", Function::Relu, {64, 32}, DataType::Int8),
        {TensorId{2}});
  EXPECT_EQ(plan_fusion(g, hw, FusionMode::Epilogue).groups.size(), 1u);
  const Schedule s = schedule_graph(g, hw, {.fusion = FusionMode::Epilogue});
  ASSERT_EQ(s.unsupported.size(), 1u);
  EXPECT_TRUE(s.fusion.groups.empty());
  ASSERT_EQ(s.fusion.rejected.size(), 1u);
  EXPECT_EQ(s.fusion.rejected[0].reason, "'fc' cannot run on 'mini-gpu'");
  ASSERT_EQ(s.ops.size(), 1u);
  EXPECT_EQ(std::get<VectorWork>(s.ops[0].work).reads, Bytes{64ULL * 32});  // int8 C
}

TEST(Fusion, ConvBatchNormReluIsOneGroup) {
  const auto hw = parse_arch(kMiniGpu);
  workload::Graph g{"g", "", {}, {}, {}};
  // 3x3 conv, 8 -> 16 channels, 8x8 output, pad 1: ofmap [1][16][8][8] = tensor 2.
  g.add(workload::make_conv2d("conv",
                              {.in_h = 8, .in_w = 8, .in_channels = 8, .filter_h = 3,
                               .filter_w = 3, .out_channels = 16, .pad_h = 1, .pad_w = 1},
                              8, 8, DataType::Fp16));
  // bn: x (2), scale (3), shift (4) -> y (5); relu: 5 -> 6.
  g.add(workload::make_normalization("bn", Function::BatchNorm, {1, 16, 8, 8}, {1},
                                     DataType::Fp16),
        {TensorId{2}});
  g.add(workload::make_elementwise("relu", Function::Relu, {1, 16, 8, 8}, DataType::Fp16),
        {TensorId{5}});
  const FusionPlan plan = plan_fusion(g, hw, FusionMode::Epilogue);
  ASSERT_EQ(plan.groups.size(), 1u);
  EXPECT_EQ(plan.groups[0].kind, FusionKind::ConvBnRelu);
  EXPECT_EQ(plan.groups[0].ops, (std::vector<std::size_t>{0, 1, 2}));
  // ofmap and bn's y: 16 x 8 x 8 x 2 B = 2048 B each, written and read once: 2 x 2 x 2048.
  EXPECT_EQ(plan.groups[0].dram_bytes_saved, Bytes{2ULL * 2 * 2048});
}

TEST(Fusion, AttentionRunsAsFlashAttention) {
  const auto hw = parse_arch(kMiniGpu);
  workload::Graph g{"g", "", {}, {}, {}};
  g.add(workload::make_attention(
      "attn", {.heads = 4, .kv_heads = 4, .q_len = 128, .kv_len = 128, .head_dim = 64},
      DataType::Fp16));
  const FusionPlan plan = plan_fusion(g, hw, FusionMode::Epilogue);
  ASSERT_EQ(plan.groups.size(), 1u);
  const FusionGroup& group = plan.groups[0];
  EXPECT_EQ(group.kind, FusionKind::Attention);
  EXPECT_TRUE(group.intermediates.empty());  // S and P are not graph tensors
  // S and P of the decomposed form: b x heads x q x kv x 2 B = 1 x 4 x 128 x 128 x 2 = 131072 B
  // each; each written once and read once: 4 x b x heads x q x kv x bytes = 524288 B.
  EXPECT_EQ(group.intermediate_bytes, Bytes{2ULL * 131072});
  EXPECT_EQ(group.dram_bytes_saved, Bytes{4ULL * 1 * 4 * 128 * 128 * 2});
  // Blocks against 100 KiB = 102400 B of shared memory:
  //   128: 128 x 128 x 4 (fp32 scores) + (128 + 2 x 128) x 64 x 2 = 65536 + 49152 = 114688: no
  //    64:  64 x  64 x 4               + ( 64 + 2 x  64) x 64 x 2 = 16384 + 24576 =  40960: fits
  EXPECT_EQ(group.flash_block, 64u);
  EXPECT_EQ(group.on_chip_bytes, Bytes{40960});

  // Scheduled fused, with the block.
  const Schedule s = schedule_graph(g, hw, {.fusion = FusionMode::Epilogue});
  ASSERT_EQ(s.ops.size(), 1u);
  const auto& work = std::get<AttentionWork>(s.ops[0].work);
  EXPECT_TRUE(work.fused);
  EXPECT_EQ(work.block, 64u);

  // A causal mask does not shrink the saving: the decomposed form writes S and P in full (the
  // mask is applied in the softmax).
  workload::Graph causal{"g", "", {}, {}, {}};
  causal.add(workload::make_attention("attn",
                                      {.heads = 4, .kv_heads = 4, .q_len = 128, .kv_len = 128,
                                       .head_dim = 64, .causal = true},
                                      DataType::Fp16));
  EXPECT_EQ(plan_fusion(causal, hw, FusionMode::Epilogue).groups.at(0).dram_bytes_saved,
            Bytes{524288});

  // Without a vector unit there is nowhere to run the softmax.
  workload::Graph int8{"g", "", {}, {}, {}};
  int8.add(workload::make_attention(
      "attn", {.heads = 1, .kv_heads = 1, .q_len = 8, .kv_len = 8, .head_dim = 8},
      DataType::Int8));
  const FusionPlan npu = plan_fusion(int8, parse_arch(kMiniNpu), FusionMode::Epilogue);
  EXPECT_TRUE(npu.groups.empty());
  ASSERT_EQ(npu.rejected.size(), 1u);
  EXPECT_EQ(npu.rejected[0].reason, "'mini-npu' has no vector unit for the softmax");
}

// The heads' merge right after a fused attention joins its group: FlashAttention writes O as
// b x q x heads x d, which is the merged layout, so the transpose is no kernel and no copy. A
// split (the projection's Q, K, V handed out as views) moves nothing either.
TEST(Fusion, HeadsMergeAfterFusedAttentionAndSplitsAreViews) {
  const auto hw = parse_arch(kMiniGpu);
  workload::Graph g{"g", "", {}, {}, {}};
  // split: qkv (0) [128][768] -> q (1), k (2), v (3), each [1][4][128][64] fp16.
  g.add(workload::make_data_movement("split", Function::Split, {{128, 768}},
                                     {{1, 4, 128, 64}, {1, 4, 128, 64}, {1, 4, 128, 64}},
                                     DataType::Fp16));
  g.add(workload::make_attention(
            "attn", {.heads = 4, .kv_heads = 4, .q_len = 128, .kv_len = 128, .head_dim = 64},
            DataType::Fp16),
        {TensorId{1}, TensorId{2}, TensorId{3}});  // O is tensor 4
  g.add(workload::make_data_movement("merge", Function::Transpose, {{1, 4, 128, 64}},
                                     {{128, 256}}, DataType::Fp16),
        {TensorId{4}});

  const FusionPlan plan = plan_fusion(g, hw, FusionMode::Epilogue);
  ASSERT_EQ(plan.groups.size(), 1u);
  const FusionGroup& group = plan.groups[0];
  EXPECT_EQ(group.kind, FusionKind::Attention);
  EXPECT_EQ(group.ops, (std::vector<std::size_t>{1, 2}));
  // S and P as in AttentionRunsAsFlashAttention (131072 B each), plus O (1 x 4 x 128 x 64 x 2 =
  // 65536 B), which the transpose would read and write: saved 2 x (2 x 131072 + 65536).
  EXPECT_EQ(group.intermediate_bytes, Bytes{2ULL * 131072 + 65536});
  EXPECT_EQ(group.dram_bytes_saved, Bytes{2ULL * (2 * 131072 + 65536)});

  const Schedule fused = schedule_graph(g, hw, {.fusion = FusionMode::Epilogue});
  ASSERT_EQ(fused.ops.size(), 3u);
  // The split moves nothing (views of qkv); the merge neither, and runs in the attention kernel.
  EXPECT_EQ(std::get<TransferWork>(fused.ops[0].work), TransferWork{});
  EXPECT_EQ(std::get<TransferWork>(fused.ops[2].work), TransferWork{});
  EXPECT_FALSE(fused.ops[2].own_kernel);

  // Unfused, P V's batched output is b x heads x q x d: merging the heads is a real transpose,
  // reading and writing O's 65536 B, in a kernel of its own. The split is still a view.
  const Schedule unfused = schedule_graph(g, hw, {.fusion = FusionMode::None});
  EXPECT_EQ(std::get<TransferWork>(unfused.ops[0].work), TransferWork{});
  EXPECT_EQ(std::get<TransferWork>(unfused.ops[2].work),
            (TransferWork{Bytes{65536}, Bytes{65536}}));
  EXPECT_TRUE(unfused.ops[2].own_kernel);
}

TEST(Fusion, ElementwiseChainsOnlyInAllMode) {
  const auto hw = parse_arch(kMiniGpu);
  workload::Graph g{"g", "", {}, {}, {}};
  // relu: x (0) -> 1; gelu: 1 -> 2; layer norm over rows: 2, scale (3) -> 4. [64][32] fp16.
  g.add(workload::make_elementwise("relu", Function::Relu, {64, 32}, DataType::Fp16));
  g.add(workload::make_elementwise("gelu", Function::Gelu, {64, 32}, DataType::Fp16),
        {TensorId{1}});
  g.add(workload::make_normalization("norm", Function::LayerNorm, {64, 32}, {1},
                                     DataType::Fp16),
        {TensorId{2}});
  EXPECT_TRUE(plan_fusion(g, hw, FusionMode::Epilogue).groups.empty());
  const FusionPlan plan = plan_fusion(g, hw, FusionMode::All);
  ASSERT_EQ(plan.groups.size(), 1u);
  EXPECT_EQ(plan.groups[0].kind, FusionKind::ElementwiseChain);
  EXPECT_EQ(plan.groups[0].ops, (std::vector<std::size_t>{0, 1, 2}));
  // Two [64][32] fp16 intermediates of 4096 B, each written and read once.
  EXPECT_EQ(plan.groups[0].dram_bytes_saved, Bytes{2ULL * 2 * 4096});

  // A norm needs a whole row on chip: a row of 65536 fp16 is 128 KiB, over the 100 KiB of a
  // mini-gpu SM.
  workload::Graph wide{"g", "", {}, {}, {}};
  wide.add(workload::make_elementwise("relu", Function::Relu, {2, 65536}, DataType::Fp16));
  wide.add(workload::make_normalization("norm", Function::LayerNorm, {2, 65536}, {1},
                                        DataType::Fp16),
           {TensorId{1}});
  const FusionPlan rejected = plan_fusion(wide, hw, FusionMode::All);
  EXPECT_TRUE(rejected.groups.empty());
  ASSERT_EQ(rejected.rejected.size(), 1u);
  EXPECT_EQ(rejected.rejected[0].reason,
            "a tile of 'relu.y' needs 128 KiB on chip; a core of 'mini-gpu' has 100 KiB");
}

}  // namespace
}  // namespace coda::mapper
