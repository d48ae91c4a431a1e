// How the analytical engine prices a fusion plan (mapper/fusion.h, docs/fusion.md): fused
// intermediates leave the DRAM traffic, attention runs as FlashAttention or as its decomposed
// parts. Every expected value is derived in a comment.

#include <algorithm>
#include <cstdint>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "mapper/schedule.h"
#include "sim/analytical/analytical_engine.h"
#include "sim/analytical/unit_costs.h"
#include "testing/graph_checks.h"
#include "testing/test_hardware.h"
#include "workloads/builders.h"
#include "workloads/passes/builtin_passes.h"

namespace coda::sim {
namespace {

using mapper::FusionMode;
using testing::kMiniGpu;
using testing::gemm_bias_relu;
using testing::kEdgeNpu;
using testing::parse_arch;
using workload::Function;
using workload::TensorId;
using workload::TensorRole;

results::RunResult run(const workload::Graph& g, const arch::HardwareModel& hw, FusionMode mode) {
  const mapper::Schedule s = mapper::schedule_graph(g, hw, {.fusion = mode});
  EXPECT_TRUE(s.unsupported.empty()) << s.unsupported.at(0).reason;
  return analytical::AnalyticalEngine{}.run(s, hw, RunOptions{});
}

std::uint64_t dram(const results::Cost& c) { return c.dram_reads.value + c.dram_writes.value; }

// An op priced whole and its parts priced one by one: the same time, work, DRAM traffic and energy.
void expect_same_cost(const results::Cost& a, const results::Cost& b) {
  EXPECT_EQ(a.cycles, b.cycles);
  EXPECT_EQ(a.macs, b.macs);
  EXPECT_EQ(a.dram_reads, b.dram_reads);
  EXPECT_EQ(a.dram_writes, b.dram_writes);
  EXPECT_DOUBLE_EQ(a.energy.value, b.energy.value);
}

TEST(FusionPricing, EpilogueSavesTheIntermediatesDramTraffic) {
  const auto hw = parse_arch(kMiniGpu);
  const results::RunResult none = run(gemm_bias_relu(), hw, FusionMode::None);
  const results::RunResult fused = run(gemm_bias_relu(), hw, FusionMode::Epilogue);
  // C and Y1 are M x N x 2 B = 64 x 32 x 2 = 4096 B. Unfused: fc writes C, bias reads C and
  // writes Y1, relu reads Y1 (one pass each): 4 x 4096 = 16384 B = 2 x 2 x (M x N x bytes).
  EXPECT_EQ(dram(none.total) - dram(fused.total), 2u * 2 * (64 * 32 * 2));
  // The GEMM's output write is gone; its time is not recomputed.
  EXPECT_EQ(none.ops[0].cost.dram_writes, Bytes{4096});
  EXPECT_EQ(fused.ops[0].cost.dram_writes, Bytes{0});
  EXPECT_EQ(fused.ops[0].cost.cycles, none.ops[0].cost.cycles);
  // Its energy drops by the DRAM energy of 4096 B at 10 pJ/B = 40.96 nJ.
  EXPECT_NEAR(none.ops[0].cost.energy.value - fused.ops[0].cost.energy.value, 4096 * 10e-12,
              1e-18);
  // relu is memory-bound at 1 TB/s; unfused it moves 4096 + 4096 B = 8.192 ns = 9 cycles at
  // 1 GHz (rounded up) and launches its own kernel (the 4 us default fixed cost: 4000 cycles);
  // fused it runs inside the GEMM's kernel and moves only its 4096 B write: 4.096 ns = 5 cycles.
  EXPECT_EQ(none.ops[2].cost.cycles, Cycles{4000 + 9});
  EXPECT_EQ(fused.ops[2].cost.cycles, Cycles{5});
}

workload::Graph attention(bool causal = false) {
  workload::Graph g{"g", "", {}, {}, {}};
  g.add(workload::make_attention("attn",
                                 {.heads = 4, .kv_heads = 4, .q_len = 128, .kv_len = 128,
                                  .head_dim = 64, .causal = causal},
                                 DataType::Fp16));
  return g;
}

TEST(FusionPricing, UnfusedAttentionCostsWhatItsDecomposedOpsCost) {
  const auto hw = parse_arch(kMiniGpu);
  for (const bool causal : {false, true}) {
    const results::RunResult whole = run(attention(causal), hw, FusionMode::None);
    workload::Graph parts = attention(causal);
    (void)workload::DecomposeAttention{}.run(parts);
    const results::RunResult decomposed = run(parts, hw, FusionMode::None);
    ASSERT_EQ(decomposed.ops.size(), 3u);
    expect_same_cost(whole.ops.at(0).cost, decomposed.total);
    EXPECT_EQ(whole.ops.at(0).cost.sram_reads, decomposed.total.sram_reads);
  }
}

workload::Graph attention_backward() {
  workload::Graph g{"g", "", {}, {}, {}};
  g.add(workload::make_attention_backward(
      "attn", {.heads = 4, .kv_heads = 4, .q_len = 128, .kv_len = 128, .head_dim = 64},
      DataType::Fp16));
  return g;
}

TEST(FusionPricing, UnfusedAttentionBackwardCostsWhatItsFivePartsCost) {
  const auto hw = parse_arch(kMiniGpu);
  const results::RunResult whole = run(attention_backward(), hw, FusionMode::None);
  workload::Graph parts{"g", "", {}, {}, {}};
  for (workload::Op& op : workload::decompose_attention_backward(attention_backward().ops[0]))
    parts.add(std::move(op));
  const results::RunResult decomposed = run(parts, hw, FusionMode::None);
  ASSERT_EQ(decomposed.ops.size(), 5u);
  expect_same_cost(whole.ops.at(0).cost, decomposed.total);
}

// A soft-capped attention (Gemma 2's cap x tanh(S / cap)) unfused is its four parts, the cap an
// elementwise tanh over S between Q K^T and the softmax; its backward six, the cap's derivative
// a pass over dS and the capped S after the softmax's backward.
TEST(FusionPricing, UnfusedSoftCappedAttentionCostsWhatItsPartsCost) {
  const auto hw = parse_arch(kMiniGpu);
  const workload::AttentionParams p{
      .heads = 4, .kv_heads = 4, .q_len = 128, .kv_len = 128, .head_dim = 64, .softcap = 50};
  workload::Graph g{"g", "", {}, {}, {}};
  g.add(workload::make_attention("attn", p, DataType::Fp16));
  const results::RunResult whole = run(g, hw, FusionMode::None);
  workload::Graph parts = g;
  (void)workload::DecomposeAttention{}.run(parts);
  ASSERT_EQ(parts.ops.size(), 4u);
  EXPECT_EQ(parts.ops[1].name, "attn.softcap");
  EXPECT_EQ(parts.ops[1].function, Function::Tanh);
  const results::RunResult decomposed = run(parts, hw, FusionMode::None);
  expect_same_cost(whole.ops.at(0).cost, decomposed.total);
  // The cap's pass reads S and writes the capped S: 2 x 4 x 128 x 128 x 2 B more DRAM traffic
  // than the same attention without it.
  workload::Graph plain{"g", "", {}, {}, {}};
  workload::AttentionParams uncapped = p;
  uncapped.softcap = 0;
  plain.add(workload::make_attention("attn", uncapped, DataType::Fp16));
  EXPECT_EQ(dram(whole.total) - dram(run(plain, hw, FusionMode::None).total),
            2u * 4 * 128 * 128 * 2);

  workload::Graph bwd{"g", "", {}, {}, {}};
  bwd.add(workload::make_attention_backward("attn", p, DataType::Fp16));
  const results::RunResult whole_bwd = run(bwd, hw, FusionMode::None);
  workload::Graph bwd_parts{"g", "", {}, {}, {}};
  for (workload::Op& op : workload::decompose_attention_backward(bwd.ops[0]))
    bwd_parts.add(std::move(op));
  ASSERT_EQ(bwd_parts.ops.size(), 6u);
  EXPECT_EQ(bwd_parts.ops[3].name, "attn.softcap_bwd");
  expect_same_cost(whole_bwd.ops.at(0).cost, run(bwd_parts, hw, FusionMode::None).total);
}

TEST(FusionPricing, FlashAttentionBackwardKeepsPdPAndDsOffDram) {
  const auto hw = parse_arch(kMiniGpu);
  const results::RunResult none = run(attention_backward(), hw, FusionMode::None);
  const results::RunResult fused = run(attention_backward(), hw, FusionMode::Epilogue);
  // Q, K, V, O, dO, dQ, dK, dV are 1 x 4 x 128 x 64 x 2 B = 65536 B each; P, dP, dS are
  // 4 x 128 x 128 x 2 B = 131072 B. Fused: Q, K, V, O and dO read once, dQ, dK, dV written once,
  // and the two helper kernels of a FlashAttention backward: the first reads dO and O
  // (2 x 65536) and writes the fp32 dQ accumulator's zeros (4 x 128 x 64 x 4 = 131072) and D (512
  // rows x 4 B = 2048), the last reads the accumulator (131072) and writes dQ (65536): 7 x 65536
  // + 131072 read.
  EXPECT_EQ(fused.ops[0].cost.dram_reads, Bytes{7ULL * 65536 + 131072});
  EXPECT_EQ(fused.ops[0].cost.dram_writes, Bytes{3ULL * 65536 + 131072 + 2048 + 65536});
  // Unfused, every part's operands fit the 4 MiB L2 (compulsory bytes only, as the forward's):
  //   dV = P^T dO     reads P, dO; writes dV
  //   dP = dO V^T     reads dO, V; writes dP
  //   softmax bwd     reads P, dP (a row of 128 scores of each fits shared memory: one pass);
  //                   writes dS
  //   dQ = dS K       reads dS, K; writes dQ
  //   dK = dS^T Q     reads dS, Q; writes dK
  // = 5 x 65536 (dO twice, V, K, Q) + 5 x 131072 (P twice, dP, dS twice) read, 3 x 65536 +
  // 2 x 131072 (dP, dS) written. Against the fused kernel alone (whose O read stands for the
  // unfused second dO read): 7 x 131072 more, the plan's dram_bytes_saved; its helpers' 460800 B
  // (above) take some of that back.
  EXPECT_EQ(dram(none.total), 8u * 65536 + 7 * 131072);
  EXPECT_EQ(dram(none.total) - dram(fused.total), 7u * 131072 - 460800);
  EXPECT_LT(fused.total.cycles, none.total.cycles);
}

TEST(FusionPricing, FlashAttentionKeepsSAndPOffDram) {
  const auto hw = parse_arch(kMiniGpu);
  const results::RunResult none = run(attention(), hw, FusionMode::None);
  const results::RunResult fused = run(attention(), hw, FusionMode::Epilogue);
  // Q, K, V and O are b x heads x q x d x 2 B = 1 x 4 x 128 x 64 x 2 = 65536 B each. Fused, DRAM
  // sees Q, K, V read once and O written once.
  EXPECT_EQ(fused.ops[0].cost.dram_reads, Bytes{3ULL * 65536});
  EXPECT_EQ(fused.ops[0].cost.dram_writes, Bytes{65536});
  // Unfused, each GEMM's operands of one head (Q 16 KiB + K 16 KiB + S 32 KiB) fit the 4 MiB L2,
  // so the GEMMs move only compulsory bytes: Q K^T reads Q and K and writes S; the softmax reads
  // S once (a row of 128 fp16 scores, 256 B, fits the SM's 100 KiB of shared memory, so the row
  // stays on chip between its statistics and its normalisation) and writes P; P V reads P and V
  // and writes O. S = P = b x heads x q x kv x 2 B = 4 x 128 x 128 x 2 = 131072 B. The
  // difference is S and P each written once and read once, as the plan counts:
  //   4 x 131072 = 524288 B
  EXPECT_EQ(dram(none.total) - dram(fused.total), 4u * 131072);
  EXPECT_EQ(dram(none.total), 4u * 65536 + 4 * 131072);
  EXPECT_LT(fused.total.cycles, none.total.cycles);
  EXPECT_LT(fused.total.energy.value, none.total.energy.value);
}

// A GPU whose vector unit is the bottleneck of attention: 65536 fp16 tensor-core MACs per cycle,
// 16 vector ops and 1 special op per cycle, unlimited DRAM, 1 GHz, one SM. `paths` are its
// tensor cores' instruction paths: mma_sync only (fa2 by default) or with wgmma (fa3).
std::string slow_vector_gpu(std::string_view paths) {
  return fmt::format(R"(schema_version: 2
name: slow-vector-gpu
clock: 1 GHz
cores: 1
compute:
  - {{name: tc, kind: tensor_core, macs_per_cycle: {{fp16: 65536}}, instruction_paths: {}}}
  - {{name: simd, kind: vector, ops_per_cycle: {{fp16: 16, fp32: 16}}, special_ops_per_cycle: 1}}
memory:
  - {{name: smem, capacity: 1 MiB}}
  - {{name: l2, scope: chip, capacity: 64 MiB}}
dram: {{bandwidth: unlimited}}
)",
                     paths);
}

workload::Graph one_head(bool causal) {
  workload::Graph g{"g", "", {}, {}, {}};
  g.add(workload::make_attention("attn",
                                 {.heads = 1, .kv_heads = 1, .q_len = 128, .kv_len = 128,
                                  .head_dim = 64, .causal = causal},
                                 DataType::Fp16));
  return g;
}

// 1 MiB of shared memory takes the 128 x 128 block. Pairs = 128 x 128 = 16384. Vector: arithmetic
// 16384 x (5 + 64/128) / 16 = 5632 cycles; special 16384 x 1 / 1 = 16384 cycles. Matrix: 2 x 64
// MACs per pair, 16384 x 128 / 65536 = 32 cycles (128 queries are a whole number of the MMA's m,
// 16 or 64, and one block fills the one SM: no padding, wave efficiency 1). DRAM: unlimited.
TEST(FusionPricing, FlashAttention3TimeIsTheBusiestUnitPlusOneLaunch) {
  const auto hw = parse_arch(slow_vector_gpu("[mma_sync, wgmma]"));
  ASSERT_EQ(hw.attention_impl(), arch::AttentionImpl::Fa3);  // wgmma present: fa3 by default
  // fa3 overlaps the softmax with the GEMMs: 4 us launch + max(32, 16384) = 20384 cycles.
  const results::RunResult full = run(one_head(false), hw, FusionMode::Epilogue);
  ASSERT_EQ(full.ops.size(), 1u);
  EXPECT_EQ(full.ops[0].unit, results::OpUnit::Attention);
  EXPECT_EQ(full.ops[0].cost.cycles, Cycles{4000 + 16384});
  EXPECT_EQ(full.ops[0].cost.compute_cycles, Cycles{16384});
  EXPECT_EQ(full.ops[0].bound, results::Bound::Compute);
  // Causal: 128 x 128 - 128 x 127 / 2 = 8256 kept pairs, so 8256 special cycles.
  const results::RunResult causal = run(one_head(true), hw, FusionMode::Epilogue);
  EXPECT_EQ(causal.ops[0].cost.cycles, Cycles{4000 + 8256});
  // MACs: the kept pairs x d, for Q K^T and again for P V (workload::mac_count).
  EXPECT_EQ(causal.ops[0].cost.macs, 2u * 8256 * 64);
}

TEST(FusionPricing, FlashAttention2TimeIsMatrixPlusSoftmaxPlusOneLaunch) {
  const auto hw = parse_arch(slow_vector_gpu("[mma_sync]"));
  ASSERT_EQ(hw.attention_impl(), arch::AttentionImpl::Fa2);
  // fa2 runs the softmax between the GEMMs: 4 us + 32 + 16384 = 20416 cycles.
  const results::RunResult full = run(one_head(false), hw, FusionMode::Epilogue);
  EXPECT_EQ(full.ops[0].cost.cycles, Cycles{4000 + 32 + 16384});
  EXPECT_EQ(full.ops[0].cost.compute_cycles, Cycles{32 + 16384});
  // Causal: 8256 pairs: matrix 8256 x 128 / 65536 = 16.125 cycles + 8256 special = 8272.125,
  // rounded up with the launch: 12273.
  const results::RunResult causal = run(one_head(true), hw, FusionMode::Epilogue);
  EXPECT_EQ(causal.ops[0].cost.cycles, Cycles{12273});
}

// A value head dim of its own (MLA's): Q K^T over d 64, P V over e 128, so d + e = 192 MACs a
// pair: 16384 x 192 / 65536 = 48 cycles on the matrix unit; the softmax's rescale is over e:
// arithmetic 16384 x (5 + 128/128) / 16 = 6144 cycles, still under the 16384 special ones; fa2
// adds them: 4 us + 48 + 16384 = 20432 cycles. MACs 16384 x 192.
TEST(FusionPricing, FlashAttentionWithAValueDimRunsPvOverIt) {
  const auto hw = parse_arch(slow_vector_gpu("[mma_sync]"));
  workload::Graph g{"g", "", {}, {}, {}};
  g.add(workload::make_attention(
      "attn",
      {.heads = 1, .kv_heads = 1, .q_len = 128, .kv_len = 128, .head_dim = 64, .value_dim = 128},
      DataType::Fp16));
  const results::RunResult r = run(g, hw, FusionMode::Epilogue);
  ASSERT_EQ(r.ops.size(), 1u);
  EXPECT_EQ(r.ops[0].cost.cycles, Cycles{4000 + 48 + 16384});
  EXPECT_EQ(r.ops[0].cost.macs, 16384u * 192);
}

// The triton class is fa2's model at calibration.attention_triton of its matrix rate: with 0.5
// the GEMMs take 64 cycles, 4 us + 64 + 16384 = 20448. An arch that states no share cannot
// price the class (the error names the key).
TEST(FusionPricing, TritonAttentionIsFa2AtItsShareOfTheMatrixRate) {
  const auto hw = parse_arch(slow_vector_gpu("[mma_sync]") +
                             "calibration: {attention: triton, attention_triton: 0.5}\n");
  ASSERT_EQ(hw.attention_impl(), arch::AttentionImpl::Triton);
  const results::RunResult full = run(one_head(false), hw, FusionMode::Epilogue);
  EXPECT_EQ(full.ops[0].cost.cycles, Cycles{4000 + 64 + 16384});
  std::string why;
  analytical::AttentionShape shape{.heads = 1, .kv_heads = 1, .q_len = 128, .kv_len = 128,
                                   .head_dim = 64, .pairs = 16384};
  (void)analytical::fused_attention_cost(shape, arch::AttentionImpl::Triton,
                                         parse_arch(slow_vector_gpu("[mma_sync]")), true,
                                         std::nullopt, why);
  EXPECT_EQ(why, "'slow-vector-gpu' states no calibration.attention_triton, the triton attention "
                 "class's share of fa2's matrix rate");
}

// FlashAttention-2's backward on the same GPU (fa2): the matrix unit does 5 d MACs a kept pair
// (the recompute of S and the four gradient GEMMs: 16384 x 320 / 65536 = 80 cycles; the arch
// states no attention_backward share, so 1), the vector unit 5 ops and one exp a pair without
// the forward's rescale (arithmetic 16384 x 5 / 16 = 5120, special 16384 cycles); fa2 adds them:
// 4 us + 80 + 16384 = 20464 cycles. Then the backward's two helper kernels (dO.O with the dQ
// accumulator's clear, dQ's conversion), whose bytes cost nothing on unlimited DRAM, at a vector
// kernel's fixed cost each (4 us): 28464. Its MACs are the model's: the four gradient GEMMs,
// 4 x 16384 x 64.
TEST(FusionPricing, FlashAttention2BackwardIsFiveGemmsPlusTheSoftmax) {
  const auto hw = parse_arch(slow_vector_gpu("[mma_sync]"));
  workload::Graph g{"g", "", {}, {}, {}};
  g.add(workload::make_attention_backward(
      "attn", {.heads = 1, .kv_heads = 1, .q_len = 128, .kv_len = 128, .head_dim = 64},
      DataType::Fp16));
  const results::RunResult r = run(g, hw, FusionMode::Epilogue);
  ASSERT_EQ(r.ops.size(), 1u);
  EXPECT_EQ(r.ops[0].cost.cycles, Cycles{4000 + 80 + 16384 + 2 * 4000});
  EXPECT_EQ(r.ops[0].cost.compute_cycles, Cycles{80 + 16384});
  EXPECT_EQ(r.ops[0].cost.macs, 4u * 16384 * 64);
}

// The helper kernels are the FlashAttention-2/-3 and cuDNN backward's (the fa2 and fa3 classes):
// one head of 128 queries of head dim 64 in fp16, a kernel that owns its launch. The first reads
// dO and O (128 x 64 x 2 B each) and writes the fp32 dQ accumulator's zeros (128 x 64 x 4) and D
// (128 x 4); the last reads the accumulator and writes dQ (128 x 64 x 2): 16384 + 16384 + 32768 +
// 512 + 32768 + 16384 = 115200 B, of which 32768 + 512 + 16384 = 49664 written. The triton class
// (the Triton tutorial's backward, FlashAttention v1) and the forward have none.
TEST(FusionPricing, OnlyTheFlashAttentionBackwardClassesRunTheHelperKernels) {
  const auto hw =
      parse_arch(slow_vector_gpu("[mma_sync, wgmma]") + "calibration: {attention_triton: 0.5}\n");
  analytical::AttentionShape shape{.heads = 1,
                                   .kv_heads = 1,
                                   .q_len = 128,
                                   .kv_len = 128,
                                   .head_dim = 64,
                                   .pairs = 16384,
                                   .backward = true};
  std::string why;
  for (const arch::AttentionImpl impl : {arch::AttentionImpl::Fa2, arch::AttentionImpl::Fa3}) {
    const auto c = analytical::fused_attention_cost(shape, impl, hw, true, std::nullopt, why);
    EXPECT_EQ(c.helper_bytes, 115200.0);
    EXPECT_EQ(c.helper_writes, 49664.0);
    EXPECT_DOUBLE_EQ(c.helper_seconds, 8e-6);  // unlimited DRAM: the two fixed costs
  }
  const auto triton = analytical::fused_attention_cost(shape, arch::AttentionImpl::Triton, hw, true,
                                                       std::nullopt, why);
  EXPECT_EQ(triton.helper_seconds, 0.0);
  shape.backward = false;
  EXPECT_EQ(
      analytical::fused_attention_cost(shape, arch::AttentionImpl::Fa2, hw, true, std::nullopt, why)
          .helper_bytes,
      0.0);
  EXPECT_EQ(why, "");
}

// Soft-capped FlashAttention on the same GPU (fa2): the cap adds tanh's 4 ops and 1 special and
// the multiply by the cap a pair. Forward: arithmetic 16384 x (5 + 64/128 + 5) / 16 = 10752
// cycles, special 16384 x 2 / 1 = 32768; fa2 adds the GEMMs' 32: 4 us + 32 + 32768 = 36800
// (20416 uncapped). Backward: the cap's recompute and 3 ops of its derivative, arithmetic
// 16384 x (5 + 5 + 3) / 16 = 13312, special 32768: 4 us + 80 + 32768 = 36848, and the two
// helper kernels' fixed costs (2 x 4 us, their bytes free on unlimited DRAM): 44848.
TEST(FusionPricing, SoftCappedFlashAttentionAddsTheTanhToTheSoftmax) {
  const auto hw = parse_arch(slow_vector_gpu("[mma_sync]"));
  const workload::AttentionParams p{
      .heads = 1, .kv_heads = 1, .q_len = 128, .kv_len = 128, .head_dim = 64, .softcap = 30};
  workload::Graph fwd{"g", "", {}, {}, {}};
  fwd.add(workload::make_attention("attn", p, DataType::Fp16));
  EXPECT_EQ(run(fwd, hw, FusionMode::Epilogue).ops.at(0).cost.cycles, Cycles{4000 + 32 + 32768});
  EXPECT_EQ(run(one_head(false), hw, FusionMode::Epilogue).ops.at(0).cost.cycles,
            Cycles{4000 + 32 + 16384});
  workload::Graph bwd{"g", "", {}, {}, {}};
  bwd.add(workload::make_attention_backward("attn", p, DataType::Fp16));
  EXPECT_EQ(run(bwd, hw, FusionMode::Epilogue).ops.at(0).cost.cycles,
            Cycles{4000 + 80 + 32768 + 2 * 4000});
}

TEST(ResidencyPricing, TwoLayersKeepTheirIntermediateOnChip) {
  const auto hw = parse_arch(kEdgeNpu);
  // l1: C1[32][256] = A[32][16] x B1[16][256]; l2: C2[32][64] = C1 x B2[256][64]; int8.
  workload::Graph g{"g", "", {}, {}, {}};
  g.add(workload::make_gemm("l1", 32, 256, 16, DataType::Int8));
  g.add(workload::make_gemm("l2", 32, 64, 256, DataType::Int8), {TensorId{2}});
  const results::RunResult none = run(g, hw, FusionMode::None);
  const results::RunResult all = run(g, hw, FusionMode::All);
  // C1 is 32 x 256 x 1 B = 8192 B. Unfused the systolic model writes it once (l1's 16 column
  // folds each write their 32 x 16 outputs) and reads it once (it fits the working half of l2's
  // input buffer, so each tile is fetched once). Kept on chip, both go: 2 x 8192 B.
  EXPECT_EQ(none.ops[0].cost.dram_writes, Bytes{8192});
  EXPECT_EQ(all.ops[0].cost.dram_writes, Bytes{0});
  EXPECT_EQ(dram(none.total) - dram(all.total), 2u * 8192);
}

// One 8x8 int8 weight-stationary array, a 4 KiB scratchpad for inputs and weights and an
// accumulator for outputs; DRAM at 1 B per cycle (1 GB/s at 1 GHz), so each layer below is
// memory-bound. mapper/tests/residency_test.cpp derives the plans.
constexpr std::string_view kResNpu = R"(schema_version: 2
name: res-npu
clock: 1 GHz
compute:
  - name: mxu
    kind: systolic
    array: {rows: 8, cols: 8, dataflow: weight_stationary}
    macs_per_pe: {int8: 1}
memory:
  - {name: spad, capacity: 4 KiB, holds: [inputs, weights]}
  - {name: acc, capacity: 4 KiB, holds: [outputs]}
dram: {bandwidth: 1 GB/s}
)";

TEST(ResidencyPricing, AKeptActivationTakesItsBytesOffTheLayersTime) {
  const auto hw = parse_arch(kResNpu);
  // l1: C1[256][8] = A[256][1] x B1[1][8]; l2: C2 = C1 x B2[8][8]; l3: C3 = C2 x B3[8][8].
  // The plan keeps C1 (2048 B) and rejects C2 (it does not fit beside C1).
  workload::Graph g{"chain", "", {}, {}, {}};
  g.add(workload::make_gemm("l1", 256, 8, 1, DataType::Int8));
  g.add(workload::make_gemm("l2", 256, 8, 8, DataType::Int8), {TensorId{2}});
  g.add(workload::make_gemm("l3", 256, 8, 8, DataType::Int8), {TensorId{4}});
  const results::RunResult none = run(g, hw, FusionMode::None);
  const results::RunResult all = run(g, hw, FusionMode::All);
  // Weight stationary: K' on the 8 rows, N' = 8 on the 8 columns, T = M' = 256: one fold of
  // T + 2R + C - 2 = 256 + 16 + 8 - 2 = 278 cycles per layer. Double-buffered on 1 B/cycle:
  // cycles = in_0 + max(278, 0) + out_0 (the first fetch and the last drain are exposed).
  // l1 fetches A (256 B, once) and B1 (8 B) and writes C1 (2048 B): 264 + 278 + 2048 = 2590;
  // with C1 kept it writes nothing: 264 + 278 = 542.
  EXPECT_EQ(none.ops[0].cost.cycles, Cycles{2590});
  EXPECT_EQ(all.ops[0].cost.cycles, Cycles{542});
  // l2 fetches C1 (2048 B) and B2 (64 B) and writes C2 (2048 B): 2112 + 278 + 2048 = 4438;
  // with C1 kept it fetches B2 only: 64 + 278 + 2048 = 2390.
  EXPECT_EQ(none.ops[1].cost.cycles, Cycles{4438});
  EXPECT_EQ(all.ops[1].cost.cycles, Cycles{2390});
  EXPECT_EQ(all.ops[1].cost.dram_reads, Bytes{64});
  // l3 is unchanged: C2 goes through DRAM.
  EXPECT_EQ(all.ops[2].cost.cycles, none.ops[2].cost.cycles);
  // In all: 2 x 2048 B and 2 x 2048 cycles less; the compute cycles do not move.
  EXPECT_EQ(dram(none.total) - dram(all.total), 2u * 2048);
  EXPECT_EQ(none.total.cycles.value - all.total.cycles.value, 2u * 2048);
  EXPECT_EQ(all.total.compute_cycles, none.total.compute_cycles);
}

TEST(ResidencyPricing, ACachedWeightIsNotFetched) {
  // As kResNpu with a 256 B scratchpad that caches weights: four GEMMs C[8][8] = A[8][8] x
  // W[8][8] in a chain cache W1 and W2 (mapper/tests/residency_test.cpp) and stream W3, W4.
  const auto hw = parse_arch(R"(schema_version: 2
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
)");
  workload::Graph g{"four", "", {}, {}, {}};
  g.add(workload::make_gemm("l1", 8, 8, 8, DataType::Int8));
  for (std::uint32_t i = 2; i <= 4; ++i)
    g.add(workload::make_gemm(fmt::format("l{}", i), 8, 8, 8, DataType::Int8),
          {TensorId{2 * i - 2}});
  const results::RunResult r = run(g, hw, FusionMode::None);
  // One fold of T + 2R + C - 2 = 8 + 16 + 8 - 2 = 30 cycles. l3 and l4 fetch A (64 B) and W
  // (64 B) and write C (64 B): 128 + 30 + 64 = 222. l1 and l2 find W cached: 64 + 30 + 64 = 158.
  EXPECT_EQ(r.ops[0].cost.cycles, Cycles{158});
  EXPECT_EQ(r.ops[1].cost.cycles, Cycles{158});
  EXPECT_EQ(r.ops[2].cost.cycles, Cycles{222});
  EXPECT_EQ(r.ops[0].cost.dram_reads, Bytes{64});
  EXPECT_EQ(r.ops[3].cost.dram_reads, Bytes{128});
}

TEST(FusionPricing, PipelinedEpilogueRunsUnderItsContraction) {
  // kEdgeNpu, and the same with its vector unit fed by the array's outputs as they stream out.
  std::string text(kEdgeNpu);
  const std::string simd = "ops_per_cycle: {int8: 64, fp32: 16}";
  text.replace(text.find(simd), simd.size(), simd + ", pipelined_epilogue: true");
  const auto serial_hw = parse_arch(kEdgeNpu);
  const auto piped_hw = parse_arch(text);
  // fc: C[64][32] = A[64][16] x B[16][32], then + bias[32], then relu; int8, one epilogue group.
  workload::Graph g{"g", "", {}, {}, {}};
  g.add(workload::make_gemm("fc", 64, 32, 16, DataType::Int8));
  g.add(workload::make_elementwise("fc.bias", Function::Add, {64, 32}, DataType::Int8,
                                   {{TensorRole::Weight, {1}}}),
        {TensorId{2}});
  g.add(workload::make_elementwise("fc.relu", Function::Relu, {64, 32}, DataType::Int8),
        {TensorId{4}});
  const results::RunResult serial = run(g, serial_hw, FusionMode::Epilogue);
  const results::RunResult piped = run(g, piped_hw, FusionMode::Epilogue);
  ASSERT_EQ(serial.ops.size(), 3u);
  ASSERT_EQ(piped.ops.size(), 3u);
  // The contraction is priced as before.
  const std::uint64_t c = serial.ops[0].cost.cycles.value;
  EXPECT_EQ(piped.ops[0].cost.cycles.value, c);
  // Serial: bias = 2048 elements x 1 op / 64 per cycle = 32 cycles (its only DRAM bytes, the
  // 32 B bias vector, take 4 cycles at 8 B/cycle); relu computes for 32 cycles but writes
  // 2048 B at 8 GB/s = 8 B/cycle: 256 cycles.
  EXPECT_EQ(serial.ops[1].cost.cycles.value, 32u);
  EXPECT_EQ(serial.ops[2].cost.cycles.value, 256u);
  // The GEMM takes longer than the bias (2 column folds of at least 64 streamed rows each), so
  // the bias hides completely and relu hides under what is left: c - 32 cycles.
  ASSERT_GT(c, 32u);
  EXPECT_EQ(piped.ops[1].cost.cycles.value, 0u);
  EXPECT_EQ(piped.ops[2].cost.cycles.value, 256 - std::min<std::uint64_t>(256, c - 32));
  // The group takes max(contraction, the followers' sum) = max(c, 288); bytes do not change.
  EXPECT_EQ(piped.total.cycles.value, std::max<std::uint64_t>(c, 288));
  EXPECT_EQ(serial.total.cycles.value, c + 288);
  EXPECT_EQ(dram(piped.total), dram(serial.total));
}

}  // namespace
}  // namespace coda::sim
