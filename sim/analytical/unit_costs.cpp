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

// The DRAM bandwidth kernels reach: dram.bandwidth x calibration.dram_fraction (default 1).
double dram_rate(const arch::HardwareModel& hw) {
  return hw.dram_bytes_per_second().value_or(0.0) *
         hw.spec().calibration.dram_fraction.value_or(1.0);
}

// The share of the peak rate at `precision` that kernels reach (calibration.compute_fraction).
double compute_fraction(DataType precision, const arch::HardwareModel& hw) {
  const auto& fractions = hw.spec().calibration.compute_fraction;
  const auto it = fractions.find(precision);
  return it != fractions.end() ? it->second : 1.0;
}

// The innermost core-level memory that holds inputs, and the first chip-level memory.
const arch::MemoryLevelSpec* core_input_level(const arch::ArchSpec& spec) {
  return arch::innermost_core_level(spec, arch::Holds::Inputs);
}
const arch::MemoryLevelSpec* chip_level(const arch::ArchSpec& spec) {
  for (const arch::MemoryLevelSpec& level : spec.memory)
    if (level.scope == arch::Scope::Chip) return &level;
  return nullptr;
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

GpuTileChoice choose_tile(const mapper::ScheduledOp& op, const mapper::TensorCoreWork& work,
                          const arch::HardwareModel& hw) {
  const workload::GemmView& g = work.gemm;
  const GemmShape shape{g.batch, g.m, g.n, g.k, work.input_bytes, work.output_bytes};
  return choose_gpu_tile(shape, gpu_params(op.precision, hw));
}

results::OpResult tensor_core_result(const mapper::ScheduledOp& op,
                                     const mapper::TensorCoreWork& work,
                                     const arch::HardwareModel& hw, std::string& why,
                                     bool& ok) {
  const workload::GemmView& g = work.gemm;
  const GpuTileChoice choice = choose_tile(op, work, hw);
  results::OpResult out;
  out.name = op.name;
  out.unit = "tensor_core";
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
    case Function::Softmax: return VectorFunction::Softmax;
    case Function::LayerNorm: case Function::BatchNorm: return VectorFunction::LayerNorm;
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
  const double scale = unit.count * static_cast<double>(hw.cores());
  const auto rate = unit.rates.find(precision);
  return {(rate != unit.rates.end() ? rate->second * compute_fraction(precision, hw) : 0.0) * scale,
          unit.special_ops_per_cycle * scale, hw.clock().value, dram_rate(hw)};
}

results::OpResult vector_result(const mapper::ScheduledOp& op, const mapper::VectorWork& work,
                                const arch::HardwareModel& hw, double& vector_ops) {
  const VectorParams params = vector_params(op.precision, hw);
  const auto function = vector_function(work.function);
  const VectorOpCounts counts = work.function == Function::AdamW ? kAdamW
                                : function ? vector_function_counts(*function)
                                           : VectorOpCounts{1.0, 0.0, 1, 1};
  const analytical::VectorWork vw{work.elements, counts.ops_per_element,
                                  counts.special_ops_per_element, work.reads.value,
                                  work.writes.value, counts.passes};
  const VectorCost c = evaluate_vector(vw, params);
  vector_ops = static_cast<double>(work.elements) *
               (counts.ops_per_element + counts.special_ops_per_element);

  results::OpResult out;
  out.name = op.name;
  out.unit = "vector";
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
  return out;
}

results::OpResult transfer_result(const mapper::ScheduledOp& op, const mapper::TransferWork& work,
                                  const arch::HardwareModel& hw) {
  results::OpResult out;
  out.name = op.name;
  out.unit = "transfer";
  const double bytes = static_cast<double>(work.reads.value + work.writes.value);
  const double rate = dram_rate(hw);
  set_time(out, rate > 0 ? bytes / rate : 0.0, 0.0, hw);
  out.cost.dram_reads = work.reads;
  out.cost.dram_writes = work.writes;
  out.traffic = {{"inputs", "dram", work.reads, {}}, {"outputs", "dram", {}, work.writes}};
  out.bound = results::Bound::Memory;
  return out;
}

results::OpResult collective_result(const mapper::ScheduledOp& op,
                                    const mapper::CollectiveWork& work,
                                    const arch::HardwareModel& hw) {
  results::OpResult out;
  out.name = op.name;
  out.unit = "collective";
  out.mapping = {{"ranks", work.ranks}};
  if (work.ranks <= 1 || !hw.spec().interconnect) return out;  // nothing crosses a link
  const arch::InterconnectSpec& ic = *hw.spec().interconnect;
  const LinkParams link{ic.bandwidth.value, ic.latency.value};
  CollectiveKind kind = CollectiveKind::AllReduce;
  switch (work.function) {
    case Function::ReduceScatter: kind = CollectiveKind::ReduceScatter; break;
    case Function::AllGather: kind = CollectiveKind::AllGather; break;
    case Function::SendRecv: kind = CollectiveKind::SendRecv; break;
    default: break;
  }
  CollectiveCost cost = evaluate_collective(kind, CollectiveAlgorithm::Ring, work.bytes.value,
                                            work.ranks, link);
  if (kind == CollectiveKind::AllReduce) {
    const CollectiveCost tree = evaluate_collective(kind, CollectiveAlgorithm::Tree,
                                                    work.bytes.value, work.ranks, link);
    if (tree.seconds < cost.seconds) {
      cost = tree;
      out.mapping.emplace_back("tree", 1);
    }
  }
  set_time(out, cost.seconds, 0.0, hw);
  out.mapping.emplace_back("steps", cost.steps);
  const double bandwidth_seconds = cost.bytes_sent_per_rank / link.bytes_per_second;
  out.bound = bandwidth_seconds >= cost.seconds / 2 ? results::Bound::Memory
                                                    : results::Bound::Latency;
  out.traffic = {{"collective", "link", {}, Bytes{static_cast<std::uint64_t>(
                                                cost.bytes_sent_per_rank)}}};
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
                                            const arch::HardwareModel& hw, std::string& why) {
  if (part.placement != mapper::Placement::Systolic) return evaluate_placed(part, hw, why);
  results::OpResult out = evaluate_systolic(part, hw);
  add_energy(out, part, 0.0, hw);
  return out;
}

// Decompose-attention's three ops one after another, each priced as it is (S and P through DRAM).
std::optional<results::OpResult> unfused_attention(const mapper::ScheduledOp& op,
                                                   const mapper::AttentionWork& work,
                                                   const arch::HardwareModel& hw,
                                                   std::string& why) {
  results::OpResult out;
  out.name = op.name;
  out.unit = "attention";
  out.mapping = {{"fused", 0}};
  double efficiency = 0, longest = -1;
  for (const mapper::ScheduledOp& part : work.parts) {
    auto r = price_part(part, hw, why);
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

// FlashAttention: time = launch (tensor cores) + max(matrix, vector, DRAM); see unit_costs.h.
std::optional<results::OpResult> fused_attention(const mapper::ScheduledOp& op,
                                                 const mapper::AttentionWork& work,
                                                 const arch::HardwareModel& hw, std::string& why,
                                                 double& vector_ops) {
  const double clock = hw.clock().value;
  const bool tensor_cores = hw.matrix_unit()->kind == arch::UnitKind::TensorCore;
  const double kept = work.all_pairs > 0 ? static_cast<double>(work.pairs) /
                                               static_cast<double>(work.all_pairs)
                                         : 0.0;
  double matrix_seconds = 0;
  const mapper::ScheduledOp* softmax = nullptr;
  for (const mapper::ScheduledOp& part : work.parts) {
    if (part.placement == mapper::Placement::Vector) {
      softmax = &part;
    } else if (const auto* tc = std::get_if<mapper::TensorCoreWork>(&part.work)) {
      const GpuTileChoice choice = choose_tile(part, *tc, hw);
      if (!choice.cost.feasible) {
        why = fmt::format("its part '{}': no thread-block tile fits an SM of '{}' (limited by {})",
                          part.name, hw.name(), to_string(choice.cost.limit));
        return std::nullopt;
      }
      matrix_seconds += choice.cost.compute_seconds;
    } else {
      matrix_seconds +=
          static_cast<double>(evaluate_systolic(part, hw).cost.compute_cycles.value) / clock;
    }
  }
  CODA_CHECK(softmax != nullptr);
  matrix_seconds *= kept;

  const double rescale_ops = work.block > 0 ? static_cast<double>(work.head_dim) /
                                                  static_cast<double>(work.block)
                                            : 0.0;
  const analytical::VectorWork online{work.pairs, kOnlineSoftmaxOps + rescale_ops,
                                      kOnlineSoftmaxSpecialOps, 0, 0, 1};
  const VectorCost v = evaluate_vector(online, vector_params(softmax->precision, hw));
  const double vector_seconds = std::max(v.arithmetic_seconds, v.special_seconds);
  vector_ops = static_cast<double>(work.pairs) *
               (kOnlineSoftmaxOps + rescale_ops + kOnlineSoftmaxSpecialOps);

  const double rate = dram_rate(hw);
  const double dram_bytes = static_cast<double>(work.reads.value + work.writes.value);
  const double dram_seconds = rate > 0 ? dram_bytes / rate : 0.0;
  const double launch = tensor_cores ? launch_overhead_s(hw) : 0.0;
  const double busiest = std::max({matrix_seconds, vector_seconds, dram_seconds});

  results::OpResult out;
  out.name = op.name;
  out.unit = "attention";
  out.mapping = {{"fused", 1}, {"block", work.block}, {"pairs", work.pairs}};
  out.cost.macs = op.macs;
  set_time(out, launch + busiest, std::max(matrix_seconds, vector_seconds), hw);
  out.cost.dram_reads = work.reads;
  out.cost.dram_writes = work.writes;
  // On-chip traffic: Q, K, V and O pass once through the level feeding the matrix unit; the
  // blocks' reuse inside a core (K and V re-read per query block) is not counted.
  out.cost.sram_reads = work.reads;
  out.cost.sram_writes = work.writes;
  const std::string level = tensor_cores ? "l2" : "sram";
  out.traffic = {{"inputs", level, work.reads, {}},
                 {"outputs", level, {}, work.writes},
                 {"inputs", "dram", work.reads, {}},
                 {"outputs", "dram", {}, work.writes}};
  out.mapping_efficiency = 1.0;
  const double peak = matrix_macs_per_cycle(op.precision, hw) *
                      static_cast<double>(out.cost.cycles.value);
  out.compute_utilization = peak > 0 ? static_cast<double>(op.macs) / peak : 0.0;
  out.arithmetic_intensity = dram_bytes > 0 ? static_cast<double>(op.macs) / dram_bytes : 0.0;
  out.bound = launch >= busiest                        ? results::Bound::Latency
              : dram_seconds >= std::max(matrix_seconds, vector_seconds) ? results::Bound::Memory
                                                                        : results::Bound::Compute;
  return out;
}

}  // namespace

double launch_overhead_s(const arch::HardwareModel& hw) {
  return hw.spec().calibration.launch_overhead.value_or(Seconds{GpuParams{}.launch_overhead_s})
      .value;
}

GpuParams gpu_params(DataType precision, const arch::HardwareModel& hw) {
  const arch::ArchSpec& spec = hw.spec();
  const arch::ComputeUnitSpec& unit = *hw.matrix_unit();
  const arch::TensorCoreSpec tc = unit.tensor_core.value_or(arch::TensorCoreSpec{});
  GpuParams params;
  params.sms = spec.cores;
  params.clock_hz = hw.clock().value;
  params.macs_per_cycle_per_sm =
      unit.rates.at(precision) * unit.count * compute_fraction(precision, hw);
  if (const auto* smem = core_input_level(spec))
    params.smem_bytes_per_sm = smem->capacity.value * smem->instances;
  params.registers_per_sm = tc.registers_per_core;
  params.max_blocks_per_sm = tc.max_blocks_per_core;
  params.max_warps_per_sm = tc.max_warps_per_core;
  if (const auto* l2 = chip_level(spec)) {
    params.l2_bytes = l2->capacity.value * l2->instances;
    for (const arch::LevelSummary& level : hw.levels())
      if (level.name == l2->name)
        params.l2_bytes_per_second = level.read_bytes_per_second.value_or(0);
  }
  params.dram_bytes_per_second = dram_rate(hw);
  params.launch_overhead_s = launch_overhead_s(hw);
  return params;
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
  // Reads come off the streamed operand's entry first (ifmap, or tensor cores' inputs).
  for (const bool operand_first : {true, false})
    for (results::TensorTraffic& t : result.traffic)
      if (t.level == "dram" && (!operand_first || t.tensor == "ifmap" || t.tensor == "inputs"))
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
  const arch::MemoryLevelSpec* level = via_l2 ? chip_level(hw.spec())
                                              : core_input_level(hw.spec());
  if (level)
    joules += static_cast<double>(result.cost.sram_reads.value + result.cost.sram_writes.value) *
              per_byte(table, level->name);
  joules += static_cast<double>(result.cost.dram_reads.value + result.cost.dram_writes.value) *
            per_byte(table, "dram");
  joules += table.static_power.value * static_cast<double>(result.cost.cycles.value) /
            hw.clock().value;
  result.cost.energy = Joules{joules};
}

results::OpResult evaluate_loop_nest(const mapper::ScheduledOp& op,
                                     const arch::HardwareModel& hw) {
  CODA_CHECK(op.loop_nest.has_value());
  const mapper::LoopNestPlan& plan = *op.loop_nest;
  const mapper::MappingCost& c = plan.cost;
  const bool tensor_core = op.placement == mapper::Placement::TensorCore;
  results::OpResult out;
  out.name = op.name;
  out.unit = std::string(mapper::to_string(op.placement));
  const std::uint64_t launch = tensor_core ? to_cycles(launch_overhead_s(hw), hw) : 0;
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
                                                 const arch::HardwareModel& hw,
                                                 std::string& why) {
  double vector_ops = 0;
  std::optional<results::OpResult> out;
  if (const auto* tc = std::get_if<mapper::TensorCoreWork>(&op.work)) {
    bool ok = true;
    out = tensor_core_result(op, *tc, hw, why, ok);
    if (!ok) return std::nullopt;
    remove_fused_traffic(*out, op);
  } else if (const auto* attention = std::get_if<mapper::AttentionWork>(&op.work)) {
    if (!attention->fused) return unfused_attention(op, *attention, hw, why);  // parts' energy
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

}  // namespace coda::sim::analytical
