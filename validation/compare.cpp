#include "validation/compare.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>

#include <Eigen/Dense>
#include <fmt/format.h>

#include "core/check.h"
#include "core/yaml_reader.h"  // did_you_mean
#include "mapper/schedule.h"
#include "sim/analytical/analytical_engine.h"
#include "sim/analytical/gpu_model.h"
#include "sim/analytical/unit_costs.h"
#include "sim/driver.h"
#include "validation/kernels/tiling.h"
#include "workloads/builders.h"
#include "workloads/graph.h"

namespace coda::validation {
namespace {

namespace an = sim::analytical;
using workload::Function;

constexpr std::array kClasses{CaseClass::Gemm,   CaseClass::Memory,     CaseClass::Attention,
                              CaseClass::Fusion, CaseClass::Launch,     CaseClass::Collective,
                              CaseClass::Llm,    CaseClass::Training, CaseClass::Network};

// Kernels whose arithmetic runs on the CUDA cores in fp32 (see Predictor).
bool on_cuda_cores(const Measurement& m) {
  switch (m.kernel) {
    case Kernel::GemmNaive:
    case Kernel::GemmTiled:
    case Kernel::Conv2dImplicitGemm:
    case Kernel::Conv2dCudnn:
    case Kernel::AttentionUnfused:
    case Kernel::AttentionFlash:
    case Kernel::DecodeAttention: return true;
    case Kernel::GemmCublas: return m.dtype == DType::Fp32;
    default: return false;
  }
}

// The arch with its matrix unit at the vector unit's fp32 FMA rate and its vector unit at fp32
// for every precision; nullopt when it has no vector unit with fp32, or no matrix unit.
std::optional<arch::ArchSpec> cuda_core_view(const arch::ArchSpec& spec) {
  const arch::ComputeUnitSpec* vector = arch::find_unit(spec, arch::UnitKind::Vector);
  if (!vector || !vector->rates.contains(DataType::Fp32)) return std::nullopt;
  const double fma_per_core = vector->rates.at(DataType::Fp32) * vector->count;
  arch::ArchSpec view = spec;
  bool has_matrix = false;
  for (arch::ComputeUnitSpec& unit : view.compute) {
    if (unit.kind == arch::UnitKind::Vector) {
      for (auto& [precision, rate] : unit.rates) rate = unit.rates.at(DataType::Fp32);
      continue;
    }
    if (unit.kind != arch::UnitKind::TensorCore) continue;
    has_matrix = true;
    unit.rates.clear();
    for (const DataType p : {DataType::Fp32, DataType::Fp16, DataType::Bf16})
      unit.rates[p] = fma_per_core / unit.count;
  }
  if (!has_matrix) return std::nullopt;
  auto& fractions = view.calibration.compute_fraction;
  const auto fp32 = fractions.find(DataType::Fp32);
  const std::optional<double> f = fp32 != fractions.end() ? std::optional{fp32->second}
                                                          : std::nullopt;
  fractions.clear();
  if (f)
    for (const DataType p : {DataType::Fp32, DataType::Fp16, DataType::Bf16}) fractions[p] = *f;
  // The tensor cores' issue efficiencies and sustained clock do not apply to the CUDA cores.
  view.calibration.tensor_issue.clear();
  view.calibration.sustained_clock.reset();
  view.calibration.training_clock.reset();
  return view;
}

// The arch as a kernel timed on its own sees it: without the in-model fixed cost.
arch::ArchSpec standalone_view(arch::ArchSpec spec) {
  spec.calibration.in_model_fixed_cost.reset();
  return spec;
}

PredictedBound from_results(results::Bound b) {
  switch (b) {
    case results::Bound::Compute: return PredictedBound::Compute;
    case results::Bound::Memory: return PredictedBound::Memory;
    case results::Bound::Latency: return PredictedBound::Launch;
  }
  return PredictedBound::Compute;
}

// ---- our own GEMM kernels: the GPU model with the kernel's own thread-block tile -----------

struct FixedTile {
  an::BlockTile tile;
  std::uint32_t smem_bytes = 0;  // the kernel's, from tiling.h
};

// The tile of a kernel that has one (tiling.h); stages = the kernel's shared memory over one
// stage's A and B slices, rounded, at least 1, so occupancy sees about the kernel's footprint.
// None of these kernels pipelines its loads: trips = the dependent global round trips a K step
// waits for (gpu_model.h, "Load latency"), read off `nvcc -arch=sm_90 -ptx`, where each
// ld.global.nc sits in its own basic block before the st.shared that consumes it:
//   wmma, int8  4: the A and B copy loops run 2 trips each (256 16-byte vectors over 128
//               threads), the loop's remainder path, one load -> store pair per branch
//   tiled, conv 2: the A element, then the B element (each behind its bounds check)
//   naive       0: not a K-step kernel (one C element a thread, its loads in flight together)
// regs = the registers a thread uses, as `nvcc -arch=sm_90 -Xptxas -v` (CUDA 13.0, the toolkit
// the H200 measurements were built with) reports them for validation/kernels/gemm_kernels.cu:
// naive 32, tiled 32, wmma 71 (fp16; bf16 72, the same 7 blocks an SM), int8 79, conv 39.
std::optional<FixedTile> fixed_tile(Kernel kernel) {
  using namespace tiling;
  const auto make = [](int tm, int tn, int tk, int threads, int smem, int element_bytes, int trips,
                       int regs) {
    const auto u = [](int v) { return static_cast<std::uint32_t>(v); };
    const double stage = static_cast<double>((tm + tn) * tk * element_bytes);
    const auto stages = std::max<std::uint32_t>(
        1, static_cast<std::uint32_t>(std::lround(static_cast<double>(smem) / stage)));
    return FixedTile{{.tile_m = u(tm),
                      .tile_n = u(tn),
                      .tile_k = u(tk),
                      .warps = u(threads / 32),
                      .stages = stages,
                      .serial_load_trips = u(trips),
                      .registers_per_thread = u(regs)},
                     u(smem)};
  };
  switch (kernel) {
    // One thread per C element, no shared memory: a 16x16 block as a tile with a 16-deep K step
    // (the model stages operands through shared memory; the naive kernel relies on L1 instead).
    case Kernel::GemmNaive:
      return make(kNaiveBlock, kNaiveBlock, kNaiveBlock, kNaiveBlock * kNaiveBlock, 0, 4, 0, 32);
    case Kernel::GemmTiled:
      return make(kTiledTile, kTiledTile, kTiledTile, kTiledTile * kTiledTile, kTiledSmemBytes, 4,
                  2, 32);
    case Kernel::GemmWmma:
      return make(kWmmaBlockM, kWmmaBlockN, kWmmaBlockK, kWmmaThreads, kWmmaSmemBytes, 2, 4, 71);
    case Kernel::GemmInt8:
      return make(kInt8BlockM, kInt8BlockN, kInt8BlockK, kInt8Threads, kInt8SmemBytes, 1, 4, 79);
    case Kernel::Conv2dImplicitGemm:
      return make(kConvTile, kConvTile, kConvTile, kConvTile * kConvTile, kConvSmemBytes, 4, 2, 39);
    default: return std::nullopt;
  }
}

// Implicit-GEMM sizes of a conv: M = N*P*Q, N = K, K = C*R*S; A in DRAM is the fp32 feature
// map N*H*W*C (the kernel unrolls it through L2), not the M x K matrix.
an::GemmShape gemm_shape(const Measurement& m) {
  const Shape& s = m.shape;
  if (info(m.kernel).shape == ShapeKind::Conv)
    return {1, s.batch * conv_out_extent(s, s.height) * conv_out_extent(s, s.width), s.filters,
            s.channels * s.filter_size * s.filter_size, 4, 4,
            4.0 * static_cast<double>(s.batch * s.height * s.width * s.channels)};
  return {1, s.m, s.n, s.k, static_cast<std::uint32_t>(dtype_bytes(m.dtype)), 4};
}

// The bound of a prediction's longest part (the first of equals); compute when it has none.
PredictedBound longest_part_bound(std::span<const PredictedPart> parts) {
  double longest = -1;
  PredictedBound bound = PredictedBound::Compute;
  for (const PredictedPart& part : parts)
    if (part.seconds > longest) {
      longest = part.seconds;
      bound = part.bound;
    }
  return bound;
}

// One kernel with its own tile (a FixedTile) on a GEMM shape: the GPU GEMM model's cost as a
// part, its text in `model`; nullopt (why set) when the tile cannot run on the arch.
std::optional<PredictedPart> fixed_tile_part(std::string name, const an::GemmShape& shape,
                                             const FixedTile& fixed, DataType precision,
                                             bool cuda_core, const arch::HardwareModel& hw,
                                             std::string& model, std::string& why) {
  const arch::ComputeUnitSpec* unit = hw.matrix_unit();
  if (!unit || unit->kind != arch::UnitKind::TensorCore || !unit->rates.contains(precision)) {
    why = fmt::format("'{}' has no tensor-core unit running {}", hw.name(), to_string(precision));
    return std::nullopt;
  }
  // WMMA (and the CUDA-core kernels) compile to warp-level mma.sync-class code. The CUDA-core
  // kernels load their operands one element a thread from shared memory or L1
  // (gpu_model.h, "Operand delivery").
  an::GpuParams params = an::gpu_params(precision, hw, arch::TensorPath::MmaSync);
  params.cuda_core_operands = cuda_core;
  const an::GpuKernelCost c = an::evaluate_gpu_gemm(shape, fixed.tile, params);
  const an::BlockTile& t = fixed.tile;
  if (!c.feasible) {
    why = fmt::format("the kernel's tile {}x{}x{} does not fit an SM of '{}' (limited by {})",
                      t.tile_m, t.tile_n, t.tile_k, hw.name(), an::to_string(c.limit));
    return std::nullopt;
  }
  const std::optional<double> latency = hw.global_load_latency_seconds();
  const std::string chain =
      t.serial_load_trips == 0 ? std::string()
      : latency                ? fmt::format(
                                     "; no load pipeline: {} dependent global round trips a K step at "
                                                    "global_load_latency {:.4g} ns, {:.4g} us over the waves",
                                     t.serial_load_trips, *latency * 1e9, c.chain_seconds * 1e6)
                : fmt::format(
                      "; no load pipeline ({} dependent round trips a K step), not "
                      "priced: the arch states no global_load_latency (a lower bound)",
                      t.serial_load_trips);
  model = fmt::format(
      "GPU GEMM model with the kernel's own tile {}x{}x{}, {} warps, {} stage{} (tiling.h; the "
      "kernel's {} B of shared memory modelled as {} B){}{}",
      t.tile_m, t.tile_n, t.tile_k, t.warps, t.stages, t.stages == 1 ? "" : "s", fixed.smem_bytes,
      c.smem_bytes_per_block, cuda_core ? "; on the CUDA cores (fp32 FMA rate)" : "", chain);
  return PredictedPart{.name = std::move(name),
                       .unit = "tensor_core",
                       .seconds = c.seconds,
                       .compute_seconds = c.compute_seconds,
                       .dram_bytes = c.dram_bytes,
                       .bound = c.bound == an::GpuBound::Compute  ? PredictedBound::Compute
                                : c.bound == an::GpuBound::Launch ? PredictedBound::Launch
                                                                  : PredictedBound::Memory,
                       .mapping = {{"tile_m", t.tile_m},
                                   {"tile_n", t.tile_n},
                                   {"tile_k", t.tile_k},
                                   {"warps", t.warps},
                                   {"stages", t.stages},
                                   {"load_trips", t.serial_load_trips},
                                   {"blocks", c.blocks},
                                   {"blocks_per_sm", c.blocks_per_sm},
                                   {"waves", c.waves}}};
}

std::optional<Prediction> predict_fixed_tile(const Measurement& m, const FixedTile& fixed,
                                             const arch::HardwareModel& hw, std::string& why) {
  Prediction p;
  auto part = fixed_tile_part(std::string(info(m.kernel).name), gemm_shape(m), fixed,
                              data_type_of(m.dtype), on_cuda_cores(m), hw, p.model, why);
  if (!part) return std::nullopt;
  p.seconds = part->seconds;
  p.bound = part->bound;
  p.parts.push_back(std::move(*part));
  return p;
}

// ---- everything else: a small graph through coda's schedule and the analytical engine ------

struct CaseGraph {
  workload::Graph graph;
  mapper::FusionMode fusion = mapper::FusionMode::None;
  std::string what;  // how the kernel was mapped, for the report
};

void set_output_type(workload::Op& op, DataType type) {
  for (workload::TensorAccess& a : op.space.accesses)
    if (a.role == workload::TensorRole::Output) a.dtype = type;
}

workload::TensorId output_of(const workload::Graph& g) { return g.ops.back().tensors.back(); }

CaseGraph build_graph(const Measurement& m) {
  using workload::ElementwiseOperand;
  using workload::TensorRole;
  const Shape& s = m.shape;
  const DataType type = data_type_of(m.dtype);
  CaseGraph out;
  out.graph.name = std::string(info(m.kernel).name);
  workload::Graph& g = out.graph;
  const std::vector<std::uint64_t> rows{s.rows, s.cols};
  switch (m.kernel) {
    case Kernel::GemmCublas:
    case Kernel::GemmCublasLt: {
      workload::Op op = workload::make_gemm("gemm", s.m, s.n, s.k, type);
      set_output_type(op, m.dtype == DType::Int8 ? DataType::Int32 : DataType::Fp32);
      g.add(std::move(op));
      out.what = "one GEMM (C in fp32, int32 for int8), tile chosen by the engine";
      break;
    }
    case Kernel::Conv2dCudnn: {
      const workload::Conv2dParams c{.batch = s.batch, .in_h = s.height, .in_w = s.width,
                                     .in_channels = s.channels, .filter_h = s.filter_size,
                                     .filter_w = s.filter_size, .out_channels = s.filters,
                                     .stride_h = s.stride, .stride_w = s.stride, .pad_h = s.pad,
                                     .pad_w = s.pad};
      g.add(workload::make_conv2d("conv", c, conv_out_extent(s, s.height),
                                  conv_out_extent(s, s.width), DataType::Fp32));
      out.what = "one conv contraction, tile chosen by the engine";
      break;
    }
    case Kernel::SoftmaxNaive: {
      // Three kernels: row max, row sum of exp (the exps are not priced), normalise.
      g.add(workload::make_reduction("row_max", Function::Max, rows, {1}, DataType::Fp32));
      g.add(workload::make_reduction("row_sum_exp", Function::Sum, rows, {1}, DataType::Fp32));
      g.add(workload::make_elementwise("normalise", Function::Div, rows, DataType::Fp32,
                                       {ElementwiseOperand{TensorRole::Input, {0}}}));
      out.what = "three ops: row max, row sum (exp not priced), divide by the row scalar";
      break;
    }
    case Kernel::SoftmaxOnline:
    case Kernel::LayerNorm:
    case Kernel::RmsNorm: {
      const Function f = m.kernel == Kernel::SoftmaxOnline ? Function::Softmax
                         : m.kernel == Kernel::LayerNorm   ? Function::LayerNorm
                                                           : Function::RmsNorm;
      g.add(workload::make_normalization(std::string(workload::to_string(f)), f, rows, {1},
                                         DataType::Fp32));
      out.what = fmt::format("coda's {} op over the last axis", workload::to_string(f));
      break;
    }
    case Kernel::BiasGeluFused:
    case Kernel::BiasGeluUnfused: {
      g.add(workload::make_elementwise("bias_add", Function::Add, rows, DataType::Fp32,
                                       {ElementwiseOperand{TensorRole::Weight, {1}}}));
      const workload::TensorId t = output_of(g);
      g.add(workload::make_elementwise("gelu", Function::Gelu, rows, DataType::Fp32), {t});
      const bool fused = m.kernel == Kernel::BiasGeluFused;
      out.fusion = fused ? mapper::FusionMode::All : mapper::FusionMode::None;
      out.what = fused ? "bias add then GELU, fused as an elementwise chain (t stays on chip)"
                       : "bias add then GELU, unfused (t through DRAM)";
      break;
    }
    case Kernel::AttentionUnfused:
    case Kernel::AttentionFlash:
    case Kernel::DecodeAttention: {
      const workload::AttentionParams a{
          .batch = s.batch, .heads = s.heads, .kv_heads = s.heads,
          .q_len = m.kernel == Kernel::DecodeAttention ? 1 : s.seq, .kv_len = s.seq,
          .head_dim = s.head_dim, .causal = false};
      g.add(workload::make_attention("attention", a, DataType::Fp16));
      const bool fused = m.kernel != Kernel::AttentionUnfused;
      out.fusion = fused ? mapper::FusionMode::Epilogue : mapper::FusionMode::None;
      out.what = fused ? "coda's fused (FlashAttention) attention, O in fp16 (the kernel "
                         "writes fp32)"
                       : "coda's attention as three ops (Q K^T, softmax, P V), S and P in fp16 "
                         "(the kernel keeps S in fp32)";
      break;
    }
    case Kernel::ReduceSum:
      g.add(workload::make_reduction("sum", Function::Sum, {s.elements}, {0}, DataType::Fp32));
      out.what = "one sum reduction";
      break;
    case Kernel::CopyBandwidth:
      g.add(workload::make_data_movement("copy", Function::Copy, {{s.elements}}, {{s.elements}},
                                         DataType::Fp32));
      out.what = "one copy through DRAM";
      break;
    default: CODA_CHECK(false);  // priced without a graph
  }
  return out;
}

std::optional<Prediction> predict_graph(const Measurement& m, const arch::HardwareModel& hw,
                                        std::string& why) {
  const CaseGraph c = build_graph(m);
  auto p = price_graph(c.graph, c.fusion, c.what, hw, false, why);
  if (p && on_cuda_cores(m)) p->model += "; on the CUDA cores (fp32 FMA rate)";
  return p;
}

// The L2 probe: its bytes over the first chip-level memory's read bandwidth.
std::optional<Prediction> predict_l2(const Measurement& m, const arch::HardwareModel& hw,
                                     std::string& why) {
  for (const arch::LevelSummary& level : hw.levels()) {
    if (level.scope != arch::Scope::Chip || level.name == "dram") continue;
    if (!level.read_bytes_per_second) {
      why = fmt::format("'{}' states no read bandwidth for its L2 level '{}' (absent = not a "
                        "limit), so an L2-bound probe has nothing to be priced against",
                        hw.name(), level.name);
      return std::nullopt;
    }
    const double bytes = minimum_bytes(m.kernel, m.dtype, m.shape);
    const double seconds = bytes / *level.read_bytes_per_second;
    Prediction p;
    p.seconds = seconds;
    p.bound = PredictedBound::Memory;
    p.model = fmt::format("bytes read / the read bandwidth of '{}' (no launch term)", level.name);
    p.parts.push_back({.name = "l2_reads", .unit = "l2", .seconds = seconds,
                       .compute_seconds = 0, .dram_bytes = 0, .bound = PredictedBound::Memory,
                       .mapping = {}});
    return p;
  }
  why = fmt::format("'{}' has no chip-level memory (L2)", hw.name());
  return std::nullopt;
}

std::optional<Prediction> predict_launch(const arch::HardwareModel& hw, std::string& why) {
  const arch::ComputeUnitSpec* unit = hw.matrix_unit();
  if (!unit || unit->kind != arch::UnitKind::TensorCore) {
    why = fmt::format("'{}' is not a GPU: coda adds no kernel launch term on it", hw.name());
    return std::nullopt;
  }
  // An empty kernel: the fixed cost of the lightest kind of kernel, a vector kernel's.
  const double seconds = hw.kernel_fixed_seconds(arch::KernelKind::Vector);
  Prediction p;
  p.seconds = seconds;
  p.bound = PredictedBound::Launch;
  // Say where the figure came from (standalone_fixed_seconds' order).
  const arch::CalibrationSpec& c = hw.spec().calibration;
  p.model = c.fixed_cost.contains(arch::KernelKind::Vector)
                ? "the launch term: a vector kernel's calibration.fixed_cost.vector"
            : c.launch_overhead ? "the launch term: calibration.launch_overhead"
                                : "the launch term: gpu_model.h's default 4 us";
  p.parts.push_back({.name = "launch", .unit = "launch", .seconds = seconds,
                     .compute_seconds = 0, .dram_bytes = 0, .bound = PredictedBound::Launch,
                     .mapping = {}});
  return p;
}

// ---- coda-bench's unfused attention: its three kernels as written ---------------------------

// attention_unfused (kernels/attention_kernels.cu, validation/harness/runner.cu) launches three
// kernels per call, each priced as it runs, each paying its fixed cost:
//   attention_scores_kernel  S = scale Q K^T for every (batch, head): a 16x16 output tile of
//                            16x16 threads, one S element each, head_dim steps of 16 through
//                            16x17-float Q and K tiles in shared memory (2176 B), fp32 FMAs on
//                            the CUDA cores; Q and K read as fp16, S written fp32. The GPU GEMM
//                            model with that tile, as coda-bench's tiled GEMM: batch b x h,
//                            m = n = seq, k = head_dim
//   softmax_online_kernel    over the b x h x seq rows of S (fp32 in, P fp16 out): the row kernel
//                            that coda-bench's softmax_online rows time, priced as they are
//   attention_pv_kernel      O = P V: the same tiling, m = seq, n = head_dim, k = seq; P and V
//                            fp16, O fp32
// Like the tiled GEMM, each K step waits for 2 dependent global round trips (PTX: the Q (P)
// element, then the K (V) element, each behind its bounds check), and the registers are ptxas's
// (CUDA 13.0, sm_90): 30 (scores) and 32 (pv).
FixedTile attention_matmul_tile(int registers) {
  using namespace tiling;
  const auto t = static_cast<std::uint32_t>(kAttnMatmulTile);
  return {{.tile_m = t,
           .tile_n = t,
           .tile_k = t,
           .warps = t * t / 32,
           .stages = 1,
           .serial_load_trips = 2,
           .registers_per_thread = static_cast<std::uint32_t>(registers)},
          static_cast<std::uint32_t>(kAttnMatmulSmemBytes)};
}

std::optional<Prediction> predict_unfused_attention(const Measurement& m,
                                                    const arch::HardwareModel& cuda_hw,
                                                    const arch::HardwareModel& hw,
                                                    std::string& why) {
  const Shape& s = m.shape;
  const std::uint64_t heads = s.batch * s.heads;
  workload::Graph g{"softmax_online", "", {}, {}, {}};
  workload::Op softmax = workload::make_normalization("softmax", Function::Softmax,
                                                      {heads * s.seq, s.seq}, {1}, DataType::Fp32);
  set_output_type(softmax, DataType::Fp16);
  g.add(std::move(softmax));
  std::string scores_text, pv_text;
  auto scores =
      fixed_tile_part("attention_scores", {heads, s.seq, s.seq, s.head_dim, 2, 4},
                      attention_matmul_tile(30), DataType::Fp32, true, cuda_hw, scores_text, why);
  if (!scores) return std::nullopt;
  auto row = price_graph(g, mapper::FusionMode::None,
                         "coda's softmax op over S's rows (fp32 in, fp16 out)", hw, false, why);
  if (!row) return std::nullopt;
  auto pv = fixed_tile_part("attention_pv", {heads, s.seq, s.head_dim, s.seq, 2, 4},
                            attention_matmul_tile(32), DataType::Fp32, true, cuda_hw, pv_text, why);
  if (!pv) return std::nullopt;
  Prediction p;
  p.model = fmt::format(
      "three kernels: attention_scores: {} + softmax_online: {} + "
      "attention_pv: {}",
      scores_text, row->model, pv_text);
  p.parts.push_back(std::move(*scores));
  for (PredictedPart& part : row->parts) p.parts.push_back(std::move(part));
  p.parts.push_back(std::move(*pv));
  for (const PredictedPart& part : p.parts) p.seconds += part.seconds;
  p.bound = longest_part_bound(p.parts);
  return p;
}

// ---- coda-bench's decode kernel: a chain of dependent loads per key ------------------------

// decode_attention_kernel (kernels/attention_kernels.cu): one block of kDecodeWarps warps per
// (batch, head), fp32 arithmetic on the CUDA cores. Warp w walks keys w, w + W, ... one at a
// time: it loads the key's K row, reduces q.k across the warp (five shuffles), updates the
// running max with two exponentials, and only then loads the V row (the PTX issues the V loads
// after the shuffles, and the loop is not unrolled), so each key waits for two loads that miss
// the caches one after the other. The kernel's time is the longest of
//   the chain:     waves x ceil(context / W) keys x 2 x the SM's global_load_latency (the
//                  arithmetic between the loads, about twenty dependent instructions, is not
//                  counted);
//   the bytes:     K and V (fp16) plus q and o, over the DRAM bandwidth kernels reach;
//   the MACs:      2 x batch x heads x context x head_dim on the CUDA cores' fp32 rate;
// plus the attention kernels' fixed cost. Waves: blocks over SMs x the blocks one SM holds
// (its resident warps / W, at most its resident blocks).
std::optional<Prediction> predict_decode(const Measurement& m, const arch::HardwareModel& hw,
                                         std::string& why) {
  const arch::ComputeUnitSpec* tensor = hw.matrix_unit();
  const auto dram = hw.achievable_dram_bytes_per_second();
  const double fma_per_cycle = hw.achievable_vector_ops_per_cycle(DataType::Fp32);
  if (!tensor || !tensor->tensor_core || !dram || fma_per_cycle <= 0) {
    why = fmt::format("'{}' is not a GPU with a DRAM bandwidth and an fp32 vector unit", hw.name());
    return std::nullopt;
  }
  const Shape& s = m.shape;
  const auto warps = static_cast<std::uint64_t>(tiling::kDecodeWarps);
  const std::uint64_t blocks = s.batch * s.heads;
  const arch::TensorCoreSpec& sm = *tensor->tensor_core;
  const std::uint64_t per_sm =
      std::min<std::uint64_t>(sm.max_blocks_per_core, sm.max_warps_per_core / warps);
  if (per_sm == 0) {
    why = fmt::format("an SM of '{}' holds fewer than the kernel's {} warps", hw.name(), warps);
    return std::nullopt;
  }
  const std::uint64_t waves = (blocks + hw.cores() * per_sm - 1) / (hw.cores() * per_sm);
  const std::uint64_t keys_per_warp = (s.seq + warps - 1) / warps;
  const double kv_elements = static_cast<double>(blocks * s.seq * s.head_dim);
  const double bytes = 2.0 * kv_elements * 2.0 + static_cast<double>(blocks * s.head_dim) * 6.0;
  const double bytes_s = bytes / *dram;
  const double macs = 2.0 * kv_elements;
  const double compute_s =
      macs / (fma_per_cycle * static_cast<double>(hw.cores()) * hw.spec().clock.value);
  const std::optional<double> latency = hw.global_load_latency_seconds();
  const double chain_s =
      latency ? static_cast<double>(waves * keys_per_warp) * 2.0 * *latency : 0.0;
  const double fixed_s = hw.standalone_fixed_seconds(arch::KernelKind::Attention);
  const double body = std::max({chain_s, bytes_s, compute_s});
  Prediction p;
  p.seconds = fixed_s + body;
  p.bound = body == compute_s ? PredictedBound::Compute : PredictedBound::Memory;
  p.model = fmt::format(
      "coda-bench's decode kernel as written: 1 block of {} warps per (batch, head), each warp "
      "{} keys in turn, two dependent DRAM loads a key ({}), against the K/V bytes at the "
      "achievable DRAM bandwidth and the fp32 MACs on the CUDA cores, plus the attention fixed "
      "cost",
      warps, keys_per_warp,
      latency ? fmt::format("global_load_latency {:.4g} ns", *latency * 1e9)
              : std::string("not priced: the arch states no global_load_latency, so this is a "
                            "lower bound"));
  p.parts.push_back({.name = "decode_attention",
                     .unit = "vector",
                     .seconds = body,
                     .compute_seconds = compute_s,
                     .dram_bytes = bytes,
                     .bound = p.bound,
                     .mapping = {{"blocks", blocks},
                                 {"warps", warps},
                                 {"blocks_per_sm", per_sm},
                                 {"waves", waves},
                                 {"keys_per_warp", keys_per_warp}}});
  p.parts.push_back({.name = "fixed",
                     .unit = "launch",
                     .seconds = fixed_s,
                     .compute_seconds = 0,
                     .dram_bytes = 0,
                     .bound = PredictedBound::Launch,
                     .mapping = {}});
  return p;
}

// ---- statistics --------------------------------------------------------------------------

std::vector<double> ranks(std::span<const double> v) {
  std::vector<std::size_t> order(v.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return v[a] < v[b];
  });
  std::vector<double> r(v.size());
  for (std::size_t i = 0; i < order.size();) {
    std::size_t j = i;
    while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]]) ++j;
    const double average = (static_cast<double>(i) + static_cast<double>(j)) / 2.0 + 1.0;
    for (std::size_t t = i; t <= j; ++t) r[order[t]] = average;
    i = j + 1;
  }
  return r;
}

// ---- calibration ---------------------------------------------------------------------------

// The knobs as the fit moves them: fixed costs in seconds, and 1 / fraction for the others, in
// which a bound time is linear.
enum class KnobKind : std::uint8_t {
  FixedCost,
  InModelFixedCost,
  TileOverhead,
  Issue,
  Compute,
  Dram,
  Link,
  AttentionBackward,
  AttentionOverlap,
  DecodeKvReread,
  LlmStepFixedCost,
  EagerIssueTime,
  TrainingClock
};
struct Knob {
  KnobKind kind = KnobKind::FixedCost;
  double upper = 0;  // InModelFixedCost: its upper limit (set by the fit), in seconds
  arch::KernelKind kernel = arch::KernelKind::Gemm;  // FixedCost, TileOverhead
  arch::TensorPath path = arch::TensorPath::MmaSync;  // Issue
  DataType precision = DataType::Fp32;                // Issue, Compute
  // Issue: the other precisions the unit runs at the same peak (fp16 and bf16, ...), which share
  // one datapath and so one knob.
  std::vector<DataType> same_rate;
};

std::string knob_name(const Knob& k) {
  switch (k.kind) {
    case KnobKind::FixedCost: return fmt::format("fixed_cost.{}", arch::to_string(k.kernel));
    case KnobKind::InModelFixedCost: return "in_model_fixed_cost";
    case KnobKind::TileOverhead:
      return fmt::format("tile_overhead.{}", arch::to_string(k.kernel));
    case KnobKind::Issue: {
      std::string precisions(to_string(k.precision));
      for (const DataType p : k.same_rate) precisions += "+" + std::string(to_string(p));
      return fmt::format("tensor_issue.{}.{}", arch::to_string(k.path), precisions);
    }
    case KnobKind::Compute: return fmt::format("compute_fraction.{}", to_string(k.precision));
    case KnobKind::Dram: return "dram_fraction";
    case KnobKind::Link: return "link_fraction";
    case KnobKind::AttentionBackward: return "attention_backward";
    case KnobKind::AttentionOverlap: return "attention_overlap";
    case KnobKind::DecodeKvReread: return "decode_kv_reread";
    case KnobKind::LlmStepFixedCost: return "llm_step_fixed_cost";
    case KnobKind::EagerIssueTime: return "eager_issue_time";
    case KnobKind::TrainingClock:
      return "training_clock";
  }
  return "?";
}

double fraction_or_one(const std::map<DataType, double>& m, DataType p) {
  const auto it = m.find(p);
  return it != m.end() ? it->second : 1.0;
}

double get(const arch::ArchSpec& spec, const arch::CalibrationSpec& c, const Knob& k) {
  switch (k.kind) {
    case KnobKind::FixedCost: {
      arch::ArchSpec with = spec;
      with.calibration = c;
      return arch::HardwareModel(with).standalone_fixed_seconds(k.kernel);
    }
    case KnobKind::InModelFixedCost: {
      arch::ArchSpec with = spec;
      with.calibration = c;
      return arch::HardwareModel(with).kernel_fixed_seconds(arch::KernelKind::Vector);
    }
    case KnobKind::TileOverhead: {
      const auto it = c.tile_overhead.find(k.kernel);
      return it != c.tile_overhead.end() ? it->second : 0.0;
    }
    case KnobKind::Issue: {
      const auto it = c.tensor_issue.find(k.path);
      return 1.0 / (it != c.tensor_issue.end() ? fraction_or_one(it->second, k.precision) : 1.0);
    }
    case KnobKind::Compute: return 1.0 / fraction_or_one(c.compute_fraction, k.precision);
    case KnobKind::Dram: return 1.0 / c.dram_fraction.value_or(1.0);
    case KnobKind::Link: return 1.0 / c.link_fraction.value_or(1.0);
    case KnobKind::AttentionBackward: return 1.0 / c.attention_backward.value_or(1.0);
    case KnobKind::AttentionOverlap: return 1.0 / c.attention_overlap.value_or(1.0);
    case KnobKind::DecodeKvReread: return c.decode_kv_reread.value_or(1.0);
    case KnobKind::LlmStepFixedCost:
      return c.llm_step_fixed_cost ? c.llm_step_fixed_cost->value : 0.0;
    case KnobKind::EagerIssueTime: return c.eager_issue_time ? c.eager_issue_time->value : 0.0;
    case KnobKind::TrainingClock: {  // clock / the clock a training step runs at
      arch::ArchSpec with = spec;
      with.calibration = c;
      const std::optional<Hertz> step = arch::training_step_view(with).calibration.sustained_clock;
      return step ? spec.clock.value / step->value : 1.0;
    }
  }
  return 0;
}

void set(const arch::ArchSpec& spec, arch::CalibrationSpec& c, const Knob& k, double v) {
  switch (k.kind) {
    case KnobKind::FixedCost: c.fixed_cost[k.kernel] = Seconds{v}; break;
    case KnobKind::InModelFixedCost: c.in_model_fixed_cost = Seconds{v}; break;
    case KnobKind::TileOverhead: c.tile_overhead[k.kernel] = v; break;
    case KnobKind::Issue:
      c.tensor_issue[k.path][k.precision] = 1.0 / v;
      for (const DataType p : k.same_rate) c.tensor_issue[k.path][p] = 1.0 / v;
      break;
    case KnobKind::Compute: c.compute_fraction[k.precision] = 1.0 / v; break;
    case KnobKind::Dram: c.dram_fraction = 1.0 / v; break;
    case KnobKind::Link: c.link_fraction = 1.0 / v; break;
    case KnobKind::AttentionBackward: c.attention_backward = 1.0 / v; break;
    case KnobKind::AttentionOverlap: c.attention_overlap = 1.0 / v; break;
    case KnobKind::DecodeKvReread: c.decode_kv_reread = v; break;
    case KnobKind::LlmStepFixedCost: c.llm_step_fixed_cost = Seconds{v}; break;
    case KnobKind::EagerIssueTime: c.eager_issue_time = Seconds{v}; break;
    case KnobKind::TrainingClock:
      c.training_clock = Hertz{spec.clock.value / v};
      break;
  }
}

// Valid range of a knob in fit units: a fixed cost [0, 1 ms], the in-model fixed cost [0, the
// least standalone fixed cost] (a kernel whose launch hides under the previous one cannot cost
// more than one timed alone); a tile overhead [0, 64] steps; 1 / fraction in [1, 1000].
std::pair<double, double> limits(const Knob& k) {
  if (k.kind == KnobKind::FixedCost) return {0.0, arch::kMaxLaunchOverheadSeconds};
  if (k.kind == KnobKind::InModelFixedCost) return {0.0, k.upper};
  if (k.kind == KnobKind::TileOverhead) return {0.0, arch::kMaxTileOverheadSteps};
  if (k.kind == KnobKind::DecodeKvReread) return {0.0, 1.0};
  if (k.kind == KnobKind::LlmStepFixedCost || k.kind == KnobKind::EagerIssueTime)
    return {0.0, arch::kMaxLaunchOverheadSeconds};
  return {1.0, 1000.0};
}

// Every knob the arch has (on tensor cores also the training steps' clock): a fixed cost per kind
// of kernel; on tensor cores an issue efficiency per instruction path and precision
// (compute_fraction would scale the same rate, so it is not fitted there), elsewhere a compute
// fraction per precision; the DRAM and link fractions; and the attention backward's share. The fit
// keeps those the rows depend on.
std::vector<Knob> candidate_knobs(const arch::ArchSpec& spec) {
  std::vector<Knob> out;
  for (const arch::KernelKind kind :
       {arch::KernelKind::Gemm, arch::KernelKind::Attention, arch::KernelKind::Vector,
        arch::KernelKind::Copy, arch::KernelKind::Collective})
    out.push_back({.kind = KnobKind::FixedCost, .kernel = kind});
  const arch::ComputeUnitSpec* tc = arch::find_unit(spec, arch::UnitKind::TensorCore);
  if (tc != nullptr)
    for (const arch::KernelKind kind : {arch::KernelKind::Gemm, arch::KernelKind::Attention})
      out.push_back({.kind = KnobKind::TileOverhead, .kernel = kind});
  for (const arch::ComputeUnitSpec& unit : spec.compute) {
    if (tc != nullptr && unit.kind == arch::UnitKind::TensorCore && unit.tensor_core) {
      // Precisions at one peak rate share a knob (their datasheet rates say they share a
      // datapath: fp16 and bf16; fp8 and int8 on Hopper).
      std::vector<std::vector<DataType>> groups;
      std::vector<double> group_rates;
      for (const auto& [precision, rate] : unit.rates) {
        const auto same = std::find(group_rates.begin(), group_rates.end(), rate);
        if (same == group_rates.end()) {
          group_rates.push_back(rate);
          groups.push_back({precision});
        } else {
          groups[static_cast<std::size_t>(same - group_rates.begin())].push_back(precision);
        }
      }
      for (const arch::TensorPath path : unit.tensor_core->paths)
        for (const std::vector<DataType>& group : groups)
          out.push_back({.kind = KnobKind::Issue, .path = path, .precision = group.front(),
                         .same_rate = {group.begin() + 1, group.end()}});
    } else if (tc == nullptr) {
      for (const auto& entry : unit.rates) {
        const DataType precision = entry.first;
        const bool listed = std::any_of(out.begin(), out.end(), [&](const Knob& k) {
          return k.kind == KnobKind::Compute && k.precision == precision;
        });
        if (!listed) out.push_back({.kind = KnobKind::Compute, .precision = precision});
      }
    }
  }
  out.push_back({.kind = KnobKind::Dram});
  if (spec.interconnect) out.push_back({.kind = KnobKind::Link});
  if (tc != nullptr) {
    out.push_back({.kind = KnobKind::AttentionBackward});
    out.push_back({.kind = KnobKind::AttentionOverlap});
  }
  out.push_back({.kind = KnobKind::InModelFixedCost});
  out.push_back({.kind = KnobKind::LlmStepFixedCost});
  out.push_back({.kind = KnobKind::EagerIssueTime});
  if (tc != nullptr) {
    out.push_back({.kind = KnobKind::DecodeKvReread});
    out.push_back({.kind = KnobKind::TrainingClock});
  }
  return out;
}

// One calibration per arch of the fit; a knob is set on all of them (they share it).
using Calibrations = std::vector<arch::CalibrationSpec>;

void set_all(std::span<const arch::ArchSpec> specs, Calibrations& c, const Knob& k, double v) {
  for (std::size_t i = 0; i < c.size(); ++i) set(specs[i], c[i], k, v);
}

// Predicted seconds of each row on its arch with calibrations `c`; NaN where it cannot be
// priced.
std::vector<double> predict_all(std::span<const FitRow> rows, std::span<const arch::ArchSpec> specs,
                                const Calibrations& c, const PublishedPricing& pricing) {
  std::vector<std::optional<Predictor>> predictors(specs.size());
  std::vector<double> out;
  out.reserve(rows.size());
  for (const FitRow& row : rows) {
    std::optional<Predictor>& predictor = predictors.at(row.spec);
    if (!predictor) {
      arch::ArchSpec with = specs[row.spec];
      with.calibration = c[row.spec];
      predictor.emplace(with, pricing);
    }
    std::string why;
    const auto p = predictor->predict(*row.measurement, why, row.cluster);
    out.push_back(p ? p->seconds : kNoValue);
  }
  return out;
}

double squared_relative_error(std::span<const double> predicted, std::span<const FitRow> rows) {
  double sum = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const double e = relative_error(predicted[i], rows[i].measurement->median_us * 1e-6);
    sum += e * e;
  }
  return sum;
}

struct Fit {
  std::vector<Knob> knobs;
  std::vector<double> before;
  std::vector<double> after;
  std::vector<bool> at_limit;
  Calibrations fitted;
  std::size_t iterations = 0;
};

// Damped, projected Gauss-Newton on the relative errors of `rows`, over the knobs whose
// finite-difference column is not zero (those the rows' predictions depend on). The knobs are
// those of specs[0] (candidate_knobs); every spec shares them.
Fit fit_knobs(std::span<const FitRow> rows, std::span<const arch::ArchSpec> specs,
              const PublishedPricing& pricing, const FitOptions& options,
              std::vector<std::string>& notes) {
  CODA_CHECK(!specs.empty());
  std::vector<Knob> candidates = candidate_knobs(specs[0]);
  const arch::HardwareModel first(specs[0]);
  for (Knob& k : candidates)
    if (k.kind == KnobKind::InModelFixedCost) {
      k.upper = arch::kMaxLaunchOverheadSeconds;
      for (const arch::KernelKind kind : {arch::KernelKind::Gemm, arch::KernelKind::Attention,
                                          arch::KernelKind::Vector, arch::KernelKind::Copy})
        k.upper = std::min(k.upper, first.standalone_fixed_seconds(kind));
    }
  std::erase_if(candidates, [&](const Knob& k) {
    const bool in_model = k.kind == KnobKind::InModelFixedCost ||
                          k.kind == KnobKind::LlmStepFixedCost ||
                          k.kind == KnobKind::EagerIssueTime ||
                          k.kind == KnobKind::DecodeKvReread || k.kind == KnobKind::TrainingClock;
    if (!options.only_knobs.empty() &&
        std::none_of(options.only_knobs.begin(), options.only_knobs.end(),
                     [&](const std::string& p) { return knob_selected(knob_name(k), p); }))
      return true;
    if (options.scope == FitScope::GraphKernels) return k.kind != KnobKind::InModelFixedCost;
    if (options.hold_in_model_fixed_cost && k.kind == KnobKind::InModelFixedCost) return true;
    return (options.scope == FitScope::Kernels && in_model) ||
           (options.scope == FitScope::WholeModels && !in_model);
  });
  const std::size_t n = rows.size();
  const auto residuals = [&](const std::vector<double>& predicted) {
    Eigen::VectorXd r(static_cast<Eigen::Index>(n));
    for (std::size_t i = 0; i < n; ++i)
      r(static_cast<Eigen::Index>(i)) =
          relative_error(predicted[i], rows[i].measurement->median_us * 1e-6);
    return r;
  };
  const auto step_of = [](const Knob& k, double v) {
    // The in-model fixed cost acts as min(itself, the standalone one), so it starts at its upper
    // bound, where only a step down moves a prediction.
    if (k.kind == KnobKind::InModelFixedCost && v > 1e-7) return -0.05 * v;
    if (k.kind == KnobKind::FixedCost || k.kind == KnobKind::InModelFixedCost ||
        k.kind == KnobKind::LlmStepFixedCost || k.kind == KnobKind::EagerIssueTime)
      return std::max(0.05 * v, 1e-7);
    if (k.kind == KnobKind::DecodeKvReread) return v > 0.5 ? -0.01 : 0.01;  // stay in [0, 1]
    if (k.kind == KnobKind::TileOverhead) return std::max(0.05 * v, 0.05);
    return 0.01 * v;
  };

  Calibrations current;
  for (const arch::ArchSpec& spec : specs) current.push_back(spec.calibration);
  // The eager issue time is flat until it exceeds the shortest kernels (the host hides under the
  // GPU) and kinked wherever it crosses a kernel's time, so Gauss-Newton cannot find it from a
  // point: it starts from the best of a scan, 0 to 100 us in 1 us steps.
  const bool any_eager = std::any_of(rows.begin(), rows.end(), [](const FitRow& r) {
    return r.measurement->launch == Launch::Eager;
  });
  for (const Knob& k : candidates) {
    if (k.kind != KnobKind::EagerIssueTime || !any_eager) continue;  // no row depends on it
    double best = get(specs[0], current[0], k);
    double best_cost = squared_relative_error(predict_all(rows, specs, current, pricing), rows);
    for (int us = 0; us <= 100; ++us) {
      Calibrations trial = current;
      set_all(specs, trial, k, us * 1e-6);
      const double cost = squared_relative_error(predict_all(rows, specs, trial, pricing), rows);
      if (cost < best_cost) {
        best_cost = cost;
        best = us * 1e-6;
      }
    }
    set_all(specs, current, k, best);
  }
  // Which knobs matter: a column of the Jacobian at the start that is not zero.
  Fit fit;
  const std::vector<double> base = predict_all(rows, specs, current, pricing);
  for (const Knob& k : candidates) {
    Calibrations moved = current;
    const double v = get(specs[0], current[0], k);
    set_all(specs, moved, k, v + step_of(k, v));
    const std::vector<double> p = predict_all(rows, specs, moved, pricing);
    std::size_t depend = 0;
    for (std::size_t i = 0; i < n; ++i)
      if (std::abs(p[i] - base[i]) > 1e-12 * std::max(1e-9, std::abs(base[i]))) ++depend;
    if (depend == 0) continue;
    if (depend < options.min_rows_per_knob) {
      notes.push_back(fmt::format("{} was not fitted: {} row{} depend on it, fewer than {}",
                                  knob_name(k), depend, depend == 1 ? "" : "s",
                                  options.min_rows_per_knob));
      continue;
    }
    fit.knobs.push_back(k);
    fit.before.push_back(v);
  }
  const std::size_t kn = fit.knobs.size();
  fit.at_limit.assign(kn, false);
  std::vector<double> theta = fit.before;
  // Every arch starts from the shared values of the knobs that are fitted, within their range.
  for (std::size_t j = 0; j < kn; ++j) {
    const auto [lo, hi] = limits(fit.knobs[j]);
    theta[j] = std::clamp(theta[j], lo, hi);
    set_all(specs, current, fit.knobs[j], theta[j]);
  }
  std::vector<double> predicted = predict_all(rows, specs, current, pricing);
  double cost = squared_relative_error(predicted, rows);
  constexpr std::size_t kMaxIterations = 50;
  for (std::size_t it = 0; it < kMaxIterations && kn > 0; ++it) {
    fit.iterations = it + 1;
    const Eigen::VectorXd r = residuals(predicted);
    Eigen::MatrixXd jacobian(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(kn));
    for (std::size_t j = 0; j < kn; ++j) {
      Calibrations moved = current;
      const double h = step_of(fit.knobs[j], theta[j]);
      set_all(specs, moved, fit.knobs[j], theta[j] + h);
      const Eigen::VectorXd rj = residuals(predict_all(rows, specs, moved, pricing));
      jacobian.col(static_cast<Eigen::Index>(j)) = (rj - r) / h;
    }
    const Eigen::VectorXd delta = jacobian.colPivHouseholderQr().solve(-r);
    // Halve the step until the cost does not grow (the model is piecewise linear in the knobs).
    bool improved = false;
    for (double scale = 1.0; scale > 1e-6 && !improved; scale /= 2) {
      std::vector<double> trial = theta;
      Calibrations c = current;
      for (std::size_t j = 0; j < kn; ++j) {
        const auto [lo, hi] = limits(fit.knobs[j]);
        trial[j] = std::clamp(theta[j] + scale * delta(static_cast<Eigen::Index>(j)), lo, hi);
        set_all(specs, c, fit.knobs[j], trial[j]);
      }
      const std::vector<double> p = predict_all(rows, specs, c, pricing);
      const double trial_cost = squared_relative_error(p, rows);
      if (trial_cost <= cost) {
        improved = trial_cost < cost * (1.0 - 1e-12);
        double moved = 0, size = 0;
        for (std::size_t j = 0; j < kn; ++j) {
          moved += std::abs(trial[j] - theta[j]);
          size += std::abs(theta[j]);
        }
        theta = trial;
        current = c;
        predicted = p;
        cost = trial_cost;
        if (moved <= 1e-12 * std::max(size, 1e-12)) improved = false;
        break;
      }
    }
    if (!improved) break;
  }
  for (std::size_t j = 0; j < kn; ++j) {
    const auto [lo, hi] = limits(fit.knobs[j]);
    fit.at_limit[j] = theta[j] <= lo || theta[j] >= hi;
  }
  fit.after = theta;
  fit.fitted = current;
  return fit;
}

// Fit units back to the YAML's: seconds stay, 1 / fraction becomes the fraction.
// decode_kv_reread is fitted as itself (a share in [0, 1], where 0 is valid).
bool in_seconds(const Knob& k) {
  return k.kind == KnobKind::FixedCost || k.kind == KnobKind::InModelFixedCost ||
         k.kind == KnobKind::LlmStepFixedCost || k.kind == KnobKind::EagerIssueTime;
}
double yaml_value(const Knob& k, double v) {
  return in_seconds(k) || k.kind == KnobKind::TileOverhead ||
                 k.kind == KnobKind::DecodeKvReread
             ? v
             : 1.0 / v;
}

ErrorStats stats_of(const std::vector<ComparedRow>& rows, const std::vector<std::size_t>& which,
                    bool calibrated) {
  std::vector<double> predicted, measured;
  for (const std::size_t i : which) {
    const ComparedRow& r = rows[i];
    const auto& p = calibrated ? r.calibrated : r.prediction;
    if (!p) continue;
    predicted.push_back(p->seconds);
    measured.push_back(r.measurement.median_us * 1e-6);
  }
  ErrorStats s = error_stats(predicted, measured);
  // The worst case as an index into the report's rows.
  std::size_t seen = 0;
  for (const std::size_t i : which) {
    const auto& p = calibrated ? rows[i].calibrated : rows[i].prediction;
    if (!p) continue;
    if (seen++ == s.worst) {
      s.worst = i;
      break;
    }
  }
  return s;
}

}  // namespace

std::vector<std::string> knob_names(const arch::ArchSpec& spec) {
  std::vector<std::string> out;
  for (const Knob& k : candidate_knobs(spec)) out.push_back(knob_name(k));
  return out;
}

bool knob_selected(std::string_view name, std::string_view pattern) {
  return name == pattern ||
         (name.size() > pattern.size() && name.starts_with(pattern) && name[pattern.size()] == '.');
}

FitResult fit_calibration(std::span<const FitRow> rows, std::span<const arch::ArchSpec> specs,
                          const PublishedPricing& pricing, const FitOptions& options) {
  FitResult out;
  const Fit fit = fit_knobs(rows, specs, pricing, options, out.notes);
  out.fitted = fit.fitted;
  out.iterations = fit.iterations;
  for (std::size_t j = 0; j < fit.knobs.size(); ++j) {
    const bool seconds = in_seconds(fit.knobs[j]);
    out.knobs.push_back({knob_name(fit.knobs[j]), yaml_value(fit.knobs[j], fit.before[j]),
                         yaml_value(fit.knobs[j], fit.after[j]), fit.at_limit[j], seconds});
    if (fit.at_limit[j])
      out.notes.push_back(fmt::format(
          "{} was held at the end of its range ({}): the rows ask for a value the model cannot "
          "take, so the error there is not only this knob's",
          knob_name(fit.knobs[j]),
          fit.knobs[j].kind == KnobKind::InModelFixedCost
              ? fmt::format("0 to the least standalone fixed cost, {:.4g} us",
                            fit.knobs[j].upper * 1e6)
          : seconds                                      ? std::string("0 to 1 ms")
          : fit.knobs[j].kind == KnobKind::TileOverhead ? std::string("0 to 64 steps")
          : fit.knobs[j].kind == KnobKind::DecodeKvReread ? std::string("share 0 to 1")
                                                           : std::string("fraction 0.001 to 1")));
  }
  if (fit.knobs.empty())
    out.notes.emplace_back("no knob changes the rows' predictions; nothing was fitted");
  else if (rows.size() < fit.knobs.size())
    out.notes.push_back(fmt::format("{} rows for {} knobs: the fit is underdetermined",
                                    rows.size(), fit.knobs.size()));
  return out;
}

std::optional<Prediction> price_graph(const workload::Graph& graph, mapper::FusionMode fusion,
                                      const std::string& what, const arch::HardwareModel& hw,
                                      bool by_unit, std::string& why) {
  const mapper::Schedule schedule =
      mapper::schedule_graph(graph, hw, {.precision = std::nullopt, .fusion = fusion,
                                         .search = std::nullopt});
  return price_schedule(schedule, fusion, what, hw, by_unit, why);
}

std::optional<Prediction> price_schedule(const mapper::Schedule& schedule,
                                         mapper::FusionMode fusion, const std::string& what,
                                         const arch::HardwareModel& hw, bool by_unit,
                                         std::string& why, bool eager) {
  if (!schedule.unsupported.empty()) {
    why = fmt::format("op '{}': {}", schedule.unsupported.front().name,
                      schedule.unsupported.front().reason);
    return std::nullopt;
  }
  results::RunResult run = an::AnalyticalEngine{}.run(schedule, hw, {});
  if (!run.skipped.empty()) {
    why = fmt::format("op '{}': {}", run.skipped.front().name, run.skipped.front().reason);
    return std::nullopt;
  }
  Prediction p;
  const double clock = hw.clock().value;
  for (const results::OpResult& op : run.ops) {
    PredictedPart part{
        .name = op.name,
        .unit = std::string(results::to_string(op.unit)),
        .seconds = static_cast<double>(op.cost.cycles.value) / clock,
        .compute_seconds = static_cast<double>(op.cost.compute_cycles.value) / clock,
        .dram_bytes = static_cast<double>(op.cost.dram_reads.value + op.cost.dram_writes.value),
        .bound = from_results(op.bound),
        .mapping = op.mapping};
    p.seconds += part.seconds;
    auto same = std::find_if(p.parts.begin(), p.parts.end(),
                             [&](const PredictedPart& q) { return q.unit == part.unit; });
    if (!by_unit || same == p.parts.end()) {
      if (by_unit) {
        part.name = part.unit;
        part.mapping.clear();
      }
      p.parts.push_back(std::move(part));
    } else {
      same->seconds += part.seconds;
      same->compute_seconds += part.compute_seconds;
      same->dram_bytes += part.dram_bytes;
    }
  }
  const double issue = eager ? hw.eager_issue_seconds() : 0.0;
  std::string host;
  if (issue > 0) {
    sim::add_host_issue(run, schedule, issue);
    const double waited = run.host_wait.value;
    if (waited > 0) {
      p.parts.push_back({.name = "host issue", .unit = "host", .seconds = waited,
                         .compute_seconds = 0, .dram_bytes = 0,
                         .bound = PredictedBound::Launch, .mapping = {}});
      p.seconds += waited;
    }
    host = fmt::format("; launched eagerly, {:.4g} us a kernel at the least", issue * 1e6);
  } else if (eager && !hw.spec().calibration.eager_issue_time) {
    host = std::string(kEagerUnpriced);
    p.host_unpriced = true;
  }
  p.bound = longest_part_bound(p.parts);
  std::string fused;
  if (fusion != mapper::FusionMode::None)
    // The plan is the schedule's: the engine's run does not carry it (sim/driver.cpp copies it
    // into run.json's record).
    fused = schedule.fusion.groups.empty()
                ? fmt::format("; fusion {} planned no group, so unfused", mapper::to_string(fusion))
            : schedule.fusion.groups.size() == 1
                ? fmt::format("; fusion {}: {} group", mapper::to_string(fusion),
                              mapper::to_string(schedule.fusion.groups.front().kind))
                : fmt::format("; fusion {}: {} groups", mapper::to_string(fusion),
                              schedule.fusion.groups.size());
  p.model = fmt::format("coda schedule + analytical engine: {}{}{}", what, fused, host);
  return p;
}

DataType data_type_of(DType d) {
  switch (d) {
    case DType::Fp32: return DataType::Fp32;
    case DType::Fp16: return DataType::Fp16;
    case DType::Bf16: return DataType::Bf16;
    case DType::Int8: return DataType::Int8;
    case DType::Tf32: return DataType::Tf32;
    case DType::Fp8E4M3: return DataType::Fp8E4M3;
  }
  return DataType::Fp32;
}

std::string_view to_string(CaseClass c) {
  switch (c) {
    case CaseClass::Gemm: return "gemm";
    case CaseClass::Memory: return "memory";
    case CaseClass::Attention: return "attention";
    case CaseClass::Fusion: return "fusion";
    case CaseClass::Launch: return "launch";
    case CaseClass::Collective: return "collective";
    case CaseClass::Llm: return "llm";
    case CaseClass::Training: return "training";
    case CaseClass::Network: return "network";
  }
  return "?";
}

std::string_view describe(CaseClass c) {
  switch (c) {
    case CaseClass::Gemm: return "compute-bound GEMM and conv";
    case CaseClass::Memory: return "memory-bound elementwise, norm, softmax, reduction, copy, L2";
    case CaseClass::Attention: return "attention (prefill and decode)";
    case CaseClass::Fusion: return "fused vs unfused pairs (bias+GELU, attention, softmax)";
    case CaseClass::Launch: return "kernel launch";
    case CaseClass::Collective: return "collectives among the chips of a node";
    case CaseClass::Llm: return "whole-model LLM inference (first token, per token, generation)";
    case CaseClass::Training: return "whole-model LLM training: one optimizer step on one GPU";
    case CaseClass::Network: return "whole-network CNN inference";
  }
  return "?";
}

std::span<const CaseClass> all_classes() { return kClasses; }

std::vector<CaseClass> classes_of(Kernel kernel) {
  switch (kernel) {
    case Kernel::GemmNaive:
    case Kernel::GemmTiled:
    case Kernel::GemmWmma:
    case Kernel::GemmInt8:
    case Kernel::GemmCublas:
    case Kernel::GemmCublasLt:
    case Kernel::Conv2dImplicitGemm:
    case Kernel::Conv2dCudnn: return {CaseClass::Gemm};
    case Kernel::SoftmaxNaive:
    case Kernel::SoftmaxOnline:
    case Kernel::BiasGeluFused:
    case Kernel::BiasGeluUnfused: return {CaseClass::Memory, CaseClass::Fusion};
    case Kernel::LayerNorm:
    case Kernel::RmsNorm:
    case Kernel::ReduceSum:
    case Kernel::CopyBandwidth:
    case Kernel::L2Bandwidth: return {CaseClass::Memory};
    case Kernel::AttentionUnfused:
    case Kernel::AttentionFlash: return {CaseClass::Attention, CaseClass::Fusion};
    case Kernel::DecodeAttention: return {CaseClass::Attention};
    case Kernel::LaunchOverhead: return {CaseClass::Launch};
    case Kernel::Gemm: return {CaseClass::Gemm};
    case Kernel::AttentionFwd:
    case Kernel::AttentionBwd:
    case Kernel::AttentionFwdBwd:
    case Kernel::AttentionDecode: return {CaseClass::Attention};
    case Kernel::Softmax:
    case Kernel::PublishedLayerNorm:
    case Kernel::PublishedRmsNorm:
    case Kernel::Gelu:
    case Kernel::Silu:
    case Kernel::Copy: return {CaseClass::Memory};
    case Kernel::AllReduce:
    case Kernel::AllGather:
    case Kernel::ReduceScatter: return {CaseClass::Collective};
    case Kernel::LlmPrefill:
    case Kernel::LlmDecode:
    case Kernel::LlmGenerate: return {CaseClass::Llm};
    case Kernel::LlmTrain: return {CaseClass::Training};
    case Kernel::Network: return {CaseClass::Network};
  }
  return {};
}

std::string_view to_string(PredictedBound bound) {
  switch (bound) {
    case PredictedBound::Compute: return "compute";
    case PredictedBound::Memory: return "memory";
    case PredictedBound::Launch: return "launch";
  }
  return "?";
}

bool Predictor::whole_model(Kernel kernel) {
  return kernel == Kernel::LlmPrefill || kernel == Kernel::LlmDecode ||
         kernel == Kernel::LlmGenerate || kernel == Kernel::LlmTrain || kernel == Kernel::Network;
}

bool Predictor::in_model(const Measurement& m) {
  return whole_model(m.kernel) || m.launch == Launch::Graph;
}

Predictor::Predictor(const arch::ArchSpec& spec, PublishedPricing pricing)
    : hw_(spec), standalone_(standalone_view(spec)), pricing_(std::move(pricing)) {
  if (auto view = cuda_core_view(standalone_view(spec))) cuda_cores_.emplace(std::move(*view));
}

std::optional<Prediction> Predictor::predict(const Measurement& m, std::string& why,
                                             const arch::ClusterSpec* cluster) const {
  if (info(m.kernel).published_only)
    return predict_published(m, in_model(m) ? hw_ : standalone_,
                             cuda_cores_ ? &*cuda_cores_ : nullptr, pricing_, why, cluster);
  if (m.kernel == Kernel::LaunchOverhead) return predict_launch(standalone_, why);
  if (m.kernel == Kernel::L2Bandwidth) return predict_l2(m, standalone_, why);
  const bool cuda = on_cuda_cores(m);
  if (cuda && !cuda_cores_) {
    why = fmt::format("{} computes in fp32 on the CUDA cores, and '{}' has no tensor-core and "
                      "fp32 vector unit to stand for them",
                      info(m.kernel).name, hw_.name());
    return std::nullopt;
  }
  const arch::HardwareModel& hw = cuda ? *cuda_cores_ : standalone_;
  if (const auto fixed = fixed_tile(m.kernel)) return predict_fixed_tile(m, *fixed, hw, why);
  if (m.kernel == Kernel::DecodeAttention) return predict_decode(m, standalone_, why);
  if (m.kernel == Kernel::AttentionUnfused)
    return predict_unfused_attention(m, hw, standalone_, why);
  return predict_graph(m, hw, why);
}

double relative_error(double predicted_s, double measured_s) {
  return (predicted_s - measured_s) / measured_s;
}

double spearman(std::span<const double> a, std::span<const double> b) {
  CODA_CHECK(a.size() == b.size());
  if (a.size() < 2) return kNoValue;
  const std::vector<double> ra = ranks(a), rb = ranks(b);
  const Eigen::Map<const Eigen::VectorXd> x(ra.data(), static_cast<Eigen::Index>(ra.size()));
  const Eigen::Map<const Eigen::VectorXd> y(rb.data(), static_cast<Eigen::Index>(rb.size()));
  const Eigen::VectorXd dx = x.array() - x.mean();
  const Eigen::VectorXd dy = y.array() - y.mean();
  const double denominator = std::sqrt(dx.squaredNorm() * dy.squaredNorm());
  return denominator > 0 ? dx.dot(dy) / denominator : kNoValue;
}

ErrorStats error_stats(std::span<const double> predicted_s, std::span<const double> measured_s) {
  CODA_CHECK(predicted_s.size() == measured_s.size());
  ErrorStats s;
  s.count = predicted_s.size();
  if (s.count == 0) return s;
  double sum = 0;
  std::vector<double> absolute;
  absolute.reserve(s.count);
  for (std::size_t i = 0; i < s.count; ++i) {
    const double e = relative_error(predicted_s[i], measured_s[i]);
    sum += std::abs(e);
    absolute.push_back(std::abs(e));
    if (std::isnan(s.worst_error) || std::abs(e) > std::abs(s.worst_error)) {
      s.worst_error = e;
      s.worst = i;
    }
  }
  s.mape = sum / static_cast<double>(s.count);
  // The median: the middle value, or the mean of the two middle ones.
  std::sort(absolute.begin(), absolute.end());
  const std::size_t mid = s.count / 2;
  s.median = s.count % 2 == 1 ? absolute[mid] : (absolute[mid - 1] + absolute[mid]) / 2;
  s.spearman = spearman(predicted_s, measured_s);
  return s;
}

std::optional<std::vector<std::string>> parse_subset(std::string_view text, std::string& why) {
  std::vector<std::string_view> names;
  names.reserve(kClasses.size() + kernel_catalog().size());
  for (const CaseClass c : kClasses) names.push_back(to_string(c));
  for (const KernelInfo& k : kernel_catalog()) names.push_back(k.name);
  std::vector<std::string> out;
  while (true) {
    const auto comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    if (item.empty()) {
      why = "an empty item; give class or kernel names separated by commas, e.g. gemm,launch";
      return std::nullopt;
    }
    if (std::find(names.begin(), names.end(), item) == names.end()) {
      const auto close = did_you_mean(item, names);
      why = fmt::format("'{}' is neither a class ({}) nor a kernel name{}", item,
                        "gemm, memory, attention, fusion, launch",
                        close ? fmt::format(" (did you mean '{}'?)", *close) : std::string{});
      return std::nullopt;
    }
    if (std::find(out.begin(), out.end(), item) == out.end()) out.emplace_back(item);
    if (comma == std::string_view::npos) break;
    text = text.substr(comma + 1);
  }
  return out;
}

std::optional<ValidationReport> compare(std::span<const Measurement> measurements,
                                        const arch::ArchSpec& spec,
                                        const std::vector<std::string>& subset, std::string& why,
                                        const PublishedPricing& pricing) {
  const Predictor predictor(spec, pricing);
  ValidationReport report;
  report.arch_name = spec.name;
  const auto selected = [&](const Measurement& m, const std::vector<CaseClass>& classes) {
    for (const std::string& s : subset) {
      if (s == info(m.kernel).name) return true;
      for (const CaseClass c : classes)
        if (s == to_string(c)) return true;
    }
    return false;
  };
  for (std::size_t i = 0; i < measurements.size(); ++i) {
    ComparedRow r;
    r.row = i + 1;
    r.measurement = measurements[i];
    r.classes = classes_of(r.measurement.kernel);
    const Measurement& m = r.measurement;
    const std::string note = m.note.empty() ? std::string{} : fmt::format(": {}", m.note);
    if (std::isnan(m.median_us) || m.median_us <= 0) {
      r.skipped = fmt::format("not measured{}", note);
    } else if (m.checked && !m.passed) {
      r.skipped = fmt::format("did not pass its correctness check{}", note);
    } else {
      std::string reason;
      r.prediction = predictor.predict(m, reason);
      if (r.prediction) r.error = relative_error(r.prediction->seconds, m.median_us * 1e-6);
      else r.skipped = fmt::format("coda cannot price it: {}", reason);
    }
    r.in_subset = r.prediction && selected(m, r.classes);
    report.rows.push_back(std::move(r));
  }

  if (!subset.empty()) {
    std::vector<const Measurement*> fit_rows;
    for (const ComparedRow& r : report.rows)
      if (r.in_subset) fit_rows.push_back(&r.measurement);
    if (fit_rows.empty()) {
      std::string names;
      for (const std::string& s : subset) names += (names.empty() ? "" : ",") + s;
      why = fmt::format("--calibrate-on {} selects no compared row (skipped rows are not fitted)",
                        names);
      return std::nullopt;
    }
    std::vector<FitRow> rows;
    rows.reserve(fit_rows.size());
    for (const Measurement* m : fit_rows) rows.push_back({m, 0});
    const std::vector<arch::ArchSpec> specs{spec};
    FitResult fit = fit_calibration(rows, specs, pricing);
    CalibrationResult cal;
    cal.subset = subset;
    cal.fitted = fit.fitted.front();
    cal.iterations = fit.iterations;
    cal.knobs = std::move(fit.knobs);
    cal.notes = std::move(fit.notes);
    arch::ArchSpec calibrated = spec;
    calibrated.calibration = cal.fitted;
    const Predictor after(calibrated, pricing);
    for (ComparedRow& r : report.rows) {
      if (!r.prediction) continue;
      std::string reason;
      r.calibrated = after.predict(r.measurement, reason);
      CODA_CHECK(r.calibrated.has_value());  // the knobs never make a case unpriceable
      r.calibrated_error = relative_error(r.calibrated->seconds, r.measurement.median_us * 1e-6);
    }
    std::vector<std::size_t> in, out;
    for (std::size_t i = 0; i < report.rows.size(); ++i) {
      if (!report.rows[i].prediction) continue;
      (report.rows[i].in_subset ? in : out).push_back(i);
    }
    cal.subset_before = stats_of(report.rows, in, false);
    cal.subset_after = stats_of(report.rows, in, true);
    cal.held_out_before = stats_of(report.rows, out, false);
    cal.held_out_after = stats_of(report.rows, out, true);
    report.calibration = std::move(cal);
  }

  const bool calibrated = report.calibration.has_value();
  std::vector<std::size_t> all;
  for (std::size_t i = 0; i < report.rows.size(); ++i) all.push_back(i);
  report.overall = stats_of(report.rows, all, false);
  for (const CaseClass c : kClasses) {
    GroupStats g{.name = std::string(to_string(c)), .description = std::string(describe(c)),
                 .rows = {}, .stats = {}, .calibrated = {}};
    for (std::size_t i = 0; i < report.rows.size(); ++i) {
      const auto& cs = report.rows[i].classes;
      if (std::find(cs.begin(), cs.end(), c) != cs.end()) g.rows.push_back(i);
    }
    if (g.rows.empty()) continue;
    g.stats = stats_of(report.rows, g.rows, false);
    if (calibrated) g.calibrated = stats_of(report.rows, g.rows, true);
    report.by_class.push_back(std::move(g));
  }
  for (std::size_t i = 0; i < report.rows.size(); ++i) {
    const std::string& source = report.rows[i].measurement.source;
    auto it = std::find_if(report.by_source.begin(), report.by_source.end(),
                           [&](const GroupStats& g) { return g.name == source; });
    if (it == report.by_source.end()) {
      report.by_source.push_back({.name = source, .description = {}, .rows = {}, .stats = {},
                                  .calibrated = {}});
      it = std::prev(report.by_source.end());
    }
    it->rows.push_back(i);
  }
  for (GroupStats& g : report.by_source) {
    g.stats = stats_of(report.rows, g.rows, false);
    if (calibrated) g.calibrated = stats_of(report.rows, g.rows, true);
  }
  return report;
}

}  // namespace coda::validation
