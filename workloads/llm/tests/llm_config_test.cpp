// The coda YAML form of an LLM config, and the headline numbers of known models checked against
// their published sizes.

#include <string>

#include <gtest/gtest.h>

#include "workloads/llm/llm_config.h"

namespace coda::workload::llm {
namespace {

std::optional<LlmConfig> parse(const std::string& text, Diagnostics& diags) {
  const auto doc = YamlDocument::parse(text, "model.yaml", diags);
  return doc ? read_llm_config(doc->root(), diags) : std::nullopt;
}

LlmConfig preset(const std::string& name) {
  Diagnostics diags;
  auto c = load_llm_config("configs/workloads/llm/" + name + ".yaml", diags);
  EXPECT_TRUE(c && diags.all().empty()) << name << "\n" << diags.format_all();
  return c ? *c : LlmConfig{};
}

constexpr const char* kTiny = R"(schema_version: 1
name: tiny
source: test
model:
  hidden: 64
  layers: 2
  heads: 4
  ffn: 256
  ffn_type: swiglu
  norm: rms_norm
  vocab: 100
  positions: rotary
  max_positions: 128
)";

TEST(LlmConfigYaml, ReadsDefaults) {
  Diagnostics diags;
  const auto c = parse(kTiny, diags);
  ASSERT_TRUE(c) << diags.format_all();
  EXPECT_EQ(c->kv_heads, 4u);   // default: heads (MHA)
  EXPECT_EQ(c->head_dim, 16u);  // default: hidden / heads = 64 / 4
  EXPECT_EQ(c->dtype, DataType::Bf16);
  EXPECT_EQ(c->ffn_type, FfnType::SwiGlu);
  EXPECT_FALSE(c->tied_embeddings);
  EXPECT_EQ(c->moe.experts, 0u);
}

// kTiny with `lines` after its last key.
std::string tiny_with(const std::string& lines) { return std::string(kTiny) + lines; }

TEST(LlmConfigYaml, ANegativeSoftCapIsAnErrorAtItsKey) {
  Diagnostics diags;
  EXPECT_FALSE(parse(tiny_with("  attention_softcap: 50\n  final_softcap: -1\n"), diags));
  ASSERT_EQ(diags.error_count(), 1u) << diags.format_all();
  EXPECT_EQ(diags.all()[0].path, "model.final_softcap");
  EXPECT_EQ(diags.all()[0].where.line, 15);
  EXPECT_EQ(diags.all()[0].message, "must be a positive cap (or 0: none), not -1");
}

// hidden_act names a GELU's form (transformers' names), for gelu_mlp and geglu FFNs only;
// dropout is a probability.
TEST(LlmConfigYaml, HiddenActAndDropoutAreCheckedAtTheirKeys) {
  Diagnostics diags;
  std::string gelu = tiny_with("  hidden_act: gelu_new\n  dropout: 0.1\n");
  gelu.replace(gelu.find("swiglu"), 6, "gelu_mlp");
  const auto c = parse(gelu, diags);
  ASSERT_TRUE(c) << diags.format_all();
  EXPECT_EQ(c->gelu, GeluForm::WrittenTanh);
  EXPECT_EQ(to_string(c->gelu), "gelu_new");
  EXPECT_EQ(c->dropout, 0.1);
  Diagnostics swiglu;
  EXPECT_FALSE(parse(tiny_with("  hidden_act: gelu\n"), swiglu));
  ASSERT_EQ(swiglu.error_count(), 1u) << swiglu.format_all();
  EXPECT_EQ(swiglu.all()[0].path, "model.hidden_act");
  EXPECT_EQ(swiglu.all()[0].message, "names a GELU (gelu), but ffn_type swiglu uses SiLU");
  Diagnostics unknown;
  EXPECT_FALSE(parse(tiny_with("  hidden_act: gelu_fast\n"), unknown));
  EXPECT_EQ(unknown.all().at(0).path, "model.hidden_act");
  Diagnostics one;
  EXPECT_FALSE(parse(tiny_with("  dropout: 1\n"), one));
  ASSERT_EQ(one.error_count(), 1u) << one.format_all();
  EXPECT_EQ(one.all()[0].path, "model.dropout");
  EXPECT_EQ(one.all()[0].message, "must be a probability in [0, 1), not 1");
}

// sliding_window_pattern 1 would make every layer global; a pattern needs a window.
TEST(LlmConfigYaml, ASlidingWindowPatternIsCheckedAtItsKey) {
  Diagnostics diags;
  EXPECT_FALSE(parse(tiny_with("  sliding_window: 64\n  sliding_window_pattern: 1\n"), diags));
  ASSERT_EQ(diags.error_count(), 1u) << diags.format_all();
  EXPECT_EQ(diags.all()[0].path, "model.sliding_window_pattern");
  EXPECT_EQ(diags.all()[0].where.line, 15);
  EXPECT_EQ(diags.all()[0].message, "1 makes every layer global, so no layer has a window");
  Diagnostics no_window;
  EXPECT_FALSE(parse(tiny_with("  sliding_window_pattern: 2\n"), no_window));
  ASSERT_EQ(no_window.error_count(), 1u) << no_window.format_all();
  EXPECT_EQ(no_window.all()[0].message, "needs a sliding_window");
  Diagnostics fine;
  const auto c = parse(tiny_with("  sliding_window: 64\n  sliding_window_pattern: 3\n"), fine);
  ASSERT_TRUE(c) << fine.format_all();
  // Layers 0 and 1 windowed, layer 2 global ((2 + 1) % 3 == 0).
  EXPECT_EQ(c->window_of(0), 64u);
  EXPECT_EQ(c->window_of(1), 64u);
  EXPECT_EQ(c->window_of(2), 0u);
}

TEST(LlmConfigYaml, UnknownKeyHasDidYouMeanAndLocation) {
  std::string text = kTiny;
  text.replace(text.find("  layers: 2"), 11, "  layers: 2\n  hiden: 3");
  Diagnostics diags;
  EXPECT_FALSE(parse(text, diags));
  ASSERT_EQ(diags.error_count(), 1u) << diags.format_all();
  const Diagnostic& d = diags.all()[0];
  EXPECT_EQ(d.path, "model.hiden");
  EXPECT_EQ(d.where.line, 7);  // the line after "layers: 2"
  EXPECT_EQ(d.where.column, 3);
  EXPECT_NE(d.message.find("did you mean"), std::string::npos) << d.message;
}

TEST(LlmConfigYaml, ZeroLayersIsLocated) {
  std::string text = kTiny;
  text.replace(text.find("layers: 2"), 9, "layers: 0");
  Diagnostics diags;
  EXPECT_FALSE(parse(text, diags));
  ASSERT_EQ(diags.error_count(), 1u) << diags.format_all();
  EXPECT_EQ(format(diags.all()[0]),
            "model.yaml:6:11: error: model.layers: must be at least 1, not 0");
}

TEST(LlmConfigYaml, RelationsBetweenSizes) {
  std::string text = kTiny;
  text.replace(text.find("heads: 4"), 8, "heads: 6\n  kv_heads: 4");
  Diagnostics diags;
  EXPECT_FALSE(parse(text, diags));
  ASSERT_EQ(diags.error_count(), 2u) << diags.format_all();
  EXPECT_EQ(diags.all()[0].path, "model.heads");
  EXPECT_NE(diags.all()[0].message.find("6 heads do not divide the hidden size 64"),
            std::string::npos);
  EXPECT_EQ(diags.all()[1].path, "model.kv_heads");
  EXPECT_NE(diags.all()[1].message.find("4 kv_heads do not divide the 6 attention heads"),
            std::string::npos);
}

TEST(LlmConfigYaml, MoeTopKAboveExperts) {
  const std::string text = std::string(kTiny) + "  moe: {experts: 4, top_k: 5}\n";
  Diagnostics diags;
  EXPECT_FALSE(parse(text, diags));
  ASSERT_EQ(diags.error_count(), 1u) << diags.format_all();
  EXPECT_EQ(diags.all()[0].path, "model.moe.top_k");
}

TEST(LlmConfigYaml, BadEnumListsChoices) {
  std::string text = kTiny;
  text.replace(text.find("norm: rms_norm"), 14, "norm: rmsnorm");
  Diagnostics diags;
  EXPECT_FALSE(parse(text, diags));
  ASSERT_EQ(diags.error_count(), 1u) << diags.format_all();
  EXPECT_EQ(diags.all()[0].path, "model.norm");
}

// Touvron et al. 2023 (Llama 2): 7B. Exact count from its config.json:
//   embed 32000*4096 = 131,072,000
//   32 layers * (4*4096^2 [q, k, v, o] + 3*4096*11008 [gate, up, down] + 2*4096 [two RMSNorms])
//     = 32 * (67,108,864 + 135,266,304 + 8,192) = 32 * 202,383,360 = 6,476,267,520
//   final norm 4096; lm_head 32000*4096 = 131,072,000
//   total 6,738,415,616
TEST(LlmHeadline, Llama2_7bParameters) {
  const LlmHeadline h = llm_headline(preset("llama2_7b"), 0);
  EXPECT_EQ(h.parameters, 6'738'415'616u);
  EXPECT_EQ(h.active_parameters, h.parameters);
  EXPECT_EQ(h.embedding_parameters, 262'144'000u);
}

// TinyLlama 1.1B (grouped-query: 4 KV heads of 64, untied), from its config.json:
//   embed 32000*2048 = 65,536,000; lm_head the same
//   22 layers * (2*2048^2 [q, o] + 2*2048*256 [k, v] + 3*2048*5632 [gate, up, down] + 2*2048)
//     = 22 * (8,388,608 + 1,048,576 + 34,603,008 + 4,096) = 22 * 44,044,288 = 968,974,336
//   final norm 2048; total 1,100,048,384 (the count Hugging Face gives the model)
TEST(LlmHeadline, TinyLlamaParameters) {
  const LlmHeadline h = llm_headline(preset("tinyllama_1p1b"), 0);
  EXPECT_EQ(h.parameters, 1'100'048'384u);
  EXPECT_EQ(h.embedding_parameters, 131'072'000u);
}

// The presets the edge LLM corpus names (validation/published/edge/rknn_llm_rk3588.csv), each
// against Hugging Face's count:
//   Qwen2-0.5B (tied, QKV bias): embedding 151936*896 = 136,134,656; a layer: q and o 896^2 x 2
//     = 1,605,632, k and v 896*128 x 2 = 229,376, biases 896 + 2*128 = 1,152, MLP 3*896*4864 =
//     13,074,432, two norms 1,792: 14,912,384, x 24 = 357,897,216; final norm 896:
//     494,032,768.
//   Qwen2.5-1.5B (tied, QKV bias): embedding 151936*1536 = 233,373,696; a layer: q and o
//     1536^2 x 2 = 4,718,592, k and v 1536*256 x 2 = 786,432, biases 1536 + 2*256 = 2,048, MLP
//     3*1536*8960 = 41,287,680, two norms 3,072: 46,797,824, x 28 = 1,310,339,072; final norm
//     1,536: 1,543,714,304 ("1.54B").
//   Phi-3-mini (untied): embedding and LM head 2*32064*3072 = 197,001,216; a layer: q, k, v, o
//     4*3072^2 = 37,748,736, MLP 3*3072*8192 = 75,497,472, two norms 6,144: 113,252,352, x 32 =
//     3,624,075,264; final norm 3,072: 3,821,079,552 ("3.8B").
TEST(LlmHeadline, EdgeCorpusPresetsParameters) {
  EXPECT_EQ(llm_headline(preset("qwen2_0p5b"), 0).parameters, 494'032'768u);
  EXPECT_EQ(llm_headline(preset("qwen2p5_1p5b"), 0).parameters, 1'543'714'304u);
  EXPECT_EQ(llm_headline(preset("phi3_mini_4k"), 0).parameters, 3'821'079'552u);
}

// Qwen3 (QK norm: one RMSNorm scale of head_dim on Q and one on K, every layer), each against
// its model card ("Number of Parameters", "(Non-Embedding)"):
//   Qwen3-0.6B (tied): embedding 151936*1024 = 155,582,464; a layer: q and o 1024*2048 x 2 =
//     4,194,304, k and v 1024*1024 x 2 = 2,097,152, MLP 3*1024*3072 = 9,437,184, two norms
//     2,048, q_norm and k_norm 2*128 = 256: 15,730,944, x 28 = 440,466,432; final norm 1,024:
//     non-embedding 440,467,456 ("0.44B"), total 596,049,920 ("0.6B").
//   Qwen3-8B (untied): embedding and LM head 2*151936*4096 = 1,244,659,712; a layer: q and o
//     4096^2 x 2 = 33,554,432, k and v 4096*1024 x 2 = 8,388,608, MLP 3*4096*12288 =
//     150,994,944, norms 8,192 + 256: 192,946,432, x 36 = 6,946,071,552; final norm 4,096:
//     non-embedding 6,946,075,648 ("6.95B"), total 8,190,735,360 ("8.2B").
//   Qwen3-30B-A3B (untied, 128 experts of 768, 8 a token): embedding and LM head
//     2*151936*2048 = 622,329,856; a layer: q and o 2048*4096 x 2 = 16,777,216, k and v
//     2048*512 x 2 = 2,097,152, norms 4,096 + 256, router 2048*128 = 262,144, experts
//     128*3*2048*768 = 603,979,776: 623,120,640, x 48 = 29,909,790,720; final norm 2,048:
//     non-embedding 29,909,792,768 ("29.9B"), total 30,532,122,624 ("30.5B"). Active: 8 experts
//     3*2048*768*8 = 37,748,736 a layer, so 56,889,600 x 48 = 2,730,700,800, + 2,048 +
//     622,329,856 = 3,353,032,704 ("3.3B activated").
TEST(LlmHeadline, Qwen3PresetsParameters) {
  const LlmHeadline small = llm_headline(preset("qwen3_0p6b"), 0);
  EXPECT_EQ(small.parameters, 596'049'920u);
  EXPECT_EQ(small.parameters - small.embedding_parameters, 440'467'456u);
  const LlmHeadline dense = llm_headline(preset("qwen3_8b"), 0);
  EXPECT_EQ(dense.parameters, 8'190'735'360u);
  EXPECT_EQ(dense.parameters - dense.embedding_parameters, 6'946'075'648u);
  const LlmHeadline moe = llm_headline(preset("qwen3_30b_a3b"), 0);
  EXPECT_EQ(moe.parameters, 30'532'122'624u);
  EXPECT_EQ(moe.parameters - moe.embedding_parameters, 29'909'792'768u);
  EXPECT_EQ(moe.active_parameters, 3'353'032'704u);
  // Qwen3-235B-A22B (the preset's header derives it): 235,093,634,560, of which 1,244,659,712
  // embeddings (the card's 234B non-embedding), 22,190,763,520 active.
  const LlmHeadline big = llm_headline(preset("qwen3_235b_a22b"), 0);
  EXPECT_EQ(big.parameters, 235'093'634'560u);
  EXPECT_EQ(big.parameters - big.embedding_parameters, 233'848'974'848u);
  EXPECT_EQ(big.active_parameters, 22'190'763'520u);
  // Without the QK norm the 0.6B model has 28 x 256 = 7,168 fewer.
  LlmConfig plain = preset("qwen3_0p6b");
  plain.qk_norm = false;
  EXPECT_EQ(llm_headline(plain, 0).parameters, 596'049'920u - 7'168u);
}

// GPT-OSS-120B (the preset's header derives it): 116,829,149,760 parameters (the card's 116.8B
// less the router's biases and the attention sinks, 6,912, which coda does not model), of which
// 2 x 201088 x 2880 = 1,158,266,880 embeddings; active a token 5,711,976,000 (4 of 128 experts).
TEST(LlmHeadline, GptOss120bParameters) {
  const LlmHeadline h = llm_headline(preset("gpt_oss_120b"), 0);
  EXPECT_EQ(h.parameters, 116'829'149'760u);
  EXPECT_EQ(h.embedding_parameters, 1'158'266'880u);
  EXPECT_EQ(h.active_parameters, 5'711'976'000u);
}

// Gemma 2 (tied embeddings, four RMSNorms a layer), each against Hugging Face's count:
//   2B: embedding 256000*2304 = 589,824,000; a layer: q and o 2304*2048 x 2 = 9,437,184, k and v
//     2304*1024 x 2 = 4,718,592, MLP 3*2304*9216 = 63,700,992, norms 4*2304 = 9,216:
//     77,865,984, x 26 = 2,024,515,584; final norm 2,304: 2,614,341,888.
//   9B: embedding 256000*3584 = 917,504,000; a layer: q and o 3584*4096 x 2 = 29,360,128, k and
//     v 3584*2048 x 2 = 14,680,064, MLP 3*3584*14336 = 154,140,672, norms 14,336: 198,195,200,
//     x 42 = 8,324,198,400; final norm 3,584: 9,241,705,984.
//   27B (head_dim 128): embedding 256000*4608 = 1,179,648,000; a layer: q and o 4608*4096 x 2 =
//     37,748,736, k and v 4608*2048 x 2 = 18,874,368, MLP 3*4608*36864 = 509,607,936, norms
//     18,432: 566,249,472, x 46 = 26,047,475,712; final norm 4,608: 27,227,128,320.
// Qwen1.5-MoE-A2.7B (Qwen2-MoE: untied, QKV biases, 60 routed experts of 1408, 4 a token, one
// shared expert of 5632 behind a sigmoid gate), against its model card's 14.3B and 2.7B:
//   embedding and LM head 2*151936*2048 = 622,329,856; a layer: q, k, v, o 4*2048^2 =
//   16,777,216, QKV biases 3*2048 = 6,144, two norms 4,096, router 2048*60 = 122,880, experts
//   60*3*2048*1408 = 519,045,120, shared expert 3*2048*5632 = 34,603,008, its gate 2,048:
//   570,560,512, x 24 = 13,693,452,288; final norm 2,048: 14,315,784,192. Active: 4 experts
//   34,603,008 instead of 60, so 86,118,400 a layer, x 24 = 2,066,841,600, + 2,048 +
//   622,329,856 = 2,689,173,504.
TEST(LlmHeadline, Qwen2MoeSharedExpertOfItsOwnSizeAndGate) {
  const LlmHeadline h = llm_headline(preset("qwen1p5_moe_a2p7b"), 0);
  EXPECT_EQ(h.parameters, 14'315'784'192u);
  EXPECT_EQ(h.active_parameters, 2'689'173'504u);
}

TEST(LlmConfigYaml, SharedExpertSettingsNeedSharedExperts) {
  Diagnostics diags;
  EXPECT_FALSE(parse(tiny_with("  moe: {experts: 4, top_k: 2, shared_ffn: 512}\n"), diags));
  ASSERT_EQ(diags.error_count(), 1u) << diags.format_all();
  EXPECT_EQ(diags.all()[0].path, "model.moe.shared_ffn");
  EXPECT_EQ(diags.all()[0].message, "shared_ffn and shared_gate need shared_experts");
}

TEST(LlmHeadline, Gemma2PresetsParameters) {
  EXPECT_EQ(llm_headline(preset("gemma2_2b"), 0).parameters, 2'614'341'888u);
  EXPECT_EQ(llm_headline(preset("gemma2_9b"), 0).parameters, 9'241'705'984u);
  EXPECT_EQ(llm_headline(preset("gemma2_27b"), 0).parameters, 27'227'128'320u);
  // Gemma 3 1B, by hand in hf_config_test.cpp (Gemma3WindowsFiveLayersInSix).
  EXPECT_EQ(llm_headline(preset("gemma3_1b"), 0).parameters, 999'885'952u);
}

// GPT-2 small as Hugging Face counts it (tied LM head):
//   wte 50257*768 = 38,597,376; wpe 1024*768 = 786,432
//   per layer: ln_1 2*768 = 1,536; c_attn 768*2304 + 2304 = 1,771,776; attn c_proj 768*768 + 768
//     = 590,592; ln_2 1,536; c_fc 768*3072 + 3072 = 2,362,368; mlp c_proj 3072*768 + 768 =
//     2,360,064; sum 7,087,872; x 12 = 85,054,464
//   ln_f 1,536
//   total 38,597,376 + 786,432 + 85,054,464 + 1,536 = 124,439,808
TEST(LlmHeadline, Gpt2SmallParameters) {
  EXPECT_EQ(llm_headline(preset("gpt2_small"), 0).parameters, 124'439'808u);
}

// Brown et al. 2020, Table 2.1: 175.0B parameters.
TEST(LlmHeadline, Gpt3Within1Percent) {
  const double params = static_cast<double>(llm_headline(preset("gpt3_175b"), 0).parameters);
  EXPECT_NEAR(params / 175e9, 1.0, 0.01) << params;
}

// Mistral AI's Mixtral announcement: 46.7B total, 12.9B active per token. By hand:
//   per layer: attention 4096*(4096 + 2*1024) + 4096*4096 = 41,943,040; norms 8,192;
//     router 4096*8 = 32,768; one expert 3*4096*14336 = 176,160,768
//   total  = 2*131,072,000 + 32*(41,943,040 + 8,192 + 32,768 + 8*176,160,768) + 4096
//          = 46,702,792,704
//   active = 2*131,072,000 + 32*(41,943,040 + 8,192 + 32,768 + 2*176,160,768) + 4096
//          = 12,879,925,248
TEST(LlmHeadline, MixtralTotalAndActive) {
  const LlmHeadline h = llm_headline(preset("mixtral_8x7b"), 0);
  EXPECT_EQ(h.parameters, 46'702'792'704u);
  EXPECT_EQ(h.active_parameters, 12'879'925'248u);
  EXPECT_NEAR(static_cast<double>(h.parameters) / 46.7e9, 1.0, 0.01);
  EXPECT_NEAR(static_cast<double>(h.active_parameters) / 12.9e9, 1.0, 0.01);
}

// DeepSeek-V3 (MLA, 3 dense layers then 58 with 256 experts of 2048, 8 a token, 1 shared):
//   a layer's attention: q_a 7168*1536 = 11,010,048, its norm 1,536, q_b 1536*128*192 =
//   37,748,736, kv_a 7168*576 = 4,128,768, its norm 512, kv_b 512*128*256 = 16,777,216, out
//   128*128*7168 = 117,440,512: 187,107,328 (matrices 187,105,280); two norms 14,336.
//   Dense layer: + 3*7168*18432 = 396,361,728: 583,483,392. MoE layer: + router 7168*256 =
//   1,835,008, experts 256*3*7168*2048 = 11,274,289,152, shared 44,040,192: 11,507,286,016.
//   Embedding and LM head 2*129280*7168 = 1,853,358,080, final norm 7,168. Total 3*583,483,392
//   + 58*11,507,286,016 + 1,853,358,080 + 7,168 = 671,026,404,352 ("671B"). Active: 9 of the
//   experts' FFNs, 396,361,728, so a MoE layer 585,318,400, total 37,552,282,624 ("37B").
// DeepSeek-V2-Lite (no query latent, 1 dense layer then 26 with 64 experts of 1408, 6 a token,
//   2 shared): attention q 2048*16*192 = 6,291,456, kv_a 2048*576 = 1,179,648, its norm 512,
//   kv_b 512*16*256 = 2,097,152, out 16*128*2048 = 4,194,304: 13,763,072; norms 4,096. Dense
//   layer + 3*2048*10944 = 67,239,936: 81,007,104. MoE layer + router 131,072, experts
//   64*3*2048*1408 = 553,648,128, shared 3*2048*2816 = 17,301,504: 584,847,872. Embedding and
//   LM head 2*102400*2048 = 419,430,400, final norm 2,048: 15,706,484,224 ("15.7B"); active: 6
//   experts 51,904,512, a MoE layer 83,104,256, total 2,661,150,208.
// The KV cache: the latent and the rotary key, 576 a layer a token: V3 61*576*2 = 70,272 bytes,
// V2-Lite 27*576*2 = 31,104 (bf16).
// Forward FLOPs of a V3 token at context 1000: matrices 61*187,105,280 + 3*396,361,728 +
//   58*(1,835,008 + 396,361,728) + 7168*129280 = 36,624,596,992, x 2 = 73,249,193,984;
//   attention 2*61*1000*128*(192 + 128) = 4,997,120,000.
TEST(LlmHeadline, DeepSeekPresets) {
  const LlmHeadline v3 = llm_headline(preset("deepseek_v3"), 1000);
  EXPECT_EQ(v3.parameters, 671'026'404'352u);
  EXPECT_EQ(v3.active_parameters, 37'552'282'624u);
  EXPECT_EQ(v3.kv_cache_bytes_per_token, Bytes{70'272});
  EXPECT_EQ(v3.forward_flops_per_token, 73'249'193'984u + 4'997'120'000u);
  const LlmHeadline lite = llm_headline(preset("deepseek_v2_lite"), 0);
  EXPECT_EQ(lite.parameters, 15'706'484'224u);
  EXPECT_EQ(lite.active_parameters, 2'661'150'208u);
  EXPECT_EQ(lite.kv_cache_bytes_per_token, Bytes{31'104});
}

// Parallel attention and FFN, partial rotary, LM head biases (LayerNorm: scale and shift):
//   Pythia-160M (GPT-NeoX: two LayerNorms a layer, biases everywhere, untied): a layer: norms
//     2*2*768 = 3,072, QKV 768*2304 + 2,304 = 1,771,776, dense 768*768 + 768 = 590,592, MLP
//     768*3072 + 3,072 + 3072*768 + 768 = 4,722,432: 7,087,872, x 12 = 85,054,464; final norm
//     1,536: non-embedding 85,056,000; embed_in and embed_out 2*50304*768 = 77,266,944: total
//     162,322,944 (the Pythia paper's Table 1: both).
//   Pythia-6.9B: a layer: norms 16,384, QKV 4096*12288 + 12,288 = 50,343,936, dense 16,781,312,
//     MLP 67,125,248 + 67,112,960: 201,379,840, x 32 = 6,444,154,880; final norm 8,192:
//     6,444,163,072 non-embedding; embeddings 2*50432*4096 = 413,138,944: 6,857,302,016 (Table 1).
//   GPT-J-6B (one LayerNorm a layer, no attention biases, an LM head bias): a layer: norm 8,192,
//     q, k, v, out 4*4096^2 = 67,108,864, MLP 4096*16384 + 16,384 + 16384*4096 + 4,096 =
//     134,238,208: 201,355,264, x 28 = 5,637,947,392; final norm 8,192; wte 50400*4096 =
//     206,438,400, LM head the same + 50,400 bias: 6,050,882,784.
//   Falcon-7B (multi-query: K and V one head of 64; one LayerNorm; no biases; tied): a layer:
//     norm 9,088, QKV 4544*(71*64 + 2*64) = 21,229,568, dense 4544^2 = 20,647,936, MLP
//     2*4544*18176 = 165,183,488: 207,070,080, x 32 = 6,626,242,560; final norm 9,088;
//     embedding 65024*4544 = 295,469,056: 6,921,720,704 ("7B").
//   Phi-2 (one LayerNorm, every linear biased, an LM head bias): a layer: norm 5,120, q, k, v,
//     dense 4*2560^2 + 4*2560 = 26,224,640, MLP 2560*10240 + 10,240 + 10240*2560 + 2,560 =
//     52,441,600: 78,671,360, x 32 = 2,517,483,520; final norm 5,120; embedding 51200*2560 =
//     131,072,000, LM head the same + 51,200: 2,779,683,840 (the card's 2.7B).
TEST(LlmHeadline, ParallelResidualFamilies) {
  const LlmHeadline pythia = llm_headline(preset("pythia_160m"), 0);
  EXPECT_EQ(pythia.parameters, 162'322'944u);
  EXPECT_EQ(pythia.parameters - pythia.embedding_parameters, 85'056'000u);
  const LlmHeadline big = llm_headline(preset("pythia_6p9b"), 0);
  EXPECT_EQ(big.parameters, 6'857'302'016u);
  EXPECT_EQ(big.parameters - big.embedding_parameters, 6'444'163'072u);
  EXPECT_EQ(llm_headline(preset("gptj_6b"), 0).parameters, 6'050'882'784u);
  EXPECT_EQ(llm_headline(preset("falcon_7b"), 0).parameters, 6'921'720'704u);
  EXPECT_EQ(llm_headline(preset("phi2"), 0).parameters, 2'779'683'840u);
}

// Encoders (post-norm layers, learned positions and token types, every linear biased, the
// embeddings normed, BertModel's pooler, no LM head):
//   BERT-base: embeddings 30522*768 + 512*768 + 2*768 = 23,835,648 and their norm 1,536; a layer:
//     q, k, v 3*(768^2 + 768) = 1,771,776, out 590,592, norms 2*1,536, MLP 768*3072 + 3,072 +
//     3072*768 + 768 = 4,722,432: 7,087,872, x 12 = 85,054,464; pooler 768^2 + 768 = 590,592:
//     109,482,240 (BertModel's count in transformers).
//   BERT-large: embeddings 30522*1024 + 512*1024 + 2*1024 = 31,780,864, norm 2,048; a layer:
//     3*(1024^2 + 1024) + 1,049,600 + 4,096 + 1024*4096 + 4,096 + 4096*1024 + 1,024 =
//     12,596,224, x 24 = 302,309,376; pooler 1,049,600: 335,141,888.
//   RoBERTa-base: embeddings 50265*768 + 514*768 + 768 = 39,000,576 with their norm 1,536;
//     layers as BERT-base 85,054,464; pooler 590,592: 124,645,632 (RobertaModel's).
// No KV cache; a token's forward FLOPs without an LM head: BERT-base 2*12*(4*768^2 +
// 2*768*3072) = 169,869,312 at context 0.
TEST(LlmHeadline, EncoderPresets) {
  const LlmHeadline base = llm_headline(preset("bert_base"), 0);
  EXPECT_EQ(base.parameters, 109'482'240u);
  EXPECT_EQ(base.kv_cache_bytes_per_token, Bytes{0});
  EXPECT_EQ(base.forward_flops_per_token, 169'869'312u);
  EXPECT_EQ(llm_headline(preset("bert_large"), 0).parameters, 335'141'888u);
  EXPECT_EQ(llm_headline(preset("roberta_base"), 0).parameters, 124'645'632u);
}

TEST(LlmConfigYaml, ParallelResidualAndRotaryDimRules) {
  Diagnostics diags;
  EXPECT_FALSE(parse(tiny_with("  shared_norm: true\n"), diags));
  ASSERT_EQ(diags.error_count(), 1u) << diags.format_all();
  EXPECT_EQ(diags.all()[0].path, "model.shared_norm");
  Diagnostics odd;  // kTiny's heads are 16 dims
  EXPECT_FALSE(parse(tiny_with("  rotary_dim: 5\n"), odd));
  ASSERT_EQ(odd.error_count(), 1u) << odd.format_all();
  EXPECT_EQ(odd.all()[0].path, "model.rotary_dim");
  Diagnostics experts;  // BERT's post-norm layers have a dense FFN
  EXPECT_FALSE(parse(tiny_with("  post_norm: true\n  moe: {experts: 4, top_k: 2}\n"), experts));
  ASSERT_EQ(experts.error_count(), 1u) << experts.format_all();
  EXPECT_EQ(experts.all()[0].path, "model.post_norm");
  Diagnostics fine;
  const auto c = parse(tiny_with("  parallel_residual: true\n  rotary_dim: 4\n"), fine);
  ASSERT_TRUE(c) << fine.format_all();
  EXPECT_TRUE(c->parallel_residual);
  EXPECT_EQ(c->rotary_dim, 4u);
}

TEST(LlmConfigYaml, MlaDefaultsAndRules) {
  Diagnostics diags;
  const std::string mla =
      "  mla: {kv_lora_rank: 32, qk_nope_head_dim: 16, qk_rope_head_dim: 8, v_head_dim: 16}\n";
  const auto c = parse(tiny_with(mla), diags);
  ASSERT_TRUE(c) << diags.format_all();
  EXPECT_EQ(c->head_dim, 24u);  // qk_nope + qk_rope
  EXPECT_EQ(c->kv_heads, 4u);
  EXPECT_EQ(c->value_dim(), 16u);
  EXPECT_EQ(c->mla.latent(), 40u);
  // Grouped KV heads are not MLA's.
  EXPECT_FALSE(parse(tiny_with("  kv_heads: 2\n" + mla), diags));
  ASSERT_EQ(diags.error_count(), 1u) << diags.format_all();
  EXPECT_EQ(diags.all()[0].path, "model.kv_heads");
  // Head dims without a latent.
  Diagnostics partial;
  EXPECT_FALSE(parse(tiny_with("  mla: {kv_lora_rank: 0, qk_nope_head_dim: 16, "
                               "qk_rope_head_dim: 8, v_head_dim: 16}\n"),
                     partial));
  ASSERT_EQ(partial.error_count(), 1u) << partial.format_all();
  EXPECT_EQ(partial.all()[0].path, "model.mla.kv_lora_rank");
  // Dense layers leaving no layer to the experts (kTiny has 2 layers).
  Diagnostics dense;
  EXPECT_FALSE(parse(tiny_with("  moe: {experts: 4, top_k: 2, first_dense_layers: 2}\n"), dense));
  ASSERT_EQ(dense.error_count(), 1u) << dense.format_all();
  EXPECT_EQ(dense.all()[0].path, "model.moe.first_dense_layers");
}

// 2 (K and V) x layers x kv_heads x head_dim x 2 bytes (bf16):
//   LLaMA-2-7B: 2*32*32*128*2 = 524,288; LLaMA-3-8B (8 kv heads): 2*32*8*128*2 = 131,072.
TEST(LlmHeadline, KvCacheBytesPerToken) {
  EXPECT_EQ(llm_headline(preset("llama2_7b"), 0).kv_cache_bytes_per_token, Bytes{524'288});
  EXPECT_EQ(llm_headline(preset("llama3_8b"), 0).kv_cache_bytes_per_token, Bytes{131'072});
}

// Forward FLOPs per token (the hand formula of llm_headline), LLaMA-2-7B at context 1000:
//   matmul weights one token uses: 32*(4*4096^2 + 3*4096*11008) + 4096*32000 (LM head)
//     = 6,476,005,376 + 131,072,000 = 6,607,077,376 -> x2 = 13,214,154,752
//   attention: 4 * 32 layers * 1000 * 4096 = 524,288,000
TEST(LlmHeadline, ForwardFlopsPerToken) {
  EXPECT_EQ(llm_headline(preset("llama2_7b"), 1000).forward_flops_per_token,
            13'214'154'752u + 524'288'000u);
}

}  // namespace
}  // namespace coda::workload::llm
