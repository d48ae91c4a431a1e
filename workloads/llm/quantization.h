#pragma once
// How an LLM is quantized for inference (docs/llm.md "Quantization"): the types of the linear
// layers' weights, of their inputs and of the KV cache where they differ from the model's type.
// The schemes are the ones inference engines deploy:
//
//   none     everything in the model's type
//   w8a16    int8 weights, one scale per output channel (TensorRT-LLM int8 weight-only,
//            bitsandbytes LLM.int8 inference); inputs and the compute in the model's type
//   w4a16    int4 weights with one scale (the model's type) per group of `group` weights along
//            the input dimension, 128 by default (AWQ, GPTQ, Marlin); `w4a16:gN` names the group
//   w8a8     int8 weights and inputs, int8 tensor-core GEMMs (SmoothQuant, per-channel weight and
//            per-token input scales)
//   fp8      fp8 e4m3 weights and inputs, fp8 GEMMs with per-tensor scales (TensorRT-LLM
//            --quantization FP8, NVIDIA ModelOpt, vLLM fp8)
//
// and, on their own, the KV cache's type (--kv-dtype: fp8_e4m3, int8, ...) and an FP8 prefill
// attention (--fp8-context-fmha). The embeddings, the
// norms, the router of a mixture of experts and the LM head keep the model's type, as AWQ, GPTQ
// and ModelOpt leave them; every GEMM writes the model's type (its epilogue applies the scales).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "workloads/data_type.h"

namespace coda::workload::llm {

struct Quantization {
  std::optional<DataType> weights;  // the linear layers' weights; nullopt: the model's type
  // Weight-only schemes: one scale per `group` weights along a GEMM's input dimension (so a
  // [k x n] weight carries [k / group x n] scales in the model's type); 0: one scale per output
  // channel, whose n values coda leaves out (k times fewer than the weights).
  std::uint64_t group = 0;
  std::optional<DataType> activations;  // the linear layers' inputs; nullopt: the model's type
  std::optional<DataType> kv_cache;     // the KV cache; nullopt: the model's type
  // A prefill's attention reads Q in this type and computes in it, K and V from the cache in its
  // type (TensorRT-LLM's FP8 context FMHA, use_fp8_context_fmha, with an FP8 KV cache); nullopt:
  // the model's type. Decode attention keeps Q in the model's type.
  std::optional<DataType> context_attention;
  bool any() const { return weights || activations || kv_cache || context_attention; }
  friend bool operator==(const Quantization&, const Quantization&) = default;
};

// The default group of w4a16 (AWQ's and GPTQ's q_group_size / group_size).
inline constexpr std::uint64_t kDefaultQuantGroup = 128;

// A scheme by name: none, w8a16, w4a16 (w4a16:gN for a group of N), w8a8, fp8. The KV cache is
// left as it is. nullopt with `error` set (naming the valid schemes) otherwise.
std::optional<Quantization> parse_quantization(std::string_view text, std::string& error);

// Gives `quant` the scheme's weights, group and inputs, keeping its KV cache's type (which
// --kv-dtype and kv_dtype: set apart).
inline void set_scheme(Quantization& quant, const Quantization& scheme) {
  quant.weights = scheme.weights;
  quant.group = scheme.group;
  quant.activations = scheme.activations;
}

// The scheme's name as parse_quantization reads it ("w4a16:g128"), "none" without weights.
std::string scheme_name(const Quantization& quant);

// What differs from the model's types, as "quant=w4a16:g128 kv_dtype=fp8_e4m3
// context_attention=fp8_e4m3" (each part only when set; empty for none): a source's
// description (workloads/source.h, whose hash it enters) and a command's headline.
std::string describe(const Quantization& quant);

// The schemes parse_quantization accepts, for hints and --help.
std::string_view quantization_list();

// The KV-cache types coda models (16- and 8-bit floats, fp32 and int8), as a list for hints.
bool is_kv_cache_type(DataType type);
std::string_view kv_cache_type_list();

}  // namespace coda::workload::llm
