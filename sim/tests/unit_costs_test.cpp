// The adapter from HardwareModel to the closed-form models (sim/analytical/unit_costs.h): which
// hardware figure feeds which parameter, and each op's energy, on hand-derivable configs.

#include "sim/analytical/unit_costs.h"

#include <gtest/gtest.h>

#include "arch/arch_spec.h"
#include "sim/analytical/gpu_model.h"
#include "sim/analytical/systolic_model.h"
#include "testing/test_hardware.h"
#include "workloads/builders.h"

namespace coda::sim::analytical {
namespace {

using testing::kMiniGpu;
using testing::kMiniNpu;
using testing::parse_arch;
using workload::Function;

mapper::ScheduledOp placed(workload::Op op, const arch::HardwareModel& hw) {
  workload::Graph g{"g", "", {}, {}};
  g.add(std::move(op));
  mapper::Schedule s = mapper::schedule_graph(g, hw);
  EXPECT_EQ(s.ops.size(), 1u);
  return s.ops.at(0);
}

results::OpResult priced(const mapper::ScheduledOp& op, const arch::HardwareModel& hw) {
  std::string why;
  auto result = evaluate_placed(op, hw, why);
  EXPECT_TRUE(result) << why;
  return result.value_or(results::OpResult{});
}

TEST(UnitCosts, TensorCoreGemmFeedsTheGpuModelFromTheSpec) {
  const auto hw = parse_arch(kMiniGpu);
  const auto op = placed(workload::make_gemm("fc", 1024, 1024, 1024, DataType::Fp16), hw);
  const results::OpResult r = priced(op, hw);
  // The parameters by hand from kMiniGpu: 4 SMs, 512 MACs/cycle, 100 KiB smem, the default
  // 65536 registers, 32 blocks and 64 warps per SM, a 4 MiB L2 without a bandwidth limit, 1 TB/s.
  GpuParams p;
  p.sms = 4;
  p.clock_hz = 1e9;
  p.macs_per_cycle_per_sm = 512;
  p.smem_bytes_per_sm = 102400;
  p.registers_per_sm = 65536;
  p.max_blocks_per_sm = 32;
  p.max_warps_per_sm = 64;
  p.l2_bytes = 4194304;
  p.dram_bytes_per_second = 1e12;
  const GpuTileChoice expected = choose_gpu_tile({1, 1024, 1024, 1024, 2, 2}, p);
  ASSERT_TRUE(expected.cost.feasible);
  EXPECT_EQ(r.unit, results::OpUnit::TensorCore);
  EXPECT_EQ(r.mapping[0], (std::pair<std::string, std::uint64_t>{"tile_m", expected.tile.tile_m}));
  EXPECT_EQ(r.cost.cycles.value, static_cast<std::uint64_t>(std::ceil(expected.cost.cycles - 1e-9)));
  // 1024^3 MACs at 4 x 512 per cycle take at least 524288 cycles.
  EXPECT_GE(r.cost.compute_cycles.value, 524288u);
  // A, B and C (2 MiB each) fit the 4 MiB L2? 6 MiB do not, so DRAM reads exceed 4 MiB; C is
  // written once: 2 MiB.
  EXPECT_EQ(r.cost.dram_writes, Bytes{2097152});
  EXPECT_GE(r.cost.dram_reads.value, 4194304u);
  // Energy: 1 pJ per MAC + 1 pJ per L2 byte + 10 pJ per DRAM byte + 1 W over the time.
  const double joules = 1073741824 * 1e-12 +
                        static_cast<double>(r.cost.sram_reads.value + r.cost.sram_writes.value) *
                            1e-12 +
                        static_cast<double>(r.cost.dram_reads.value + r.cost.dram_writes.value) *
                            10e-12 +
                        static_cast<double>(r.cost.cycles.value) * 1e-9;
  EXPECT_NEAR(r.cost.energy.value, joules, 1e-12 * joules);
}

// An unaligned GEMM (n = 1028: C's and B's rows are 2,056 bytes, not whole 16-byte vectors) runs
// at calibration.unaligned_gemm of the datasheet rate: the GPU model with 512 x 0.25 = 128 MACs
// per cycle per SM, everything else as for an aligned one. Without the knob it is priced as
// aligned, and the op says so.
TEST(UnitCosts, AnUnalignedGemmRunsAtTheArchsUnalignedShare) {
  const auto hw = parse_arch(std::string(kMiniGpu) + "calibration: {unaligned_gemm: 0.25}\n");
  const results::OpResult r =
      priced(placed(workload::make_gemm("lm_head", 1024, 1028, 1024, DataType::Fp16), hw), hw);
  GpuParams p = gpu_params(DataType::Fp16, hw, hw.gemm_path());
  EXPECT_EQ(p.macs_per_cycle_per_sm, 512);
  p.macs_per_cycle_per_sm = 128;
  const GpuTileChoice expected = choose_gpu_tile({1, 1024, 1028, 1024, 2, 2}, p);
  ASSERT_TRUE(expected.cost.feasible);
  EXPECT_EQ(r.cost.cycles.value, static_cast<std::uint64_t>(std::ceil(expected.cost.cycles - 1e-9)));
  // 1024 x 1028 x 1024 MACs at 4 SMs x 128 per cycle: at least 2,105,344 cycles.
  EXPECT_GE(r.cost.compute_cycles.value, 2105344u);
  EXPECT_EQ(r.mapping.back(), (std::pair<std::string, std::uint64_t>{"unaligned", 1}));
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_EQ(r.notes[0], "an operand's contiguous dimension is not a whole number of 16 bytes: "
                        "priced at calibration.unaligned_gemm, 0.25 of the datasheet rate");

  const auto plain = parse_arch(kMiniGpu);
  const results::OpResult lower =
      priced(placed(workload::make_gemm("lm_head", 1024, 1028, 1024, DataType::Fp16), plain), plain);
  EXPECT_LT(lower.cost.cycles.value * 3, r.cost.cycles.value);  // 4x the rate, less the memory
  ASSERT_EQ(lower.notes.size(), 1u);
  EXPECT_EQ(lower.notes[0], "an operand's contiguous dimension is not a whole number of 16 bytes, "
                            "but 'mini-gpu' states no calibration.unaligned_gemm: priced as an "
                            "aligned GEMM (a lower bound)");
}

// The H100 preset's L2 read bandwidth (9.91 TB/s, a measured rate) reaches the GEMM model on
// either path; its 2-block cluster multicast only on wgmma (mma.sync kernels have no TMA).
TEST(UnitCosts, TheGemmModelTakesTheL2RateAndTheClusterOnWgmmaOnly) {
  Diagnostics diags;
  const auto loaded = arch::load_arch("configs/arch/nvidia_h100_sxm.yaml", diags);
  ASSERT_TRUE(loaded) << diags.format_all();
  const arch::HardwareModel hw(loaded->spec);
  const GpuParams wgmma = gpu_params(DataType::Bf16, hw, arch::TensorPath::Wgmma);
  EXPECT_EQ(wgmma.l2_bytes_per_second, 9.91e12);
  EXPECT_EQ(wgmma.cluster_multicast, 2u);
  const GpuParams mma_sync = gpu_params(DataType::Bf16, hw, arch::TensorPath::MmaSync);
  EXPECT_EQ(mma_sync.l2_bytes_per_second, 9.91e12);
  EXPECT_EQ(mma_sync.cluster_multicast, 1u);
}

TEST(UnitCosts, VectorReluIsMemoryBound) {
  const auto hw = parse_arch(kMiniGpu);
  const auto op = placed(workload::make_elementwise("act", Function::Relu, {1024, 1024},
                                                    DataType::Fp16),
                         hw);
  const results::OpResult r = priced(op, hw);
  // 1,048,576 fp16 elements: 1 op each at 256 x 4 = 1024 ops/cycle = 1024 cycles of arithmetic;
  // 2 MiB read + 2 MiB written at 1 TB/s = 4.194304 us = 4194.304 cycles -> 4195, memory-bound;
  // plus the kernel's fixed cost, the 4 us default of an arch with tensor cores (kMiniGpu states
  // no calibration): 4000 cycles -> 8195.
  EXPECT_EQ(r.unit, results::OpUnit::Vector);
  EXPECT_EQ(r.cost.compute_cycles, Cycles{1024});
  EXPECT_EQ(r.cost.cycles, Cycles{8195});
  EXPECT_EQ(r.bound, results::Bound::Memory);
  EXPECT_EQ(r.cost.dram_reads, Bytes{2097152});
  EXPECT_EQ(r.cost.dram_writes, Bytes{2097152});
  // Energy: 1,048,576 ops x 2 pJ = 2.097152 uJ; 4,194,304 DRAM bytes x 10 pJ = 41.94304 uJ;
  // 1 W x 8195 ns = 8.195 uJ; total 52.235192 uJ.
  EXPECT_NEAR(r.cost.energy.value, 52.235192e-6, 1e-12);
}

TEST(UnitCosts, TransfersMoveThroughDram) {
  const auto hw = parse_arch(kMiniGpu);
  const auto t = priced(placed(workload::make_data_movement("t", Function::Transpose,
                                                            {{1024, 1024}}, {{1024, 1024}},
                                                            DataType::Fp16),
                               hw),
                        hw);
  EXPECT_EQ(t.cost.cycles, Cycles{8195});  // 4 MiB at 1 TB/s + the 4 us fixed cost, as above
  const auto r = priced(placed(workload::make_data_movement("r", Function::Reshape, {{8, 8}},
                                                            {{64}}, DataType::Fp16),
                               hw),
                        hw);
  EXPECT_EQ(r.cost.cycles, Cycles{0});  // a reshape moves nothing and launches no kernel
  EXPECT_EQ(r.cost.energy.value, 0.0);
}

TEST(UnitCosts, AllReducePicksRingForLargeAndTreeForSmallMessages) {
  const auto hw = parse_arch(kMiniGpu);
  // 128 MiB over 8 ranks, 100 GB/s, 1 us. Ring: 14 steps x 1 us + 2 x 7/8 x 134217728 / 1e11
  // = 14e-6 + 2.34881024e-3 = 2.36281024 ms; tree: 2 x 3 x (1 us + 1.34217728 ms) = 8.06 ms.
  // Each then adds the collective kernel's fixed cost, the 4 us default: 4000 cycles.
  const auto large = priced(placed(workload::make_collective("ar", Function::AllReduce,
                                                             {67108864}, 8, DataType::Fp16),
                                   hw),
                            hw);
  EXPECT_EQ(large.cost.cycles, Cycles{2366811});  // 2362810.24 cycles at 1 GHz, rounded up, + 4000
  EXPECT_EQ(large.bound, results::Bound::Memory);
  // 1 KiB: ring 14e-6 + 1.75 x 1024 / 1e11 = 14.0179 us; tree 6 x (1e-6 + 1.024e-8) = 6.06144 us.
  const auto small = priced(placed(workload::make_collective("ar", Function::AllReduce, {512}, 8,
                                                             DataType::Fp16),
                                   hw),
                            hw);
  EXPECT_EQ(small.cost.cycles, Cycles{10062});  // 6061.44 rounded up, + 4000
  EXPECT_EQ(small.bound, results::Bound::Latency);
  EXPECT_EQ(small.mapping[1], (std::pair<std::string, std::uint64_t>{"tree", 1}));
}

// Kernels issued eagerly, `issue` apart: kernel i starts at max(end of i - 1, i x issue).
TEST(UnitCosts, HostIssuedKernelsWaitForTheHost) {
  const std::vector<double> us{5, 1, 1, 0, 1};  // microseconds; the 0 launches nothing
  std::vector<double> kernels;
  kernels.reserve(us.size());
  for (const double t : us) kernels.push_back(t * 1e-6);
  // issue 3 us: k0 0..5; k1 issued at 3, starts at 5, ends 6; k2 issued at 6, 6..7; the empty
  // entry takes no slot; k3 issued at 9 (slot 3), 9..10. Total 10 us.
  EXPECT_NEAR(host_issued_seconds(kernels, 3e-6), 10e-6, 1e-12);
  // From a CUDA graph (issue 0): the sum, 8 us.
  EXPECT_NEAR(host_issued_seconds(kernels, 0.0), 8e-6, 1e-12);
  // A host slower than every kernel: 3 slots of 20 us, then the last kernel's 1 us.
  EXPECT_NEAR(host_issued_seconds(kernels, 20e-6), 61e-6, 1e-12);
  EXPECT_EQ(host_issued_seconds({}, 20e-6), 0.0);
}

TEST(UnitCosts, ASystolicSliceRunsOnEveryArrayAtOnce) {
  const auto hw = parse_arch(kMiniNpu);
  const auto op = placed(workload::make_gemm("fc", 64, 64, 16, DataType::Int8), hw);
  const results::OpResult r = evaluate_systolic(op, hw);
  // Each of the 4 arrays runs M=64, N=16, K=16 weight-stationary on 16x8: 2 column folds of
  // T + 2R + C - 2 = 64 + 32 + 8 - 2 = 102 cycles = 204 cycles, all arrays in parallel.
  EXPECT_EQ(r.cost.compute_cycles, Cycles{204});
  EXPECT_EQ(r.cost.macs, 65536u);  // the whole op: 64 * 64 * 16
  // Utilization over the chip's 512 PEs: 65536 / (512 x 204) = 0.6275.
  EXPECT_NEAR(r.compute_utilization, 65536.0 / (512.0 * 204.0), 1e-12);
  // Weights: each array reads its 16 x 16 slice once; 4 slices = the whole 16 x 64 matrix.
  for (const auto& t : r.traffic) {
    if (t.tensor == "filter" && t.level == "dram") {
      EXPECT_EQ(t.reads, Bytes{1024});
    }
  }
}

}  // namespace
// FlashAttention-2's split-KV count, num_splits_heuristic (flash_api.cpp), on the example of its
// own comment: 48 blocks (batch x heads) on 108 SMs take 2 splits (efficiency 96 / 108 = 0.89),
// not 3 (144 / 216 = 0.67); the best efficiency is 9 splits' 1.0 (432 / 432), and 2 is the
// smallest count reaching 85% of it. 64 key blocks make every count up to 9 eligible.
TEST(UnitCosts, Fa2SplitsAsFlashAttentionsHeuristic) {
  EXPECT_EQ(fa2_num_splits(48, 108, 64, 128), 2u);
  // 32 blocks (one sequence, 32 heads) on 132 SMs over 8 key blocks of 128 keys (1024 keys):
  // efficiencies 0.24, 0.48, 0.73, 0.97 for 1-4 splits; 5-7 are not eligible (2 key blocks a
  // split, as 4), 8 gives 256 / 264 = 0.97. 85% of 0.97 is first reached at 4.
  EXPECT_EQ(fa2_num_splits(32, 132, 8, 128), 4u);
  // 512 blocks fill 80% of 132 SMs (105.6): one split. So does 106; 105 does not.
  EXPECT_EQ(fa2_num_splits(512, 132, 32, 128), 1u);
  EXPECT_EQ(fa2_num_splits(106, 132, 32, 128), 1u);
  EXPECT_GT(fa2_num_splits(105, 132, 32, 128), 1u);
  // One key block leaves nothing to split.
  EXPECT_EQ(fa2_num_splits(4, 132, 1, 128), 1u);
}

// FlashAttention-2's forward tiles (flash_fwd_launch_template.h) by head dim: 128 query rows on
// sm80/sm90 with 128 keys at d <= 64 and 64 above; split-KV 64 rows with 256 / 128 / 64 keys; d 256
// takes 64 x 64 where an SM's shared memory reaches 4 x 256 x (64 + 2 x 64) = 196,608 B (H100's
// 228 KiB), else 128 x 64 (A100's 164 KiB).
TEST(UnitCosts, Fa2ForwardTilesAsFlashAttentionLaunchesThem) {
  const auto tile = [](std::uint64_t d, std::uint64_t smem, bool split) {
    const Fa2ForwardTile t = fa2_forward_tile(d, smem, split);
    return std::pair{t.block_m, t.block_n};
  };
  constexpr std::uint64_t kH100 = 233'472, kA100 = 167'936;  // 228 KiB, 164 KiB
  EXPECT_EQ(tile(128, kH100, false), (std::pair<std::uint64_t, std::uint64_t>{128, 64}));
  EXPECT_EQ(tile(64, kH100, false), (std::pair<std::uint64_t, std::uint64_t>{128, 128}));
  EXPECT_EQ(tile(128, kH100, true), (std::pair<std::uint64_t, std::uint64_t>{64, 128}));
  EXPECT_EQ(tile(64, kH100, true), (std::pair<std::uint64_t, std::uint64_t>{64, 256}));
  EXPECT_EQ(tile(256, kH100, true), (std::pair<std::uint64_t, std::uint64_t>{64, 64}));
  EXPECT_EQ(tile(256, kH100, false), (std::pair<std::uint64_t, std::uint64_t>{64, 64}));
  EXPECT_EQ(tile(256, kA100, false), (std::pair<std::uint64_t, std::uint64_t>{128, 64}));
}

}  // namespace coda::sim::analytical
