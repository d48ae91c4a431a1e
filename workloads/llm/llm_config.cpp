#include "workloads/llm/llm_config.h"

#include <array>
#include <cmath>
#include <utility>

#include <fmt/format.h>

namespace coda::workload::llm {
namespace {

constexpr std::uint64_t kSchemaVersion = 1;

constexpr std::array<std::pair<std::string_view, FfnType>, 3> kFfnTypes{
    {{"gelu_mlp", FfnType::GeluMlp}, {"swiglu", FfnType::SwiGlu}, {"geglu", FfnType::GeGlu}}};
// Hugging Face's names (ACT2FN in transformers' activations.py); unstated is not a value.
constexpr std::array<std::pair<std::string_view, GeluForm>, 3> kGeluForms{
    {{"gelu", GeluForm::Erf},
     {"gelu_pytorch_tanh", GeluForm::Tanh},
     {"gelu_new", GeluForm::WrittenTanh}}};
constexpr std::array<std::pair<std::string_view, NormType>, 2> kNormTypes{{
    {"layer_norm", NormType::LayerNorm}, {"rms_norm", NormType::RmsNorm}}};
constexpr std::array<std::pair<std::string_view, PositionEncoding>, 2> kPositions{{
    {"learned", PositionEncoding::Learned}, {"rotary", PositionEncoding::Rotary}}};

template <class E, std::size_t N>
std::string_view name_of(const std::array<std::pair<std::string_view, E>, N>& table, E value) {
  for (const auto& [name, v] : table)
    if (v == value) return name;
  return "unknown";
}

struct SizeCheck {
  LlmField field;
  std::uint64_t value;
  std::uint64_t min;
};

}  // namespace

std::string_view to_string(FfnType type) { return name_of(kFfnTypes, type); }
std::string_view to_string(NormType type) { return name_of(kNormTypes, type); }
std::string_view to_string(GeluForm form) {
  return form == GeluForm::Unstated ? "unstated" : name_of(kGeluForms, form);
}
std::string_view to_string(PositionEncoding type) { return name_of(kPositions, type); }

bool validate_llm_config(const LlmConfig& c, const std::function<FieldPlace(LlmField)>& place,
                         Diagnostics& diags) {
  const std::size_t errors_before = diags.error_count();
  const auto error = [&](LlmField field, std::string message, std::string hint = {}) {
    FieldPlace p = place(field);
    diags.error(std::move(p.where), std::move(p.path), std::move(message), std::move(hint));
  };
  const bool moe = c.moe.experts > 0, mla = c.mla.enabled();
  // clang-format off
  const SizeCheck sizes[] = {
      {LlmField::Hidden, c.hidden, 1},       {LlmField::Layers, c.layers, 1},
      {LlmField::Heads, c.heads, 1},         {LlmField::KvHeads, c.kv_heads, 1},
      {LlmField::HeadDim, c.head_dim, 1},    {LlmField::Ffn, c.ffn, 1},
      {LlmField::Vocab, c.vocab, 1},         {LlmField::MaxPositions, c.max_positions, 1},
      {LlmField::Experts, c.moe.experts, 0}, {LlmField::TopK, c.moe.top_k, moe ? 1u : 0u},
      {LlmField::SharedExperts, c.moe.shared_experts, 0},
      {LlmField::SharedFfn, c.moe.shared_ffn, 0},
      {LlmField::SlidingWindowPattern, c.sliding_window_pattern, 0},
      {LlmField::FirstDenseLayers, c.moe.first_dense_layers, 0},
      {LlmField::DenseFfn, c.moe.dense_ffn, 0},
      {LlmField::QLoraRank, c.mla.q_lora_rank, 0},
      {LlmField::KvLoraRank, c.mla.kv_lora_rank, 0},
      {LlmField::QkNopeHeadDim, c.mla.qk_nope_head_dim, mla ? 1u : 0u},
      {LlmField::QkRopeHeadDim, c.mla.qk_rope_head_dim, mla ? 1u : 0u},
      {LlmField::VHeadDim, c.mla.v_head_dim, mla ? 1u : 0u},
      {LlmField::RotaryDim, c.rotary_dim, 0},
      {LlmField::TypeVocab, c.type_vocab, 0},
  };
  // clang-format on
  bool sizes_ok = true;
  for (const SizeCheck& s : sizes) {
    // A head_dim derived from a bad hidden / heads is reported at those, not again here.
    if (s.field == LlmField::HeadDim && !place(s.field).given) continue;
    if (s.value < s.min) {
      error(s.field, fmt::format("must be at least {}, not {}", s.min, s.value));
      sizes_ok = false;
    } else if (s.value > kMaxLlmSize) {
      error(s.field, fmt::format("{} is out of range (at most {})", s.value, kMaxLlmSize));
      sizes_ok = false;
    }
  }
  if (!sizes_ok) return false;

  if (!place(LlmField::HeadDim).given && c.hidden % c.heads != 0)
    error(LlmField::Heads,
          fmt::format("{} heads do not divide the hidden size {}", c.heads, c.hidden),
          "use a head count that divides the hidden size, or give head_dim explicitly");
  if (c.heads % c.kv_heads != 0)
    error(LlmField::KvHeads,
          fmt::format("{} kv_heads do not divide the {} attention heads", c.kv_heads, c.heads),
          "heads must be a multiple of kv_heads (equal: MHA, a divisor: GQA, 1: MQA)");
  if (moe && c.moe.top_k > c.moe.experts)
    error(LlmField::TopK,
          fmt::format("top_k {} is more than the {} experts", c.moe.top_k, c.moe.experts),
          "each token is routed to top_k of the experts");
  for (const auto& [field, cap] : {std::pair{LlmField::AttentionSoftcap, c.attention_softcap},
                                   std::pair{LlmField::FinalSoftcap, c.final_softcap}})
    if (!std::isfinite(cap) || cap < 0)
      error(field, fmt::format("must be a positive cap (or 0: none), not {}", cap),
            "Gemma 2 caps attention scores at 50 and logits at 30");
  if (!std::isfinite(c.dropout) || c.dropout < 0 || c.dropout >= 1)
    error(LlmField::Dropout, fmt::format("must be a probability in [0, 1), not {}", c.dropout),
          "GPT-2 drops 0.1 of its residual branches and embeddings in training; 0: none");
  if (c.sliding_window_pattern == 1)
    error(LlmField::SlidingWindowPattern, "1 makes every layer global, so no layer has a window",
          "use 0 for a window on every layer (Mistral), 2 for every other (Gemma 2), or drop "
          "sliding_window");
  else if (c.sliding_window_pattern > 1 && c.sliding_window == 0)
    error(LlmField::SlidingWindowPattern, "needs a sliding_window",
          "give the window's size in tokens (Gemma 2: 4096)");
  if (c.moe.shared_experts == 0 && (c.moe.shared_ffn > 0 || c.moe.shared_gate))
    error(c.moe.shared_ffn > 0 ? LlmField::SharedFfn : LlmField::SharedExperts,
          "shared_ffn and shared_gate need shared_experts", "set shared_experts (Qwen2-MoE: 1)");
  if (!moe && (c.moe.top_k > 0 || c.moe.shared_experts > 0 || c.moe.first_dense_layers > 0 ||
               c.moe.dense_ffn > 0))
    error(LlmField::Experts,
          "must be at least 1 when top_k, shared_experts, first_dense_layers or dense_ffn is given",
          "set experts, or drop the MoE settings for a dense model");
  if (moe && c.moe.first_dense_layers >= c.layers)
    error(LlmField::FirstDenseLayers,
          fmt::format("{} dense layers leave none of the {} layers to the experts",
                      c.moe.first_dense_layers, c.layers),
          "DeepSeek-V3 has 3 dense layers of 61; a dense model has no moe section");
  if (c.rotary_dim > 0 && (c.positions != PositionEncoding::Rotary || mla))
    error(LlmField::RotaryDim,
          mla ? "MLA's rotary part is qk_rope_head_dim" : "needs rotary positions",
          "drop rotary_dim");
  else if (c.rotary_dim > c.head_dim || c.rotary_dim % 2 != 0)
    error(LlmField::RotaryDim,
          fmt::format("must be an even number of dims of the head's {}, not {}", c.head_dim,
                      c.rotary_dim),
          "RoPE rotates pairs of a head's dims: GPT-NeoX a quarter of them, GPT-J 64");
  if (c.post_norm && (c.parallel_residual || c.post_norms))
    error(LlmField::PostNorm,
          "post-norm layers put the norm after each residual add; that is neither parallel nor "
          "sandwiched",
          "drop parallel_residual and post_norms (BERT has neither)");
  else if (c.post_norm && (moe || mla))
    error(LlmField::PostNorm,
          "post-norm layers are modelled as BERT's: a dense FFN and plain attention, no experts "
          "or multi-head latent attention",
          "drop post_norm, or moe and mla");
  if (c.shared_norm && !c.parallel_residual)
    error(LlmField::SharedNorm, "one norm feeding both branches needs parallel_residual",
          "set parallel_residual: true (GPT-J, Phi-2, Falcon-7B), or drop shared_norm");
  if (mla) {
    if (c.kv_heads != c.heads)
      error(LlmField::KvHeads,
            fmt::format("MLA gives every one of the {} heads its own key and value, not {} kv "
                        "heads",
                        c.heads, c.kv_heads),
            "drop kv_heads: with mla it is the head count");
    if (c.head_dim != c.mla.qk_nope_head_dim + c.mla.qk_rope_head_dim)
      error(LlmField::HeadDim,
            fmt::format("MLA's query-key head dim is qk_nope_head_dim + qk_rope_head_dim = {}, "
                        "not {}",
                        c.mla.qk_nope_head_dim + c.mla.qk_rope_head_dim, c.head_dim),
            "drop head_dim: with mla it is that sum");
  } else if (c.mla.q_lora_rank > 0 || c.mla.qk_nope_head_dim > 0 || c.mla.qk_rope_head_dim > 0 ||
             c.mla.v_head_dim > 0) {
    error(LlmField::KvLoraRank, "must be at least 1 for multi-head latent attention",
          "DeepSeek-V2 and V3 compress keys and values to a latent of kv_lora_rank 512");
  }
  return diags.error_count() == errors_before;
}

std::optional<LlmConfig> read_llm_config(const YamlReader& root, Diagnostics& diags) {
  if (!root.expect_map(diags)) return std::nullopt;
  const std::size_t errors_before = diags.error_count();
  LlmConfig c;
  std::uint64_t schema_version = 0;
  if (root.required("schema_version", schema_version, diags) && schema_version != kSchemaVersion)
    diags.error(root.at("schema_version"),
                fmt::format("unsupported schema_version {}", schema_version),
                fmt::format("this version of coda reads schema_version {}", kSchemaVersion));
  root.required("name", c.name, diags);
  root.required("source", c.source, diags);
  const bool has_model = root.has("model");
  const YamlReader model = root.at("model");
  if (!has_model) {
    std::string unused;
    root.required("model", unused, diags);  // reports the missing key
  }
  root.reject_unknown_keys(diags);
  if (!has_model || !model.expect_map(diags)) return std::nullopt;

  model.required("hidden", c.hidden, diags);
  model.required("layers", c.layers, diags);
  model.required("heads", c.heads, diags);
  c.kv_heads = c.heads;
  model.optional("kv_heads", c.kv_heads, diags);
  model.optional("head_dim", c.head_dim, diags);
  if (!model.has("head_dim") && c.heads > 0) c.head_dim = c.hidden / c.heads;
  model.required("ffn", c.ffn, diags);
  model.required_enum("ffn_type", c.ffn_type, EnumTable<FfnType>(kFfnTypes), diags);
  if (model.optional_enum("hidden_act", c.gelu, EnumTable<GeluForm>(kGeluForms), diags) &&
      c.ffn_type == FfnType::SwiGlu)
    diags.error(model.at("hidden_act"),
                fmt::format("names a GELU ({}), but ffn_type swiglu uses SiLU", to_string(c.gelu)),
                "hidden_act applies to gelu_mlp and geglu FFNs; drop it");
  model.optional("dropout", c.dropout, diags);
  model.required_enum("norm", c.norm, EnumTable<NormType>(kNormTypes), diags);
  model.required("vocab", c.vocab, diags);
  model.optional("tied_embeddings", c.tied_embeddings, diags);
  model.required_enum("positions", c.positions, EnumTable<PositionEncoding>(kPositions), diags);
  model.optional("rope_theta", c.rope_theta, diags);
  bool all_biases = false;
  if (model.optional("bias", all_biases, diags)) c.qkv_bias = c.out_bias = c.mlp_bias = all_biases;
  model.optional("qkv_bias", c.qkv_bias, diags);
  model.optional("out_bias", c.out_bias, diags);
  model.optional("mlp_bias", c.mlp_bias, diags);
  model.optional("qk_norm", c.qk_norm, diags);
  model.optional("post_norms", c.post_norms, diags);
  model.optional("parallel_residual", c.parallel_residual, diags);
  model.optional("shared_norm", c.shared_norm, diags);
  model.optional("rotary_dim", c.rotary_dim, diags);
  model.optional("lm_head_bias", c.lm_head_bias, diags);
  model.optional("encoder", c.encoder, diags);
  model.optional("post_norm", c.post_norm, diags);
  model.optional("type_vocab", c.type_vocab, diags);
  model.optional("attention_softcap", c.attention_softcap, diags);
  model.optional("final_softcap", c.final_softcap, diags);
  model.optional("sliding_window", c.sliding_window, diags);
  model.optional("sliding_window_pattern", c.sliding_window_pattern, diags);
  model.required("max_positions", c.max_positions, diags);
  model.optional_enum("dtype", c.dtype, EnumTable<DataType>(data_type_names()), diags);
  const bool has_moe = model.has("moe");
  const YamlReader moe = model.at("moe");
  if (has_moe && moe.expect_map(diags)) {
    moe.required("experts", c.moe.experts, diags);
    moe.required("top_k", c.moe.top_k, diags);
    moe.optional("shared_experts", c.moe.shared_experts, diags);
    moe.optional("shared_ffn", c.moe.shared_ffn, diags);
    moe.optional("shared_gate", c.moe.shared_gate, diags);
    moe.optional("first_dense_layers", c.moe.first_dense_layers, diags);
    moe.optional("dense_ffn", c.moe.dense_ffn, diags);
    moe.reject_unknown_keys(diags);
  }
  const bool has_mla = model.has("mla");
  const YamlReader mla = model.at("mla");
  if (has_mla && mla.expect_map(diags)) {
    mla.optional("q_lora_rank", c.mla.q_lora_rank, diags);
    mla.required("kv_lora_rank", c.mla.kv_lora_rank, diags);
    mla.required("qk_nope_head_dim", c.mla.qk_nope_head_dim, diags);
    mla.required("qk_rope_head_dim", c.mla.qk_rope_head_dim, diags);
    mla.required("v_head_dim", c.mla.v_head_dim, diags);
    mla.reject_unknown_keys(diags);
    // Every head has its own key and value, of the query-key head dim.
    if (!model.has("kv_heads")) c.kv_heads = c.heads;
    if (!model.has("head_dim")) c.head_dim = c.mla.qk_nope_head_dim + c.mla.qk_rope_head_dim;
  }
  model.reject_unknown_keys(diags);
  if (model.has("rope_theta") && c.positions != PositionEncoding::Rotary)
    diags.error(model.at("rope_theta"),
                "is only meaningful with positions: rotary", "remove it, or use rotary positions");
  if (diags.error_count() != errors_before) return std::nullopt;

  const auto place = [&](LlmField field) -> FieldPlace {
    const bool in_moe = field == LlmField::Experts || field == LlmField::TopK ||
                        field == LlmField::SharedExperts || field == LlmField::SharedFfn ||
                        field == LlmField::FirstDenseLayers || field == LlmField::DenseFfn;
    const bool in_mla = field == LlmField::QLoraRank || field == LlmField::KvLoraRank ||
                        field == LlmField::QkNopeHeadDim || field == LlmField::QkRopeHeadDim ||
                        field == LlmField::VHeadDim;
    std::string_view key;
    // clang-format off
    switch (field) {
      case LlmField::Hidden: key = "hidden"; break;
      case LlmField::Layers: key = "layers"; break;
      case LlmField::Heads: key = "heads"; break;
      case LlmField::KvHeads: key = "kv_heads"; break;
      case LlmField::HeadDim: key = "head_dim"; break;
      case LlmField::Ffn: key = "ffn"; break;
      case LlmField::Vocab: key = "vocab"; break;
      case LlmField::MaxPositions: key = "max_positions"; break;
      case LlmField::Experts: key = "experts"; break;
      case LlmField::TopK: key = "top_k"; break;
      case LlmField::SharedExperts: key = "shared_experts"; break;
      case LlmField::SharedFfn: key = "shared_ffn"; break;
      case LlmField::AttentionSoftcap: key = "attention_softcap"; break;
      case LlmField::FinalSoftcap: key = "final_softcap"; break;
      case LlmField::SlidingWindowPattern: key = "sliding_window_pattern"; break;
      case LlmField::FirstDenseLayers: key = "first_dense_layers"; break;
      case LlmField::DenseFfn: key = "dense_ffn"; break;
      case LlmField::QLoraRank: key = "q_lora_rank"; break;
      case LlmField::KvLoraRank: key = "kv_lora_rank"; break;
      case LlmField::QkNopeHeadDim: key = "qk_nope_head_dim"; break;
      case LlmField::QkRopeHeadDim: key = "qk_rope_head_dim"; break;
      case LlmField::VHeadDim: key = "v_head_dim"; break;
      case LlmField::RotaryDim: key = "rotary_dim"; break;
      case LlmField::SharedNorm: key = "shared_norm"; break;
      case LlmField::TypeVocab: key = "type_vocab"; break;
      case LlmField::PostNorm: key = "post_norm"; break;
      case LlmField::Dropout: key = "dropout"; break;
    }
    // clang-format on
    const YamlReader& map = in_moe && has_moe ? moe : in_mla && has_mla ? mla : model;
    if (map.has(key)) return {map.at(key).location(), map.at(key).path(), true};
    return {map.location(), map.path(), false};
  };
  if (!validate_llm_config(c, place, diags)) return std::nullopt;
  return c;
}

std::optional<LlmConfig> load_llm_config(const std::filesystem::path& file, Diagnostics& diags) {
  const auto doc = YamlDocument::load(file, diags);
  if (!doc) return std::nullopt;
  return read_llm_config(doc->root(), diags);
}

LlmHeadline llm_headline(const LlmConfig& c, std::uint64_t context) {
  const std::uint64_t q_out = c.heads * c.head_dim;
  const std::uint64_t kv_out = c.kv_heads * c.head_dim;
  const std::uint64_t per_element = c.norm == NormType::LayerNorm ? 2 : 1;  // scale (+ shift)
  const std::uint64_t norm = per_element * c.hidden;
  // The attention's matrices: Q, K, V and out; MLA's q_a, q_b (or one q), kv_a, kv_b and out,
  // and its norms of the q and kv latents (in attn, not in attn_matmul).
  std::uint64_t attn_matmul = c.hidden * (q_out + 2 * kv_out) + q_out * c.hidden;
  std::uint64_t mla_norms = 0;
  if (c.mla.enabled()) {
    const MlaConfig& m = c.mla;
    const std::uint64_t q =
        m.q_lora_rank > 0 ? c.hidden * m.q_lora_rank + m.q_lora_rank * q_out : c.hidden * q_out;
    attn_matmul = q + c.hidden * m.latent() +
                  m.kv_lora_rank * c.heads * (m.qk_nope_head_dim + m.v_head_dim) +
                  c.heads * m.v_head_dim * c.hidden;
    mla_norms = per_element * (m.q_lora_rank + m.kv_lora_rank);
  }
  const std::uint64_t attn =
      attn_matmul + mla_norms + (c.qkv_bias ? q_out + 2 * kv_out : 0) + (c.out_bias ? c.hidden : 0);
  const bool gate = gated(c.ffn_type);
  // One FFN of intermediate size `width`: its matrices, and its biases.
  const auto ffn_matmul_of = [&](std::uint64_t width) { return (gate ? 3 : 2) * c.hidden * width; };
  const auto ffn_of = [&](std::uint64_t width) {
    return ffn_matmul_of(width) + (c.mlp_bias ? (gate ? 2 : 1) * width + c.hidden : 0);
  };
  const std::uint64_t ffn_matmul = ffn_matmul_of(c.ffn);
  const std::uint64_t ffn_one = ffn_of(c.ffn);
  const bool moe = c.moe.experts > 0;
  // A MoE model's first dense layers: a dense FFN of dense_width() and no router.
  const std::uint64_t dense_layers = moe ? c.moe.first_dense_layers : 0;
  const std::uint64_t moe_layers = c.layers - dense_layers;
  const std::uint64_t router = moe ? c.hidden * c.moe.experts : 0;
  // The shared experts run as one FFN of their width together (the builder's), and their gate.
  const bool shared = moe && c.moe.shared_experts > 0;
  const std::uint64_t shared_gate = shared && c.moe.shared_gate ? c.hidden : 0;
  const std::uint64_t shared_width = c.moe.shared_width(c.ffn);
  const std::uint64_t shared_params = shared ? ffn_of(shared_width) + shared_gate : 0;
  const std::uint64_t shared_matmul = shared ? ffn_matmul_of(shared_width) + shared_gate : 0;
  const std::uint64_t ffns_total = moe ? c.moe.experts * ffn_one + shared_params : ffn_one;
  const std::uint64_t ffns_active = moe ? c.moe.top_k * ffn_one + shared_params : ffn_one;

  // The token table, a learned position table, the token-type table, a post-norm model's norm
  // of the embeddings (counted with the norms, not here).
  const std::uint64_t embed =
      c.vocab * c.hidden +
      (c.positions == PositionEncoding::Learned ? c.max_positions * c.hidden : 0) +
      c.type_vocab * c.hidden;
  // The LM head; an encoder's pooler (hidden x hidden and its bias) in its place.
  const std::uint64_t lm_head =
      c.encoder ? std::uint64_t{0}
                : (c.tied_embeddings ? 0 : c.vocab * c.hidden) + (c.lm_head_bias ? c.vocab : 0);
  const std::uint64_t pooler = c.encoder ? c.hidden * c.hidden + c.hidden : 0;
  const std::uint64_t qk_norm = c.qk_norm ? 2 * per_element * c.head_dim : 0;
  const std::uint64_t layer_norms = (c.shared_norm ? 1u : 2u) + (c.post_norms ? 2u : 0u);
  const std::uint64_t layer_fixed = layer_norms * norm + qk_norm + attn;
  const std::uint64_t dense_layer = layer_fixed + ffn_of(c.dense_width());
  const std::uint64_t moe_layer_total = layer_fixed + router + ffns_total;
  const std::uint64_t moe_layer_active = layer_fixed + router + ffns_active;

  LlmHeadline h;
  h.embedding_parameters = embed + lm_head;
  // The final norm, or a post-norm model's norm of the embeddings (the same size).
  h.parameters =
      embed + dense_layers * dense_layer + moe_layers * moe_layer_total + norm + lm_head + pooler;
  h.active_parameters =
      embed + dense_layers * dense_layer + moe_layers * moe_layer_active + norm + lm_head + pooler;
  h.kv_cache_bytes_per_token =
      Bytes{c.encoder ? std::uint64_t{0}
                      : (c.mla.enabled() ? c.layers * c.mla.latent()
                                         : 2 * c.layers * c.kv_heads * c.head_dim) *
                            bit_width(c.dtype) / 8};
  const std::uint64_t ffn_matmul_active =
      moe ? router + c.moe.top_k * ffn_matmul + shared_matmul : ffn_matmul;
  const std::uint64_t matmul_per_token =
      c.layers * attn_matmul + dense_layers * ffn_matmul_of(c.dense_width()) +
      moe_layers * ffn_matmul_active + (c.encoder ? std::uint64_t{0} : c.hidden * c.vocab);
  h.forward_flops_per_token =
      2 * matmul_per_token + 2 * c.layers * context * c.heads * (c.head_dim + c.value_dim());
  return h;
}

}  // namespace coda::workload::llm
