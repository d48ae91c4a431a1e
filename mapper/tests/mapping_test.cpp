#include "mapper/mapping.h"

#include <gtest/gtest.h>

#include "arch/arch_spec.h"
#include "testing/test_hardware.h"
#include "workloads/builders.h"

namespace coda::mapper {
namespace {

TEST(Hierarchy, SystolicArrayGetsAPeLevelThatFansOutFromItsSram) {
  // Schema-1 8x8 int8 array, three 64 KiB SRAMs (one role each), DRAM at 16 B/cycle.
  const auto hw = testing::make_array({.rows = 8, .cols = 8, .bytes_per_cycle = 16.0});
  const Hierarchy h = make_hierarchy(hw, DataType::Int8);
  EXPECT_TRUE(h.unsupported.empty());
  EXPECT_EQ(h.compute.pes, 64u);
  EXPECT_EQ(h.compute.macs_per_pe_per_cycle, 1.0);
  ASSERT_EQ(h.levels.size(), 5u);  // pe, the three SRAMs, dram
  EXPECT_EQ(h.levels[0].name, "pe");
  EXPECT_EQ(h.levels[0].instances, 64u);
  EXPECT_EQ(h.levels[0].fan_out, 1u);
  EXPECT_EQ(h.levels[0].capacity_bytes, 6u);  // two int8 operands + a 4-byte accumulator
  EXPECT_EQ(h.levels[1].holds, arch::bits(arch::Holds::Inputs));
  EXPECT_EQ(h.levels[1].fan_out, 64u);        // the 8x8 array
  EXPECT_EQ(h.levels[1].capacity_bytes, 64u * 1024);
  EXPECT_TRUE(h.levels[1].double_buffered);
  EXPECT_EQ(h.levels[2].fan_out, 1u);         // side-by-side SRAMs: a chain of fan-out 1
  EXPECT_EQ(h.levels[3].holds, arch::bits(arch::Holds::Outputs));
  EXPECT_EQ(h.levels[4].name, "dram");
  EXPECT_EQ(h.levels[4].read_bytes_per_cycle, 16.0);
  EXPECT_TRUE(h.levels[4].shared_port);
  EXPECT_EQ(h.levels[4].capacity_bytes, 0u);  // unlimited
}

TEST(Hierarchy, TensorCoreLanesAndStatedEnergies) {
  // mini-gpu: 4 SMs of 512 fp16 MACs per cycle, 100 KiB smem per SM, 4 MiB L2, 1 TB/s at 1 GHz,
  // 1 pJ per MAC and 0.5 / 1 / 10 pJ per byte of smem / L2 / DRAM.
  const auto hw = testing::parse_arch(testing::kMiniGpu);
  const Hierarchy h = make_hierarchy(hw, DataType::Fp16);
  EXPECT_TRUE(h.unsupported.empty());
  EXPECT_EQ(h.compute.pes, 4u * 512);
  EXPECT_EQ(h.compute.macs_per_pe_per_cycle, 1.0);
  EXPECT_DOUBLE_EQ(h.compute.mac_energy_pj, 1.0);
  ASSERT_EQ(h.levels.size(), 3u);  // smem, l2, dram: no PE level for tensor cores
  EXPECT_EQ(h.levels[0].name, "smem");
  EXPECT_EQ(h.levels[0].instances, 4u);
  EXPECT_EQ(h.levels[0].fan_out, 512u);
  EXPECT_DOUBLE_EQ(h.levels[0].energy_pj_per_byte, 0.5);
  EXPECT_EQ(h.levels[1].instances, 1u);
  EXPECT_EQ(h.levels[1].fan_out, 4u);  // the L2 feeds the 4 SMs
  EXPECT_DOUBLE_EQ(h.levels[1].energy_pj_per_byte, 1.0);
  EXPECT_DOUBLE_EQ(h.levels[2].energy_pj_per_byte, 10.0);
  EXPECT_DOUBLE_EQ(h.levels[2].read_bytes_per_cycle, 1000.0);  // 1e12 B/s / 1e9 Hz
  // The lanes share fragments (multicast below smem); every SM fetches its own lines from the
  // L2, which deals a grid larger than the 4 SMs out in waves.
  EXPECT_TRUE(h.levels[0].multicast);
  EXPECT_FALSE(h.levels[1].multicast);
  EXPECT_TRUE(h.levels[1].waves);
  EXPECT_FALSE(h.levels[0].waves);

  const Hierarchy int8 = make_hierarchy(hw, DataType::Int8);
  EXPECT_NE(int8.unsupported.find("does not support int8"), std::string::npos);
}

TEST(Hierarchy, H100RegisterFilesKeepOperandFragments) {
  // configs/arch/nvidia_h100_sxm.yaml: 132 SMs of 2048 fp16 lanes, 4 register files of 64 KiB
  // per SM (one per sub-partition), 228 KiB of shared memory per SM, a 50 MiB L2, HBM3.
  Diagnostics diags;
  const auto loaded = arch::load_arch("configs/arch/nvidia_h100_sxm.yaml", diags);
  ASSERT_TRUE(loaded) << diags.format_all();
  const Hierarchy h = make_hierarchy(arch::HardwareModel(loaded->spec), DataType::Fp16);
  ASSERT_EQ(h.levels.size(), 4u);
  EXPECT_EQ(h.compute.pes, 132u * 2048);
  EXPECT_EQ(h.levels[0].name, "registers");
  EXPECT_EQ(h.levels[0].instances, 132u * 4);
  EXPECT_EQ(h.levels[0].capacity_bytes, 64u * 1024);
  EXPECT_EQ(h.levels[0].fan_out, 512u);  // a sub-partition's tensor core
  // The spec says the registers hold outputs (what kernels keep across K); the lanes read A
  // and B from them too, so the hierarchy keeps every role there.
  EXPECT_EQ(h.levels[0].holds, arch::bits(arch::Holds::All));
  EXPECT_TRUE(h.levels[0].multicast);
  EXPECT_EQ(h.levels[1].name, "smem");
  EXPECT_EQ(h.levels[1].fan_out, 4u);  // the SM's 4 register files, each loading its own copy
  EXPECT_FALSE(h.levels[1].multicast);
  EXPECT_FALSE(h.levels[1].waves);
  EXPECT_EQ(h.levels[2].name, "l2");
  EXPECT_EQ(h.levels[2].fan_out, 132u);
  EXPECT_FALSE(h.levels[2].multicast);
  EXPECT_TRUE(h.levels[2].waves);      // the block scheduler
  EXPECT_EQ(h.levels[3].name, "dram");
}

TEST(Hierarchy, TwoCoreNpuFansOutOverCoresAndArrays) {
  // mini-npu: 2 cores x 2 arrays of 16x8; spad (inputs, weights) and acc (outputs) per core.
  const Hierarchy h = make_hierarchy(testing::parse_arch(testing::kMiniNpu), DataType::Int8);
  EXPECT_EQ(h.compute.pes, 2u * 2 * 16 * 8);
  ASSERT_EQ(h.levels.size(), 4u);
  EXPECT_EQ(h.levels[0].instances, 512u);
  EXPECT_EQ(h.levels[1].name, "spad");
  EXPECT_EQ(h.levels[1].instances, 2u);
  EXPECT_EQ(h.levels[1].fan_out, 256u);  // 512 PEs / 2 spads
  EXPECT_EQ(h.levels[2].fan_out, 1u);
  EXPECT_EQ(h.levels[3].fan_out, 2u);    // DRAM feeds both cores' acc
  EXPECT_EQ(h.levels[3].read_bytes_per_cycle, 0.0);  // unlimited
}

TEST(Mapping, MakeMappingAndSetOrder) {
  Mapping m = make_mapping(2, 3);
  EXPECT_EQ(m.level_count, 2u);
  EXPECT_EQ(m.levels[1].temporal[2], 1u);
  set_order(m, 1, {2, 0});  // unnamed dim 1 goes outermost
  EXPECT_EQ(m.levels[1].order[0], 1u);
  EXPECT_EQ(m.levels[1].order[1], 2u);
  EXPECT_EQ(m.levels[1].order[2], 0u);
}

TEST(Mapping, PrintsTheLoopNestOutermostFirst) {
  const workload::Op gemm = workload::make_gemm("g", 4, 4, 4);
  Hierarchy h;
  h.levels = {{.name = "buffer", .fan_out = 4}, {.name = "dram"}};
  Mapping m = make_mapping(2, 3);
  m.levels[1].temporal[0] = 4;  // m at DRAM
  m.levels[0].temporal[2] = 4;  // k in the buffer
  m.levels[0].spatial[1] = 4;   // n over the 4 PEs
  m.levels[0].bypass = 0b010;   // B streams from DRAM
  EXPECT_EQ(to_string(m, gemm.space, h),
            "dram [A B C]\n"
            "| for m in [0:4)\n"
            "buffer [A C]\n"
            "|   for k in [0:4)\n"
            "|     par-for n in [0:4)\n");
}

TEST(Mapping, DescribesInfeasibility) {
  const workload::Op gemm = workload::make_gemm("g", 4, 4, 4);
  Hierarchy h;
  h.levels = {{.name = "buffer"}, {.name = "dram"}};
  EXPECT_EQ(describe({.reason = Infeasible::Capacity, .level = 0, .needed = 40, .available = 20},
                     h, gemm.space),
            "capacity: level 'buffer' needs 40 B per instance, has 20 B");
  EXPECT_EQ(describe({.reason = Infeasible::Coverage, .dim = 2, .needed = 2, .available = 4}, h,
                     gemm.space),
            "coverage: dim 'k' factors multiply to 2, below its extent 4");
  EXPECT_EQ(to_string(Infeasible::SpatialFanout), "spatial_fanout");
}

}  // namespace
}  // namespace coda::mapper
