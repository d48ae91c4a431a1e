// Reading Hugging Face config.json files (written by the test under $CODA_BINARY_DIR/test_tmp).

#include <string>

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
  EXPECT_TRUE(c->bias);
  EXPECT_EQ(c->name, "config");  // no _name_or_path: the file stem
  EXPECT_EQ(llm_headline(*c, 0).parameters, 124'439'808u);  // see llm_config_test.cpp
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

TEST(HfConfig, MissingFile) {
  Diagnostics diags;
  EXPECT_FALSE(load_hf_config("no/such/config.json", diags));
  EXPECT_EQ(diags.error_count(), 1u);
}

}  // namespace
}  // namespace coda::workload::llm
