// SCALE-Sim v2 USER-mode (bandwidth-limited) cycles, reproduced by simulate_scalesim_memory and
// checked against SCALE-Sim's own published goldens and against runs of SCALE-Sim recorded in
// sim/tests/data/scalesim/ (README.md there: commit, configs, command).
#include "sim/analytical/scalesim_memory.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace coda::sim::analytical
