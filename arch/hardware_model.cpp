#include "arch/hardware_model.h"

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
  for (const ComputeUnitSpec& unit : spec_.compute) {
    if (!matrix_ && unit.kind != UnitKind::Vector) matrix_ = &unit;
    if (!vector_ && unit.kind == UnitKind::Vector) vector_ = &unit;
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

  if (matrix_ && matrix_->kind == UnitKind::Systolic && matrix_->array) {
    array_ = *matrix_->array;
    arrays_ = std::uint64_t{matrix_->count} * cores;
    if (spec_.word_size) {
      word_bytes_ = spec_.word_size->value;
    } else if (!matrix_->rates.empty()) {
      word_bytes_ = (bit_width(matrix_->rates.begin()->first) + 7) / 8;
    }
    CODA_CHECK(word_bytes_ > 0);
    for (std::size_t i = 0; i < 3; ++i) {
      const MemoryLevelSpec* level = innermost_core_level(spec_, kOperandRoles[i]);
      if (level == nullptr) continue;
      const std::uint64_t share = static_cast<std::uint64_t>(popcount(level->holds)) *
                                  matrix_->count;
      operand_words_[i] = level->capacity.value * level->instances / share / word_bytes_;
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

std::optional<double> HardwareModel::ridge_point(DataType precision,
                                                 const LevelSummary& level) const {
  const double peak = peak_ops_per_second(precision);
  if (peak <= 0 || !level.read_bytes_per_second) return std::nullopt;
  return peak / *level.read_bytes_per_second;
}

std::uint64_t HardwareModel::sram_words(Operand operand) const {
  return operand_words_[static_cast<std::size_t>(operand)];
}

std::uint64_t HardwareModel::working_words(Operand operand) const {
  const std::uint64_t words = sram_words(operand);
  return double_buffered() ? words / 2 : words;
}

}  // namespace coda::arch
