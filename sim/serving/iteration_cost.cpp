#include "sim/serving/iteration_cost.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <string_view>

#include "core/check.h"
#include "mapper/schedule.h"
#include "sim/analytical/analytical_engine.h"
#include "sim/analytical/cluster_collective.h"
#include "workloads/builders.h"
#include "workloads/graph.h"
#include "workloads/llm/llm_builder.h"
#include "workloads/tensor.h"

namespace coda::sim::serving {
namespace {

namespace llm = workload::llm;

// The ops of a priced graph, each op's seconds.
struct Priced {
  std::vector<double> seconds;
  Bytes peak_activations;
};

std::optional<Priced> price_graph(const workload::Graph& g, const arch::HardwareModel& hw,
                                  mapper::FusionMode fusion, const Engine* engine_or_null,
                                  Diagnostics* diags) {
  const mapper::Schedule schedule =
      mapper::schedule_graph(g, hw, {.precision = std::nullopt, .fusion = fusion});
  if (!schedule.unsupported.empty()) {
    if (diags != nullptr)
      for (const mapper::UnsupportedOp& op : schedule.unsupported)
        diags->error({}, "arch",
                     fmt::format("'{}' cannot run on '{}': {}", op.name, hw.name(), op.reason),
                     "serve on an arch with a unit for every op of the model's layer, or with a "
                     "--dtype its units compute");
    return std::nullopt;
  }
  const analytical::AnalyticalEngine analytical;
  const Engine& engine = engine_or_null != nullptr ? *engine_or_null : analytical;
  const results::RunResult run = engine.run(schedule, hw, {});
  CODA_CHECK(run.ops.size() == g.ops.size());
  Priced out;
  const double clock = hw.clock().value;
  out.seconds.reserve(run.ops.size());
  for (const results::OpResult& op : run.ops)
    out.seconds.push_back(static_cast<double>(op.cost.cycles.value) / clock);
  out.peak_activations = schedule.memory.peak_activations;
  return out;
}

// The graph of `tokens` one-token sequences (a prefill of batch `tokens`, sequence 1): every
// token-linear op at M = tokens, and an LM head over every token.
std::optional<workload::Graph> token_graph(const llm::LlmConfig& one_layer, std::uint64_t tokens,
                                           const PricerOptions& options, Diagnostics& diags) {
  const llm::LlmPhase phase{
      .kind = llm::PhaseKind::Prefill, .batch = tokens, .seq_len = 1, .quant = options.quant};
  const llm::Parallelism par{.tp = options.tp};
  return llm::try_build_llm(one_layer, phase, par, diags);
}

bool in_layer(std::string_view name) { return name.starts_with("L0."); }
// The LM head's ops, priced per sampled sequence: the last token's gather, the head's GEMM and a
// final soft cap over its logits (Gemma 2).
bool is_head(std::string_view name) {
  return name == "last_token" || name.starts_with("lm_head") || name == "final_softcap";
}

}  // namespace

std::uint64_t IterationBatch::tokens() const {
  std::uint64_t n = decode_sequences;
  for (const PrefillChunk& c : prefill) n += c.tokens;
  return n;
}

std::uint64_t IterationBatch::sampling() const {
  std::uint64_t n = decode_sequences;
  for (const PrefillChunk& c : prefill) n += c.samples ? 1 : 0;
  return n;
}

IterationPricer::IterationPricer(const llm::LlmConfig& model, const arch::HardwareModel& hw,
                                 const PricerOptions& options)
    : model_(model),
      one_layer_(model),
      hw_(&hw),
      options_(options),
      fusion_(options.fusion.value_or(
          hw.spec().calibration.fusion.value_or(mapper::FusionMode::Epilogue))) {
  one_layer_.layers = 1;
  if (model.moe.experts > 0 && model.moe.first_dense_layers > 0) {
    one_layer_.moe.first_dense_layers = 0;  // its one layer runs the experts
    llm::LlmConfig dense = model;
    dense.layers = 1;
    dense.ffn = model.dense_width();
    dense.moe = {};
    dense_layer_ = dense;
  }
  for (std::uint64_t l = 0; l < model.layers; ++l)
    if (model.window_of(l) > 0) ++windowed_layers_;
}

std::optional<double> IterationPricer::dense_layer_tokens(std::uint64_t tokens,
                                                          Diagnostics* diags) {
  if (!dense_layer_) return 0.0;
  Diagnostics local;
  const std::optional<workload::Graph> g =
      token_graph(*dense_layer_, tokens, options_, diags != nullptr ? *diags : local);
  if (!g) return std::nullopt;
  const std::optional<Priced> priced = price_graph(*g, *hw_, fusion_, options_.engine, diags);
  if (!priced) return std::nullopt;
  ++priced_;
  double s = 0;
  for (std::size_t i = 0; i < g->ops.size(); ++i)
    if (in_layer(g->ops[i].name) && g->ops[i].name != "L0.attention") s += priced->seconds[i];
  return s;
}

std::optional<IterationPricer> IterationPricer::make(const llm::LlmConfig& model,
                                                     const arch::HardwareModel& hw,
                                                     const PricerOptions& options,
                                                     Diagnostics& diags) {
  // The whole model at this TP (TP must divide its heads, kv_heads and FFN).
  Diagnostics build;
  const llm::LlmPhase phase{
      .kind = llm::PhaseKind::Decode, .batch = 1, .seq_len = 1, .quant = options.quant};
  if (!llm::check_llm_build(model, phase, {.tp = options.tp, .pp = options.pp}, build)) {
    for (const Diagnostic& d : build.all()) {
      const std::string path = d.path.starts_with("parallelism.tp")   ? "tp"
                               : d.path.starts_with("parallelism.pp") ? "pp"
                               : d.path.starts_with("phase.quant")    ? "quant"
                                                                      : "model";
      diags.error({}, path, d.message, d.hint);
    }
    return std::nullopt;
  }
  IterationPricer pricer(model, hw, options);
  // Every op of the layer, the embedding and the head must run on the arch: price one token
  // (kept, as token_parts(1) would price it).
  const std::optional<workload::Graph> g = token_graph(pricer.one_layer_, 1, options, diags);
  if (!g) return std::nullopt;
  const std::optional<Priced> priced = price_graph(*g, hw, pricer.fusion_, options.engine, &diags);
  if (!priced) return std::nullopt;
  ++pricer.priced_;
  const std::optional<double> dense = pricer.dense_layer_tokens(1, &diags);
  if (!dense) return std::nullopt;
  pricer.keep_token_parts(1, *g, priced->seconds, priced->peak_activations, *dense);
  // A chip's weights: its TP share of the whole model, or with pipeline stages of the stage that
  // holds the most (the first has the embedding, the last the final norm and the LM head).
  for (std::uint64_t stage = 0; stage < options.pp; ++stage) {
    const std::optional<workload::Graph> part = llm::try_build_llm(
        model, phase, {.tp = options.tp, .pp = options.pp, .stage = stage}, diags);
    CODA_CHECK(part.has_value());  // check_llm_build passed
    const Bytes w = workload::total_bytes(*part, workload::TensorKind::Weight);
    if (w.value > pricer.weights_.value) pricer.weights_ = w;
  }
  if (options.pp > 1) {
    const std::optional<arch::InterconnectSpec>& links = hw.spec().interconnect;
    if (links && options.tp * options.pp > links->chips) {
      diags.error(
          {}, "pp",
          fmt::format("a replica of tp {} x pp {} = {} chips spans more than the {} "
                      "chips of one '{}' node; coda serve prices one node's links",
                      options.tp, options.pp, options.tp * options.pp, links->chips, hw.name()),
          fmt::format("at most {} chips a replica (tp x pp)", links->chips));
      return std::nullopt;
    }
    std::string why;
    if (!pricer.stage_hop(1, why)) {
      diags.error(
          {}, "pp",
          fmt::format("'{}' cannot pass activations between pipeline stages: {}", hw.name(), why),
          "serve on an arch with chip links (interconnect), or without --pp");
      return std::nullopt;
    }
  }
  return pricer;
}

const IterationPricer::TokenParts& IterationPricer::token_parts(std::uint64_t tokens) {
  if (const auto it = token_memo_.find(tokens); it != token_memo_.end()) return it->second;
  Diagnostics diags;
  const std::optional<workload::Graph> g = token_graph(one_layer_, tokens, options_, diags);
  CODA_CHECK(g.has_value());  // make() checked the model at this TP; any batch builds
  const std::optional<Priced> priced = price_graph(*g, *hw_, fusion_, options_.engine, nullptr);
  CODA_CHECK(priced.has_value());  // make() priced the same ops
  ++priced_;
  const std::optional<double> dense = dense_layer_tokens(tokens, nullptr);
  CODA_CHECK(dense.has_value());  // make() priced the same ops
  return keep_token_parts(tokens, *g, priced->seconds, priced->peak_activations, *dense);
}

const IterationPricer::TokenParts& IterationPricer::keep_token_parts(
    std::uint64_t tokens, const workload::Graph& g, const std::vector<double>& seconds,
    Bytes peak_activations, double dense_layer) {
  TokenParts parts;
  parts.dense_layer = dense_layer;
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    const std::string_view name = g.ops[i].name;
    const double s = seconds[i];
    if (name == "L0.attention") continue;  // priced on its own: attention()
    if (in_layer(name))
      parts.layer += s;
    else if (is_head(name))
      parts.head += s;
    else
      parts.model += s;
  }
  parts.peak_activations = peak_activations;
  return token_memo_.emplace(tokens, parts).first->second;
}

double IterationPricer::layer_tokens(std::uint64_t tokens) {
  return tokens == 0 ? 0 : token_parts(tokens).layer;
}
double IterationPricer::dense_layer(std::uint64_t tokens) {
  return tokens == 0 ? 0 : token_parts(tokens).dense_layer;
}
double IterationPricer::model_tokens(std::uint64_t tokens) {
  return tokens == 0 ? 0 : token_parts(tokens).model;
}
double IterationPricer::head(std::uint64_t sequences) {
  return sequences == 0 ? 0 : token_parts(sequences).head;
}

double IterationPricer::attention(std::uint64_t batch, std::uint64_t queries, std::uint64_t keys,
                                  bool causal, std::uint64_t window) {
  if (batch == 0) return 0;
  window = workload::effective_window(window, keys);  // as make_attention keeps it
  const auto key = std::make_tuple(batch, queries, keys, causal, window);
  if (const auto it = attention_memo_.find(key); it != attention_memo_.end()) return it->second;
  if (model_.mla.enabled())
    return attention_memo_.emplace(key, mla_attention(batch, queries, keys, causal)).first->second;
  const std::uint64_t d = model_.head_dim;
  const workload::AttentionParams p{.batch = batch,
                                    .heads = model_.heads / options_.tp,
                                    .kv_heads = model_.kv_heads / options_.tp,
                                    .q_len = queries,
                                    .kv_len = keys,
                                    .head_dim = d,
                                    .causal = causal,
                                    .softcap = model_.attention_softcap,
                                    .window = window};
  // As the LLM builder binds it: Q an activation, K and V the KV cache.
  workload::Graph g;
  g.name = "serving.attention";
  const DataType dt = model_.dtype;
  const DataType kv = options_.quant.kv_cache.value_or(dt);
  // A prefill chunk's Q in the context attention's type (FP8 context FMHA), a decode's in the
  // model's, as the builder types them.
  const DataType q_type = causal ? options_.quant.context_attention.value_or(dt) : dt;
  const workload::TensorId q = g.add_tensor({"q", {batch, p.heads, queries, d}, q_type});
  const workload::TensorId k =
      g.add_tensor({"kv_cache.k", {batch, p.kv_heads, keys, d}, kv, workload::TensorKind::KvCache});
  const workload::TensorId v =
      g.add_tensor({"kv_cache.v", {batch, p.kv_heads, keys, d}, kv, workload::TensorKind::KvCache});
  workload::Op op = workload::make_attention("attention", p, dt);
  op.space.accesses[0].dtype = q_type;  // as the builder's emit types them
  op.space.accesses[1].dtype = op.space.accesses[2].dtype = kv;
  g.add(std::move(op), {q, k, v});
  const std::optional<Priced> priced = price_graph(g, *hw_, fusion_, options_.engine, nullptr);
  CODA_CHECK(priced.has_value());  // make() priced the layer's attention op on this arch
  ++priced_;
  return attention_memo_.emplace(key, priced->seconds.front()).first->second;
}

double IterationPricer::mla_attention(std::uint64_t batch, std::uint64_t queries,
                                      std::uint64_t keys, bool causal) {
  const llm::MlaConfig& m = model_.mla;
  const std::uint64_t heads = model_.heads / options_.tp;
  const DataType dt = model_.dtype;
  const DataType kv = options_.quant.kv_cache.value_or(dt);
  workload::Graph g;
  g.name = "serving.mla_attention";
  if (!causal) {  // decode, absorbed: the heads over the latent rows (as the LLM builder's)
    const std::vector<std::uint64_t> rows{batch, 1, keys, m.latent()};
    const workload::AttentionParams p{.batch = batch,
                                      .heads = heads,
                                      .kv_heads = 1,
                                      .q_len = queries,
                                      .kv_len = keys,
                                      .head_dim = m.latent(),
                                      .value_dim = m.kv_lora_rank};
    const workload::TensorId q = g.add_tensor({"q", {batch, heads, queries, m.latent()}, dt});
    const workload::TensorId cache =
        g.add_tensor({"kv_cache.latent", rows, kv, workload::TensorKind::KvCache});
    workload::Op op = workload::make_attention("attention", p, dt);
    op.space.accesses[2].shape = rows;  // V: the rows' first kv_lora_rank columns
    op.space.accesses[1].dtype = op.space.accesses[2].dtype = kv;
    g.add(std::move(op), {q, cache, cache});
  } else {
    // A chunk: its cached tokens' latents expanded through kv_b (the new tokens' are in
    // layer(T)), then the prefill's attention over every key.
    const std::uint64_t cached = keys - queries, nope = m.qk_nope_head_dim;
    const std::uint64_t kv_width = heads * (nope + m.v_head_dim);
    if (cached > 0) {
      // In the scheme's GEMM types when it quantizes inputs too (w8a8, fp8); a weight-only
      // scheme's kv_b is priced in the model's type (its weights are 1/batch of the bytes read).
      const workload::llm::Quantization& quant = options_.quant;
      const DataType a_type = quant.activations.value_or(dt);
      const DataType w_type = quant.activations ? quant.weights.value_or(dt) : dt;
      const workload::TensorId latent = g.add_tensor({"kv_cache.latent",
                                                      {batch * cached, m.kv_lora_rank},
                                                      a_type,
                                                      workload::TensorKind::KvCache});
      const workload::TensorId w = g.add_tensor(
          {"kv_b.weight", {m.kv_lora_rank, kv_width}, w_type, workload::TensorKind::Weight});
      const workload::TensorId out = g.add_tensor({"kv_b.out", {batch * cached, kv_width}, dt});
      workload::Op gemm = workload::make_gemm("kv_b", batch * cached, kv_width, m.kv_lora_rank, dt);
      gemm.space.accesses[0].dtype = a_type;
      gemm.space.accesses[1].dtype = w_type;
      g.add(std::move(gemm), {latent, w, out});
    }
    const workload::AttentionParams p{.batch = batch,
                                      .heads = heads,
                                      .kv_heads = heads,
                                      .q_len = queries,
                                      .kv_len = keys,
                                      .head_dim = nope + m.qk_rope_head_dim,
                                      .causal = true,
                                      .value_dim = m.v_head_dim};
    const DataType q_type = options_.quant.context_attention.value_or(dt);
    const workload::TensorId q = g.add_tensor({"q", {batch, heads, queries, p.head_dim}, q_type});
    const workload::TensorId k = g.add_tensor({"k", {batch, heads, keys, p.head_dim}, dt});
    const workload::TensorId v = g.add_tensor({"v", {batch, heads, keys, m.v_head_dim}, dt});
    workload::Op op = workload::make_attention("attention", p, dt);
    op.space.accesses[0].dtype = q_type;
    g.add(std::move(op), {q, k, v});
  }
  const std::optional<Priced> priced = price_graph(g, *hw_, fusion_, options_.engine, nullptr);
  CODA_CHECK(priced.has_value());  // make() priced the layer's attention and GEMMs on this arch
  ++priced_;
  double s = 0;
  for (const double x : priced->seconds) s += x;
  return s;
}

IterationPricer::LayerAttention IterationPricer::layer_attention(const IterationBatch& batch) {
  LayerAttention a;
  const std::uint64_t window = model_.sliding_window;
  const bool windowed = windowed_layers_ > 0;
  if (batch.decode_sequences > 0) {
    const std::uint64_t n = batch.decode_sequences;
    const std::uint64_t mean_keys = (batch.decode_context_sum + n - 1) / n;
    a.global += attention(n, 1, mean_keys, false);
    if (windowed) {
      CODA_CHECK(batch.decode_window_context_sum >= n);  // each sequence reads at least a key
      const std::uint64_t mean_window_keys = (batch.decode_window_context_sum + n - 1) / n;
      a.windowed += attention(n, 1, mean_window_keys, false);
    }
  }
  // Chunks of one shape run as one batched op.
  std::map<std::pair<std::uint64_t, std::uint64_t>, std::uint64_t> shapes;
  for (const PrefillChunk& c : batch.prefill) ++shapes[{c.tokens, c.cached}];
  for (const auto& [shape, count] : shapes) {
    const std::uint64_t keys = shape.first + shape.second;
    a.global += attention(count, shape.first, keys, true);
    if (windowed) a.windowed += attention(count, shape.first, keys, true, window);
  }
  return a;
}

IterationTime IterationPricer::price(const IterationBatch& batch) {
  IterationTime t;
  const std::uint64_t tokens = batch.tokens();
  const std::uint64_t dense = dense_layer_ ? model_.moe.first_dense_layers : 0;
  t.linear = model_tokens(tokens) +
             static_cast<double>(model_.layers - dense) * layer_tokens(tokens) +
             static_cast<double>(dense) * dense_layer(tokens);
  t.head = head(batch.sampling());
  // Layers with the model's sliding window and without (LlmConfig::window_of).
  const LayerAttention a = layer_attention(batch);
  t.attention = static_cast<double>(model_.layers - windowed_layers_) * a.global +
                static_cast<double>(windowed_layers_) * a.windowed;
  return t;
}

std::vector<double> IterationPricer::stage_seconds(const IterationBatch& batch,
                                                   const IterationTime& time) {
  const std::uint64_t stages = options_.pp;
  if (stages == 1) return {time.total()};
  const std::uint64_t tokens = batch.tokens();
  const std::uint64_t dense = dense_layer_ ? model_.moe.first_dense_layers : 0;
  const LayerAttention a = layer_attention(batch);
  const double layer = layer_tokens(tokens);
  const double dense_s = dense > 0 ? dense_layer(tokens) : 0.0;
  const std::uint64_t per_stage = model_.layers / stages;  // check_llm_build: pp divides them
  std::vector<double> out(stages, 0.0);
  for (std::uint64_t l = 0; l < model_.layers; ++l)
    out[l / per_stage] +=
        (l < dense ? dense_s : layer) + (model_.window_of(l) > 0 ? a.windowed : a.global);
  out.front() += model_tokens(tokens);
  out.back() += time.head;
  return out;
}

std::optional<double> IterationPricer::stage_hop(std::uint64_t tokens, std::string& why) {
  if (options_.pp == 1 || tokens == 0) return 0.0;
  if (const auto it = hop_memo_.find(tokens); it != hop_memo_.end()) return it->second;
  // vLLM passes a stage's hidden states and residual (two [tokens, hidden] tensors in the
  // model's type), each TP rank sending 1/tp of them to its peer in the next stage, which
  // all-gathers them over its TP group (send_tensor_dict's all_gather_group).
  const std::array<std::uint64_t, 3> both{2, tokens, model_.hidden};
  const std::uint64_t bytes = workload::storage_bytes(both, model_.dtype).value;
  const std::uint64_t tp = options_.tp;
  const auto send = analytical::price_cluster_collective(analytical::CollectiveKind::SendRecv,
                                                         std::max<std::uint64_t>(bytes / tp, 1), 2,
                                                         2, *hw_, nullptr, why);
  if (!send) return std::nullopt;
  double s = send->cost.seconds + hw_->kernel_fixed_seconds(arch::KernelKind::Collective);
  if (tp > 1) {
    const auto gather = analytical::price_cluster_collective(
        analytical::CollectiveKind::AllGather, bytes, static_cast<std::uint32_t>(tp),
        static_cast<std::uint32_t>(tp), *hw_, nullptr, why);
    if (!gather) return std::nullopt;
    s += gather->cost.seconds + hw_->kernel_fixed_seconds(arch::KernelKind::Collective);
  }
  hop_memo_.emplace(tokens, s);
  return s;
}

double IterationPricer::stage_transfer(std::uint64_t tokens) {
  std::string why;
  const std::optional<double> s = stage_hop(tokens, why);
  CODA_CHECK(s.has_value());  // make() priced a hop on this arch
  return *s;
}

ReplicaMemory IterationPricer::memory(std::uint64_t max_tokens) {
  ReplicaMemory m;
  m.weights = weights_;
  m.activations = token_parts(max_tokens).peak_activations;
  // A stage's chips hold its layers' share of every token's cache.
  m.kv_bytes_per_token =
      Bytes{llm::kv_cache_bytes_per_token_per_rank(model_, options_.quant, options_.tp).value /
            options_.pp};
  return m;
}

double IterationPricer::swap_seconds(std::uint64_t blocks, std::uint64_t block_size) const {
  const std::optional<arch::HostLinkSpec>& link = hw_->spec().host_link;
  CODA_CHECK(link.has_value() && link->bandwidth.value > 0);
  const std::uint64_t tensors = model_.mla.enabled() ? 1 : 2;
  const std::uint64_t stage_layers = model_.layers / options_.pp;
  // A token's bytes a layer a tensor on a rank: the rank's cache over every layer, split.
  const double token_bytes =
      static_cast<double>(
          llm::kv_cache_bytes_per_token_per_rank(model_, options_.quant, options_.tp).value) /
      static_cast<double>(tensors * model_.layers);
  const double copy_bytes = static_cast<double>(block_size) * token_bytes;
  const double copy = std::max(link->copy_overhead.value, copy_bytes / link->bandwidth.value);
  return static_cast<double>(blocks * tensors * stage_layers) * copy;
}

}  // namespace coda::sim::serving
