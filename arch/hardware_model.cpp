#include "arch/hardware_model.h"

#include <algorithm>

#include "core/check.h"

namespace coda::arch {
namespace {

constexpr Holds kOperandRoles[3] = {Holds::Inputs, Holds::Weights, Holds::Outputs};

std::optional<double> per_second(const std::optional<Bandwidth>& bandwidth, Hertz clock) {
  if (!bandwidth) return std::nullopt;
  if (const auto* s = std::get_if<BytesPerSecond>(&*bandwidth)) return s->value;
  return std::get<BytesPerCycle>(*bandwidth).value * clock.value;
}

int popcount(std::uint8_t holds) {
  int n = 0;
  for (; holds != 0; holds &= static_cast<std::uint8_t>(holds - 1)) ++n;
  return n;
}

// MACs per cycle of one instance of a matrix unit at a precision (0 when unsupported).
double unit_macs_per_cycle(const ComputeUnitSpec& unit, DataType precision) {
  const auto rate = unit.rates.find(precision);
  if (rate == unit.rates.end()) return 0.0;
  if (unit.kind == UnitKind::Systolic && unit.array)
    return rate->second * static_cast<double>(unit.array->rows) *
           static_cast<double>(unit.array->cols);
  return rate->second;
}

}  // namespace

HardwareModel::HardwareModel(ArchSpec spec) : spec_(std::move(spec)) {
  CODA_CHECK(spec_.clock.value > 0);
  CODA_CHECK(spec_.cores > 0);
  for (std::size_t i = 0; i < spec_.compute.size(); ++i) {
    const UnitKind kind = spec_.compute[i].kind;
    if (matrix_ == kNoUnit && kind != UnitKind::Vector) matrix_ = i;
    if (vector_ == kNoUnit && kind == UnitKind::Vector) vector_ = i;
  }

  const std::uint64_t cores = spec_.cores;
  for (const MemoryLevelSpec& level : spec_.memory) {
    const std::uint64_t per_chip = instances_on_chip(level, spec_.cores);
    const auto chip_wide = [&](const std::optional<double>& one) -> std::optional<double> {
      if (!one) return std::nullopt;
      return *one * static_cast<double>(per_chip);
    };
    const auto read = per_second(level.read_bandwidth, spec_.clock);
    const auto write = level.write_bandwidth ? per_second(level.write_bandwidth, spec_.clock) : read;
    levels_.push_back({level.name, level.scope, per_chip, level.capacity, chip_wide(read),
                       chip_wide(write), level.holds});
  }
  const auto dram = per_second(spec_.dram.bandwidth, spec_.clock);
  levels_.push_back({"dram", Scope::Chip, 1, spec_.dram.capacity.value_or(Bytes{}), dram, dram,
                     bits(Holds::All)});
  if (spec_.dram.bandwidth)
    dram_bytes_per_cycle_ = per_cycle(*spec_.dram.bandwidth, spec_.clock).value;

  const ComputeUnitSpec* matrix = matrix_unit();
  if (matrix && matrix->kind == UnitKind::Systolic && matrix->array) {
    array_ = *matrix->array;
    arrays_ = std::uint64_t{matrix->count} * cores;
    CODA_CHECK(!spec_.word_size || spec_.word_size->value > 0);
    for (std::size_t i = 0; i < 3; ++i) {
      const MemoryLevelSpec* level = innermost_core_level(spec_, kOperandRoles[i]);
      if (level == nullptr) continue;
      const std::uint64_t share = static_cast<std::uint64_t>(popcount(level->holds)) *
                                  matrix->count;
      std::uint64_t bytes = level->capacity.value * level->instances / share;
      // Schema 1 sizes its SRAMs in whole words.
      if (spec_.word_size) bytes -= bytes % spec_.word_size->value;
      operand_bytes_[i] = bytes;
      operand_level_[i] = static_cast<std::size_t>(level - spec_.memory.data());
      operand_double_buffered_[i] = level->double_buffered;
      if (i == 0) double_buffered_ = level->double_buffered;
    }
  }
  energy_ = derive_energy(spec_);
  area_ = derive_area(spec_);
}

double HardwareModel::peak_ops_per_second(DataType precision) const {
  double macs = 0;
  for (const ComputeUnitSpec& unit : spec_.compute)
    if (unit.kind != UnitKind::Vector)
      macs += unit_macs_per_cycle(unit, precision) * unit.count;
  return 2.0 * macs * spec_.cores * spec_.clock.value;
}

double HardwareModel::peak_vector_ops_per_second(DataType precision) const {
  double ops = 0;
  for (const ComputeUnitSpec& unit : spec_.compute) {
    if (unit.kind != UnitKind::Vector) continue;
    const auto rate = unit.rates.find(precision);
    if (rate != unit.rates.end()) ops += rate->second * unit.count;
  }
  return ops * spec_.cores * spec_.clock.value;
}

std::vector<DataType> HardwareModel::matrix_precisions() const {
  std::vector<DataType> out;
  for (const auto& [name, type] : data_type_names())
    if (peak_ops_per_second(type) > 0) out.push_back(type);
  return out;
}

std::optional<double> HardwareModel::dram_bytes_per_second() const {
  return levels_.back().read_bytes_per_second;
}

bool HardwareModel::has_tensor_cores() const {
  const ComputeUnitSpec* unit = matrix_unit();
  return unit != nullptr && unit->kind == UnitKind::TensorCore;
}

namespace {

double fraction_at(const std::map<DataType, double>& fractions, DataType precision) {
  const auto it = fractions.find(precision);
  return it != fractions.end() ? it->second : 1.0;
}

bool has_path(const ComputeUnitSpec& unit, TensorPath path) {
  if (!unit.tensor_core) return false;
  const auto& paths = unit.tensor_core->paths;
  return std::find(paths.begin(), paths.end(), path) != paths.end();
}

}  // namespace

double HardwareModel::achievable_macs_per_cycle(DataType precision, TensorPath path) const {
  const ComputeUnitSpec* unit = matrix_unit();
  if (unit == nullptr) return 0.0;
  const CalibrationSpec& c = spec_.calibration;
  double macs = unit_macs_per_cycle(*unit, precision) * unit->count *
                fraction_at(c.compute_fraction, precision);
  if (unit->kind == UnitKind::TensorCore) {
    const auto issue = c.tensor_issue.find(path);
    if (issue != c.tensor_issue.end()) macs *= fraction_at(issue->second, precision);
    if (c.sustained_clock) macs *= c.sustained_clock->value / spec_.clock.value;
  }
  return macs;
}

double HardwareModel::achievable_vector_ops_per_cycle(DataType precision) const {
  const ComputeUnitSpec* unit = vector_unit();
  if (unit == nullptr) return 0.0;
  const auto rate = unit->rates.find(precision);
  if (rate == unit->rates.end()) return 0.0;
  return rate->second * unit->count * fraction_at(spec_.calibration.compute_fraction, precision);
}

std::optional<double> HardwareModel::achievable_dram_bytes_per_second() const {
  const auto peak = dram_bytes_per_second();
  if (!peak) return std::nullopt;
  return *peak * spec_.calibration.dram_fraction.value_or(1.0);
}

std::optional<double> HardwareModel::achievable_dram_bytes_per_cycle() const {
  const auto per_second = achievable_dram_bytes_per_second();
  if (!per_second) return std::nullopt;
  return *per_second / spec_.clock.value;
}

std::optional<double> HardwareModel::global_load_latency_seconds() const {
  const ComputeUnitSpec* unit = matrix_unit();
  if (unit == nullptr || !unit->tensor_core || !unit->tensor_core->global_load_latency)
    return std::nullopt;
  return in_seconds(*unit->tensor_core->global_load_latency, spec_.clock).value;
}

double HardwareModel::achievable_link_bytes_per_second() const {
  if (!spec_.interconnect) return 0.0;
  return spec_.interconnect->bandwidth.value * spec_.calibration.link_fraction.value_or(1.0);
}

double HardwareModel::kernel_fixed_seconds(KernelKind kind) const {
  const CalibrationSpec& c = spec_.calibration;
  // A kernel whose launch hides under the previous one cannot cost more than one timed alone.
  const double standalone = standalone_fixed_seconds(kind);
  return c.in_model_fixed_cost ? std::min(c.in_model_fixed_cost->value, standalone) : standalone;
}

double HardwareModel::standalone_fixed_seconds(KernelKind kind) const {
  const CalibrationSpec& c = spec_.calibration;
  if (const auto it = c.fixed_cost.find(kind); it != c.fixed_cost.end()) return it->second.value;
  if (c.launch_overhead) return c.launch_overhead->value;
  return has_tensor_cores() ? kDefaultGpuLaunchSeconds : 0.0;
}

double HardwareModel::tile_overhead_steps(KernelKind kind) const {
  const auto& steps = spec_.calibration.tile_overhead;
  const auto it = steps.find(kind);
  return it != steps.end() ? it->second : 0.0;
}

TensorPath HardwareModel::gemm_path() const {
  if (spec_.calibration.gemm_path) return *spec_.calibration.gemm_path;
  const ComputeUnitSpec* unit = matrix_unit();
  return unit != nullptr && has_path(*unit, TensorPath::Wgmma) ? TensorPath::Wgmma
                                                               : TensorPath::MmaSync;
}

AttentionImpl HardwareModel::attention_impl() const {
  if (spec_.calibration.attention) return *spec_.calibration.attention;
  const ComputeUnitSpec* unit = matrix_unit();
  return unit != nullptr && has_path(*unit, TensorPath::Wgmma) ? AttentionImpl::Fa3
                                                               : AttentionImpl::Fa2;
}

NormImpl HardwareModel::norm_impl() const {
  return spec_.calibration.norm_kernel.value_or(NormImpl::Fused);
}

std::uint32_t HardwareModel::row_cluster() const {
  return spec_.calibration.row_cluster.value_or(1);
}

DecodeAttention HardwareModel::decode_attention() const {
  return spec_.calibration.decode_attention.value_or(DecodeAttention::Grouped);
}

double HardwareModel::decode_kv_reread() const {
  return spec_.calibration.decode_kv_reread.value_or(1.0);
}

double HardwareModel::llm_step_fixed_seconds() const {
  return spec_.calibration.llm_step_fixed_cost ? spec_.calibration.llm_step_fixed_cost->value
                                               : 0.0;
}

double HardwareModel::eager_issue_seconds() const {
  return spec_.calibration.eager_issue_time ? spec_.calibration.eager_issue_time->value : 0.0;
}

double HardwareModel::attention_backward_share() const {
  return spec_.calibration.attention_backward.value_or(1.0);
}

std::optional<double> HardwareModel::unaligned_macs_per_cycle(DataType precision) const {
  const ComputeUnitSpec* unit = matrix_unit();
  const std::optional<double> share = spec_.calibration.unaligned_gemm;
  if (unit == nullptr || unit->kind != UnitKind::TensorCore || !share) return std::nullopt;
  return unit_macs_per_cycle(*unit, precision) * unit->count * *share;
}

std::optional<double> HardwareModel::attention_triton_share() const {
  return spec_.calibration.attention_triton;
}

double HardwareModel::attention_overlap() const {
  return spec_.calibration.attention_overlap.value_or(1.0);
}

std::optional<double> HardwareModel::ridge_point(DataType precision,
                                                 const LevelSummary& level) const {
  const double peak = peak_ops_per_second(precision);
  if (peak <= 0 || !level.read_bytes_per_second) return std::nullopt;
  return peak / *level.read_bytes_per_second;
}

std::optional<std::uint64_t> HardwareModel::word_bytes() const {
  if (!spec_.word_size) return std::nullopt;
  return spec_.word_size->value;
}

std::uint64_t HardwareModel::sram_bytes(Operand operand) const {
  return operand_bytes_[static_cast<std::size_t>(operand)];
}

std::uint64_t HardwareModel::working_bytes(Operand operand) const {
  const auto i = static_cast<std::size_t>(operand);
  const std::uint64_t bytes = operand_bytes_[i];
  if (!operand_double_buffered_[i]) return bytes;
  // Half, in whole words on schema 1 (as SCALE-Sim splits its SRAMs).
  const std::uint64_t word = spec_.word_size ? spec_.word_size->value : 1;
  return bytes / word / 2 * word;
}

const MemoryLevelSpec* HardwareModel::chip_cache() const {
  for (const MemoryLevelSpec& level : spec_.memory)
    if (level.scope == Scope::Chip) return &level;
  return nullptr;
}

const MemoryLevelSpec* HardwareModel::operand_level(Operand operand) const {
  const std::size_t index = operand_level_[static_cast<std::size_t>(operand)];
  return index == kNoLevel ? nullptr : &spec_.memory[index];
}

}  // namespace coda::arch
