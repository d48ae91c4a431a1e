// The three views engines take of one HardwareModel (issue 19): the loop-nest hierarchy
// (mapper::make_hierarchy), the analytical GPU GEMM parameters (analytical::gpu_params) and the
// timing engines' chip parameters (timing::chip_params). Each is built by its own function, but
// every figure they share comes from HardwareModel's derivation; this test holds them to it on
// every preset, so a parameter that changes a derived figure reaches all three or fails here.

#include <cmath>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "arch/arch_spec.h"
#include "arch/hardware_model.h"
#include "mapper/mapping.h"
#include "sim/analytical/unit_costs.h"
#include "sim/timing/chip_plan.h"

namespace coda::sim {
namespace {

// Equal to a few ulps: the views reach a figure by different but exact arithmetic (x per
// instance times instances, or per second over the clock).
void expect_same(double a, double b, const std::string& what) {
  EXPECT_NEAR(a, b, 1e-12 * std::max(std::abs(a), std::abs(b))) << what;
}

TEST(EngineViews, AgreeWithTheHardwareModelOnEveryPreset) {
  int presets = 0;
  for (const auto& entry : std::filesystem::directory_iterator("configs/arch")) {
    if (entry.path().extension() != ".yaml") continue;
    Diagnostics diags;
    const auto loaded = arch::load_arch(entry.path(), diags);
    ASSERT_TRUE(loaded) << diags.format_all();
    const arch::HardwareModel hw(loaded->spec);
    SCOPED_TRACE(entry.path().filename().string());
    ++presets;
    const double clock = hw.clock().value;
    const timing::ChipParams chip = timing::chip_params(hw);
    expect_same(chip.clock_hz, clock, "chip clock");
    const double dram = hw.achievable_dram_bytes_per_cycle().value_or(0.0);
    expect_same(chip.dram.bytes_per_cycle, dram, "chip DRAM bytes per cycle");

    for (const DataType precision : hw.matrix_precisions()) {
      SCOPED_TRACE(std::string(to_string(precision)));
      const mapper::Hierarchy h = mapper::make_hierarchy(hw, precision);
      if (!h.unsupported.empty()) continue;
      expect_same(h.clock_hz, clock, "hierarchy clock");
      expect_same(h.levels.back().read_bytes_per_cycle, dram, "hierarchy DRAM read");
      expect_same(h.levels.back().write_bytes_per_cycle, dram, "hierarchy DRAM write");
      // The chip's achievable MAC rate: every lane's share of the core's units, on every core.
      expect_same(static_cast<double>(h.compute.pes) * h.compute.macs_per_pe_per_cycle,
                  hw.achievable_macs_per_cycle(precision) * static_cast<double>(hw.cores()),
                  "hierarchy MACs");
      // Each memory level: the spec's capacity and, per instance, its read bandwidth.
      for (const arch::LevelSummary& level : hw.levels()) {
        if (level.name == "dram") continue;
        const mapper::StorageLevel* mine = nullptr;
        for (const mapper::StorageLevel& l : h.levels)
          if (l.name == level.name) mine = &l;
        ASSERT_NE(mine, nullptr) << level.name;
        EXPECT_EQ(mine->instances, level.instances) << level.name;
        EXPECT_EQ(mine->capacity_bytes, level.capacity.value) << level.name;
        if (level.read_bytes_per_second)
          expect_same(mine->read_bytes_per_cycle * static_cast<double>(level.instances) * clock,
                      *level.read_bytes_per_second, level.name + " read");
      }
      if (!hw.has_tensor_cores()) continue;
      const analytical::GpuParams gp = analytical::gpu_params(precision, hw, hw.gemm_path());
      EXPECT_EQ(gp.sms, hw.cores());
      expect_same(gp.clock_hz, clock, "GPU clock");
      expect_same(gp.macs_per_cycle_per_sm, hw.achievable_macs_per_cycle(precision),
                  "GPU MACs per SM");
      expect_same(gp.dram_bytes_per_second, dram * clock, "GPU DRAM");
      // Shared memory per SM and the chip cache, as the hierarchy has them.
      for (const mapper::StorageLevel& l : h.levels) {
        if (l.name == "smem") {
          const double per_sm = static_cast<double>(l.instances) / static_cast<double>(hw.cores());
          EXPECT_EQ(gp.smem_bytes_per_sm,
                    static_cast<std::uint64_t>(static_cast<double>(l.capacity_bytes) * per_sm));
          expect_same(gp.smem_bytes_per_cycle, l.read_bytes_per_cycle * per_sm, "smem read");
        }
        if (l.name == "l2") {
          EXPECT_EQ(gp.l2_bytes, l.capacity_bytes * l.instances);
          expect_same(gp.l2_bytes_per_second,
                      l.read_bytes_per_cycle * static_cast<double>(l.instances) * clock, "L2 read");
          if (chip.link)
            expect_same(chip.link->bytes_per_cycle * clock, gp.l2_bytes_per_second,
                        "SM-to-L2 link");
        }
      }
    }
  }
  EXPECT_GT(presets, 20);
}

}  // namespace
}  // namespace coda::sim
