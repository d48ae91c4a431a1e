#pragma once
// Energy and area tables derived from an ArchSpec: energy per MAC by precision, per vector element
// operation, per byte of each memory level and of DRAM, static power (with the DRAM background
// power of energy.dram_standby_per_bandwidth and energy.dram_idle_per_gb), and the area of the MAC
// units and SRAM. A figure the config states (energy.mac, energy.per_byte, energy.vector_op,
// energy.static_power, area.per_mac, area.per_kib_sram, area.die) always wins; every other figure
// is derived from published base figures by the rules below, and each table says in `notes`
// where each of its figures came from. docs/energy.md gives the figures, sources and rules.
//
// All functions are pure. The figures are first-order estimates for comparing designs, not a
// substitute for a power or area model of a real netlist.

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "arch/arch_spec.h"
#include "core/data_type.h"
#include "core/units.h"

namespace coda::arch {

struct EnergyTable {
  double technology_nm = 45;        // the node the figures are for (45 when the config names none)
  std::map<DataType, Joules> mac;   // per MAC, for every precision a matrix unit supports
  Joules vector_op;                 // per vector element operation
  // Per byte read or written, for each memory level in spec order, then "dram".
  std::vector<std::pair<std::string, Joules>> per_byte;
  // Static power: the stated (or budget-derived) figure plus dram_background.
  Watts static_power;
  // DRAM background power: energy.dram_standby_per_bandwidth x dram.bandwidth plus
  // energy.dram_idle_per_gb x dram.capacity in GB; 0 W when the config states neither.
  Watts dram_background;
  // One line per figure: "<figure>: stated in the config" or "<figure>: derived: <rule>".
  std::vector<std::string> notes;
};

EnergyTable derive_energy(const ArchSpec& spec);

struct AreaTable {
  SquareMillimetres mac_units;  // the matrix units' multipliers and adders, all cores
  SquareMillimetres sram;       // every memory level, all instances and cores
  SquareMillimetres total;      // mac_units + sram: no vector units, control, network or I/O
  std::optional<SquareMillimetres> die;  // the published die area, when the config states it
  std::vector<std::string> notes;
};

AreaTable derive_area(const ArchSpec& spec);

// ---- the base figures and rules, exposed for tests and docs ----

// The node of the base figures: M. Horowitz, "Computing's energy problem (and what we can do
// about it)", ISSCC 2014 (45 nm, 0.9 V).
inline constexpr double kBaseTechnologyNm = 45;

// Energy of one multiply plus one add at the operand precision, at 45 nm. Horowitz gives int8,
// int32, fp16 and fp32; tf32, bf16, fp8 and int4 are derived (see docs/energy.md): within the
// integer and the float family, multiplier and adder energy each follow a power law in the
// operand's significand bits (integer: its width) fitted through Horowitz's two figures.
Joules base_mac_energy_45nm(DataType type);

// Energy of logic at `to_nm` relative to `from_nm`: (to_nm / from_nm)^kEnergyScalingExponent.
// Calibrated on N. P. Jouppi et al., "Ten Lessons From Three Generations Shaped Google's TPUv4i",
// ISCA 2021, Table 2, where from 45 nm to 7 nm the multipliers' energy fell 2.8-3.2x and the
// int32 adder's 3.3x; sqrt(45 / 7) = 2.54 is the conservative end. Both arguments must be
// positive.
inline constexpr double kEnergyScalingExponent = 0.5;
double energy_scale(double from_nm, double to_nm);

// SRAM energy per byte accessed at a node: the 64-bit access energies of an 8 KiB, a 32 KiB and
// a 1 MiB array at 45 nm (Horowitz) and at 7 nm (Jouppi et al. Table 2), each carried to `nm` by
// the power law through its two figures, then interpolated linearly in log2(capacity). Below
// 8 KiB the 8 KiB figure is used; above 1 MiB the 32 KiB-to-1 MiB slope is extended.
Joules sram_energy_per_byte(Bytes capacity, double nm);

// DRAM energy per byte transferred, by technology, and where the figure comes from. DRAM energy
// is a property of the DRAM device and interface, so it is not scaled with the logic node.
// Unspecified gets the DDR4 figure, and its source says so.
Joules dram_energy_per_byte(DramTechnology technology);
std::string_view dram_energy_source(DramTechnology technology);

// Area of one multiplier plus one adder at the operand precision, at 45 nm (Horowitz's area
// figures, with the same precision rule as the energies).
SquareMillimetres base_mac_area_45nm(DataType type);

// Logic area at `to_nm` relative to `from_nm`: (to_nm / from_nm)^2, classical scaling. Real
// logic density has improved less than this below about 16 nm, so small nodes come out small.
double area_scale(double from_nm, double to_nm);

// Area of one KiB of SRAM at a node: the high-density 6T bitcell area (published cells from
// 65 nm to 3 nm, interpolated log-log in the node) x 8192 bits x kSramPeripheryFactor.
inline constexpr double kSramPeripheryFactor = 1.43;
SquareMillimetres sram_area_per_kib(double nm);

// Static power, when the config states none but has a power budget: this fraction of the budget.
// It is the constant-power share of an NVIDIA A100 SXM4 40GB, 54 W of its 400 W TDP, from
// Antepara et al., "Benchmark-driven Models for Energy Analysis and Attribution of
// GPU-Accelerated Supercomputing", SC'25 (Table 2).
inline constexpr double kStaticPowerFraction = 54.0 / 400.0;

}  // namespace coda::arch
