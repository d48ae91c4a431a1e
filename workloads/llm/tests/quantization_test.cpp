// Inference quantization (quantization.h): scheme names, the types the builder gives weights,
// GEMM inputs and the KV cache, the bytes that follow (derived by hand), and the errors.

#include <string>

#include <gtest/gtest.h>

#include "workloads/llm/llm_builder.h"
#include "workloads/llm/tests/llm_test_support.h"
#include "workloads/llm/quantization.h"

namespace coda::workload::llm {
namespace {

using testing::build;
using testing::preset;

Quantization scheme(const std::string& text) {
  std::string error;
  const std::optional<Quantization> q = parse_quantization(text, error);
  EXPECT_TRUE(q.has_value()) << error;
  return q.value_or(Quantization{});
}

const Tensor& tensor_named(const Graph& g, const std::string& name) {
  for (const Tensor& t : g.tensors)
    if (t.name == name) return t;
  ADD_FAILURE() << "no tensor " << name;
  static const Tensor none;
  return none;
}

const Op& op_named(const Graph& g, const std::string& name) {
  for (const Op& op : g.ops)
    if (op.name == name) return op;
  ADD_FAILURE() << "no op " << name;
  static const Op none;
  return none;
}

TEST(Quantization, SchemesByName) {
  EXPECT_FALSE(scheme("none").any());
  EXPECT_EQ(scheme("w8a16"), (Quantization{.weights = DataType::Int8}));
  EXPECT_EQ(scheme("w4a16"), (Quantization{.weights = DataType::Int4, .group = 128}));
  EXPECT_EQ(scheme("w4a16:g64"), (Quantization{.weights = DataType::Int4, .group = 64}));
  EXPECT_EQ(scheme("w8a8"),
            (Quantization{.weights = DataType::Int8, .activations = DataType::Int8}));
  EXPECT_EQ(scheme("fp8"),
            (Quantization{.weights = DataType::Fp8E4M3, .activations = DataType::Fp8E4M3}));
  for (const char* name : {"none", "w8a16", "w4a16:g128", "w4a16:g32", "w8a8", "fp8"})
    EXPECT_EQ(scheme_name(scheme(name)), name);
  std::string error;
  for (const char* bad : {"w4a16:g0", "w4a16:g", "w4a16:64", "w4a16:g12x", "int4", "W8A16", ""}) {
    EXPECT_FALSE(parse_quantization(bad, error).has_value()) << bad;
    EXPECT_FALSE(error.empty());
  }
  EXPECT_NE(error.find("w8a16"), std::string::npos) << error;  // names the valid schemes
}

// LLaMA-2-7B's weights: every linear layer's (qkv 4096 x 12288, out 4096 x 4096, gate, up and
// down 3 x 4096 x 11008 = 202,375,168 a layer, x 32 layers = 6,476,005,376), the embedding and
// LM head (2 x 32000 x 4096 = 262,144,000) and the norms (65 x 4096 = 266,240): 6,738,415,616.
TEST(Quantization, WeightBytesByScheme) {
  const LlmConfig c = preset("llama2_7b");
  const std::uint64_t linear = 6'476'005'376, rest = 262'144'000 + 266'240;
  const LlmPhase decode{.kind = PhaseKind::Decode, .batch = 1, .seq_len = 16};
  EXPECT_EQ(total_bytes(build(c, decode), TensorKind::Weight), Bytes{2 * (linear + rest)});
  LlmPhase q = decode;
  q.quant = scheme("w8a16");  // a byte a linear weight, the rest in bf16
  EXPECT_EQ(total_bytes(build(c, q), TensorKind::Weight), Bytes{linear + 2 * rest});
  q.quant = scheme("fp8");
  EXPECT_EQ(total_bytes(build(c, q), TensorKind::Weight), Bytes{linear + 2 * rest});
  // Half a byte a linear weight and a bf16 scale per 128 of them.
  q.quant = scheme("w4a16");
  EXPECT_EQ(total_bytes(build(c, q), TensorKind::Weight),
            Bytes{linear / 2 + linear / 128 * 2 + 2 * rest});
  // The parameter count does not change: the scales are extra.
  const Graph g = build(c, q);
  EXPECT_EQ(total_elements(g, TensorKind::Weight), linear + rest + linear / 128);
}

TEST(Quantization, TypesOfWeightsInputsAndCache) {
  const LlmConfig c = preset("llama2_7b");
  LlmPhase phase{.kind = PhaseKind::Decode, .batch = 2, .seq_len = 100};
  phase.quant = scheme("fp8");
  phase.quant.kv_cache = DataType::Fp8E4M3;
  const Graph g = build(c, phase);
  const DataType fp8 = DataType::Fp8E4M3, bf16 = DataType::Bf16;
  // The linear layers read fp8 weights and fp8 inputs and write bf16.
  for (const char* name : {"L0.qkv", "L0.out", "L0.ffn.gate", "L0.ffn.up", "L0.ffn.down"}) {
    const Op& op = op_named(g, name);
    ASSERT_EQ(op.space.accesses.size(), 3u) << name;
    EXPECT_EQ(op.space.accesses[0].dtype, fp8) << name;
    EXPECT_EQ(op.space.accesses[1].dtype, fp8) << name;
    EXPECT_EQ(op.space.accesses[2].dtype, bf16) << name;
  }
  // The ops that write those inputs write fp8 (the quantization fused into them) ...
  EXPECT_EQ(tensor_named(g, "L0.norm1.out").dtype, fp8);
  EXPECT_EQ(tensor_named(g, "L0.norm2.out").dtype, fp8);
  EXPECT_EQ(tensor_named(g, "L0.merge_heads.out").dtype, fp8);
  EXPECT_EQ(tensor_named(g, "L0.ffn.mul.out").dtype, fp8);
  EXPECT_EQ(op_named(g, "L0.norm1").space.accesses.back().dtype, fp8);
  // ... and the residual stream, the attention and the LM head stay in bf16.
  EXPECT_EQ(tensor_named(g, "L0.residual1.out").dtype, bf16);
  EXPECT_EQ(tensor_named(g, "L0.attention.out").dtype, bf16);
  EXPECT_EQ(tensor_named(g, "final_norm.out").dtype, bf16);
  EXPECT_EQ(tensor_named(g, "lm_head.weight").dtype, bf16);
  EXPECT_EQ(tensor_named(g, "embed.weight").dtype, bf16);
  // The KV cache in fp8: half of 524,288 B a token (llm_config_test) x 2 sequences x 101.
  EXPECT_EQ(total_bytes(g, TensorKind::KvCache), Bytes{262'144ULL * 2 * 101});
  EXPECT_EQ(llm_step_stats(c, phase, {}).kv_cache_bytes, Bytes{262'144ULL * 2 * 101});
  EXPECT_EQ(kv_cache_bytes_per_token(c, phase.quant), Bytes{262'144});
  EXPECT_EQ(op_named(g, "L0.attention").space.accesses[1].dtype, fp8);   // K
  EXPECT_EQ(op_named(g, "L0.attention").space.accesses[0].dtype, bf16);  // Q
}

// A grouped weight: the GEMM's reduction split in k / group x group, the scales its third access;
// the MACs and gemm_view are those of the plain GEMM.
TEST(Quantization, GroupedGemmKeepsItsShape) {
  const LlmConfig c = preset("llama2_7b");
  LlmPhase phase{.kind = PhaseKind::Prefill, .batch = 1, .seq_len = 8};
  const Graph plain = build(c, phase);
  phase.quant = scheme("w4a16:g64");
  const Graph g = build(c, phase, {.tp = 2});
  const Op& down = op_named(g, "L0.ffn.down");
  ASSERT_EQ(down.space.accesses.size(), 4u);
  EXPECT_EQ(down.space.accesses[1].dtype, DataType::Int4);
  EXPECT_EQ(down.space.accesses[2].role, TensorRole::Weight);
  // The down projection's input on a TP-2 rank: 11008 / 2 = 5504 = 86 x 64.
  EXPECT_EQ(down.space.accesses[2].shape, (std::vector<std::uint64_t>{86, 4096}));
  const GemmView view = gemm_view(down);
  EXPECT_EQ(view.m, 8u);
  EXPECT_EQ(view.n, 4096u);
  EXPECT_EQ(view.k, 5504u);
  EXPECT_EQ(2 * mac_count(down), mac_count(op_named(plain, "L0.ffn.down")));
  // Inputs stay bf16 under a weight-only scheme.
  EXPECT_EQ(tensor_named(g, "L0.norm1.out").dtype, DataType::Bf16);
}

// FP8 context FMHA: a prefill's attention reads Q in fp8 (written so by RoPE) and K and V from the
// fp8 cache, so it computes in fp8; a decode's keeps Q in bf16.
TEST(Quantization, Fp8ContextAttention) {
  const LlmConfig c = preset("llama2_7b");
  Quantization q = scheme("fp8");
  q.kv_cache = q.context_attention = DataType::Fp8E4M3;
  const Graph prefill =
      build(c, {.kind = PhaseKind::Prefill, .batch = 1, .seq_len = 64, .quant = q});
  const Op& attention = op_named(prefill, "L0.attention");
  for (std::size_t i = 0; i < 3; ++i)
    EXPECT_EQ(attention.space.accesses[i].dtype, DataType::Fp8E4M3);
  EXPECT_EQ(attention.space.accesses[3].dtype, DataType::Bf16);  // O
  EXPECT_EQ(tensor_named(prefill, "L0.rope_q.out").dtype, DataType::Fp8E4M3);
  const Graph decode = build(c, {.kind = PhaseKind::Decode, .batch = 1, .seq_len = 64, .quant = q});
  EXPECT_EQ(op_named(decode, "L0.attention").space.accesses[0].dtype, DataType::Bf16);
}

TEST(Quantization, Errors) {
  const LlmConfig c = preset("gpt2_small");
  const auto error_path = [&](LlmPhase phase, const LlmConfig& model = {}) {
    Diagnostics diags;
    EXPECT_FALSE(check_llm_build(model.hidden > 0 ? model : c, phase, {}, diags));
    return diags.all().empty() ? std::string() : diags.all().front().path;
  };
  LlmPhase training{.kind = PhaseKind::Training, .batch = 1, .seq_len = 16};
  training.quant = scheme("fp8");
  EXPECT_EQ(error_path(training), "phase.quant");
  // GPT-2 small's hidden size 768 is not a multiple of 512.
  LlmPhase prefill{.kind = PhaseKind::Prefill, .batch = 1, .seq_len = 16};
  prefill.quant = scheme("w4a16:g512");
  EXPECT_EQ(error_path(prefill), "phase.quant.group");
  prefill.quant = Quantization{.kv_cache = DataType::Int4};
  EXPECT_EQ(error_path(prefill), "phase.quant.kv_cache");
  // An int8 model has nothing to gain from int8 weights.
  LlmConfig int8 = c;
  int8.dtype = DataType::Int8;
  prefill.quant = scheme("w8a16");
  EXPECT_EQ(error_path(prefill, int8), "phase.quant.weights");
  // The default group, 128, divides 768 and 3072: GPT-2 small builds.
  prefill.quant = scheme("w4a16");
  build(c, prefill);
}

}  // namespace
}  // namespace coda::workload::llm
