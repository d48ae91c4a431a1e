#include "workloads/llm/hf_config.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <map>
#include <sstream>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace coda::workload::llm {
namespace {

using Json = nlohmann::json;

// The model_types coda builds from a config.json besides gpt2 (docs/llm.md): decoders with
// LLaMA's keys. Every other model_type is an error, never a silent LLaMA.
constexpr std::array<std::string_view, 19> kLlamaStyle{
    "llama",  "mistral", "mixtral",     "qwen2",   "qwen2_moe",   "qwen3",       "qwen3_moe",
    "gemma",  "gemma2",  "gemma3_text", "phi3",    "deepseek_v2", "deepseek_v3", "gpt_neox",
    "falcon", "phi",     "bert",        "roberta", "xlm-roberta"};
// Encoder-only families coda does not build (BERT and RoBERTa it does); named in the error's
// hint.
constexpr std::array<std::string_view, 5> kEncoders{"distilbert", "albert", "electra", "deberta",
                                                    "deberta-v2"};

// The GELU form of an ACT2FN name (llm_config.h GeluForm); unstated for the names transformers
// computes otherwise (gelu_fast, gelu_accurate, quick_gelu, ...), which no runtime prices apart.
GeluForm gelu_form(std::string_view act) {
  if (act == "gelu") return GeluForm::Erf;
  if (act == "gelu_pytorch_tanh") return GeluForm::Tanh;
  if (act == "gelu_new") return GeluForm::WrittenTanh;
  return GeluForm::Unstated;
}

std::string supported_model_types() {
  std::string out = "gpt2, gptj";
  for (const std::string_view t : kLlamaStyle) out += fmt::format(", {}", t);
  return out;
}

// Where each key of the top-level object starts, by one pass over the text that tracks strings
// and nesting. Only top-level keys are located: the keys read here are all at the top.
struct TopLevel {
  std::map<std::string, std::size_t, std::less<>> keys;  // key -> byte offset
  std::size_t object_start = 0;                          // byte offset of the top-level '{'
};

TopLevel top_level_keys(std::string_view text) {
  std::map<std::string, std::size_t, std::less<>> keys;
  int depth = 0;
  std::size_t object_start = 0;
  bool first_object = true;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (ch == '{' || ch == '[') {
      if (ch == '{' && depth == 0 && first_object) {
        object_start = i;
        first_object = false;
      }
      ++depth;
    } else if (ch == '}' || ch == ']') {
      --depth;
    } else if (ch == '"') {
      const std::size_t start = i;
      std::string value;
      for (++i; i < text.size() && text[i] != '"'; ++i) {
        if (text[i] == '\\' && i + 1 < text.size()) ++i;
        value += text[i];
      }
      if (depth != 1) continue;
      std::size_t j = i + 1;
      while (j < text.size() && (text[j] == ' ' || text[j] == '\t' || text[j] == '\n' ||
                                 text[j] == '\r'))
        ++j;
      if (j < text.size() && text[j] == ':') keys.try_emplace(std::move(value), start);
    }
  }
  return {std::move(keys), object_start};
}

std::string_view type_name(const Json& j) {
  if (j.is_null()) return "null";
  if (j.is_boolean()) return "a boolean";
  if (j.is_number_integer() || j.is_number_unsigned()) return "an integer";
  if (j.is_number_float()) return "a fractional number";
  if (j.is_string()) return "a string";
  if (j.is_array()) return "an array";
  return "an object";
}

class HfReader {
 public:
  HfReader(const Json& root, std::string_view text, std::string file, Diagnostics& diags)
      : root_(root),
        text_(text),
        file_(std::move(file)),
        diags_(diags),
        top_(top_level_keys(text)),
        object_location_(location_at(text, top_.object_start, file_)) {}

  // Present and not null.
  bool has(std::string_view key) const {
    const auto it = root_.find(key);
    return it != root_.end() && !it->is_null();
  }
  // Present as null.
  bool is_null(std::string_view key) const {
    const auto it = root_.find(key);
    return it != root_.end() && it->is_null();
  }

  SourceLocation where(std::string_view key) const {
    const auto it = top_.keys.find(key);
    return it == top_.keys.end() ? object_location_ : location_at(text_, it->second, file_);
  }

  void error(std::string_view key, std::string message, std::string hint = {}) const {
    diags_.error(where(key), std::string(key), std::move(message), std::move(hint));
  }

  // Reads a whole number: a missing key is an error when `required`; a negative, fractional or
  // non-number value always is. Returns whether a value was read.
  bool number(std::string_view key, std::uint64_t& out, bool required) const {
    if (!has(key)) {
      if (required)
        diags_.error(object_location_, std::string(key), "missing required key",
                     fmt::format("add \"{}\": <a whole number>", key));
      return false;
    }
    const Json& j = root_.at(std::string(key));
    if (j.is_number_unsigned()) {
      out = j.get<std::uint64_t>();
      return true;
    }
    if (j.is_number_integer()) {
      error(key, fmt::format("must be positive, not {}", j.get<std::int64_t>()));
      return false;
    }
    error(key, fmt::format("expected a whole number, found {}", type_name(j)),
          fmt::format("write e.g. \"{}\": 32", key));
    return false;
  }

  bool boolean(std::string_view key, bool& out) const {
    if (!has(key)) return false;
    const Json& j = root_.at(std::string(key));
    if (j.is_boolean()) {
      out = j.get<bool>();
      return true;
    }
    error(key, fmt::format("expected true or false, found {}", type_name(j)));
    return false;
  }

  bool real(std::string_view key, double& out) const {
    if (!has(key)) return false;
    const Json& j = root_.at(std::string(key));
    if (j.is_number()) {
      out = j.get<double>();
      return true;
    }
    error(key, fmt::format("expected a number, found {}", type_name(j)));
    return false;
  }

  bool string(std::string_view key, std::string& out) const {
    if (!has(key)) return false;
    const Json& j = root_.at(std::string(key));
    if (j.is_string()) {
      out = j.get<std::string>();
      return true;
    }
    error(key, fmt::format("expected a string, found {}", type_name(j)));
    return false;
  }

  // The length of an array value; nullopt (and an error) when the value is not an array, or
  // when the key is absent or null.
  std::optional<std::size_t> array_size(std::string_view key) const {
    if (!has(key)) return std::nullopt;
    const Json& j = root_.at(std::string(key));
    if (j.is_array()) return j.size();
    error(key, fmt::format("expected an array, found {}", type_name(j)));
    return std::nullopt;
  }

  // An array of strings; nullopt (and an error) when the value is not one, or when the key is
  // absent or null.
  std::optional<std::vector<std::string>> strings(std::string_view key) const {
    const std::optional<std::size_t> size = array_size(key);
    if (!size) return std::nullopt;
    std::vector<std::string> out;
    for (const Json& item : root_.at(std::string(key))) {
      if (!item.is_string()) {
        error(key, fmt::format("expected an array of strings, found {} in it", type_name(item)));
        return std::nullopt;
      }
      out.push_back(item.get<std::string>());
    }
    return out;
  }

  const SourceLocation& object_location() const { return object_location_; }

 private:
  const Json& root_;
  std::string_view text_;
  std::string file_;
  Diagnostics& diags_;
  TopLevel top_;
  SourceLocation object_location_;
};

// Gemma 3's windowed layers: sliding_window_pattern P (Gemma3DecoderLayer: is_sliding =
// bool((layer_idx + 1) % P)), or, in configs transformers 4.53+ writes, layer_types (each
// "sliding_attention" or "full_attention"), which must be that pattern for some P; absent both,
// Gemma3TextConfig's default P, 6.
void gemma3_layer_pattern(const HfReader& r, LlmConfig& c,
                          std::map<LlmField, std::string_view>& keys) {
  keys[LlmField::SlidingWindowPattern] = "sliding_window_pattern";
  if (r.has("sliding_window_pattern")) {
    r.number("sliding_window_pattern", c.sliding_window_pattern, false);
    return;
  }
  if (!r.has("layer_types")) {
    c.sliding_window_pattern = 6;
    return;
  }
  const std::optional<std::vector<std::string>> types = r.strings("layer_types");
  if (!types) return;
  const auto full = std::find(types->begin(), types->end(), "full_attention");
  const std::uint64_t period =
      full == types->end() ? 0 : static_cast<std::uint64_t>(full - types->begin()) + 1;
  bool periodic = period >= 2 && types->size() == c.layers;
  for (std::size_t l = 0; periodic && l < types->size(); ++l)
    periodic = (*types)[l] == ((l + 1) % period == 0 ? "full_attention" : "sliding_attention");
  if (!periodic) {
    r.error("layer_types",
            "coda builds windowed layers in a period, every P-th global (Gemma 3: 5 sliding, "
            "then 1 full); this list is not one",
            "a list of num_hidden_layers entries, \"full_attention\" at every P-th (P >= 2) and "
            "\"sliding_attention\" elsewhere");
    return;
  }
  c.sliding_window_pattern = period;
}

// DeepSeek-V2/V3's keys (DeepseekV3Config): MLA's ranks and head dims (q_lora_rank null: a
// plain q projection), the routed and shared experts and the dense layers before them. The
// multi-token-prediction module (num_nextn_predict_layers) is not part of the model
// transformers builds (DeepseekV3ForCausalLM drops its weights), so it is not built here either.
void deepseek_keys(const HfReader& r, LlmConfig& c, std::map<LlmField, std::string_view>& keys,
                   bool& head_dim_given) {
  const auto number = [&](LlmField field, std::string_view key, std::uint64_t& out, bool required) {
    keys[field] = key;
    return r.number(key, out, required);
  };
  number(LlmField::QLoraRank, "q_lora_rank", c.mla.q_lora_rank, false);  // null: none
  number(LlmField::KvLoraRank, "kv_lora_rank", c.mla.kv_lora_rank, true);
  number(LlmField::QkNopeHeadDim, "qk_nope_head_dim", c.mla.qk_nope_head_dim, true);
  number(LlmField::QkRopeHeadDim, "qk_rope_head_dim", c.mla.qk_rope_head_dim, true);
  number(LlmField::VHeadDim, "v_head_dim", c.mla.v_head_dim, true);
  c.head_dim = c.mla.qk_nope_head_dim + c.mla.qk_rope_head_dim;
  keys[LlmField::HeadDim] = "qk_nope_head_dim";
  head_dim_given = true;
  c.kv_heads = c.heads;  // every head its own key and value (num_key_value_heads is unused)
  keys[LlmField::KvHeads] = "num_attention_heads";
  number(LlmField::Experts, "n_routed_experts", c.moe.experts, true);
  number(LlmField::TopK, "num_experts_per_tok", c.moe.top_k, true);
  number(LlmField::SharedExperts, "n_shared_experts", c.moe.shared_experts, false);
  number(LlmField::FirstDenseLayers, "first_k_dense_replace", c.moe.first_dense_layers, false);
  number(LlmField::DenseFfn, "intermediate_size", c.moe.dense_ffn, true);
  std::uint64_t frequency = 1;
  if (r.number("moe_layer_freq", frequency, false) && frequency != 1)
    r.error(
        "moe_layer_freq",
        fmt::format("experts on every {}th layer after the dense ones are not modeled", frequency),
        "coda builds DeepSeek with experts on every layer after first_k_dense_replace "
        "(moe_layer_freq 1, as every released DeepSeek-V2/V3 config has)");
}

// A share of each head's dims that RoPE rotates (GPT-NeoX's rotary_pct, Phi's
// partial_rotary_factor): applied once head_dim is known.
struct RotaryShare {
  std::optional<double> share;
  std::string_view key;
};

// GPT-J (GPTJConfig, GPT-2's keys): rotary positions over rotary_dim of each head (default 64,
// null: all of it), attention in parallel with the MLP from one LayerNorm (ln_1), no attention
// biases, the MLP's and the LM head's biases, untied embeddings (tie_word_embeddings default
// false).
void gptj_keys(const HfReader& r, LlmConfig& c, std::map<LlmField, std::string_view>& keys) {
  c.positions = PositionEncoding::Rotary;
  c.qkv_bias = c.out_bias = false;
  c.mlp_bias = c.lm_head_bias = true;
  c.parallel_residual = c.shared_norm = true;
  c.tied_embeddings = false;
  keys[LlmField::RotaryDim] = "rotary_dim";
  c.rotary_dim = r.is_null("rotary_dim") ? 0 : 64;
  r.number("rotary_dim", c.rotary_dim, false);
}

// GPT-NeoX (Pythia; GPTNeoXConfig): RoPE over rotary_pct of each head (default 0.25, its base
// rotary_emb_base), attention and MLP in parallel from their own LayerNorms
// (use_parallel_residual, default true), biases on the QKV and output projections
// (attention_bias, default true) and on the MLP, untied embeddings.
void gpt_neox_keys(const HfReader& r, LlmConfig& c, RotaryShare& rotary) {
  rotary = {0.25, "rotary_pct"};
  r.real("rotary_pct", *rotary.share);
  c.parallel_residual = true;
  r.boolean("use_parallel_residual", c.parallel_residual);
  bool attention_bias = true;
  r.boolean("attention_bias", attention_bias);
  c.qkv_bias = c.out_bias = attention_bias;
  c.mlp_bias = true;
  r.real("rotary_emb_base", c.rope_theta);
}

// Falcon (FalconConfig): multi-query attention (multi_query, default true), or with
// new_decoder_architecture num_kv_heads; attention and MLP in parallel (parallel_attn, default
// true; always with the new architecture) from one LayerNorm, or two with the new architecture
// (num_ln_in_parallel_attn, default 2 there); a bias on every linear layer or none (bias,
// default false); RoPE over the whole head; tied embeddings by default. ALiBi and the
// post-LayerNorm residual are refused.
void falcon_keys(const HfReader& r, LlmConfig& c, std::map<LlmField, std::string_view>& keys) {
  bool alibi = false, post_layernorm = false, new_arch = false, multi_query = true;
  bool parallel = true, bias = false;
  r.boolean("alibi", alibi);
  if (alibi)
    r.error("alibi", "ALiBi attention biases are not modeled",
            "coda builds Falcon with rotary positions (alibi false: Falcon-7B, 40B, 180B)");
  r.boolean("apply_residual_connection_post_layernorm", post_layernorm);
  if (post_layernorm)
    r.error("apply_residual_connection_post_layernorm",
            "a residual taken after the LayerNorm is not modeled",
            "coda builds Falcon's residual around the LayerNorm (false: Falcon-7B, 40B, 180B)");
  r.boolean("new_decoder_architecture", new_arch);
  r.boolean("multi_query", multi_query);
  if (new_arch) {
    keys[LlmField::KvHeads] = "num_kv_heads";
    r.number("num_kv_heads", c.kv_heads, true);
  } else {
    keys[LlmField::KvHeads] = "multi_query";
    c.kv_heads = multi_query ? 1 : c.heads;
  }
  r.boolean("parallel_attn", parallel);
  std::uint64_t norms = new_arch ? 2 : 1;
  if (new_arch) r.number("num_ln_in_parallel_attn", norms, false);
  c.parallel_residual = parallel || new_arch;
  c.shared_norm = c.parallel_residual && norms == 1;
  r.boolean("bias", bias);
  c.qkv_bias = c.out_bias = c.mlp_bias = bias;
  c.tied_embeddings = true;
}

// BERT and RoBERTa (BertConfig, RobertaConfig; XLM-RoBERTa's is RoBERTa's): an encoder of
// post-norm layers (BertLayer) over the token, learned position (max_position_embeddings) and
// token-type (type_vocab_size) embeddings, normed; biases on every linear layer; the pooler.
// Only absolute positions (position_embedding_type) are modeled.
void bert_keys(const HfReader& r, LlmConfig& c, std::map<LlmField, std::string_view>& keys) {
  c.encoder = c.post_norm = true;
  c.positions = PositionEncoding::Learned;
  c.qkv_bias = c.out_bias = c.mlp_bias = true;
  c.type_vocab = 2;  // BertConfig's default
  keys[LlmField::TypeVocab] = "type_vocab_size";
  r.number("type_vocab_size", c.type_vocab, false);
  std::string positions = "absolute";
  r.string("position_embedding_type", positions);
  if (positions != "absolute")
    r.error("position_embedding_type",
            fmt::format("'{}' position embeddings are not modeled", positions),
            "coda builds BERT and RoBERTa with absolute (learned) positions");
}

// Phi-1.5 and Phi-2 (PhiConfig): attention and MLP in parallel from one LayerNorm, RoPE over
// partial_rotary_factor of each head (default 0.5), biases on every linear layer and the LM
// head, a LayerNorm over each head of Q and K with qk_layernorm, untied embeddings.
void phi_keys(const HfReader& r, LlmConfig& c, RotaryShare& rotary) {
  rotary = {0.5, "partial_rotary_factor"};
  r.real("partial_rotary_factor", *rotary.share);
  c.parallel_residual = c.shared_norm = true;
  c.qkv_bias = c.out_bias = c.mlp_bias = c.lm_head_bias = true;
  r.boolean("qk_layernorm", c.qk_norm);
}

}  // namespace

std::optional<LlmConfig> parse_hf_config(std::string_view text, const std::string& file,
                                         Diagnostics& diags) {
  Json root;
  try {
    root = Json::parse(text.begin(), text.end());
  } catch (const Json::parse_error& e) {
    diags.error(location_at(text, e.byte > 0 ? e.byte - 1 : 0, file), "",
                fmt::format("not valid JSON: {}", e.what()));
    return std::nullopt;
  } catch (const Json::exception& e) {
    // nlohmann throws out_of_range (not parse_error) for a number too large for a double.
    diags.error({file, 1, 1}, "", fmt::format("not valid JSON: {}", e.what()),
                "numbers must fit a double (about 1.8e308)");
    return std::nullopt;
  }
  if (!root.is_object()) {
    diags.error({file, 1, 1}, "", fmt::format("expected a JSON object, found {}", type_name(root)),
                "a Hugging Face config.json is one object of settings");
    return std::nullopt;
  }
  const std::size_t errors_before = diags.error_count();
  const HfReader r(root, text, file, diags);
  LlmConfig c;
  std::string model_type;
  r.string("model_type", model_type);
  // GPT-J's config uses GPT-2's keys (n_embd, n_layer, n_head, n_inner, n_positions).
  const bool gptj = model_type == "gptj";
  const bool gpt2 = gptj || model_type == "gpt2" || (model_type.empty() && r.has("n_embd"));
  if (!gpt2) {
    const auto known = [&](const auto& list) {
      return std::find(list.begin(), list.end(), model_type) != list.end();
    };
    if (model_type.empty() && !r.has("model_type")) {
      diags.error(r.object_location(), "model_type", "missing required key",
                  fmt::format("coda builds these families: {}", supported_model_types()));
      return std::nullopt;
    }
    if (!known(kLlamaStyle)) {
      if (diags.error_count() == errors_before)  // not already a wrong-type error
        r.error("model_type",
                fmt::format("'{}' is not a model family coda builds (it builds {})", model_type,
                            supported_model_types()),
                known(kEncoders) ? "of the encoders coda builds BERT and RoBERTa (model_type "
                                   "bert, roberta, xlm-roberta); describe another in coda's LLM "
                                   "YAML (encoder: true, post_norm: true, docs/llm.md) if its "
                                   "layers are BERT's"
                                 : "describe the model in coda's LLM YAML (docs/llm.md) if it "
                                   "is one of these architectures under another name");
      return std::nullopt;
    }
  }
  c.name = std::filesystem::path(file).stem().string();
  r.string("_name_or_path", c.name);
  c.source = fmt::format("Hugging Face config.json: {}", file);

  // Which key each field came from, for validation messages.
  std::map<LlmField, std::string_view> keys;
  bool ok = true;
  const auto number = [&](LlmField field, std::string_view key, std::uint64_t& out,
                          bool required) {
    keys[field] = key;
    const bool read = r.number(key, out, required);
    if (required && !read) ok = false;
    return read;
  };

  bool head_dim_given = false;
  RotaryShare rotary;
  if (gpt2) {
    number(LlmField::Hidden, "n_embd", c.hidden, true);
    number(LlmField::Layers, "n_layer", c.layers, true);
    number(LlmField::Heads, "n_head", c.heads, true);
    c.kv_heads = c.heads;
    keys[LlmField::KvHeads] = "n_head";
    keys[LlmField::HeadDim] = "n_embd";
    c.ffn = 4 * c.hidden;
    number(LlmField::Ffn, "n_inner", c.ffn, false);
    if (!r.has("n_inner")) keys[LlmField::Ffn] = "n_embd";
    number(LlmField::MaxPositions, "n_positions", c.max_positions, true);
    number(LlmField::Vocab, "vocab_size", c.vocab, true);
    std::string act = "gelu_new";
    r.string("activation_function", act);
    if (act.rfind("gelu", 0) != 0)
      r.error("activation_function", fmt::format("'{}' is not a GELU", act),
              "GPT-2 configs use gelu_new; other activations are not modeled");
    c.gelu = gelu_form(act);
    // resid_pdrop, which embd_pdrop equals by default too: GPT2Config's default 0.1, GPTJConfig's
    // 0.0.
    c.dropout = gptj ? 0.0 : 0.1;
    r.real("resid_pdrop", c.dropout);
    c.ffn_type = FfnType::GeluMlp;
    c.norm = NormType::LayerNorm;
    c.positions = PositionEncoding::Learned;
    c.qkv_bias = c.out_bias = c.mlp_bias = true;
    c.tied_embeddings = true;
    if (gptj) gptj_keys(r, c, keys);
  } else {
    number(LlmField::Hidden, "hidden_size", c.hidden, true);
    number(LlmField::Layers, "num_hidden_layers", c.layers, true);
    number(LlmField::Heads, "num_attention_heads", c.heads, true);
    c.kv_heads = c.heads;
    if (!number(LlmField::KvHeads, "num_key_value_heads", c.kv_heads, false))
      keys[LlmField::KvHeads] = "num_attention_heads";
    head_dim_given = number(LlmField::HeadDim, "head_dim", c.head_dim, false);
    // Qwen2-MoE and Qwen3-MoE: every layer's FFN is experts of moe_intermediate_size
    // (intermediate_size is their dense layers', which mlp_only_layers and decoder_sparse_step
    // would ask for).
    const bool qwen3_moe = model_type == "qwen3_moe";
    const bool qwen2_moe = model_type == "qwen2_moe";
    // DeepSeek-V2 and V3 (and Kimi K2, which is DeepseekV3ForCausalLM): multi-head latent
    // attention, experts of moe_intermediate_size after first_k_dense_replace dense layers of
    // intermediate_size.
    const bool deepseek = model_type == "deepseek_v2" || model_type == "deepseek_v3";
    const bool falcon = model_type == "falcon";
    const std::string_view family = qwen2_moe ? "Qwen2-MoE" : "Qwen3-MoE";
    if (qwen3_moe || qwen2_moe || deepseek) {
      number(LlmField::Ffn, "moe_intermediate_size", c.ffn, true);
    } else if (falcon) {  // FalconConfig: ffn_hidden_size, default 4 x hidden_size
      c.ffn = 4 * c.hidden;
      if (!number(LlmField::Ffn, "ffn_hidden_size", c.ffn, false))
        keys[LlmField::Ffn] = "hidden_size";
    } else {
      number(LlmField::Ffn, "intermediate_size", c.ffn, true);
    }
    number(LlmField::Vocab, "vocab_size", c.vocab, true);
    // FalconConfig's default 2048 (tiiuae/falcon-7b's config.json states none).
    if (falcon) c.max_positions = 2048;
    number(LlmField::MaxPositions, "max_position_embeddings", c.max_positions, !falcon);
    std::string act;
    const bool gemma2 = model_type == "gemma2";
    const bool gemma3 = model_type == "gemma3_text";
    const bool gemma = model_type == "gemma" || gemma2 || gemma3;
    // Gemma 3's config names it hidden_activation (Gemma 2's carries both); Falcon's is
    // `activation`, default gelu.
    const std::string_view act_key = falcon                           ? "activation"
                                     : gemma3 && !r.has("hidden_act") ? "hidden_activation"
                                                                      : "hidden_act";
    if (falcon && !r.has(act_key)) {
      c.ffn_type = FfnType::GeluMlp;  // FalconConfig's activation default, "gelu"
      c.gelu = GeluForm::Erf;
    } else if (!r.has(act_key)) {
      diags.error(r.object_location(), std::string(act_key), "missing required key",
                  "silu (SwiGLU, LLaMA) or gelu (a plain GELU MLP)");
    } else if (r.string(act_key, act)) {
      if (act == "silu" || act == "swish")
        c.ffn_type = FfnType::SwiGlu;
      else if (act.rfind("gelu", 0) == 0) {
        c.ffn_type = gemma ? FfnType::GeGlu : FfnType::GeluMlp;  // Gemma's MLP is gated
        c.gelu = gelu_form(act);
      } else
        r.error(act_key, fmt::format("activation '{}' is not modeled", act),
                "silu (SwiGLU) or gelu, gelu_new, gelu_pytorch_tanh (a GELU MLP)");
    }
    if (r.has("rms_norm_eps"))
      c.norm = NormType::RmsNorm;
    else if (r.has("layer_norm_eps") || r.has("layer_norm_epsilon"))
      c.norm = NormType::LayerNorm;
    else
      diags.error(r.object_location(), "rms_norm_eps",
                  "cannot tell the norm: neither rms_norm_eps nor layer_norm_eps is present",
                  "add \"rms_norm_eps\": 1e-5 (RMSNorm) or \"layer_norm_eps\": 1e-5 (LayerNorm)");
    c.positions = PositionEncoding::Rotary;
    r.real("rope_theta", c.rope_theta);
    bool attention_bias = false;
    r.boolean("attention_bias", attention_bias);  // LLaMA: Q, K, V and output projections
    c.qkv_bias = c.out_bias = attention_bias;
    r.boolean("mlp_bias", c.mlp_bias);
    // Qwen2Attention (and Qwen2-MoE's): q, k, v with bias, o without.
    if (model_type == "qwen2" || qwen2_moe) c.qkv_bias = true;
    const bool qwen3 = model_type == "qwen3" || qwen3_moe;
    // Qwen3Attention and Gemma3Attention: q_norm and k_norm over head_dim
    if (qwen3 || gemma3) c.qk_norm = true;
    if (gemma) c.tied_embeddings = true;           // GemmaConfig's default
    // Sliding-window attention: Mistral's window (null: none); Qwen2 and Qwen3 only with
    // use_sliding_window, over some layers, which coda does not model.
    if (model_type == "qwen2" || qwen2_moe || qwen3) {
      bool use_window = false;
      r.boolean("use_sliding_window", use_window);
      if (use_window)
        r.error("use_sliding_window",
                fmt::format("sliding-window attention on some of {}'s layers is not modeled",
                            qwen3 ? "Qwen3" : "Qwen2"),
                "set it to false to price full attention on every layer");
    } else if (model_type == "mistral" || model_type == "mixtral" || model_type == "phi3" ||
               gemma2 || gemma3) {  // Mistral, Mixtral, Phi-3: every layer; Gemma: some layers
      r.number("sliding_window", c.sliding_window, false);
      // Gemma2DecoderLayer: is_sliding = not bool(layer_idx % 2), layers 0, 2, 4, ...
      if (gemma2 && c.sliding_window > 0) c.sliding_window_pattern = 2;
      if (gemma3 && c.sliding_window > 0) gemma3_layer_pattern(r, c, keys);
    }
    if (gemma2 || gemma3) {  // four RMSNorms a layer; Gemma 2's attention and LM head soft-cap
      c.post_norms = true;
      keys[LlmField::AttentionSoftcap] = "attn_logit_softcapping";
      keys[LlmField::FinalSoftcap] = "final_logit_softcapping";
      r.real("attn_logit_softcapping", c.attention_softcap);  // null: none
      r.real("final_logit_softcapping", c.final_softcap);
    }
    if (qwen3_moe || qwen2_moe) {
      number(LlmField::Experts, "num_experts", c.moe.experts, true);
      number(LlmField::TopK, "num_experts_per_tok", c.moe.top_k, true);
      // Qwen2MoeSparseMoeBlock: one shared expert of shared_expert_intermediate_size beside the
      // routed ones, its output scaled by sigmoid(shared_expert_gate(x)).
      if (qwen2_moe) {
        c.moe.shared_experts = 1;
        c.moe.shared_gate = true;
        keys[LlmField::SharedFfn] = "shared_expert_intermediate_size";
        number(LlmField::SharedFfn, "shared_expert_intermediate_size", c.moe.shared_ffn, true);
      }
      // The decoder layer: experts where (layer + 1) % decoder_sparse_step == 0 and the layer
      // is not in mlp_only_layers; coda's layers are all alike, so only "every layer" is built.
      std::uint64_t step = 1;
      if (r.number("decoder_sparse_step", step, false) && step != 1)
        r.error("decoder_sparse_step",
                fmt::format("experts on one layer in {}, dense FFNs on the others, are not "
                            "modeled",
                            step),
                fmt::format("coda builds {} with experts on every layer (decoder_sparse_step 1)",
                            family));
      if (const auto dense = r.array_size("mlp_only_layers"); dense && *dense > 0)
        r.error(
            "mlp_only_layers",
            fmt::format("{} dense layer{} among the MoE layers {} not modeled", *dense,
                        *dense == 1 ? "" : "s", *dense == 1 ? "is" : "are"),
            fmt::format("coda builds {} with experts on every layer (mlp_only_layers [])", family));
    } else if (deepseek) {
      deepseek_keys(r, c, keys, head_dim_given);
      if (diags.error_count() != errors_before) return std::nullopt;
    } else if (model_type == "bert" || model_type == "roberta" || model_type == "xlm-roberta") {
      bert_keys(r, c, keys);
    } else if (model_type == "gpt_neox") {
      gpt_neox_keys(r, c, rotary);
    } else if (falcon) {
      falcon_keys(r, c, keys);
    } else if (model_type == "phi") {
      phi_keys(r, c, rotary);
    } else if (r.has("num_local_experts") || r.has("num_experts_per_tok")) {
      number(LlmField::Experts, "num_local_experts", c.moe.experts, true);
      number(LlmField::TopK, "num_experts_per_tok", c.moe.top_k, true);
    }
  }
  r.boolean("tie_word_embeddings", c.tied_embeddings);
  std::string dtype;
  if (r.string("torch_dtype", dtype)) {
    if (dtype == "bfloat16")
      c.dtype = DataType::Bf16;
    else if (dtype == "float16")
      c.dtype = DataType::Fp16;
    else if (dtype == "float32")
      c.dtype = DataType::Fp32;
    else
      r.error("torch_dtype", fmt::format("'{}' is not a modeled element type", dtype),
              "bfloat16, float16 or float32");
  }
  if (!ok || diags.error_count() != errors_before) return std::nullopt;
  if (!head_dim_given && c.heads > 0) c.head_dim = c.hidden / c.heads;
  // A rotary share of the head (GPT-NeoX's rotary_pct, Phi's partial_rotary_factor), now that
  // head_dim is known: it must come out a whole, even number of dims.
  if (rotary.share && c.head_dim > 0) {
    const double dims = *rotary.share * static_cast<double>(c.head_dim);
    if (!(dims > 0) || dims != std::floor(dims) || static_cast<std::uint64_t>(dims) % 2 != 0 ||
        dims > static_cast<double>(c.head_dim)) {
      r.error(rotary.key,
              fmt::format("{} of a head of {} dims is not a whole, even number of rotary dims",
                          *rotary.share, c.head_dim),
              "RoPE rotates pairs of a head's dims: GPT-NeoX 0.25, Phi-2 0.4 of 80");
      return std::nullopt;
    }
    // The whole head is no partial rotary.
    c.rotary_dim = dims == static_cast<double>(c.head_dim) ? 0 : static_cast<std::uint64_t>(dims);
    keys[LlmField::RotaryDim] = rotary.key;
  }
  if (c.mla.enabled()) {  // rotary keys over the rope dims only (qk_rope_head_dim)
    c.kv_heads = c.heads;
    c.head_dim = c.mla.qk_nope_head_dim + c.mla.qk_rope_head_dim;
  }

  const auto place = [&](LlmField field) -> FieldPlace {
    const auto it = keys.find(field);
    if (it == keys.end()) return {r.object_location(), "", false};
    const bool given = field == LlmField::HeadDim ? head_dim_given : r.has(it->second);
    return {r.where(it->second), std::string(it->second), given};
  };
  if (!validate_llm_config(c, place, diags)) return std::nullopt;
  return c;
}

std::optional<LlmConfig> load_hf_config(const std::filesystem::path& file, Diagnostics& diags) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    diags.error({file.string(), 0, 0}, "", "cannot read the file",
                "check the path to the config.json");
    return std::nullopt;
  }
  std::ostringstream text;
  text << in.rdbuf();
  return parse_hf_config(text.str(), file.string(), diags);
}

}  // namespace coda::workload::llm
