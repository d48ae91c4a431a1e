// Hand-derived checks of the systolic traffic model (sim/analytical/systolic_traffic.h,
// docs/systolic_model.md "Traffic"): each operand at its own element size. Notation as in
// systolic_model_test.cpp: an R x C array, Sr / Sc / T, folds column fold outer.
#include "sim/analytical/systolic_traffic.h"

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "arch/arch_spec.h"
#include "sim/analytical/systolic_model.h"
#include "testing/test_hardware.h"
#include "workloads/builders.h"

namespace coda::sim::analytical {
namespace {

results::OpResult run_op(const workload::Op& op, const arch::HardwareModel& hw) {
  mapper::ScheduledOp scheduled{op.name, workload::mac_count(op), mapper::map_onto_array(op, hw)};
  scheduled.precision = DataType::Int8;
  return evaluate_systolic(scheduled, hw);
}

Bytes traffic(const results::OpResult& r, std::string_view tensor, std::string_view level) {
  for (const auto& t : r.traffic)
    if (t.tensor == tensor && t.level == level) return t.reads.value ? t.reads : t.writes;
  ADD_FAILURE() << "no traffic entry " << tensor << "/" << level;
  return {};
}

// One 16 x 8 int8 weight-stationary array; `memory` is the arch's memory: section.
arch::HardwareModel ws_array(const std::string& memory,
                             std::string_view dataflow = "weight_stationary") {
  return testing::parse_arch("schema_version: 2\nname: t\nclock: 1 GHz\ncompute:\n"
                             "  - {name: mxu, kind: systolic, array: {rows: 16, cols: 8, "
                             "dataflow: " +
                             std::string(dataflow) +
                             "}, macs_per_pe: {int8: 1}}\nmemory:\n" + memory +
                             "dram: {bandwidth: unlimited}\n");
}

// ---- 1. Every operand at its own element size ----

TEST(SystolicTraffic, Rk3588Int8GemvReadsExactlyItsWeightBytes) {
  // configs/arch/rk3588_npu.yaml lists tf32 among its precisions; its int8 tensors were priced at
  // tf32's 4 bytes (the first precision of the rate map). A GEMV M = 1, N = 3072, K = 768, int8.
  Diagnostics diags;
  const auto loaded = arch::load_arch(std::filesystem::path("configs/arch/rk3588_npu.yaml"), diags);
  ASSERT_TRUE(loaded) << diags.format_all();
  const arch::HardwareModel hw(loaded->spec);
  const workload::Op gemv = workload::make_gemm("gemv", 1, 3072, 768);
  const results::OpResult r = run_op(gemv, hw);
  // 3 cores, one 32 x 32 array each: N (the larger of M and N) is cut into 3 slices of 1024.
  // Weight stationary: Sr = K' = 768 (24 row folds), Sc = N' = 1024 (32 col folds), T = 1.
  // Filter: each fold's 32 x 32 int8 tile is 1024 B; a slice's 768 x 1024 = 786432 B do not fit
  // the working half of the filter's share of the buffer (384 KiB / 2 roles / 2 = 98304 B), so
  // every fold fetches its tile once: 768 folds x 1024 B = 786432 B per array, 3 arrays:
  // 2359296 B = 768 x 3072 x 1 B, exactly the weights (before: 4 x that, 9437184 B).
  EXPECT_EQ(traffic(r, "filter", "dram"), Bytes{768ULL * 3072});
  // The input vector, 768 B, fits whole: each array reads it once, 3 x 768.
  EXPECT_EQ(traffic(r, "ifmap", "dram"), Bytes{3ULL * 768});
  // Each of the 24 row folds writes its 32 x 1 tile, 23 as 32-bit partial sums (128 B) and the
  // last as int8 outputs (32 B): 23 x 128 + 32 = 2976 B per column fold, x 32 column folds x 3
  // arrays = 285696 B.
  EXPECT_EQ(traffic(r, "ofmap", "dram"), Bytes{(23ULL * 128 + 32) * 32 * 3});
  // The stall-free cycles are the cycle model's, unchanged: 24 x 32 folds x (1 + 64 + 32 - 2).
  EXPECT_EQ(r.cost.compute_cycles, Cycles{24ULL * 32 * 95});
}

TEST(SystolicTraffic, OutputsAtTheOpsOwnTypeAndPartialSumsAt32Bits) {
  // GEMM M = 64, N = 16, K = 48, int8 inputs, on the 16 x 8 WS array: Sr = K = 48 (3 row folds),
  // Sc = N = 16 (2 col folds), T = M = 64. The spad (16 KiB for inputs and weights: 8 KiB each,
  // 4 KiB working) holds A (64 x 48 = 3072 B) and B (48 x 16 = 768 B) whole: each read once.
  workload::Op gemm = workload::make_gemm("g", 64, 16, 48);
  const auto hw = ws_array("  - {name: spad, capacity: 16 KiB, holds: [inputs, weights]}\n"
                           "  - {name: acc, capacity: 8 KiB, holds: [outputs]}\n");
  const results::OpResult r = run_op(gemm, hw);
  EXPECT_EQ(traffic(r, "ifmap", "dram"), Bytes{3072});
  EXPECT_EQ(traffic(r, "filter", "dram"), Bytes{768});
  // A column fold's outputs are 8 x 64 = 512. Its first 2 row folds write 32-bit partial sums
  // (2048 B each), the last the int8 outputs (512 B): 2 x (2 x 2048 + 512) = 9216 B, to the
  // ofmap SRAM and to DRAM alike.
  EXPECT_EQ(traffic(r, "ofmap", "dram"), Bytes{9216});
  EXPECT_EQ(traffic(r, "ofmap", "sram"), Bytes{9216});
  // The op writes int32 (int8 products, int32 accumulation, no requantization): finished
  // outputs of 4 B, 2 x 3 x 2048 = 12288 B.
  gemm.space.accesses[2].dtype = DataType::Int32;
  EXPECT_EQ(traffic(run_op(gemm, hw), "ofmap", "dram"), Bytes{12288});
  // int4 weights are half a byte each: 48 x 16 / 2 = 384 B.
  gemm.space.accesses[1].dtype = DataType::Int4;
  EXPECT_EQ(traffic(run_op(gemm, hw), "filter", "dram"), Bytes{384});
  // The cycles do not depend on the traffic: 6 folds x (64 + 32 + 8 - 2 = 102) = 612.
  EXPECT_EQ(r.cost.compute_cycles, Cycles{612});
}

TEST(SystolicTraffic, SchemaOneCountsWords) {
  // Schema 1 keeps SCALE-Sim's word: every operand and partial sum is word_size bytes. The WS
  // GEMM above (M 64, N 16, K 48) on a 16 x 8 WS array with 2-byte words and 64 KiB SRAMs: A and
  // B fit and are read once (3072 and 768 words); every row fold writes its 8 x 64 outputs per
  // column fold, 3 x 1024 words.
  const auto hw = testing::make_array(
      {.rows = 16, .cols = 8, .dataflow = arch::Dataflow::WeightStationary, .word_size = Bytes{2}});
  const results::OpResult r = run_op(workload::make_gemm("g", 64, 16, 48), hw);
  EXPECT_EQ(traffic(r, "ifmap", "dram"), Bytes{2 * 3072});
  EXPECT_EQ(traffic(r, "filter", "dram"), Bytes{2 * 768});
  EXPECT_EQ(traffic(r, "ofmap", "dram"), Bytes{2 * 3 * 1024});
  EXPECT_EQ(traffic(r, "ofmap", "sram"), Bytes{2 * 3 * 1024});
}

}  // namespace
}  // namespace coda::sim::analytical
