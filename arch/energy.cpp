#include "arch/energy.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>

#include <fmt/format.h>

#include "core/check.h"

namespace coda::arch {
namespace {

constexpr double kPico = 1e-12;
constexpr double kSquareMicronsPerSquareMm = 1e6;

// ---- precisions ----

enum class Family : std::uint8_t { Integer, Float };

// What the arithmetic of a precision is sized by: an integer's width, or a float's significand
// bits including the implicit one (fp32 24, tf32 and fp16 11, bf16 8, e4m3 4, e5m2 3).
struct Sizing {
  Family family;
  double bits;
};

Sizing sizing_of(DataType type) {
  switch (type) {
    case DataType::Int4: return {Family::Integer, 4};
    case DataType::Int8: return {Family::Integer, 8};
    case DataType::Int32: return {Family::Integer, 32};
    case DataType::Fp32: return {Family::Float, 24};
    case DataType::Tf32:  // fp32's range with fp16's significand
    case DataType::Fp16: return {Family::Float, 11};
    case DataType::Bf16: return {Family::Float, 8};
    case DataType::Fp8E4M3: return {Family::Float, 4};
    case DataType::Fp8E5M2: return {Family::Float, 3};
  }
  CODA_CHECK(false);
  return {Family::Integer, 0};
}

// Horowitz ISSCC 2014 measured these four; the others are derived.
bool measured_by_horowitz(DataType type) {
  return type == DataType::Int8 || type == DataType::Int32 || type == DataType::Fp16 ||
         type == DataType::Fp32;
}

// Two published points (operand bits, value) of one operation in one family.
struct Anchors {
  double bits_lo, value_lo, bits_hi, value_hi;
};

// The value at `bits` on the power law value = c * bits^k through both anchors.
double power_law(const Anchors& a, double bits) {
  if (bits == a.bits_lo) return a.value_lo;
  if (bits == a.bits_hi) return a.value_hi;
  const double k = std::log(a.value_hi / a.value_lo) / std::log(a.bits_hi / a.bits_lo);
  return a.value_lo * std::pow(bits / a.bits_lo, k);
}

// Horowitz ISSCC 2014, 45 nm, 0.9 V: energy in pJ and area in um2 of one operation.
//                                   lo bits  lo value  hi bits  hi value
constexpr Anchors kIntMultPj{8, 0.2, 32, 3.1};
constexpr Anchors kIntAddPj{8, 0.03, 32, 0.1};
constexpr Anchors kFloatMultPj{11, 1.1, 24, 3.7};   // fp16, fp32
constexpr Anchors kFloatAddPj{11, 0.4, 24, 0.9};
constexpr Anchors kIntMultUm2{8, 282, 32, 3495};
constexpr Anchors kIntAddUm2{8, 36, 32, 137};
constexpr Anchors kFloatMultUm2{11, 1640, 24, 7700};
constexpr Anchors kFloatAddUm2{11, 1360, 24, 4184};

struct MultAdd {
  double mult, add;
};

MultAdd mac_energy_pj(DataType type) {
  const Sizing op = sizing_of(type);
  if (op.family == Family::Integer)
    return {power_law(kIntMultPj, op.bits), power_law(kIntAddPj, op.bits)};
  return {power_law(kFloatMultPj, op.bits), power_law(kFloatAddPj, op.bits)};
}

MultAdd mac_area_um2(DataType type) {
  const Sizing op = sizing_of(type);
  if (op.family == Family::Integer)
    return {power_law(kIntMultUm2, op.bits), power_law(kIntAddUm2, op.bits)};
  return {power_law(kFloatMultUm2, op.bits), power_law(kFloatAddUm2, op.bits)};
}

// How a precision's base figure was obtained, for the notes.
std::string base_rule(DataType type, std::string_view unit, MultAdd parts) {
  if (measured_by_horowitz(type))
    return fmt::format("{} mult {:.4g} + add {:.4g} {} at 45 nm (Horowitz ISSCC 2014)",
                       to_string(type), parts.mult, parts.add, unit);
  const Sizing op = sizing_of(type);
  if (op.family == Family::Integer)
    return fmt::format("{} mult {:.4g} + add {:.4g} {} at 45 nm, on the power laws in operand "
                       "width through Horowitz's int8 and int32 figures",
                       to_string(type), parts.mult, parts.add, unit);
  return fmt::format("{} mult {:.4g} + add {:.4g} {} at 45 nm, on the power laws in significand "
                     "bits ({:g}) through Horowitz's fp16 and fp32 figures",
                     to_string(type), parts.mult, parts.add, unit, op.bits);
}

// ---- SRAM ----

// 64-bit access energy of three array sizes at 45 nm (Horowitz) and 7 nm (Jouppi et al., ISCA
// 2021, Table 2), in pJ.
struct SramPoint {
  double log2_bytes;
  double pj_45nm;
  double pj_7nm;
};
constexpr std::array<SramPoint, 3> kSramPoints{{
    {13, 10, 7.5},   // 8 KiB
    {15, 20, 8.5},   // 32 KiB
    {20, 100, 14},   // 1 MiB
}};

double sram_access_pj(const SramPoint& p, double nm) {
  return power_law({kBaseTechnologyNm, p.pj_45nm, 7, p.pj_7nm}, nm);
}

// High-density 6T SRAM bitcells, (node nm, um2), largest node first.
struct Bitcell {
  double nm;
  double um2;
};
constexpr std::array<Bitcell, 7> kBitcells{{
    {65, 0.57},    // Intel 65 nm (2004 70 Mb SRAM announcement)
    {45, 0.346},   // Intel 45 nm (Mistry et al., IEDM 2007)
    {22, 0.1},     // IBM 22 nm (2008 SRAM announcement)
    {16, 0.07},    // TSMC 16 nm (Chen et al., JSSC 2015)
    {7, 0.027},    // TSMC N7 (Chang et al., ISSCC 2017)
    {5, 0.021},    // TSMC N5
    {3, 0.021},    // TSMC N3E (IEDM 2022): no shrink from N5
}};

double bitcell_um2(double nm) {
  if (nm >= kBitcells.front().nm)
    return kBitcells.front().um2 * std::pow(nm / kBitcells.front().nm, 2.0);
  if (nm <= kBitcells.back().nm) return kBitcells.back().um2;
  for (std::size_t i = 0; i + 1 < kBitcells.size(); ++i) {
    const Bitcell& big = kBitcells[i];
    const Bitcell& small = kBitcells[i + 1];
    if (nm <= big.nm && nm >= small.nm)
      return power_law({small.nm, small.um2, big.nm, big.um2}, nm);
  }
  CODA_CHECK(false);
  return 0;
}

// ---- DRAM ----

struct DramFigure {
  double pj_per_bit;
  std::string_view source;
};

DramFigure dram_figure(DramTechnology technology) {
  switch (technology) {
    case DramTechnology::Ddr3:
      return {1300.0 / 64,
              "Horowitz ISSCC 2014: 1.3-2.6 nJ per 64-bit DDR3 access, low end (20.3 pJ/bit)"};
    case DramTechnology::Ddr4:
      return {1300.0 / 64,
              "Jouppi et al. ISCA 2021 Table 2: 1300 pJ per 64-bit DDR3/4 access (20.3 pJ/bit)"};
    case DramTechnology::Ddr5:
      return {1300.0 / 64,
              "derived: no published DDR5 figure found, so DDR4's 20.3 pJ/bit (Jouppi et al. "
              "ISCA 2021 Table 2) is used"};
    case DramTechnology::Lpddr4:
      return {4.0,
              "Dally, Turakhia and Han, 'Domain-Specific Hardware Accelerators', CACM 2020: "
              "about 4 pJ/bit for LPDDR4"};
    case DramTechnology::Lpddr4x:
    case DramTechnology::Lpddr5:
    case DramTechnology::Lpddr5x:
      return {4.0,
              "derived: no published figure found for this generation, so LPDDR4's 4 pJ/bit "
              "(Dally et al. CACM 2020) is used; its lower I/O voltage makes this an upper "
              "bound"};
    case DramTechnology::Gddr6:
      return {480.0 / 64,
              "Jouppi et al. ISCA 2021 Table 2: 350-480 pJ per 64-bit GDDR6 access, high end "
              "(7.5 pJ/bit)"};
    case DramTechnology::Hbm2:
      return {3.97,
              "O'Connor et al., 'Fine-Grained DRAM', MICRO 2017: 3.97 pJ/bit for HBM2"};
    case DramTechnology::Hbm2e:
      return {4.3, "Moon et al. (SK hynix), IEDM 2023: about 4.3 pJ/bit for HBM2E"};
    case DramTechnology::Hbm3:
    case DramTechnology::Hbm3e:
      return {4.3,
              "derived: no published figure found for this generation, so HBM2E's 4.3 pJ/bit "
              "(Moon et al., IEDM 2023) is used"};
    case DramTechnology::Unspecified:
      return {1300.0 / 64,
              "derived: dram.technology not stated, so DDR4's 20.3 pJ/bit (Jouppi et al. ISCA "
              "2021 Table 2) is used; state dram.technology or energy.per_byte.dram"};
  }
  CODA_CHECK(false);
  return {0, ""};
}

// ---- the spec ----

bool is_matrix_unit(const ComputeUnitSpec& unit) {
  return unit.kind == UnitKind::Systolic || unit.kind == UnitKind::TensorCore;
}

// MACs per cycle of one instance of a matrix unit at one of its rates.
double lanes(const ComputeUnitSpec& unit, double rate) {
  if (unit.kind == UnitKind::Systolic) {
    CODA_CHECK(unit.array.has_value());
    return static_cast<double>(unit.array->rows) * unit.array->cols * rate;
  }
  return rate;
}

// MACs of one instance as the config counts them: a systolic array's PEs, or a tensor core's
// highest rate.
double counted_macs(const ComputeUnitSpec& unit) {
  if (unit.kind == UnitKind::Systolic) return lanes(unit, 1);
  double best = 0;
  for (const auto& [type, rate] : unit.rates) best = std::max(best, rate);
  return best;
}

double chip_instances(const MemoryLevelSpec& level, std::uint32_t cores) {
  return static_cast<double>(instances_on_chip(level, cores));
}

std::string fmt_area(double mm2) { return to_string(SquareMillimetres{mm2}); }

}  // namespace

// ---- public rules ----

Joules base_mac_energy_45nm(DataType type) {
  const MultAdd e = mac_energy_pj(type);
  return Joules{(e.mult + e.add) * kPico};
}

double energy_scale(double from_nm, double to_nm) {
  CODA_CHECK(from_nm > 0 && to_nm > 0);
  return std::pow(to_nm / from_nm, kEnergyScalingExponent);
}

Joules sram_energy_per_byte(Bytes capacity, double nm) {
  CODA_CHECK(nm > 0);
  const std::uint64_t bytes = std::max<std::uint64_t>(capacity.value, 1);
  const double log2_bytes = std::log2(static_cast<double>(bytes));
  const SramPoint* lo = &kSramPoints[0];
  const SramPoint* hi = &kSramPoints[1];
  double per_access_pj = 0;
  if (log2_bytes <= kSramPoints.front().log2_bytes) {
    per_access_pj = sram_access_pj(kSramPoints.front(), nm);
  } else {
    if (log2_bytes > kSramPoints[1].log2_bytes) {
      lo = &kSramPoints[1];
      hi = &kSramPoints[2];
    }
    const double e_lo = sram_access_pj(*lo, nm);
    const double e_hi = sram_access_pj(*hi, nm);
    const double t = (log2_bytes - lo->log2_bytes) / (hi->log2_bytes - lo->log2_bytes);
    per_access_pj = e_lo + t * (e_hi - e_lo);  // t > 1 above 1 MiB: the slope extended
  }
  return Joules{per_access_pj / 8 * kPico};  // 64 bits = 8 bytes per access
}

Joules dram_energy_per_byte(DramTechnology technology) {
  return Joules{dram_figure(technology).pj_per_bit * 8 * kPico};
}

std::string_view dram_energy_source(DramTechnology technology) {
  return dram_figure(technology).source;
}

SquareMillimetres base_mac_area_45nm(DataType type) {
  const MultAdd a = mac_area_um2(type);
  return SquareMillimetres{(a.mult + a.add) / kSquareMicronsPerSquareMm};
}

double area_scale(double from_nm, double to_nm) {
  CODA_CHECK(from_nm > 0 && to_nm > 0);
  return std::pow(to_nm / from_nm, 2.0);
}

SquareMillimetres sram_area_per_kib(double nm) {
  CODA_CHECK(nm > 0);
  return SquareMillimetres{bitcell_um2(nm) * 8192 * kSramPeripheryFactor /
                           kSquareMicronsPerSquareMm};
}

// ---- the tables ----

namespace {

// The node the figures are for, and the note that says where it came from.
double technology_of(const ArchSpec& spec, std::vector<std::string>& notes) {
  if (spec.energy.technology_nm) {
    notes.push_back(fmt::format("technology {:g} nm: stated in the config",
                                *spec.energy.technology_nm));
    return *spec.energy.technology_nm;
  }
  notes.push_back(fmt::format(
      "technology: not stated (energy.technology_nm), so the {:g} nm base figures are used "
      "unscaled",
      kBaseTechnologyNm));
  return kBaseTechnologyNm;
}

// DRAM background power: the channels' active standby (scaling with the provisioned bandwidth)
// and the power-down standby of every GB, added to the static power.
void add_dram_background(const ArchSpec& spec, EnergyTable& table) {
  constexpr double kBytesPerGb = 1e9;
  double watts = 0;
  if (spec.energy.dram_standby_per_bandwidth && spec.dram.bandwidth) {
    const double bandwidth = per_cycle(*spec.dram.bandwidth, spec.clock).value * spec.clock.value;
    const double standby = spec.energy.dram_standby_per_bandwidth->value * bandwidth;
    watts += standby;
    table.notes.push_back(fmt::format(
        "dram standby: {} per byte/s (stated) x {:.4g} GB/s = {}",
        to_string(*spec.energy.dram_standby_per_bandwidth), bandwidth / kBytesPerGb,
        to_string(Watts{standby})));
  }
  if (spec.energy.dram_idle_per_gb && spec.dram.capacity) {
    const double gb = static_cast<double>(spec.dram.capacity->value) / kBytesPerGb;
    const double idle = spec.energy.dram_idle_per_gb->value * gb;
    watts += idle;
    table.notes.push_back(fmt::format("dram idle: {} per GB (stated) x {:.4g} GB = {}",
                                      to_string(*spec.energy.dram_idle_per_gb), gb,
                                      to_string(Watts{idle})));
  }
  table.dram_background = Watts{watts};
  if (watts > 0) {
    table.static_power.value += watts;
    table.notes.push_back(fmt::format("static power with the dram background: {}",
                                      to_string(table.static_power)));
  }
}

}  // namespace

EnergyTable derive_energy(const ArchSpec& spec) {
  EnergyTable table;
  table.technology_nm = technology_of(spec, table.notes);
  const double nm = table.technology_nm;
  const double scale = energy_scale(kBaseTechnologyNm, nm);
  const std::string scaled =
      nm == kBaseTechnologyNm
          ? std::string{}
          : fmt::format(", x {:.4g} for {:g} nm (energy ~ node^{:g})", scale, nm,
                        kEnergyScalingExponent);

  // MACs: every precision a matrix unit supports, and any the config states.
  std::map<DataType, bool> precisions;  // value: supported by a matrix unit
  for (const ComputeUnitSpec& unit : spec.compute)
    if (is_matrix_unit(unit))
      for (const auto& [type, rate] : unit.rates) precisions[type] = true;
  for (const auto& [type, joules] : spec.energy.mac) precisions.emplace(type, false);
  for (const auto& [type, supported] : precisions) {
    if (const auto stated = spec.energy.mac.find(type); stated != spec.energy.mac.end()) {
      table.mac[type] = stated->second;
      table.notes.push_back(fmt::format("mac {}: stated in the config{}", to_string(type),
                                        supported ? "" : " (no matrix unit supports it)"));
      continue;
    }
    const Joules joules{base_mac_energy_45nm(type).value * scale};
    table.mac[type] = joules;
    table.notes.push_back(fmt::format("mac {}: derived: {}{} = {}", to_string(type),
                                      base_rule(type, "pJ", mac_energy_pj(type)), scaled,
                                      to_string(joules)));
  }

  // Vector element operation: one fp32 multiply-add lane.
  if (spec.energy.vector_op) {
    table.vector_op = *spec.energy.vector_op;
    table.notes.emplace_back("vector op: stated in the config");
  } else {
    table.vector_op = Joules{base_mac_energy_45nm(DataType::Fp32).value * scale};
    table.notes.push_back(fmt::format(
        "vector op: derived: one fp32 multiply-add, {}{} = {}",
        base_rule(DataType::Fp32, "pJ", mac_energy_pj(DataType::Fp32)), scaled,
        to_string(table.vector_op)));
  }

  // Memory levels, then DRAM.
  for (const MemoryLevelSpec& level : spec.memory) {
    if (const auto stated = spec.energy.per_byte.find(level.name);
        stated != spec.energy.per_byte.end()) {
      table.per_byte.emplace_back(level.name, stated->second);
      table.notes.push_back(fmt::format("{} per byte: stated in the config", level.name));
      continue;
    }
    const Joules joules = sram_energy_per_byte(level.capacity, nm);
    table.per_byte.emplace_back(level.name, joules);
    table.notes.push_back(fmt::format(
        "{} per byte: derived: SRAM of {} at {:g} nm, between the 8 KiB / 32 KiB / 1 MiB "
        "access energies of Horowitz ISSCC 2014 (45 nm) and Jouppi et al. ISCA 2021 (7 nm) = {}",
        level.name, to_string(level.capacity), nm, to_string(joules)));
  }
  if (const auto stated = spec.energy.per_byte.find("dram"); stated != spec.energy.per_byte.end()) {
    table.per_byte.emplace_back("dram", stated->second);
    table.notes.emplace_back("dram per byte: stated in the config");
  } else {
    const Joules joules = dram_energy_per_byte(spec.dram.technology);
    table.per_byte.emplace_back("dram", joules);
    table.notes.push_back(fmt::format("dram per byte: {} ({}): {}; not node-scaled",
                                      to_string(joules), to_string(spec.dram.technology),
                                      dram_energy_source(spec.dram.technology)));
  }
  for (const auto& entry : spec.energy.per_byte) {
    const std::string& name = entry.first;
    const bool known = name == "dram" || std::any_of(spec.memory.begin(), spec.memory.end(),
                                                     [&](const MemoryLevelSpec& level) {
                                                       return level.name == name;
                                                     });
    if (!known)
      table.notes.push_back(fmt::format(
          "energy.per_byte.{}: stated in the config but no memory level has that name; unused",
          name));
  }

  // Static power.
  if (spec.energy.static_power) {
    table.static_power = *spec.energy.static_power;
    table.notes.emplace_back("static power: stated in the config");
  } else if (spec.power.budget) {
    table.static_power = Watts{spec.power.budget->value * kStaticPowerFraction};
    table.notes.push_back(fmt::format(
        "static power: derived: {:.3g} of the {} power budget = {} (the constant-power share "
        "of an A100 SXM4 40GB, 54 W of 400 W, Antepara et al. SC'25)",
        kStaticPowerFraction, to_string(*spec.power.budget), to_string(table.static_power)));
  } else {
    table.static_power = Watts{0};
    table.notes.emplace_back(
        "static power: 0 W: the config states neither energy.static_power nor power.budget");
  }
  add_dram_background(spec, table);
  return table;
}

AreaTable derive_area(const ArchSpec& spec) {
  AreaTable table;
  const double nm = technology_of(spec, table.notes);
  const double logic_scale = area_scale(kBaseTechnologyNm, nm);
  const double cores = spec.cores;

  // MAC units.
  double mac_mm2 = 0;
  for (const ComputeUnitSpec& unit : spec.compute) {
    if (!is_matrix_unit(unit)) continue;
    const double instances = static_cast<double>(unit.count) * cores;
    if (spec.area.per_mac) {
      const double macs = counted_macs(unit) * instances;
      const double mm2 = macs * spec.area.per_mac->value;
      mac_mm2 += mm2;
      table.notes.push_back(fmt::format("{}: {:g} MACs x {} per MAC (stated in the config) = {}",
                                        unit.name, macs, to_string(*spec.area.per_mac),
                                        fmt_area(mm2)));
      continue;
    }
    // The datapath is sized by its most area-hungry precision (MACs per cycle x area per MAC);
    // narrower precisions are taken to reuse it.
    double best_mm2 = 0;
    DataType best_type = DataType::Int8;
    double best_lanes = 0;
    for (const auto& [type, rate] : unit.rates) {
      const double unit_lanes = lanes(unit, rate);
      const double mm2 = unit_lanes * base_mac_area_45nm(type).value * logic_scale;
      if (mm2 > best_mm2) {
        best_mm2 = mm2;
        best_type = type;
        best_lanes = unit_lanes;
      }
    }
    const double mm2 = best_mm2 * instances;
    mac_mm2 += mm2;
    if (best_lanes == 0) {
      table.notes.push_back(fmt::format("{}: no precision with a positive rate; 0 mm2", unit.name));
      continue;
    }
    table.notes.push_back(fmt::format(
        "{}: derived: {:g} {} MACs x {:g} instances, {}{} = {}", unit.name, best_lanes,
        to_string(best_type), instances,
        base_rule(best_type, "um2", mac_area_um2(best_type)),
        nm == kBaseTechnologyNm
            ? std::string{}
            : fmt::format(", x {:.4g} for {:g} nm (area ~ node^2)", logic_scale, nm),
        fmt_area(mm2)));
  }
  table.mac_units = SquareMillimetres{mac_mm2};

  // SRAM.
  const SquareMillimetres per_kib = spec.area.per_kib_sram.value_or(sram_area_per_kib(nm));
  if (spec.area.per_kib_sram)
    table.notes.push_back(fmt::format("SRAM {} per KiB: stated in the config", to_string(per_kib)));
  else
    table.notes.push_back(fmt::format(
        "SRAM {} per KiB: derived: {:.4g} um2 high-density 6T bitcell at {:g} nm x 8192 bits x "
        "{:g} periphery",
        to_string(per_kib), bitcell_um2(nm), nm, kSramPeripheryFactor));
  double kib = 0;
  for (const MemoryLevelSpec& level : spec.memory)
    kib += static_cast<double>(level.capacity.value) / 1024 * chip_instances(level, spec.cores);
  table.sram = SquareMillimetres{kib * per_kib.value};
  table.notes.push_back(
      fmt::format("SRAM: {:g} KiB on the chip = {}", kib, to_string(table.sram)));

  table.total = SquareMillimetres{table.mac_units.value + table.sram.value};
  table.notes.emplace_back(
      "total: MAC units + SRAM only (no vector units, control, network, PHYs or I/O)");
  table.die = spec.area.die;
  if (table.die) table.notes.emplace_back("die: stated in the config");
  return table;
}

}  // namespace coda::arch
