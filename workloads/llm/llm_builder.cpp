#include "workloads/llm/llm_builder.h"

#include <algorithm>
#include <array>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/check.h"
#include "workloads/builders.h"

namespace coda::workload::llm {

namespace {

constexpr std::array<std::pair<std::string_view, PhaseKind>, 3> kPhases{{
    {"prefill", PhaseKind::Prefill}, {"decode", PhaseKind::Decode},
    {"training", PhaseKind::Training}}};

constexpr std::array<std::pair<std::string_view, Precision>, 4> kPrecisions{
    {{"pure", Precision::Pure},
     {"mixed", Precision::Mixed},
     {"autocast", Precision::Autocast},
     {"fp8", Precision::Fp8}}};

constexpr std::array<std::pair<std::string_view, Runtime>, 2> kRuntimes{
    {{"default", Runtime::Default}, {"hf_transformers", Runtime::HfTransformers}}};

}  // namespace

std::string_view to_string(PhaseKind kind) { return enum_name(kPhases, kind, "unknown"); }

EnumTable<PhaseKind> phase_names() { return kPhases; }

std::string_view to_string(Runtime runtime) { return enum_name(kRuntimes, runtime, "unknown"); }

EnumTable<Runtime> runtime_names() { return kRuntimes; }

std::string_view to_string(Precision precision) {
  return enum_name(kPrecisions, precision, "unknown");
}

EnumTable<Precision> precision_names() { return kPrecisions; }

ParameterBytes parameter_bytes(Precision precision, DataType model) {
  const double e = bit_width(model) / 8.0, fp32 = bit_width(DataType::Fp32) / 8.0;
  const double moments = 2 * fp32;  // AdamW's m and v
  switch (precision) {
    case Precision::Pure: return {e, e, moments};
    case Precision::Mixed:
    case Precision::Fp8:  // the FP8 copies of the weights are not counted
      return {e, e, moments + (model == DataType::Fp32 ? 0.0 : fp32)};
    case Precision::Autocast: return {fp32, fp32, moments};
  }
  return {};
}

namespace {

using Shape = std::vector<std::uint64_t>;

bool is_fp8(DataType t) { return t == DataType::Fp8E4M3 || t == DataType::Fp8E5M2; }

IndexExpr dim_index(std::size_t dim, std::int64_t offset = 0) {
  return IndexExpr{{IndexTerm{dim, 1}}, offset};
}

// C[m][n] = A B over k, where A is stored [m][k] (or [k][m] when a_t) and B [k][n] (or [n][k]
// when b_t): the forward GEMM, dX = dY W^T and dW = X^T dY in one form. gemm_view still sees
// m, n, k, since it reads which tensors each dim indexes.
Op matmul(std::string name, std::uint64_t m, std::uint64_t n, std::uint64_t k, bool a_t,
          bool b_t, DataType dtype) {
  enum : std::size_t { kM, kN, kK };
  Op op;
  op.name = std::move(name);
  op.kind = OpKind::Contraction;
  op.space.dims = {{"m", m}, {"n", n}, {"k", k}};
  op.space.accesses = {
      {TensorRole::Input, "A",
       a_t ? std::vector{dim_index(kK), dim_index(kM)} : std::vector{dim_index(kM), dim_index(kK)},
       a_t ? Shape{k, m} : Shape{m, k}, dtype},
      {TensorRole::Weight, "B",
       b_t ? std::vector{dim_index(kN), dim_index(kK)} : std::vector{dim_index(kK), dim_index(kN)},
       b_t ? Shape{n, k} : Shape{k, n}, dtype},
      {TensorRole::Output, "C", {dim_index(kM), dim_index(kN)}, {m, n}, dtype},
  };
  return op;
}

// C[m][n] = A B with a weight quantized in groups of `group` along k (k a multiple of it) and its
// scales S[k / group][n]: the reduction split into ko (k / group) and ki (group) so that every
// index stays affine (A[m][ko * group + ki], B[ko * group + ki][n], S[ko][n]); gemm_view sees
// m, n and k = ko x ki, as for matmul.
Op grouped_matmul(std::string name, std::uint64_t m, std::uint64_t n, std::uint64_t k,
                  std::uint64_t group, DataType dtype) {
  enum : std::size_t { kM, kN, kKo, kKi };
  const IndexExpr k_index{{IndexTerm{kKo, static_cast<std::int64_t>(group)}, IndexTerm{kKi, 1}}, 0};
  Op op;
  op.name = std::move(name);
  op.kind = OpKind::Contraction;
  op.space.dims = {{"m", m}, {"n", n}, {"ko", k / group}, {"ki", group}};
  op.space.accesses = {
      {TensorRole::Input, "A", {dim_index(kM), k_index}, Shape{m, k}, dtype},
      {TensorRole::Weight, "B", {k_index, dim_index(kN)}, Shape{k, n}, dtype},
      {TensorRole::Weight, "S", {dim_index(kKo), dim_index(kN)}, Shape{k / group, n}, dtype},
      {TensorRole::Output, "C", {dim_index(kM), dim_index(kN)}, {m, n}, dtype},
  };
  return op;
}

// `s` with a leading extent of `experts` (stacked experts' weights and rows); `s` when 0.
Shape stacked_shape(Shape s, std::uint64_t experts) {
  if (experts > 0) s.insert(s.begin(), experts);
  return s;
}

// The op once per expert, stacked: a leading dim "e" of `experts` indexes every access, so the
// experts' GEMMs are one batched (grouped) GEMM over weights stored [experts][k][n], as fused MoE
// kernels run them (vLLM's fused_moe, SGLang, TensorRT-LLM): gemm_view sees batch = experts.
Op stacked(Op op, std::uint64_t experts) {
  if (experts == 0) return op;
  const std::size_t e = op.space.dims.size();
  op.space.dims.push_back({"e", experts});
  for (TensorAccess& a : op.space.accesses) {
    a.indices.insert(a.indices.begin(), dim_index(e));
    a.shape = stacked_shape(std::move(a.shape), experts);
  }
  return op;
}

// The extent of stacked()'s expert dim, 0 for an op that has none.
std::uint64_t experts_of(const Op& op) {
  return !op.space.dims.empty() && op.space.dims.back().name == "e" ? op.space.dims.back().extent
                                                                    : 0;
}

// Makes the op add into its (last) output instead of overwriting it: an Input copy of the output
// access goes just before it; bind both to the same tensor (in place, like a GEMM with beta = 1).
void accumulate_into_output(Op& op) {
  TensorAccess in = op.space.accesses.back();
  CODA_CHECK(in.role == TensorRole::Output);
  in.role = TensorRole::Input;
  in.tensor += "_in";
  op.space.accesses.insert(op.space.accesses.end() - 1, std::move(in));
}

// The dims an elementwise access spans (each index is one dim with coefficient 1).
std::vector<std::size_t> axes_of(const TensorAccess& access) {
  std::vector<std::size_t> axes;
  for (const IndexExpr& index : access.indices) {
    CODA_CHECK(index.terms.size() == 1);
    axes.push_back(index.terms[0].dim);
  }
  return axes;
}

enum class NodeKind : std::uint8_t {
  Matmul,       // y = x W (W a weight; stored [n][k] when b_t)
  Elementwise,  // Add, Mul, Gelu, Silu
  Norm,         // LayerNorm / RmsNorm with a scale, or Softmax, over the last axis
  Attention,    // the fused attention op
  Movement,     // split, merge heads, MoE dispatch and combine
  SumReduce,    // the MoE combine's sum over the top_k axis
  Embedding,    // a table gather
  TpEnter,      // Megatron's f: identity forward, all-reduce of the gradient backward
  Passthrough,  // a forward all-reduce (Megatron's g): the gradient passes unchanged
  SpGather,     // sequence parallelism's g-bar: all-gather forward, reduce-scatter backward
  SpScatter,    // sequence parallelism's g: reduce-scatter forward, all-gather backward
  CpGather,     // context parallelism's K or V: all-gather forward, reduce-scatter backward
  AllToAll,     // expert parallelism's token exchange: an all-to-all both ways
  StageInput,   // received from the previous stage: send its gradient back
  Cast,         // autocast's cast of an activation to the compute type: the gradient cast back
  Dropout,      // nn.Dropout in training: x in, y and the keep mask out; the gradient masked
};

struct Node {
  NodeKind kind;
  OpId op;            // the forward op (not for TpEnter, StageInput: see `tensor`)
  TensorId tensor{};  // TpEnter, StageInput
  bool b_t = false;   // Matmul
  AttentionParams attention{};
};
using Tape = std::vector<Node>;

struct FfnWeights {
  TensorId up, gate, down;
  std::optional<TensorId> up_bias, gate_bias, down_bias;
};

struct LayerWeights {
  std::uint64_t window = 0;                        // LlmConfig::window_of this layer
  TensorId norm1, qkv, out;                        // qkv: the default runtime's fused projection
  std::optional<TensorId> norm2;                   // none with LlmConfig::shared_norm
  std::optional<TensorId> q_proj, k_proj, v_proj;  // hf_transformers: three nn.Linear
  // MLA (LlmConfig::mla): q_a and its norm (or q_proj alone without a q latent), q_b, kv_a, the
  // latent's norm, and kv_b (prefill) or its key and value halves a head each (decode's
  // absorbed form, [heads][qk_nope][kv_lora] and [heads][kv_lora][v]: the same parameters).
  std::optional<TensorId> q_a, q_a_norm, q_b, kv_a, kv_a_norm, kv_b, kv_b_k, kv_b_v;
  std::optional<TensorId> norm1_shift, norm2_shift, qkv_bias, out_bias;
  std::optional<TensorId> q_norm, k_norm, q_norm_shift, k_norm_shift;  // QK norm (Qwen3)
  // Sandwich norms (Gemma 2): on the attention's and the FFN's outputs.
  std::optional<TensorId> post_norm1, post_norm2, post_norm1_shift, post_norm2_shift;
  std::optional<FfnWeights> dense;  // dense FFN
  std::optional<TensorId> router;   // MoE
  // The routed experts' weights stacked ([experts][k][n]): those this step's tokens reach, and
  // the rest (in memory, never read; only when there are fewer assignments than experts).
  std::optional<FfnWeights> experts, unrouted;
  std::optional<FfnWeights> shared;     // all shared experts as one FFN of MoeConfig::shared_width
  std::optional<TensorId> shared_gate;  // [hidden x 1] (Qwen2-MoE's shared_expert_gate)
};

// One micro-batch's forward: what its backward needs.
struct MicroBatch {
  std::string prefix;  // "mb3." or ""
  std::uint64_t sequences = 0;
  Tape pre, post;
  std::vector<Tape> layers;
  std::vector<TensorId> layer_inputs, layer_outputs;
  TensorId stage_output{};           // the activation the last layer produced
  TensorId post_logits{};               // last stage
  std::optional<TensorId> logits_grad;  // last stage, training
};

class Builder {
 public:
  Builder(const LlmConfig& c, const LlmPhase& phase, const Parallelism& par)
      : c_(c), phase_(phase), par_(par), dt_(c.dtype) {
    // Autocast's parameters are fp32, and so is what reads them without a cast (the embeddings,
    // hence the residual stream, and the norms).
    const bool autocast =
        phase.kind == PhaseKind::Training && phase.precision == Precision::Autocast;
    param_dt_ = autocast ? DataType::Fp32 : dt_;
    fp8_ = phase.kind == PhaseKind::Training && phase.precision == Precision::Fp8;
    kv_dt_ = phase.quant.kv_cache.value_or(dt_);
    tp_ = par.tp;
    heads_ = c.heads / tp_;
    kv_heads_ = c.kv_heads / tp_;
    q_out_ = heads_ * c.head_dim;
    kv_out_ = kv_heads_ * c.head_dim;
    o_in_ = heads_ * c.value_dim();
    ffn_ = c.ffn / tp_;
    dense_ffn_ = c.dense_width() / tp_;
    shared_ffn_ = c.moe.shared_width(c.ffn) / tp_;
    vocab_ = (c.vocab + tp_ - 1) / tp_;
    const StageLayers mine = stage_layers(c, par);
    stage_layers_ = mine.count;
    first_layer_ = mine.first;
    first_stage_ = par.stage == 0;
    last_stage_ = par.stage + 1 == par.pp;
    training_ = phase.kind == PhaseKind::Training;
    sp_ = par.sequence_parallel && tp_ > 1;
    cp_ = phase.kind == PhaseKind::Training ? par.cp : 1;
    ep_ = phase.kind == PhaseKind::Training ? par.ep : 1;
    // MoE parallel folding (Megatron-Core's expert_tensor_parallel_size 1 with tp > 1): the
    // experts whole on each of the tp x dp x cp ranks they are spread over, run on the rank's
    // sequence-parallel share of the tokens.
    folded_ = ep_ > 1 && tp_ > 1;
    expert_ffn_ = folded_ ? c.ffn : ffn_;
    q_len_ = phase.kind == PhaseKind::Decode ? 1 : phase.seq_len / cp_;
    kv_len_ = phase.kind == PhaseKind::Decode ? phase.seq_len + 1 : phase.seq_len;
    mb_sequences_ = phase.batch / par.micro_batches;
    // Hugging Face transformers: LlamaForCausalLM's inference forward decomposed op by op (hf_),
    // or GPT2LMHeadModel's training step, coda's graph with the ops transformers adds (hf_train_).
    const bool hf = phase.runtime == Runtime::HfTransformers;
    hf_ = hf && phase.kind != PhaseKind::Training;
    hf_train_ = hf && phase.kind == PhaseKind::Training;
  }

  Graph build() {
    g_.name = fmt::format("{}.{}.b{}.s{}.tp{}.pp{}.stage{}{}", c_.name, to_string(phase_.kind),
                          phase_.batch, phase_.seq_len, par_.tp, par_.pp, par_.stage,
                          hf_ || hf_train_ ? ".hf_transformers" : "");
    g_.source = c_.source;
    make_weights();
    if (c_.positions == PositionEncoding::Rotary && !hf_)  // hf: computed in the forward
      rope_table_ = tensor("rope.table", {q_len_, rotary_dims()}, TensorKind::Activation, false);
    const std::uint64_t m = par_.micro_batches;
    std::vector<MicroBatch> mbs(m);
    const auto run_forward = [&](std::uint64_t i) {
      const std::size_t first = g_.ops.size();
      forward(mbs[i], i);
      spans_.push_back({StepPart::Forward, i, first, g_.ops.size()});
    };
    if (!training_) {
      for (std::uint64_t i = 0; i < m; ++i) run_forward(i);
      return std::move(g_);
    }
    // 1F1B: stage s runs pp - s - 1 warm-up forwards, then alternates forward and backward.
    const std::uint64_t warmup = std::min(par_.pp - par_.stage - 1, m);
    for (std::uint64_t i = 0; i < warmup; ++i) run_forward(i);
    for (std::uint64_t i = 0; i < m; ++i) {
      if (warmup + i < m) run_forward(warmup + i);
      const std::size_t first = g_.ops.size();
      backward(mbs[i]);
      spans_.push_back({StepPart::Backward, i, first, g_.ops.size()});
    }
    const std::size_t first = g_.ops.size();
    optimizer();
    spans_.push_back({StepPart::Optimizer, 0, first, g_.ops.size()});
    if (fp8_) {
      const std::size_t casts = g_.ops.size();
      fp8_weight_casts();
      spans_.push_back({StepPart::WeightCast, 0, casts, g_.ops.size()});
    }
    return std::move(g_);
  }

  std::vector<OpSpan> take_spans() { return std::move(spans_); }
  std::vector<TensorId> take_expert_weights() { return std::move(expert_weights_); }

 private:
  // ---- tensors and ops --------------------------------------------------------------------

  TensorId tensor(std::string name, Shape shape, TensorKind kind, bool differentiable,
                  std::optional<DataType> dtype = std::nullopt) {
    const TensorId id = g_.add_tensor({std::move(name), std::move(shape), dtype.value_or(dt_), kind});
    differentiable_.push_back(differentiable && training_);
    return id;
  }
  TensorId act(std::string name, Shape shape, std::optional<DataType> dtype = std::nullopt) {
    return tensor(std::move(name), std::move(shape), TensorKind::Activation, true, dtype);
  }
  bool differentiable(TensorId id) const { return differentiable_[id.value]; }
  const Shape& shape(TensorId id) const { return g_.tensors[id.value].shape; }
  DataType dtype(TensorId id) const { return g_.tensors[id.value].dtype; }
  // The type of a result of a and b: the wider (PyTorch's promotion of float types).
  DataType promoted(TensorId a, TensorId b) const {
    return bit_width(dtype(b)) > bit_width(dtype(a)) ? dtype(b) : dtype(a);
  }

  // Adds the op, its accesses typed as the tensors bound to them (the make_* builders take one
  // type; autocast's ops read and write more than one).
  OpId emit(Op op, std::vector<TensorId> bound, Tape* tape = nullptr, NodeKind kind = NodeKind::Matmul,
            bool b_t = false, AttentionParams attention = {}) {
    for (std::size_t i = 0; i < op.space.accesses.size() && i < bound.size(); ++i)
      op.space.accesses[i].dtype = dtype(bound[i]);
    const OpId id = g_.add(std::move(op), std::move(bound));
    if (tape != nullptr) tape->push_back({kind, id, {}, b_t, attention});
    return id;
  }

  TensorId weight(const std::string& name, Shape s) {
    const TensorId id = tensor(name, std::move(s), TensorKind::Weight, false, param_dt_);
    weights_.push_back(id);
    if (training_) {
      weight_grads_[id.value] =
          tensor(name + ".grad", shape(id), TensorKind::Gradient, false, param_dt_);
    }
    return id;
  }
  TensorId weight_grad(TensorId w) const { return weight_grads_.at(w.value); }

  // A linear layer's weight [k x n]: in the scheme's type when it quantizes weights, with its
  // [k / group x n] scales in the model's type for a grouped scheme.
  // `experts` > 0: that many, stacked along a leading dim.
  TensorId linear_weight(const std::string& name, std::uint64_t k, std::uint64_t n,
                         std::uint64_t experts = 0) {
    const Quantization& q = phase_.quant;
    if (fp8_) {
      const TensorId w = weight(name, stacked_shape({k, n}, experts));
      fp8_linear_.insert(w.value);
      return w;
    }
    if (!q.weights) return weight(name, stacked_shape({k, n}, experts));
    const TensorId w =
        tensor(name, stacked_shape({k, n}, experts), TensorKind::Weight, false, *q.weights);
    weights_.push_back(w);
    std::optional<TensorId> scales;
    if (q.group > 0) {
      scales = tensor(name + ".scales", stacked_shape({k / q.group, n}, experts),
                      TensorKind::Weight, false, dt_);
      weights_.push_back(*scales);
    }
    scales_of_[w.value] = scales;
    return w;
  }

  // The quantization of a linear layer's input, fused into the op that writes it (TensorRT-LLM's
  // norm, activation and attention kernels write the quantized type): x and every access bound
  // to it retyped to `to`. Its readers follow its producer, so the scan stops there.
  void quantize_in_producer(TensorId x, DataType to) {
    if (dtype(x) == to) return;
    g_.tensors[x.value].dtype = to;
    for (std::size_t k = g_.ops.size(); k-- > 0;) {
      Op& op = g_.ops[k];
      bool writes = false;
      for (std::size_t i = 0; i < op.tensors.size(); ++i) {
        if (op.tensors[i] != x) continue;
        op.space.accesses[i].dtype = to;
        writes = writes || op.space.accesses[i].role == TensorRole::Output;
      }
      if (writes) return;
    }
  }

  // A copy of x in `to` (an elementwise Copy: PyTorch's cast kernel); x itself when it is
  // already of that type. On `tape` as a Cast node, so that the gradient is cast back.
  TensorId cast(Tape* tape, const std::string& name, TensorId x, DataType to) {
    if (dtype(x) == to) return x;
    const TensorId y = tensor(name + ".out", shape(x), TensorKind::Activation, differentiable(x),
                              to);
    emit(make_elementwise(name, Function::Copy, shape(x), to), {x, y}, tape, NodeKind::Cast);
    return y;
  }

  // The weight as a GEMM or a bias add reads it: itself, or under autocast its copy in the
  // compute type, cast at this use (the cast cache off, as CUDA graphs need it; with the cache
  // on, a weight used once per forward is cast as often). The copy's gradient goes to the
  // weight's through into_weight_grad.
  TensorId compute_weight(const std::string& name, TensorId w) {
    if (dtype(w) == dt_) return w;
    const TensorId copy = cast(nullptr, name + ".cast", w, dt_);
    master_of_[copy.value] = w;
    return copy;
  }

  // ---- Transformer Engine's FP8 (Precision::Fp8) ----

  // x in `to` (E4M3 for a GEMM's input, E5M2 for an output gradient), and its transposed copy
  // (fp8_transposed_): the operands Hopper's FP8 GEMMs read, the copy for the wgrad GEMM. A
  // forward norm's output (`fusable`) is written in `to` by the norm itself (TE's
  // LayerNormLinear: the norm kernel casts) and transposed by a copy of its own; anything else
  // is cast by one cast_transpose kernel (reads x once, writes both), on `tape` as a Cast (its
  // gradient passes back in the model's type). Once per x: a norm's output read by several
  // GEMMs (gate and up) is cast once.
  TensorId fp8_operand(Tape* tape, const std::string& name, TensorId x, DataType to, bool fusable) {
    if (const auto done = fp8_of_.find(x.value); done != fp8_of_.end()) return done->second;
    const Op* producer = nullptr;
    for (std::size_t k = g_.ops.size(); k-- > 0 && producer == nullptr;)
      for (std::size_t i = 0; i < g_.ops[k].tensors.size(); ++i)
        if (g_.ops[k].tensors[i] == x && g_.ops[k].space.accesses[i].role == TensorRole::Output)
          producer = &g_.ops[k];
    const Shape s = shape(x);
    TensorId x8 = x;
    const TensorId x8t = tensor(name + ".fp8_t", s, TensorKind::Activation, false, to);
    if (tape != nullptr && fusable && producer != nullptr &&
        producer->kind == OpKind::Normalization) {
      quantize_in_producer(x, to);
      emit(make_elementwise(name + ".fp8_transpose", Function::Copy, s, to), {x8, x8t});
    } else {
      x8 = tensor(name + ".fp8", s, TensorKind::Activation, tape != nullptr, to);
      emit(cast_transpose(name + ".fp8_cast_transpose", s, dtype(x), to), {x, x8, x8t}, tape,
           NodeKind::Cast);
    }
    fp8_of_[x.value] = x8;
    fp8_transposed_[x8.value] = x8t;
    return x8;
  }

  // TE's cast_transpose: an elementwise copy of [s] in `from` that writes two [s] results in
  // `to`, the cast (first) and its transpose.
  static Op cast_transpose(std::string name, const Shape& s, DataType from, DataType to) {
    Op op = make_elementwise(std::move(name), Function::Copy, s, from, {}, to);
    op.space.accesses.push_back(op.space.accesses.back());
    op.space.accesses.back().tensor = "y_t";
    return op;
  }

  // The E4M3 copy of a linear layer's weight the GEMMs read (its transpose for dgrad beside it),
  // written once a step by fp8_weight_casts; its gradient goes to the weight's (fp8_master_).
  // State kept between steps, as TE keeps it, so not a parameter of its own.
  TensorId fp8_weight(const std::string& name, TensorId w) {
    if (const auto done = fp8_of_.find(w.value); done != fp8_of_.end()) return done->second;
    const TensorId w8 =
        tensor(name + ".fp8", shape(w), TensorKind::OptimizerState, false, DataType::Fp8E4M3);
    const TensorId w8t =
        tensor(name + ".fp8_t", shape(w), TensorKind::OptimizerState, false, DataType::Fp8E4M3);
    fp8_of_[w.value] = w8;
    fp8_transposed_[w8.value] = w8t;
    fp8_master_[w8.value] = w;
    fp8_weights_.push_back(w);
    return w8;
  }

  // The updated weights' casts to E4M3 for the next step (StepPart::WeightCast).
  void fp8_weight_casts() {
    for (const TensorId w : fp8_weights_) {
      const TensorId w8 = fp8_of_.at(w.value);
      emit(cast_transpose(g_.tensors[w8.value].name + "_cast", shape(w), dtype(w),
                          DataType::Fp8E4M3),
           {w, w8, fp8_transposed_.at(w8.value)});
    }
  }

  // Emits `op`, which computes the gradient of weight w (its last access the output) from
  // `inputs`, into w's gradient: added in place (C += ...) when w is a weight; when w is
  // autocast's copy of one, written in the compute type, then cast into the fp32 gradient (the
  // cast's backward and PyTorch's AccumulateGrad: a copy while the gradient is None, the first
  // micro-batch's, an add after).
  void into_weight_grad(Op op, std::vector<TensorId> inputs, TensorId w) {
    // TE's wgrad GEMM adds into the weight's gradient itself (Megatron-LM's
    // gradient_accumulation_fusion).
    if (const auto fp8 = fp8_master_.find(w.value); fp8 != fp8_master_.end()) w = fp8->second;
    const auto master = master_of_.find(w.value);
    if (master == master_of_.end()) {
      accumulate_into_output(op);
      const TensorId gw = weight_grad(w);
      inputs.insert(inputs.end(), {gw, gw});
      emit(std::move(op), std::move(inputs));
      return;
    }
    const std::string name = op.name;
    const Shape s = op.space.accesses.back().shape;
    const TensorId partial = tensor(name + ".out", s, TensorKind::Activation, false);
    inputs.push_back(partial);
    emit(std::move(op), std::move(inputs));
    const TensorId gw = weight_grad(master->second);
    if (grad_written_.insert(gw.value).second) {
      emit(make_elementwise(name + ".to_grad", Function::Copy, s, dt_), {partial, gw});
    } else {
      Op add = make_elementwise(name + ".to_grad", Function::Add, s, dt_, {{TensorRole::Input, {}}});
      emit(std::move(add), {gw, partial, gw});
    }
  }

  // MLA's weights (LlmConfig::mla). q_a and kv_a are whole on every TP rank (each rank computes
  // the latents itself, as vLLM's ReplicatedLinear does); q_b, kv_b and out are split by heads.
  void mla_weights(const std::string& p, LayerWeights& w) {
    const MlaConfig& m = c_.mla;
    const std::uint64_t h = c_.hidden;
    if (m.q_lora_rank > 0) {
      w.q_a = linear_weight(p + "q_a.weight", h, m.q_lora_rank);
      w.q_a_norm = weight(p + "q_a_norm.weight", {m.q_lora_rank});
      w.q_b = linear_weight(p + "q_b.weight", m.q_lora_rank, q_out_);
    } else {
      w.q_proj = linear_weight(p + "q_proj.weight", h, q_out_);
    }
    w.kv_a = linear_weight(p + "kv_a.weight", h, m.latent());
    w.kv_a_norm = weight(p + "kv_a_norm.weight", {m.kv_lora_rank});
    if (phase_.kind == PhaseKind::Decode) {
      w.kv_b_k = linear_weight(p + "kv_b.k.weight", m.qk_nope_head_dim, m.kv_lora_rank, heads_);
      w.kv_b_v = linear_weight(p + "kv_b.v.weight", m.kv_lora_rank, m.v_head_dim, heads_);
    } else {
      w.kv_b = linear_weight(p + "kv_b.weight", m.kv_lora_rank,
                             heads_ * (m.qk_nope_head_dim + m.v_head_dim));
    }
  }

  // An FFN of `width`, or `experts` > 0 of them stacked (each weight and bias [experts][...]).
  FfnWeights ffn_weights(const std::string& p, std::uint64_t width, std::uint64_t experts = 0) {
    FfnWeights f;
    const std::uint64_t h = c_.hidden;
    const auto bias = [&](const std::string& name, std::uint64_t n) {
      return weight(name, stacked_shape({n}, experts));
    };
    f.up = linear_weight(p + "up.weight", h, width, experts);
    if (c_.mlp_bias) f.up_bias = bias(p + "up.bias", width);
    if (gated(c_.ffn_type)) {
      f.gate = linear_weight(p + "gate.weight", h, width, experts);
      if (c_.mlp_bias) f.gate_bias = bias(p + "gate.bias", width);
    }
    f.down = linear_weight(p + "down.weight", width, h, experts);
    if (c_.mlp_bias) f.down_bias = bias(p + "down.bias", h);
    if (experts > 0) {
      expert_weights_.push_back(f.up);
      if (gated(c_.ffn_type)) expert_weights_.push_back(f.gate);
      expert_weights_.push_back(f.down);
      for (const auto& b : {f.up_bias, f.gate_bias, f.down_bias})
        if (b) expert_weights_.push_back(*b);
    }
    return f;
  }

  // A norm's scale of `size`, and its shift for a LayerNorm: {name}.weight, {name}.bias.
  void norm_weights(const std::string& name, std::uint64_t size, std::optional<TensorId>& scale,
                    std::optional<TensorId>& shift) {
    scale = weight(name + ".weight", {size});
    if (c_.norm == NormType::LayerNorm) shift = weight(name + ".bias", {size});
  }

  void make_weights() {
    const std::uint64_t h = c_.hidden;
    const bool ln = c_.norm == NormType::LayerNorm;
    if (first_stage_) {
      embed_ = weight("embed.weight", {vocab_, h});
      if (c_.positions == PositionEncoding::Learned)
        position_table_ = weight("position.weight", {c_.max_positions, h});
      if (c_.type_vocab > 0) type_table_ = weight("token_type.weight", {c_.type_vocab, h});
      if (c_.post_norm) {  // post-norm layers: the embeddings normed before the first
        embed_norm_ = weight("embed_norm.weight", {h});
        if (ln) embed_norm_shift_ = weight("embed_norm.bias", {h});
      }
    }
    for (std::uint64_t l = first_layer_; l < first_layer_ + stage_layers_; ++l) {
      const std::string p = fmt::format("L{}.", l);
      LayerWeights w;
      w.window = c_.window_of(l);
      w.norm1 = weight(p + "norm1.weight", {h});
      if (ln) w.norm1_shift = weight(p + "norm1.bias", {h});
      if (c_.mla.enabled()) {
        mla_weights(p, w);
      } else if (hf_) {
        w.q_proj = linear_weight(p + "q_proj.weight", h, q_out_);
        w.k_proj = linear_weight(p + "k_proj.weight", h, kv_out_);
        w.v_proj = linear_weight(p + "v_proj.weight", h, kv_out_);
      } else {
        w.qkv = linear_weight(p + "qkv.weight", h, q_out_ + 2 * kv_out_);
      }
      if (c_.qkv_bias) w.qkv_bias = weight(p + "qkv.bias", {q_out_ + 2 * kv_out_});
      if (c_.qk_norm) {  // one scale (and shift) of head_dim each, shared by every head
        norm_weights(p + "q_norm", c_.head_dim, w.q_norm, w.q_norm_shift);
        norm_weights(p + "k_norm", c_.head_dim, w.k_norm, w.k_norm_shift);
      }
      w.out = linear_weight(p + "out.weight", o_in_, h);
      if (c_.out_bias) w.out_bias = weight(p + "out.bias", {h});
      if (!c_.shared_norm) {
        w.norm2 = weight(p + "norm2.weight", {h});
        if (ln) w.norm2_shift = weight(p + "norm2.bias", {h});
      }
      if (c_.post_norms) {
        norm_weights(p + "post_norm1", h, w.post_norm1, w.post_norm1_shift);
        norm_weights(p + "post_norm2", h, w.post_norm2, w.post_norm2_shift);
      }
      if (!c_.moe_layer(l)) {
        w.dense = ffn_weights(p + "ffn.", dense_ffn_);
      } else {
        w.router = weight(p + "router.weight", {h, c_.moe.experts});
        const std::uint64_t routed = routed_experts();
        w.experts = ffn_weights(p + "experts.", expert_ffn_, routed);
        if (routed < c_.moe.experts / ep_)
          w.unrouted =
              ffn_weights(p + "experts_unrouted.", expert_ffn_, c_.moe.experts / ep_ - routed);
        if (c_.moe.shared_experts > 0) {
          w.shared = ffn_weights(p + "shared.", shared_ffn_);
          if (c_.moe.shared_gate)
            w.shared_gate = linear_weight(p + "shared.expert_gate.weight", h, 1);
        }
      }
      layer_weights_.push_back(w);
    }
    if (last_stage_ && c_.encoder) {  // the pooler in place of a final norm and an LM head
      pooler_ = weight("pooler.weight", {h, h});
      pooler_bias_ = weight("pooler.bias", {h});
    } else if (last_stage_) {
      if (!c_.post_norm) {
        final_norm_ = weight("final_norm.weight", {h});
        if (ln) final_norm_shift_ = weight("final_norm.bias", {h});
      }
      // Tied: the LM head reads the embedding table [vocab][hidden] transposed, when this stage
      // holds it; otherwise (PP > 1) the last stage keeps its own copy, as Megatron-LM does.
      if (c_.tied_embeddings && embed_)
        lm_head_ = *embed_;
      else if (c_.tied_embeddings)
        lm_head_ = weight("lm_head.weight", {vocab_, h});
      else
        lm_head_ = weight("lm_head.weight", {h, vocab_});
      if (c_.lm_head_bias) lm_head_bias_ = weight("lm_head.bias", {vocab_});
    }
  }

  // ---- forward building blocks --------------------------------------------------------------

  // y = x W (+ bias) over `rows`; with `experts` > 0, that many at once (x [experts][rows][in],
  // W [experts][in][out]: stacked()).
  TensorId linear(Tape& tape, const std::string& name, TensorId x, std::uint64_t rows,
                  std::uint64_t in, std::uint64_t out, TensorId w,
                  std::optional<TensorId> bias = std::nullopt, bool b_t = false,
                  std::uint64_t experts = 0) {
    const Shape y_shape = stacked_shape({rows, out}, experts);
    if (const auto quantized = scales_of_.find(w.value); quantized != scales_of_.end()) {
      // Inference only (check_llm_build): no tape, no autocast.
      if (phase_.quant.activations) quantize_in_producer(x, *phase_.quant.activations);
      const TensorId y = act(name + ".out", y_shape);
      if (const std::optional<TensorId> scales = quantized->second)
        emit(stacked(grouped_matmul(name, rows, out, in, phase_.quant.group, dt_), experts),
             {x, w, *scales, y});
      else
        emit(stacked(matmul(name, rows, out, in, false, false, dt_), experts), {x, w, y});
      return bias ? add_weight(tape, name + ".bias", y, *bias) : y;
    }
    if (fp8_linear_.contains(w.value)) {  // Transformer Engine's FP8 GEMM (Precision::Fp8)
      const TensorId x8 = fp8_operand(&tape, name + ".input", x, DataType::Fp8E4M3, experts == 0);
      const TensorId y = act(name + ".out", y_shape);
      emit(stacked(matmul(name, rows, out, in, false, false, dt_), experts),
           {x8, fp8_weight(name + ".weight", w), y}, &tape, NodeKind::Matmul);
      return bias ? add_weight(tape, name + ".bias", y, *bias) : y;
    }
    // Autocast: the input (an fp32 norm's output), the weight and the bias cast to the compute
    // type before the GEMM, as F.linear does (so the bias add stays the GEMM's epilogue).
    x = cast(&tape, name + ".input_cast", x, dt_);
    const TensorId w_in = compute_weight(name + ".weight", w);
    if (bias) bias = compute_weight(name + ".bias", *bias);
    const TensorId y = act(name + ".out", y_shape);
    emit(stacked(matmul(name, rows, out, in, false, b_t, dt_), experts), {x, w_in, y}, &tape,
         NodeKind::Matmul, b_t);
    return bias ? add_weight(tape, name + ".bias", y, *bias) : y;
  }

  // y = x + w over the last axis (a bias or a LayerNorm shift); a stacked experts' bias
  // ([experts][n] over [experts][rows][n]) also over the first.
  TensorId add_weight(Tape& tape, const std::string& name, TensorId x, TensorId w) {
    const Shape s = shape(x);
    std::vector<std::size_t> axes{s.size() - 1};
    if (shape(w).size() == 2) axes.insert(axes.begin(), 0);
    const TensorId y = act(name + ".out", s, promoted(x, w));
    emit(make_elementwise(name, Function::Add, s, dt_, {{TensorRole::Weight, std::move(axes)}}),
         {x, w, y}, &tape, NodeKind::Elementwise);
    return y;
  }

  TensorId binary(Tape& tape, const std::string& name, Function f, TensorId a, TensorId b,
                  std::vector<std::size_t> b_axes = {}) {
    const Shape s = shape(a);
    const TensorId y = act(name + ".out", s, promoted(a, b));
    emit(make_elementwise(name, f, s, dt_, {{TensorRole::Input, std::move(b_axes)}}), {a, b, y},
         &tape, NodeKind::Elementwise);
    return y;
  }

  TensorId unary(Tape& tape, const std::string& name, Function f, TensorId x) {
    const Shape s = shape(x);
    const TensorId y = act(name + ".out", s, dtype(x));
    emit(make_elementwise(name, f, s, dt_), {x, y}, &tape, NodeKind::Elementwise);
    return y;
  }

  // The model's norm over the last axis of x: the hidden size of [tokens, hidden], or head_dim
  // of Q or K [b, heads, s, d] (the QK norm), with a scale (and shift) of that size.
  TensorId norm(Tape& tape, const std::string& name, TensorId x, TensorId scale,
                std::optional<TensorId> shift) {
    if (hf_) return hf_rms_norm(tape, name, x, scale);  // check_llm_build: RMSNorm, no shift
    const Shape s = shape(x);
    const TensorId y = act(name + ".out", s, dtype(x));  // autocast: fp32, as its parameters
    const Function f = c_.norm == NormType::LayerNorm ? Function::LayerNorm : Function::RmsNorm;
    emit(make_normalization(name, f, s, {s.size() - 1}, dt_), {x, scale, y}, &tape, NodeKind::Norm);
    return shift ? add_weight(tape, name + ".shift", y, *shift) : y;
  }

  // A collective `f` among `ranks` ranks whose output has x's shape and type (an all-reduce, an
  // all-to-all), recorded on the tape as `node` for its backward.
  TensorId same_shape_collective(Tape* tape, const std::string& name, Function f, TensorId x,
                                 std::uint64_t ranks, NodeKind node,
                                 TensorKind kind = TensorKind::Activation) {
    const Shape s = shape(x);
    const DataType type = dtype(x);
    const TensorId y = tensor(name + ".out", s, kind, kind == TensorKind::Activation, type);
    emit(make_collective(name, f, s, static_cast<std::uint32_t>(ranks), type), {x, y}, tape, node);
    return y;
  }

  TensorId all_reduce(Tape* tape, const std::string& name, TensorId x, std::uint64_t ranks,
                      TensorKind kind = TensorKind::Activation) {
    return same_shape_collective(tape, name, Function::AllReduce, x, ranks, NodeKind::Passthrough,
                                 kind);
  }

  void tp_enter(Tape& tape, TensorId x) {
    if (tp_ > 1) tape.push_back({NodeKind::TpEnter, {}, x, false, {}});
  }

  // A collective over dim 0 among `ranks` ranks (the TP ranks unless given): all-gather of
  // [t/ranks, h] into [t, h], or reduce-scatter of [t, h] into [t/ranks, h] (sequence
  // parallelism, Korthikanti et al. 2022; context parallelism's K and V, context_gather).
  TensorId sequence_collective(Tape* tape, const std::string& name, Function f, TensorId x,
                               NodeKind kind, std::uint64_t ranks = 0) {
    if (ranks == 0) ranks = tp_;
    Shape s = shape(x);
    Shape out = s;
    out[0] = f == Function::AllGather ? s[0] * ranks : s[0] / ranks;
    const TensorId y = act(name + ".out", out, dtype(x));
    emit(make_collective(name, f, s, static_cast<std::uint32_t>(ranks), dt_), {x, y}, tape, kind);
    return y;
  }

  // Context parallelism's all-gather of a rank's K or V [b][heads][seq / cp][d] over the cp
  // ranks into the sequence's [b][heads][seq][d] (gathered rank-major as [cp x b]..., then a
  // free reshape); the backward reduce-scatters the gradient back to the rank's share.
  TensorId context_gather(Tape* tape, const std::string& name, TensorId x) {
    const TensorId gathered =
        sequence_collective(tape, name, Function::AllGather, x, NodeKind::CpGather, cp_);
    const Shape stacked = shape(gathered);  // a copy: act() may move the tensors
    Shape whole = shape(x);
    whole[2] *= cp_;
    const TensorId y = act(name + ".sequence", whole, dtype(x));
    emit(make_data_movement(name + ".reshape", Function::Reshape, {stacked}, {whole}, dt_),
         {gathered, y}, tape, NodeKind::Movement);
    return y;
  }

  // Into a TP region (before a column-parallel GEMM): Megatron's f (identity; the gradient
  // all-reduced), or under sequence parallelism the sequence's all-gather.
  TensorId enter_tp(Tape& tape, const std::string& name, TensorId x) {
    if (sp_) return sequence_collective(&tape, name + ".all_gather", Function::AllGather, x,
                                        NodeKind::SpGather);
    tp_enter(tape, x);
    return x;
  }

  // Out of a TP region (after a row-parallel GEMM): Megatron's g (an all-reduce), or under
  // sequence parallelism a reduce-scatter over the sequence.
  TensorId leave_tp(Tape& tape, const std::string& name, TensorId x) {
    if (tp_ == 1) return x;
    if (sp_) return sequence_collective(&tape, name + ".reduce_scatter", Function::ReduceScatter,
                                        x, NodeKind::SpScatter);
    return all_reduce(&tape, name + ".all_reduce", x, tp_);
  }

  // The FFN's GEMMs up to the row-parallel down projection (before its all-reduce); with
  // `experts` > 0, that many stacked FFNs of `rows` each.
  TensorId ffn_core(Tape& tape, const std::string& p, TensorId x, std::uint64_t rows,
                    const FfnWeights& w, std::uint64_t width, bool down_bias,
                    std::uint64_t experts = 0) {
    const std::uint64_t h = c_.hidden;
    TensorId hidden_act;
    if (c_.ffn_type == FfnType::GeluMlp) {
      const TensorId up =
          linear(tape, p + "up", x, rows, h, width, w.up, w.up_bias, false, experts);
      hidden_act = hf_train_ && c_.gelu == GeluForm::WrittenTanh
                       ? hf_new_gelu(tape, p + "gelu", up)
                       : unary(tape, p + "gelu", Function::Gelu, up);
    } else {
      const TensorId gate =
          linear(tape, p + "gate", x, rows, h, width, w.gate, w.gate_bias, false, experts);
      const TensorId up =
          linear(tape, p + "up", x, rows, h, width, w.up, w.up_bias, false, experts);
      const bool silu = c_.ffn_type == FfnType::SwiGlu;
      const TensorId act_gate =
          unary(tape, p + (silu ? "silu" : "gelu"), silu ? Function::Silu : Function::Gelu, gate);
      hidden_act = binary(tape, p + "mul", Function::Mul, act_gate, up);
    }
    return linear(tape, p + "down", hidden_act, rows, width, h, w.down,
                  down_bias ? w.down_bias : std::nullopt, false, experts);
  }

  // The experts a layer's tokens reach, tokens spread evenly: all of them, or, with fewer
  // token-expert assignments (tokens x top_k) than experts (a small decode batch), that many,
  // one row each; the others do not run and their weights stay unread. Under expert parallelism
  // the rank's experts / ep, which receive as many rows from the ep ranks as its tokens send.
  std::uint64_t routed_experts() const {
    const std::uint64_t tokens = mb_sequences_ * q_len_ / (folded_ ? tp_ : 1);
    return std::min(c_.moe.experts / ep_, tokens * c_.moe.top_k);
  }

  // Expert parallelism's exchange of the dispatched rows [experts / ep][rows][h] among the ep
  // ranks (Megatron-Core's MoEAlltoAllTokenDispatcher, balanced routing: a rank receives as
  // many rows as it sends); its gradient goes back the same way.
  TensorId all_to_all(Tape* tape, const std::string& name, TensorId x) {
    return same_shape_collective(tape, name, Function::AllToAll, x, ep_, NodeKind::AllToAll);
  }

  // Megatron-Core's sort_chunks_by_idxs: the rows received from each rank regrouped by local
  // expert (before the experts) and back into rank order (after them): a copy, needed only when
  // a rank holds more than one expert.
  TensorId sort_chunks(Tape& tape, const std::string& name, TensorId x) {
    if (shape(x)[0] <= 1) return x;
    const Shape s = shape(x);
    const TensorId y = act(name + ".out", s, dtype(x));
    emit(make_data_movement(name, Function::Copy, {s}, {s}, dt_), {x, y}, &tape,
         NodeKind::Movement);
    return y;
  }

  TensorId moe(Tape& tape, const std::string& p, TensorId x, std::uint64_t tokens,
               const LayerWeights& w) {
    const std::uint64_t h = c_.hidden, experts = c_.moe.experts, k = c_.moe.top_k;
    x = cast(&tape, p + "input_cast", x, dt_);  // autocast: the router, dispatch and experts' input
    const TensorId logits = linear(tape, p + "router", x, tokens, h, experts, *w.router);
    const TensorId probs = act(p + "router.softmax.out", {tokens, experts});
    emit(make_normalization(p + "router.softmax", Function::Softmax, {tokens, experts}, {1}, dt_),
         {logits, probs}, &tape, NodeKind::Norm);
    // Tokens spread evenly over the routed experts (routed_experts()): ceil(tokens x top_k /
    // routed) rows each. The dispatch gathers each expert's rows into one [routed][rows][h]
    // tensor (vLLM's moe_align and permute); the experts run as one grouped GEMM per projection
    // (ffn_core over stacked weights); the combine gathers the rows back into token order.
    const std::uint64_t routed = shape(w.experts->up)[0];
    const std::uint64_t rows = (tokens * k + routed - 1) / routed;
    const Shape expert_shape{routed, rows, h};
    TensorId dispatched = act(p + "dispatch.out", expert_shape);
    emit(make_data_movement(p + "dispatch", Function::Gather, {{tokens, h}, {tokens, experts}},
                            {expert_shape}, dt_),
         {x, probs, dispatched}, &tape, NodeKind::Movement);
    if (ep_ > 1) {  // to the ranks that hold the experts, grouped by expert there
      dispatched = all_to_all(&tape, p + "dispatch.all_to_all", dispatched);
      dispatched = sort_chunks(tape, p + "dispatch.sort_chunks", dispatched);
    }
    TensorId expert_out =
        ffn_core(tape, p + "experts.", dispatched, rows, *w.experts, expert_ffn_, true, routed);
    if (ep_ > 1) {  // back in rank order, to the ranks that hold the tokens
      expert_out = sort_chunks(tape, p + "combine.unsort_chunks", expert_out);
      expert_out = all_to_all(&tape, p + "combine.all_to_all", expert_out);
    }
    const TensorId gathered = act(p + "combine.out", {tokens, k, h});
    emit(make_data_movement(p + "combine", Function::Gather, {expert_shape}, {{tokens, k, h}}, dt_),
         {expert_out, gathered}, &tape, NodeKind::Movement);
    TensorId y = act(p + "combine.sum.out", {tokens, h});
    emit(make_reduction(p + "combine.sum", Function::Sum, {tokens, k, h}, {1}, dt_), {gathered, y},
         &tape, NodeKind::SumReduce);
    if (w.shared) {
      TensorId s = ffn_core(tape, p + "shared.", x, tokens, *w.shared, shared_ffn_, true);
      if (w.shared_gate) {  // s x sigmoid(x W_g): a [tokens x 1] GEMM, viewed as [tokens]
        const TensorId logit =
            linear(tape, p + "shared.expert_gate", x, tokens, h, 1, *w.shared_gate);
        const TensorId flat = act(p + "shared.expert_gate.view", {tokens}, dtype(logit));
        emit(make_data_movement(p + "shared.expert_gate.view", Function::Reshape, {shape(logit)},
                                {{tokens}}, dt_),
             {logit, flat}, &tape, NodeKind::Movement);
        const TensorId g = unary(tape, p + "shared.expert_gate.sigmoid", Function::Sigmoid, flat);
        s = binary(tape, p + "shared.expert_gate.mul", Function::Mul, s, g, {0});
      }
      y = binary(tape, p + "shared.add", Function::Add, y, s);
    }
    return y;
  }

  // The attention block up to the output projection's input (heads merged: [tokens][heads x
  // head_dim]): QKV, RoPE, the KV cache's write or append, the attention op.
  TensorId attention(Tape& tape, const std::string& p, TensorId n1, const LayerWeights& w,
                     std::uint64_t sequences, bool recomputing) {
    const std::uint64_t h = c_.hidden, d = c_.head_dim, tokens = sequences * q_len_;
    const TensorId qkv = linear(tape, p + "qkv", n1, tokens, h, q_out_ + 2 * kv_out_, w.qkv,
                                w.qkv_bias);
    TensorId q = act(p + "q", {sequences, heads_, q_len_, d});
    TensorId k = act(p + "k", {sequences, kv_heads_, q_len_, d});
    const TensorId v = act(p + "v", {sequences, kv_heads_, q_len_, d});
    emit(make_data_movement(p + "split_heads", Function::Split, {shape(qkv)},
                            {shape(q), shape(k), shape(v)}, dt_),
         {qkv, q, k, v}, &tape, NodeKind::Movement);
    if (w.q_norm) {  // QK norm (Qwen3): before RoPE, so a decode step normalises the new K only
      q = norm(tape, p + "q_norm", q, *w.q_norm, w.q_norm_shift);
      k = norm(tape, p + "k_norm", k, *w.k_norm, w.k_norm_shift);
    }
    if (rope_table_) {  // RoPE priced as one elementwise Mul pass over Q's and K's rotary dims
      q = rope(tape, p + "rope_q", q);
      k = rope(tape, p + "rope_k", k);
    }
    TensorId keys = k, values = v;
    if (cp_ > 1) {  // every rank's K and V: the whole sequence's keys
      keys = context_gather(&tape, p + "cp_gather.k", k);
      values = context_gather(&tape, p + "cp_gather.v", v);
    }
    const std::uint64_t keys_len =
        phase_.kind == PhaseKind::Decode && w.window > 0 ? std::min(kv_len_, w.window) : kv_len_;
    if (!recomputing && phase_.kind == PhaseKind::Prefill && !c_.encoder) {  // encoders keep none
      const Shape s = shape(k);
      keys = tensor(p + "kv_cache.k", s, TensorKind::KvCache, false, kv_dt_);
      values = tensor(p + "kv_cache.v", s, TensorKind::KvCache, false, kv_dt_);
      emit(make_elementwise(p + "kv_write.k", Function::Copy, s, dt_), {k, keys});
      emit(make_elementwise(p + "kv_write.v", Function::Copy, s, dt_), {v, values});
    } else if (phase_.kind == PhaseKind::Decode) {
      const Shape cache{sequences, kv_heads_, keys_len, d};
      keys = tensor(p + "kv_cache.k", cache, TensorKind::KvCache, false, kv_dt_);
      values = tensor(p + "kv_cache.v", cache, TensorKind::KvCache, false, kv_dt_);
      emit(kv_append(p + "kv_append.k", sequences, cache), {k, keys});
      emit(kv_append(p + "kv_append.v", sequences, cache), {v, values});
    }
    // FP8 context FMHA: Q written in its type by RoPE (K and V come from the cache, in its own).
    if (const std::optional<DataType> fmha = phase_.quant.context_attention;
        fmha && phase_.kind == PhaseKind::Prefill)
      quantize_in_producer(q, *fmha);
    // A window the context exceeds: a prefill's queries each see the last `window` keys; a
    // decode step's one query reads the `window` tokens its ring of a cache holds.
    const bool causal = phase_.kind != PhaseKind::Decode && !c_.encoder;  // encoders: both ways
    const AttentionParams ap{.batch = sequences,
                             .heads = heads_,
                             .kv_heads = kv_heads_,
                             .q_len = q_len_,
                             .kv_len = keys_len,
                             .head_dim = d,
                             .causal = causal,
                             .softcap = c_.attention_softcap,
                             .window = causal ? w.window : 0,
                             .context_parallel = cp_};
    const TensorId o = act(p + "attention.out", {sequences, heads_, q_len_, d});
    emit(make_attention(p + "attention", ap, dt_), {q, keys, values, o}, &tape,
         NodeKind::Attention, false, ap);
    const TensorId merged = act(p + "merge_heads.out", {tokens, q_out_});
    emit(make_data_movement(p + "merge_heads", Function::Transpose, {shape(o)}, {shape(merged)},
                            dt_),
         {o, merged}, &tape, NodeKind::Movement);
    return merged;
  }

  // The rotary part of a head: MLA's qk_rope_head_dim, a partial rotary_dim, else head_dim.
  std::uint64_t rotary_dims() const {
    if (c_.mla.enabled()) return c_.mla.qk_rope_head_dim;
    return c_.rotary_dim > 0 ? c_.rotary_dim : c_.head_dim;
  }

  // RoPE over t's heads [b][heads][s][d]: one elementwise Mul pass with the table over the whole
  // head, or with a partial rotary_dim over its first rotary_dim dims (a view), put back beside
  // the rest (a concat, as GPT-NeoX's and Phi's modeling code torch.cat them).
  TensorId rope(Tape& tape, const std::string& name, TensorId t) {
    const Shape s = shape(t);
    const std::uint64_t r = rotary_dims();
    if (r == s.back()) return binary(tape, name, Function::Mul, t, *rope_table_, {2, 3});
    Shape rot = s, pass = s;
    rot.back() = r;
    pass.back() = s.back() - r;
    const TensorId t_rot = act(name + ".rot", rot, dtype(t));
    const TensorId t_pass = act(name + ".pass", pass, dtype(t));
    move(tape, name + ".split", Function::Split, {t}, {t_rot, t_pass});
    const TensorId roped = binary(tape, name, Function::Mul, t_rot, *rope_table_, {2, 3});
    const TensorId whole = act(name + ".concat.out", s, dtype(t));
    move(tape, name + ".concat", Function::Concat, {roped, t_pass}, {whole});
    return whole;
  }

  // A data movement of `inputs` into `outputs` (a Split: views, no kernel; a Concat: a copy).
  void move(Tape& tape, const std::string& name, Function f, std::vector<TensorId> inputs,
            std::vector<TensorId> outputs) {
    std::vector<Shape> in_shapes, out_shapes;
    for (const TensorId t : inputs) in_shapes.push_back(shape(t));
    for (const TensorId t : outputs) out_shapes.push_back(shape(t));
    std::vector<TensorId> bound = std::move(inputs);
    bound.insert(bound.end(), outputs.begin(), outputs.end());
    emit(make_data_movement(name, f, std::move(in_shapes), std::move(out_shapes), dt_),
         std::move(bound), &tape, NodeKind::Movement);
  }

  // Multi-head latent attention (LlmConfig::mla) up to the output projection's input ([tokens]
  // [heads x v_head_dim]), as DeepSeek's inference engines run it (docs/llm.md "Multi-head latent
  // attention"):
  //   both     Q: q_a, its RMSNorm, q_b (or q_proj), split into its nope and rotary parts; the
  //            latents: kv_a, split into c_kv and the rotary key k_pe, c_kv's RMSNorm; RoPE over
  //            the rotary parts only.
  //   prefill  kv_b expands c_kv into each head's key (nope part) and value; Q and K are their
  //            nope and rotary parts put back together (concats; k_pe is shared by the heads);
  //            one causal attention of heads x (nope + rope) queries and keys and v_head_dim
  //            values; c_kv and k_pe go into the cache's rows (a concat).
  //   decode   the absorbed form (DeepSeek-V2 report, section 2.1.2; FlashMLA): each head's nope
  //            query times its key half of kv_b (a GEMM batched over the heads) is its query in
  //            the latent space; beside its rotary part, one attention of the heads over one
  //            shared KV head whose keys are the cache's rows (kv_lora + rope) and whose values
  //            are their first kv_lora columns (the cache read once); each head's latent output
  //            times its value half of kv_b (batched again). The new row is appended first.
  TensorId mla_attention(Tape& tape, const std::string& p, TensorId n1, const LayerWeights& w,
                         std::uint64_t sequences, bool recomputing) {
    const MlaConfig& m = c_.mla;
    const std::uint64_t h = c_.hidden, tokens = sequences * q_len_, nope = m.qk_nope_head_dim,
                        rotary = m.qk_rope_head_dim, lora = m.kv_lora_rank, vd = m.v_head_dim;
    const bool decode = phase_.kind == PhaseKind::Decode;
    TensorId q;
    if (w.q_a) {
      const TensorId qa = linear(tape, p + "q_a", n1, tokens, h, m.q_lora_rank, *w.q_a);
      const TensorId qn = norm(tape, p + "q_a_norm", qa, *w.q_a_norm, std::nullopt);
      q = linear(tape, p + "q_b", qn, tokens, m.q_lora_rank, q_out_, *w.q_b);
    } else {
      q = linear(tape, p + "q_proj", n1, tokens, h, q_out_, *w.q_proj);
    }
    // Decode's nope query is laid out for the absorbed GEMM, heads first.
    const TensorId q_nope = act(p + "q_nope", decode ? Shape{heads_, tokens, nope}
                                                     : Shape{sequences, heads_, q_len_, nope});
    TensorId q_pe = act(p + "q_pe", {sequences, heads_, q_len_, rotary});
    move(tape, p + "q_split", Function::Split, {q}, {q_nope, q_pe});
    const TensorId kv_a = linear(tape, p + "kv_a", n1, tokens, h, m.latent(), *w.kv_a);
    TensorId c_kv = act(p + "c_kv", {tokens, lora});
    TensorId k_pe = act(p + "k_pe", {sequences, 1, q_len_, rotary});
    move(tape, p + "kv_a_split", Function::Split, {kv_a}, {c_kv, k_pe});
    c_kv = norm(tape, p + "kv_a_norm", c_kv, *w.kv_a_norm, std::nullopt);
    if (rope_table_) {  // the rotary parts are the whole of q_pe and k_pe
      q_pe = rope(tape, p + "rope_q", q_pe);
      k_pe = rope(tape, p + "rope_k", k_pe);
    }
    const Shape rows{sequences, 1, q_len_, m.latent()};
    if (!decode) {
      const TensorId kv =
          linear(tape, p + "kv_b", c_kv, tokens, lora, heads_ * (nope + vd), *w.kv_b);
      const TensorId k_nope = act(p + "k_nope", {sequences, heads_, q_len_, nope});
      TensorId v = act(p + "v", {sequences, heads_, q_len_, vd});
      move(tape, p + "kv_b_split", Function::Split, {kv}, {k_nope, v});
      const TensorId qf = act(p + "q", {sequences, heads_, q_len_, nope + rotary});
      move(tape, p + "q_concat", Function::Concat, {q_nope, q_pe}, {qf});
      TensorId kf = act(p + "k", {sequences, heads_, q_len_, nope + rotary});
      move(tape, p + "k_concat", Function::Concat, {k_nope, k_pe}, {kf});
      if (cp_ > 1) {  // every rank's K and V, the whole sequence's, as attention() gathers them
        kf = context_gather(&tape, p + "cp_gather.k", kf);
        v = context_gather(&tape, p + "cp_gather.v", v);
      }
      if (!recomputing && phase_.kind == PhaseKind::Prefill) {  // training keeps no cache
        const TensorId cache =
            tensor(p + "kv_cache.latent", rows, TensorKind::KvCache, false, kv_dt_);
        emit(make_data_movement(p + "kv_write", Function::Concat, {shape(c_kv), shape(k_pe)},
                                {rows}, dt_),
             {c_kv, k_pe, cache});
      }
      if (const std::optional<DataType> fmha = phase_.quant.context_attention)
        quantize_in_producer(qf, *fmha);
      const AttentionParams ap{.batch = sequences,
                               .heads = heads_,
                               .kv_heads = heads_,
                               .q_len = q_len_,
                               .kv_len = kv_len_,
                               .head_dim = nope + rotary,
                               .causal = true,
                               .value_dim = vd,
                               .context_parallel = cp_};
      const TensorId o = act(p + "attention.out", {sequences, heads_, q_len_, vd});
      emit(make_attention(p + "attention", ap, dt_), {qf, kf, v, o}, &tape, NodeKind::Attention,
           false, ap);
      const TensorId merged = act(p + "merge_heads.out", {tokens, o_in_});
      move(tape, p + "merge_heads", Function::Transpose, {o}, {merged});
      return merged;
    }
    // Decode: the query in the latent space.
    const TensorId q_lat = linear(tape, p + "q_absorb", q_nope, tokens, nope, lora, *w.kv_b_k,
                                  std::nullopt, false, heads_);
    const TensorId qf = act(p + "q", {sequences, heads_, 1, m.latent()});
    move(tape, p + "q_concat", Function::Concat, {q_lat, q_pe}, {qf});
    const Shape cache_shape{sequences, 1, kv_len_, m.latent()};
    const TensorId cache =
        tensor(p + "kv_cache.latent", cache_shape, TensorKind::KvCache, false, kv_dt_);
    const TensorId row = act(p + "kv_row", rows);
    move(tape, p + "kv_row", Function::Concat, {c_kv, k_pe}, {row});
    emit(kv_append(p + "kv_append", sequences, cache_shape), {row, cache});
    const AttentionParams ap{.batch = sequences,
                             .heads = heads_,
                             .kv_heads = 1,
                             .q_len = 1,
                             .kv_len = kv_len_,
                             .head_dim = m.latent(),
                             .causal = false,
                             .value_dim = lora};
    Op attention = make_attention(p + "attention", ap, dt_);
    attention.space.accesses[2].shape = cache_shape;  // V: the first kv_lora columns of the rows
    const TensorId o = act(p + "attention.out", {sequences, heads_, 1, lora});
    emit(std::move(attention), {qf, cache, cache, o}, &tape, NodeKind::Attention, false, ap);
    const TensorId o_heads = act(p + "attention.out.view", {heads_, tokens, lora});
    move(tape, p + "attention.out.view", Function::Reshape, {o}, {o_heads});
    const TensorId o_v = linear(tape, p + "v_absorb", o_heads, tokens, lora, vd, *w.kv_b_v,
                                std::nullopt, false, heads_);
    const TensorId merged = act(p + "merge_heads.out", {tokens, o_in_});
    move(tape, p + "merge_heads", Function::Transpose, {o_v}, {merged});
    return merged;
  }

  // The attention's output projection (row-parallel) of the merged heads, out of the TP region,
  // and its bias, which follows the all-reduce (autocast casts it first).
  TensorId attention_output(Tape& tape, const std::string& p, TensorId merged, std::uint64_t tokens,
                            const LayerWeights& w) {
    std::optional<TensorId> out_bias;
    if (w.out_bias) out_bias = compute_weight(p + "out.bias", *w.out_bias);
    TensorId attn = linear(tape, p + "out", merged, tokens, o_in_, c_.hidden, w.out);
    attn = leave_tp(tape, p + "out", attn);
    if (out_bias) attn = add_weight(tape, p + "out.bias", attn, *out_bias);
    return attn;
  }

  // A dense layer's FFN of `x` (in the TP region), out of the region, and its down bias after.
  TensorId dense_ffn(Tape& tape, const std::string& p, TensorId x, std::uint64_t tokens,
                     const FfnWeights& f) {
    std::optional<TensorId> down_bias;
    if (f.down_bias) down_bias = compute_weight(p + "ffn.down.bias", *f.down_bias);
    TensorId out = ffn_core(tape, p + "ffn.", x, tokens, f, dense_ffn_, false);
    out = leave_tp(tape, p + "ffn", out);
    if (down_bias) out = add_weight(tape, p + "ffn.down.bias", out, *down_bias);
    return out;
  }

  // A post-norm layer (BERT's, LlmConfig::post_norm): x1 = norm1(x + attention(x)), then
  // norm2(x1 + FFN(x1)); the branches read the residual stream itself.
  TensorId post_norm_layer(Tape& tape, const std::string& p, TensorId x, const LayerWeights& w,
                           std::uint64_t sequences, bool recomputing) {
    const std::uint64_t tokens = sequences * q_len_;
    const TensorId merged =
        attention(tape, p, enter_tp(tape, p + "attention", x), w, sequences, recomputing);
    const TensorId attn = attention_output(tape, p, merged, tokens, w);
    const TensorId x1 =
        norm(tape, p + "norm1", binary(tape, p + "residual1", Function::Add, x, attn), w.norm1,
             w.norm1_shift);
    const TensorId ffn_out = dense_ffn(tape, p, enter_tp(tape, p + "ffn", x1), tokens, *w.dense);
    return norm(tape, p + "norm2", binary(tape, p + "residual2", Function::Add, x1, ffn_out),
                *w.norm2, w.norm2_shift);
  }

  TensorId layer(Tape& tape, const std::string& p, TensorId x, const LayerWeights& w,
                 std::uint64_t sequences, bool recomputing) {
    if (hf_) return hf_layer(tape, p, x, w, sequences);
    if (c_.post_norm) return post_norm_layer(tape, p, x, w, sequences, recomputing);
    const std::uint64_t tokens = sequences * q_len_;
    const TensorId n1 =
        enter_tp(tape, p + "norm1", norm(tape, p + "norm1", x, w.norm1, w.norm1_shift));
    const TensorId merged = c_.mla.enabled() ? mla_attention(tape, p, n1, w, sequences, recomputing)
                                             : attention(tape, p, n1, w, sequences, recomputing);
    TensorId attn = attention_output(tape, p, merged, tokens, w);
    if (w.post_norm1) attn = norm(tape, p + "post_norm1", attn, *w.post_norm1, w.post_norm1_shift);
    attn = hf_dropout(tape, p + "attn.dropout", attn);  // GPT2Attention's resid_dropout
    const TensorId x1 = binary(tape, p + "residual1", Function::Add, x, attn);

    // The FFN's input: norm2 of x1, or in parallel (LlmConfig::parallel_residual) of the layer's
    // input x, or norm1's output itself (shared_norm); x1 + FFN is then x + attention + FFN.
    // Under MoE parallel folding the experts take the rank's sequence-parallel share as it is.
    const bool folded = folded_ && !w.dense;
    const TensorId n2 = c_.shared_norm ? n1
                        : folded       ? norm(tape, p + "norm2", x1, *w.norm2, w.norm2_shift)
                                       : enter_tp(tape, p + "norm2",
                                                  norm(tape, p + "norm2", c_.parallel_residual ? x : x1,
                                                       *w.norm2, w.norm2_shift));
    TensorId ffn_out;
    if (w.dense) {
      ffn_out = dense_ffn(tape, p, n2, tokens, *w.dense);
    } else if (folded) {
      ffn_out = moe(tape, p + "moe.", n2, tokens / tp_, w);
    } else {
      ffn_out = moe(tape, p + "moe.", n2, tokens, w);
      ffn_out = leave_tp(tape, p + "moe", ffn_out);
    }
    if (w.post_norm2)
      ffn_out = norm(tape, p + "post_norm2", ffn_out, *w.post_norm2, w.post_norm2_shift);
    ffn_out = hf_dropout(tape, p + "ffn.dropout", ffn_out);  // GPT2MLP's dropout
    return binary(tape, p + "residual2", Function::Add, x1, ffn_out);
  }

  // ---- Hugging Face transformers, training (hf_train_: GPT2LMHeadModel) ----------------------
  // coda's graph of the step, under autocast, plus what transformers' GPT-2 code launches beyond
  // it (transformers 5, attn_implementation "sdpa"): nn.Dropout after the embeddings and after
  // each branch's output projection, and GPT-2's GELU written out in PyTorch operators.

  // nn.Dropout(p) in training, p > 0 (LlmConfig::dropout): PyTorch's fused dropout kernel reads
  // x and writes y and the keep mask, a bool a element; its backward multiplies the gradient by
  // the mask (and 1 / (1 - p)), one kernel. x itself where no dropout runs (p = 0: at::dropout
  // returns its input).
  TensorId hf_dropout(Tape& tape, const std::string& name, TensorId x) {
    if (!hf_train_ || c_.dropout <= 0) return x;
    const Shape s = shape(x);
    const TensorId y = act(name + ".out", s, dtype(x));
    const TensorId mask = tensor(name + ".mask", s, TensorKind::Activation, false, DataType::Int8);
    Op op = make_elementwise(name, Function::Mul, s, dt_);
    op.space.accesses.push_back(op.space.accesses.back());  // a second output: the mask
    op.space.accesses.back().tensor = "mask";
    emit(std::move(op), {x, y, mask}, &tape, NodeKind::Dropout);
    return y;
  }

  // NewGELUActivation.forward (transformers' activations.py; GPT-2's "gelu_new"):
  // 0.5 * x * (1.0 + tanh(sqrt(2 / pi) * (x + 0.044715 * pow(x, 3.0)))), a kernel per operator.
  // Autocast runs pow in fp32 (its fp32 list), casting x first, so everything after it is fp32
  // by type promotion but 0.5 * x: 9 kernels, 7 of them writing fp32, and the down projection
  // then casts their fp32 result back (linear's input cast).
  TensorId hf_new_gelu(Tape& tape, const std::string& name, TensorId x) {
    const TensorId x32 = cast(&tape, name + ".pow.to_fp32", x, param_dt_);
    const TensorId cube = unary(tape, name + ".pow", Function::Pow, x32);
    const TensorId scaled = unary(tape, name + ".mul_coef", Function::Mul, cube);
    const TensorId inner = binary(tape, name + ".add", Function::Add, x, scaled);
    const TensorId arg = unary(tape, name + ".mul_sqrt", Function::Mul, inner);
    const TensorId th = unary(tape, name + ".tanh", Function::Tanh, arg);
    const TensorId one_plus = unary(tape, name + ".add_one", Function::Add, th);
    const TensorId half = unary(tape, name + ".mul_half", Function::Mul, x);
    return binary(tape, name + ".mul", Function::Mul, half, one_plus);
  }

  // ---- Hugging Face transformers, eager (Runtime::HfTransformers) ---------------------------
  // Each function follows one piece of LlamaForCausalLM's modeling code (transformers 4.56 and
  // later, attn_implementation "sdpa"), one op per PyTorch op that launches a kernel; views
  // (view, transpose, slicing, unsqueeze, expand) are Reshape or Split ops, which launch none.

  // LlamaRMSNorm.forward: x.to(float32); .pow(2); .mean(-1, keepdim=True); + eps; torch.rsqrt;
  // x * that; .to(input dtype); weight * it. 8 kernels, four of them over the whole of x in fp32.
  TensorId hf_rms_norm(Tape& tape, const std::string& name, TensorId x, TensorId weight) {
    const Shape s = shape(x);
    const TensorId x32 = cast(&tape, name + ".to_fp32", x, DataType::Fp32);
    const TensorId squared = unary(tape, name + ".pow", Function::Pow, x32);
    const TensorId variance = act(name + ".mean.out", {s[0]}, DataType::Fp32);
    emit(make_reduction(name + ".mean", Function::Mean, s, {1}, DataType::Fp32),
         {squared, variance});
    const TensorId shifted = unary(tape, name + ".add_eps", Function::Add, variance);
    const TensorId inverse = unary(tape, name + ".rsqrt", Function::Rsqrt, shifted);
    const TensorId normed = binary(tape, name + ".mul", Function::Mul, x32, inverse, {0});
    const TensorId back = cast(&tape, name + ".to_dtype", normed, dtype(x));
    const TensorId y = act(name + ".out", s, dtype(x));
    emit(make_elementwise(name + ".mul_weight", Function::Mul, s, dt_, {{TensorRole::Weight, {1}}}),
         {back, weight, y}, &tape, NodeKind::Elementwise);
    return y;
  }

  // LlamaRotaryEmbedding.forward, once a forward: the position ids to fp32; their outer product
  // with inv_freq (a matmul over k = 1, priced as the multiply it is); cat((freqs, freqs));
  // cos() and sin(), each * attention_scaling; both .to(dtype). 9 small kernels. Sets cos_, sin_
  // ([q_len, head_dim] in the model's type; every sequence has the same positions).
  void hf_rotary(Tape& tape, const std::string& p) {
    const std::uint64_t s = q_len_, d = c_.head_dim, half = d / 2;
    const TensorId ids =
        tensor(p + "position_ids", {s}, TensorKind::Activation, false, DataType::Int32);
    const TensorId positions = cast(&tape, p + "rotary.positions.float", ids, DataType::Fp32);
    const TensorId inv_freq =  // a buffer of the module, not a parameter
        tensor(p + "rotary.inv_freq", {half}, TensorKind::Activation, false, DataType::Fp32);
    Op outer = make_elementwise(p + "rotary.freqs", Function::Mul, {s, half}, DataType::Fp32,
                                {{TensorRole::Input, {1}}});
    outer.space.accesses[0].shape = {s};  // the positions span the first axis only
    outer.space.accesses[0].indices = {dim_index(0)};
    const TensorId freqs = act(p + "rotary.freqs.out", {s, half}, DataType::Fp32);
    emit(std::move(outer), {positions, inv_freq, freqs}, &tape, NodeKind::Elementwise);
    const TensorId table = act(p + "rotary.cat.out", {s, d}, DataType::Fp32);
    emit(make_data_movement(p + "rotary.cat", Function::Concat, {{s, half}, {s, half}}, {{s, d}},
                            DataType::Fp32),
         {freqs, freqs, table}, &tape, NodeKind::Movement);
    const auto wave = [&](const std::string& name, Function f) {
      const TensorId value = unary(tape, p + "rotary." + name, f, table);
      const TensorId scaled = unary(tape, p + "rotary." + name + ".scale", Function::Mul, value);
      return cast(&tape, p + "rotary." + name + ".to_dtype", scaled, dt_);
    };
    cos_ = wave("cos", Function::Cos);
    sin_ = wave("sin", Function::Sin);
  }

  // apply_rotary_pos_emb on t [b, heads, s, d]: (t * cos) + (rotate_half(t) * sin), where
  // rotate_half is cat((-x2, x1)) of t's halves (slices: views). 5 kernels.
  TensorId hf_rope(Tape& tape, const std::string& name, TensorId t) {
    const Shape s = shape(t);
    Shape half = s;
    half[3] = s[3] / 2;
    const TensorId t_cos = binary(tape, name + ".mul_cos", Function::Mul, t, *cos_, {2, 3});
    const TensorId x1 = act(name + ".x1", half), x2 = act(name + ".x2", half);
    emit(make_data_movement(name + ".halves", Function::Split, {s}, {half, half}, dt_), {t, x1, x2},
         &tape, NodeKind::Movement);
    const TensorId negated = unary(tape, name + ".neg", Function::Neg, x2);
    const TensorId rotated = act(name + ".cat.out", s);
    emit(make_data_movement(name + ".cat", Function::Concat, {half, half}, {s}, dt_),
         {negated, x1, rotated}, &tape, NodeKind::Movement);
    const TensorId r_sin = binary(tape, name + ".mul_sin", Function::Mul, rotated, *sin_, {2, 3});
    return binary(tape, name + ".add", Function::Add, t_cos, r_sin);
  }

  // A view of x as `to` (view, transpose, reshape of a contiguous result): no kernel.
  TensorId hf_view(Tape& tape, const std::string& name, TensorId x, Shape to) {
    const TensorId y = act(name + ".out", to, dtype(x));
    emit(make_data_movement(name, Function::Reshape, {shape(x)}, {std::move(to)}, dt_), {x, y},
         &tape, NodeKind::Movement);
    return y;
  }

  // DynamicLayer.update: torch.cat([cache, new], dim=-2), for K and for V at every forward; the
  // first concatenates onto an empty tensor (a copy of the prompt's K or V). The old cache is
  // read and a new one of kv_len tokens written: the whole cache is copied each decode step.
  TensorId hf_cache_cat(const std::string& name, TensorId t) {
    const Shape s = shape(t);
    const Shape grown{s[0], s[1], kv_len_, s[3]};
    if (phase_.kind != PhaseKind::Decode) {
      const TensorId cache = tensor(name, grown, TensorKind::KvCache, false, kv_dt_);
      emit(make_data_movement(name + ".cat", Function::Concat, {s}, {grown}, dt_), {t, cache});
      return cache;
    }
    const Shape past{s[0], s[1], phase_.seq_len, s[3]};
    const TensorId old = tensor(name, past, TensorKind::KvCache, false, kv_dt_);
    // The grown copy replaces the cache after the step (a transient here, not a second cache).
    const TensorId cache = tensor(name + ".grown", grown, TensorKind::Activation, false, kv_dt_);
    emit(make_data_movement(name + ".cat", Function::Concat, {past, s}, {grown}, dt_),
         {old, t, cache});
    return cache;
  }

  // LlamaDecoderLayer.forward: RMSNorm; LlamaAttention (q_proj, k_proj, v_proj, their views as
  // [b, heads, s, d], RoPE on Q and K, the cache update, SDPA with enable_gqa (no repeat_kv
  // copies), whose flash kernels write O as [b, s, heads, d] so that transpose(1, 2),
  // contiguous() and reshape copy nothing, o_proj); the residual add; RMSNorm; LlamaMLP
  // (down(silu(gate(x)) * up(x))); the residual add. 40 kernels.
  TensorId hf_layer(Tape& tape, const std::string& p, TensorId x, const LayerWeights& w,
                    std::uint64_t sequences) {
    const std::uint64_t h = c_.hidden, d = c_.head_dim, tokens = sequences * q_len_;
    const TensorId n1 = norm(tape, p + "norm1", x, w.norm1, std::nullopt);
    const auto project = [&](const std::string& name, TensorId weight, std::uint64_t heads) {
      const TensorId y = linear(tape, p + name, n1, tokens, h, heads * d, weight);
      return hf_view(tape, p + name + ".view", y, {sequences, heads, q_len_, d});
    };
    TensorId q = project("q_proj", *w.q_proj, heads_);
    TensorId k = project("k_proj", *w.k_proj, kv_heads_);
    const TensorId v = project("v_proj", *w.v_proj, kv_heads_);
    q = hf_rope(tape, p + "rope_q", q);
    k = hf_rope(tape, p + "rope_k", k);
    const TensorId keys = hf_cache_cat(p + "kv_cache.k", k);
    const TensorId values = hf_cache_cat(p + "kv_cache.v", v);
    const AttentionParams ap{
        sequences, heads_, kv_heads_, q_len_, kv_len_, d, phase_.kind != PhaseKind::Decode};
    const TensorId o = act(p + "attention.out", {sequences, heads_, q_len_, d});
    emit(make_attention(p + "attention", ap, dt_), {q, keys, values, o}, &tape, NodeKind::Attention,
         false, ap);
    const TensorId merged = hf_view(tape, p + "attention.out.view", o, {tokens, q_out_});
    const TensorId attn = linear(tape, p + "o_proj", merged, tokens, q_out_, h, w.out);
    const TensorId x1 = binary(tape, p + "residual1", Function::Add, x, attn);
    const TensorId n2 = norm(tape, p + "norm2", x1, *w.norm2, std::nullopt);
    const TensorId mlp = ffn_core(tape, p + "mlp.", n2, tokens, *w.dense, ffn_, false);
    return binary(tape, p + "residual2", Function::Add, x1, mlp);
  }

  // Writes one new token's K or V into slot `seq_len` of the cache (of a windowed layer's ring,
  // seq_len mod the window): an elementwise copy whose output index is offset, so the op touches
  // exactly the appended positions.
  Op kv_append(std::string name, std::uint64_t sequences, const Shape& cache) const {
    Op op =
        make_elementwise(std::move(name), Function::Copy, {sequences, cache[1], 1, cache[3]}, dt_);
    TensorAccess& out = op.space.accesses.back();
    out.shape = cache;
    out.indices[2].offset = static_cast<std::int64_t>(phase_.seq_len % cache[2]);
    return op;
  }

  // ---- one micro-batch forward -------------------------------------------------------------

  void forward(MicroBatch& mb, std::uint64_t index) {
    mb.prefix = par_.micro_batches > 1 ? fmt::format("mb{}.", index) : "";
    mb.sequences = mb_sequences_;
    const std::string& p = mb.prefix;
    const std::uint64_t h = c_.hidden, tokens = mb.sequences * q_len_;
    // The residual stream's rows on this rank: the whole sequence, or its 1/tp share under
    // sequence parallelism.
    const std::uint64_t local = sp_ ? tokens / tp_ : tokens;
    TensorId x;
    if (first_stage_) {
      const TensorId ids = tensor(p + "token_ids", {tokens}, TensorKind::Activation, false,
                                  DataType::Int32);
      x = act(p + "embed.out", {tokens, h}, dtype(*embed_));
      emit(make_embedding(p + "embed", vocab_, h, tokens, dt_), {ids, *embed_, x}, &mb.pre,
           NodeKind::Embedding);
      x = leave_tp(mb.pre, p + "embed", x);  // vocab-parallel
      if (hf_) hf_rotary(mb.pre, p);
      if (position_table_) {
        const TensorId pos_ids = tensor(p + "position_ids", {local}, TensorKind::Activation,
                                        false, DataType::Int32);
        const TensorId pos = act(p + "position.out", {local, h}, dtype(*position_table_));
        emit(make_embedding(p + "position", c_.max_positions, h, local, dt_),
             {pos_ids, *position_table_, pos}, &mb.pre, NodeKind::Embedding);
        x = binary(mb.pre, p + "embed.add_position", Function::Add, x, pos);
      }
      if (type_table_) {  // BERT's token-type (segment) embeddings
        const TensorId type_ids =
            tensor(p + "token_type_ids", {local}, TensorKind::Activation, false, DataType::Int32);
        const TensorId types = act(p + "token_type.out", {local, h}, dtype(*type_table_));
        emit(make_embedding(p + "token_type", c_.type_vocab, h, local, dt_),
             {type_ids, *type_table_, types}, &mb.pre, NodeKind::Embedding);
        x = binary(mb.pre, p + "embed.add_token_type", Function::Add, x, types);
      }
      if (embed_norm_) x = norm(mb.pre, p + "embed_norm", x, *embed_norm_, embed_norm_shift_);
      x = hf_dropout(mb.pre, p + "embed.dropout", x);  // GPT2Model's drop (embd_pdrop)
    } else {
      // The residual stream, in the type its adds give it (autocast: fp32).
      const TensorId remote = tensor(p + "recv.from_previous_stage", {local, h},
                                     TensorKind::Activation, false, param_dt_);
      x = act(p + "recv.out", {local, h}, param_dt_);
      emit(make_collective(p + "recv", Function::SendRecv, {local, h}, 2, dt_), {remote, x});
      mb.pre.push_back({NodeKind::StageInput, {}, x, false, {}});
    }
    mb.layers.resize(stage_layers_);
    for (std::uint64_t i = 0; i < stage_layers_; ++i) {
      mb.layer_inputs.push_back(x);
      x = layer(mb.layers[i], fmt::format("{}L{}.", p, first_layer_ + i), x, layer_weights_[i],
                mb.sequences, false);
      mb.layer_outputs.push_back(x);
    }
    mb.stage_output = x;
    if (!last_stage_) {
      const TensorId remote = tensor(p + "send.to_next_stage", {local, h},
                                     TensorKind::Activation, false, dtype(x));
      emit(make_collective(p + "send", Function::SendRecv, {local, h}, 2, dt_), {x, remote});
      return;
    }
    if (c_.encoder) {  // BertPooler: tanh(W h + b) over each sequence's first token
      const TensorId first = act(p + "first_token.out", {mb.sequences, h});
      emit(make_data_movement(p + "first_token", Function::Gather, {{tokens, h}},
                              {{mb.sequences, h}}, dt_),
           {x, first});
      const TensorId pooled =
          linear(mb.post, p + "pooler", first, mb.sequences, h, h, *pooler_, pooler_bias_);
      unary(mb.post, p + "pooler.tanh", Function::Tanh, pooled);
      return;
    }
    TensorId f =
        final_norm_ ? norm(mb.post, p + "final_norm", x, *final_norm_, final_norm_shift_) : x;
    std::uint64_t rows = tokens;
    if (phase_.kind == PhaseKind::Prefill) {  // logits of each sequence's last position only
      rows = mb.sequences;
      const TensorId last = act(p + "last_token.out", {rows, h});
      // hf_transformers: hidden_states[:, -1:, :] (logits_to_keep=1) is a view the LM head's
      // GEMM reads with its row stride.
      emit(make_data_movement(p + "last_token", hf_ ? Function::Split : Function::Gather,
                              {{tokens, h}}, {{rows, h}}, dt_),
           {f, last});
      f = last;
    }
    if (training_) f = enter_tp(mb.post, p + "final_norm", f);
    const bool b_t = c_.tied_embeddings;  // the table is [vocab][hidden]
    TensorId logits =
        linear(mb.post, p + "lm_head", f, rows, h, vocab_, *lm_head_, lm_head_bias_, b_t);
    // Gemma 2's final soft cap, cap x tanh(logits / cap): one elementwise pass over the logits.
    if (c_.final_softcap > 0) logits = unary(mb.post, p + "final_softcap", Function::Tanh, logits);
    if (hf_) {  // greedy decoding's logits[:, -1].argmax(-1)
      const TensorId next = act(p + "argmax.out", {rows});
      emit(make_reduction(p + "argmax", Function::Max, {rows, vocab_}, {1}, dt_), {logits, next});
    }
    if (!training_) return;
    // Cross-entropy: softmax over the (TP-local) vocabulary, then dlogits = probs - onehot.
    const TensorId probs = act(p + "loss.softmax.out", {rows, vocab_});
    emit(make_normalization(p + "loss.softmax", Function::Softmax, {rows, vocab_}, {1}, dt_),
         {logits, probs});
    const TensorId labels = tensor(p + "labels", {rows}, TensorKind::Activation, false);
    // Autocast: nll_loss is on its fp32 list, so the log-probabilities are cast to fp32 and
    // their gradient, written in fp32, cast back before log_softmax's backward.
    const TensorId logp = cast(nullptr, p + "loss.cast", probs, param_dt_);
    TensorId dlogits = act(p + "loss.grad", {rows, vocab_}, param_dt_);
    emit(make_elementwise(p + "loss.grad", Function::Sub, {rows, vocab_}, dt_,
                          {{TensorRole::Input, {0}}}),
         {logp, labels, dlogits});
    if (logp != probs) {  // cast: log_softmax's backward reads its gradient in the compute type
      const TensorId dlogp = cast(nullptr, p + "loss.grad.cast", dlogits, dt_);
      dlogits = act(p + "loss.softmax.dx", {rows, vocab_});
      emit(norm_backward(p + "loss.softmax.dx", Function::Softmax, {rows, vocab_}),
           {probs, dlogp, dlogits});
    }
    mb.logits_grad = dlogits;
    mb.post_logits = logits;
  }

  // ---- backward ------------------------------------------------------------------------------

  using Contributions = std::unordered_map<std::uint32_t, std::vector<TensorId>>;

  // A normalization's backward over the last axis: reads its input (a softmax: its output) and
  // dy ("dy", the second access), then whatever the forward read after (a scale).
  static Op norm_backward(std::string name, Function f, const Shape& s) {
    Op op = make_normalization(std::move(name), f, s, {s.size() - 1}, DataType::Fp32);
    TensorAccess dy_access = op.space.accesses.front();
    dy_access.tensor = "dy";
    op.space.accesses.insert(op.space.accesses.begin() + 1, std::move(dy_access));
    return op;
  }

  // dx is one contribution to x's gradient, cast to x's type first when it differs (autograd
  // casts a gradient to its input's type: autocast's residual adds, its casts' backwards).
  void add_grad(Contributions& grads, TensorId x, TensorId dx) {
    if (!differentiable(x)) return;
    // An FP8 operand's gradient stays in the type it was computed in (TE's GEMMs write the
    // model's type; nothing keeps a gradient in FP8).
    if (dtype(dx) != dtype(x) && !is_fp8(dtype(x)))
      dx = cast(nullptr, g_.tensors[dx.value].name + ".cast", dx, dtype(x));
    grads[x.value].push_back(dx);
  }

  // The gradient of `y`: the sum of its contributions (Add ops when there are several).
  std::optional<TensorId> grad(Contributions& grads, TensorId y) {
    const auto it = grads.find(y.value);
    if (it == grads.end() || it->second.empty()) return std::nullopt;
    std::vector<TensorId>& parts = it->second;
    while (parts.size() > 1) {
      const TensorId a = parts[parts.size() - 2], b = parts.back();
      const Shape s = shape(a);
      const std::string name = g_.tensors[y.value].name + ".grad_sum" + std::to_string(parts.size());
      const TensorId sum = act(name, s, dtype(a));
      emit(make_elementwise(name, Function::Add, s, dt_, {{TensorRole::Input, {}}}), {a, b, sum});
      parts.pop_back();
      parts.back() = sum;
    }
    return parts.front();
  }

  // A Sum of dy over the axes not in `keep`, added into the weight gradient of w.
  void weight_grad_sum(const std::string& name, TensorId dy, std::vector<std::size_t> keep,
                       TensorId w) {
    const Shape s = shape(dy);
    std::vector<std::size_t> reduce;
    for (std::size_t i = 0; i < s.size(); ++i)
      if (std::find(keep.begin(), keep.end(), i) == keep.end()) reduce.push_back(i);
    into_weight_grad(make_reduction(name, Function::Sum, s, reduce, dt_), {dy}, w);
  }

  void backward_node(Contributions& grads, const Node& node) {
    if (node.kind == NodeKind::TpEnter) {
      if (const auto dx = grad(grads, node.tensor)) {
        const TensorId reduced = all_reduce(nullptr, g_.tensors[dx->value].name + ".all_reduce",
                                            *dx, tp_);
        grads[node.tensor.value] = {reduced};
      }
      return;
    }
    if (node.kind == NodeKind::StageInput) {
      if (const auto dx = grad(grads, node.tensor)) {
        // The stage input is "<micro-batch prefix>recv.out".
        std::string prefix = g_.tensors[node.tensor.value].name;
        prefix.resize(prefix.size() - std::string_view("recv.out").size());
        const TensorId remote = tensor(prefix + "send_grad.to_previous_stage", shape(*dx),
                                       TensorKind::Activation, false, dtype(*dx));
        emit(make_collective(prefix + "send_grad", Function::SendRecv, shape(*dx), 2, dt_),
             {*dx, remote});
      }
      return;
    }
    const Op f = g_.ops[node.op.value];  // a copy: emitting may reallocate g_.ops
    const auto& acc = f.space.accesses;
    const auto& t = f.tensors;
    const std::size_t out_index = acc.size() - 1;
    switch (node.kind) {
      case NodeKind::Dropout: {  // masked_scale: dy times the keep mask (and 1 / (1 - p))
        const auto dy = grad(grads, t[1]);
        if (!dy) return;
        const Shape s = shape(t[0]);
        const TensorId dx = act(f.name + ".dx", s, dtype(*dy));
        emit(make_elementwise(f.name + ".dx", Function::Mul, s, dt_, {{TensorRole::Input, {}}}),
             {*dy, t[2], dx});
        add_grad(grads, t[0], dx);
        return;
      }
      case NodeKind::Cast: {  // add_grad casts the gradient back to the input's type
        if (const auto dy = grad(grads, t[1])) add_grad(grads, t[0], *dy);
        return;
      }
      case NodeKind::Matmul: {
        const auto dy = grad(grads, t[2]);
        if (!dy) return;
        const std::uint64_t m = f.space.dims[0].extent, n = f.space.dims[1].extent,
                            k = f.space.dims[2].extent, e = experts_of(f);
        if (fp8_master_.contains(t[1].value)) {  // TE: dgrad and wgrad from E5M2 dY
          const TensorId dy8 = fp8_operand(nullptr, f.name + ".dy", *dy, DataType::Fp8E5M2, false);
          if (differentiable(t[0])) {
            const TensorId dx = act(f.name + ".dx", stacked_shape({m, k}, e));
            emit(stacked(matmul(f.name + ".dx", m, k, n, false, true, dt_), e),
                 {dy8, fp8_transposed_.at(t[1].value), dx});
            add_grad(grads, t[0], dx);
          }
          into_weight_grad(stacked(matmul(f.name + ".dw", k, n, m, true, false, dt_), e),
                           {fp8_transposed_.at(t[0].value), fp8_transposed_.at(dy8.value)}, t[1]);
          return;
        }
        if (differentiable(t[0])) {  // per expert when stacked
          const TensorId dx = act(f.name + ".dx", stacked_shape({m, k}, e));
          emit(stacked(matmul(f.name + ".dx", m, k, n, false, !node.b_t, dt_), e), {*dy, t[1], dx});
          add_grad(grads, t[0], dx);
        }
        // dW = X^T dY ([k][n]), or dY^T X ([n][k]) for a table stored [n][k]; added in place.
        Op dw = stacked(node.b_t ? matmul(f.name + ".dw", n, k, m, true, false, dt_)
                                 : matmul(f.name + ".dw", k, n, m, true, false, dt_),
                        e);
        into_weight_grad(std::move(dw), node.b_t ? std::vector{*dy, t[0]} : std::vector{t[0], *dy},
                         t[1]);
        return;
      }
      case NodeKind::Elementwise: {
        const auto dy = grad(grads, t[out_index]);
        if (!dy) return;
        const Shape s = acc[out_index].shape;
        if (f.function == Function::Add) {
          for (std::size_t i = 0; i < out_index; ++i) {
            if (acc[i].role == TensorRole::Weight)
              weight_grad_sum(f.name + ".dbias", *dy, axes_of(acc[i]), t[i]);
            else
              add_grad(grads, t[i], *dy);  // residuals: the same shape as the output
          }
        } else if (f.function == Function::Mul && out_index == 1) {
          // A multiple of x by a scalar: dx = c dy, one kernel over dy (MulBackward0).
          const TensorId dx = act(f.name + ".dx", s, dtype(*dy));
          emit(make_elementwise(f.name + ".dx", Function::Mul, s, dt_), {*dy, dx});
          add_grad(grads, t[0], dx);
        } else if (f.function == Function::Pow) {
          // pow_backward: dy * (n * x.pow(n - 1)): three kernels, x.pow(n - 1), n times it, and
          // dy times that (transformers' GELU cubes: n = 3).
          const TensorId lower = act(f.name + ".dx.pow", s, dtype(t[0]));
          emit(make_elementwise(f.name + ".dx.pow", Function::Pow, s, dt_), {t[0], lower});
          const TensorId scaled = act(f.name + ".dx.mul_n", s, dtype(t[0]));
          emit(make_elementwise(f.name + ".dx.mul_n", Function::Mul, s, dt_), {lower, scaled});
          const TensorId dx = act(f.name + ".dx", s, promoted(*dy, t[0]));
          emit(make_elementwise(f.name + ".dx", Function::Mul, s, dt_, {{TensorRole::Input, {}}}),
               {*dy, scaled, dx});
          add_grad(grads, t[0], dx);
        } else if (f.function == Function::Mul) {
          for (std::size_t i = 0; i < 2; ++i) {
            if (!differentiable(t[i])) continue;
            const std::size_t other = 1 - i;
            const std::string name = fmt::format("{}.dx{}", f.name, i);
            const bool broadcast = acc[i].shape != s;
            TensorId dx = act(broadcast ? name + ".full" : name, s, dtype(t[i]));
            emit(make_elementwise(name, Function::Mul, s, dt_,
                                  {{TensorRole::Input, axes_of(acc[other])}}),
                 {*dy, t[other], dx});
            if (broadcast) {  // a broadcast operand's gradient sums over the axes it lacks
              const std::vector<std::size_t> kept = axes_of(acc[i]);
              std::vector<std::size_t> summed;
              for (std::size_t a = 0; a < s.size(); ++a)
                if (std::find(kept.begin(), kept.end(), a) == kept.end()) summed.push_back(a);
              const TensorId reduced = act(name, acc[i].shape, dtype(t[i]));
              emit(make_reduction(name + ".sum", Function::Sum, s, summed, dt_), {dx, reduced});
              dx = reduced;
            }
            add_grad(grads, t[i], dx);
          }
        } else {  // unary activation: dx = f'(x) * dy, priced as one pass of f over (x, dy)
          const TensorId dx = act(f.name + ".dx", s, dtype(t[0]));
          emit(make_elementwise(f.name + ".dx", f.function, s, dt_, {{TensorRole::Input, {}}}),
               {t[0], *dy, dx});
          add_grad(grads, t[0], dx);
        }
        return;
      }
      case NodeKind::Norm: {
        const auto dy = grad(grads, t[out_index]);
        if (!dy) return;
        const Shape s = acc[0].shape;
        const std::size_t last = s.size() - 1;
        Op op = norm_backward(f.name + ".dx", f.function, s);
        const TensorId dx = act(f.name + ".dx", s, dtype(t[0]));
        if (f.function == Function::Softmax) {  // reads the softmax output and dy
          emit(std::move(op), {t[1], *dy, dx});
        } else {  // reads x, dy and the scale; the scale's gradient is a sum over tokens
          emit(std::move(op), {t[0], *dy, t[1], dx});
          weight_grad_sum(f.name + ".dscale", *dy, {last}, t[1]);
        }
        add_grad(grads, t[0], dx);
        return;
      }
      case NodeKind::Attention: {
        const auto d_o = grad(grads, t[3]);
        if (!d_o) return;
        // One op, as FlashAttention's backward kernel (or, unfused, its five parts) computes
        // dQ, dK and dV together: make_attention_backward (the four gradient GEMMs, twice the
        // forward's MACs; docs/llm.md).
        const TensorId dq = act(f.name + ".dq", shape(t[0]));
        const TensorId dk = act(f.name + ".dk", shape(t[1]));
        const TensorId dv = act(f.name + ".dv", shape(t[2]));
        emit(make_attention_backward(f.name + ".bwd", node.attention, dt_),
             {t[0], t[1], t[2], t[3], *d_o, dq, dk, dv});
        add_grad(grads, t[0], dq);
        add_grad(grads, t[1], dk);
        add_grad(grads, t[2], dv);
        return;
      }
      case NodeKind::Movement: {
        std::vector<Shape> in_shapes, out_shapes;
        std::vector<TensorId> bound, targets;
        for (std::size_t i = 0; i < acc.size(); ++i) {
          if (acc[i].role != TensorRole::Output) continue;
          if (const auto dy = grad(grads, t[i])) {
            in_shapes.push_back(acc[i].shape);
            bound.push_back(*dy);
          }
        }
        if (bound.empty()) return;
        for (std::size_t i = 0; i < acc.size(); ++i) {
          if (acc[i].role == TensorRole::Output || !differentiable(t[i])) continue;
          out_shapes.push_back(acc[i].shape);
          targets.push_back(t[i]);
        }
        if (targets.empty()) return;
        Function back = f.function;
        // A split's gradient is a concat; a gather's is a scatter-add, priced as a concat.
        if (f.function == Function::Split || f.function == Function::Gather)
          back = Function::Concat;
        else if (f.function == Function::Concat)
          back = Function::Split;
        std::vector<TensorId> dxs;
        for (std::size_t i = 0; i < targets.size(); ++i)
          dxs.push_back(act(fmt::format("{}.dx{}", f.name, i), out_shapes[i], dtype(targets[i])));
        bound.insert(bound.end(), dxs.begin(), dxs.end());
        emit(make_data_movement(f.name + ".bwd", back, in_shapes, out_shapes, dt_), bound);
        for (std::size_t i = 0; i < targets.size(); ++i) add_grad(grads, targets[i], dxs[i]);
        return;
      }
      case NodeKind::SumReduce: {  // the sum's gradient is dy broadcast over the summed axis
        const auto dy = grad(grads, t[1]);
        if (!dy) return;
        const TensorId dx = act(f.name + ".dx", acc[0].shape);
        emit(make_data_movement(f.name + ".bwd", Function::Copy, {shape(*dy)}, {acc[0].shape},
                                dt_),
             {*dy, dx});
        add_grad(grads, t[0], dx);
        return;
      }
      case NodeKind::Embedding: {  // scatter-add of dy into the table's gradient
        const auto dy = grad(grads, t[2]);
        if (!dy) return;
        Op op = make_data_movement(f.name + ".bwd", Function::Gather, {shape(*dy), acc[0].shape},
                                   {acc[1].shape}, dt_);
        op.space.accesses[1].dtype = DataType::Int32;
        into_weight_grad(std::move(op), {*dy, t[0]}, t[1]);
        return;
      }
      case NodeKind::Passthrough: {
        if (const auto dy = grad(grads, t[1])) add_grad(grads, t[0], *dy);
        return;
      }
      case NodeKind::SpGather:
      case NodeKind::SpScatter: {  // the conjugate collective on the gradient
        if (const auto dy = grad(grads, t[1])) {
          const bool gathered = node.kind == NodeKind::SpGather;
          add_grad(grads, t[0],
                   sequence_collective(nullptr, f.name + ".bwd",
                                       gathered ? Function::ReduceScatter : Function::AllGather,
                                       *dy, gathered ? NodeKind::SpScatter : NodeKind::SpGather));
        }
        return;
      }
      case NodeKind::AllToAll: {
        if (const auto dy = grad(grads, t[1]))
          add_grad(grads, t[0], all_to_all(nullptr, f.name + ".bwd", *dy));
        return;
      }
      case NodeKind::CpGather: {
        if (const auto dy = grad(grads, t[1]))
          add_grad(grads, t[0],
                   sequence_collective(nullptr, f.name + ".bwd", Function::ReduceScatter, *dy,
                                       NodeKind::CpGather, cp_));
        return;
      }
      case NodeKind::TpEnter:
      case NodeKind::StageInput: return;
    }
  }

  void backward_tape(Contributions& grads, const Tape& tape) {
    for (std::size_t i = tape.size(); i-- > 0;) backward_node(grads, tape[i]);  // last first
  }

  void backward(MicroBatch& mb) {
    const std::string& p = mb.prefix;
    Contributions grads;
    if (last_stage_) {
      grads[mb.post_logits.value] = {*mb.logits_grad};
      backward_tape(grads, mb.post);
    } else {
      const Shape s = shape(mb.stage_output);
      const DataType type = dtype(mb.stage_output);
      const TensorId remote = tensor(p + "recv_grad.from_next_stage", s, TensorKind::Activation,
                                     false, type);
      const TensorId dy = act(p + "recv_grad.out", s, type);
      emit(make_collective(p + "recv_grad", Function::SendRecv, s, 2, dt_), {remote, dy});
      grads[mb.stage_output.value] = {dy};
    }
    for (std::uint64_t i = stage_layers_; i-- > 0;) {
      if (!phase_.recompute || (phase_.recompute_layers > 0 && i >= phase_.recompute_layers)) {
        backward_tape(grads, mb.layers[i]);
        continue;
      }
      // Full recomputation: re-run the layer's forward from its saved input, then differentiate
      // the re-run (its output inherits the original output's gradient).
      Tape tape;
      const TensorId y = layer(tape, fmt::format("{}L{}.recompute.", p, first_layer_ + i),
                               mb.layer_inputs[i], layer_weights_[i], mb.sequences, true);
      grads[y.value] = std::move(grads[mb.layer_outputs[i].value]);
      backward_tape(grads, tape);
    }
    backward_tape(grads, mb.pre);
  }

  void optimizer() {
    for (const TensorId w : weights_) {
      const Tensor param = g_.tensors[w.value];
      TensorId gw = weight_grad(w);
      // Reduced over the replicas that hold the weight: dp x cp ranks, or for a routed expert
      // under expert parallelism the tp x dp x cp / ep that hold the same experts (Megatron-Core's
      // expert data-parallel group).
      const bool expert =
          std::find(expert_weights_.begin(), expert_weights_.end(), w) != expert_weights_.end();
      const std::uint64_t replicas = expert && ep_ > 1 ? par_.dp * cp_ * tp_ / ep_ : par_.dp * cp_;
      if (replicas > 1)
        gw = all_reduce(nullptr, param.name + ".grad.dp_all_reduce", gw, replicas,
                        TensorKind::Gradient);
      const TensorId m = tensor(param.name + ".adam_m", param.shape, TensorKind::OptimizerState,
                                false, DataType::Fp32);
      const TensorId v = tensor(param.name + ".adam_v", param.shape, TensorKind::OptimizerState,
                                false, DataType::Fp32);
      // Mixed precision's fp32 master copy: read in place of the weight, and written too.
      std::vector<TensorId> bound{w, gw, m, v, w, m, v};
      std::optional<DataType> master_type;
      if ((phase_.precision == Precision::Mixed || phase_.precision == Precision::Fp8) &&
          param.dtype != DataType::Fp32) {
        master_type = DataType::Fp32;
        bound.front() = tensor(param.name + ".master", param.shape, TensorKind::OptimizerState,
                               false, master_type);
        bound.push_back(bound.front());
      }
      emit(make_adamw(param.name + ".adamw", param.shape, param.dtype, dtype(gw), DataType::Fp32,
                      master_type),
           std::move(bound));
    }
  }

  const LlmConfig& c_;
  const LlmPhase& phase_;
  const Parallelism& par_;
  DataType dt_;
  std::uint64_t tp_ = 1, heads_ = 0, kv_heads_ = 0, q_out_ = 0, kv_out_ = 0, ffn_ = 0, vocab_ = 0;
  std::uint64_t o_in_ = 0;        // the output projection's input: heads x the value head dim
  std::uint64_t shared_ffn_ = 0;  // the shared experts' intermediate size on this rank
  std::uint64_t dense_ffn_ = 0;   // a dense layer's FFN width on this rank (LlmConfig::dense_width)
  std::uint64_t stage_layers_ = 0, first_layer_ = 0, q_len_ = 0, kv_len_ = 0, mb_sequences_ = 0;
  std::uint64_t cp_ = 1;  // Parallelism::cp (q_len_ is a rank's share of the sequence)
  std::uint64_t ep_ = 1;  // Parallelism::ep (the rank holds experts / ep_ of each MoE layer)
  bool folded_ = false;   // ep_ > 1 with tp_ > 1: MoE parallel folding (the constructor)
  std::uint64_t expert_ffn_ = 0;  // a routed expert's width on the rank: ffn_, or whole folded
  std::vector<TensorId> expert_weights_;  // the routed experts' stacked weights and biases
  bool first_stage_ = false, last_stage_ = false, training_ = false, sp_ = false;
  bool hf_ = false;        // Runtime::HfTransformers, inference: LlamaForCausalLM's ops
  bool hf_train_ = false;  // Runtime::HfTransformers, training: GPT2LMHeadModel's additions
  DataType param_dt_;  // the parameters' (and the residual stream's) type
  std::unordered_map<std::uint32_t, TensorId> master_of_;  // autocast's weight copy -> weight
  // Precision::Fp8: the linear layers' weights TE runs in FP8; each FP8 operand of a tensor
  // (its input cast, a weight's copy), each FP8 operand's transposed copy, each weight copy's
  // weight, and the weights with a copy in the order they were first read.
  bool fp8_ = false;
  std::unordered_set<std::uint32_t> fp8_linear_;
  std::unordered_map<std::uint32_t, TensorId> fp8_of_, fp8_transposed_, fp8_master_;
  std::vector<TensorId> fp8_weights_;
  DataType kv_dt_;                                         // the KV cache's type
  // Quantized linear layers' weights, with their scales (grouped schemes) or none.
  std::unordered_map<std::uint32_t, std::optional<TensorId>> scales_of_;
  std::unordered_set<std::uint32_t> grad_written_;  // autocast: gradients written at least once
  Graph g_;
  std::vector<bool> differentiable_;
  std::vector<TensorId> weights_;
  std::unordered_map<std::uint32_t, TensorId> weight_grads_;
  std::optional<TensorId> embed_, position_table_, final_norm_, final_norm_shift_, lm_head_,
      lm_head_bias_, rope_table_;
  // Encoders (BERT): the token-type table, the embeddings' norm, the pooler.
  std::optional<TensorId> type_table_, embed_norm_, embed_norm_shift_, pooler_, pooler_bias_;
  std::optional<TensorId> cos_, sin_;  // hf_transformers: the rotary tables of the forward
  std::vector<LayerWeights> layer_weights_;
  std::vector<OpSpan> spans_;
};

// The quantization's rules (check_llm_build); `error(path, message, hint)` reports one.
template <typename Error>
void check_quantization(const LlmConfig& c, const LlmPhase& phase, const Parallelism& par,
                        Error& error) {
  const Quantization& q = phase.quant;
  if (!q.any()) return;
  if (phase.kind == PhaseKind::Training) {
    error("phase.quant",
          fmt::format("quantization ({}) applies to inference phases only", scheme_name(q)),
          "train in the model's type (--train-precision), or quantize a prefill or decode phase");
    return;
  }
  const auto no_wider = [&](std::string path, std::string_view what, DataType type) {
    if (bit_width(type) > bit_width(c.dtype))
      error(std::move(path),
            fmt::format("{} in {} would be wider than the model's type {}", what, to_string(type),
                        to_string(c.dtype)),
            "quantize a 16- or 32-bit model (--dtype bf16)");
  };
  if (q.weights && bit_width(*q.weights) >= bit_width(c.dtype))
    error("phase.quant.weights",
          fmt::format("weights quantized to {} would be no narrower than the model's type {}",
                      to_string(*q.weights), to_string(c.dtype)),
          "quantize a 16- or 32-bit model (--dtype bf16)");
  if (q.activations) no_wider("phase.quant.activations", "inputs", *q.activations);
  if (q.context_attention)
    no_wider("phase.quant.context_attention", "the prefill attention", *q.context_attention);
  if (q.activations && !q.weights)
    error("phase.quant.activations", "quantized inputs need quantized weights",
          "use a scheme: " + std::string(quantization_list()));
  if (q.kv_cache && !is_kv_cache_type(*q.kv_cache))
    error("phase.quant.kv_cache",
          fmt::format("coda does not model a KV cache in {}", to_string(*q.kv_cache)),
          fmt::format("one of: {}", kv_cache_type_list()));
  if (q.weights && q.group > 0 && par.tp > 0 && c.heads % par.tp == 0 && c.ffn % par.tp == 0) {
    // Each quantized GEMM's input dimension on a rank: QKV and the FFN's up and gate read the
    // hidden size, the output projection a rank's heads, the down projection its FFN share;
    // MLA's q_b and kv_b read the latents, and a decode step's absorbed key and value halves of
    // kv_b the nope dims and the latent.
    std::vector<std::pair<std::string_view, std::uint64_t>> inputs = {
        {"the hidden size", c.hidden},
        {"the output projection's input (heads x value head dim / tp)",
         c.heads / par.tp * c.value_dim()},
        {"the down projection's input (ffn / tp)", c.ffn / par.tp}};
    if (c.moe.experts > 0 && c.moe.first_dense_layers > 0 && c.dense_width() % par.tp == 0)
      inputs.emplace_back("the dense layers' down projection's input (dense_ffn / tp)",
                          c.dense_width() / par.tp);
    if (c.mla.enabled()) {
      if (c.mla.q_lora_rank > 0)
        inputs.emplace_back("q_b's input (q_lora_rank)", c.mla.q_lora_rank);
      inputs.emplace_back("kv_b's input (kv_lora_rank)", c.mla.kv_lora_rank);
      if (phase.kind == PhaseKind::Decode)
        inputs.emplace_back("the absorbed key projection's input (qk_nope_head_dim)",
                            c.mla.qk_nope_head_dim);
    }
    for (const auto& [what, k] : inputs)
      if (k % q.group != 0)
        error("phase.quant.group",
              fmt::format("a group of {} does not divide {}, {}", q.group, what, k),
              "groups split a GEMM's input dimension evenly (AWQ and GPTQ use 128 or 64): "
              "choose a divisor, e.g. w4a16:g64");
  }
}

// What the hf_transformers runtime's refusals suggest instead.
constexpr std::string_view kHfRuntimeHint =
    "leave the runtime at 'default' (coda's kernels), which prices every family and phase";

// The hf_transformers runtime's training rules: the step is GPT2LMHeadModel's under autocast
// (Trainer's bf16 or fp16 over fp32 parameters), so another architecture or precision is
// refused rather than priced as GPT-2.
template <typename Error>
void check_hf_training(const LlmConfig& c, const LlmPhase& phase, Error& error) {
  const std::string hint(kHfRuntimeHint);
  if (phase.precision != Precision::Autocast)
    error("phase.precision",
          fmt::format("hf_transformers trains under PyTorch autocast (Trainer's bf16 or fp16 "
                      "over fp32 parameters), not {} precision",
                      to_string(phase.precision)),
          "use --train-precision autocast");
  std::vector<std::string> differs;
  if (c.norm != NormType::LayerNorm) differs.emplace_back(to_string(c.norm));
  if (c.positions != PositionEncoding::Learned) differs.emplace_back("rotary positions");
  if (c.ffn_type != FfnType::GeluMlp) differs.emplace_back(std::string(to_string(c.ffn_type)));
  if (!c.tied_embeddings) differs.emplace_back("an untied LM head");
  if (c.moe.experts > 0) differs.emplace_back("experts");
  if (c.mla.enabled()) differs.emplace_back("multi-head latent attention");
  if (c.parallel_residual) differs.emplace_back("parallel attention and FFN");
  if (c.lm_head_bias) differs.emplace_back("an LM head bias");
  if (c.encoder || c.post_norm) differs.emplace_back("an encoder's post-norm layers");
  if (c.qk_norm) differs.emplace_back("QK norms");
  if (c.post_norms) differs.emplace_back("post norms");
  if (c.attention_softcap > 0 || c.final_softcap > 0) differs.emplace_back("soft-capping");
  if (c.sliding_window > 0) differs.emplace_back("a sliding window");
  if (c.kv_heads != c.heads) differs.emplace_back("grouped KV heads");
  if (!differs.empty())
    error("phase.runtime",
          fmt::format("hf_transformers training is modelled on GPT2LMHeadModel's code (LayerNorm, "
                      "learned positions, a GELU MLP, tied embeddings), but {} has {}",
                      c.name, fmt::join(differs, ", ")),
          hint);
  if (c.ffn_type == FfnType::GeluMlp && c.gelu == GeluForm::Unstated)
    error("model.hidden_act",
          fmt::format("{} does not say how its GELU is computed, which the eager runtime prices "
                      "(GPT-2's gelu_new is 9 kernels, gelu one)",
                      c.name),
          "state hidden_act: gelu_new, gelu or gelu_pytorch_tanh in the model (config.json's "
          "activation_function)");
}

// The hf_transformers runtime's rules (check_llm_build): inference is LlamaForCausalLM's
// decomposition, so a model whose Hugging Face class runs other code (LayerNorm, learned
// positions, a GELU MLP, biases, experts) is refused rather than priced as Llama; training is
// GPT2LMHeadModel's (check_hf_training); one GPU (data-parallel replicas of it in training).
template <typename Error>
void check_hf_runtime(const LlmConfig& c, const LlmPhase& phase, const Parallelism& par,
                      Error& error) {
  const std::string hint(kHfRuntimeHint);
  if (par.tp != 1 || par.pp != 1 || par.micro_batches != 1)
    error("phase.runtime",
          fmt::format("hf_transformers runs the model on one GPU, but tp {}, pp {} and {} "
                      "micro-batches were asked for",
                      par.tp, par.pp, par.micro_batches),
          hint);
  if (phase.quant.any())
    error("phase.runtime",
          "hf_transformers is modelled for the model's own type; quantized linear layers run "
          "other kernels (bitsandbytes, GPTQ, AWQ) that coda does not decompose",
          hint);
  if (phase.kind == PhaseKind::Training) {
    check_hf_training(c, phase, error);
    return;
  }
  // The context a token attends to: the prompt (prefill) or the cache plus the token.
  const std::uint64_t context = phase.kind == PhaseKind::Decode ? phase.seq_len + 1 : phase.seq_len;
  if (c.sliding_window > 0 && context > c.sliding_window)
    error("phase.seq_len",
          fmt::format("a context of {} tokens exceeds the model's sliding window of {}: "
                      "transformers' eager layers mask the window inside a full score matrix and "
                      "keep every token in their DynamicCache, which coda does not decompose",
                      context, c.sliding_window),
          fmt::format("use a context of at most {} tokens, or the default runtime (which prices "
                      "the window)",
                      c.sliding_window));
  std::vector<std::string> differs;
  if (c.norm != NormType::RmsNorm) differs.emplace_back(to_string(c.norm));
  if (c.positions != PositionEncoding::Rotary) differs.emplace_back("learned positions");
  if (c.ffn_type != FfnType::SwiGlu) differs.emplace_back(std::string(to_string(c.ffn_type)));
  if (c.qkv_bias || c.out_bias || c.mlp_bias) differs.emplace_back("biases");
  if (c.moe.experts > 0) differs.emplace_back("experts");
  if (c.mla.enabled()) differs.emplace_back("multi-head latent attention");
  if (c.parallel_residual) differs.emplace_back("parallel attention and FFN");
  if (c.rotary_dim > 0 && c.rotary_dim != c.head_dim) differs.emplace_back("partial rotary");
  if (c.lm_head_bias) differs.emplace_back("an LM head bias");
  if (c.encoder || c.post_norm) differs.emplace_back("an encoder's post-norm layers");
  if (c.qk_norm) differs.emplace_back("QK norms");
  if (c.post_norms) differs.emplace_back("post norms");
  if (c.attention_softcap > 0 || c.final_softcap > 0) differs.emplace_back("soft-capping");
  if (c.head_dim % 2 != 0) differs.emplace_back(fmt::format("an odd head_dim {}", c.head_dim));
  if (!differs.empty())
    error("phase.runtime",
          fmt::format("hf_transformers is modelled on LlamaForCausalLM's code (RMSNorm, rotary "
                      "positions, SwiGLU, no biases, dense), but {} has {}",
                      c.name, fmt::join(differs, ", ")),
          hint);
}

}  // namespace

std::string_view to_string(StepPart part) {
  switch (part) {
    case StepPart::Forward: return "forward";
    case StepPart::Backward: return "backward";
    case StepPart::Optimizer: return "optimizer";
    case StepPart::WeightCast:
      return "weight_cast";
  }
  return "?";
}

bool check_llm_build(const LlmConfig& c, const LlmPhase& phase, const Parallelism& par,
                     Diagnostics& diags) {
  const std::size_t errors_before = diags.error_count();
  const auto error = [&](std::string path, std::string message, std::string hint = {}) {
    diags.error({}, std::move(path), std::move(message), std::move(hint));
  };
  const auto at_least_one = [&](std::string path, std::uint64_t value) {
    if (value == 0) error(std::move(path), "must be at least 1");
    return value > 0;
  };
  bool sizes = at_least_one("phase.batch", phase.batch);
  sizes = at_least_one("phase.seq_len", phase.seq_len) && sizes;
  sizes = at_least_one("parallelism.tp", par.tp) && sizes;
  sizes = at_least_one("parallelism.pp", par.pp) && sizes;
  sizes = at_least_one("parallelism.dp", par.dp) && sizes;
  sizes = at_least_one("parallelism.micro_batches", par.micro_batches) && sizes;
  if (c.hidden == 0 || c.layers == 0 || c.heads == 0 || c.kv_heads == 0 || c.head_dim == 0 ||
      c.ffn == 0 || c.vocab == 0 || c.heads % c.kv_heads != 0) {
    error("model", "the model config is not valid", "read it with read_llm_config or parse_hf_config");
    return false;
  }
  if (!sizes) return false;
  if (phase.batch > kMaxLlmSize || phase.seq_len > kMaxLlmSize ||
      static_cast<double>(phase.batch) * static_cast<double>(phase.seq_len) >
          static_cast<double>(kMaxLlmSize))
    error("phase", fmt::format("batch {} x seq_len {} is out of range (at most {} tokens)",
                               phase.batch, phase.seq_len, kMaxLlmSize));
  // Attention MACs must fit in 64 bits: batch x heads x q x kv x head_dim, with margin.
  const double kv = static_cast<double>(phase.seq_len) + 1.0;
  const double q = phase.kind == PhaseKind::Decode ? 1.0 : static_cast<double>(phase.seq_len);
  if (static_cast<double>(phase.batch) * static_cast<double>(c.heads) * q * kv *
          static_cast<double>(c.head_dim) >
      1e18)
    error("phase.seq_len", fmt::format("{} tokens make the attention too large to count",
                                       phase.seq_len));
  if (par.tp > 0) {
    if (c.heads % par.tp != 0)
      error("parallelism.tp", fmt::format("tp {} does not divide the {} heads", par.tp, c.heads),
            "tensor parallelism splits the attention heads evenly over the ranks");
    if (c.kv_heads % par.tp != 0)
      error("parallelism.tp",
            fmt::format("tp {} does not divide the {} kv_heads", par.tp, c.kv_heads),
            "each rank must hold whole KV heads (KV-head replication is not modeled)");
    if (c.ffn % par.tp != 0)
      error("parallelism.tp",
            fmt::format("tp {} does not divide the FFN size {}", par.tp, c.ffn),
            "tensor parallelism splits the FFN columns evenly over the ranks");
    if (c.moe.shared_experts > 0 && c.moe.shared_width(c.ffn) % par.tp != 0)
      error("parallelism.tp",
            fmt::format("tp {} does not divide the shared experts' FFN size {}", par.tp,
                        c.moe.shared_width(c.ffn)),
            "tensor parallelism splits the FFN columns evenly over the ranks");
    if (c.moe.experts > 0 && c.moe.first_dense_layers > 0 && c.dense_width() % par.tp != 0)
      error("parallelism.tp",
            fmt::format("tp {} does not divide the dense layers' FFN size {}", par.tp,
                        c.dense_width()),
            "tensor parallelism splits the FFN columns evenly over the ranks");
  }
  if (c.encoder && phase.kind != PhaseKind::Prefill)
    error("phase.kind",
          fmt::format("{} is an encoder: it encodes a batch of inputs at once (a prefill), with "
                      "no {}",
                      c.name,
                      phase.kind == PhaseKind::Decode ? "KV cache to decode from"
                                                      : "pretraining step modelled (its masked-LM "
                                                        "head and loss)"),
          "price phase prefill (coda run --phase prefill --seq N)");
  if (c.encoder && (c.moe.experts > 0 || c.mla.enabled() || !c.post_norm))
    error("model",
          "an encoder is modelled as BERT and RoBERTa are: post-norm layers, dense, no MLA",
          "set post_norm: true, and drop moe and mla");
  if (c.mla.enabled() &&
      (c.qkv_bias || c.qk_norm || c.sliding_window > 0 || c.attention_softcap > 0 ||
       c.positions != PositionEncoding::Rotary || c.norm != NormType::RmsNorm))
    error("model",
          "multi-head latent attention is modelled as DeepSeek-V2/V3 run it: RMSNorm, rotary "
          "keys, no QKV bias, QK norm, sliding window or soft cap",
          "drop those settings from the model");
  const std::uint64_t counted =
      c.layers + (par.pipeline_counts_embedding ? 1 : 0) + (par.pipeline_counts_loss ? 1 : 0);
  const bool split_ok = par.pp > 0 && counted % par.pp == 0;
  if (!split_ok && counted == c.layers)
    error("parallelism.pp", fmt::format("pp {} does not divide the {} layers", par.pp, c.layers),
          "each pipeline stage holds the same number of layers (or count the embedding and the "
          "loss as layers: Megatron-LM's --account-for-*-in-pipeline-split)");
  else if (!split_ok)
    error("parallelism.pp",
          fmt::format("pp {} does not divide the {} layers and the {} the split counts", par.pp,
                      c.layers,
                      counted - c.layers == 2         ? "embedding and loss"
                      : par.pipeline_counts_embedding ? "embedding"
                                                      : "loss"),
          "each pipeline stage holds the same number of layers, the embedding and the loss "
          "counted as one each");
  else if (par.pp > 1 &&
           counted / par.pp < 1 + std::max<std::uint64_t>(par.pipeline_counts_embedding ? 1 : 0,
                                                          par.pipeline_counts_loss ? 1 : 0))
    error("parallelism.pp",
          fmt::format("pp {} leaves the first or last stage of {} layers no layer of its own",
                      par.pp, c.layers),
          "use fewer stages");
  if (par.stage >= par.pp)
    error("parallelism.stage", fmt::format("stage {} is not below pp {}", par.stage, par.pp),
          "stages are numbered 0 .. pp-1");
  if (phase.batch % par.micro_batches != 0)
    error("parallelism.micro_batches",
          fmt::format("{} micro-batches do not divide the batch of {}", par.micro_batches,
                      phase.batch),
          "each micro-batch holds batch / micro_batches sequences");
  if (phase.recompute && phase.kind != PhaseKind::Training)
    error("phase.recompute", "recomputation applies to training steps only");
  if (phase.recompute_layers > 0 && !phase.recompute)
    error("phase.recompute_layers", "a number of recomputed layers needs recomputation on",
          "turn recomputation on, or leave the number at 0");
  if (phase.recompute_layers > 0 && split_ok && par.stage < par.pp &&
      phase.recompute_layers > stage_layers(c, par).count)
    error("phase.recompute_layers",
          fmt::format("{} recomputed layers, but the stage holds {}", phase.recompute_layers,
                      stage_layers(c, par).count),
          "at most the stage's layers (0: all of them)");
  if (phase.precision != Precision::Mixed && phase.kind != PhaseKind::Training)
    error("phase.precision",
          fmt::format("precision '{}' applies to training steps only", to_string(phase.precision)),
          "inference runs in the model's type: leave the precision at 'mixed'");
  if (phase.precision == Precision::Autocast && bit_width(c.dtype) >= bit_width(DataType::Fp32))
    error("phase.precision",
          fmt::format("autocast computes in a type narrower than its fp32 parameters, but the "
                      "model's type is {}",
                      to_string(c.dtype)),
          "give the model a bf16 or fp16 dtype (--dtype bf16), or use precision 'pure'");
  if (phase.precision == Precision::Fp8 && c.dtype != DataType::Bf16 && c.dtype != DataType::Fp16)
    error("phase.precision",
          fmt::format("fp8 runs the linear layers' GEMMs in FP8 over a bf16 or fp16 model (as "
                      "Transformer Engine does), but the model's type is {}",
                      to_string(c.dtype)),
          "give the model a bf16 or fp16 dtype (--dtype bf16)");
  check_quantization(c, phase, par, error);
  if (phase.runtime == Runtime::HfTransformers) check_hf_runtime(c, phase, par, error);
  if (par.cp == 0) error("parallelism.cp", "cp must be at least 1");
  if (par.cp > 1) {
    if (phase.kind != PhaseKind::Training)
      error("parallelism.cp", "context parallelism is modelled for training steps only");
    else if (phase.seq_len % (2 * par.cp) != 0)
      error("parallelism.cp",
            fmt::format("cp {} does not split the sequence of {} into 2 x cp equal chunks", par.cp,
                        phase.seq_len),
            "Megatron-LM balances the causal work with 2 x cp chunks a sequence: use a sequence "
            "that 2 x cp divides");
    if (c.encoder || phase.runtime == Runtime::HfTransformers)
      error("parallelism.cp",
            "context parallelism is modelled for causal attention (not encoders or the "
            "hf_transformers runtime)");
    if (c.sliding_window > 0 && c.sliding_window < phase.seq_len)
      error("parallelism.cp",
            fmt::format("context parallelism with a sliding window of {} is not modelled",
                        c.sliding_window));
  }
  if (par.ep == 0) error("parallelism.ep", "ep must be at least 1");
  if (par.ep > 1) {
    if (phase.kind != PhaseKind::Training)
      error("parallelism.ep", "expert parallelism is modelled for training steps only");
    else if (c.moe.experts == 0)
      error(
          "parallelism.ep",
          fmt::format("expert parallelism shards a mixture of experts, but '{}' is dense", c.name),
          "use ep 1");
    else if (c.moe.experts % par.ep != 0)
      error("parallelism.ep",
            fmt::format("ep {} does not divide the {} experts", par.ep, c.moe.experts),
            "each rank holds experts / ep of them");
    if (par.tp > 1 && !par.sequence_parallel)
      error("parallelism.ep",
            fmt::format("expert parallelism with tp {} needs sequence parallelism (Megatron-Core's "
                        "requirement: the experts take each rank's share of the tokens)",
                        par.tp),
            "turn sequence parallelism on, or use tp 1");
    else if (par.tp > 1 && (c.moe.shared_experts > 0 || c.shared_norm || c.parallel_residual))
      error("parallelism.ep",
            fmt::format("expert parallelism with tp {} (MoE parallel folding) is modelled for "
                        "routed experts after their own norm: not with shared experts or a "
                        "parallel residual",
                        par.tp),
            "use tp 1 with ep > 1");
  }
  if (par.sequence_parallel && phase.kind != PhaseKind::Training)
    error("parallelism.sequence_parallel", "sequence parallelism is modelled for training steps only");
  if (par.sequence_parallel && par.tp > 1 && par.micro_batches > 0 &&
      phase.batch % par.micro_batches == 0 && par.cp > 0 &&
      (phase.batch / par.micro_batches * (phase.seq_len / par.cp)) % par.tp != 0)
    error("parallelism.sequence_parallel",
          fmt::format("a micro-batch's {} tokens on a rank do not split evenly over tp {}",
                      phase.batch / par.micro_batches * (phase.seq_len / par.cp), par.tp),
          "sequence parallelism gives each TP rank 1/tp of the tokens");
  if (phase.kind != PhaseKind::Training && par.dp > 1)
    diags.warning({}, "parallelism.dp",
                  "data parallelism adds no communication to inference: each replica serves its "
                  "own requests");
  const std::uint64_t positions =
      phase.kind == PhaseKind::Decode ? phase.seq_len + 1 : phase.seq_len;
  if (positions > c.max_positions) {
    const std::string message =
        fmt::format("{} positions exceed the model's max_positions {}", positions, c.max_positions);
    if (c.positions == PositionEncoding::Learned)
      error("phase.seq_len", message, "a learned position table has max_positions rows");
    else
      diags.warning({}, "phase.seq_len", message, "rotary positions extrapolate, but the model was not trained this long");
  }
  return diags.error_count() == errors_before;
}

StageLayers stage_layers(const LlmConfig& c, const Parallelism& par) {
  const std::uint64_t embedding = par.pipeline_counts_embedding ? 1 : 0;
  const std::uint64_t loss = par.pipeline_counts_loss ? 1 : 0;
  CODA_CHECK(par.pp >= 1 && par.stage < par.pp && (c.layers + embedding + loss) % par.pp == 0);
  const std::uint64_t per = (c.layers + embedding + loss) / par.pp;
  StageLayers out;
  out.first = par.stage == 0 ? 0 : par.stage * per - embedding;
  out.count = per - (par.stage == 0 ? embedding : 0) - (par.stage + 1 == par.pp ? loss : 0);
  CODA_CHECK(out.count >= 1 && out.first + out.count <= c.layers);
  return out;
}

Graph build_llm(const LlmConfig& config, const LlmPhase& phase, const Parallelism& parallelism) {
  Diagnostics diags;
  CODA_CHECK(check_llm_build(config, phase, parallelism, diags));
  return Builder(config, phase, parallelism).build();
}

std::optional<Graph> try_build_llm(const LlmConfig& config, const LlmPhase& phase,
                                   const Parallelism& parallelism, Diagnostics& diags) {
  if (!check_llm_build(config, phase, parallelism, diags)) return std::nullopt;
  return Builder(config, phase, parallelism).build();
}

std::optional<LlmBuild> try_build_llm_parts(const LlmConfig& config, const LlmPhase& phase,
                                            const Parallelism& parallelism, Diagnostics& diags) {
  if (!check_llm_build(config, phase, parallelism, diags)) return std::nullopt;
  Builder builder(config, phase, parallelism);
  LlmBuild built;
  built.graph = builder.build();
  built.spans = builder.take_spans();
  built.expert_weights = builder.take_expert_weights();
  return built;
}

Bytes kv_cache_bytes_per_token(const LlmConfig& config, const Quantization& quant) {
  LlmConfig cache = config;
  cache.dtype = quant.kv_cache.value_or(config.dtype);
  return llm_headline(cache, 0).kv_cache_bytes_per_token;
}

Bytes kv_cache_bytes_per_token_per_rank(const LlmConfig& config, const Quantization& quant,
                                        std::uint64_t tp) {
  CODA_CHECK(tp >= 1);
  return Bytes{kv_cache_bytes_per_token(config, quant).value / config.kv_cache_split(tp)};
}

LlmStepStats llm_step_stats(const LlmConfig& c, const LlmPhase& phase, const Parallelism& par) {
  CODA_CHECK(par.pp >= 1 && par.tp >= 1 && par.micro_batches >= 1);
  LlmStepStats s;
  s.tokens = phase.batch * (phase.kind == PhaseKind::Decode ? 1 : phase.seq_len);
  s.micro_batch_size = phase.batch / par.micro_batches;
  const StageLayers mine = stage_layers(c, par);
  s.stage_layers = mine.count;
  s.first_layer = mine.first;
  s.pipeline_bubble_fraction = static_cast<double>(par.pp - 1) /
                               static_cast<double>(par.micro_batches + par.pp - 1);
  const std::uint64_t cached = phase.kind == PhaseKind::Prefill  ? phase.seq_len
                               : phase.kind == PhaseKind::Decode ? phase.seq_len + 1
                                                                 : 0;
  const Bytes per_token = kv_cache_bytes_per_token(c, phase.quant);
  s.kv_cache_bytes = Bytes{per_token.value * phase.batch * cached};
  s.kv_cache_bytes_per_rank = Bytes{s.kv_cache_bytes.value / par.pp / c.kv_cache_split(par.tp)};
  return s;
}

}  // namespace coda::workload::llm
