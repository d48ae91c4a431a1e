#include "validation/published_pricing.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/check.h"
#include "sim/analytical/cluster_collective.h"
#include "sim/analytical/collective_model.h"
#include "sim/analytical/gpu_model.h"
#include "sim/analytical/unit_costs.h"
#include "sim/training_step.h"
#include "validation/compare.h"
#include "workloads/builders.h"
#include "workloads/cnn/cnn_zoo.h"
#include "workloads/llm/llm_builder.h"
#include "workloads/llm/llm_config.h"

namespace coda::validation {
namespace {

namespace an = sim::analytical;
using workload::Function;

// The largest thread-block cluster QuACK's row kernels spread a row over (the cluster class).
constexpr std::uint32_t kQuackMaxCluster = 16;

std::uint32_t bytes_of(DataType t) { return static_cast<std::uint32_t>((bit_width(t) + 7) / 8); }

PredictedBound bound_of(results::Bound b) {
  switch (b) {
    case results::Bound::Compute: return PredictedBound::Compute;
    case results::Bound::Memory: return PredictedBound::Memory;
    case results::Bound::Latency: return PredictedBound::Launch;
  }
  return PredictedBound::Compute;
}

Prediction single(std::string name, std::string unit, double seconds, double compute_seconds,
                  double dram_bytes, PredictedBound bound, std::string model,
                  std::vector<std::pair<std::string, std::uint64_t>> mapping = {}) {
  Prediction p;
  p.seconds = seconds;
  p.bound = bound;
  p.model = std::move(model);
  p.parts.push_back({.name = std::move(name), .unit = std::move(unit), .seconds = seconds,
                     .compute_seconds = compute_seconds, .dram_bytes = dram_bytes,
                     .bound = bound, .mapping = std::move(mapping)});
  return p;
}

bool has_path(const arch::HardwareModel& hw, arch::TensorPath path) {
  const arch::ComputeUnitSpec* unit = hw.matrix_unit();
  if (unit == nullptr || !unit->tensor_core) return false;
  const auto& paths = unit->tensor_core->paths;
  return std::find(paths.begin(), paths.end(), path) != paths.end();
}

// ---- gemm ------------------------------------------------------------------------------------

std::optional<Prediction> gemm(const Measurement& m, const arch::HardwareModel& hw,
                               const arch::HardwareModel* cuda_cores, std::string& why) {
  const Shape& s = m.shape;
  const DataType type = data_type_of(m.dtype);
  const bool fp32 = m.dtype == DType::Fp32;
  const arch::HardwareModel* on = fp32 ? cuda_cores : &hw;
  if (on == nullptr || !on->has_tensor_cores()) {
    why = fmt::format("'{}' has no tensor cores{}", hw.name(),
                      fp32 ? " and CUDA cores to run an fp32 GEMM on" : "");
    return std::nullopt;
  }
  const DataType runs = fp32 ? DataType::Fp32 : type;
  if (!on->matrix_unit()->rates.contains(runs)) {
    why = fmt::format("the tensor cores of '{}' do not run {}", hw.name(), to_string(runs));
    return std::nullopt;
  }
  arch::TensorPath path = on->gemm_path();
  if (m.impl == Impl::Wgmma) path = arch::TensorPath::Wgmma;
  if (m.impl == Impl::MmaSync) path = arch::TensorPath::MmaSync;
  if (fp32) path = arch::TensorPath::MmaSync;  // the CUDA-core view has one path
  if (!has_path(*on, path)) {
    why = fmt::format("the tensor cores of '{}' have no {} path", hw.name(), arch::to_string(path));
    return std::nullopt;
  }
  // C in the input type, but fp8 GEMMs write bf16 (cuBLASLt, DeepGEMM) and int8 ones int32.
  const std::uint32_t in = bytes_of(type);
  const std::uint32_t out = m.dtype == DType::Fp8E4M3 ? 2 : m.dtype == DType::Int8 ? 4 : in;
  const an::GemmShape shape{s.batch, s.m, s.n, s.k, in, out};
  const an::GpuTileChoice choice = an::choose_gpu_tile(shape, an::gpu_params(runs, *on, path));
  if (!choice.cost.feasible) {
    why = fmt::format("no thread-block tile fits an SM of '{}' (limited by {})", hw.name(),
                      an::to_string(choice.cost.limit));
    return std::nullopt;
  }
  const an::GpuKernelCost& c = choice.cost;
  const an::BlockTile& t = choice.tile;
  const PredictedBound bound = c.bound == an::GpuBound::Compute  ? PredictedBound::Compute
                               : c.bound == an::GpuBound::Launch ? PredictedBound::Launch
                                                                 : PredictedBound::Memory;
  return single("gemm", "tensor_core", c.seconds, c.compute_seconds, c.dram_bytes, bound,
                fmt::format("GPU GEMM model, best of its tile list ({}x{}x{}, {} warps, {} "
                            "stages), {} path{}",
                            t.tile_m, t.tile_n, t.tile_k, t.warps, t.stages,
                            arch::to_string(path),
                            fp32 ? ", on the CUDA cores (fp32 FMA rate)" : ""),
                {{"tile_m", t.tile_m}, {"tile_n", t.tile_n}, {"tile_k", t.tile_k},
                 {"warps", t.warps}, {"stages", t.stages}, {"blocks", c.blocks},
                 {"blocks_per_sm", c.blocks_per_sm}, {"waves", c.waves}});
}

// ---- attention -------------------------------------------------------------------------------

std::optional<Prediction> unfused_attention(const Measurement& m, const arch::HardwareModel& hw,
                                            std::string& why) {
  const Shape& s = m.shape;
  if (m.kernel == Kernel::AttentionBwd) {
    why = "an unfused attention backward is not modelled (only FlashAttention's fused backward)";
    return std::nullopt;
  }
  workload::Graph g{"attention", "", {}, {}, {}};
  g.add(workload::make_attention("attention",
                                 {.batch = s.batch, .heads = s.heads, .kv_heads = s.kv_heads,
                                  .q_len = s.seq, .kv_len = s.seq, .head_dim = s.head_dim,
                                  .causal = s.causal != 0},
                                 data_type_of(m.dtype)));
  return price_graph(g, mapper::FusionMode::None,
                     "coda's attention as three kernels (Q K^T, softmax, P V), S and P through "
                     "DRAM",
                     hw, false, why);
}

// `hw` with the one calibration choice a row names (its attention class, decode-attention class
// or norm kernel) set by `set`, or nullopt when the row names none and prices on `hw` itself.
template <class Set>
std::optional<arch::HardwareModel> recalibrated(const arch::HardwareModel& hw, bool named,
                                                Set set) {
  if (!named) return std::nullopt;
  arch::ArchSpec with = hw.spec();
  set(with.calibration);
  return arch::HardwareModel(with);
}

// `hw` with the decode-attention class an attention_decode or llm row names (impl grouped,
// per_head or fa2_forward), or nullopt when it names none.
std::optional<arch::HardwareModel> with_named_decode_attention(const arch::HardwareModel& hw,
                                                               Impl impl) {
  std::optional<arch::DecodeAttention> named;
  if (impl == Impl::Grouped) named = arch::DecodeAttention::Grouped;
  if (impl == Impl::PerHead) named = arch::DecodeAttention::PerHead;
  if (impl == Impl::Fa2Forward) named = arch::DecodeAttention::Fa2Forward;
  return recalibrated(hw, named.has_value(),
                      [&](arch::CalibrationSpec& c) { c.decode_attention = named; });
}

std::optional<Prediction> fused_attention(const Measurement& m, const arch::HardwareModel& arch_hw,
                                          std::string& why) {
  // A decode row that names its class prices on the arch with that class.
  const auto named = with_named_decode_attention(arch_hw, m.impl);
  const arch::HardwareModel& hw = named ? *named : arch_hw;
  const Shape& s = m.shape;
  const DataType type = data_type_of(m.dtype);
  if (!hw.has_tensor_cores() || hw.vector_unit() == nullptr) {
    why = fmt::format("'{}' has no tensor cores and vector unit to run FlashAttention on",
                      hw.name());
    return std::nullopt;
  }
  arch::AttentionImpl impl = hw.attention_impl();
  if (m.impl == Impl::Fa2) impl = arch::AttentionImpl::Fa2;
  if (m.impl == Impl::Fa3) impl = arch::AttentionImpl::Fa3;
  if (m.impl == Impl::Triton) impl = arch::AttentionImpl::Triton;
  if (impl == arch::AttentionImpl::Fa3 && !has_path(hw, arch::TensorPath::Wgmma)) {
    why = fmt::format("FlashAttention-3's kind needs wgmma, which the tensor cores of '{}' lack",
                      hw.name());
    return std::nullopt;
  }
  const bool decode = m.kernel == Kernel::AttentionDecode;
  const bool backward = m.kernel == Kernel::AttentionBwd;
  const std::uint64_t q = decode ? 1 : s.seq;
  const std::uint64_t kv = s.seq;
  // Kept pairs, as workload::mac_count counts them: q kv, or q kv - q (q - 1) / 2 with the
  // causal mask (q = kv here).
  const std::uint64_t per_head = s.causal != 0 ? q * kv - q * (q - 1) / 2 : q * kv;
  const double e = bytes_of(type);
  const double bh = static_cast<double>(s.batch * s.heads);
  const double bkv = static_cast<double>(s.batch * s.kv_heads);
  const double d = static_cast<double>(s.head_dim);
  const double q_bytes = bh * static_cast<double>(q) * d * e;    // Q, O, dO, dQ
  const double kv_bytes = bkv * static_cast<double>(kv) * d * e;  // K, V, dK, dV
  // DRAM: forward reads Q, K, V and writes O; backward reads Q, K, V, O, dO (and the row
  // statistics, b h q fp32) and writes dQ, dK, dV.
  const double stats = backward ? bh * static_cast<double>(q) * 4.0 : 0.0;
  an::AttentionShape shape{
      .batch = s.batch,
      .heads = s.heads,
      .kv_heads = s.kv_heads,
      .q_len = q,
      .kv_len = kv,
      .head_dim = s.head_dim,
      .pairs = s.batch * s.heads * per_head,
      .block = 128,
      .precision = type,
      .softmax_precision = DataType::Fp32,
      .reads = backward ? 3 * q_bytes + 2 * kv_bytes + stats : q_bytes + 2 * kv_bytes,
      .writes = backward ? q_bytes + 2 * kv_bytes : q_bytes,
      .backward = backward};
  // A decode whose values are the keys' first value_dim columns (MLA's absorbed form over its
  // latent cache, FlashMLA's): P V over value_dim, the cache read once, O value_dim wide.
  if (const std::uint64_t values = value_dim_of(s); decode && values < s.head_dim) {
    shape.value_dim = values;
    shape.reads = q_bytes + kv_bytes;
    shape.writes = bh * static_cast<double>(values) * e;
  }
  const an::FusedAttentionCost c = an::fused_attention_cost(shape, impl, hw, true, std::nullopt, why);
  if (!why.empty()) return std::nullopt;
  return single(
      std::string(info(m.kernel).name), "attention", c.seconds, c.compute_seconds, c.dram_bytes,
      bound_of(c.bound),
      fmt::format("fused attention, {} class{}: matrix {:.4g} us, softmax {:.4g} us, "
                  "DRAM {:.4g} us, fixed {:.4g} us{}",
                  c.fa2_forward ? fmt::format("fa2_forward decode ({} split{})", c.splits,
                                              c.splits == 1 ? "" : "s")
                  : c.per_head  ? std::string("per_head decode")
                                : std::string(arch::to_string(impl)),
                  backward ? ", backward" : "", c.matrix_seconds * 1e6, c.vector_seconds * 1e6,
                  c.dram_seconds * 1e6, c.fixed_seconds * 1e6,
                  c.helper_seconds > 0 ? fmt::format(", the dO.O and dQ helper kernels {:.4g} us",
                                                     c.helper_seconds * 1e6)
                                       : std::string()));
}

// An attention_fwd or attention_bwd row: by its implementation class, unfused or fused.
std::optional<Prediction> attention_pass(const Measurement& m, const arch::HardwareModel& hw,
                                         std::string& why) {
  return m.impl == Impl::Unfused ? unfused_attention(m, hw, why) : fused_attention(m, hw, why);
}

// A forward and its backward as one row: the two priced apart and summed, as the published
// figures time them (flash-attention's benchmark_fwd_bwd: the forward's mean + the backward's),
// each with its own fixed cost.
std::optional<Prediction> attention_fwd_bwd(const Measurement& m, const arch::HardwareModel& hw,
                                            std::string& why) {
  Prediction out;
  double longest = -1;
  for (const Kernel kernel : {Kernel::AttentionFwd, Kernel::AttentionBwd}) {
    Measurement pass = m;
    pass.kernel = kernel;
    const std::optional<Prediction> p = attention_pass(pass, hw, why);
    if (!p) return std::nullopt;
    out.seconds += p->seconds;
    out.parts.insert(out.parts.end(), p->parts.begin(), p->parts.end());
    out.model += fmt::format("{}{}: {}", out.model.empty() ? "" : " + ", info(kernel).name,
                             p->model);
    if (p->seconds > longest) {
      longest = p->seconds;
      out.bound = p->bound;
    }
  }
  return out;
}

// ---- row kernels and copies --------------------------------------------------------------------

std::optional<Prediction> row_kernel(const Measurement& m, const arch::HardwareModel& arch_hw,
                                     std::string& why) {
  const Shape& s = m.shape;
  // A norm row that names PyTorch's native kernel prices on the arch with that kernel; a row of
  // the cluster class with a row spread over QuACK's largest cluster, 16 SMs (quack/rmsnorm.py
  // and softmax.py: cluster_n 1, 2, 4, 8, 16 for 16-bit rows up to 16K, 32K, 64K, 128K and past).
  if (m.impl == Impl::Cluster && !has_path(arch_hw, arch::TensorPath::Wgmma)) {
    why = fmt::format(
        "the cluster class spreads a row over a thread-block cluster, which '{}' "
        "lacks (no wgmma generation tensor cores)",
        arch_hw.name());
    return std::nullopt;
  }
  const auto named = recalibrated(arch_hw, m.impl == Impl::Torch || m.impl == Impl::Cluster,
                                  [&](arch::CalibrationSpec& c) {
                                    if (m.impl == Impl::Torch)
                                      c.norm_kernel = arch::NormImpl::Torch;
                                    if (m.impl == Impl::Cluster) c.row_cluster = kQuackMaxCluster;
                                  });
  const arch::HardwareModel& hw = named ? *named : arch_hw;
  const DataType type = data_type_of(m.dtype);
  workload::Graph g{std::string(info(m.kernel).name), "", {}, {}, {}};
  std::string what;
  switch (m.kernel) {
    case Kernel::Softmax:
    case Kernel::PublishedLayerNorm:
    case Kernel::PublishedRmsNorm: {
      const Function f = m.kernel == Kernel::Softmax            ? Function::Softmax
                         : m.kernel == Kernel::PublishedLayerNorm ? Function::LayerNorm
                                                                  : Function::RmsNorm;
      g.add(workload::make_normalization(std::string(workload::to_string(f)), f,
                                         {s.rows, s.cols}, {1}, type));
      what = fmt::format("coda's {} op over the last axis", workload::to_string(f));
      break;
    }
    case Kernel::Gelu:
    case Kernel::Silu: {
      const Function f = m.kernel == Kernel::Gelu ? Function::Gelu : Function::Silu;
      g.add(workload::make_elementwise(std::string(workload::to_string(f)), f, {s.elements}, type));
      what = fmt::format("coda's {} op", workload::to_string(f));
      break;
    }
    case Kernel::Copy:
      g.add(workload::make_data_movement("copy", Function::Copy, {{s.bytes}}, {{s.bytes}},
                                         DataType::Int8));
      what = "one copy through DRAM";
      break;
    default: CODA_CHECK(false);
  }
  return price_graph(g, mapper::FusionMode::None, what, hw, false, why);
}

// ---- collectives -------------------------------------------------------------------------------

std::optional<Prediction> collective(const Measurement& m, const arch::HardwareModel& hw,
                                     std::string& why) {
  const Shape& s = m.shape;
  const auto& ic = hw.spec().interconnect;
  if (!ic) {
    why = fmt::format("'{}' has no chip-to-chip links (interconnect:)", hw.name());
    return std::nullopt;
  }
  if (s.ranks > ic->chips) {
    why = fmt::format("{} ranks, but the interconnect of '{}' joins {} chips", s.ranks,
                      hw.name(), ic->chips);
    return std::nullopt;
  }
  const an::CollectiveKind kind = m.kernel == Kernel::AllGather       ? an::CollectiveKind::AllGather
                                  : m.kernel == Kernel::ReduceScatter ? an::CollectiveKind::ReduceScatter
                                                                      : an::CollectiveKind::AllReduce;
  std::optional<an::CollectiveAlgorithm> algorithm;
  if (m.impl == Impl::Ring) algorithm = an::CollectiveAlgorithm::Ring;
  if (m.impl == Impl::Tree) algorithm = an::CollectiveAlgorithm::Tree;
  if (m.impl == Impl::Nvls) {
    if (!ic->nccl || !ic->nccl->contains(arch::NcclAlgorithm::Nvls)) {
      why = fmt::format("'{}' states no NVLS (NVLink SHARP) pair in interconnect.nccl", hw.name());
      return std::nullopt;
    }
    algorithm = an::CollectiveAlgorithm::Nvls;
  }
  const std::optional<an::PricedCollective> priced =
      an::price_collective(kind, s.bytes, static_cast<std::uint32_t>(s.ranks), algorithm, hw);
  if (!priced) {
    why = fmt::format("'{}' states no {} pair for {} in interconnect.nccl", hw.name(),
                      an::to_string(*algorithm), an::to_string(kind));
    return std::nullopt;
  }
  const an::PricedCollective& c = *priced;
  const double fixed = hw.kernel_fixed_seconds(arch::KernelKind::Collective);
  const double seconds = fixed + c.cost.seconds;
  const double bandwidth_s = c.cost.bytes_sent_per_rank / hw.achievable_link_bytes_per_second();
  const PredictedBound bound = fixed >= c.cost.seconds         ? PredictedBound::Launch
                               : bandwidth_s >= c.cost.seconds / 2 ? PredictedBound::Memory
                                                                  : PredictedBound::Launch;
  return single(std::string(info(m.kernel).name), "collective", seconds, 0,
                0, bound,
                fmt::format("{} {}{} over {} ranks ({} steps) + the collective kernel's "
                            "fixed cost {:.4g} us",
                            c.protocol ? "NCCL tuner" : "alpha-beta", an::to_string(c.algorithm),
                            c.protocol ? fmt::format("/{}", an::to_string(*c.protocol)) : "",
                            s.ranks, c.cost.steps, fixed * 1e6),
                {{"ranks", s.ranks}, {"steps", c.cost.steps}});
}

// ---- whole models ------------------------------------------------------------------------------

// How a published whole-model row ran: fused as the arch's vendor compiler fuses
// (calibration.fusion), else as every vendor inference stack does at least (epilogue: conv +
// bias + activation, a GEMM with its bias and activation, attention as one kernel).
mapper::FusionMode whole_model_fusion(const arch::HardwareModel& hw) {
  return hw.spec().calibration.fusion.value_or(mapper::FusionMode::Epilogue);
}

// A graph's schedule (cached by `key` when the pricing has a cache), priced on `hw`.
template <class Build>
std::optional<Prediction> price_cached(const std::string& key, Build build,
                                       mapper::FusionMode fusion, const std::string& what,
                                       const arch::HardwareModel& hw,
                                       const PublishedPricing& pricing, std::string& why,
                                       bool eager, bool by_unit = true) {
  const auto make = [&]() -> std::optional<mapper::Schedule> {
    const std::optional<workload::Graph> graph = build();
    if (!graph) return std::nullopt;
    return mapper::schedule_graph(*graph, hw, {.precision = std::nullopt, .fusion = fusion,
                                               .search = std::nullopt});
  };
  std::shared_ptr<const mapper::Schedule> schedule;
  if (pricing.cache != nullptr) {
    schedule = pricing.cache->get(fmt::format("{}|{}", hw.name(), key), make);
  } else if (auto made = make()) {
    schedule = std::make_shared<const mapper::Schedule>(std::move(*made));
  }
  if (!schedule) {
    if (why.empty()) why = "the workload could not be built";
    return std::nullopt;
  }
  return price_schedule(*schedule, fusion, what, hw, by_unit, why, eager);
}

// What ran a row's model: coda's kernels or Hugging Face transformers (RowRuntime).
workload::llm::Runtime llm_runtime(const Measurement& m) {
  return m.runtime == RowRuntime::HfTransformers ? workload::llm::Runtime::HfTransformers
                                                 : workload::llm::Runtime::Default;
}

// A step of `config` as the row's software ran it: coda's kernels fused as whole-model rows are
// (whole_model_fusion), or Hugging Face transformers' eager ops, which PyTorch launches one by
// one and fuses nothing (FusionMode::None; its SDPA attention is one kernel, which
// FusionMode::Eager would price, but these rows' kernel is not known: docs/llm.md).
std::optional<Prediction> llm_step(const workload::llm::LlmConfig& config,
                                   const workload::llm::Quantization& quant,
                                   workload::llm::Runtime runtime, workload::llm::PhaseKind phase,
                                   std::uint64_t batch, std::uint64_t seq, std::uint64_t tp,
                                   bool eager, const arch::HardwareModel& hw,
                                   const PublishedPricing& pricing, std::string& why) {
  const workload::llm::LlmPhase step{
      .kind = phase, .batch = batch, .seq_len = seq, .quant = quant, .runtime = runtime};
  const auto build = [&]() -> std::optional<workload::Graph> {
    Diagnostics diags;
    auto graph = workload::llm::try_build_llm(config, step, {.tp = tp}, diags);
    if (!graph)
      why = diags.all().empty() ? std::string("the LLM builder refused the step")
                                : diags.all().front().message;
    return graph;
  };
  const std::string quantized = workload::llm::describe(quant);
  const bool hf = runtime == workload::llm::Runtime::HfTransformers;
  const std::string what = fmt::format("{} {} of {}{}, batch {}, {} tokens, TP {}{}", config.name,
                                       workload::llm::to_string(phase), to_string(config.dtype),
                                       quantized.empty() ? "" : " " + quantized, batch, seq, tp,
                                       hf ? ", as Hugging Face transformers' eager ops" : "");
  return price_cached(what, build, hf ? mapper::FusionMode::None : whole_model_fusion(hw), what, hw,
                      pricing, why, eager);
}

// Adds `times` x q's parts and seconds to p (the parts matched by unit).
void add_scaled(Prediction& p, const Prediction& q, double times) {
  p.seconds += times * q.seconds;
  p.host_unpriced = p.host_unpriced || q.host_unpriced;
  for (const PredictedPart& part : q.parts) {
    auto same = std::find_if(p.parts.begin(), p.parts.end(),
                             [&](const PredictedPart& x) { return x.unit == part.unit; });
    if (same == p.parts.end()) {
      p.parts.push_back(part);
      same = p.parts.end() - 1;
      same->seconds = same->compute_seconds = same->dram_bytes = 0;
    }
    same->seconds += times * part.seconds;
    same->compute_seconds += times * part.compute_seconds;
    same->dram_bytes += times * part.dram_bytes;
  }
}

// The LLM preset a row names, at the row's element type; nullopt with `why` when it cannot be
// read.
std::optional<workload::llm::LlmConfig> row_model(const Measurement& m,
                                                  const PublishedPricing& pricing,
                                                  std::string& why) {
  Diagnostics diags;
  auto config = workload::llm::load_llm_config(pricing.llm_dir / (m.model + ".yaml"), diags);
  if (!config) {
    why = fmt::format("model '{}': {}", m.model,
                      diags.all().empty() ? std::string("cannot be read")
                                          : format(diags.all().front()));
    return std::nullopt;
  }
  config->dtype = data_type_of(m.dtype);
  return config;
}

// How an fp8 llm_* row's model was deployed: the FP8 engines of the corpus's runtimes
// (TensorRT-LLM --enable_fp8 --fp8_kv_cache, or trtllm-bench --quantization FP8, which forces an
// FP8 KV cache) quantize the linear layers' weights and inputs to fp8_e4m3 and the KV cache to
// fp8_e4m3 over the fp16 model (Llama 2's checkpoints, built --dtype float16 in TensorRT-LLM's
// examples); the norms, the attention's softmax, the residuals, the embeddings and the LM head
// stay fp16 (quantization.h), as the serving corpus prices its fp8 rows. An int8 llm_* row is
// a W8A8 deployment (rkllm-toolkit's quantized_dtype 'w8a8', SmoothQuant's W8A8): the linear
// layers' weights and inputs in int8 over the fp16 model, whose KV cache, norms, attention,
// embeddings and LM head input stay fp16 (the --quant w8a8 scheme). Other rows: none.
workload::llm::Quantization row_quantization(const Measurement& m) {
  workload::llm::Quantization quant;
  if (m.dtype == DType::Int8) {
    quant.weights = quant.activations = DataType::Int8;
    return quant;
  }
  if (m.dtype != DType::Fp8E4M3) return quant;
  quant.weights = quant.activations = quant.kv_cache = DataType::Fp8E4M3;
  return quant;
}

std::optional<Prediction> llm(const Measurement& m, const arch::HardwareModel& arch_hw,
                              const PublishedPricing& pricing, std::string& why) {
  const Shape& s = m.shape;
  // A row that names its decode attention's class prices on the arch with that class.
  const auto named = with_named_decode_attention(arch_hw, m.impl);
  const arch::HardwareModel& hw = named ? *named : arch_hw;
  auto config = row_model(m, pricing, why);
  if (!config) return std::nullopt;
  const workload::llm::Quantization quant = row_quantization(m);
  if (quant.any()) config->dtype = DataType::Fp16;  // the model under the quantization
  const bool eager = m.launch == Launch::Eager;
  using workload::llm::PhaseKind;
  const workload::llm::Runtime runtime = llm_runtime(m);
  const auto prefill = [&] {
    return llm_step(*config, quant, runtime, PhaseKind::Prefill, s.batch, s.input_len, s.tp, eager,
                    hw, pricing, why);
  };
  // The mean decode step over contexts input_len .. input_len + output_len - 1: the mean of the
  // first and the last (a step is affine in the context).
  const auto mean_decode = [&]() -> std::optional<Prediction> {
    const auto first = llm_step(*config, quant, runtime, PhaseKind::Decode, s.batch, s.input_len,
                                s.tp, eager, hw, pricing, why);
    if (!first) return std::nullopt;
    const auto last = llm_step(*config, quant, runtime, PhaseKind::Decode, s.batch,
                               s.input_len + s.output_len - 1, s.tp, eager, hw, pricing, why);
    if (!last) return std::nullopt;
    Prediction mean;
    add_scaled(mean, *first, 0.5);
    add_scaled(mean, *last, 0.5);
    mean.model = first->model;
    return mean;
  };
  std::optional<Prediction> out;
  if (m.kernel == Kernel::LlmPrefill) {
    out = prefill();
  } else if (m.kernel == Kernel::LlmDecode) {
    out = mean_decode();
    if (out) out->model = fmt::format("mean decode step over contexts {} .. {}: {}", s.input_len,
                                      s.input_len + s.output_len - 1, out->model);
  } else {
    const auto p = prefill();
    if (!p) return std::nullopt;
    Prediction total;
    add_scaled(total, *p, 1.0);
    if (s.output_len > 1) {
      const auto d = mean_decode();
      if (!d) return std::nullopt;
      add_scaled(total, *d, static_cast<double>(s.output_len - 1));
    }
    total.model = fmt::format("prefill + {} decode steps (mean of the first and last): {}",
                              s.output_len - 1, p->model);
    out = std::move(total);
  }
  if (!out) return std::nullopt;
  // The runtime's per-step cost (calibration.llm_step_fixed_cost): once for the prefill and once
  // per decode step (llm_decode: one mean step).
  const double steps = m.kernel == Kernel::LlmGenerate
                           ? static_cast<double>(std::max<std::uint64_t>(s.output_len, 1))
                           : 1.0;
  const double step_fixed = hw.llm_step_fixed_seconds();
  if (step_fixed > 0) {
    out->seconds += steps * step_fixed;
    out->parts.push_back({.name = "llm_step_fixed_cost", .unit = "runtime",
                          .seconds = steps * step_fixed, .compute_seconds = 0, .dram_bytes = 0,
                          .bound = PredictedBound::Launch, .mapping = {}});
    out->model += fmt::format("; + {:g} steps x the runtime's step cost {:.4g} us", steps,
                              step_fixed * 1e6);
  }
  if (named) out->model += fmt::format("; decode attention {}", impl_name(m.impl));
  double longest = -1;
  for (const PredictedPart& part : out->parts)
    if (part.seconds > longest) {
      longest = part.seconds;
      out->bound = part.bound;
    }
  return out;
}

// One optimizer step of LLM training, per GPU, priced by the training step model
// (sim/training_step.h, docs/training.md) for the row's layout: tp x pp (x vp virtual stages) x
// dp GPUs, grad_accum micro-batches of `batch` sequences of `seq` tokens per replica, full
// recomputation when recompute=1, ZeRO stage `zero` (3: FSDP FULL_SHARD), gradients reduced in
// grad_bits; the kernels fused as whole-model rows are (whole_model_fusion), launched eagerly
// when the row says so; collectives across nodes on the row's cluster.
std::optional<Prediction> llm_train(const Measurement& m, const arch::HardwareModel& arch_hw,
                                    const PublishedPricing& pricing,
                                    const arch::ClusterSpec* cluster, std::string& why) {
  const Shape& s = m.shape;
  // The row's attention class over the arch's.
  const auto named =
      recalibrated(arch_hw, m.impl == Impl::Fa2 || m.impl == Impl::Fa3 || m.impl == Impl::Triton,
                   [&](arch::CalibrationSpec& c) {
                     c.attention = m.impl == Impl::Fa2   ? arch::AttentionImpl::Fa2
                                   : m.impl == Impl::Fa3 ? arch::AttentionImpl::Fa3
                                                         : arch::AttentionImpl::Triton;
                   });
  const arch::HardwareModel& hw = named ? *named : arch_hw;
  auto config = row_model(m, pricing, why);
  if (!config) return std::nullopt;
  // A learned position table has as many rows as the run's longest sequence: a training run
  // sizes it by its sequence length (llm-foundry's benchmark sets max_seq_len to it), so the
  // row's seq, not the preset's maximum (the table's weights, gradients and AdamW state).
  const bool learned = config->positions == workload::llm::PositionEncoding::Learned;
  if (learned) config->max_positions = s.seq;
  namespace tr = sim::training;
  const tr::Layout layout{.tp = s.tp,
                          .pp = s.pp,
                          .dp = s.dp,
                          .micro_batch_size = s.batch,
                          .micro_batches = s.grad_accum,
                          .recompute = s.recompute != 0,
                          .recompute_layers = s.recompute_layers,
                          .virtual_stages = s.vp,
                          .zero = static_cast<std::uint32_t>(s.zero),
                          .sequence_parallel = s.sp != 0,
                          .cp = s.cp,
                          .ep = s.ep,
                          .pipeline_counts_embedding = s.split_embedding != 0,
                          .pipeline_counts_loss = s.split_loss != 0};
  tr::Framework framework;
  framework.grad_reduce = s.grad_bits == 32 ? DataType::Fp32 : config->dtype;
  framework.precision = s.autocast != 0 ? workload::llm::Precision::Autocast
                        : s.fp8 != 0    ? workload::llm::Precision::Fp8
                                        : workload::llm::Precision::Mixed;
  framework.overlap_param_gather = s.param_overlap != 0;
  // Hugging Face transformers' GPT2LMHeadModel trained eagerly (llm_builder.h).
  framework.runtime = llm_runtime(m);
  tr::StepOptions options;
  // An unfused row (attention as its parts, S and P through DRAM: frameworks before
  // FlashAttention) prices every op on its own; the others as the step model fuses by default:
  // the arch's vendor fusion (whole_model_fusion), or PyTorch's eager fusion under transformers.
  if (m.impl == Impl::Unfused) options.fusion = mapper::FusionMode::None;
  options.host_issue_s = m.launch == Launch::Eager ? hw.eager_issue_seconds() : 0.0;
  options.cluster = cluster;
  Diagnostics diags;
  const auto step = tr::price_training_step(*config, s.seq, layout, framework, hw, options, diags);
  if (!step) {
    why = diags.all().empty() ? std::string("the training step cannot be priced")
                              : fmt::format("{}: {}", diags.all().front().path,
                                            diags.all().front().message);
    return std::nullopt;
  }
  const tr::StageReport& st = step->stages.at(step->critical_stage);
  Prediction out;
  const auto part = [&](std::string name, std::string unit, double seconds,
                        PredictedBound bound) {
    out.parts.push_back({.name = std::move(name), .unit = std::move(unit), .seconds = seconds,
                         .compute_seconds = 0, .dram_bytes = 0, .bound = bound, .mapping = {}});
  };
  part("forward and backward", "compute", st.compute_s, PredictedBound::Compute);
  if (st.bubble_s > 0) part("pipeline bubble", "pipeline", st.bubble_s, PredictedBound::Launch);
  if (st.dp_exposed_s > 0)
    part("data-parallel communication (exposed)", "collective", st.dp_exposed_s,
         PredictedBound::Launch);
  part("AdamW (the rank's share)", "optimizer", st.optimizer_s, PredictedBound::Memory);
  out.seconds = step->step_s;
  out.bound = PredictedBound::Compute;
  out.model = fmt::format(
      "{} training, {}: stage {} of {} ends the step: {} micro-batches x forward {:.4g} ms + "
      "backward {:.4g} ms, bubble {:.4g} ms, data-parallel communication {:.4g} ms ({:.4g} ms "
      "exposed), AdamW {:.4g} ms; MFU {:.1f}%{}{}",
      config->name,
      fmt::format("tp {}{} pp {}{} dp {}{} ZeRO {}", s.tp,
                  s.cp > 1 ? fmt::format(" cp {}", s.cp) : "", s.pp,
                  s.vp > 1 ? fmt::format(" x{} virtual", s.vp) : "", s.dp,
                  s.ep > 1 ? fmt::format(" ep {}", s.ep) : "", s.zero),
      step->critical_stage, s.pp, s.grad_accum, st.forward_s * 1e3, st.backward_s * 1e3,
      st.bubble_s * 1e3, st.dp_comm_s * 1e3, st.dp_exposed_s * 1e3, st.optimizer_s * 1e3,
      100.0 * step->mfu, learned ? fmt::format("; a learned position table of {} rows", s.seq) : "",
      cluster != nullptr && layout.chips() > cluster->chips_per_node
          ? fmt::format("; across nodes of '{}'", cluster->name)
          : "");
  if (m.launch == Launch::Eager && !hw.spec().calibration.eager_issue_time) {
    out.model += kEagerUnpriced;
    out.host_unpriced = true;
  }
  return out;
}

std::optional<Prediction> network(const Measurement& m, const arch::HardwareModel& hw,
                                  const PublishedPricing& pricing, std::string& why) {
  const auto build = [&]() -> std::optional<workload::Graph> {
    Diagnostics diags;
    auto graph = workload::cnn::build_cnn(
        m.model, {.batch = m.shape.batch, .dtype = data_type_of(m.dtype)}, diags);
    if (!graph)
      why = fmt::format("network '{}': {}", m.model,
                        diags.all().empty() ? std::string("cannot be built")
                                            : diags.all().front().message);
    return graph;
  };
  const std::string what =
      fmt::format("{} at batch {}, {}", m.model, m.shape.batch, dtype_name(m.dtype));
  return price_cached(what, build, whole_model_fusion(hw), what, hw, pricing, why,
                      m.launch == Launch::Eager);
}

}  // namespace

std::optional<Prediction> predict_published(const Measurement& m, const arch::HardwareModel& hw,
                                            const arch::HardwareModel* cuda_cores,
                                            const PublishedPricing& pricing, std::string& why,
                                            const arch::ClusterSpec* cluster) {
  CODA_CHECK(info(m.kernel).published_only);
  switch (m.kernel) {
    case Kernel::Gemm: return gemm(m, hw, cuda_cores, why);
    case Kernel::AttentionFwd:
    case Kernel::AttentionBwd: return attention_pass(m, hw, why);
    case Kernel::AttentionFwdBwd: return attention_fwd_bwd(m, hw, why);
    case Kernel::AttentionDecode: return fused_attention(m, hw, why);
    case Kernel::Softmax:
    case Kernel::PublishedLayerNorm:
    case Kernel::PublishedRmsNorm:
    case Kernel::Gelu:
    case Kernel::Silu:
    case Kernel::Copy: return row_kernel(m, hw, why);
    case Kernel::AllReduce:
    case Kernel::AllGather:
    case Kernel::ReduceScatter: return collective(m, hw, why);
    case Kernel::LlmPrefill:
    case Kernel::LlmDecode:
    case Kernel::LlmGenerate: return llm(m, hw, pricing, why);
    case Kernel::LlmTrain: return llm_train(m, hw, pricing, cluster, why);
    case Kernel::Network: return network(m, hw, pricing, why);
    default: break;
  }
  why = fmt::format("{} is not a published-only kernel", info(m.kernel).name);
  return std::nullopt;
}

}  // namespace coda::validation
