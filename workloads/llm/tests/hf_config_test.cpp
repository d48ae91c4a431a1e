// Reading Hugging Face config.json files (written by the test under $CODA_BINARY_DIR/test_tmp).

#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "testing/temp_dir.h"
#include "workloads/llm/hf_config.h"

namespace coda::workload::llm {
namespace {

// The shape of meta-llama/Llama-2-7b-hf's config.json, with keys coda ignores left in.
constexpr const char* kLlama = R"({
  "_name_or_path": "meta-llama/Llama-2-7b-hf",
  "architectures": ["LlamaForCausalLM"],
  "bos_token_id": 1,
  "hidden_act": "silu",
  "hidden_size": 4096,
  "initializer_range": 0.02,
  "intermediate_size": 11008,
  "max_position_embeddings": 4096,
  "model_type": "llama",
  "num_attention_heads": 32,
  "num_hidden_layers": 32,
  "num_key_value_heads": 32,
  "rms_norm_eps": 1e-05,
  "rope_scaling": null,
  "rope_theta": 10000.0,
  "tie_word_embeddings": false,
  "torch_dtype": "float16",
  "vocab_size": 32000
}
)";

// The shape of openai-community/gpt2's config.json.
constexpr const char* kGpt2 = R"({
  "activation_function": "gelu_new",
  "architectures": ["GPT2LMHeadModel"],
  "layer_norm_epsilon": 1e-05,
  "model_type": "gpt2",
  "n_ctx": 1024,
  "n_embd": 768,
  "n_head": 12,
  "n_inner": null,
  "n_layer": 12,
  "n_positions": 1024,
  "task_specific_params": {"text-generation": {"do_sample": true, "max_length": 50}},
  "vocab_size": 50257
}
)";

std::optional<LlmConfig> load(const std::string& text, Diagnostics& diags) {
  const testing::TempDir dir;
  return load_hf_config(dir.write("config.json", text), diags);
}

// The one error `text` gives: a failure when it loads, or gives another number of errors.
Diagnostic only_error(const std::string& text) {
  Diagnostics diags;
  EXPECT_FALSE(load(text, diags));
  EXPECT_EQ(diags.error_count(), 1u) << diags.format_all();
  return diags.error_count() > 0 ? diags.all()[0] : Diagnostic{};
}

std::string replace(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

TEST(HfConfig, NumberBeyondADoubleIsAnErrorNotACrash) {
  // nlohmann throws out_of_range, not parse_error, for 1e400 (found by fuzz/hf_config_fuzz).
  Diagnostics diags;
  EXPECT_FALSE(parse_hf_config("{\"hidden_size\": 1e400}", "config.json", diags));
  ASSERT_EQ(diags.error_count(), 1u);
  EXPECT_EQ(format(diags.all()[0]).rfind("config.json:1:1: error: not valid JSON", 0), 0u);
}

TEST(HfConfig, LlamaStyle) {
  Diagnostics diags;
  const auto c = load(kLlama, diags);
  ASSERT_TRUE(c) << diags.format_all();
  EXPECT_TRUE(diags.all().empty());
  EXPECT_EQ(c->name, "meta-llama/Llama-2-7b-hf");
  EXPECT_EQ(c->hidden, 4096u);
  EXPECT_EQ(c->layers, 32u);
  EXPECT_EQ(c->heads, 32u);
  EXPECT_EQ(c->kv_heads, 32u);
  EXPECT_EQ(c->head_dim, 128u);
  EXPECT_EQ(c->ffn, 11008u);
  EXPECT_EQ(c->ffn_type, FfnType::SwiGlu);
  EXPECT_EQ(c->norm, NormType::RmsNorm);
  EXPECT_EQ(c->positions, PositionEncoding::Rotary);
  EXPECT_EQ(c->vocab, 32000u);
  EXPECT_EQ(c->max_positions, 4096u);
  EXPECT_FALSE(c->tied_embeddings);
  EXPECT_EQ(c->dtype, DataType::Fp16);
  EXPECT_EQ(llm_headline(*c, 0).parameters, 6'738'415'616u);  // as the YAML preset
}

TEST(HfConfig, MixtralExperts) {
  Diagnostics diags;
  const auto c = load(replace(replace(kLlama, "\"num_key_value_heads\": 32",
                                      "\"num_key_value_heads\": 8"),
                              "\"vocab_size\": 32000",
                              "\"vocab_size\": 32000, \"num_local_experts\": 8, "
                              "\"num_experts_per_tok\": 2"),
                      diags);
  ASSERT_TRUE(c) << diags.format_all();
  EXPECT_EQ(c->kv_heads, 8u);
  EXPECT_EQ(c->moe.experts, 8u);
  EXPECT_EQ(c->moe.top_k, 2u);
}

TEST(HfConfig, Gpt2Style) {
  Diagnostics diags;
  const auto c = load(kGpt2, diags);
  ASSERT_TRUE(c) << diags.format_all();
  EXPECT_EQ(c->hidden, 768u);
  EXPECT_EQ(c->ffn, 3072u);  // n_inner null: 4 x n_embd
  EXPECT_EQ(c->head_dim, 64u);
  EXPECT_EQ(c->ffn_type, FfnType::GeluMlp);
  EXPECT_EQ(c->norm, NormType::LayerNorm);
  EXPECT_EQ(c->positions, PositionEncoding::Learned);
  EXPECT_TRUE(c->tied_embeddings);
  EXPECT_TRUE(c->qkv_bias && c->out_bias && c->mlp_bias);
  EXPECT_EQ(c->name, "config");  // no _name_or_path: the file stem
  EXPECT_EQ(llm_headline(*c, 0).parameters, 124'439'808u);  // see llm_config_test.cpp
  // activation_function gelu_new: transformers' NewGELUActivation; GPT2Config's resid_pdrop
  // default, 0.1 (the file states none).
  EXPECT_EQ(c->gelu, GeluForm::WrittenTanh);
  EXPECT_EQ(c->dropout, 0.1);
  // Stated otherwise.
  std::string stated = kGpt2;
  stated.replace(stated.find("\"gelu_new\""), 10, "\"gelu\", \"resid_pdrop\": 0.0");
  const auto other = load(stated, diags);
  ASSERT_TRUE(other) << diags.format_all();
  EXPECT_EQ(other->gelu, GeluForm::Erf);
  EXPECT_EQ(other->dropout, 0.0);
}

TEST(HfConfig, MissingRequiredKey) {
  Diagnostics diags;
  EXPECT_FALSE(load(replace(kLlama, "  \"intermediate_size\": 11008,\n", ""), diags));
  ASSERT_EQ(diags.error_count(), 1u) << diags.format_all();
  const Diagnostic& d = diags.all()[0];
  EXPECT_EQ(d.path, "intermediate_size");
  EXPECT_EQ(d.message, "missing required key");
  EXPECT_EQ(d.where.line, 1);  // the opening brace
  EXPECT_NE(d.where.file.find("config.json"), std::string::npos);
}

TEST(HfConfig, HeadsNotDividingHidden) {
  Diagnostics diags;
  EXPECT_FALSE(load(replace(replace(kLlama, "\"num_attention_heads\": 32",
                                    "\"num_attention_heads\": 30"),
                            "\"num_key_value_heads\": 32", "\"num_key_value_heads\": 30"),
                    diags));
  ASSERT_EQ(diags.error_count(), 1u) << diags.format_all();
  const Diagnostic& d = diags.all()[0];
  EXPECT_EQ(d.path, "num_attention_heads");
  EXPECT_EQ(d.message, "30 heads do not divide the hidden size 4096");
  EXPECT_EQ(d.where.line, 11);  // "num_attention_heads" is on line 11 of kLlama
  EXPECT_EQ(d.where.column, 3);
}

TEST(HfConfig, WrongType) {
  Diagnostics diags;
  EXPECT_FALSE(load(replace(kLlama, "\"hidden_size\": 4096", "\"hidden_size\": \"4096\""), diags));
  ASSERT_EQ(diags.error_count(), 1u) << diags.format_all();
  const Diagnostic& d = diags.all()[0];
  EXPECT_EQ(d.path, "hidden_size");
  EXPECT_EQ(d.message, "expected a whole number, found a string");
  EXPECT_EQ(d.where.line, 6);
}

TEST(HfConfig, NegativeAndZeroSizes) {
  Diagnostics diags;
  EXPECT_FALSE(load(replace(replace(kLlama, "\"num_hidden_layers\": 32", "\"num_hidden_layers\": -2"),
                            "\"vocab_size\": 32000", "\"vocab_size\": 0"),
                    diags));
  ASSERT_EQ(diags.error_count(), 1u) << diags.format_all();  // validation waits for readable values
  EXPECT_EQ(diags.all()[0].path, "num_hidden_layers");
  EXPECT_EQ(diags.all()[0].message, "must be positive, not -2");

  Diagnostics zero;
  EXPECT_FALSE(load(replace(kLlama, "\"vocab_size\": 32000", "\"vocab_size\": 0"), zero));
  ASSERT_EQ(zero.error_count(), 1u) << zero.format_all();
  EXPECT_EQ(zero.all()[0].path, "vocab_size");
  EXPECT_EQ(zero.all()[0].message, "must be at least 1, not 0");
}

TEST(HfConfig, SyntaxErrorIsLocated) {
  Diagnostics diags;
  EXPECT_FALSE(load(replace(kLlama, "\"hidden_size\": 4096,", "\"hidden_size\": 4096,,"), diags));
  ASSERT_EQ(diags.error_count(), 1u);
  EXPECT_EQ(diags.all()[0].where.line, 6) << diags.format_all();
}

// The shape of google/gemma-7b's config.json: a gated GELU MLP (GeGLU: gate, up and down),
// head_dim 256 over 16 heads, tied embeddings by GemmaConfig's default.
constexpr const char* kGemma7b = R"({
  "architectures": ["GemmaForCausalLM"], "attention_bias": false, "head_dim": 256,
  "hidden_act": "gelu", "hidden_size": 3072, "intermediate_size": 24576,
  "max_position_embeddings": 8192, "model_type": "gemma", "num_attention_heads": 16,
  "num_hidden_layers": 28, "num_key_value_heads": 16, "rms_norm_eps": 1e-06,
  "rope_theta": 10000.0, "torch_dtype": "bfloat16", "vocab_size": 256000
})";

// The shape of Qwen/Qwen2-0.5B's config.json: biases on Q, K and V only (Qwen2Attention),
// which the config does not state; a sliding window that is off.
constexpr const char* kQwen2 = R"({
  "architectures": ["Qwen2ForCausalLM"], "hidden_act": "silu", "hidden_size": 896,
  "intermediate_size": 4864, "max_position_embeddings": 131072, "max_window_layers": 24,
  "model_type": "qwen2", "num_attention_heads": 14, "num_hidden_layers": 24,
  "num_key_value_heads": 2, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0,
  "sliding_window": 131072, "tie_word_embeddings": true, "torch_dtype": "bfloat16",
  "use_sliding_window": false, "vocab_size": 151936
})";

TEST(HfConfig, GemmaIsAGatedGeluMlpWithTiedEmbeddings) {
  Diagnostics diags;
  const auto c = load(kGemma7b, diags);
  ASSERT_TRUE(c) << diags.format_all();
  EXPECT_EQ(c->ffn_type, FfnType::GeGlu);
  EXPECT_TRUE(c->tied_embeddings);
  EXPECT_EQ(c->head_dim, 256u);
  // By hand: embedding 256000 x 3072 = 786,432,000 (tied: no LM head). A layer: Q, K, V and O
  // 4 x 3072 x 4096 = 50,331,648; gate, up, down 3 x 3072 x 24576 = 226,492,416; two RMSNorms
  // 6,144: 276,830,208, x 28 = 7,751,245,824; final norm 3,072. Total 8,537,680,896: the count
  // Hugging Face reports for google/gemma-7b ("8.54B").
  EXPECT_EQ(llm_headline(*c, 0).parameters, 8'537'680'896u);
  // Read as a plain GELU MLP (two matrices), as coda did before, it would be 7.21B.
}

TEST(HfConfig, Qwen2CarriesQkvBiasesOnly) {
  Diagnostics diags;
  const auto c = load(kQwen2, diags);
  ASSERT_TRUE(c) << diags.format_all();
  EXPECT_TRUE(c->qkv_bias);
  EXPECT_FALSE(c->out_bias);
  EXPECT_FALSE(c->mlp_bias);
  EXPECT_EQ(c->sliding_window, 0u);  // use_sliding_window: false
  // By hand: embedding 151936 x 896 = 136,134,656 (tied). A layer: Q 896 x 896 = 802,816,
  // K and V 896 x 128 = 114,688 each, O 802,816, the Q/K/V biases 896 + 128 + 128 = 1,152;
  // gate, up, down 3 x 896 x 4864 = 13,074,432; two RMSNorms 1,792: 14,912,384, x 24 =
  // 357,897,216; final norm 896. Total 494,032,768, Hugging Face's count for Qwen2-0.5B.
  EXPECT_EQ(llm_headline(*c, 0).parameters, 494'032'768u);
  EXPECT_FALSE(load(
      replace(kQwen2, "\"use_sliding_window\": false", "\"use_sliding_window\": true"), diags));
  EXPECT_EQ(diags.all().back().path, "use_sliding_window");
}

// Qwen/Qwen3-0.6B's config.json (model_type qwen3): head_dim 128 over 16 heads (Q 2048 wide from
// a hidden size of 1024), the QK norm implied by the model_type, tied embeddings.
constexpr const char* kQwen3 = R"({
  "architectures": ["Qwen3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "head_dim": 128, "hidden_act": "silu", "hidden_size": 1024, "intermediate_size": 3072,
  "max_position_embeddings": 40960, "max_window_layers": 28, "model_type": "qwen3",
  "num_attention_heads": 16, "num_hidden_layers": 28, "num_key_value_heads": 8,
  "rms_norm_eps": 1e-06, "rope_scaling": null, "rope_theta": 1000000, "sliding_window": null,
  "tie_word_embeddings": true, "torch_dtype": "bfloat16", "use_sliding_window": false,
  "vocab_size": 151936
})";

// Qwen/Qwen3-30B-A3B's config.json (model_type qwen3_moe): 128 experts of moe_intermediate_size
// 768 on every layer, 8 a token; intermediate_size (6144) would size dense layers it has none of.
constexpr const char* kQwen3Moe = R"({
  "architectures": ["Qwen3MoeForCausalLM"], "attention_bias": false, "decoder_sparse_step": 1,
  "head_dim": 128, "hidden_act": "silu", "hidden_size": 2048, "intermediate_size": 6144,
  "max_position_embeddings": 40960, "max_window_layers": 48, "mlp_only_layers": [],
  "model_type": "qwen3_moe", "moe_intermediate_size": 768, "norm_topk_prob": true,
  "num_attention_heads": 32, "num_experts": 128, "num_experts_per_tok": 8,
  "num_hidden_layers": 48, "num_key_value_heads": 4, "rms_norm_eps": 1e-06,
  "rope_theta": 1000000.0, "sliding_window": null, "tie_word_embeddings": false,
  "torch_dtype": "bfloat16", "use_sliding_window": false, "vocab_size": 151936
})";

TEST(HfConfig, Qwen3HasTheQkNormAndItsMoeExpertsOnEveryLayer) {
  Diagnostics diags;
  const auto dense = load(kQwen3, diags);
  ASSERT_TRUE(dense) << diags.format_all();
  EXPECT_TRUE(dense->qk_norm);
  EXPECT_FALSE(dense->qkv_bias);
  EXPECT_EQ(dense->head_dim, 128u);
  // The model card's 0.6B (by hand in llm_config_test.cpp, Qwen3PresetsParameters).
  EXPECT_EQ(llm_headline(*dense, 0).parameters, 596'049'920u);
  const auto moe = load(kQwen3Moe, diags);
  ASSERT_TRUE(moe) << diags.format_all();
  EXPECT_TRUE(moe->qk_norm);
  EXPECT_EQ(moe->ffn, 768u);  // moe_intermediate_size, not intermediate_size
  EXPECT_EQ(moe->moe.experts, 128u);
  EXPECT_EQ(moe->moe.top_k, 8u);
  EXPECT_EQ(llm_headline(*moe, 0).parameters, 30'532'122'624u);        // "30.5B"
  EXPECT_EQ(llm_headline(*moe, 0).active_parameters, 3'353'032'704u);  // "3.3B activated"
  EXPECT_TRUE(diags.all().empty()) << diags.format_all();
}

// Qwen/Qwen1.5-MoE-A2.7B's config.json (model_type qwen2_moe): Qwen2's QKV biases, 60 routed
// experts of 1408, 4 a token, and one shared expert of shared_expert_intermediate_size behind
// its sigmoid gate (implied by the model_type).
constexpr const char* kQwen2Moe = R"({
  "architectures": ["Qwen2MoeForCausalLM"], "decoder_sparse_step": 1, "hidden_act": "silu",
  "hidden_size": 2048, "intermediate_size": 5632, "max_position_embeddings": 8192,
  "max_window_layers": 21, "model_type": "qwen2_moe", "moe_intermediate_size": 1408,
  "norm_topk_prob": false, "num_attention_heads": 16, "num_experts": 60,
  "num_experts_per_tok": 4, "num_hidden_layers": 24, "num_key_value_heads": 16,
  "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "shared_expert_intermediate_size": 5632,
  "sliding_window": 32768, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
  "use_sliding_window": false, "vocab_size": 151936
})";

TEST(HfConfig, Qwen2MoeHasASharedExpertOfItsOwnSizeBehindAGate) {
  Diagnostics diags;
  const auto c = load(kQwen2Moe, diags);
  ASSERT_TRUE(c) << diags.format_all();
  EXPECT_TRUE(c->qkv_bias);
  EXPECT_FALSE(c->qk_norm);
  EXPECT_EQ(c->ffn, 1408u);
  EXPECT_EQ(c->moe.experts, 60u);
  EXPECT_EQ(c->moe.top_k, 4u);
  EXPECT_EQ(c->moe.shared_experts, 1u);
  EXPECT_EQ(c->moe.shared_ffn, 5632u);
  EXPECT_TRUE(c->moe.shared_gate);
  // By hand in llm_config_test.cpp (Qwen2MoeSharedExpertOfItsOwnSizeAndGate): the model card's
  // 14.3B and 2.7B activated.
  EXPECT_EQ(llm_headline(*c, 0).parameters, 14'315'784'192u);
  EXPECT_EQ(llm_headline(*c, 0).active_parameters, 2'689'173'504u);
  EXPECT_EQ(only_error(replace(kQwen2Moe, "\"shared_expert_intermediate_size\": 5632,", "")).path,
            "shared_expert_intermediate_size");
}

TEST(HfConfig, Qwen3MoeDenseLayersAmongTheExpertsAreRefused) {
  const Diagnostic step =
      only_error(replace(kQwen3Moe, "\"decoder_sparse_step\": 1", "\"decoder_sparse_step\": 2"));
  EXPECT_EQ(step.path, "decoder_sparse_step");
  EXPECT_EQ(step.where.line, 2);  // the line of the key, in the text above
  EXPECT_EQ(step.message, "experts on one layer in 2, dense FFNs on the others, are not modeled");
  const Diagnostic dense =
      only_error(replace(kQwen3Moe, "\"mlp_only_layers\": []", "\"mlp_only_layers\": [0, 47]"));
  EXPECT_EQ(dense.path, "mlp_only_layers");
  EXPECT_EQ(dense.message, "2 dense layers among the MoE layers are not modeled");
  EXPECT_EQ(
      only_error(replace(kQwen3Moe, "\"mlp_only_layers\": []", "\"mlp_only_layers\": 0")).message,
      "expected an array, found an integer");
  EXPECT_EQ(only_error(replace(kQwen3Moe, "\"moe_intermediate_size\": 768,", "")).path,
            "moe_intermediate_size");
  EXPECT_EQ(
      only_error(replace(kQwen3, "\"use_sliding_window\": false", "\"use_sliding_window\": true"))
          .message,
      "sliding-window attention on some of Qwen3's layers is not modeled");
}

// google/gemma-2-2b's config.json (model_type gemma2): Gemma's GeGLU and tied embeddings, four
// RMSNorms a layer, soft caps on the attention logits (50) and the final logits (30), a
// 4,096-token window on every other layer.
constexpr const char* kGemma2 = R"({
  "architectures": ["Gemma2ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "attn_logit_softcapping": 50.0, "cache_implementation": "hybrid",
  "final_logit_softcapping": 30.0, "head_dim": 256, "hidden_act": "gelu_pytorch_tanh",
  "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 2304, "intermediate_size": 9216,
  "max_position_embeddings": 8192, "model_type": "gemma2", "num_attention_heads": 8,
  "num_hidden_layers": 26, "num_key_value_heads": 4, "query_pre_attn_scalar": 256,
  "rms_norm_eps": 1e-06, "rope_theta": 10000.0, "sliding_window": 4096,
  "torch_dtype": "float32", "vocab_size": 256000
})";

TEST(HfConfig, Gemma2HasSandwichNormsAndSoftCaps) {
  Diagnostics diags;
  const auto c = load(kGemma2, diags);
  ASSERT_TRUE(c) << diags.format_all();
  EXPECT_EQ(c->ffn_type, FfnType::GeGlu);
  EXPECT_TRUE(c->tied_embeddings);
  EXPECT_TRUE(c->post_norms);
  EXPECT_EQ(c->attention_softcap, 50.0);
  EXPECT_EQ(c->final_softcap, 30.0);
  EXPECT_EQ(c->sliding_window, 4096u);
  // Gemma2DecoderLayer: is_sliding = not bool(layer_idx % 2): layers 0, 2, ... local.
  EXPECT_EQ(c->sliding_window_pattern, 2u);
  EXPECT_EQ(c->window_of(0), 4096u);
  EXPECT_EQ(c->window_of(1), 0u);
  EXPECT_EQ(c->dtype, DataType::Fp32);  // as the 2B checkpoint is stored
  // By hand: embedding 256000 x 2304 = 589,824,000 (tied). A layer: Q 2304 x 2048 = 4,718,592,
  // K and V 2304 x 1024 x 2 = 4,718,592, O 4,718,592, gate, up, down 3 x 2304 x 9216 =
  // 63,700,992, four RMSNorms 9,216: 77,865,984, x 26 = 2,024,515,584; final norm 2,304.
  // Total 2,614,341,888, Hugging Face's count for google/gemma-2-2b ("2.61B").
  EXPECT_EQ(llm_headline(*c, 0).parameters, 2'614'341'888u);
  // A null cap is none; a negative one is an error at its key.
  const auto uncapped =
      load(replace(kGemma2, "\"attn_logit_softcapping\": 50.0", "\"attn_logit_softcapping\": null"),
           diags);
  ASSERT_TRUE(uncapped) << diags.format_all();
  EXPECT_EQ(uncapped->attention_softcap, 0.0);
  const Diagnostic negative = only_error(
      replace(kGemma2, "\"final_logit_softcapping\": 30.0", "\"final_logit_softcapping\": -30.0"));
  EXPECT_EQ(negative.path, "final_logit_softcapping");
  EXPECT_EQ(negative.where.line, 4);
  EXPECT_EQ(negative.message, "must be a positive cap (or 0: none), not -30");
}

// google/gemma-3-1b-it's config.json (model_type gemma3_text; transformers 4.50): Gemma 2's
// sandwich norms and GeGLU, Qwen3's QK norm, no soft caps, and a 512-token window on all but
// every sixth layer; its activation key is hidden_activation.
constexpr const char* kGemma3 = R"({
  "architectures": ["Gemma3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "attn_logit_softcapping": null, "bos_token_id": 2, "cache_implementation": "hybrid",
  "eos_token_id": [1, 106], "final_logit_softcapping": null, "head_dim": 256,
  "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 1152, "initializer_range": 0.02,
  "intermediate_size": 6912, "max_position_embeddings": 32768, "model_type": "gemma3_text",
  "num_attention_heads": 4, "num_hidden_layers": 26, "num_key_value_heads": 1,
  "pad_token_id": 0, "query_pre_attn_scalar": 256, "rms_norm_eps": 1e-06,
  "rope_local_base_freq": 10000, "rope_scaling": null, "rope_theta": 1000000,
  "sliding_window": 512, "sliding_window_pattern": 6, "torch_dtype": "bfloat16",
  "use_cache": true, "vocab_size": 262144
})";

TEST(HfConfig, Gemma3WindowsFiveLayersInSix) {
  Diagnostics diags;
  const auto c = load(kGemma3, diags);
  ASSERT_TRUE(c) << diags.format_all();
  EXPECT_EQ(c->ffn_type, FfnType::GeGlu);
  EXPECT_TRUE(c->tied_embeddings);
  EXPECT_TRUE(c->post_norms);
  EXPECT_TRUE(c->qk_norm);
  EXPECT_EQ(c->attention_softcap, 0.0);
  EXPECT_EQ(c->final_softcap, 0.0);
  EXPECT_EQ(c->sliding_window, 512u);
  EXPECT_EQ(c->sliding_window_pattern, 6u);
  // Gemma3DecoderLayer: is_sliding = bool((layer_idx + 1) % 6): layers 5, 11, 17, 23 global.
  EXPECT_EQ(c->window_of(4), 512u);
  EXPECT_EQ(c->window_of(5), 0u);
  // By hand: embedding 262144 x 1152 = 301,989,888 (tied). A layer: Q 1152 x 1024 = 1,179,648,
  // K and V 1152 x 256 x 2 = 589,824, O 1,179,648, gate, up, down 3 x 1152 x 6912 = 23,887,872,
  // four RMSNorms 4,608, q_norm and k_norm 2 x 256 = 512: 26,842,112, x 26 = 697,894,912; final
  // norm 1,152. Total 999,885,952 (the card's "1B").
  EXPECT_EQ(llm_headline(*c, 0).parameters, 999'885'952u);
  // transformers 4.53+ writes layer_types instead: the same pattern, read from the list.
  std::string types = "\"layer_types\": [";
  for (int l = 0; l < 26; ++l)
    types += fmt::format("{}\"{}\"", l > 0 ? ", " : "",
                         (l + 1) % 6 == 0 ? "full_attention" : "sliding_attention");
  types += "]";
  const std::string listed = replace(kGemma3, "\"sliding_window_pattern\": 6", types);
  const auto from_list = load(listed, diags);
  ASSERT_TRUE(from_list) << diags.format_all();
  EXPECT_EQ(from_list->sliding_window_pattern, 6u);
  // A list that is not one period is refused at its key, not approximated.
  // (Layer 5 sliding: the first full layer, 11, says a period of 12, which layer 17 breaks.)
  const Diagnostic odd = only_error(replace(listed, "\"full_attention\"", "\"sliding_attention\""));
  EXPECT_EQ(odd.path, "layer_types");
  // Neither key: Gemma3TextConfig's default, 6.
  const auto by_default = load(replace(kGemma3, "\"sliding_window_pattern\": 6, ", ""), diags);
  ASSERT_TRUE(by_default) << diags.format_all();
  EXPECT_EQ(by_default->sliding_window_pattern, 6u);
}

TEST(HfConfig, AModelTypeCodaDoesNotBuildIsAnErrorNeverALlama) {
  Diagnostics diags;
  EXPECT_FALSE(
      load(replace(kLlama, "\"model_type\": \"llama\"", "\"model_type\": \"electra\""), diags));
  ASSERT_EQ(diags.error_count(), 1u);
  const Diagnostic& d = diags.all()[0];
  EXPECT_EQ(d.path, "model_type");
  EXPECT_EQ(d.message,
            "'electra' is not a model family coda builds (it builds gpt2, gptj, llama, mistral, "
            "mixtral, qwen2, qwen2_moe, qwen3, qwen3_moe, gemma, gemma2, gemma3_text, phi3, "
            "deepseek_v2, deepseek_v3, gpt_neox, falcon, phi, bert, roberta, xlm-roberta)");
  EXPECT_EQ(d.hint,
            "of the encoders coda builds BERT and RoBERTa (model_type bert, roberta, "
            "xlm-roberta); describe another in coda's LLM YAML (encoder: true, post_norm: true, "
            "docs/llm.md) if its layers are BERT's");
  Diagnostics missing;
  EXPECT_FALSE(load(replace(kLlama, "\"model_type\": \"llama\",", ""), missing));
  ASSERT_EQ(missing.error_count(), 1u);
  EXPECT_EQ(missing.all()[0].path, "model_type");
  EXPECT_EQ(missing.all()[0].message, "missing required key");
}

// deepseek-ai/DeepSeek-V3's config.json (model_type deepseek_v3; the routing and quantization
// keys that do not change the shapes left out): MLA and the experts after 3 dense layers.
constexpr const char* kDeepSeekV3 = R"({
  "architectures": ["DeepseekV3ForCausalLM"], "attention_bias": false,
  "first_k_dense_replace": 3, "hidden_act": "silu", "hidden_size": 7168,
  "intermediate_size": 18432, "kv_lora_rank": 512, "max_position_embeddings": 163840,
  "model_type": "deepseek_v3", "moe_intermediate_size": 2048, "moe_layer_freq": 1,
  "n_group": 8, "n_routed_experts": 256, "n_shared_experts": 1, "num_attention_heads": 128,
  "num_experts_per_tok": 8, "num_hidden_layers": 61, "num_key_value_heads": 128,
  "num_nextn_predict_layers": 1, "q_lora_rank": 1536, "qk_nope_head_dim": 128,
  "qk_rope_head_dim": 64, "rms_norm_eps": 1e-06, "rope_theta": 10000,
  "scoring_func": "sigmoid", "tie_word_embeddings": false, "topk_group": 4,
  "topk_method": "noaux_tc", "torch_dtype": "bfloat16", "v_head_dim": 128, "vocab_size": 129280
})";

// The config reads as the preset (configs/workloads/llm/deepseek_v3.yaml, counted by hand in
// llm_config_test.cpp, DeepSeekPresets); a null q_lora_rank (DeepSeek-V2-Lite) is a plain q
// projection; experts on every other layer are refused.
TEST(HfConfig, DeepSeekV3IsMlaWithDenseLayersFirst) {
  Diagnostics diags;
  const auto c = load(kDeepSeekV3, diags);
  ASSERT_TRUE(c) << diags.format_all();
  EXPECT_EQ(c->mla.q_lora_rank, 1536u);
  EXPECT_EQ(c->mla.kv_lora_rank, 512u);
  EXPECT_EQ(c->head_dim, 192u);
  EXPECT_EQ(c->kv_heads, 128u);
  EXPECT_EQ(c->ffn, 2048u);
  EXPECT_EQ(c->moe.dense_ffn, 18432u);
  EXPECT_EQ(c->moe.first_dense_layers, 3u);
  EXPECT_EQ(c->moe.shared_experts, 1u);
  EXPECT_EQ(llm_headline(*c, 0).parameters, 671'026'404'352u);
  EXPECT_EQ(llm_headline(*c, 0).active_parameters, 37'552'282'624u);
  const auto lite =
      load(replace(kDeepSeekV3, "\"q_lora_rank\": 1536", "\"q_lora_rank\": null"), diags);
  ASSERT_TRUE(lite) << diags.format_all();
  EXPECT_EQ(lite->mla.q_lora_rank, 0u);
  EXPECT_TRUE(diags.all().empty()) << diags.format_all();
  Diagnostics every_other;
  EXPECT_FALSE(
      load(replace(kDeepSeekV3, "\"moe_layer_freq\": 1", "\"moe_layer_freq\": 2"), every_other));
  ASSERT_EQ(every_other.error_count(), 1u) << every_other.format_all();
  EXPECT_EQ(every_other.all()[0].path, "moe_layer_freq");
}

// EleutherAI/pythia-160m's config.json (model_type gpt_neox), GPT-J-6B's (gptj, GPT-2's keys),
// tiiuae/falcon-7b's (falcon) and microsoft/phi-2's (phi), the keys that shape the model; each
// reads as its preset (configs/workloads/llm/, counted by hand in llm_config_test.cpp,
// ParallelResidualFamilies).
constexpr const char* kPythia = R"({
  "architectures": ["GPTNeoXForCausalLM"], "hidden_act": "gelu", "hidden_size": 768,
  "intermediate_size": 3072, "layer_norm_eps": 1e-05, "max_position_embeddings": 2048,
  "model_type": "gpt_neox", "num_attention_heads": 12, "num_hidden_layers": 12,
  "rotary_emb_base": 10000, "rotary_pct": 0.25, "tie_word_embeddings": false,
  "torch_dtype": "float16", "use_parallel_residual": true, "vocab_size": 50304
})";
constexpr const char* kGptj = R"({
  "activation_function": "gelu_new", "architectures": ["GPTJForCausalLM"],
  "layer_norm_epsilon": 1e-05, "model_type": "gptj", "n_embd": 4096, "n_head": 16,
  "n_inner": null, "n_layer": 28, "n_positions": 2048, "rotary_dim": 64,
  "tie_word_embeddings": false, "vocab_size": 50400
})";
constexpr const char* kFalcon = R"({
  "alibi": false, "apply_residual_connection_post_layernorm": false,
  "architectures": ["FalconForCausalLM"], "bias": false, "hidden_size": 4544,
  "layer_norm_epsilon": 1e-05, "model_type": "falcon", "multi_query": true,
  "new_decoder_architecture": false, "num_attention_heads": 71, "num_hidden_layers": 32,
  "parallel_attn": true, "torch_dtype": "bfloat16", "vocab_size": 65024
})";
constexpr const char* kPhi2 = R"({
  "architectures": ["PhiForCausalLM"], "hidden_act": "gelu_new", "hidden_size": 2560,
  "intermediate_size": 10240, "layer_norm_eps": 1e-05, "max_position_embeddings": 2048,
  "model_type": "phi", "num_attention_heads": 32, "num_hidden_layers": 32,
  "num_key_value_heads": 32, "partial_rotary_factor": 0.4, "qk_layernorm": false,
  "rope_theta": 10000.0, "tie_word_embeddings": false, "torch_dtype": "float16",
  "vocab_size": 51200
})";

TEST(HfConfig, ParallelResidualFamiliesReadAsTheirPresets) {
  const std::pair<const char*, const char*> cases[] = {
      {kPythia, "pythia_160m"}, {kGptj, "gptj_6b"}, {kFalcon, "falcon_7b"}, {kPhi2, "phi2"}};
  for (const auto& [text, name] : cases) {
    Diagnostics diags;
    auto c = load(text, diags);
    ASSERT_TRUE(c) << name << "\n" << diags.format_all();
    EXPECT_TRUE(diags.all().empty()) << diags.format_all();
    Diagnostics preset_diags;
    LlmConfig expected =
        *load_llm_config(fmt::format("configs/workloads/llm/{}.yaml", name), preset_diags);
    // Names, sources, the informational rope_theta and the type (GPT-J's config states none;
    // its preset is the float16 revision) aside, the same model.
    c->name = expected.name;
    c->source = expected.source;
    c->rope_theta = expected.rope_theta;
    c->dtype = expected.dtype;
    EXPECT_EQ(*c, expected) << name;
    EXPECT_EQ(llm_headline(*c, 0).parameters, llm_headline(expected, 0).parameters) << name;
  }
}

// google-bert/bert-base-uncased's config.json (model_type bert) reads as the bert_base preset;
// FacebookAI/roberta-base's (roberta) as roberta_base; relative position embeddings are refused.
constexpr const char* kBert = R"({
  "architectures": ["BertForMaskedLM"], "attention_probs_dropout_prob": 0.1,
  "hidden_act": "gelu", "hidden_size": 768, "intermediate_size": 3072,
  "layer_norm_eps": 1e-12, "max_position_embeddings": 512, "model_type": "bert",
  "num_attention_heads": 12, "num_hidden_layers": 12, "position_embedding_type": "absolute",
  "type_vocab_size": 2, "vocab_size": 30522
})";
constexpr const char* kRoberta = R"({
  "architectures": ["RobertaForMaskedLM"], "hidden_act": "gelu", "hidden_size": 768,
  "intermediate_size": 3072, "layer_norm_eps": 1e-05, "max_position_embeddings": 514,
  "model_type": "roberta", "num_attention_heads": 12, "num_hidden_layers": 12,
  "type_vocab_size": 1, "vocab_size": 50265
})";

TEST(HfConfig, BertAndRobertaAreEncoders) {
  for (const auto& [text, name] :
       {std::pair{kBert, "bert_base"}, std::pair{kRoberta, "roberta_base"}}) {
    Diagnostics diags;
    auto c = load(text, diags);
    ASSERT_TRUE(c) << name << "\n" << diags.format_all();
    Diagnostics preset_diags;
    const LlmConfig expected =
        *load_llm_config(fmt::format("configs/workloads/llm/{}.yaml", name), preset_diags);
    c->name = expected.name;
    c->source = expected.source;
    c->rope_theta = expected.rope_theta;
    c->dtype = expected.dtype;  // the checkpoints are float32; the presets run fp16
    EXPECT_EQ(*c, expected) << name;
  }
  Diagnostics relative;
  EXPECT_FALSE(load(replace(kBert, "\"absolute\"", "\"relative_key\""), relative));
  ASSERT_EQ(relative.error_count(), 1u) << relative.format_all();
  EXPECT_EQ(relative.all()[0].path, "position_embedding_type");
}

TEST(HfConfig, ParallelResidualFamiliesRefuseWhatTheyDoNotModel) {
  Diagnostics alibi;
  EXPECT_FALSE(load(replace(kFalcon, "\"alibi\": false", "\"alibi\": true"), alibi));
  ASSERT_EQ(alibi.error_count(), 1u) << alibi.format_all();
  EXPECT_EQ(alibi.all()[0].path, "alibi");
  // 0.3 of a 64-dim head is 19.2 dims.
  Diagnostics share;
  EXPECT_FALSE(load(replace(kPythia, "\"rotary_pct\": 0.25", "\"rotary_pct\": 0.3"), share));
  ASSERT_EQ(share.error_count(), 1u) << share.format_all();
  EXPECT_EQ(share.all()[0].path, "rotary_pct");
  // Falcon-40B's new decoder architecture: 8 KV heads and two LayerNorms.
  Diagnostics diags;
  std::string forty = replace(kFalcon, "\"new_decoder_architecture\": false",
                              "\"new_decoder_architecture\": true, \"num_kv_heads\": 8");
  forty = replace(replace(forty, "\"num_attention_heads\": 71", "\"num_attention_heads\": 128"),
                  "\"hidden_size\": 4544", "\"hidden_size\": 8192");
  const auto big = load(forty, diags);
  ASSERT_TRUE(big) << diags.format_all();
  EXPECT_EQ(big->kv_heads, 8u);
  EXPECT_TRUE(big->parallel_residual);
  EXPECT_FALSE(big->shared_norm);
}

// The shape of microsoft/Phi-3-mini-4k-instruct's config.json: LLaMA's layer with a 2047-token
// sliding window.
constexpr const char* kPhi3Mini = R"({
  "architectures": ["Phi3ForCausalLM"], "hidden_act": "silu", "hidden_size": 3072,
  "intermediate_size": 8192, "max_position_embeddings": 4096, "model_type": "phi3",
  "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 32,
  "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "sliding_window": 2047,
  "tie_word_embeddings": false, "torch_dtype": "bfloat16", "vocab_size": 32064
})";

TEST(HfConfig, Phi3MiniCountAndWindow) {
  Diagnostics diags;
  const auto c = load(kPhi3Mini, diags);
  ASSERT_TRUE(c) << diags.format_all();
  EXPECT_EQ(c->sliding_window, 2047u);
  // By hand: embedding and untied LM head 2 x 32064 x 3072 = 197,001,216. A layer: Q, K, V
  // 3072 x 9216 = 28,311,552 and O 9,437,184; gate, up, down 3 x 3072 x 8192 = 75,497,472;
  // two RMSNorms 6,144: 113,252,352, x 32 = 3,624,075,264; final norm 3,072. Total
  // 3,821,079,552, Hugging Face's count for Phi-3-mini ("3.8B").
  EXPECT_EQ(llm_headline(*c, 0).parameters, 3'821'079'552u);
}

TEST(HfConfig, MistralsSlidingWindowIsKept) {
  Diagnostics diags;
  const auto c = load(replace(kLlama, "\"model_type\": \"llama\"",
                              "\"model_type\": \"mistral\", \"sliding_window\": 4096"),
                      diags);
  ASSERT_TRUE(c) << diags.format_all();
  EXPECT_EQ(c->sliding_window, 4096u);
  const auto none = load(replace(kLlama, "\"model_type\": \"llama\"",
                                 "\"model_type\": \"mistral\", \"sliding_window\": null"),
                         diags);
  ASSERT_TRUE(none) << diags.format_all();
  EXPECT_EQ(none->sliding_window, 0u);
}

TEST(HfConfig, MissingFile) {
  Diagnostics diags;
  EXPECT_FALSE(load_hf_config("no/such/config.json", diags));
  EXPECT_EQ(diags.error_count(), 1u);
}

}  // namespace
}  // namespace coda::workload::llm
