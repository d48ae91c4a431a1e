// SCALE-Sim v2 USER-mode (bandwidth-limited) cycles, reproduced by simulate_scalesim_memory and
// checked against SCALE-Sim's own published goldens and against runs of SCALE-Sim recorded in
// sim/tests/data/scalesim/ (README.md there: commit, configs, command).
#include "sim/analytical/scalesim_memory.h"

#include "mapper/systolic_mapping.h"
#include "sim/analytical/systolic_model.h"
#include "testing/test_hardware.h"
#include "workloads/builders.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace coda::sim::analytical {
namespace {

using arch::Dataflow;

ScaleSimMemorySpec default_cfg(Dataflow dataflow) {
  // SCALE-Sim's configs/scale.cfg: 32x32, 64 kB per SRAM (1-byte words), Bandwidth 10.
  return {.rows = 32, .cols = 32, .dataflow = dataflow, .ifmap_words = 65536,
          .filter_words = 65536, .ofmap_words = 65536, .bandwidth_words = 10};
}

TEST(ScaleSimMemory, MatchesPublishedUserModeGoldens) {
  // scale-sim-v2 test/general/golden_trace_user_{os,ws,is}/COMPUTE_REPORT.csv (branch dev,
  // 9b3f10a5): topologies/GEMM_mnk/test_mnk_input.csv, GEMM M=256 N=128 K=256, on scale.cfg
  // with InterfaceBandwidth USER. "Total Cycles, Stall Cycles": OS 52447, 42272; WS 52447,
  // 41248; IS 19984, 5777.
  const ScaleSimGemm gemm{.m = 256, .n = 128, .k = 256};
  const auto os = simulate_scalesim_memory(default_cfg(Dataflow::OutputStationary), gemm);
  EXPECT_EQ(os.total_cycles, 52447u);
  EXPECT_EQ(os.stall_cycles, 42272u);
  EXPECT_EQ(os.demand_rows, 10176u);  // 32 folds x (256 + 32 + 32 - 2)
  const auto ws = simulate_scalesim_memory(default_cfg(Dataflow::WeightStationary), gemm);
  EXPECT_EQ(ws.total_cycles, 52447u);
  EXPECT_EQ(ws.stall_cycles, 41248u);
  EXPECT_EQ(ws.demand_rows, 11200u);
  const auto is = simulate_scalesim_memory(default_cfg(Dataflow::InputStationary), gemm);
  EXPECT_EQ(is.total_cycles, 19984u);
  EXPECT_EQ(is.stall_cycles, 5777u);
  EXPECT_EQ(is.demand_rows, 14208u);
}

// SCALE-Sim's im2col of a convolution (operand_matrix.py, calc_ifmap_elem_addr): row m is output
// pixel (m / out_w, m % out_w), column k is (filter row, filter col, channel) with the channel
// fastest; the element is its HWC address, or -1 where the window passes the edge.
std::vector<std::int64_t> conv_ifmap_ids(std::uint64_t h, std::uint64_t w, std::uint64_t r,
                                         std::uint64_t s, std::uint64_t c, std::uint64_t stride) {
  const std::uint64_t out_h = (h - r + stride + stride - 1) / stride;  // ceil, as SCALE-Sim
  const std::uint64_t out_w = (w - s + stride + stride - 1) / stride;
  std::vector<std::int64_t> ids;
  for (std::uint64_t m = 0; m < out_h * out_w; ++m)
    for (std::uint64_t k = 0; k < r * s * c; ++k) {
      const std::uint64_t row = m / out_w * stride + k / (s * c);
      const std::uint64_t col = m % out_w * stride + k / c % s;
      ids.push_back(row < h && col < w ? static_cast<std::int64_t>((row * w + col) * c + k % c)
                                       : -1);
    }
  return ids;
}

TEST(ScaleSimMemory, MatchesRecordedScaleSimRuns) {
  // sim/tests/data/scalesim/user_mode_runs.csv: SCALE-Sim itself (README.md there) on GEMMs with
  // partial folds and unequal SRAMs, and on convolutions whose windows overlap (one input element
  // read from several (m, k)), stride 2 windows past the edge and a 1x1.
  std::ifstream csv("sim/tests/data/scalesim/user_mode_runs.csv");
  ASSERT_TRUE(csv) << "run from the source tree";
  std::string line;
  std::getline(csv, line);  // header
  int rows = 0;
  while (std::getline(csv, line)) {
    std::vector<std::string> f;
    std::stringstream cells(line);
    for (std::string cell; std::getline(cells, cell, ',');) f.push_back(cell);
    ASSERT_EQ(f.size(), 18u) << line;
    const auto num = [&](std::size_t i) { return std::stoull(f[i]); };
    const Dataflow df = f[1] == "os"   ? Dataflow::OutputStationary
                        : f[1] == "ws" ? Dataflow::WeightStationary
                                       : Dataflow::InputStationary;
    const ScaleSimMemorySpec spec{.rows = num(2), .cols = num(3), .dataflow = df,
                                  .ifmap_words = num(4) * 1024, .filter_words = num(5) * 1024,
                                  .ofmap_words = num(6) * 1024, .bandwidth_words = num(7)};
    ScaleSimCycles got;
    if (f[8] == "gemm") {
      got = simulate_scalesim_memory(spec, {.m = num(9), .n = num(10), .k = num(11)});
    } else {
      const std::uint64_t h = num(9), w = num(10), r = num(11), s = num(12), c = num(13);
      const std::uint64_t filters = num(14), stride = num(15);
      const std::uint64_t out_h = (h - r + stride + stride - 1) / stride;
      const std::uint64_t out_w = (w - s + stride + stride - 1) / stride;
      const auto ids = conv_ifmap_ids(h, w, r, s, c, stride);
      got = simulate_scalesim_memory(spec, {.m = out_h * out_w, .n = filters, .k = r * s * c}, ids);
    }
    EXPECT_EQ(got.total_cycles, num(16)) << line;
    EXPECT_EQ(got.stall_cycles, num(17)) << line;
    ++rows;
  }
  EXPECT_EQ(rows, 18);
}

// --- Through the systolic model: dram: {model: scalesim} ---------------------------------------

arch::HardwareModel scalesim_array(const testing::ArrayParams& params) {
  arch::ArchSpec spec = testing::make_array(params).spec();
  spec.dram.model = arch::DramModel::ScaleSim;
  return arch::HardwareModel(spec);
}

results::OpResult run_op(const workload::Op& op, const arch::HardwareModel& hw) {
  return evaluate_systolic({op.name, workload::mac_count(op), mapper::map_onto_array(op, hw)}, hw);
}

TEST(ScaleSimDramModel, GemmGoldensThroughTheSystolicModel) {
  // The published goldens again (MatchesPublishedUserModeGoldens), from a coda op on the
  // scalesim_32x32 presets' array: cycles = compute + SCALE-Sim's stalls, one more than its
  // 0-based Total Cycles; compute cycles are SystolicModel.MatchesScaleSimGemmStallFreeCycles'.
  const workload::Op gemm = workload::make_gemm("Test 1", 256, 128, 256);
  const auto at = [&](Dataflow df) {
    return run_op(gemm, scalesim_array({.rows = 32, .cols = 32, .dataflow = df,
                                        .sram = Bytes{65536}, .bytes_per_cycle = 10.0}));
  };
  const auto os = at(Dataflow::OutputStationary);
  EXPECT_EQ(os.cost.stall_cycles, Cycles{42272});
  EXPECT_EQ(os.cost.cycles, Cycles{52447 + 1});
  const auto ws = at(Dataflow::WeightStationary);
  EXPECT_EQ(ws.cost.stall_cycles, Cycles{41248});
  EXPECT_EQ(ws.cost.cycles, Cycles{52447 + 1});
  const auto is = at(Dataflow::InputStationary);
  EXPECT_EQ(is.cost.stall_cycles, Cycles{5777});
  EXPECT_EQ(is.cost.cycles, Cycles{19984 + 1});
  // coda's own model on the same array (the default) stalls differently: it is not SCALE-Sim's.
  const auto own = run_op(gemm, testing::make_array({.rows = 32, .cols = 32,
                                                     .sram = Bytes{65536},
                                                     .bytes_per_cycle = 10.0}));
  EXPECT_NE(own.cost.stall_cycles, os.cost.stall_cycles);
}

TEST(ScaleSimDramModel, ConvolutionsFromTheOpsInputAccess) {
  // Recorded runs (user_mode_runs.csv) conv3x3 and conv3x3_stride2_edge, from coda conv ops: the
  // input elements and SCALE-Sim's (filter row, filter col, channel) order come from the op's
  // Einsum, whose own K order is (channel, row, col).
  const workload::Op conv3x3 = workload::make_conv2d(
      "conv3x3", {.in_h = 16, .in_w = 16, .in_channels = 8, .filter_h = 3, .filter_w = 3,
                  .out_channels = 16},
      14, 14);
  const std::pair<Dataflow, std::uint64_t> conv3x3_stalls[] = {
      {Dataflow::OutputStationary, 13078},
      {Dataflow::WeightStationary, 4204},
      {Dataflow::InputStationary, 10476}};
  for (const auto& [df, stalls] : conv3x3_stalls) {
    const auto r = run_op(conv3x3, scalesim_array({.rows = 16, .cols = 16, .dataflow = df,
                                                   .sram = Bytes{2048}, .bytes_per_cycle = 8.0}));
    EXPECT_EQ(r.cost.stall_cycles, Cycles{stalls});
  }
  // Stride 2 on 16 x 16: SCALE-Sim's ceil((16 - 3 + 2) / 2) = 8 outputs a side, the last
  // window one past the edge (no element there).
  const workload::Op edge = workload::make_conv2d(
      "edge", {.in_h = 16, .in_w = 16, .in_channels = 4, .filter_h = 3, .filter_w = 3,
               .out_channels = 8, .stride_h = 2, .stride_w = 2},
      8, 8);
  const std::pair<Dataflow, std::uint64_t> edge_stalls[] = {
      {Dataflow::OutputStationary, 664},
      {Dataflow::WeightStationary, 2851},
      {Dataflow::InputStationary, 1058}};
  for (const auto& [df, stalls] : edge_stalls) {
    const auto r = run_op(edge, scalesim_array({.rows = 8, .cols = 8, .dataflow = df,
                                                .sram = Bytes{1024}, .bytes_per_cycle = 2.0}));
    EXPECT_EQ(r.cost.stall_cycles, Cycles{stalls});
  }
}

}  // namespace
}  // namespace coda::sim::analytical
