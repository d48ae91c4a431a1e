#include "mapper/mapping.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include <fmt/format.h>

#include "core/check.h"

namespace coda::mapper {
namespace {

constexpr double kPicojoulesPerJoule = 1e12;

double per_cycle_or_unlimited(const std::optional<Bandwidth>& bandwidth, Hertz clock) {
  return bandwidth ? per_cycle(*bandwidth, clock).value : 0.0;
}

double energy_pj_per_byte(const arch::EnergyTable& table, std::string_view name) {
  for (const auto& [level, joules] : table.per_byte)
    if (level == name) return joules.value * kPicojoulesPerJoule;
  return 0.0;
}

std::string_view dim_name(const workload::Einsum& einsum, std::size_t d) {
  return d < einsum.dims.size() ? std::string_view(einsum.dims[d].name) : std::string_view("?");
}

}  // namespace

Hierarchy make_hierarchy(const arch::HardwareModel& hw, DataType precision, bool aligned) {
  const arch::ArchSpec& spec = hw.spec();
  Hierarchy h;
  h.clock_hz = spec.clock.value;
  h.precision = precision;
  const std::uint64_t cores = spec.cores;

  const arch::ComputeUnitSpec* unit = hw.matrix_unit();
  const bool schema1 = spec.schema_version == 1;
  std::uint64_t word_bytes = (bit_width(precision) + 7) / 8;
  if (schema1 && spec.word_size) word_bytes = spec.word_size->value;
  bool systolic = false;
  if (unit == nullptr) {
    h.unsupported = "the hardware has no matrix unit (systolic array or tensor core)";
    h.compute = {.unit = "", .kind = arch::UnitKind::Vector, .pes = 0, .macs_per_pe_per_cycle = 0};
  } else {
    auto rate = unit->rates.find(precision);
    if (rate == unit->rates.end() && schema1 && !unit->rates.empty()) rate = unit->rates.begin();
    const double macs = rate == unit->rates.end() ? 0.0 : rate->second;
    if (macs <= 0)
      h.unsupported = fmt::format("matrix unit '{}' does not support {}", unit->name,
                                  to_string(precision));
    systolic = unit->kind == arch::UnitKind::Systolic && unit->array.has_value();
    std::uint64_t pes_per_unit = 1;
    double macs_per_pe = macs;
    if (systolic) {
      pes_per_unit = std::uint64_t{unit->array->rows} * unit->array->cols;
    } else if (macs >= 1) {
      // Tensor cores: one lane per dense MAC per cycle; a fractional rate stays on the lane.
      pes_per_unit = static_cast<std::uint64_t>(std::floor(macs));
      macs_per_pe = macs / static_cast<double>(pes_per_unit);
    }
    // What kernels achieve of the unit's peak (HardwareModel's calibration: compute_fraction,
    // and on tensor cores the GEMM path's issue efficiency and the sustained clock; an unaligned
    // GEMM's share of the datasheet rate).
    const double peak = static_cast<double>(pes_per_unit) * macs_per_pe * unit->count;
    const std::optional<double> unaligned =
        aligned ? std::nullopt : hw.unaligned_macs_per_cycle(precision);
    if (const double achievable = unaligned.value_or(hw.achievable_macs_per_cycle(precision));
        peak > 0 && achievable > 0)
      macs_per_pe *= achievable / peak;
    const auto mac_energy = hw.energy().mac.find(precision);
    h.compute = {.unit = unit->name,
                 .kind = unit->kind,
                 .pes = pes_per_unit * unit->count * cores,
                 .macs_per_pe_per_cycle = macs_per_pe,
                 .mac_energy_pj = mac_energy == hw.energy().mac.end()
                                      ? 0.0
                                      : mac_energy->second.value * kPicojoulesPerJoule};
    if (systolic) {
      h.compute.array_rows = unit->array->rows;
      h.compute.array_cols = unit->array->cols;
      h.compute.overlapped_preload =
          unit->array->weight_preload == arch::WeightPreload::Overlapped;
    }
  }

  const bool tensor_core = unit != nullptr && unit->kind == arch::UnitKind::TensorCore;
  if (systolic) {
    h.levels.push_back({.name = "pe",
                        .capacity_bytes = 2 * word_bytes + std::max<std::uint64_t>(
                                                         word_bytes, arch::kAccumulatorBits / 8),
                        .instances = std::max<std::uint64_t>(h.compute.pes, 1),
                        .fan_out = 1,
                        .holds = arch::bits(arch::Holds::All),
                        .double_buffered = false});
  }
  std::size_t grid_level = 0;  // tensor cores: the level whose spatial loops are the grid
  for (const arch::MemoryLevelSpec& level : spec.memory) {
    if (tensor_core && grid_level == 0 && level.scope == arch::Scope::Chip && !h.levels.empty())
      grid_level = h.levels.size();
    const double read = per_cycle_or_unlimited(level.read_bandwidth, spec.clock);
    const double write =
        level.write_bandwidth ? per_cycle_or_unlimited(level.write_bandwidth, spec.clock) : read;
    h.levels.push_back({.name = level.name,
                        .capacity_bytes = level.capacity.value,
                        .instances = arch::instances_on_chip(level, spec.cores),
                        .read_bytes_per_cycle = read,
                        .write_bytes_per_cycle = write,
                        .energy_pj_per_byte = energy_pj_per_byte(hw.energy(), level.name),
                        .holds = level.holds,
                        .double_buffered = level.double_buffered});
  }
  const double dram = hw.achievable_dram_bytes_per_cycle().value_or(0.0);
  h.levels.push_back({.name = "dram",
                      .capacity_bytes = 0,
                      .instances = 1,
                      .read_bytes_per_cycle = dram,
                      .write_bytes_per_cycle = dram,
                      .shared_port = true,
                      .energy_pj_per_byte = energy_pj_per_byte(hw.energy(), "dram"),
                      .holds = arch::bits(arch::Holds::All)});

  if (tensor_core && h.levels.size() > 1) {
    // The lanes read A and B fragments from the innermost level (registers), and nothing above
    // it broadcasts to several SMs or warps; a grid larger than the SMs runs in waves.
    h.levels.front().holds = arch::bits(arch::Holds::All);
    for (std::size_t i = 1; i < h.levels.size(); ++i) h.levels[i].multicast = false;
    h.levels[grid_level == 0 ? h.levels.size() - 1 : grid_level].waves = true;
    h.block_overhead_k = hw.tile_overhead_steps(arch::KernelKind::Gemm) * kTileOverheadStepK;
  }

  for (std::size_t i = 0; i < h.levels.size(); ++i) {
    const std::uint64_t below = i == 0 ? h.compute.pes : h.levels[i - 1].instances;
    const std::uint64_t here = std::max<std::uint64_t>(h.levels[i].instances, 1);
    h.levels[i].fan_out = std::max<std::uint64_t>(below / here, 1);
  }
  return h;
}

Mapping make_mapping(std::size_t levels, std::size_t dims) {
  CODA_CHECK(levels <= kMaxLevels && dims <= kMaxDims);
  Mapping m;
  m.level_count = static_cast<std::uint8_t>(levels);
  m.dim_count = static_cast<std::uint8_t>(dims);
  for (LevelMapping& level : m.levels) {
    level.temporal.fill(1);
    level.spatial.fill(1);
    for (std::size_t d = 0; d < kMaxDims; ++d) level.order[d] = static_cast<std::uint8_t>(d);
  }
  return m;
}

void set_order(Mapping& mapping, std::size_t level,
               std::initializer_list<std::size_t> outer_to_inner) {
  CODA_CHECK(level < mapping.level_count);
  std::array<bool, kMaxDims> named{};
  for (std::size_t d : outer_to_inner) {
    CODA_CHECK(d < mapping.dim_count && !named[d]);
    named[d] = true;
  }
  std::size_t at = 0;
  auto& order = mapping.levels[level].order;
  for (std::size_t d = 0; d < mapping.dim_count; ++d)
    if (!named[d]) order[at++] = static_cast<std::uint8_t>(d);
  for (std::size_t d : outer_to_inner) order[at++] = static_cast<std::uint8_t>(d);
}

std::string_view to_string(Infeasible reason) {
  switch (reason) {
    case Infeasible::None: return "none";
    case Infeasible::Capacity: return "capacity";
    case Infeasible::SpatialFanout: return "spatial_fanout";
    case Infeasible::Coverage: return "coverage";
    case Infeasible::Shape: return "shape";
    case Infeasible::Limits: return "limits";
    case Infeasible::Unsupported: return "unsupported";
    case Infeasible::NotCanonical: return "not_canonical";
  }
  return "?";
}

std::string describe(const MappingStatus& status, const Hierarchy& hierarchy,
                     const workload::Einsum& einsum) {
  const std::string level = status.level < hierarchy.levels.size()
                                ? hierarchy.levels[status.level].name
                                : fmt::format("#{}", status.level);
  switch (status.reason) {
    case Infeasible::None: return "feasible";
    case Infeasible::Capacity:
      return fmt::format("capacity: level '{}' needs {} B per instance, has {} B", level,
                         status.needed, status.available);
    case Infeasible::SpatialFanout:
      return fmt::format("spatial_fanout: level '{}' spreads over {} children, has {}", level,
                         status.needed, status.available);
    case Infeasible::Coverage:
      return fmt::format("coverage: dim '{}' factors multiply to {}, below its extent {}",
                         dim_name(einsum, status.dim), status.needed, status.available);
    case Infeasible::Shape:
      return fmt::format("shape: the mapping does not fit the op and hierarchy (level '{}', "
                         "dim '{}'): counts, a zero factor or an order that is no permutation",
                         level, dim_name(einsum, status.dim));
    case Infeasible::Limits:
      return fmt::format("limits: more than {} levels, {} dims, {} tensors, {} ranks or {} index "
                         "terms",
                         kMaxLevels, kMaxDims, kMaxTensors, kMaxRanks, kMaxTerms);
    case Infeasible::Unsupported:
      return hierarchy.unsupported.empty()
                 ? std::string("unsupported: an access has no affine index expressions")
                 : "unsupported: " + hierarchy.unsupported;
    case Infeasible::NotCanonical:
      return "not_canonical: the index's loop order repeats another index's";
  }
  return "?";
}

std::string to_string(const Mapping& mapping, const workload::Einsum& einsum,
                      const Hierarchy& hierarchy) {
  std::string out;
  std::size_t depth = 0;
  for (std::size_t i = mapping.level_count; i-- > 0;) {
    const LevelMapping& level = mapping.levels[i];
    const std::string name =
        i < hierarchy.levels.size() ? hierarchy.levels[i].name : fmt::format("level{}", i);
    out += name + " [";
    bool first = true;
    const bool last = i + 1 == mapping.level_count;
    for (std::size_t t = 0; t < einsum.accesses.size(); ++t) {
      const std::uint8_t role = role_bit(einsum.accesses[t].role);
      const bool held =
          last || (i < hierarchy.levels.size() && (hierarchy.levels[i].holds & role) != 0);
      if (!held || (!last && ((static_cast<unsigned>(level.bypass) >> t) & 1U) != 0)) continue;
      if (!first) out += ' ';
      out += einsum.accesses[t].tensor;
      first = false;
    }
    out += "]\n";
    for (std::size_t k = 0; k < mapping.dim_count; ++k) {
      const std::size_t d = level.order[k];
      if (level.temporal[d] <= 1) continue;
      out += fmt::format("|{:{}}for {} in [0:{})\n", "", 2 * depth + 1, dim_name(einsum, d),
                         level.temporal[d]);
      ++depth;
    }
    for (std::size_t d = 0; d < mapping.dim_count; ++d) {
      if (level.spatial[d] <= 1) continue;
      out += fmt::format("|{:{}}par-for {} in [0:{})\n", "", 2 * depth + 1, dim_name(einsum, d),
                         level.spatial[d]);
      ++depth;
    }
  }
  return out;
}

}  // namespace coda::mapper
