#pragma once
// The time of one serving iteration (a forward pass over a batch of prefill chunks and decode
// tokens at their own context lengths) from coda's per-op pricing: the same LLM graphs, the same
// schedule and the same engine as `coda run --llm`. docs/serving.md "Iteration cost".
//
// An iteration with T new tokens, S sequences that sample a token, decode sequences at their
// contexts and prefill chunks is priced as
//
//   model(T) + layers x (layer(T) + decode attention + sum of the chunks' attention) + head(S)
//
//   layer(T)   one layer's ops but its attention, for T tokens: norms, the QKV, output and FFN
//              GEMMs (M = T), RoPE, the KV-cache writes, the residual adds, TP's all-reduces;
//              a MoE model's first dense layers priced apart, as a dense layer each
//   model(T)   the ops outside the layers but the LM head: the embedding and the final norm
//   head(S)    the LM head's GEMM for the S sequences that sample (a prefill chunk that does not
//              end its prompt samples nothing), as vLLM computes logits only where it samples
//   attention  the decode sequences as one attention op of their count, one query each, over
//              their mean context rounded up (a paged decode-attention kernel runs them as one
//              launch, and its bytes and MACs are linear in the context); each distinct prefill
//              chunk shape (new tokens, tokens already cached) as one causal attention op whose
//              queries are the chunk's, batched over the chunks of that shape. A model with a
//              sliding window prices its windowed layers apart: their decodes over the mean of
//              the contexts capped at the window, their chunks' attention with the window.
//              MLA (LlmConfig::mla): decodes in the absorbed form, the heads over one latent
//              KV head (its rows the keys, their first kv_lora_rank columns the values); a
//              chunk with cached tokens first expands their latents through kv_b (a GEMM of
//              its cached tokens), then attends with the prefill's head dims. layer(T) prices
//              every token's MLA projections in the prefill form (kv_b over the new tokens),
//              which has the absorbed GEMMs' MACs and weights.
//
// Each piece is priced from a graph built and run once per distinct size and kept (memoised by
// shape), so a 10,000-request simulation prices a few thousand small graphs. The pieces sum to
// `coda run`'s time for a uniform batch (sim/serving/tests/iteration_cost_test.cpp checks it).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "arch/hardware_model.h"
#include "core/diagnostics.h"
#include "core/units.h"
#include "mapper/fusion.h"
#include "sim/engine.h"
#include "workloads/graph.h"
#include "workloads/llm/llm_config.h"
#include "workloads/llm/quantization.h"

namespace coda::sim::serving {

// A prefill chunk: `tokens` new prompt tokens of a sequence that has `cached` tokens in its KV
// cache already; `samples`: the chunk ends the prompt, so the sequence samples a token.
struct PrefillChunk {
  std::uint64_t tokens = 1;
  std::uint64_t cached = 0;
  bool samples = true;
  friend bool operator==(const PrefillChunk&, const PrefillChunk&) = default;
};

struct IterationBatch {
  std::uint64_t decode_sequences = 0;
  // The keys the decode sequences attend to, summed: each sequence's cached tokens plus the
  // token it appends.
  std::uint64_t decode_context_sum = 0;
  // The same, each capped at the model's sliding window: what its windowed layers read (each
  // sequence's ring of a cache). Required (at least decode_sequences) for a model with one.
  std::uint64_t decode_window_context_sum = 0;
  std::vector<PrefillChunk> prefill;
  std::uint64_t tokens() const;    // decode_sequences + the chunks' tokens
  std::uint64_t sampling() const;  // decode_sequences + the chunks that end their prompt
};

// The iteration time's parts, seconds.
struct IterationTime {
  double linear = 0;     // model(T) + layers x layer(T)
  double attention = 0;  // every layer's decode and chunk attention, each at its window
  double head = 0;       // head(S)
  double total() const { return linear + attention + head; }
};

struct PricerOptions {
  std::uint64_t tp = 1;  // tensor-parallel ranks of one replica
  // Pipeline stages of one replica (dividing the layers, as Megatron-LM and coda's builder split
  // them); each stage's tp chips hold its layers, the first also the embedding and the last the
  // final norm and the LM head. docs/serving.md "Pipeline parallelism".
  std::uint64_t pp = 1;
  // nullopt: the arch's vendor fusion (calibration.fusion), else epilogue: what every serving
  // engine runs at least (attention as one kernel, FlashAttention or TensorRT-LLM's FMHA; a
  // GEMM with its epilogue), as the validation corpus prices whole-model rows.
  std::optional<mapper::FusionMode> fusion;
  const Engine* engine = nullptr;  // null: the analytical engine
  // Weights, GEMM inputs and KV cache as deployed (workloads/llm/quantization.h).
  workload::llm::Quantization quant;
};

// One replica's memory (per chip): what the weights take and the activations of the largest
// iteration, so that the rest can hold the KV cache.
struct ReplicaMemory {
  Bytes weights;             // this rank's share of the weights
  Bytes activations;         // the peak activations of a forward of max_tokens tokens
  Bytes kv_bytes_per_token;  // this rank's share: 2 x layers x kv_heads / tp x head_dim x dtype
};

class IterationPricer {
 public:
  // Checks that the model builds at this TP and that every op of its layer runs on `hw` (errors
  // in `diags`, paths "model", "tp" and "arch"). `hw` must outlive the pricer.
  static std::optional<IterationPricer> make(const workload::llm::LlmConfig& model,
                                             const arch::HardwareModel& hw,
                                             const PricerOptions& options, Diagnostics& diags);

  IterationTime price(const IterationBatch& batch);

  // The parts on their own (seconds, one layer where it says so).
  double layer_tokens(std::uint64_t tokens);  // layer(T)
  double dense_layer(std::uint64_t tokens);   // a MoE model's dense layer of T tokens; 0: none
  double model_tokens(std::uint64_t tokens);  // model(T)
  double head(std::uint64_t sequences);       // head(S); 0 for S = 0
  // `window`: AttentionSpec::window (causal only; 0 none).
  double attention(std::uint64_t batch, std::uint64_t queries, std::uint64_t keys, bool causal,
                   std::uint64_t window = 0);

  // One chip's memory: with pipeline stages, the stage holding the most weights and a stage's
  // share of a token's KV cache (its layers').
  ReplicaMemory memory(std::uint64_t max_tokens);
  // An iteration's time on each pipeline stage, first to last: each stage's layers (their
  // layer(T), dense layers included, and attention at their window), the embedding's model(T)
  // on the first and head(S) on the last; {time.total()} with one stage. Sums to time.total().
  std::vector<double> stage_seconds(const IterationBatch& batch, const IterationTime& time);
  // Seconds to pass `tokens` tokens' activations from a stage to the next (0 with one stage):
  // vLLM's hidden states and residual, each TP rank sending 1/tp of them over the chip links and
  // the next stage's ranks all-gathering them, each a collective with its fixed cost.
  double stage_transfer(std::uint64_t tokens);
  // Seconds to copy `blocks` KV-cache blocks of `block_size` tokens between a chip and its
  // host's memory, either way, as vLLM's V0 worker swaps them (cache_engine.swap_in/swap_out):
  // one copy a block a layer a cache tensor (K and V; MLA's one latent) of the chip's stage, each
  // a cudaMemcpyAsync issued back to back, costing the arch's host_link copy_overhead or its
  // bytes at the link's bandwidth, whichever is longer (the copy engine moves one while the host
  // issues the next). Every rank copies its share at once, over its own link. The arch must
  // state host_link (CODA_CHECK).
  double swap_seconds(std::uint64_t blocks, std::uint64_t block_size) const;
  std::uint64_t layers() const { return model_.layers; }
  const workload::llm::LlmConfig& model() const { return model_; }
  const arch::HardwareModel& hardware() const { return *hw_; }
  std::uint64_t tp() const { return options_.tp; }
  std::uint64_t pp() const { return options_.pp; }
  mapper::FusionMode fusion() const { return fusion_; }  // options.fusion, resolved
  // Graphs priced so far (for the benchmark's report).
  std::size_t graphs_priced() const { return priced_; }

 private:
  IterationPricer(const workload::llm::LlmConfig& model, const arch::HardwareModel& hw,
                  const PricerOptions& options);
  struct TokenParts {
    double layer = 0, model = 0, head = 0;
    double dense_layer = 0;  // a MoE model's first dense layers: one of them
    Bytes peak_activations;
  };
  const TokenParts& token_parts(std::uint64_t tokens);
  // Splits a priced token graph into its parts and keeps them under `tokens`; `dense_layer` is
  // one dense layer's time (0 without dense layers).
  const TokenParts& keep_token_parts(std::uint64_t tokens, const workload::Graph& g,
                                     const std::vector<double>& seconds, Bytes peak_activations,
                                     double dense_layer);
  // One dense layer of `tokens` (its layer's ops), priced; nullopt (errors in `diags` when
  // given) when it does not run.
  std::optional<double> dense_layer_tokens(std::uint64_t tokens, Diagnostics* diags);
  // MLA's attention pieces (LlmConfig::mla): decode in the absorbed form over the latent cache,
  // a prefill chunk with the expansion of its cached tokens' latents (docs/serving.md).
  double mla_attention(std::uint64_t batch, std::uint64_t queries, std::uint64_t keys, bool causal);
  // One layer's attention for a batch: a layer without the model's window and one with it.
  struct LayerAttention {
    double global = 0;
    double windowed = 0;
  };
  LayerAttention layer_attention(const IterationBatch& batch);
  // stage_transfer, or nullopt with `why` when the arch cannot price the transfer.
  std::optional<double> stage_hop(std::uint64_t tokens, std::string& why);

  workload::llm::LlmConfig model_;  // as given
  workload::llm::LlmConfig one_layer_;  // one layer (a MoE model's: one of its expert layers)
  // A MoE model with first dense layers: one of those, as a dense one-layer model.
  std::optional<workload::llm::LlmConfig> dense_layer_;
  const arch::HardwareModel* hw_;
  PricerOptions options_;
  mapper::FusionMode fusion_;
  Bytes weights_;  // this rank's share of the weights, from the whole model built once
  std::uint64_t windowed_layers_ = 0;  // layers with the model's sliding window
  std::map<std::uint64_t, TokenParts> token_memo_;
  std::map<std::tuple<std::uint64_t, std::uint64_t, std::uint64_t, bool, std::uint64_t>, double>
      attention_memo_;
  std::map<std::uint64_t, double> hop_memo_;  // stage_transfer by tokens
  std::size_t priced_ = 0;
};

}  // namespace coda::sim::serving
