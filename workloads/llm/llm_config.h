#pragma once
// A decoder-only transformer described by its dimensions (GPT-2/3, LLaMA, Mistral, Mixtral,
// Qwen3), read from coda YAML (configs/workloads/llm/*.yaml) or from a Hugging Face config.json
// (hf_config.h), and its headline numbers: parameters, KV-cache bytes per token, forward FLOPs per
// token. docs/llm.md describes the format and every convention used here.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "core/diagnostics.h"
#include "core/units.h"
#include "core/yaml_reader.h"
#include "workloads/data_type.h"

namespace coda::workload::llm {

// gelu_mlp: up, GELU, down (GPT-2/3). swiglu: gate and up, SiLU(gate) * up, down (LLaMA).
// geglu: gate and up, GELU(gate) * up, down (Gemma).
enum class FfnType : std::uint8_t { GeluMlp, SwiGlu, GeGlu };
// Whether the FFN has a gate projection (three matrices rather than two).
constexpr bool gated(FfnType type) { return type != FfnType::GeluMlp; }
// layer_norm: scale and shift (2 x hidden parameters). rms_norm: scale only (hidden).
enum class NormType : std::uint8_t { LayerNorm, RmsNorm };
// learned: a [max_positions x hidden] table added to the token embedding (GPT-2/3).
// rotary: RoPE applied to Q and K in every layer, no parameters (LLaMA, Mistral).
enum class PositionEncoding : std::uint8_t { Learned, Rotary };

// A GELU as the model's Hugging Face code computes it (config.json's activation_function or
// hidden_act; coda YAML's hidden_act, with the same names). Only an eager runtime
// (Runtime::HfTransformers, llm_builder.h) prices the forms apart: erf ("gelu", F.gelu) and tanh
// ("gelu_pytorch_tanh", F.gelu(approximate="tanh")) are one kernel; written_tanh ("gelu_new",
// transformers' NewGELUActivation: GPT-2's) is the tanh form written out in PyTorch operators,
// a kernel each. coda's own kernels price every form as one GELU op. unstated: not given.
enum class GeluForm : std::uint8_t { Unstated, Erf, Tanh, WrittenTanh };

std::string_view to_string(FfnType type);            // "gelu_mlp", "swiglu", "geglu"
std::string_view to_string(GeluForm form);  // "unstated", "gelu", "gelu_pytorch_tanh", "gelu_new"
std::string_view to_string(NormType type);           // "layer_norm", "rms_norm"
std::string_view to_string(PositionEncoding type);  // "learned", "rotary"

// Mixture of experts in place of each layer's FFN. experts == 0: a dense model.
// Routing assumption: tokens spread evenly over the experts, so each expert's GEMMs have
// ceil(tokens * top_k / experts) rows. Shared experts see every token.
struct MoeConfig {
  std::uint64_t experts = 0;
  std::uint64_t top_k = 0;
  std::uint64_t shared_experts = 0;
  // The shared experts' intermediate size together, when it is not shared_experts x ffn (Qwen2-MoE:
  // one shared expert of shared_expert_intermediate_size); 0: shared_experts x ffn.
  std::uint64_t shared_ffn = 0;
  // A sigmoid gate on the shared experts' output, sigmoid(x W_g) with W_g [hidden x 1]
  // (Qwen2-MoE's shared_expert_gate).
  bool shared_gate = false;
  // The shared experts' intermediate size together, given the routed experts' `ffn`.
  std::uint64_t shared_width(std::uint64_t ffn) const {
    return shared_ffn > 0 ? shared_ffn : shared_experts * ffn;
  }
  // The first `first_dense_layers` layers run a dense FFN of `dense_ffn` (0: the experts' ffn) in
  // place of the experts (DeepSeek's first_k_dense_replace and intermediate_size).
  std::uint64_t first_dense_layers = 0;
  std::uint64_t dense_ffn = 0;
  friend bool operator==(const MoeConfig&, const MoeConfig&) = default;
};

// DeepSeek-V2/V3's multi-head latent attention (MLA; DeepSeek-V2 report, 2024, section 2.1) in
// place of the QKV projection, when kv_lora_rank > 0. Per layer: Q from q_a (hidden ->
// q_lora_rank), an RMSNorm and q_b (-> heads x (qk_nope + qk_rope)), or from one projection when
// q_lora_rank is 0; kv_a (hidden -> kv_lora_rank + qk_rope): the latent c_kv and one rotary key
// shared by the heads; an RMSNorm of c_kv; kv_b (kv_lora_rank -> heads x (qk_nope + v_head_dim)):
// each head's key and value; attention of `heads` heads over qk_nope + qk_rope (the model's
// head_dim) with values of v_head_dim; out (heads x v_head_dim -> hidden). The KV cache holds
// the latent and the rotary key, kv_lora_rank + qk_rope_head_dim a token a layer, whole on every
// TP rank. docs/llm.md "Multi-head latent attention" has how prefill and decode run it.
struct MlaConfig {
  std::uint64_t q_lora_rank = 0;  // 0: a plain q projection (DeepSeek-V2-Lite)
  std::uint64_t kv_lora_rank = 0;
  std::uint64_t qk_nope_head_dim = 0;
  std::uint64_t qk_rope_head_dim = 0;
  std::uint64_t v_head_dim = 0;
  bool enabled() const { return kv_lora_rank > 0; }
  // A token's KV-cache elements a layer: the latent and the rotary key.
  std::uint64_t latent() const { return kv_lora_rank + qk_rope_head_dim; }
  friend bool operator==(const MlaConfig&, const MlaConfig&) = default;
};

struct LlmConfig {
  std::string name;
  std::string source;  // where the numbers come from (a paper, a model card, a config.json)
  std::uint64_t hidden = 0;
  std::uint64_t layers = 0;
  std::uint64_t heads = 0;
  std::uint64_t kv_heads = 0;  // == heads: MHA; a divisor: GQA; 1: MQA
  std::uint64_t head_dim = 0;  // readers default it to hidden / heads
  std::uint64_t ffn = 0;       // intermediate size (per expert for MoE)
  FfnType ffn_type = FfnType::GeluMlp;
  GeluForm gelu = GeluForm::Unstated;  // the GELU of a gelu_mlp or geglu FFN
  // The dropout probability of the residual branches and the embeddings (GPT-2's resid_pdrop and
  // embd_pdrop, 0.1): an nn.Dropout kernel each where the eager runtime trains the model
  // (Runtime::HfTransformers); coda's own kernels price no dropout. 0: none.
  double dropout = 0;
  NormType norm = NormType::LayerNorm;
  std::uint64_t vocab = 0;
  bool tied_embeddings = false;  // the LM head reuses the token-embedding table
  PositionEncoding positions = PositionEncoding::Rotary;
  double rope_theta = 10000.0;   // informational: RoPE's base does not change the cost
  // Biases on the Q, K and V projections (GPT-2/3, Qwen2), the attention's output projection
  // (GPT-2/3) and the FFN's projections (GPT-2/3). coda YAML's `bias: true` sets all three.
  bool qkv_bias = false;
  bool out_bias = false;
  bool mlp_bias = false;
  // Qwen3's QK norm: a norm of the model's type (RMSNorm in Qwen3) over each head's head_dim of
  // Q and of K, after the projections and before RoPE (Qwen3Attention's q_norm and k_norm), with
  // one scale of head_dim each: 2 x head_dim parameters a layer.
  bool qk_norm = false;
  // Gemma 2's sandwich norms: a norm on each branch's output before its residual add
  // (post_attention_layernorm, post_feedforward_layernorm), one scale of hidden each.
  bool post_norms = false;
  // Attention and FFN in parallel (GPT-J, GPT-NeoX's use_parallel_residual, Falcon's
  // parallel_attn, Phi-2): both branches read the layer's input, each through its own norm
  // (norm1, norm2), and the layer's output is x + attention + FFN. With shared_norm one norm
  // (norm1) feeds both (GPT-J's ln_1, Phi-2's and Falcon-7B's input_layernorm).
  bool parallel_residual = false;
  bool shared_norm = false;
  // RoPE over the first rotary_dim of each head's dims (GPT-NeoX's rotary_pct x head_dim, GPT-J's
  // rotary_dim, Phi-2's partial_rotary_factor); 0: all of them.
  std::uint64_t rotary_dim = 0;
  bool lm_head_bias = false;  // a bias on the LM head's logits (GPT-J, Phi-2)
  // An encoder (BERT, RoBERTa): bidirectional attention over the whole input, no KV cache, and in
  // place of the final norm and LM head the pooler (BertPooler: a hidden x hidden dense layer with
  // a bias and tanh over each sequence's first token). Prefill (encoding a batch) only.
  bool encoder = false;
  // Post-norm layers (BERT's): each branch's norm after its residual add, x = norm(x + f(x)),
  // the embeddings normed before the first layer and no final norm.
  bool post_norm = false;
  // Token-type (segment) embeddings added to the token's (BERT's type_vocab_size 2; 0: none).
  std::uint64_t type_vocab = 0;
  // Gemma 2's logit soft-capping, cap x tanh(x / cap): of the attention scores before the softmax
  // (attn_logit_softcapping) and of the LM head's logits (final_logit_softcapping); 0: none.
  double attention_softcap = 0;
  double final_softcap = 0;
  std::uint64_t max_positions = 0;
  // Sliding-window attention: on a windowed layer each token attends to the last
  // `sliding_window` tokens up to itself (a decode step reads at most that many from its cache,
  // a ring of `sliding_window` slots); 0: the whole context on every layer. Which layers:
  // sliding_window_pattern 0, all of them (Mistral 7B v0.1, Phi-3); P >= 2, all but every P-th,
  // layer l being global when (l + 1) % P == 0 (Hugging Face's sliding_window_pattern: Gemma 2
  // alternates, 2; Gemma 3, 6).
  std::uint64_t sliding_window = 0;
  std::uint64_t sliding_window_pattern = 0;
  // The window of layer `layer` (0-based): sliding_window, or 0 on a global layer.
  std::uint64_t window_of(std::uint64_t layer) const {
    if (sliding_window == 0) return 0;
    const bool global = sliding_window_pattern >= 2 && (layer + 1) % sliding_window_pattern == 0;
    return global ? 0 : sliding_window;
  }
  DataType dtype = DataType::Bf16;
  MoeConfig moe;
  MlaConfig mla;  // kv_lora_rank > 0: MLA (kv_heads == heads, head_dim == qk_nope + qk_rope)
  // Whether layer `layer` (0-based) runs the experts rather than a dense FFN.
  bool moe_layer(std::uint64_t layer) const {
    return moe.experts > 0 && layer >= moe.first_dense_layers;
  }
  // The dense layers' FFN width: ffn, or a MoE model's dense_ffn when it gives one.
  std::uint64_t dense_width() const {
    return moe.experts > 0 && moe.dense_ffn > 0 ? moe.dense_ffn : ffn;
  }
  // V's head dim: MLA's v_head_dim, else head_dim.
  std::uint64_t value_dim() const { return mla.enabled() ? mla.v_head_dim : head_dim; }
  // The TP ranks a token's KV cache is split over: tp (each rank holds its kv heads), or 1 for
  // MLA's latent, which every rank holds whole.
  std::uint64_t kv_cache_split(std::uint64_t tp) const { return mla.enabled() ? 1 : tp; }
  friend bool operator==(const LlmConfig&, const LlmConfig&) = default;
};

// Sizes above this are surely typos; it also keeps every product far from 64-bit overflow.
inline constexpr std::uint64_t kMaxLlmSize = (std::uint64_t{1} << 31) - 1;

// The fields that validation can complain about, for readers to map to their own keys.
// clang-format off
enum class LlmField : std::uint8_t {
  Hidden, Layers, Heads, KvHeads, HeadDim, Ffn, Vocab, MaxPositions, Experts, TopK, SharedExperts,
  SharedFfn, AttentionSoftcap, FinalSoftcap, SlidingWindowPattern, FirstDenseLayers, DenseFfn,
  QLoraRank, KvLoraRank, QkNopeHeadDim, QkRopeHeadDim, VHeadDim, RotaryDim, SharedNorm,
  TypeVocab, PostNorm, Dropout
};
// clang-format on

// Where a field was given: a location and a path in the reader's own terms.
struct FieldPlace {
  SourceLocation where;
  std::string path;
  bool given = false;  // whether the input named this field (a default was not)
};

// Checks sizes and their relations (zero sizes, heads not dividing hidden when head_dim was not
// given, kv_heads not dividing heads, MoE top_k outside [1, experts]) and that the soft caps are
// finite and not negative. `place` says where each
// field came from. Returns whether the config is valid; every problem is reported.
bool validate_llm_config(const LlmConfig& config,
                         const std::function<FieldPlace(LlmField)>& place, Diagnostics& diags);

// coda's YAML: schema_version 1, name, source, model: {...}; see docs/llm.md.
std::optional<LlmConfig> read_llm_config(const YamlReader& root, Diagnostics& diags);
// Loads a YAML file (with its `extends:` chain) and reads it.
std::optional<LlmConfig> load_llm_config(const std::filesystem::path& file, Diagnostics& diags);

// The numbers people quote for a model.
struct LlmHeadline {
  std::uint64_t parameters = 0;            // every weight: all experts, embeddings, LM head
  std::uint64_t embedding_parameters = 0;  // token and position tables, and an untied LM head
  std::uint64_t active_parameters = 0;     // the weights one token uses (top_k + shared experts)
  // 2 (K and V) x layers x kv_heads x head_dim x dtype; MLA: layers x (kv_lora_rank +
  // qk_rope_head_dim) x dtype; an encoder: 0.
  Bytes kv_cache_bytes_per_token;
  // 2 x (matmul weights one token uses, LM head included; an encoder's pooler, once a sequence,
  // not) + 2 x layers x context x heads x (head_dim + value dim) (Q K^T and P V against `context`
  // keys; MLA's as prefill runs it). Norms, activations and softmax excluded.
  std::uint64_t forward_flops_per_token = 0;
};
LlmHeadline llm_headline(const LlmConfig& config, std::uint64_t context);

}  // namespace coda::workload::llm
