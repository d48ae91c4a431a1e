#include "sim/analytical/unit_costs.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "sim/analytical/collective_model.h"
#include "core/check.h"
#include "sim/analytical/gpu_model.h"
#include "sim/analytical/systolic_model.h"
#include "sim/analytical/vector_model.h"

namespace coda::sim::analytical {
namespace {

using workload::Function;

std::uint64_t to_cycles(double seconds, const arch::HardwareModel& hw) {
  return static_cast<std::uint64_t>(std::ceil(seconds * hw.clock().value - 1e-9));
}

// The DRAM bandwidth kernels reach (HardwareModel: dram.bandwidth x dram_fraction); 0 = no limit.
double dram_rate(const arch::HardwareModel& hw) {
  return hw.achievable_dram_bytes_per_second().value_or(0.0);
}

// Fills the timing fields of a result from seconds: compute time and the rest as stalls.
void set_time(results::OpResult& out, double seconds, double compute_seconds,
              const arch::HardwareModel& hw) {
  const std::uint64_t total = to_cycles(seconds, hw);
  const std::uint64_t compute = std::min(total, to_cycles(compute_seconds, hw));
  out.cost.cycles = Cycles{total};
  out.cost.compute_cycles = Cycles{compute};
  out.cost.stall_cycles = Cycles{total - compute};
}

// An unaligned GEMM's mapping entry and note, in the closed form and the loop-nest model alike.
void mark_unaligned(results::OpResult& out, const arch::HardwareModel& hw) {
  out.mapping.emplace_back("unaligned", 1);
  const std::optional<double> share = hw.spec().calibration.unaligned_gemm;
  out.notes.push_back(
      share ? fmt::format("an operand's contiguous dimension is not a whole number of {} bytes: "
                          "priced at calibration.unaligned_gemm, {} of the datasheet rate",
                          arch::kGemmAlignmentBytes, *share)
            : fmt::format("an operand's contiguous dimension is not a whole number of {} bytes, "
                          "but '{}' states no calibration.unaligned_gemm: priced as an aligned "
                          "GEMM (a lower bound)",
                          arch::kGemmAlignmentBytes, hw.name()));
}

GpuTileChoice choose_tile(const mapper::ScheduledOp& op, const mapper::TensorCoreWork& work,
                          const arch::HardwareModel& hw) {
  const workload::GemmView& g = work.gemm;
  const GemmShape shape{g.batch,
                        g.m,
                        g.n,
                        g.k,
                        work.input_bytes,
                        work.output_bytes,
                        static_cast<double>(work.a_bytes) / static_cast<double>(g.batch),
                        work.b_element_bytes};
  GpuParams params = gpu_params(op.precision, hw, hw.gemm_path());
  if (!op.own_kernel) params.launch_overhead_s = 0;
  if (!work.aligned) {
    if (const std::optional<double> macs = hw.unaligned_macs_per_cycle(op.precision))
      params.macs_per_cycle_per_sm = *macs;
  }
  return choose_gpu_tile(shape, params);
}

results::OpResult tensor_core_result(const mapper::ScheduledOp& op,
                                     const mapper::TensorCoreWork& work,
                                     const arch::HardwareModel& hw, std::string& why,
                                     bool& ok) {
  const workload::GemmView& g = work.gemm;
  const GpuTileChoice choice = choose_tile(op, work, hw);
  results::OpResult out;
  out.name = op.name;
  out.unit = results::OpUnit::TensorCore;
  if (!choice.cost.feasible) {
    why = fmt::format("no thread-block tile fits an SM of '{}' (limited by {})", hw.name(),
                      to_string(choice.cost.limit));
    ok = false;
    return out;
  }
  const GpuKernelCost& c = choice.cost;
  const BlockTile& t = choice.tile;
  out.mapping = {{"tile_m", t.tile_m},   {"tile_n", t.tile_n}, {"tile_k", t.tile_k},
                 {"warps", t.warps},     {"stages", t.stages}, {"blocks", c.blocks},
                 {"blocks_per_sm", c.blocks_per_sm}, {"waves", c.waves}};
  if (!work.aligned) mark_unaligned(out, hw);
  out.cost.macs = op.macs;
  set_time(out, c.seconds, c.compute_seconds, hw);
  const std::uint64_t c_bytes = g.batch * g.m * g.n * work.output_bytes;
  const auto dram = static_cast<std::uint64_t>(std::llround(c.dram_bytes));
  out.cost.dram_writes = Bytes{std::min(dram, c_bytes)};
  out.cost.dram_reads = Bytes{dram - out.cost.dram_writes.value};
  const auto l2 = static_cast<std::uint64_t>(std::llround(c.l2_bytes));
  out.cost.sram_writes = Bytes{std::min(l2, c_bytes)};
  out.cost.sram_reads = Bytes{l2 - out.cost.sram_writes.value};
  out.traffic = {{"inputs", "l2", out.cost.sram_reads, {}},
                 {"outputs", "l2", {}, out.cost.sram_writes},
                 {"inputs", "dram", out.cost.dram_reads, {}},
                 {"outputs", "dram", {}, out.cost.dram_writes}};
  out.mapping_efficiency = c.wave_efficiency;
  out.compute_utilization = c.utilization;
  out.arithmetic_intensity =
      dram > 0 ? static_cast<double>(op.macs) / static_cast<double>(dram) : 0;
  out.bound = c.bound == GpuBound::Compute  ? results::Bound::Compute
              : c.bound == GpuBound::Launch ? results::Bound::Latency
                                            : results::Bound::Memory;
  return out;
}

std::optional<VectorFunction> vector_function(Function f) {
  switch (f) {
    case Function::Add: case Function::Sub: case Function::Sum: case Function::Mean:
    case Function::Max: case Function::MaxPool: case Function::AvgPool:
      return VectorFunction::Add;  // one add or compare per point
    case Function::Mul: case Function::Div: return VectorFunction::Mul;
    case Function::Relu: return VectorFunction::Relu;
    case Function::Gelu: return VectorFunction::Gelu;
    case Function::Silu: return VectorFunction::Silu;
    case Function::Sigmoid: return VectorFunction::Sigmoid;
    case Function::Tanh: return VectorFunction::Tanh;
    case Function::Exp: return VectorFunction::Exp;
    case Function::Rsqrt: case Function::Cos: case Function::Sin: return VectorFunction::Special;
    // Neg and Pow (a square) take the default: one op per element.
    case Function::Softmax: return VectorFunction::Softmax;
    case Function::LayerNorm: return VectorFunction::LayerNorm;
    case Function::BatchNorm: return VectorFunction::ScaleShift;  // inference (builders.h)
    case Function::RmsNorm: return VectorFunction::RmsNorm;
    case Function::Quantize: return VectorFunction::Quantize;
    case Function::Dequantize: return VectorFunction::Dequantize;
    default: return std::nullopt;
  }
}

// AdamW per parameter (Loshchilov & Hutter 2019, Algorithm 2): m and v updates (2 FMAs + 1
// mul), two bias corrections (2 muls), the step (1 div, 1 add, 1 FMA with the learning rate),
// weight decay (1 FMA): 9 ops and one square root.
constexpr VectorOpCounts kAdamW{9.0, 1.0, 1, 1};

VectorParams vector_params(DataType precision, const arch::HardwareModel& hw) {
  const arch::ComputeUnitSpec& unit = *hw.vector_unit();
  const double cores = static_cast<double>(hw.cores());
  return {hw.achievable_vector_ops_per_cycle(precision) * cores,
          unit.special_ops_per_cycle * unit.count * cores, hw.clock().value, dram_rate(hw)};
}

// PyTorch's native LayerNorm and RMSNorm kernel runs one row per block of 128 threads
// (layer_norm_kernel.cu: threads (warp size, num_threads() / warp size), num_threads() = 4 warps,
// aten/src/ATen/native/cuda/thread_constants.h).
constexpr std::uint32_t kTorchNormWarpsPerRow = 4;

// Passes a softmax or norm makes over its input: one when the rows a core holds at once fit its
// on-chip memory, else the function's own count (a statistics pass, then a normalising pass that
// reads the input again from DRAM). A fused kernel (calibration.norm_kernel: fused) holds the one
// row it works on, across calibration.row_cluster cores' memory where it spreads a row over a
// thread-block cluster (QuACK). PyTorch's norm kernel (torch) reads each row twice from global
// memory, and the second read stays on chip only while the rows of all the blocks resident on a
// core fit there: its resident warps / 4 blocks, at most its resident blocks.
std::uint32_t row_passes(const mapper::VectorWork& work, std::uint32_t passes,
                         const arch::HardwareModel& hw) {
  if (passes <= 1 || work.row_elements == 0 || work.elements == 0) return passes;
  const arch::MemoryLevelSpec* level = hw.core_level(arch::Holds::Inputs);
  if (level == nullptr) return passes;
  const double row_bytes = static_cast<double>(work.reads.value) /
                           static_cast<double>(work.elements) *
                           static_cast<double>(work.row_elements);
  double rows_held = 1;
  double cores = static_cast<double>(hw.row_cluster());
  const bool norm = work.function == Function::LayerNorm || work.function == Function::RmsNorm;
  if (norm && hw.norm_impl() == arch::NormImpl::Torch) {
    cores = 1;
    const arch::ComputeUnitSpec* unit = hw.matrix_unit();
    if (unit != nullptr && unit->tensor_core)
      rows_held = static_cast<double>(std::max<std::uint32_t>(
          1, std::min(unit->tensor_core->max_warps_per_core / kTorchNormWarpsPerRow,
                      unit->tensor_core->max_blocks_per_core)));
  }
  return rows_held * row_bytes <=
                 cores * static_cast<double>(level->capacity.value * level->instances)
             ? 1
             : passes;
}

results::OpResult vector_result(const mapper::ScheduledOp& op, const mapper::VectorWork& work,
                                const arch::HardwareModel& hw, double& vector_ops) {
  const VectorParams params = vector_params(op.precision, hw);
  const auto function = vector_function(work.function);
  VectorOpCounts counts = work.function == Function::AdamW ? kAdamW
                          : function ? vector_function_counts(*function)
                                     : VectorOpCounts{1.0, 0.0, 1, 1};
  counts.passes = row_passes(work, counts.passes, hw);
  const analytical::VectorWork vw{work.elements, counts.ops_per_element,
                                  counts.special_ops_per_element, work.reads.value,
                                  work.writes.value, counts.passes};
  const VectorCost c = evaluate_vector(vw, params);
  vector_ops = static_cast<double>(work.elements) *
               (counts.ops_per_element + counts.special_ops_per_element);

  results::OpResult out;
  out.name = op.name;
  out.unit = results::OpUnit::Vector;
  out.mapping = {{"elements", work.elements}, {"passes", counts.passes}};
  set_time(out, c.seconds, std::max(c.arithmetic_seconds, c.special_seconds), hw);
  out.cost.dram_reads = Bytes{work.reads.value * counts.passes};
  out.cost.dram_writes = work.writes;
  out.traffic = {{"inputs", "dram", out.cost.dram_reads, {}},
                 {"outputs", "dram", {}, out.cost.dram_writes}};
  const double peak = params.ops_per_cycle * static_cast<double>(out.cost.cycles.value);
  out.compute_utilization = peak > 0 ? static_cast<double>(work.elements) *
                                           counts.ops_per_element / peak
                                     : 0.0;
  out.mapping_efficiency = 1.0;
  out.bound = c.bound == VectorBound::Memory ? results::Bound::Memory : results::Bound::Compute;
  add_fixed_cost(out, op_fixed_seconds(op, hw), hw);
  return out;
}

results::OpResult transfer_result(const mapper::ScheduledOp& op, const mapper::TransferWork& work,
                                  const arch::HardwareModel& hw) {
  results::OpResult out;
  out.name = op.name;
  out.unit = results::OpUnit::Transfer;
  const double bytes = static_cast<double>(work.reads.value + work.writes.value);
  const double rate = dram_rate(hw);
  set_time(out, rate > 0 ? bytes / rate : 0.0, 0.0, hw);
  out.cost.dram_reads = work.reads;
  out.cost.dram_writes = work.writes;
  out.traffic = {{"inputs", "dram", work.reads, {}}, {"outputs", "dram", {}, work.writes}};
  out.bound = results::Bound::Memory;
  add_fixed_cost(out, op_fixed_seconds(op, hw), hw);
  return out;
}

results::OpResult collective_result(const mapper::ScheduledOp& op,
                                    const mapper::CollectiveWork& work,
                                    const arch::HardwareModel& hw) {
  results::OpResult out;
  out.name = op.name;
  out.unit = results::OpUnit::Collective;
  out.mapping = {{"ranks", work.ranks}};
  if (work.ranks <= 1 || !hw.spec().interconnect) return out;  // nothing crosses a link
  CollectiveKind kind = CollectiveKind::AllReduce;
  switch (work.function) {
    case Function::ReduceScatter: kind = CollectiveKind::ReduceScatter; break;
    case Function::AllGather: kind = CollectiveKind::AllGather; break;
    case Function::SendRecv: kind = CollectiveKind::SendRecv; break;
    case Function::AllToAll:
      kind = CollectiveKind::AllToAll;
      break;
    default: break;
  }
  const std::optional<PricedCollective> priced =
      price_collective(kind, work.bytes.value, work.ranks, std::nullopt, hw);
  CODA_CHECK(priced.has_value());  // no algorithm forced: some pair or the alpha-beta model
  const PricedCollective& c = *priced;
  set_time(out, c.cost.seconds, 0.0, hw);
  if (c.algorithm == CollectiveAlgorithm::Tree) out.mapping.emplace_back("tree", 1);
  if (c.algorithm == CollectiveAlgorithm::Nvls) out.mapping.emplace_back("nvls", 1);
  if (c.protocol) out.mapping.emplace_back(to_string(*c.protocol), 1);
  out.mapping.emplace_back("steps", c.cost.steps);
  const double bandwidth_seconds = c.cost.bytes_sent_per_rank / hw.achievable_link_bytes_per_second();
  out.bound = bandwidth_seconds >= c.cost.seconds / 2 ? results::Bound::Memory
                                                      : results::Bound::Latency;
  out.traffic = {{"collective", "link", {}, Bytes{static_cast<std::uint64_t>(
                                                c.cost.bytes_sent_per_rank)}}};
  add_fixed_cost(out, op_fixed_seconds(op, hw), hw);
  return out;
}

// Per-byte energy of a named level of the energy table; 0 when it has none.
double per_byte(const arch::EnergyTable& table, std::string_view name) {
  for (const auto& [level, joules] : table.per_byte)
    if (level == name) return joules.value;
  return 0.0;
}

// The matrix unit's MACs per cycle over the chip at `precision` (a schema-1 array: its PEs).
double matrix_macs_per_cycle(DataType precision, const arch::HardwareModel& hw) {
  const double peak = hw.peak_ops_per_second(precision) / 2.0 / hw.clock().value;
  return peak > 0 ? peak : static_cast<double>(hw.processing_elements());
}

// FlashAttention-2's online softmax (Dao 2023, Algorithm 1), per kept query-key pair: scale the
// score by 1/sqrt(d), update the running row max, subtract it, multiply by log2 e, exp2
// (special), add to the running row sum = 5 ops + 1 special; and once per key block of Bc keys,
// rescale the d accumulators of O by exp(m_old - m_new): d / Bc ops per pair. Per-row work (the
// correction factor's exponential, the final division of O by the row sum) is not counted, as
// vector_model.h counts no per-row work.
constexpr double kOnlineSoftmaxOps = 5.0;
constexpr double kOnlineSoftmaxSpecialOps = 1.0;

std::optional<results::OpResult> price_part(const mapper::ScheduledOp& part,
                                            const arch::HardwareModel& hw, std::string& why,
                                            SystolicMemo* memo) {
  if (part.placement != mapper::Placement::Systolic) return evaluate_placed(part, hw, why, memo);
  results::OpResult out = memo != nullptr ? memo->evaluate(part) : evaluate_systolic(part, hw);
  add_energy(out, part, 0.0, hw);
  return out;
}

// Decompose-attention's three ops one after another, each priced as it is (S and P through DRAM).
std::optional<results::OpResult> unfused_attention(const mapper::ScheduledOp& op,
                                                   const mapper::AttentionWork& work,
                                                   const arch::HardwareModel& hw,
                                                   std::string& why, SystolicMemo* memo) {
  results::OpResult out;
  out.name = op.name;
  out.unit = results::OpUnit::Attention;
  out.mapping = {{"fused", 0}};
  double efficiency = 0, longest = -1;
  for (const mapper::ScheduledOp& part : work.parts) {
    auto r = price_part(part, hw, why, memo);
    if (!r) {
      why = fmt::format("its part '{}': {}", part.name, why);
      return std::nullopt;
    }
    out.cost = out.cost + r->cost;
    const std::string prefix = part.name.starts_with(op.name + ".")
                                   ? part.name.substr(op.name.size() + 1)
                                   : part.name;
    for (results::TensorTraffic t : r->traffic) {
      t.tensor = prefix + "." + t.tensor;
      out.traffic.push_back(std::move(t));
    }
    const double cycles = static_cast<double>(r->cost.cycles.value);
    efficiency += r->mapping_efficiency * cycles;
    if (cycles > longest) {
      longest = cycles;
      out.bound = r->bound;
    }
  }
  const double cycles = static_cast<double>(out.cost.cycles.value);
  out.mapping_efficiency = cycles > 0 ? efficiency / cycles : 0.0;
  const double peak = matrix_macs_per_cycle(op.precision, hw) * cycles;
  out.compute_utilization = peak > 0 ? static_cast<double>(out.cost.macs) / peak : 0.0;
  const double dram = static_cast<double>(out.cost.dram_reads.value + out.cost.dram_writes.value);
  out.arithmetic_intensity = dram > 0 ? static_cast<double>(out.cost.macs) / dram : 0.0;
  return out;
}

// Fused attention on a systolic array (or any matrix unit without tensor cores): the array does
// the two GEMMs of the kept pairs (its compute cycles), the vector unit the online softmax; they
// are separate hardware and overlap, as does DRAM.
double systolic_matrix_seconds(const mapper::AttentionWork& work, const arch::HardwareModel& hw) {
  double seconds = 0;
  for (const mapper::ScheduledOp& part : work.parts)
    if (part.placement != mapper::Placement::Vector)
      seconds += static_cast<double>(evaluate_systolic(part, hw).cost.compute_cycles.value) /
                 hw.clock().value;
  const double kept = work.all_pairs > 0 ? static_cast<double>(work.pairs) /
                                               static_cast<double>(work.all_pairs)
                                         : 0.0;
  return seconds * kept;
}

std::optional<results::OpResult> fused_attention(const mapper::ScheduledOp& op,
                                                 const mapper::AttentionWork& work,
                                                 const arch::HardwareModel& hw, std::string& why,
                                                 double& vector_ops) {
  const mapper::ScheduledOp* softmax = nullptr;
  for (const mapper::ScheduledOp& part : work.parts)
    if (part.placement == mapper::Placement::Vector) softmax = &part;
  CODA_CHECK(softmax != nullptr);
  AttentionShape shape{.batch = work.batch,
                       .heads = work.heads,
                       .kv_heads = work.kv_heads,
                       .q_len = work.q_len,
                       .kv_len = work.kv_len,
                       .head_dim = work.head_dim,
                       .value_dim = work.value_dim,
                       .pairs = work.pairs,
                       .block = work.block,
                       .precision = op.precision,
                       .softmax_precision = softmax->precision,
                       .reads = static_cast<double>(work.reads.value),
                       .writes = static_cast<double>(work.writes.value),
                       .backward = work.backward,
                       .softcap = work.softcap};
  const arch::AttentionImpl impl = hw.attention_impl();
  std::optional<double> systolic;
  // Backward: the parts' four gradient GEMMs and the recompute of S = Q K^T, one more of their
  // size (FlashAttention-2's backward, Dao 2023, Algorithm 2: 5 d MACs a pair for their 4 d).
  if (!hw.has_tensor_cores())
    systolic = systolic_matrix_seconds(work, hw) * (work.backward ? 5.0 / 4.0 : 1.0);
  const FusedAttentionCost c =
      fused_attention_cost(shape, impl, hw, op.own_kernel, systolic, why);
  if (!why.empty()) return std::nullopt;
  vector_ops = c.vector_ops;

  results::OpResult out;
  out.name = op.name;
  out.unit = results::OpUnit::Attention;
  out.mapping = {{"fused", 1}, {"block", work.block}, {"pairs", work.pairs}};
  if (hw.has_tensor_cores() && !c.fa2_forward)
    out.mapping.emplace_back(std::string(arch::to_string(impl)), 1);
  out.cost.macs = op.macs;
  set_time(out, c.seconds, c.compute_seconds, hw);
  // per_head decode's K/V re-reads from DRAM (0 otherwise) and the backward helpers' reads come
  // on top of the op's reads, the helpers' writes on top of its writes.
  const Bytes dram_reads{work.reads.value +
                         static_cast<std::uint64_t>(std::llround(std::max(
                             0.0, c.dram_bytes - shape.reads - shape.writes - c.helper_writes)))};
  const Bytes dram_writes{work.writes.value +
                          static_cast<std::uint64_t>(std::llround(c.helper_writes))};
  if (c.per_head) out.mapping.emplace_back("per_head", 1);
  if (c.fa2_forward) {
    out.mapping.emplace_back("fa2_forward", 1);
    out.mapping.emplace_back("splits", c.splits);
  }
  // The backward's two helper kernels, which the tile engine runs after the main one.
  if (c.helper_bytes > 0) {
    out.mapping.emplace_back(
        std::string(kHelperReadBytes),
        static_cast<std::uint64_t>(std::llround(c.helper_bytes - c.helper_writes)));
    out.mapping.emplace_back(std::string(kHelperWriteBytes),
                             static_cast<std::uint64_t>(std::llround(c.helper_writes)));
  }
  out.cost.dram_reads = dram_reads;
  out.cost.dram_writes = dram_writes;
  // On-chip traffic: Q, K, V and O pass once through the level feeding the matrix unit; the
  // blocks' reuse inside a core (K and V re-read per query block) is not counted.
  out.cost.sram_reads = work.reads;
  out.cost.sram_writes = work.writes;
  const std::string level = hw.has_tensor_cores() ? "l2" : "sram";
  out.traffic = {{"inputs", level, work.reads, {}},
                 {"outputs", level, {}, work.writes},
                 {"inputs", "dram", dram_reads, {}},
                 {"outputs", "dram", {}, dram_writes}};
  out.mapping_efficiency = c.wave_efficiency;
  const double peak = matrix_macs_per_cycle(op.precision, hw) *
                      static_cast<double>(out.cost.cycles.value);
  out.compute_utilization = peak > 0 ? static_cast<double>(op.macs) / peak : 0.0;
  const double dram_bytes = c.dram_bytes;
  out.arithmetic_intensity = dram_bytes > 0 ? static_cast<double>(op.macs) / dram_bytes : 0.0;
  out.bound = c.bound;
  return out;
}

}  // namespace

GpuParams gpu_params(DataType precision, const arch::HardwareModel& hw, arch::TensorPath path) {
  const arch::ArchSpec& spec = hw.spec();
  const arch::ComputeUnitSpec& unit = *hw.matrix_unit();
  const arch::TensorCoreSpec tc = unit.tensor_core.value_or(arch::TensorCoreSpec{});
  GpuParams params;
  params.sms = spec.cores;
  params.clock_hz = hw.clock().value;
  params.macs_per_cycle_per_sm = hw.achievable_macs_per_cycle(precision, path);
  if (const auto* smem = hw.core_level(arch::Holds::Inputs)) {
    params.smem_bytes_per_sm = smem->capacity.value * smem->instances;
    for (const arch::LevelSummary& level : hw.levels())
      if (level.name == smem->name && level.read_bytes_per_second && level.instances > 0)
        params.smem_bytes_per_cycle = *level.read_bytes_per_second /
                                      static_cast<double>(level.instances) *
                                      static_cast<double>(smem->instances) / params.clock_hz;
  }
  params.registers_per_sm = tc.registers_per_core;
  params.max_blocks_per_sm = tc.max_blocks_per_core;
  params.max_warps_per_sm = tc.max_warps_per_core;
  if (const auto* l2 = hw.chip_cache()) {
    params.l2_bytes = l2->capacity.value * l2->instances;
    for (const arch::LevelSummary& level : hw.levels())
      if (level.name == l2->name)
        params.l2_bytes_per_second = level.read_bytes_per_second.value_or(0);
  }
  params.dram_bytes_per_second = dram_rate(hw);
  params.global_load_latency_s = hw.global_load_latency_seconds().value_or(0.0);
  params.launch_overhead_s = hw.kernel_fixed_seconds(arch::KernelKind::Gemm);
  params.tile_overhead_steps = hw.tile_overhead_steps(arch::KernelKind::Gemm);
  params.raster_group = spec.calibration.raster_group.value_or(0);
  if (path == arch::TensorPath::Wgmma)
    params.cluster_multicast = spec.calibration.cluster_multicast.value_or(1);
  return params;
}

double op_fixed_seconds(const mapper::ScheduledOp& op, const arch::HardwareModel& hw) {
  if (!op.own_kernel) return 0.0;
  using arch::KernelKind;
  switch (op.placement) {
    case mapper::Placement::Systolic:
    case mapper::Placement::TensorCore: return hw.kernel_fixed_seconds(KernelKind::Gemm);
    case mapper::Placement::Vector: return hw.kernel_fixed_seconds(KernelKind::Vector);
    case mapper::Placement::Transfer: {
      const auto* t = std::get_if<mapper::TransferWork>(&op.work);
      const bool moves = t != nullptr && t->reads.value + t->writes.value > 0;
      return moves ? hw.kernel_fixed_seconds(KernelKind::Copy) : 0.0;  // a reshape is free
    }
    case mapper::Placement::Collective: {
      const auto* c = std::get_if<mapper::CollectiveWork>(&op.work);
      const bool crosses = c != nullptr && c->ranks > 1 && hw.spec().interconnect.has_value();
      return crosses ? hw.kernel_fixed_seconds(KernelKind::Collective) : 0.0;
    }
    case mapper::Placement::Attention: {
      const auto* a = std::get_if<mapper::AttentionWork>(&op.work);
      if (a == nullptr) return 0.0;
      if (a->fused) return hw.kernel_fixed_seconds(KernelKind::Attention);
      double sum = 0;
      for (const mapper::ScheduledOp& part : a->parts) sum += op_fixed_seconds(part, hw);
      return sum;
    }
  }
  return 0.0;
}

std::optional<PricedCollective> price_collective(CollectiveKind kind, std::uint64_t bytes,
                                                 std::uint32_t ranks,
                                                 std::optional<CollectiveAlgorithm> algorithm,
                                                 const arch::HardwareModel& hw) {
  CODA_CHECK(hw.spec().interconnect.has_value() && ranks >= 1);
  const arch::InterconnectSpec& ic = *hw.spec().interconnect;
  const bool tuned = kind == CollectiveKind::AllReduce || kind == CollectiveKind::ReduceScatter ||
                     kind == CollectiveKind::AllGather;
  if (ic.nccl && tuned && ranks >= 2) {
    const auto choice = evaluate_nccl(kind, bytes, ranks,
                                      nccl_tuning(*ic.nccl, hw.achievable_link_bytes_per_second()),
                                      algorithm, std::nullopt);
    if (!choice) return std::nullopt;
    return PricedCollective{choice->cost, choice->algorithm, choice->protocol};
  }
  const LinkParams link{hw.achievable_link_bytes_per_second(), ic.latency.value};
  PricedCollective out;
  // All-to-all is one direct exchange (collective_model.h); the rest default to the ring.
  out.algorithm = algorithm.value_or(kind == CollectiveKind::AllToAll ? CollectiveAlgorithm::Direct
                                                                      : CollectiveAlgorithm::Ring);
  out.cost = evaluate_collective(kind, out.algorithm, bytes, ranks, link);
  if (!algorithm && kind == CollectiveKind::AllReduce) {
    const CollectiveCost tree =
        evaluate_collective(kind, CollectiveAlgorithm::Tree, bytes, ranks, link);
    if (tree.seconds < out.cost.seconds) {
      out.cost = tree;
      out.algorithm = CollectiveAlgorithm::Tree;
    }
  }
  return out;
}

Fa2ForwardTile fa2_forward_tile(std::uint64_t head_dim, std::uint64_t smem_bytes_per_sm,
                                bool split_kv) {
  // Dao-AILab/flash-attention csrc/flash_attn/src/flash_fwd_launch_template.h (the copy PyTorch
  // builds, aten/src/ATen/native/transformers/cuda/flash_attn/): run_mha_fwd_splitkv_dispatch
  // takes kBlockM 64 and kBlockN 256 / 128 / 64 for head dims <= 64 / <= 128 / above;
  // run_mha_fwd_hdim{32,...,192} take kBlockM 128 on sm80 and sm90 (sm86/89's smaller tiles
  // aside), kBlockN 128 at head dims <= 64 and 64 above; hdim 256 takes 64 x 64 where an SM's
  // shared memory reaches 4 x 256 x (64 + 2 x 64) bytes (H100; two 64 x 64 blocks of 2-byte
  // tiles), else 128 x 64 (A100).
  if (split_kv) return {64, head_dim <= 64 ? 256u : head_dim <= 128 ? 128u : 64u};
  if (head_dim > 192 && smem_bytes_per_sm >= 4 * head_dim * (64 + 2 * 64)) return {64, 64};
  return {128, head_dim <= 64 ? 128u : 64u};
}

std::uint64_t fa2_num_splits(std::uint64_t query_blocks, std::uint64_t sms,
                             std::uint64_t key_blocks, std::uint64_t max_splits) {
  // flash_api.cpp, num_splits_heuristic: one split when the grid fills 80% of the SMs; else the
  // wave efficiency n / ceil(n) of n = query_blocks x splits / SMs for each eligible split count
  // up to min(max_splits, SMs, key_blocks) (a count is eligible when it changes the key blocks
  // per split), and the smallest whose efficiency reaches 85% of the best.
  if (sms == 0 || static_cast<double>(query_blocks) >= 0.8 * static_cast<double>(sms)) return 1;
  const std::uint64_t most = std::min({max_splits, sms, key_blocks});
  const auto per_split = [&](std::uint64_t s) { return (key_blocks + s - 1) / s; };
  const auto eligible = [&](std::uint64_t s) { return s == 1 || per_split(s) != per_split(s - 1); };
  const auto efficiency = [&](std::uint64_t s) {
    const double waves = static_cast<double>(query_blocks * s) / static_cast<double>(sms);
    return waves / std::ceil(waves);
  };
  double best = 0;
  for (std::uint64_t s = 1; s <= most; ++s)
    if (eligible(s)) best = std::max(best, efficiency(s));
  for (std::uint64_t s = 1; s <= most; ++s)
    if (eligible(s) && efficiency(s) >= 0.85 * best) return s;
  return 1;
}

FusedAttentionCost fused_attention_cost(const AttentionShape& shape, arch::AttentionImpl impl,
                                        const arch::HardwareModel& hw, bool own_kernel,
                                        std::optional<double> systolic_matrix_seconds,
                                        std::string& why) {
  FusedAttentionCost out;
  const double clock = hw.clock().value;
  const double cores = static_cast<double>(hw.cores());
  // A grid of `grid` blocks in waves over the SMs, and a block's key-block steps with its
  // prologue and epilogue (calibration.tile_overhead.attention more steps) over the steps alone.
  const auto wave_efficiency = [&](double grid) {
    return grid / (std::ceil(grid / cores) * cores);
  };
  const auto tile_overhead = [&](double steps) {
    return (steps + hw.tile_overhead_steps(arch::KernelKind::Attention)) / steps;
  };
  const double pairs = static_cast<double>(shape.pairs);
  const double d = static_cast<double>(shape.head_dim);
  const double e = shape.value_dim > 0 ? static_cast<double>(shape.value_dim) : d;
  const double block = static_cast<double>(std::max<std::uint64_t>(shape.block, 1));
  // The matrix work: forward Q K^T and P V over the kept pairs (d + e MACs a pair, 2 d without a
  // value dim of its own); backward recomputes S = Q K^T and does dV = P^T dO, dP = dO V^T,
  // dQ = dS K, dK = dS^T Q (3 d + 2 e MACs a pair: FlashAttention-2's backward, Dao 2023,
  // Algorithm 2).
  const double macs_per_pair = shape.backward ? 3.0 * d + 2.0 * e : d + e;
  // Decode attention of the per_head class (arch::DecodeAttention): one thread block per query
  // head walks its KV head's cache with fp32 dot products on the CUDA cores, so its MACs run at
  // the vector unit's fp32 rate (blocks of one query head in waves over the SMs), the softmax on
  // the same warps, and a GQA group's KV head is loaded once per query head: group - 1 re-reads
  // of K and V, decode_kv_reread of them from DRAM.
  const bool decode = !systolic_matrix_seconds && !shape.backward && shape.q_len == 1;
  const bool per_head = decode && hw.decode_attention() == arch::DecodeAttention::PerHead;
  const bool fa2_forward = decode && hw.decode_attention() == arch::DecodeAttention::Fa2Forward;
  const std::uint64_t group =
      std::max<std::uint64_t>(shape.heads / std::max<std::uint64_t>(shape.kv_heads, 1), 1);
  const std::uint64_t element_bytes = (bit_width(shape.precision) + 7) / 8;
  // K and V of every (sequence, KV head), for the classes that load them once per query head.
  const double kv_bytes = static_cast<double>(shape.batch * shape.kv_heads) *
                          static_cast<double>(shape.kv_len) * (d + e) *
                          static_cast<double>(element_bytes);
  double reread_bytes = 0;
  double combine_bytes = 0;  // fa2_forward's split-KV partial outputs, written and read back
  double softmax_rows = 1;   // rows the softmax runs per query (fa2_forward: its padded tile)
  double key_block = block;  // keys a block's softmax rescale covers
  out.per_head = per_head;
  out.fa2_forward = fa2_forward;
  if (fa2_forward) {
    // FlashAttention-2's forward kernel with one query per (sequence, query head): its grid is
    // (query blocks, batch, heads) of the kernel's tile, padded to the tile's kBlockM rows; a
    // grid under 80% of the SMs runs the split-KV kernel instead (kBlockM 64) with the splits
    // FlashAttention's num_splits_heuristic picks, and a combine kernel after it.
    double rate = hw.achievable_macs_per_cycle(shape.precision, arch::TensorPath::MmaSync);
    if (rate <= 0) {
      why = fmt::format("the tensor cores of '{}' do not run {}", hw.name(),
                        to_string(shape.precision));
      return out;
    }
    const auto* smem = hw.core_level(arch::Holds::Inputs);
    const std::uint64_t smem_per_sm = smem != nullptr ? smem->capacity.value * smem->instances : 0;
    const Fa2ForwardTile whole = fa2_forward_tile(shape.head_dim, smem_per_sm, false);
    const Fa2ForwardTile split = fa2_forward_tile(shape.head_dim, smem_per_sm, true);
    const std::uint64_t sms = hw.cores();
    const std::uint64_t query_blocks = shape.batch * shape.heads * ((shape.q_len + 63) / 64);
    const std::uint64_t key_blocks = (shape.kv_len + split.block_n - 1) / split.block_n;
    out.splits = fa2_num_splits(query_blocks, sms, key_blocks, 128);
    const Fa2ForwardTile& tile = out.splits > 1 ? split : whole;
    const double splits = static_cast<double>(out.splits);
    const double padding = static_cast<double>(tile.block_m);  // rows a query costs
    softmax_rows = padding;
    key_block = static_cast<double>(tile.block_n);
    const double grid = static_cast<double>(shape.batch * shape.heads) * splits;
    out.wave_efficiency = wave_efficiency(grid);
    // A block walks its split's share of the key blocks (flash_fwd_splitkv_kernel's
    // n_blocks_per_split = ceil(key blocks / splits)).
    const std::uint64_t tile_key_blocks = (shape.kv_len + tile.block_n - 1) / tile.block_n;
    const double steps = static_cast<double>(
        std::max<std::uint64_t>((tile_key_blocks + out.splits - 1) / out.splits, 1));
    const double overhead = tile_overhead(steps);
    out.matrix_seconds =
        pairs * padding * macs_per_pair * overhead / (rate * cores * clock * out.wave_efficiency);
    reread_bytes = kv_bytes * static_cast<double>(group - 1) * hw.decode_kv_reread();
    if (out.splits > 1)  // oaccum (fp32, d wide) and the log-sum-exp a split a query
      combine_bytes = 2.0 * splits * static_cast<double>(shape.batch * shape.heads) *
                      static_cast<double>(shape.q_len) * (e + 1.0) * 4.0;
  } else if (per_head) {
    const double fma = hw.achievable_vector_ops_per_cycle(DataType::Fp32);
    if (fma <= 0) {
      why = fmt::format("'{}' has no fp32 vector rate for per_head decode attention", hw.name());
      return out;
    }
    const double grid = static_cast<double>(shape.batch * shape.heads);
    out.wave_efficiency = wave_efficiency(grid);
    out.matrix_seconds = pairs * macs_per_pair / (fma * cores * clock * out.wave_efficiency);
    reread_bytes = kv_bytes * static_cast<double>(group - 1) * hw.decode_kv_reread();
  } else if (systolic_matrix_seconds) {
    out.matrix_seconds = *systolic_matrix_seconds;
    out.wave_efficiency = 1.0;
  } else {
    const arch::TensorPath path = impl == arch::AttentionImpl::Fa3 ? arch::TensorPath::Wgmma
                                                                   : arch::TensorPath::MmaSync;
    double rate = hw.achievable_macs_per_cycle(shape.precision, path);
    if (rate <= 0) {
      why = fmt::format("the tensor cores of '{}' do not run {}", hw.name(),
                        to_string(shape.precision));
      return out;
    }
    if (shape.backward) rate *= hw.attention_backward_share();
    if (impl == arch::AttentionImpl::Triton) {
      const std::optional<double> share = hw.attention_triton_share();
      if (!share) {
        why = fmt::format("'{}' states no calibration.attention_triton, the triton attention "
                          "class's share of fa2's matrix rate",
                          hw.name());
        return out;
      }
      rate *= *share;
    }
    // Queries of one kv head (GQA packs a group's heads together) are padded to the MMA's m:
    // mma.sync's m16, wgmma's m64 (PTX ISA, "Matrix shape"). A thread block takes `block`
    // queries; blocks spread over the SMs in waves, and a grid smaller than one wave splits the
    // keys across blocks (split-KV, as FlashAttention's decoding path does), at most one split
    // per key block.
    const arch::ComputeUnitSpec& unit = *hw.matrix_unit();
    const std::uint64_t mma_m = path == arch::TensorPath::Wgmma
                                    ? 64
                                    : unit.tensor_core.value_or(arch::TensorCoreSpec{}).mma_m;
    const std::uint64_t rows = group * shape.q_len;
    const std::uint64_t padded = (rows + mma_m - 1) / mma_m * mma_m;
    const double padding = static_cast<double>(padded) / static_cast<double>(rows);
    const double blocks = static_cast<double>(shape.batch * shape.kv_heads) *
                          std::ceil(static_cast<double>(padded) / block);
    const double key_blocks = std::ceil(static_cast<double>(shape.kv_len) / block);
    const double splits = blocks >= cores ? 1.0 : std::min(std::ceil(cores / blocks), key_blocks);
    const double grid = blocks * splits;
    out.wave_efficiency = wave_efficiency(grid);
    // A block walks its (kept) keys in key blocks: the mean over blocks is the kept pairs per
    // query / block, split over the splits; its prologue and epilogue cost tile_overhead more.
    const double queries = static_cast<double>(shape.batch * shape.heads * shape.q_len);
    const double steps = std::max(pairs / queries / block / splits, 1.0);
    const double overhead = tile_overhead(steps);
    out.matrix_seconds = pairs * padding * macs_per_pair * overhead /
                         (rate * cores * clock * out.wave_efficiency);
  }
  // The online softmax on the vector unit, in fp32 where it can (FlashAttention keeps S and the
  // row statistics in fp32): forward kOnlineSoftmaxOps + d / Bc rescale ops and one exp per pair;
  // backward recomputes P = exp(S - L) (2 ops and the exp) and dS = P (dP - D) (2 ops) and
  // converts dS to the input type (1): the same 5 ops and one exp, without the rescale.
  const DataType vector_type = hw.achievable_vector_ops_per_cycle(DataType::Fp32) > 0
                                   ? DataType::Fp32
                                   : shape.softmax_precision;
  const double rescale = shape.backward ? 0.0 : e / key_block;
  // A soft cap, cap x tanh(S / cap): tanh's ops (vector_model.h) and the multiply by the cap
  // (the division folds into the 1 / sqrt(d) scale); the backward recomputes it and multiplies
  // dS by its derivative 1 - t^2 (3 ops).
  const VectorOpCounts tanh = vector_function_counts(VectorFunction::Tanh);
  const double cap_ops =
      shape.softcap ? tanh.ops_per_element + 1.0 + (shape.backward ? 3.0 : 0.0) : 0.0;
  const double cap_special = shape.softcap ? tanh.special_ops_per_element : 0.0;
  const double softmax_pairs = pairs * softmax_rows;
  const VectorWork online{.elements = static_cast<std::uint64_t>(std::llround(softmax_pairs)),
                          .ops_per_element = kOnlineSoftmaxOps + rescale + cap_ops,
                          .special_ops_per_element = kOnlineSoftmaxSpecialOps + cap_special};
  const VectorCost v = evaluate_vector(online, vector_params(vector_type, hw));
  out.vector_seconds = std::max(v.arithmetic_seconds, v.special_seconds);
  out.vector_ops = softmax_pairs *
                   (kOnlineSoftmaxOps + rescale + cap_ops + kOnlineSoftmaxSpecialOps + cap_special);
  // fa2 runs a block's softmax between its two GEMMs on the same warps; fa3 (and a systolic
  // array beside its vector unit) overlaps them: max(matrix, softmax), and on fa3 the part of
  // the shorter that attention_overlap leaves unhidden.
  // fa3 hides attention_overlap of the shorter under the longer.
  const double hidden = systolic_matrix_seconds            ? 1.0
                        : per_head || fa2_forward          ? 0.0
                        : impl == arch::AttentionImpl::Fa3 ? hw.attention_overlap()
                                                           : 0.0;
  out.compute_seconds = std::max(out.matrix_seconds, out.vector_seconds) +
                        (1.0 - hidden) * std::min(out.matrix_seconds, out.vector_seconds);
  const double rate = dram_rate(hw);
  out.dram_bytes = shape.reads + reread_bytes + combine_bytes + shape.writes;
  out.dram_seconds = rate > 0 ? out.dram_bytes / rate : 0.0;
  // Split-KV adds its combine kernel (FlashAttention-2's flash_fwd_splitkv_combine_kernel), a
  // reduction of the splits' partial outputs: a vector kernel's fixed cost.
  out.fixed_seconds =
      own_kernel ? hw.kernel_fixed_seconds(arch::KernelKind::Attention) +
                       (out.splits > 1 ? hw.kernel_fixed_seconds(arch::KernelKind::Vector) : 0.0)
                 : 0.0;
  // The backward of FlashAttention-2 and -3 and cuDNN's (the fa2 and fa3 classes) accumulates dQ
  // in fp32 (dq_accum) and runs a helper kernel on each side of the main one: before it, one
  // that reads dO and O for D = rowsum(dO o O) (fp32 a query row) and clears dq_accum; after it,
  // one that reads dq_accum and writes dQ in the input type (Dao-AILab/flash-attention
  // csrc/flash_attn/src/flash_bwd_launch_template.h, run_flash_bwd_seqk_parallel:
  // flash_bwd_dot_do_o_kernel<Clear_dQaccum = true> and flash_bwd_convert_dq_kernel;
  // hopper/flash_bwd_launch_template.h: flash_bwd_preprocess and flash_bwd_postprocess; cuDNN's
  // compute_dot_do_o and convert_dq_to_16bits, named in coda_torch_bench_h200's kernel lists).
  // Each streams its bytes at the achievable DRAM rate after the main kernel, with a vector
  // kernel's fixed cost. The main kernel's bytes stay as the op states them.
  if (shape.backward && !systolic_matrix_seconds &&
      (impl == arch::AttentionImpl::Fa2 || impl == arch::AttentionImpl::Fa3)) {
    const double rows = static_cast<double>(shape.batch * shape.heads * shape.q_len);
    const double eb = static_cast<double>(element_bytes);
    const double pre_reads = rows * 2.0 * e * eb, pre_writes = rows * (d * 4.0 + 4.0);
    const double post_reads = rows * d * 4.0, post_writes = rows * d * eb;
    out.helper_writes = pre_writes + post_writes;
    out.helper_bytes = pre_reads + post_reads + out.helper_writes;
    out.dram_bytes += out.helper_bytes;
    out.helper_seconds =
        (rate > 0 ? out.helper_bytes / rate : 0.0) +
        (own_kernel ? kBackwardHelperKernels * hw.kernel_fixed_seconds(arch::KernelKind::Vector)
                    : 0.0);
  }
  const double busiest = std::max(out.compute_seconds, out.dram_seconds);
  out.seconds = out.fixed_seconds + busiest + out.helper_seconds;
  out.bound = out.fixed_seconds >= busiest             ? results::Bound::Latency
              : out.dram_seconds >= out.compute_seconds ? results::Bound::Memory
                                                        : results::Bound::Compute;
  return out;
}

void remove_fused_traffic(results::OpResult& result, const mapper::ScheduledOp& op) {
  std::uint64_t reads = std::min(op.dram_reads_saved.value, result.cost.dram_reads.value);
  std::uint64_t writes = std::min(op.dram_writes_saved.value, result.cost.dram_writes.value);
  if (reads == 0 && writes == 0) return;
  result.cost.dram_reads.value -= reads;
  result.cost.dram_writes.value -= writes;
  const auto take = [](Bytes& from, std::uint64_t& left) {
    const std::uint64_t taken = std::min(from.value, left);
    from.value -= taken;
    left -= taken;
  };
  // Reads come off the entries of the roles held on chip first (a cached weight off the
  // weights'), then off the streamed operand's (ifmap, or tensor cores' inputs), then any.
  const auto held = [&](const results::TensorTraffic& t) {
    return (op.on_chip.input && (t.tensor == "ifmap" || t.tensor == "inputs")) ||
           (op.on_chip.weight && (t.tensor == "filter" || t.tensor == "weights"));
  };
  const auto streamed = [](const results::TensorTraffic& t) {
    return t.tensor == "ifmap" || t.tensor == "inputs";
  };
  for (const int pass : {0, 1, 2})
    for (results::TensorTraffic& t : result.traffic)
      if (t.level == "dram" && (pass == 2 || (pass == 0 ? held(t) : streamed(t))))
        take(t.reads, reads);
  for (results::TensorTraffic& t : result.traffic)
    if (t.level == "dram") take(t.writes, writes);
  const double dram =
      static_cast<double>(result.cost.dram_reads.value + result.cost.dram_writes.value);
  result.arithmetic_intensity = dram > 0 ? static_cast<double>(result.cost.macs) / dram : 0.0;
}

void add_energy(results::OpResult& result, const mapper::ScheduledOp& op, double vector_ops,
                const arch::HardwareModel& hw) {
  const arch::EnergyTable& table = hw.energy();
  double joules = 0;
  if (const auto mac = table.mac.find(op.precision); mac != table.mac.end())
    joules += static_cast<double>(result.cost.macs) * mac->second.value;
  joules += vector_ops * table.vector_op.value;
  // On-chip bytes cross the level that feeds the matrix unit (systolic: the input buffer; tensor
  // cores: the L2, which the model counts).
  const bool via_l2 = op.placement == mapper::Placement::TensorCore ||
                     (op.placement == mapper::Placement::Attention && hw.matrix_unit() &&
                      hw.matrix_unit()->kind == arch::UnitKind::TensorCore);
  const arch::MemoryLevelSpec* level =
      via_l2 ? hw.chip_cache() : hw.core_level(arch::Holds::Inputs);
  if (level)
    joules += static_cast<double>(result.cost.sram_reads.value + result.cost.sram_writes.value) *
              per_byte(table, level->name);
  joules += static_cast<double>(result.cost.dram_reads.value + result.cost.dram_writes.value) *
            per_byte(table, "dram");
  joules += table.static_power.value * static_cast<double>(result.cost.cycles.value) /
            hw.clock().value;
  result.cost.energy = Joules{joules};
}

void add_fixed_cost(results::OpResult& out, double fixed_seconds, const arch::HardwareModel& hw) {
  if (fixed_seconds <= 0) return;
  const double rest = static_cast<double>(out.cost.cycles.value);
  const std::uint64_t fixed = to_cycles(fixed_seconds, hw);
  out.cost.cycles.value += fixed;
  out.cost.stall_cycles.value += fixed;
  if (static_cast<double>(fixed) > rest) out.bound = results::Bound::Latency;
}

results::OpResult evaluate_loop_nest(const mapper::ScheduledOp& op,
                                     const arch::HardwareModel& hw) {
  CODA_CHECK(op.loop_nest.has_value());
  const mapper::LoopNestPlan& plan = *op.loop_nest;
  const mapper::MappingCost& c = plan.cost;
  results::OpResult out;
  out.name = op.name;
  out.unit = op.placement == mapper::Placement::TensorCore ? results::OpUnit::TensorCore
                                                          : results::OpUnit::Systolic;
  const std::uint64_t launch = to_cycles(op_fixed_seconds(op, hw), hw);
  const auto nest = static_cast<std::uint64_t>(std::ceil(c.cycles - 1e-9));
  const std::uint64_t compute =
      std::min(nest, static_cast<std::uint64_t>(std::ceil(c.compute_cycles - 1e-9)));
  out.cost.macs = op.macs;
  out.cost.cycles = Cycles{nest + launch};
  out.cost.compute_cycles = Cycles{compute};
  out.cost.stall_cycles = Cycles{nest + launch - compute};
  out.bound = launch > nest                             ? results::Bound::Latency
              : c.bottleneck == mapper::kComputeBound ? results::Bound::Compute
                                                        : results::Bound::Memory;
  // Each level's traffic per tensor; the PE registers' (folded into the MAC energy) is left out.
  const std::size_t dram = c.level_count - 1U;
  for (std::size_t i = 0; i <= dram; ++i) {
    if (plan.levels[i] == "pe") continue;
    const mapper::LevelCost& level = c.levels[i];
    for (std::size_t t = 0; t < c.tensor_count; ++t) {
      const auto reads = Bytes{static_cast<std::uint64_t>(std::llround(level.tensors[t].read_bytes))};
      const auto writes =
          Bytes{static_cast<std::uint64_t>(std::llround(level.tensors[t].write_bytes))};
      if (reads.value == 0 && writes.value == 0) continue;
      out.traffic.push_back({plan.tensors[t], plan.levels[i], reads, writes});
      (i == dram ? out.cost.dram_reads : out.cost.sram_reads) += reads;
      (i == dram ? out.cost.dram_writes : out.cost.sram_writes) += writes;
    }
    out.mapping.emplace_back(plan.levels[i] + "_tile_bytes",
                             static_cast<std::uint64_t>(std::llround(level.tile_bytes)));
  }
  out.mapping.emplace_back("used_pes", c.used_pes);
  // The hierarchy ran it at the unaligned rate (mapper::make_hierarchy).
  if (const auto* gemm = std::get_if<mapper::TensorCoreWork>(&op.work); gemm && !gemm->aligned)
    mark_unaligned(out, hw);
  out.loop_nest = plan.loop_nest;
  out.mapping_efficiency = c.spatial_utilization;
  out.compute_utilization =
      compute > 0 ? c.macs / (plan.peak_macs_per_cycle * static_cast<double>(compute)) : 0.0;
  const double dram_before =
      static_cast<double>(out.cost.dram_reads.value + out.cost.dram_writes.value);
  remove_fused_traffic(out, op);
  const double dram_after =
      static_cast<double>(out.cost.dram_reads.value + out.cost.dram_writes.value);
  // The loop nest's energy with the DRAM bytes fusion kept on chip taken off, plus static power.
  constexpr double kJoulesPerPicojoule = 1e-12;
  const double dynamic_pj = c.energy_pj - (dram_before - dram_after) * plan.dram_pj_per_byte;
  out.cost.energy = Joules{dynamic_pj * kJoulesPerPicojoule +
                           hw.energy().static_power.value *
                               static_cast<double>(out.cost.cycles.value) / hw.clock().value};
  out.arithmetic_intensity = dram_after > 0 ? static_cast<double>(op.macs) / dram_after : 0.0;
  return out;
}

std::optional<results::OpResult> evaluate_placed(const mapper::ScheduledOp& op,
                                                 const arch::HardwareModel& hw, std::string& why,
                                                 SystolicMemo* memo) {
  double vector_ops = 0;
  std::optional<results::OpResult> out;
  if (const auto* tc = std::get_if<mapper::TensorCoreWork>(&op.work)) {
    bool ok = true;
    out = tensor_core_result(op, *tc, hw, why, ok);
    if (!ok) return std::nullopt;
    remove_fused_traffic(*out, op);
  } else if (const auto* attention = std::get_if<mapper::AttentionWork>(&op.work)) {
    if (!attention->fused) return unfused_attention(op, *attention, hw, why, memo);  // parts' energy
    out = fused_attention(op, *attention, hw, why, vector_ops);
    if (!out) return std::nullopt;
  } else if (const auto* vector = std::get_if<mapper::VectorWork>(&op.work)) {
    out = vector_result(op, *vector, hw, vector_ops);
  } else if (const auto* transfer = std::get_if<mapper::TransferWork>(&op.work)) {
    out = transfer_result(op, *transfer, hw);
  } else if (const auto* collective = std::get_if<mapper::CollectiveWork>(&op.work)) {
    out = collective_result(op, *collective, hw);
  } else {
    why = "the schedule gave this op no work to price";
    return std::nullopt;
  }
  add_energy(*out, op, vector_ops, hw);
  return out;
}

double host_issued_seconds(std::span<const double> kernels, double issue) {
  double end = 0;
  std::size_t issued = 0;
  for (const double seconds : kernels) {
    if (seconds <= 0) continue;
    end = std::max(end, static_cast<double>(issued) * issue) + seconds;
    ++issued;
  }
  return end;
}

}  // namespace coda::sim::analytical
