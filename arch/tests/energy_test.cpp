// Energy and area tables (arch/energy.h). Every expected value is derived by hand in a comment
// from the base figures in docs/energy.md; the specs are built in code.

#include "arch/energy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace coda::arch {
namespace {

constexpr double kPj = 1e-12;
constexpr std::uint64_t kKiB = 1024;
constexpr std::uint64_t kMiB = 1024 * kKiB;

// Relative comparison for energies (J) and areas (mm2).
void expect_near_rel(double actual, double expected, double rel = 1e-9) {
  EXPECT_NEAR(actual, expected, std::abs(expected) * rel) << "expected " << expected;
}

bool has_note(const std::vector<std::string>& notes, const std::string& prefix,
              const std::string& contains) {
  return std::any_of(notes.begin(), notes.end(), [&](const std::string& note) {
    return note.rfind(prefix, 0) == 0 && note.find(contains) != std::string::npos;
  });
}

// One core with one rows x cols int8 systolic array and three 64 KiB core-level SRAMs (the
// schema-1 shape), HBM2 DRAM.
ArchSpec systolic_spec(std::uint32_t rows, std::uint32_t cols) {
  ArchSpec spec;
  spec.name = "test-npu";
  spec.clock = Hertz{1e9};
  spec.compute.push_back(ComputeUnitSpec{
      .name = "mxu",
      .kind = UnitKind::Systolic,
      .count = 1,
      .rates = {{DataType::Int8, 1.0}},
      .array = SystolicArraySpec{.rows = rows, .cols = cols},
  });
  for (const char* name : {"ifmap_sram", "filter_sram", "ofmap_sram"})
    spec.memory.push_back(MemoryLevelSpec{.name = name, .capacity = Bytes{64 * kKiB}});
  spec.dram.technology = DramTechnology::Hbm2;
  return spec;
}

// ---- base figures (Horowitz ISSCC 2014, 45 nm) ----

TEST(Energy, HorowitzMacFiguresAt45nm) {
  // MAC = one multiply + one add at the operand precision.
  expect_near_rel(base_mac_energy_45nm(DataType::Int8).value, (0.2 + 0.03) * kPj);
  expect_near_rel(base_mac_energy_45nm(DataType::Int32).value, (3.1 + 0.1) * kPj);
  expect_near_rel(base_mac_energy_45nm(DataType::Fp16).value, (1.1 + 0.4) * kPj);
  expect_near_rel(base_mac_energy_45nm(DataType::Fp32).value, (3.7 + 0.9) * kPj);
}

TEST(Energy, DerivedPrecisionsFollowThePowerLawsThroughHorowitzFigures) {
  // tf32 has fp16's 11-bit significand: fp16's 1.1 + 0.4 pJ exactly.
  expect_near_rel(base_mac_energy_45nm(DataType::Tf32).value, 1.5 * kPj);

  // Float multiplier: k = ln(3.7 / 1.1) / ln(24 / 11) = 1.5548; adder: ln(0.9 / 0.4) /
  // ln(24 / 11) = 1.0394. bf16 (8-bit significand):
  //   mult 1.1 * (8/11)^1.5548 = 0.67043, add 0.4 * (8/11)^1.0394 = 0.28728, MAC 0.95771 pJ.
  const double k_mult = std::log(3.7 / 1.1) / std::log(24.0 / 11);
  const double k_add = std::log(0.9 / 0.4) / std::log(24.0 / 11);
  const double bf16 = 1.1 * std::pow(8.0 / 11, k_mult) + 0.4 * std::pow(8.0 / 11, k_add);
  expect_near_rel(bf16, 0.95771, 1e-4);
  expect_near_rel(base_mac_energy_45nm(DataType::Bf16).value, bf16 * kPj);
  // fp8 e4m3 (4-bit significand): 1.1 * (4/11)^1.5548 + 0.4 * (4/11)^1.0394 = 0.22819 + 0.13977.
  expect_near_rel(base_mac_energy_45nm(DataType::Fp8E4M3).value, 0.36796 * kPj, 1e-4);

  // Integer multiplier: k = ln(3.1 / 0.2) / ln(4) = 1.9771; adder: ln(0.1 / 0.03) / ln(4) =
  // 0.8685. int4: 0.2 * (1/2)^1.9771 + 0.03 * (1/2)^0.8685 = 0.050800 + 0.016432 = 0.067232 pJ.
  expect_near_rel(base_mac_energy_45nm(DataType::Int4).value, 0.067232 * kPj, 1e-4);

  // The orderings the derivation must keep.
  EXPECT_LT(base_mac_energy_45nm(DataType::Fp8E5M2), base_mac_energy_45nm(DataType::Fp8E4M3));
  EXPECT_LT(base_mac_energy_45nm(DataType::Bf16), base_mac_energy_45nm(DataType::Fp16));
  EXPECT_LT(base_mac_energy_45nm(DataType::Int4), base_mac_energy_45nm(DataType::Int8));
}

// ---- the scaling rule ----

TEST(Energy, ScalingRuleIsSquareRootOfTheNodeRatio) {
  EXPECT_DOUBLE_EQ(energy_scale(45, 45), 1.0);
  // sqrt(7 / 45) = 0.394405
  expect_near_rel(energy_scale(45, 7), 0.394405, 1e-5);
  expect_near_rel(energy_scale(7, 45), 1 / 0.394405, 1e-5);
}

TEST(Energy, MacTableAt7nmScalesTheBaseFigures) {
  ArchSpec spec = systolic_spec(32, 32);
  spec.compute[0].rates = {{DataType::Int8, 1.0}, {DataType::Fp16, 1.0}, {DataType::Fp32, 0.5}};
  spec.compute.push_back(ComputeUnitSpec{
      .name = "vector", .kind = UnitKind::Vector, .rates = {{DataType::Bf16, 64.0}}});
  spec.energy.technology_nm = 7;
  const EnergyTable table = derive_energy(spec);

  EXPECT_DOUBLE_EQ(table.technology_nm, 7);
  // Only the matrix unit's precisions; the vector unit's bf16 is not a MAC precision.
  ASSERT_EQ(table.mac.size(), 3u);
  EXPECT_EQ(table.mac.count(DataType::Bf16), 0u);
  // fp32: 4.6 pJ * 0.394405 = 1.81426 pJ; int8: 0.23 * 0.394405 = 0.090713 pJ;
  // fp16: 1.5 * 0.394405 = 0.591608 pJ.
  expect_near_rel(table.mac.at(DataType::Fp32).value, 1.81426 * kPj, 1e-5);
  expect_near_rel(table.mac.at(DataType::Int8).value, 0.090713 * kPj, 1e-4);
  expect_near_rel(table.mac.at(DataType::Fp16).value, 0.591608 * kPj, 1e-5);
  // Vector op: one fp32 multiply-add lane, the same 1.81426 pJ.
  expect_near_rel(table.vector_op.value, 1.81426 * kPj, 1e-5);
  EXPECT_TRUE(has_note(table.notes, "technology 7 nm", "stated in the config"));
  EXPECT_TRUE(has_note(table.notes, "mac fp32: derived", "Horowitz"));
}

TEST(Energy, NoTechnologyUsesThe45nmFiguresAndSaysSo) {
  const EnergyTable table = derive_energy(systolic_spec(8, 8));
  EXPECT_DOUBLE_EQ(table.technology_nm, 45);
  expect_near_rel(table.mac.at(DataType::Int8).value, 0.23 * kPj);
  EXPECT_TRUE(has_note(table.notes, "technology: not stated", "45 nm"));
  const AreaTable area = derive_area(systolic_spec(8, 8));
  EXPECT_TRUE(has_note(area.notes, "technology: not stated", "45 nm"));
}

// ---- SRAM ----

TEST(Energy, SramAtTheAnchorCapacitiesAt45nm) {
  // Horowitz: 10 / 20 / 100 pJ per 64-bit (8-byte) access.
  expect_near_rel(sram_energy_per_byte(Bytes{8 * kKiB}, 45).value, 10.0 / 8 * kPj);
  expect_near_rel(sram_energy_per_byte(Bytes{32 * kKiB}, 45).value, 20.0 / 8 * kPj);
  expect_near_rel(sram_energy_per_byte(Bytes{kMiB}, 45).value, 100.0 / 8 * kPj);
}

TEST(Energy, SramInterpolatesInLog2OfCapacity) {
  // 16 KiB is halfway from 8 KiB (log2 13) to 32 KiB (log2 15): (10 + 20) / 2 = 15 pJ per
  // access = 1.875 pJ/B.
  expect_near_rel(sram_energy_per_byte(Bytes{16 * kKiB}, 45).value, 1.875 * kPj);
  // Below 8 KiB the 8 KiB figure; above 1 MiB the 32 KiB-1 MiB slope, (100 - 20) / 5 = 16 pJ
  // per doubling: 2 MiB = 116 pJ per access = 14.5 pJ/B.
  expect_near_rel(sram_energy_per_byte(Bytes{kKiB}, 45).value, 1.25 * kPj);
  expect_near_rel(sram_energy_per_byte(Bytes{2 * kMiB}, 45).value, 14.5 * kPj);
}

TEST(Energy, SramAt7nmUsesJouppisFigures) {
  // Jouppi et al. Table 2, 7 nm: 7.5 / 8.5 / 14 pJ per 64-bit access.
  expect_near_rel(sram_energy_per_byte(Bytes{8 * kKiB}, 7).value, 7.5 / 8 * kPj);
  expect_near_rel(sram_energy_per_byte(Bytes{16 * kKiB}, 7).value, (7.5 + 8.5) / 2 / 8 * kPj);
  expect_near_rel(sram_energy_per_byte(Bytes{kMiB}, 7).value, 14.0 / 8 * kPj);
  // Between the nodes each size follows the power law through its two figures: 1 MiB at 16 nm,
  // k = ln(100 / 14) / ln(45 / 7) = 1.0566, 100 * (16 / 45)^1.0566 = 33.53 pJ = 4.1917 pJ/B.
  expect_near_rel(sram_energy_per_byte(Bytes{kMiB}, 16).value, 4.19169 * kPj, 1e-5);
}

// ---- DRAM ----

TEST(Energy, DramPerTechnology) {
  // pJ/bit x 8 bits.
  expect_near_rel(dram_energy_per_byte(DramTechnology::Hbm2).value, 3.97 * 8 * kPj);    // O'Connor
  expect_near_rel(dram_energy_per_byte(DramTechnology::Hbm2e).value, 4.3 * 8 * kPj);    // SK hynix
  expect_near_rel(dram_energy_per_byte(DramTechnology::Gddr6).value, 480.0 / 8 * kPj);  // Jouppi
  expect_near_rel(dram_energy_per_byte(DramTechnology::Ddr4).value, 1300.0 / 8 * kPj);  // Jouppi
  expect_near_rel(dram_energy_per_byte(DramTechnology::Ddr3).value, 1300.0 / 8 * kPj);  // Horowitz
  expect_near_rel(dram_energy_per_byte(DramTechnology::Lpddr4).value, 4.0 * 8 * kPj);   // Dally
  // Generations without a published figure take their predecessor's, and say so.
  EXPECT_EQ(dram_energy_per_byte(DramTechnology::Lpddr5x),
            dram_energy_per_byte(DramTechnology::Lpddr4));
  EXPECT_EQ(dram_energy_per_byte(DramTechnology::Hbm3e),
            dram_energy_per_byte(DramTechnology::Hbm2e));
  EXPECT_EQ(dram_energy_per_byte(DramTechnology::Ddr5),
            dram_energy_per_byte(DramTechnology::Ddr4));
  EXPECT_NE(dram_energy_source(DramTechnology::Lpddr5).find("derived"), std::string_view::npos);
  EXPECT_NE(dram_energy_source(DramTechnology::Unspecified).find("not stated"),
            std::string_view::npos);
  EXPECT_NE(dram_energy_source(DramTechnology::Hbm2).find("MICRO 2017"), std::string_view::npos);
  // HBM moves a byte for a fifth of DDR4's energy.
  EXPECT_LT(dram_energy_per_byte(DramTechnology::Hbm2), dram_energy_per_byte(DramTechnology::Ddr4));
}

TEST(Energy, PerByteListsLevelsInSpecOrderThenDram) {
  ArchSpec spec = systolic_spec(32, 32);
  spec.memory[1].capacity = Bytes{32 * kKiB};
  const EnergyTable table = derive_energy(spec);
  ASSERT_EQ(table.per_byte.size(), 4u);
  EXPECT_EQ(table.per_byte[0].first, "ifmap_sram");
  EXPECT_EQ(table.per_byte[1].first, "filter_sram");
  EXPECT_EQ(table.per_byte[2].first, "ofmap_sram");
  EXPECT_EQ(table.per_byte[3].first, "dram");
  // 64 KiB at 45 nm: log2 16, a fifth of the way from 32 KiB to 1 MiB:
  // 20 + (100 - 20) / 5 = 36 pJ per access = 4.5 pJ/B. 32 KiB: 2.5 pJ/B.
  expect_near_rel(table.per_byte[0].second.value, 4.5 * kPj);
  expect_near_rel(table.per_byte[1].second.value, 2.5 * kPj);
  expect_near_rel(table.per_byte[3].second.value, 3.97 * 8 * kPj);
  EXPECT_TRUE(has_note(table.notes, "dram per byte", "MICRO 2017"));
}

// ---- stated figures win ----

TEST(Energy, StatedFiguresOverrideDerivedOnes) {
  ArchSpec spec = systolic_spec(32, 32);
  spec.compute[0].rates[DataType::Fp16] = 1.0;
  spec.energy.technology_nm = 7;
  spec.energy.mac[DataType::Int8] = Joules{0.05 * kPj};
  spec.energy.vector_op = Joules{0.5 * kPj};
  spec.energy.per_byte["filter_sram"] = Joules{0.3 * kPj};
  spec.energy.per_byte["dram"] = Joules{20 * kPj};
  spec.energy.static_power = Watts{3};
  spec.power.budget = Watts{100};  // ignored: static power is stated
  const EnergyTable table = derive_energy(spec);

  EXPECT_EQ(table.mac.at(DataType::Int8), Joules{0.05 * kPj});
  // fp16 is not stated: derived, 1.5 pJ * 0.394405 = 0.591608 pJ.
  expect_near_rel(table.mac.at(DataType::Fp16).value, 0.591608 * kPj, 1e-5);
  EXPECT_EQ(table.vector_op, Joules{0.5 * kPj});
  EXPECT_EQ(table.per_byte[1].second, Joules{0.3 * kPj});
  EXPECT_EQ(table.per_byte[3].second, Joules{20 * kPj});
  // ifmap_sram is not stated: 64 KiB at 7 nm = 8.5 + (14 - 8.5) / 5 = 9.6 pJ per access.
  expect_near_rel(table.per_byte[0].second.value, 9.6 / 8 * kPj);
  EXPECT_EQ(table.static_power, Watts{3});

  EXPECT_TRUE(has_note(table.notes, "mac int8", "stated in the config"));
  EXPECT_TRUE(has_note(table.notes, "mac fp16", "derived"));
  EXPECT_TRUE(has_note(table.notes, "vector op", "stated in the config"));
  EXPECT_TRUE(has_note(table.notes, "filter_sram per byte", "stated in the config"));
  EXPECT_TRUE(has_note(table.notes, "ifmap_sram per byte", "derived"));
  EXPECT_TRUE(has_note(table.notes, "dram per byte", "stated in the config"));
  EXPECT_TRUE(has_note(table.notes, "static power", "stated in the config"));
}

TEST(Energy, StatedPerByteForAnUnknownLevelIsReported) {
  ArchSpec spec = systolic_spec(8, 8);
  spec.energy.per_byte["l2"] = Joules{kPj};
  const EnergyTable table = derive_energy(spec);
  EXPECT_TRUE(has_note(table.notes, "energy.per_byte.l2", "no memory level"));
}

// ---- static power ----

TEST(Energy, StaticPowerFromTheBudgetOrZero) {
  ArchSpec spec = systolic_spec(8, 8);
  spec.power.budget = Watts{700};
  // 54 / 400 = 0.135 of 700 W = 94.5 W.
  expect_near_rel(derive_energy(spec).static_power.value, 94.5);
  EXPECT_TRUE(has_note(derive_energy(spec).notes, "static power: derived", "700 W"));

  spec.power.budget.reset();
  const EnergyTable none = derive_energy(spec);
  EXPECT_EQ(none.static_power, Watts{0});
  EXPECT_TRUE(has_note(none.notes, "static power: 0 W", "neither"));
}

TEST(Energy, DramBackgroundScalesWithBandwidthAndCapacity) {
  ArchSpec spec = systolic_spec(8, 8);
  spec.dram.bandwidth = BytesPerSecond{51.2e9};
  spec.dram.capacity = Bytes{8'000'000'000};
  spec.energy.static_power = Watts{1};
  spec.energy.dram_standby_per_bandwidth = Joules{5.92 * kPj};
  spec.energy.dram_idle_per_gb = Watts{8.4e-3};
  const EnergyTable table = derive_energy(spec);
  // Standby 5.92e-12 J/B x 51.2e9 B/s = 0.303104 W; idle 8.4 mW x 8 GB = 0.0672 W;
  // background 0.370304 W, on top of the stated 1 W.
  expect_near_rel(table.dram_background.value, 0.370304);
  expect_near_rel(table.static_power.value, 1.370304);
  EXPECT_TRUE(has_note(table.notes, "dram standby", "51.2 GB/s"));
  EXPECT_TRUE(has_note(table.notes, "dram idle", "8 GB"));

  // A bandwidth in bytes per cycle is converted at the clock: 64 B/cycle x 1 GHz = 64e9 B/s,
  // so standby = 5.92e-12 x 64e9 = 0.37888 W; idle unchanged (0.0672 W); no stated static power.
  spec.dram.bandwidth = BytesPerCycle{64};
  spec.energy.static_power.reset();
  expect_near_rel(derive_energy(spec).static_power.value, 0.37888 + 0.0672);

  // Neither figure stated: no background.
  spec.energy.dram_standby_per_bandwidth.reset();
  spec.energy.dram_idle_per_gb.reset();
  EXPECT_EQ(derive_energy(spec).dram_background, Watts{0});
  EXPECT_EQ(derive_energy(spec).static_power, Watts{0});
}

// ---- area ----

TEST(Area, SystolicInt8ArrayWithThreeSramsAt45nm) {
  const AreaTable area = derive_area(systolic_spec(32, 32));
  // MACs: 32 x 32 = 1024 x (8b mult 282 + 8b add 36 um2) = 325,632 um2 = 0.325632 mm2.
  expect_near_rel(area.mac_units.value, 0.325632);
  // SRAM: 3 x 64 KiB = 192 KiB x (0.346 um2 Intel 45 nm bitcell x 8192 bits x 1.43 periphery
  // = 4053.24 um2 per KiB) = 778,222 um2 = 0.778222 mm2.
  expect_near_rel(sram_area_per_kib(45).value, 0.346 * 8192 * 1.43 / 1e6);
  expect_near_rel(area.sram.value, 192 * 0.346 * 8192 * 1.43 / 1e6);
  expect_near_rel(area.total.value, 0.325632 + 0.778222, 1e-6);
  EXPECT_FALSE(area.die.has_value());
}

TEST(Area, SystolicInt8ArrayWithThreeSramsAt7nm) {
  ArchSpec spec = systolic_spec(32, 32);
  spec.energy.technology_nm = 7;
  const AreaTable area = derive_area(spec);
  // MACs: 0.325632 mm2 x (7 / 45)^2 = 0.0078795 mm2.
  expect_near_rel(area.mac_units.value, 0.325632 * (7.0 / 45) * (7.0 / 45));
  // SRAM: 192 KiB x 0.027 um2 (TSMC N7 bitcell) x 8192 x 1.43 = 0.0607283 mm2.
  expect_near_rel(area.sram.value, 192 * 0.027 * 8192 * 1.43 / 1e6);
}

TEST(Area, BitcellBetweenPublishedNodesIsInterpolatedAndFlatBelow3nm) {
  // 10 nm between 16 nm (0.07) and 7 nm (0.027), log-log:
  // 0.027 * (10 / 7)^(ln(0.07 / 0.027) / ln(16 / 7)).
  const double k = std::log(0.07 / 0.027) / std::log(16.0 / 7);
  expect_near_rel(sram_area_per_kib(10).value,
                  0.027 * std::pow(10.0 / 7, k) * 8192 * 1.43 / 1e6);
  // N3E did not shrink N5's 0.021 um2 cell; below 3 nm it stays there.
  EXPECT_EQ(sram_area_per_kib(3), sram_area_per_kib(5));
  EXPECT_EQ(sram_area_per_kib(2), sram_area_per_kib(3));
}

TEST(Area, TensorCoreIsSizedByItsMostAreaHungryPrecision) {
  ArchSpec spec;
  spec.cores = 2;
  spec.compute.push_back(ComputeUnitSpec{
      .name = "tensor_core",
      .kind = UnitKind::TensorCore,
      .count = 4,
      .rates = {{DataType::Fp16, 1024.0}, {DataType::Int8, 2048.0}},
      .tensor_core = TensorCoreSpec{},
  });
  const AreaTable area = derive_area(spec);
  // fp16: 1024 x (1640 + 1360) um2 = 3.072 mm2 per instance; int8: 2048 x 318 = 0.651 mm2.
  // fp16 wins: 3.072 x 4 instances x 2 cores = 24.576 mm2.
  expect_near_rel(area.mac_units.value, 24.576);
  EXPECT_EQ(area.sram, SquareMillimetres{0});
}

TEST(Area, StatedFiguresOverrideDerivedOnes) {
  ArchSpec spec = systolic_spec(32, 32);
  spec.cores = 2;
  spec.memory.push_back(MemoryLevelSpec{
      .name = "l2", .scope = Scope::Chip, .instances = 2, .capacity = Bytes{kMiB}});
  spec.area.per_mac = SquareMillimetres{1e-4};
  spec.area.per_kib_sram = SquareMillimetres{1e-3};
  spec.area.die = SquareMillimetres{42};
  const AreaTable area = derive_area(spec);
  // 1024 MACs x 2 cores x 1e-4 mm2 = 0.2048 mm2.
  expect_near_rel(area.mac_units.value, 0.2048);
  // Core levels 3 x 64 KiB x 2 cores = 384 KiB; chip level 2 x 1024 KiB = 2048 KiB;
  // 2432 KiB x 1e-3 mm2 = 2.432 mm2.
  expect_near_rel(area.sram.value, 2.432);
  expect_near_rel(area.total.value, 0.2048 + 2.432);
  ASSERT_TRUE(area.die.has_value());
  EXPECT_EQ(*area.die, SquareMillimetres{42});
  EXPECT_TRUE(has_note(area.notes, "mxu", "stated in the config"));
  EXPECT_TRUE(has_note(area.notes, "SRAM", "stated in the config"));
}

TEST(Area, DerivedMacAreaPerPrecision) {
  expect_near_rel(base_mac_area_45nm(DataType::Int8).value, (282 + 36) / 1e6);
  expect_near_rel(base_mac_area_45nm(DataType::Fp32).value, (7700 + 4184) / 1e6);
  expect_near_rel(base_mac_area_45nm(DataType::Tf32).value, (1640 + 1360) / 1e6);
  // bf16: 1640 * (8/11)^1.9823 + 1360 * (8/11)^1.4405 = 872.34 + 859.65 = 1731.98 um2.
  expect_near_rel(base_mac_area_45nm(DataType::Bf16).value, 1731.98 / 1e6, 1e-5);
  EXPECT_DOUBLE_EQ(area_scale(45, 45), 1.0);
  expect_near_rel(area_scale(45, 7), 49.0 / 2025);
}

}  // namespace
}  // namespace coda::arch
