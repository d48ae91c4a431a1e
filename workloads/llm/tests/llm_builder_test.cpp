// The LLM graph builder: structure (verify), parameters, FLOPs against hand formulas and
// published conventions, KV cache, and the TP / PP / DP communication.

#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "workloads/llm/llm_builder.h"
#include "workloads/llm/tests/llm_test_support.h"

namespace coda::workload::llm {
namespace {

using testing::build;
using testing::preset;

std::uint64_t flops_of_kind(const Graph& g, OpKind kind) {
  std::uint64_t total = 0;
  for (const Op& op : g.ops)
    if (op.kind == kind) total += flop_count(op);
  return total;
}

bool has_prefix(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

// Bytes moved by collectives of `f` whose op name starts with `prefix` (the input access).
std::uint64_t collective_bytes(const Graph& g, Function f, const std::string& prefix = "") {
  std::uint64_t total = 0;
  for (const Op& op : g.ops)
    if (op.function == f && has_prefix(op.name, prefix))
      total += tensor_bytes(op, TensorRole::Input).value;
  return total;
}

// The op called `name`, or null.
const Op* op_named(const Graph& g, const std::string& name) {
  for (const Op& op : g.ops)
    if (op.name == name) return &op;
  return nullptr;
}

std::size_t count(const Graph& g, Function f) {
  std::size_t n = 0;
  for (const Op& op : g.ops) n += op.function == f ? 1 : 0;
  return n;
}

TEST(LlmBuilder, WeightsInTheGraphAreTheParameterCount) {
  for (const char* name : {"llama2_7b", "gpt2_small", "mixtral_8x7b", "qwen3_0p6b", "qwen3_30b_a3b",
                           "gemma2_2b", "pythia_160m", "gptj_6b", "falcon_7b", "phi2"}) {
    const LlmConfig c = preset(name);
    const Graph g = build(c, {.kind = PhaseKind::Prefill, .batch = 1, .seq_len = 16});
    EXPECT_EQ(total_elements(g, TensorKind::Weight), llm_headline(c, 0).parameters) << name;
  }
}

TEST(LlmBuilder, GegluGatesWithGeluAndBiasesFollowTheirFlags) {
  // A small Gemma-like model: three FFN matrices, GELU on the gate (no SiLU); biases on Q, K
  // and V only (Qwen2's), so the weights still equal the headline's count.
  LlmConfig c = preset("llama2_7b");
  c.ffn_type = FfnType::GeGlu;
  c.qkv_bias = true;
  const Graph g = build(c, {.kind = PhaseKind::Decode, .batch = 1, .seq_len = 16});
  EXPECT_EQ(total_elements(g, TensorKind::Weight), llm_headline(c, 0).parameters);
  EXPECT_EQ(count(g, Function::Silu), 0u);
  EXPECT_EQ(count(g, Function::Gelu), c.layers);  // one per layer, on the gate
  EXPECT_EQ(count(g, Function::Mul) >= c.layers, true);
}

// Qwen3's QK norm: an RMSNorm over each head's head_dim (128) of Q and of K, after the split
// into heads and before RoPE. Qwen3-0.6B, prefill of 2 x 64 tokens: q_norm over
// [2, 16 heads, 64, 128] and k_norm over [2, 8 KV heads, 64, 128], rows of 128, one scale of
// 128 each; a decode step normalises the new token's K ([2, 8, 1, 128]), not the cache.
TEST(LlmBuilder, QkNormNormalisesEachHeadBeforeRope) {
  const LlmConfig c = preset("qwen3_0p6b");
  const Graph g = build(c, {.kind = PhaseKind::Prefill, .batch = 2, .seq_len = 64});
  const Op* q = op_named(g, "L0.q_norm");
  const Op* k = op_named(g, "L0.k_norm");
  ASSERT_TRUE(q && k);
  EXPECT_EQ(q->function, Function::RmsNorm);
  EXPECT_EQ(q->space.accesses[0].shape, (std::vector<std::uint64_t>{2, 16, 64, 128}));
  EXPECT_EQ(q->space.accesses[1].shape, (std::vector<std::uint64_t>{128}));  // the scale
  EXPECT_EQ(k->space.accesses[0].shape, (std::vector<std::uint64_t>{2, 8, 64, 128}));
  // Order: split into heads, then the norms, then RoPE reads the normalised Q.
  std::size_t split = 0, norm = 0, rope = 0;
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    if (g.ops[i].name == "L0.split_heads") split = i;
    if (g.ops[i].name == "L0.q_norm") norm = i;
    if (g.ops[i].name == "L0.rope_q") rope = i;
  }
  EXPECT_LT(split, norm);
  EXPECT_LT(norm, rope);
  EXPECT_EQ(g.ops[rope].tensors[0], g.ops[norm].tensors.back());
  const Graph d = build(c, {.kind = PhaseKind::Decode, .batch = 2, .seq_len = 64});
  ASSERT_TRUE(op_named(d, "L0.k_norm"));
  EXPECT_EQ(op_named(d, "L0.k_norm")->space.accesses[0].shape,
            (std::vector<std::uint64_t>{2, 8, 1, 128}));
  // Training: each norm has its backward and its scale's gradient (a sum over all but head_dim).
  const Graph t = build(c, {.kind = PhaseKind::Training, .batch = 1, .seq_len = 16});
  EXPECT_TRUE(op_named(t, "L0.q_norm.dx") && op_named(t, "L0.k_norm.dx"));
  const Op* dscale = op_named(t, "L0.q_norm.dscale");
  ASSERT_TRUE(dscale);
  EXPECT_EQ(dscale->space.accesses.back().shape, (std::vector<std::uint64_t>{128}));
  // The hf_transformers runtime does not decompose it: refused, not priced as Llama's layer.
  Diagnostics diags;
  LlmPhase hf_phase{.kind = PhaseKind::Prefill, .batch = 1, .seq_len = 16};
  hf_phase.runtime = Runtime::HfTransformers;
  EXPECT_FALSE(try_build_llm(c, hf_phase, {}, diags));
  ASSERT_EQ(diags.error_count(), 1u) << diags.format_all();
  EXPECT_NE(diags.all()[0].message.find("but qwen3_0p6b has QK norms"), std::string::npos)
      << diags.all()[0].message;
}

// Gemma 2: a norm on each branch's output before its residual add (four RMSNorms a layer), the
// attention's scores soft-capped (the op carries the cap), and the logits soft-capped by one
// elementwise tanh over [tokens, vocab] that the loss then reads; the caps' backwards are there.
TEST(LlmBuilder, Gemma2SandwichNormsAndSoftCaps) {
  const LlmConfig c = preset("gemma2_2b");
  const Graph g = build(c, {.kind = PhaseKind::Decode, .batch = 2, .seq_len = 64});
  std::size_t norms = 0;
  for (const Op& op : g.ops) norms += op.function == Function::RmsNorm ? 1 : 0;
  EXPECT_EQ(norms, 4 * c.layers + 1);  // and the final norm
  // post_norm1 normalises the attention's output projection; the residual adds its result.
  const Op* post = op_named(g, "L0.post_norm1");
  const Op* residual = op_named(g, "L0.residual1");
  ASSERT_TRUE(post && residual && op_named(g, "L0.post_norm2"));
  EXPECT_EQ(post->tensors[0], op_named(g, "L0.out")->tensors.back());
  EXPECT_EQ(residual->tensors[1], post->tensors.back());
  const Op* attention = op_named(g, "L0.attention");
  ASSERT_TRUE(attention);
  EXPECT_EQ(std::get<AttentionSpec>(attention->attributes).softcap, 50.0);
  const Op* cap = op_named(g, "final_softcap");
  ASSERT_TRUE(cap);
  EXPECT_EQ(cap->function, Function::Tanh);
  EXPECT_EQ(cap->space.accesses[0].shape, (std::vector<std::uint64_t>{2, 256000}));
  EXPECT_EQ(cap->tensors[0], op_named(g, "lm_head")->tensors.back());
  // Training: the loss's softmax reads the capped logits; the attention's backward carries the
  // cap; the final cap has its backward.
  const Graph t = build(c, {.kind = PhaseKind::Training, .batch = 1, .seq_len = 16});
  EXPECT_EQ(op_named(t, "loss.softmax")->tensors[0], op_named(t, "final_softcap")->tensors.back());
  EXPECT_EQ(std::get<AttentionSpec>(op_named(t, "L0.attention.bwd")->attributes).softcap, 50.0);
  EXPECT_TRUE(op_named(t, "final_softcap.dx"));
  EXPECT_TRUE(op_named(t, "L0.post_norm2.dx"));
}

// Sliding-window attention (Mistral 7B v0.1's 4096 on every layer): a prefill of 8192 tokens
// keeps, per head, sum over t = 1..8192 of min(t, 4096) = 4096 x 4097 / 2 + 4096 x 4096 =
// 25,167,872 query-key pairs (causal alone: 8192 x 8193 / 2 = 33,558,528), so L0.attention's
// MACs are 2 x 32 heads x 25,167,872 x 128 = 206,175,207,424. A 4096-token prefill does not
// exceed the window: its op has none. A decode step over 8191 cached tokens reads a ring of 4096
// slots, the new token written to slot 8191 mod 4096 = 4095.
TEST(LlmBuilder, SlidingWindowAttention) {
  const LlmConfig c = preset("mistral_7b");  // 32 heads over 8 kv heads of 128
  const Graph long_prefill = build(c, {.kind = PhaseKind::Prefill, .batch = 1, .seq_len = 8192});
  const Op* attn = op_named(long_prefill, "L0.attention");
  ASSERT_TRUE(attn);
  EXPECT_EQ(std::get<AttentionSpec>(attn->attributes).window, 4096u);
  EXPECT_EQ(mac_count(*attn), std::uint64_t{2} * 32 * 25'167'872 * 128);
  const Graph short_prefill = build(c, {.kind = PhaseKind::Prefill, .batch = 1, .seq_len = 4096});
  EXPECT_EQ(std::get<AttentionSpec>(op_named(short_prefill, "L0.attention")->attributes).window,
            0u);
  const Graph decode = build(c, {.kind = PhaseKind::Decode, .batch = 2, .seq_len = 8191});
  const Op* step = op_named(decode, "L31.attention");
  ASSERT_TRUE(step);
  EXPECT_EQ(step->space.accesses[1].shape, (std::vector<std::uint64_t>{2, 8, 4096, 128}));
  const Op* append = op_named(decode, "L31.kv_append.k");
  ASSERT_TRUE(append);
  EXPECT_EQ(append->space.accesses.back().indices[2].offset, 4095);
  // Training: the backward keeps the forward's pairs.
  const Graph t = build(c, {.kind = PhaseKind::Training, .batch = 1, .seq_len = 8192});
  EXPECT_EQ(std::get<AttentionSpec>(op_named(t, "L0.attention.bwd")->attributes).window, 4096u);
  // Gemma 2 alternates: layer 0 local, layer 1 global; a decode step over 8191 tokens reads 4096
  // of them on L0 and all 8192 on L1.
  const LlmConfig gemma = preset("gemma2_2b");
  const Graph g = build(gemma, {.kind = PhaseKind::Decode, .batch = 1, .seq_len = 8191});
  EXPECT_EQ(op_named(g, "L0.attention")->space.dims[4].extent, 4096u);
  EXPECT_EQ(op_named(g, "L1.attention")->space.dims[4].extent, 8192u);
  // The hf_transformers runtime masks the window inside a full score matrix: refused there.
  Diagnostics diags;
  EXPECT_FALSE(try_build_llm(
      c,
      {.kind = PhaseKind::Decode, .batch = 1, .seq_len = 4096, .runtime = Runtime::HfTransformers},
      {}, diags));
  ASSERT_EQ(diags.error_count(), 1u) << diags.format_all();
  EXPECT_EQ(diags.all()[0].path, "phase.seq_len");
}

// A decode step's matmul work is exactly the headline formula at context + 1 (the new token
// attends to the cache and itself), per sequence: 2 x total_macs == batch x headline.
TEST(LlmBuilder, DecodeMatmulsMatchHeadlineFormula) {
  for (const char* name : {"llama2_7b", "gpt2_small", "mixtral_8x7b", "llama3_8b"}) {
    const LlmConfig c = preset(name);
    const std::uint64_t batch = 4, context = 300;  // Mixtral: 4 tokens x top 2 / 8 experts = 1 row each
    const Graph g = build(c, {.kind = PhaseKind::Decode, .batch = batch, .seq_len = context});
    EXPECT_EQ(2 * total_macs(g), batch * llm_headline(c, context + 1).forward_flops_per_token)
        << name;
  }
}

// Every FLOP of one LLaMA-2-7B decode step (batch 1, context 511, so 512 keys), by hand:
//   matmuls: headline(512) = 2 * 6,607,077,376 + 4*32*512*4096 = 13,214,154,752 + 268,435,456
//   per layer, elementwise (op.cpp's per-point costs): RMSNorm 4/pt x 4096 x 2 = 32,768;
//     RoPE Mul over Q and K 1/pt x 2 x 4096 = 8,192; softmax 5/score x 32 heads x 512 = 81,920;
//     SiLU 5/pt x 11008 = 55,040; Mul 11008; residual Adds 2 x 4096 = 8,192
//     -> 197,120 x 32 layers = 6,307,840
//   final RMSNorm 4 x 4096 = 16,384; KV appends, splits and merges do no arithmetic
TEST(LlmBuilder, DecodeFlopsExactHandFormula) {
  const Graph g = build(preset("llama2_7b"), {.kind = PhaseKind::Decode, .batch = 1, .seq_len = 511});
  EXPECT_EQ(total_flops(g), 13'214'154'752u + 268'435'456u + 6'307'840u + 16'384u);
}

// Kaplan et al. 2020 (Scaling Laws), Table 1: C_forward ~ 2N + 2 n_layer n_ctx d_attn per token,
// N the non-embedding parameters. GPT-3 175B prefill of 2048 tokens (the LM head runs on the
// last token only, so the de-embedding Kaplan leaves out is absent here too). Differences:
// biases, norms, GELU and softmax (~0.1%), and causal attention's (n_ctx + 1) / 2 average
// context instead of n_ctx / 2. Tolerance 0.5%.
TEST(LlmBuilder, PrefillFlopsMatchKaplan) {
  const LlmConfig c = preset("gpt3_175b");
  const std::uint64_t n_ctx = 2048;
  const Graph g = build(c, {.kind = PhaseKind::Prefill, .batch = 1, .seq_len = n_ctx});
  const LlmHeadline h = llm_headline(c, 0);
  const double n = static_cast<double>(h.parameters - h.embedding_parameters);
  const double kaplan = 2 * n + 2.0 * static_cast<double>(c.layers * n_ctx * c.hidden);
  EXPECT_NEAR(static_cast<double>(total_flops(g)) / static_cast<double>(n_ctx) / kaplan, 1.0,
              0.005);
}

// FLOPs of the ops before the first backward op (the LM head's dX): the training forward.
std::uint64_t forward_flops(const Graph& g) {
  std::uint64_t total = 0;
  for (const Op& op : g.ops) {
    if (op.name == "lm_head.dx") break;
    total += flop_count(op);
  }
  return total;
}

// Backward = 2 x forward for every GEMM (dX and dW) and attention (the convention of
// docs/llm.md); elementwise backward ops cost about their forward; AdamW adds 15 FLOPs per
// parameter (0.4% here). So a step is ~3 x forward, ~4 x with full recomputation.
TEST(LlmBuilder, TrainingIsThreeTimesForwardFourWithRecompute) {
  const LlmConfig c = preset("llama2_7b");
  const LlmPhase phase{.kind = PhaseKind::Training, .batch = 2, .seq_len = 2048};
  const Graph plain = build(c, phase);
  const double forward = static_cast<double>(forward_flops(plain));
  EXPECT_NEAR(static_cast<double>(total_flops(plain)) / forward, 3.0, 3.0 * 0.02);
  LlmPhase with_recompute = phase;
  with_recompute.recompute = true;
  const Graph recomputed = build(c, with_recompute);
  EXPECT_EQ(forward_flops(recomputed), forward_flops(plain));
  EXPECT_NEAR(static_cast<double>(total_flops(recomputed)) / forward, 4.0, 4.0 * 0.02);
  // The matmuls alone: backward is exactly 2 x forward.
  std::uint64_t fwd_macs = 0, all_macs = total_macs(plain);
  for (const Op& op : plain.ops) {
    if (op.name == "lm_head.dx") break;
    fwd_macs += mac_count(op);
  }
  EXPECT_EQ(all_macs, 3 * fwd_macs);
}

TEST(LlmBuilder, TrainingTensorKinds) {
  const LlmConfig c = preset("gpt2_small");
  const Graph g = build(c, {.kind = PhaseKind::Training, .batch = 1, .seq_len = 64});
  const std::uint64_t params = llm_headline(c, 0).parameters;
  EXPECT_EQ(total_elements(g, TensorKind::Weight), params);
  EXPECT_EQ(total_elements(g, TensorKind::Gradient), params);
  // Mixed precision (the default): AdamW's m and v and the master weights, fp32.
  EXPECT_EQ(total_bytes(g, TensorKind::OptimizerState), Bytes{3ULL * 4 * params});
  EXPECT_EQ(total_elements(g, TensorKind::KvCache), 0u);
  EXPECT_EQ(count(g, Function::AdamW), 2u + 12u * 12u + 2u);  // wte wpe, 12 per layer, ln_f w b
}

// Bytes a parameter takes under each precision (bf16 model): pure 2 + 2 + 8 (m, v), mixed
// 2 + 2 + 12 (and the fp32 master: ZeRO's 16), autocast 4 + 4 + 8 (fp32 parameters); an fp32
// model has no master copy. The graph's weights, gradients and optimizer state agree.
TEST(LlmBuilder, PrecisionBytesPerParameter) {
  const auto bf16 = [](Precision p) { return parameter_bytes(p, DataType::Bf16); };
  EXPECT_EQ(bf16(Precision::Pure).weight, 2.0);
  EXPECT_EQ(bf16(Precision::Pure).optimizer, 8.0);
  EXPECT_EQ(bf16(Precision::Mixed).gradient, 2.0);
  EXPECT_EQ(bf16(Precision::Mixed).optimizer, 12.0);
  EXPECT_EQ(bf16(Precision::Autocast).weight, 4.0);
  EXPECT_EQ(bf16(Precision::Autocast).gradient, 4.0);
  EXPECT_EQ(bf16(Precision::Autocast).optimizer, 8.0);
  EXPECT_EQ(parameter_bytes(Precision::Mixed, DataType::Fp32).optimizer, 8.0);

  const LlmConfig c = preset("gpt2_small");  // bf16
  const std::uint64_t params = llm_headline(c, 0).parameters;
  for (const Precision p : {Precision::Pure, Precision::Mixed, Precision::Autocast}) {
    const Graph g = build(c, {.kind = PhaseKind::Training, .batch = 1, .seq_len = 64,
                              .precision = p});
    const ParameterBytes b = parameter_bytes(p, c.dtype);
    const auto times = [&](double per) {
      return Bytes{static_cast<std::uint64_t>(per) * params};
    };
    EXPECT_EQ(total_bytes(g, TensorKind::Weight), times(b.weight)) << to_string(p);
    EXPECT_EQ(total_bytes(g, TensorKind::Gradient), times(b.gradient)) << to_string(p);
    EXPECT_EQ(total_bytes(g, TensorKind::OptimizerState), times(b.optimizer)) << to_string(p);
  }
}

std::size_t casts(const Graph& g, DataType from, DataType to) {
  std::size_t n = 0;
  for (const Op& op : g.ops)
    if (op.function == Function::Copy && op.space.accesses.front().dtype == from &&
        op.space.accesses.back().dtype == to)
      ++n;
  return n;
}

// Autocast's casts in a GPT-2 small step (12 layers), counted by hand from PyTorch's autocast
// rules (linear casts its input, weight and bias; autograd casts each gradient to its input's
// type; AccumulateGrad casts a weight copy's gradient to fp32):
//   fp32 -> bf16, forward, per layer: 8 weights and biases (qkv, out, ffn up and down) and the
//     two norms' outputs before the qkv and up GEMMs = 10; backward, per layer: the residual
//     stream's gradient into the attention and FFN branches (bf16) = 2: 12 a layer; then the LM
//     head's input and weight (the tied table), and the loss gradient before log_softmax's
//     backward: 12 x 12 + 3 = 147.
//   bf16 -> fp32, per layer: the 8 weight copies' gradients into the fp32 gradients and the two
//     GEMM inputs' gradients back to the norms = 10; then the LM head's weight gradient, its
//     input's gradient and the log-probabilities into nll_loss: 12 x 10 + 3 = 123.
// The H200 profile of the same script (validation/measured/h200_20261204_s2/
// torch_train_kernels.csv, GPT-2 XL: 48 layers) has 580 fp32 -> bf16 copies (12 x 48 + 4) and
// 484 bf16 -> fp32 (10 x 48 + 4): the same 12 and 10 a layer.
TEST(LlmBuilder, AutocastCastsAsPyTorchDoes) {
  const LlmConfig c = preset("gpt2_small");
  const Graph g = build(c, {.kind = PhaseKind::Training, .batch = 1, .seq_len = 64,
                            .precision = Precision::Autocast});
  EXPECT_EQ(casts(g, DataType::Fp32, DataType::Bf16), 12u * 12u + 3u);
  EXPECT_EQ(casts(g, DataType::Bf16, DataType::Fp32), 12u * 10u + 3u);
  // The residual stream and the norms are fp32; the GEMMs and the attention bf16.
  for (const Op& op : g.ops) {
    if (op.function == Function::LayerNorm || op.name.ends_with("residual1")) {
      EXPECT_EQ(op.space.accesses.back().dtype, DataType::Fp32) << op.name;
    }
    if (op.kind == OpKind::Contraction || op.kind == OpKind::Attention) {
      EXPECT_EQ(op.space.accesses.front().dtype, DataType::Bf16) << op.name;
    }
  }
  // Two micro-batches: the second adds its weight gradients into the fp32 gradients (an Add
  // for each of the 8 weight copies of a layer and the LM head's) instead of copying them.
  const Graph two = build(c, {.kind = PhaseKind::Training, .batch = 2, .seq_len = 64,
                              .precision = Precision::Autocast},
                          {.micro_batches = 2});
  std::size_t accumulated = 0;
  for (const Op& op : two.ops)
    if (op.function == Function::Add && op.name.ends_with(".to_grad")) ++accumulated;
  EXPECT_EQ(accumulated, 12u * 8u + 1u);
  // Pure and mixed precision cast nothing.
  EXPECT_EQ(casts(build(c, {.kind = PhaseKind::Training, .batch = 1, .seq_len = 64}),
                  DataType::Fp32, DataType::Bf16),
            0u);
}

// Transformer Engine's FP8 step of LLaMA-2-7B (32 layers, h 4096, FFN 11008), one sequence of 64
// tokens, counted by hand from TE's recipe (Precision::Fp8):
//   GEMMs: 5 linear layers a layer (qkv, out, gate, up, down), each forward, dgrad and wgrad in
//     FP8: 32 x 15 = 480, the 160 dgrads' first operand the E5M2 gradient; the LM head's three
//     stay bf16 (Megatron-LM's output layer is not a TE module).
//   casts: forward, the out and down GEMMs' inputs by a cast_transpose each (64 in all) and the
//     two norms' outputs written in E4M3 by the norms, transposed by a copy each (64); backward,
//     each GEMM's output gradient to E5M2 (160); the 160 weights once a step, after AdamW.
// The down projection's input cast reads 64 x 11008 bf16 (2 B) and writes it twice in E4M3 (the
// cast and its transpose, 1 B each).
TEST(LlmBuilder, Fp8RunsTheLinearLayersAsTransformerEngineDoes) {
  const LlmConfig c = preset("llama2_7b");
  const auto graph_of = [&](std::uint64_t micro_batches) {
    return build(c,
                 {.kind = PhaseKind::Training,
                  .batch = micro_batches,
                  .seq_len = 64,
                  .precision = Precision::Fp8},
                 {.micro_batches = micro_batches});
  };
  const Graph g = graph_of(1);
  std::size_t fp8_gemms = 0, bf16_gemms = 0, e5m2_gemms = 0;
  for (const Op& op : g.ops) {
    if (op.kind != OpKind::Contraction) continue;
    const DataType a = op.space.accesses.front().dtype;
    if (a == DataType::Fp8E4M3 || a == DataType::Fp8E5M2) ++fp8_gemms;
    if (a == DataType::Fp8E5M2) ++e5m2_gemms;
    if (a == DataType::Bf16) ++bf16_gemms;
    EXPECT_EQ(op.space.accesses.back().dtype, DataType::Bf16) << op.name;
  }
  EXPECT_EQ(fp8_gemms, 480u);
  EXPECT_EQ(e5m2_gemms, 160u);
  EXPECT_EQ(bf16_gemms, 3u);
  EXPECT_EQ(casts(g, DataType::Bf16, DataType::Fp8E4M3), 64u + 160u);
  EXPECT_EQ(casts(g, DataType::Fp8E4M3, DataType::Fp8E4M3), 64u);
  EXPECT_EQ(casts(g, DataType::Bf16, DataType::Fp8E5M2), 160u);
  for (const Op& op : g.ops) {
    if (op.function == Function::RmsNorm && op.name.find("final_norm") == std::string::npos &&
        op.name.find(".dx") == std::string::npos) {
      EXPECT_EQ(op.space.accesses.back().dtype, DataType::Fp8E4M3) << op.name;
    }
    if (op.name == "L0.ffn.down.input.fp8_cast_transpose") {
      EXPECT_EQ(workload::tensor_bytes(op, TensorRole::Input), Bytes{64ull * 11008ull * 2ull});
      EXPECT_EQ(workload::tensor_bytes(op, TensorRole::Output), Bytes{2ull * 64ull * 11008ull});
    }
  }
  // The weights' casts are the last span, once a step: two micro-batches cast the activations
  // and gradients twice, the weights once.
  Diagnostics diags;
  const auto parts = try_build_llm_parts(
      c, {.kind = PhaseKind::Training, .batch = 2, .seq_len = 64, .precision = Precision::Fp8},
      {.micro_batches = 2}, diags);
  ASSERT_TRUE(parts.has_value()) << diags.format_all();
  EXPECT_EQ(parts->spans.back().part, StepPart::WeightCast);
  EXPECT_EQ(parts->spans.back().end - parts->spans.back().first, 160u);
  const Graph two = graph_of(2);
  EXPECT_EQ(casts(two, DataType::Bf16, DataType::Fp8E4M3), 2 * 64u + 160u);
  EXPECT_EQ(casts(two, DataType::Bf16, DataType::Fp8E5M2), 2 * 160u);
}

// Context parallelism over cp = 2 ranks, LLaMA-2-7B (32 layers, 32 heads of 128, h 4096), one
// sequence of 128 tokens, by hand: each rank holds 64 tokens, so every GEMM has 64 rows (QKV:
// 64 x 12288 x 4096 MACs); each layer all-gathers its K and V [1][32][64][128] bf16 (512 KiB
// each) over the 2 ranks and reduce-scatters their gradients back; the attention's
// 64 queries run over all 128 keys and keep half of the sequence's causal pairs: 128 x 129 / 2 /
// 2 = 4128 a head, so its MACs are half of the cp = 1 attention's (32 heads x 8256 pairs x 256).
TEST(LlmBuilder, ContextParallelismSplitsTheSequence) {
  const LlmConfig c = preset("llama2_7b");
  const LlmPhase phase{.kind = PhaseKind::Training, .batch = 1, .seq_len = 128};
  const Graph whole = build(c, phase);
  const Graph split = build(c, phase, {.cp = 2});
  const auto find = [](const Graph& g, const std::string& name) -> const Op& {
    for (const Op& op : g.ops)
      if (op.name == name) return op;
    ADD_FAILURE() << "no op " << name;
    return g.ops.front();
  };
  EXPECT_EQ(mac_count(find(split, "L0.qkv")), 64u * 12288u * 4096u);
  const Op& attention = find(split, "L0.attention");
  EXPECT_EQ(attention.space.dims[3].extent, 64u);   // q
  EXPECT_EQ(attention.space.dims[4].extent, 128u);  // kv
  EXPECT_EQ(std::get<AttentionSpec>(attention.attributes).context_parallel, 2u);
  EXPECT_EQ(mac_count(attention), 32u * 4128u * 256u);
  EXPECT_EQ(2 * mac_count(attention), mac_count(find(whole, "L0.attention")));
  std::size_t gathers = 0, scatters = 0;
  for (const Op& op : split.ops) {
    if (op.function == Function::AllGather && op.name.find("cp_gather") != std::string::npos) {
      ++gathers;
      EXPECT_EQ(workload::tensor_bytes(op, TensorRole::Input), Bytes{32ull * 64 * 128 * 2});
      EXPECT_EQ(std::get<CollectiveSpec>(op.attributes).ranks, 2u);
    }
    if (op.function == Function::ReduceScatter && op.name.find("cp_gather") != std::string::npos)
      ++scatters;
  }
  EXPECT_EQ(gathers, 2u * 32u);
  EXPECT_EQ(scatters, 2u * 32u);
  // Only training steps of causal attention without a window split the sequence, into 2 x cp
  // chunks.
  const auto first_path = [&](const LlmConfig& config, const LlmPhase& ph, std::uint64_t cp) {
    Diagnostics diags;
    EXPECT_FALSE(check_llm_build(config, ph, {.cp = cp}, diags));
    return diags.all().empty() ? std::string() : diags.all().front().path;
  };
  EXPECT_EQ(first_path(c, {.kind = PhaseKind::Prefill, .batch = 1, .seq_len = 128}, 2),
            "parallelism.cp");
  EXPECT_EQ(first_path(c, {.kind = PhaseKind::Training, .batch = 1, .seq_len = 100}, 4),
            "parallelism.cp");
  EXPECT_EQ(first_path(preset("mistral_7b"),
                       {.kind = PhaseKind::Training, .batch = 1, .seq_len = 8192}, 2),
            "parallelism.cp");
}

// Qwen3-30B-A3B (48 layers, hidden 2048, 128 experts of FFN 768, top 8), one sequence of 64
// tokens, expert parallelism over 4 ranks: each rank holds 128 / 4 = 32 experts a layer, and
// its 64 x 8 = 512 token-expert rows, exchanged with the other ranks, come back as 512 rows
// over its 32 experts (balanced routing): 16 rows each. Each all-to-all moves a rank's whole
// dispatch buffer, 32 x 16 x 2048 bf16 = 2 MiB (tokens x top_k x hidden x 2 B); a MoE layer has
// two in the forward (dispatch, combine) and their two conjugates in the backward, each
// dispatch followed and each combine preceded by the regrouping copy (sort_chunks).
TEST(LlmBuilder, ExpertParallelismShardsTheExpertsAndExchangesTheTokens) {
  const LlmConfig c = preset("qwen3_30b_a3b");
  const LlmPhase phase{.kind = PhaseKind::Training, .batch = 1, .seq_len = 64};
  Diagnostics diags;
  const auto built = try_build_llm_parts(c, phase, {.dp = 8, .ep = 4}, diags);
  ASSERT_TRUE(built.has_value()) << diags.format_all();
  const Graph& g = built->graph;
  std::size_t exchanges = 0, sorts = 0;
  for (const Op& op : g.ops) {
    if (op.function == Function::AllToAll) {
      ++exchanges;
      EXPECT_EQ(workload::tensor_bytes(op, TensorRole::Input), Bytes{64ull * 8 * 2048 * 2});
      EXPECT_EQ(std::get<CollectiveSpec>(op.attributes).ranks, 4u);
    }
    if (op.name.ends_with("sort_chunks") || op.name.ends_with("sort_chunks.bwd")) ++sorts;
  }
  EXPECT_EQ(exchanges, 4u * 48u);
  EXPECT_EQ(sorts, 4u * 48u);
  // The experts' up, gate and down weights, [32][...] on the rank, 3 a layer.
  ASSERT_EQ(built->expert_weights.size(), 3u * 48u);
  for (const TensorId w : built->expert_weights) EXPECT_EQ(g.tensors[w.value].shape[0], 32u);
  // Gradients: a routed expert's over the dp / ep = 2 ranks that hold it, the rest over dp 8.
  const auto ranks_of = [&](const std::string& name) -> std::uint32_t {
    for (const Op& op : g.ops)
      if (op.name == name) return std::get<CollectiveSpec>(op.attributes).ranks;
    ADD_FAILURE() << "no op " << name;
    return 0;
  };
  EXPECT_EQ(ranks_of("L0.experts.up.weight.grad.dp_all_reduce"), 2u);
  EXPECT_EQ(ranks_of("L0.qkv.weight.grad.dp_all_reduce"), 8u);
  // The same step without expert parallelism does the same expert MACs: 512 rows x 3
  // projections of 2048 x 768 a layer.
  const Graph whole = build(c, phase, {.dp = 8});
  const auto expert_macs = [](const Graph& graph) {
    std::uint64_t macs = 0;
    for (const Op& op : graph.ops)
      if (op.name == "L0.moe.experts.up" || op.name == "L0.moe.experts.gate" ||
          op.name == "L0.moe.experts.down")
        macs += mac_count(op);
    return macs;
  };
  EXPECT_EQ(expert_macs(g), 512ull * 3 * 2048 * 768);
  EXPECT_EQ(expert_macs(whole), expert_macs(g));
  // Errors: inference, a dense model, ep not dividing the experts, tp > 1.
  const auto first_path = [&](const LlmConfig& config, const LlmPhase& ph, Parallelism par) {
    Diagnostics d;
    EXPECT_FALSE(check_llm_build(config, ph, par, d));
    return d.all().empty() ? std::string() : d.all().front().path;
  };
  EXPECT_EQ(first_path(c, {.kind = PhaseKind::Prefill, .batch = 1, .seq_len = 64}, {.ep = 2}),
            "parallelism.ep");
  EXPECT_EQ(first_path(preset("llama2_7b"), phase, {.ep = 2}), "parallelism.ep");
  EXPECT_EQ(first_path(c, phase, {.ep = 3}), "parallelism.ep");
  EXPECT_EQ(first_path(c, phase, {.tp = 2, .ep = 2}), "parallelism.ep");  // no SP
}

// The same step with tp 2 and sequence parallelism (Megatron-Core's MoE parallel folding): the
// MoE block runs on the rank's 64 / 2 = 32 tokens with the experts whole ([32][2048][768], not
// split over tp), so each all-to-all moves 32 x 8 x 2048 x 2 B = 1 MiB, and no sequence
// all-gather enters it nor reduce-scatter leaves it: the layer's SP collectives are the
// attention's, an all-gather before QKV and a reduce-scatter after the output projection, and
// their conjugates in the backward (4 a layer, where the FFN's would add 4 more). The experts'
// gradients are reduced over tp 2 x dp 8 / ep 4 = 4 ranks.
TEST(LlmBuilder, ExpertParallelismWithTensorParallelismFoldsTheExperts) {
  const LlmConfig c = preset("qwen3_30b_a3b");
  const LlmPhase phase{.kind = PhaseKind::Training, .batch = 1, .seq_len = 64};
  Diagnostics diags;
  const auto built =
      try_build_llm_parts(c, phase, {.tp = 2, .dp = 8, .sequence_parallel = true, .ep = 4}, diags);
  ASSERT_TRUE(built.has_value()) << diags.format_all();
  const Graph& g = built->graph;
  std::size_t exchanges = 0, sequence_collectives = 0;
  for (const Op& op : g.ops) {
    if (op.function == Function::AllToAll) {
      ++exchanges;
      EXPECT_EQ(workload::tensor_bytes(op, TensorRole::Input), Bytes{32ull * 8 * 2048 * 2});
    }
    if (op.name.starts_with("L0.") &&
        (op.function == Function::AllGather || op.function == Function::ReduceScatter))
      ++sequence_collectives;
  }
  EXPECT_EQ(exchanges, 4u * 48u);
  EXPECT_EQ(sequence_collectives, 4u);
  for (const TensorId w : built->expert_weights) {
    const auto& s = g.tensors[w.value].shape;
    EXPECT_EQ(s[0], 32u);
    EXPECT_EQ(s[1] * s[2], 2048u * 768u);
  }
  std::size_t reductions = 0;
  for (const Op& op : g.ops) {
    if (op.name != "L0.experts.up.weight.grad.dp_all_reduce") continue;
    ++reductions;
    EXPECT_EQ(std::get<CollectiveSpec>(op.attributes).ranks, 4u);
  }
  EXPECT_EQ(reductions, 1u);
}

// Megatron-LM's --account-for-embedding-in-pipeline-split and -loss-in-: Qwen3-235B-A22B's 94
// layers, the embedding and the loss are 96 = 32 x 3 over pp 8 x virtual 4: the first virtual
// stage holds layers 0-1 (and the embedding), stage k in the middle 3k - 1 .. 3k + 1, the last
// 92-93 (and the loss). 94 layers alone do not split over 32; LLaMA-2-7B's 32 + 2 over 34 leave
// the first and last stage no layer.
TEST(LlmBuilder, ThePipelineSplitCanCountTheEmbeddingAndTheLoss) {
  LlmConfig c = preset("qwen3_235b_a22b");
  const auto split = [&](std::uint64_t stage) {
    return stage_layers(c, {.pp = 32,
                            .stage = stage,
                            .pipeline_counts_embedding = true,
                            .pipeline_counts_loss = true});
  };
  EXPECT_EQ(split(0).first, 0u);
  EXPECT_EQ(split(0).count, 2u);
  EXPECT_EQ(split(1).first, 2u);
  EXPECT_EQ(split(1).count, 3u);
  EXPECT_EQ(split(30).first, 89u);
  EXPECT_EQ(split(30).count, 3u);
  EXPECT_EQ(split(31).first, 92u);
  EXPECT_EQ(split(31).count, 2u);
  const LlmPhase phase{.kind = PhaseKind::Training, .batch = 1, .seq_len = 64};
  Diagnostics diags;
  EXPECT_FALSE(check_llm_build(c, phase, {.pp = 32}, diags));
  ASSERT_FALSE(diags.all().empty());
  EXPECT_EQ(diags.all().front().path, "parallelism.pp");
  Diagnostics fine;
  EXPECT_TRUE(check_llm_build(
      c, phase, {.pp = 32, .pipeline_counts_embedding = true, .pipeline_counts_loss = true}, fine))
      << fine.format_all();
  Diagnostics empty;
  EXPECT_FALSE(check_llm_build(
      preset("llama2_7b"), phase,
      {.pp = 34, .pipeline_counts_embedding = true, .pipeline_counts_loss = true}, empty));
  ASSERT_FALSE(empty.all().empty());
  EXPECT_EQ(empty.all().front().path, "parallelism.pp");
}

TEST(LlmBuilder, PrecisionErrors) {
  const LlmConfig c = preset("gpt2_small");
  Diagnostics diags;
  EXPECT_FALSE(check_llm_build(c, {.kind = PhaseKind::Prefill, .precision = Precision::Pure},
                               {}, diags));
  EXPECT_EQ(diags.all().front().path, "phase.precision");
  LlmConfig fp32 = c;
  fp32.dtype = DataType::Fp32;
  Diagnostics d2;
  EXPECT_FALSE(check_llm_build(
      fp32, {.kind = PhaseKind::Training, .precision = Precision::Autocast}, {}, d2));
  EXPECT_NE(d2.format_all().find("narrower"), std::string::npos) << d2.format_all();
  Diagnostics d3;
  EXPECT_FALSE(
      check_llm_build(fp32, {.kind = PhaseKind::Training, .precision = Precision::Fp8}, {}, d3));
  EXPECT_NE(d3.format_all().find("bf16 or fp16"), std::string::npos) << d3.format_all();
}

// KV cache of a prefill: 524,288 B per token (llm_config_test) x 4 sequences x 1000 tokens.
TEST(LlmBuilder, KvCacheBytes) {
  const LlmConfig c = preset("llama2_7b");
  const LlmPhase prefill{.kind = PhaseKind::Prefill, .batch = 4, .seq_len = 1000};
  EXPECT_EQ(total_bytes(build(c, prefill), TensorKind::KvCache), Bytes{524'288ULL * 4 * 1000});
  EXPECT_EQ(llm_step_stats(c, prefill, {}).kv_cache_bytes, Bytes{524'288ULL * 4 * 1000});
  const LlmPhase decode{.kind = PhaseKind::Decode, .batch = 4, .seq_len = 1000};
  EXPECT_EQ(total_bytes(build(c, decode), TensorKind::KvCache), Bytes{524'288ULL * 4 * 1001});
  EXPECT_EQ(llm_step_stats(c, decode, {}).kv_cache_bytes, Bytes{524'288ULL * 4 * 1001});
  EXPECT_EQ(llm_step_stats(c, decode, {.tp = 8, .pp = 2}).kv_cache_bytes_per_rank,
            Bytes{524'288ULL * 4 * 1001 / 16});
}

TEST(LlmBuilder, TensorParallelSplitsTheWork) {
  const LlmConfig c = preset("llama2_7b");
  const std::uint64_t batch = 2, seq = 512;
  const LlmPhase phase{.kind = PhaseKind::Prefill, .batch = batch, .seq_len = seq};
  const Graph one = build(c, phase);
  const Graph eight = build(c, phase, {.tp = 8});
  EXPECT_EQ(8 * flops_of_kind(eight, OpKind::Contraction), flops_of_kind(one, OpKind::Contraction));
  EXPECT_EQ(8 * flops_of_kind(eight, OpKind::Attention), flops_of_kind(one, OpKind::Attention));
  // Forward: two all-reduces per layer (after the output projection and the FFN down
  // projection), each of batch x seq x hidden x 2 bytes.
  EXPECT_EQ(collective_bytes(eight, Function::AllReduce, "L0."), 2 * batch * seq * 4096 * 2);
  EXPECT_EQ(collective_bytes(one, Function::AllReduce), 0u);
  // 32 layers x 2, and one after the vocabulary-parallel embedding.
  EXPECT_EQ(count(eight, Function::AllReduce), 32u * 2 + 1);
}

TEST(LlmBuilder, TensorParallelTrainingAllReducesBackwardToo) {
  const LlmConfig c = preset("llama2_7b");
  const Graph g = build(c, {.kind = PhaseKind::Training, .batch = 1, .seq_len = 128}, {.tp = 8});
  // Per layer: 2 forward (row-parallel outputs) + 2 backward (column-parallel inputs' gradients);
  // the embedding's forward one; the LM head input's gradient.
  EXPECT_EQ(count(g, Function::AllReduce), 32u * 4 + 1 + 1);
}

TEST(LlmBuilder, DataParallelAllReducesEveryGradient) {
  const LlmConfig c = preset("llama2_7b");
  const Graph g = build(c, {.kind = PhaseKind::Training, .batch = 1, .seq_len = 128},
                        {.tp = 2, .dp = 4});
  std::uint64_t dp_bytes = 0;
  for (const Op& op : g.ops)
    if (op.function == Function::AllReduce && std::get<CollectiveSpec>(op.attributes).ranks == 4)
      dp_bytes += tensor_bytes(op, TensorRole::Input).value;
  EXPECT_EQ(Bytes{dp_bytes}, total_bytes(g, TensorKind::Weight));  // this rank's shard
}

TEST(LlmBuilder, PipelineStageAndBubble) {
  const LlmConfig c = preset("llama2_7b");
  const LlmPhase phase{.kind = PhaseKind::Training, .batch = 8, .seq_len = 256};
  const Parallelism par{.pp = 4, .stage = 1, .micro_batches = 8};
  const Graph g = build(c, phase, par);
  // A middle stage: per micro-batch, recv the activation, send it on, recv its gradient, send
  // the gradient back.
  EXPECT_EQ(count(g, Function::SendRecv), 4u * 8);
  EXPECT_EQ(collective_bytes(g, Function::SendRecv, "mb3.recv"),
            1u * 256 * 4096 * 2 * 2);  // activation in, gradient in: 1 sequence x 256 x 4096 x 2 B
  const LlmStepStats s = llm_step_stats(c, phase, par);
  EXPECT_DOUBLE_EQ(s.pipeline_bubble_fraction, 3.0 / (8 + 3));
  EXPECT_EQ(s.first_layer, 8u);
  EXPECT_EQ(s.stage_layers, 8u);
  // No embedding or LM head on a middle stage: weights = 8 layers.
  EXPECT_EQ(total_elements(g, TensorKind::Weight), 8u * 202'383'360u);
}

TEST(LlmBuilder, LastStageWithTiedEmbeddingKeepsItsOwnHead) {
  const LlmConfig c = preset("gpt2_small");
  const Graph first = build(c, {.kind = PhaseKind::Training, .batch = 2, .seq_len = 64},
                            {.pp = 2, .stage = 0, .micro_batches = 2});
  const Graph last = build(c, {.kind = PhaseKind::Training, .batch = 2, .seq_len = 64},
                           {.pp = 2, .stage = 1, .micro_batches = 2});
  // 38,597,376 (wte) x 2 copies + wpe 786,432 + 12 layers x 7,087,872 + ln_f 1,536
  EXPECT_EQ(total_elements(first, TensorKind::Weight) + total_elements(last, TensorKind::Weight),
            124'439'808u + 38'597'376u);
}

// The experts run as one grouped GEMM per projection: stacked weights [experts][k][n] and rows
// [experts][rows][k], gemm_view's batch = the experts that run (fused MoE kernels: vLLM's
// fused_moe, SGLang, TensorRT-LLM), not one kernel per expert.
TEST(LlmBuilder, MoeExpertRows) {
  const LlmConfig c = preset("mixtral_8x7b");
  const auto view = [](const Graph& g, const std::string& name) {
    const Op* op = op_named(g, name);
    EXPECT_TRUE(op) << name;
    return op ? gemm_view(*op) : GemmView{};
  };
  const auto expect_view = [](const GemmView& v, std::uint64_t batch, std::uint64_t m,
                              std::uint64_t n, std::uint64_t k) {
    EXPECT_EQ(v.batch, batch);
    EXPECT_EQ(v.m, m);
    EXPECT_EQ(v.n, n);
    EXPECT_EQ(v.k, k);
  };
  // Tokens spread evenly: 128 tokens x top 2 / 8 experts = 32 rows per expert; hidden 4096, FFN
  // 14336.
  const Graph g = build(c, {.kind = PhaseKind::Prefill, .batch = 2, .seq_len = 64});
  expect_view(view(g, "L0.moe.experts.up"), 8, 32, 14336, 4096);
  expect_view(view(g, "L0.moe.experts.down"), 8, 32, 4096, 14336);
  EXPECT_FALSE(op_named(g, "L0.moe.expert0.up"));
  // Training, TP 2 (7168 FFN columns a rank), 64 tokens x 2 / 8 = 16 rows: the weight gradient
  // of the down projection is per expert too, dW[e] = X[e]^T dY[e]: [7168 x 16] x [16 x 4096].
  const Graph t = build(c, {.kind = PhaseKind::Training, .batch = 1, .seq_len = 64}, {.tp = 2});
  expect_view(view(t, "L0.moe.experts.down.dw"), 8, 7168, 4096, 16);
  expect_view(view(t, "L0.moe.experts.down.dx"), 8, 16, 7168, 4096);
  // Fewer assignments than experts: a decode step of one sequence sends its token to 2 of the 8
  // experts, so 2 run (one row each) and 6 do not: their weights, stacked apart, stay unread.
  // Qwen3-30B-A3B, 4 sequences x top 8 = 32 of its 128 experts. The MACs are the headline's
  // either way (one row per assignment), and every expert's weights are still in the graph.
  const Graph one = build(c, {.kind = PhaseKind::Decode, .batch = 1, .seq_len = 64});
  expect_view(view(one, "L0.moe.experts.up"), 2, 1, 14336, 4096);
  const auto weight_shape = [](const Graph& step, const std::string& name) {
    for (const auto& tensor : step.tensors)
      if (tensor.name == name) return tensor.shape;
    return std::vector<std::uint64_t>{};
  };
  EXPECT_EQ(weight_shape(one, "L0.experts.up.weight"),
            (std::vector<std::uint64_t>{2, 4096, 14336}));
  EXPECT_EQ(weight_shape(one, "L0.experts_unrouted.up.weight"),
            (std::vector<std::uint64_t>{6, 4096, 14336}));
  EXPECT_EQ(total_elements(one, TensorKind::Weight), llm_headline(c, 0).parameters);
  const LlmConfig qwen = preset("qwen3_30b_a3b");  // hidden 2048, experts' FFN 768
  expect_view(view(build(qwen, {.kind = PhaseKind::Decode, .batch = 4, .seq_len = 64}),
                   "L0.moe.experts.gate"),
              32, 1, 768, 2048);
}

// Qwen2-MoE's shared expert: one FFN of shared_ffn (5632, not 1 x 1408) beside the routed
// experts, scaled by sigmoid(x W_g): a [tokens x 1] GEMM, viewed as [tokens], its sigmoid, and
// a multiply broadcast over the hidden size, before the add. Under TP 2 the shared FFN splits
// its 5632 columns (2816 a rank); its backward runs in a training step.
TEST(LlmBuilder, Qwen2MoeSharedExpertAndItsGate) {
  const LlmConfig c = preset("qwen1p5_moe_a2p7b");
  const Graph g = build(c, {.kind = PhaseKind::Prefill, .batch = 1, .seq_len = 16});
  EXPECT_EQ(total_elements(g, TensorKind::Weight), llm_headline(c, 0).parameters);
  ASSERT_TRUE(op_named(g, "L0.moe.shared.up") && op_named(g, "L0.moe.shared.expert_gate"));
  EXPECT_EQ(gemm_view(*op_named(g, "L0.moe.shared.up")).n, 5632u);
  EXPECT_EQ(gemm_view(*op_named(g, "L0.moe.shared.expert_gate")).n, 1u);
  const Op* mul = op_named(g, "L0.moe.shared.expert_gate.mul");
  ASSERT_TRUE(mul);
  EXPECT_EQ(mul->space.accesses[1].shape, (std::vector<std::uint64_t>{16}));
  EXPECT_EQ(mul->tensors[1], op_named(g, "L0.moe.shared.expert_gate.sigmoid")->tensors.back());
  const Graph tp = build(c, {.kind = PhaseKind::Prefill, .batch = 1, .seq_len = 16}, {.tp = 2});
  EXPECT_EQ(gemm_view(*op_named(tp, "L0.moe.shared.up")).n, 2816u);
  const Graph t = build(c, {.kind = PhaseKind::Training, .batch = 1, .seq_len = 16});
  EXPECT_TRUE(op_named(t, "L0.moe.shared.expert_gate.sigmoid.dx"));
}

// DeepSeek-V2-Lite (MLA without a query latent: 16 heads, kv_lora_rank 512, qk_nope 128, qk_rope
// 64, v_head_dim 128; layer 0 dense, layers 1-26 with 64 routed experts of 1408, 6 a token, and
// 2 shared ones, 2816 together; hidden 2048).
//   Prefill of 2 x 32 tokens: q_proj [64 x 2048] x [2048 x 16*192 = 3072]; kv_a [2048 x 576];
//   kv_b [512 x 16*(128+128) = 4096]; one causal attention of 16 heads over 192 (Q K^T) and 128
//   (P V): MACs 2 x 16 x (32*33/2 = 528 pairs) x (192 + 128) = 5,406,720; the cache's rows 2 x
//   32 x 576 elements.
//   Decode of 2 sequences after 100 tokens (101 keys): the absorbed GEMMs batched over the 16
//   heads, q [2 x 128] x [128 x 512] and o [2 x 512] x [512 x 128]; one attention of the 16
//   heads over one KV head of 576 keys' dims and 512 values' dims: MACs 2 x 16 x 101 x (576 +
//   512) = 3,516,416; K and V are the same cache tensor [2][1][101][576].
//   Weights: the same in both phases (kv_b whole or as its key and value halves), the
//   parameter count; the first layer's FFN 10944 wide, the others' experts.
TEST(LlmBuilder, DeepSeekMultiHeadLatentAttention) {
  const LlmConfig c = preset("deepseek_v2_lite");
  const Graph prefill = build(c, {.kind = PhaseKind::Prefill, .batch = 2, .seq_len = 32});
  EXPECT_TRUE(verify(prefill).empty());
  const auto view = [](const Graph& g, const std::string& name) {
    const Op* op = op_named(g, name);
    EXPECT_TRUE(op) << name;
    return op ? gemm_view(*op) : GemmView{};
  };
  const GemmView q = view(prefill, "L1.q_proj");
  EXPECT_EQ(q.m, 64u);
  EXPECT_EQ(q.n, 3072u);
  EXPECT_EQ(view(prefill, "L1.kv_a").n, 576u);
  EXPECT_EQ(view(prefill, "L1.kv_b").k, 512u);
  EXPECT_EQ(view(prefill, "L1.kv_b").n, 4096u);
  EXPECT_EQ(view(prefill, "L0.ffn.up").n, 10944u);
  EXPECT_TRUE(op_named(prefill, "L1.moe.experts.up"));
  EXPECT_FALSE(op_named(prefill, "L0.moe.experts.up"));
  const Op* attention = op_named(prefill, "L1.attention");
  ASSERT_TRUE(attention);
  EXPECT_EQ(attention_value_dim(*attention), 128u);
  EXPECT_EQ(attention->space.dims[5].extent, 192u);
  EXPECT_EQ(mac_count(*attention), 5'406'720u);
  EXPECT_EQ(total_bytes(prefill, TensorKind::KvCache), Bytes{27ULL * 2 * 32 * 576 * 2});
  EXPECT_EQ(total_elements(prefill, TensorKind::Weight), llm_headline(c, 0).parameters);

  const Graph decode = build(c, {.kind = PhaseKind::Decode, .batch = 2, .seq_len = 100});
  EXPECT_TRUE(verify(decode).empty());
  const GemmView absorb = view(decode, "L1.q_absorb");
  EXPECT_EQ(absorb.batch, 16u);
  EXPECT_EQ(absorb.m, 2u);
  EXPECT_EQ(absorb.k, 128u);
  EXPECT_EQ(absorb.n, 512u);
  const GemmView out = view(decode, "L1.v_absorb");
  EXPECT_EQ(out.batch, 16u);
  EXPECT_EQ(out.k, 512u);
  EXPECT_EQ(out.n, 128u);
  const Op* latent = op_named(decode, "L1.attention");
  ASSERT_TRUE(latent);
  EXPECT_EQ(latent->space.dims[1].extent, 1u);   // one KV head
  EXPECT_EQ(latent->space.dims[2].extent, 16u);  // the 16 query heads over it
  EXPECT_EQ(latent->space.dims[5].extent, 576u);
  EXPECT_EQ(attention_value_dim(*latent), 512u);
  EXPECT_EQ(mac_count(*latent), 3'516'416u);
  EXPECT_EQ(latent->tensors[1], latent->tensors[2]);  // K and V: the cache's rows
  EXPECT_EQ(total_bytes(decode, TensorKind::KvCache), Bytes{27ULL * 2 * 101 * 576 * 2});
  EXPECT_EQ(total_elements(decode, TensorKind::Weight), llm_headline(c, 0).parameters);

  // TP 4: 4 heads a rank; the latent projections and the cache whole on every rank.
  const Graph tp = build(c, {.kind = PhaseKind::Decode, .batch = 2, .seq_len = 100}, {.tp = 4});
  EXPECT_EQ(view(tp, "L1.q_absorb").batch, 4u);
  EXPECT_EQ(view(tp, "L1.kv_a").n, 576u);
  EXPECT_EQ(total_bytes(tp, TensorKind::KvCache), Bytes{27ULL * 2 * 101 * 576 * 2});
  EXPECT_EQ(llm_step_stats(c, {.kind = PhaseKind::Decode, .batch = 2, .seq_len = 100}, {.tp = 4})
                .kv_cache_bytes_per_rank,
            Bytes{27ULL * 2 * 101 * 576 * 2});
}

// DeepSeek-V2-Lite's training step (the prefill form of MLA, above, with its backward), 2 x 32
// tokens: no KV cache; the attention's backward keeps the forward's dims (192 for Q K^T, 128 for
// the values) and twice its MACs, 2 x 5,406,720 = 10,813,440; kv_b's gradients are dX = dY W^T
// [64 x 4096] x [4096 x 512] and dW = X^T dY [512 x 64] x [64 x 4096]; and every matmul's
// backward is twice its forward (the step's MACs 3 x the forward's). Context parallelism 2 on 64
// tokens: each rank's 32 queries over all 64 keys, its K [2][16][32][192] and V [2][16][32][128]
// bf16 (393,216 and 262,144 B) all-gathered a layer.
TEST(LlmBuilder, DeepSeekMultiHeadLatentAttentionTrains) {
  const LlmConfig c = preset("deepseek_v2_lite");
  const Graph t = build(c, {.kind = PhaseKind::Training, .batch = 2, .seq_len = 32});
  EXPECT_TRUE(verify(t).empty());
  EXPECT_EQ(total_bytes(t, TensorKind::KvCache), Bytes{0});
  const Op* bwd = op_named(t, "L1.attention.bwd");
  ASSERT_TRUE(bwd);
  EXPECT_TRUE(std::get<AttentionSpec>(bwd->attributes).backward);
  EXPECT_EQ(attention_value_dim(*bwd), 128u);
  EXPECT_EQ(bwd->space.dims[5].extent, 192u);
  EXPECT_EQ(mac_count(*bwd), 10'813'440u);
  const Op* dx = op_named(t, "L1.kv_b.dx");
  const Op* dw = op_named(t, "L1.kv_b.dw");
  ASSERT_TRUE(dx && dw);
  EXPECT_EQ(gemm_view(*dx).m, 64u);
  EXPECT_EQ(gemm_view(*dx).n, 512u);
  EXPECT_EQ(gemm_view(*dx).k, 4096u);
  EXPECT_EQ(gemm_view(*dw).m, 512u);
  EXPECT_EQ(gemm_view(*dw).n, 4096u);
  EXPECT_EQ(gemm_view(*dw).k, 64u);
  std::uint64_t forward_macs = 0;
  for (const Op& op : t.ops) {
    if (op.name == "lm_head.dx") break;
    forward_macs += mac_count(op);
  }
  EXPECT_EQ(total_macs(t), 3 * forward_macs);

  const Graph split = build(c, {.kind = PhaseKind::Training, .batch = 2, .seq_len = 64}, {.cp = 2});
  EXPECT_TRUE(verify(split).empty());
  const Op* attention = op_named(split, "L1.attention");
  ASSERT_TRUE(attention);
  EXPECT_EQ(attention->space.dims[3].extent, 32u);  // q
  EXPECT_EQ(attention->space.dims[4].extent, 64u);  // kv
  EXPECT_EQ(std::get<AttentionSpec>(attention->attributes).context_parallel, 2u);
  const Op* k = op_named(split, "L1.cp_gather.k");
  const Op* v = op_named(split, "L1.cp_gather.v");
  ASSERT_TRUE(k && v);
  EXPECT_EQ(workload::tensor_bytes(*k, TensorRole::Input), Bytes{2ull * 16 * 32 * 192 * 2});
  EXPECT_EQ(workload::tensor_bytes(*v, TensorRole::Input), Bytes{2ull * 16 * 32 * 128 * 2});
}

// Parallel attention and FFN: Pythia-160M's (GPT-NeoX) norm2 reads the layer's input, not the
// attention's residual, and the layer output is (x + attention) + FFN; GPT-J has one LayerNorm,
// which feeds the QKV and the MLP's fc_in alike, and an LM head bias. Partial rotary: Pythia's
// RoPE multiplies 16 of each head's 64 dims (a view of Q), then puts them back beside the other 48
// (a concat); the rope table is [q_len][16]. A training step builds (its backward through both).
TEST(LlmBuilder, ParallelResidualAndPartialRotary) {
  const Graph neox =
      build(preset("pythia_160m"), {.kind = PhaseKind::Prefill, .batch = 1, .seq_len = 8});
  const Op* norm2 = op_named(neox, "L1.norm2");
  const Op* norm1 = op_named(neox, "L1.norm1");
  ASSERT_TRUE(norm1 && norm2);
  EXPECT_EQ(norm2->tensors[0], norm1->tensors[0]);  // both read the layer's input
  const Op* rope = op_named(neox, "L0.rope_q");
  ASSERT_TRUE(rope);
  EXPECT_EQ(rope->space.accesses[0].shape, (std::vector<std::uint64_t>{1, 12, 8, 16}));
  ASSERT_TRUE(op_named(neox, "L0.rope_q.concat"));
  EXPECT_EQ(op_named(neox, "L0.rope_q.concat")->function, Function::Concat);

  const Graph gptj =
      build(preset("gptj_6b"), {.kind = PhaseKind::Prefill, .batch = 1, .seq_len = 8});
  EXPECT_FALSE(op_named(gptj, "L0.norm2"));
  const Op* up = op_named(gptj, "L0.ffn.up");
  const Op* qkv = op_named(gptj, "L0.qkv");
  ASSERT_TRUE(up && qkv);
  EXPECT_EQ(up->tensors[0], qkv->tensors[0]);
  EXPECT_TRUE(op_named(gptj, "lm_head.bias"));
  const Graph train =
      build(preset("pythia_160m"), {.kind = PhaseKind::Training, .batch = 1, .seq_len = 8});
  EXPECT_TRUE(verify(train).empty());
  EXPECT_TRUE(op_named(train, "L0.rope_q.concat.bwd"));
}

// An encoder (BERT-base): bidirectional attention (no causal mask: every one of 16 x 16 pairs),
// no KV cache, the embeddings normed, each branch's norm after its residual add (norm1 reads
// residual1's output), no final norm and no LM head but the pooler over each sequence's first
// token: a [2 x 768] x [768 x 768] GEMM, its bias and tanh. Weights: the parameter count. TP 2
// splits its heads and FFN. Decoding or training it is an error.
TEST(LlmBuilder, EncoderIsBidirectionalWithAPooler) {
  const LlmConfig c = preset("bert_base");
  const Graph g = build(c, {.kind = PhaseKind::Prefill, .batch = 2, .seq_len = 16});
  EXPECT_TRUE(verify(g).empty());
  const Op* attention = op_named(g, "L0.attention");
  ASSERT_TRUE(attention);
  EXPECT_FALSE(std::get<AttentionSpec>(attention->attributes).causal);
  EXPECT_EQ(mac_count(*attention), 2u * 12 * 16 * 16 * 64 * 2);
  EXPECT_EQ(total_bytes(g, TensorKind::KvCache), Bytes{0});
  EXPECT_TRUE(op_named(g, "embed_norm"));
  const Op* norm1 = op_named(g, "L0.norm1");
  const Op* residual1 = op_named(g, "L0.residual1");
  ASSERT_TRUE(norm1 && residual1);
  EXPECT_EQ(norm1->tensors[0], residual1->tensors.back());
  EXPECT_FALSE(op_named(g, "final_norm"));
  EXPECT_FALSE(op_named(g, "lm_head"));
  ASSERT_TRUE(op_named(g, "pooler") && op_named(g, "pooler.tanh"));
  EXPECT_EQ(gemm_view(*op_named(g, "pooler")), (GemmView{.batch = 1, .m = 2, .n = 768, .k = 768}));
  EXPECT_EQ(total_elements(g, TensorKind::Weight), llm_headline(c, 0).parameters);
  const Graph tp = build(c, {.kind = PhaseKind::Prefill, .batch = 2, .seq_len = 16}, {.tp = 2});
  EXPECT_EQ(gemm_view(*op_named(tp, "L0.ffn.up")).n, 1536u);
  for (const PhaseKind kind : {PhaseKind::Decode, PhaseKind::Training}) {
    Diagnostics diags;
    EXPECT_FALSE(try_build_llm(c, {.kind = kind, .batch = 1, .seq_len = 16}, {}, diags));
    ASSERT_EQ(diags.error_count(), 1u) << diags.format_all();
    EXPECT_EQ(diags.all()[0].path, "phase.kind");
  }
}

TEST(LlmBuilder, BadParallelismIsADiagnostic) {
  const LlmConfig c = preset("llama3_8b");
  Diagnostics diags;
  EXPECT_FALSE(try_build_llm(c, {.kind = PhaseKind::Prefill}, {.tp = 3, .pp = 5, .stage = 5},
                             diags));
  // tp 3: heads, kv_heads and ffn; pp 5 does not divide 32 layers; stage 5 >= pp.
  EXPECT_EQ(diags.error_count(), 5u) << diags.format_all();
  EXPECT_EQ(diags.all()[0].path, "parallelism.tp");
  EXPECT_EQ(diags.all()[0].message, "tp 3 does not divide the 32 heads");

  Diagnostics more;
  EXPECT_FALSE(try_build_llm(preset("gpt2_small"),
                             {.kind = PhaseKind::Prefill, .batch = 3, .seq_len = 2048,
                              .recompute = true},
                             {.micro_batches = 2}, more));
  // micro-batches, recompute outside training, 2048 > 1024 learned positions
  EXPECT_EQ(more.error_count(), 3u) << more.format_all();
}

// ---- Runtime::HfTransformers: LlamaForCausalLM's eager ops
// ---------------------------------------

// Ops that launch a kernel: every op but the views (Reshape, Split), which move nothing.
std::size_t kernels(const Graph& g, const std::string& prefix = "") {
  std::size_t n = 0;
  for (const Op& op : g.ops)
    if (op.function != Function::Reshape && op.function != Function::Split &&
        has_prefix(op.name, prefix))
      ++n;
  return n;
}

std::uint64_t op_bytes(const Op& op) {
  return tensor_bytes(op, TensorRole::Input).value + tensor_bytes(op, TensorRole::Weight).value +
         tensor_bytes(op, TensorRole::Output).value;
}

LlmPhase hf(PhaseKind kind, std::uint64_t batch, std::uint64_t seq) {
  return {.kind = kind, .batch = batch, .seq_len = seq, .runtime = Runtime::HfTransformers};
}

TEST(LlmBuilderHf, KernelsAreTheModelingCodesPyTorchOps) {
  // Per layer (transformers' LlamaDecoderLayer): RMSNorm 8 (to fp32, pow, mean, + eps, rsqrt,
  // *, to bf16, weight *) twice = 16; q_proj, k_proj, v_proj 3; RoPE 5 (q * cos, -x2, cat,
  // * sin, +) for Q and for K = 10; DynamicCache's torch.cat of K and of V 2; SDPA 1; o_proj 1;
  // two residual adds 2; the MLP's gate, up, SiLU, * and down 5: 40. Per forward: the embedding
  // 1; the rotary table 9 (positions to fp32, the outer product, cat, cos, * scaling, sin,
  // * scaling, two casts); the final RMSNorm 8; the LM head 1; the argmax 1: 20.
  const LlmConfig c = preset("llama2_7b");
  for (const PhaseKind kind : {PhaseKind::Prefill, PhaseKind::Decode}) {
    const Graph g = build(c, hf(kind, 2, 64));
    EXPECT_EQ(kernels(g, "L0."), 40u) << to_string(kind);
    EXPECT_EQ(kernels(g, "L0.norm1."), 8u);
    EXPECT_EQ(kernels(g, "L0.rope_q."), 5u);
    EXPECT_EQ(kernels(g, "rotary."), 9u);
    EXPECT_EQ(kernels(g), 32u * 40u + 20u) << to_string(kind);
    // The same weights as the default runtime's graph (q, k and v as three matrices).
    EXPECT_EQ(total_elements(g, TensorKind::Weight), llm_headline(c, 0).parameters);
    // And the same matmul work: the decomposition adds no MACs, only elementwise passes.
    EXPECT_EQ(total_macs(g), total_macs(build(c, {.kind = kind, .batch = 2, .seq_len = 64})));
  }
  // Llama 3's grouped-query attention: SDPA's enable_gqa, so no repeat_kv copies.
  EXPECT_EQ(kernels(build(preset("llama3_8b"), hf(PhaseKind::Decode, 1, 64))), 32u * 40u + 20u);
}

TEST(LlmBuilderHf, RmsNormMovesItsTensorInFp32FourTimes) {
  // LlamaRMSNorm over x [t, h] bf16, bytes per element of x: to fp32 2 + 4; pow 4 + 4; mean
  // reads 4; x * rsqrt reads 4, writes 4; to bf16 4 + 2; weight * reads 2, writes 2: 36. Per
  // row (fp32 scalars): mean writes 4; + eps 4 + 4; rsqrt 4 + 4; the multiply reads 4: 24. And
  // the weight, h x 2. A fused RMSNorm kernel moves 4 bytes per element.
  const std::uint64_t t = 128, h = 4096;
  const Graph g = build(preset("llama2_7b"), hf(PhaseKind::Prefill, 1, t));
  std::uint64_t bytes = 0;
  for (const Op& op : g.ops)
    if (has_prefix(op.name, "L0.norm1.")) bytes += op_bytes(op);
  EXPECT_EQ(bytes, 36 * t * h + 24 * t + 2 * h);
}

TEST(LlmBuilderHf, DecodeCopiesTheWholeCacheIntoANewOne) {
  // DynamicLayer.update's torch.cat([cache, k], dim=-2) at context 64, batch 2, 32 KV heads of
  // 128, bf16: reads the 64 cached tokens and the new one, writes 65: 2 x 2*32*65*128*2 bytes.
  const Graph g = build(preset("llama2_7b"), hf(PhaseKind::Decode, 2, 64));
  for (const Op& op : g.ops)
    if (op.name == "L0.kv_cache.k.cat") {
      EXPECT_EQ(op.function, Function::Concat);
      EXPECT_EQ(op_bytes(op), 2u * (2 * 32 * 65 * 128 * 2));
      return;
    }
  ADD_FAILURE() << "no L0.kv_cache.k.cat";
}

TEST(LlmBuilderHf, OtherFamiliesPhasesAndLayoutsAreRefused) {
  const auto refused = [](const LlmConfig& c, const LlmPhase& phase, const Parallelism& par) {
    Diagnostics diags;
    EXPECT_FALSE(try_build_llm(c, phase, par, diags));
    return diags;
  };
  // GPT-2's modeling code is another (LayerNorm, learned positions, a GELU MLP, Conv1D biases).
  const Diagnostics gpt2 = refused(preset("gpt2_small"), hf(PhaseKind::Prefill, 1, 64), {});
  ASSERT_EQ(gpt2.error_count(), 1u) << gpt2.format_all();
  EXPECT_EQ(gpt2.all()[0].path, "phase.runtime");
  EXPECT_NE(gpt2.all()[0].message.find(
                "but gpt2_small has layer_norm, learned positions, gelu_mlp, biases"),
            std::string::npos)
      << gpt2.all()[0].message;
  // Experts, tensor parallelism.
  EXPECT_EQ(refused(preset("mixtral_8x7b"), hf(PhaseKind::Decode, 1, 64), {}).error_count(), 1u);
  EXPECT_EQ(refused(preset("llama2_7b"), hf(PhaseKind::Decode, 1, 64), {.tp = 2}).error_count(),
            1u);
}

LlmPhase hf_training(std::uint64_t batch, std::uint64_t seq) {
  return {.kind = PhaseKind::Training,
          .batch = batch,
          .seq_len = seq,
          .precision = Precision::Autocast,
          .runtime = Runtime::HfTransformers};
}

bool is_backward(const Op& op) { return op.name.find(".dx") != std::string::npos; }

// GPT2LMHeadModel trained eagerly under autocast: coda's autocast step plus what transformers'
// GPT-2 code launches beyond it.
TEST(LlmBuilderHf, Gpt2TrainingAddsItsDropoutsAndWrittenOutGelu) {
  const LlmConfig c = preset("gpt2_small");  // hidden_act gelu_new, dropout 0.1
  const std::uint64_t t = 128, h = 768, f = 3072;  // t: 2 sequences x 64 tokens
  const Graph g = build(c, hf_training(2, 64));
  // The same matmul work as the autocast step of the default runtime.
  EXPECT_EQ(total_macs(g), total_macs(build(c, {.kind = PhaseKind::Training,
                                                .batch = 2,
                                                .seq_len = 64,
                                                .precision = Precision::Autocast})));
  // nn.Dropout after the embeddings (GPT2Model.drop) and after each layer's attention and MLP
  // output projections (resid_dropout, dropout): 1 + 2 x 12, each writing y and a one-byte mask;
  // each backward reads dy and the mask and writes dx.
  std::size_t dropouts = 0, masked = 0;
  for (const Op& op : g.ops) {
    if (op.name.ends_with(".dropout")) {
      ++dropouts;
      ASSERT_EQ(op.space.accesses.size(), 3u) << op.name;
      EXPECT_EQ(op.space.accesses[2].dtype, DataType::Int8) << op.name;
    }
    if (op.name.ends_with(".dropout.dx")) ++masked;
  }
  EXPECT_EQ(dropouts, 25u);
  EXPECT_EQ(masked, 25u);
  // The embeddings' dropout over the fp32 residual stream [t, h] (autocast's fp32 tables): reads
  // 4 B, writes 4 B and the mask's 1 B an element. A branch's over its bf16 output: 2 + 2 + 1.
  for (const Op& op : g.ops) {
    if (op.name == "embed.dropout") {
      EXPECT_EQ(op_bytes(op), 9 * t * h);
    }
    if (op.name == "L0.attn.dropout") {
      EXPECT_EQ(op_bytes(op), 5 * t * h);
    }
  }
  // NewGELUActivation over the up projection's bf16 output [t, f], n = t x f elements, a kernel
  // per operator, bytes an element: autocast's cast to fp32 for pow 2 + 4; pow 4 + 4; * 0.044715
  // 4 + 4; x + that (bf16 + fp32 -> fp32) 2 + 4 + 4; * sqrt(2 / pi) 4 + 4; tanh 4 + 4; 1 + that
  // 4 + 4; 0.5 * x (bf16) 2 + 2; their product (bf16 x fp32 -> fp32) 2 + 4 + 4: 70, where one
  // GELU kernel moves 4.
  std::uint64_t gelu_ops = 0, gelu_bytes = 0;
  for (const Op& op : g.ops)
    if (has_prefix(op.name, "L0.ffn.gelu.") && !is_backward(op)) {
      ++gelu_ops;
      gelu_bytes += op_bytes(op);
    }
  EXPECT_EQ(gelu_ops, 9u);
  EXPECT_EQ(gelu_bytes, 70 * t * f);
  // pow's backward is PyTorch's pow_backward, 3 kernels: x.pow(2), 3 times it, dy times that.
  EXPECT_EQ(kernels(g, "L0.ffn.gelu.pow.dx"), 4u);  // and the gradient's cast to x's bf16
}

TEST(LlmBuilderHf, TrainingIsGpt2sUnderAutocast) {
  const auto refused = [](const LlmConfig& c, const LlmPhase& phase) {
    Diagnostics diags;
    EXPECT_FALSE(try_build_llm(c, phase, {}, diags));
    return diags;
  };
  // LLaMA's code is another (RMSNorm, rotary positions, SwiGLU, an untied LM head).
  const Diagnostics llama = refused(preset("llama2_7b"), hf_training(1, 64));
  ASSERT_EQ(llama.error_count(), 1u) << llama.format_all();
  EXPECT_EQ(llama.all()[0].path, "phase.runtime");
  EXPECT_NE(llama.all()[0].message.find("GPT2LMHeadModel"), std::string::npos);
  // Mixed precision is Megatron-LM's or FSDP's, not a Trainer's autocast.
  LlmPhase mixed = hf_training(1, 64);
  mixed.precision = Precision::Mixed;
  const Diagnostics mp = refused(preset("gpt2_small"), mixed);
  ASSERT_EQ(mp.error_count(), 1u) << mp.format_all();
  EXPECT_EQ(mp.all()[0].path, "phase.precision");
  // A GELU whose form the config does not state.
  LlmConfig unstated = preset("gpt2_small");
  unstated.gelu = GeluForm::Unstated;
  const Diagnostics form = refused(unstated, hf_training(1, 64));
  ASSERT_EQ(form.error_count(), 1u) << form.format_all();
  EXPECT_EQ(form.all()[0].path, "model.hidden_act");
  // A GELU computed as one kernel (F.gelu): one op a layer, as the default runtime has.
  LlmConfig erf = preset("gpt2_small");
  erf.gelu = GeluForm::Erf;
  Diagnostics diags;
  const auto g = try_build_llm(erf, hf_training(1, 64), {}, diags);
  ASSERT_TRUE(g) << diags.format_all();
  EXPECT_EQ(kernels(*g, "L0.ffn.gelu"), 2u);  // the GELU and its backward
}

}  // namespace
}  // namespace coda::workload::llm
