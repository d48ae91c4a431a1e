#pragma once
// Reading a Hugging Face transformers config.json into an LlmConfig.
//
// Two families of keys are understood, chosen by model_type:
//   GPT-2 (model_type "gpt2", or n_embd with no model_type): n_embd, n_layer, n_head, n_inner
//     (null: 4 x n_embd), n_positions, vocab_size, activation_function; layer norm, learned
//     positions, biases, tied embeddings (tie_word_embeddings may say otherwise).
//   LLaMA-style (model_type llama, mistral, mixtral, qwen2, qwen2_moe, qwen3, qwen3_moe, gemma,
//     gemma2, gemma3_text, phi3):
//     hidden_size, num_hidden_layers, num_attention_heads, num_key_value_heads (default:
//     heads), head_dim (default: hidden / heads), intermediate_size, hidden_act (silu: SwiGLU;
//     gelu*: a plain GELU MLP, Gemma's gated GeGLU), rms_norm_eps or layer_norm_eps (which one is
//     present chooses the norm), vocab_size, tie_word_embeddings (default false; Gemma true),
//     rope_theta, max_position_embeddings, attention_bias (Q, K, V and output projections; default
//     false), mlp_bias, num_local_experts and num_experts_per_tok (Mixtral MoE), sliding_window
//     (Mistral, Mixtral, Phi-3; null: none); rotary positions. Qwen2's Q, K and V projections carry
//     biases (its attention implies them); its use_sliding_window: true is refused. Qwen3 adds
//     the QK norm (q_norm, k_norm: implied by the model_type), the same use_sliding_window rule;
//     Qwen3-MoE reads num_experts, num_experts_per_tok and moe_intermediate_size (the experts'
//     FFN; intermediate_size is unused) and refuses dense layers among the experts
//     (decoder_sparse_step other than 1, a non-empty mlp_only_layers). Qwen2-MoE (qwen2_moe) is
//     the same with Qwen2's QKV biases and one shared expert of shared_expert_intermediate_size
//     behind its sigmoid gate (shared_expert_gate). Gemma 2 (gemma2) is
//     Gemma's layer with post norms, attn_logit_softcapping and final_logit_softcapping (null:
//     none) and a sliding_window on every other layer. Gemma 3 (gemma3_text) adds the QK norm,
//     reads hidden_activation, and windows all but every sliding_window_pattern-th layer (or
//     as layer_types lists them, when that is one period; default 6).
//   Both: torch_dtype (bfloat16, float16, float32; default bf16), _name_or_path (the name).
// Any other model_type, or none (without n_embd), is an error naming the families coda builds:
// never a silent LLaMA. Every other key is ignored: real configs carry many that do not change
// the cost.
//
// Diagnostics name the file, the line and column of the top-level key (found by a scan of the
// text, since nlohmann::json keeps no positions), and the key as the path. A missing key is
// reported at the opening brace; a JSON syntax error at the byte where parsing stopped.

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "core/diagnostics.h"
#include "workloads/llm/llm_config.h"

namespace coda::workload::llm {

// `file` names the text in diagnostics; the config's name is _name_or_path, else the file stem.
std::optional<LlmConfig> parse_hf_config(std::string_view json_text, const std::string& file,
                                         Diagnostics& diags);
std::optional<LlmConfig> load_hf_config(const std::filesystem::path& file, Diagnostics& diags);

}  // namespace coda::workload::llm
