// Hand-derived checks of the systolic traffic model (sim/analytical/systolic_traffic.h,
// docs/systolic_model.md "Traffic"): each operand at its own element size, feature-map fetches
// with halos instead of the im2col-unrolled matrix, and the accumulator level. Notation as in
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

std::uint64_t mapping_entry(const results::OpResult& r, std::string_view key) {
  for (const auto& [name, value] : r.mapping)
    if (name == key) return value;
  ADD_FAILURE() << "no mapping entry " << key;
  return 0;
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
  // The core's 10 KiB accumulator holds a column fold's 32 x 1 partial sums (128 B): the 24 row
  // folds add up there and the outputs go to DRAM once, 3072 x 1 B (before the preset stated an
  // accumulator: 23 x 128 + 32 B per column fold, 285696 B).
  EXPECT_EQ(traffic(r, "ofmap", "dram"), Bytes{3072});
  EXPECT_TRUE(r.notes.empty());
  EXPECT_EQ(mapping_entry(r, "stripes"), 1u);
  // The preset overlaps weight loads (weight_preload: overlapped): 24 x 32 folds of
  // max(1, 32) + 32 + 32 - 2 = 94 cycles, and the first load, 32.
  EXPECT_EQ(r.cost.compute_cycles, Cycles{24ULL * 32 * 94 + 32});
}

TEST(SystolicTraffic, OutputsAtTheOpsOwnTypeAndPartialSumsAt32Bits) {
  // GEMM M = 64, N = 16, K = 48, int8 inputs, on the 16 x 8 WS array: Sr = K = 48 (3 row folds),
  // Sc = N = 16 (2 col folds), T = M = 64. The spad (16 KiB for inputs and weights: 8 KiB each,
  // 4 KiB working) holds A (64 x 48 = 3072 B) and B (48 x 16 = 768 B) whole: each read once.
  // A column fold's outputs are 8 x 64 = 512, as 32-bit partial sums 2048 B.
  workload::Op gemm = workload::make_gemm("g", 64, 16, 48);
  const std::string spad = "  - {name: spad, capacity: 16 KiB, holds: [inputs, weights]}\n";
  // An accumulator of 8 KiB (4 KiB working, double-buffered) holds the 2048 B: partial sums add
  // up on chip and only the finished outputs go to DRAM, once: 64 x 16 x 1 B = 1024 B (before:
  // every row fold's tile, 3 x 1024 B).
  const auto with_acc = ws_array(spad + "  - {name: acc, capacity: 8 KiB, holds: [outputs]}\n");
  const results::OpResult acc = run_op(gemm, with_acc);
  EXPECT_EQ(traffic(acc, "ifmap", "dram"), Bytes{3072});
  EXPECT_EQ(traffic(acc, "filter", "dram"), Bytes{768});
  EXPECT_EQ(traffic(acc, "ofmap", "dram"), Bytes{1024});
  EXPECT_TRUE(acc.notes.empty());
  // SRAM: the array writes 2 row folds of partial sums (2 x 512 x 4 B) and the finished outputs
  // (512 x 1 B) per column fold: 2 x (4096 + 512) = 9216 B.
  EXPECT_EQ(traffic(acc, "ofmap", "sram"), Bytes{9216});
  // The op writes int32 (int8 products, int32 accumulation, no requantization): 4 B outputs.
  gemm.space.accesses[2].dtype = DataType::Int32;
  EXPECT_EQ(traffic(run_op(gemm, with_acc), "ofmap", "dram"), Bytes{64ULL * 16 * 4});
  gemm.space.accesses[2].dtype = DataType::Int8;
  // int4 weights are half a byte each: 48 x 16 / 2 = 384 B.
  gemm.space.accesses[1].dtype = DataType::Int4;
  EXPECT_EQ(traffic(run_op(gemm, with_acc), "filter", "dram"), Bytes{384});
  gemm.space.accesses[1].dtype = DataType::Int8;
  // An accumulator of 2 KiB (1 KiB working) cannot hold 2048 B of partial sums: every row fold
  // writes its tile, 2 x 2048 + 512 = 4608 B per column fold, 9216 B; the note says why.
  const results::OpResult small =
      run_op(gemm, ws_array(spad + "  - {name: acc, capacity: 2 KiB, holds: [outputs]}\n"));
  EXPECT_EQ(traffic(small, "ofmap", "dram"), Bytes{9216});
  ASSERT_EQ(small.notes.size(), 1u);
  EXPECT_NE(small.notes[0].find("1024 B working part of 'acc'"), std::string::npos)
      << small.notes[0];
  // No level holding outputs: the same 9216 B, as partial sums went before (then at the word).
  const results::OpResult none = run_op(gemm, ws_array(spad));
  EXPECT_EQ(traffic(none, "ofmap", "dram"), Bytes{9216});
  ASSERT_EQ(none.notes.size(), 1u);
  EXPECT_NE(none.notes[0].find("no memory level holding outputs"), std::string::npos);
  // The cycles do not depend on the traffic: 6 folds x (64 + 32 + 8 - 2 = 102) = 612.
  EXPECT_EQ(acc.cost.compute_cycles, Cycles{612});
  EXPECT_EQ(none.cost.compute_cycles, Cycles{612});
}

// A GEMM that adds into its output (C += A B: every weight gradient of a training step). The
// input reading C at C's own indices is the accumulator, no operand of the loops: it is read
// once per output tile, where the tile's sums start, and the streamed input's fetches are A's
// alone. Before, it counted as part of the ifmap: each fold fetched A's tile and all of C's T x
// Sc (LLaMA-2-7B's ffn.down weight gradient on TPU v4 read 47.6 GB from DRAM for 62 MB of
// operands).
TEST(SystolicTraffic, AnAccumulatingGemmReadsItsOutputOncePerOutputTile) {
  // The GEMM of OutputsAtTheOpsOwnTypeAndPartialSumsAt32Bits: M = 64, N = 16, K = 48 int8 on the
  // 16 x 8 WS array, 3 row folds x 2 col folds, T = 64; A (3072 B) and B (768 B) fit whole.
  workload::Op gemm = workload::make_gemm("dw", 64, 16, 48);
  workload::TensorAccess c_in = gemm.space.accesses.back();
  c_in.role = workload::TensorRole::Input;
  c_in.tensor = "C_in";
  gemm.space.accesses.insert(gemm.space.accesses.end() - 1, c_in);
  const std::string spad = "  - {name: spad, capacity: 16 KiB, holds: [inputs, weights]}\n";
  const auto with_acc = ws_array(spad + "  - {name: acc, capacity: 8 KiB, holds: [outputs]}\n");
  const results::OpResult acc = run_op(gemm, with_acc);
  // A and B as without the accumulator: each read once.
  EXPECT_EQ(traffic(acc, "ifmap", "dram"), Bytes{3072});
  EXPECT_EQ(traffic(acc, "filter", "dram"), Bytes{768});
  // C's 64 x 16 int8 earlier values are read once, 512 B per column fold before its first row
  // fold (the ofmap entry's reads); the finished outputs are written once, 1024 B.
  Bytes c_read{}, c_written{};
  for (const auto& t : acc.traffic)
    if (t.tensor == "ofmap" && t.level == "dram") c_read = t.reads, c_written = t.writes;
  EXPECT_EQ(c_read, Bytes{1024});
  EXPECT_EQ(c_written, Bytes{1024});
  EXPECT_EQ(acc.cost.dram_reads, Bytes{3072 + 768 + 1024});
  // With no level holding outputs the partial sums go to DRAM (9216 B, as without C_in), and C's
  // earlier values are still read once, before each column fold's first row fold.
  const results::OpResult none = run_op(gemm, ws_array(spad));
  EXPECT_EQ(none.cost.dram_reads, Bytes{3072 + 768 + 1024});
  EXPECT_EQ(none.cost.dram_writes, Bytes{9216});
  // The cycles: the same 612 of the plain GEMM (the accumulator adds no MACs).
  EXPECT_EQ(acc.cost.compute_cycles, Cycles{612});
}

// Arrays of one core read their operands from the core's buffer: the operand every slice reads
// whole is fetched from DRAM once for all of them (a TPU core's four MXUs and its VMEM), not once
// per array.
TEST(SystolicTraffic, ArraysOfOneCoreShareTheFetchOfTheOperandTheyAllRead) {
  // Two 16 x 8 WS arrays in one core; a 16 KiB spad for inputs and weights: per array and role
  // 16 KiB / (2 roles x 2 arrays) = 4 KiB, 2 KiB working. GEMM M = 64, N = 16, K = 48: M is the
  // larger, so each array runs M = 32 (T = 32) against all of B. Its slice of A (32 x 48 =
  // 1536 B) and B (48 x 16 = 768 B) fit: each is fetched once per array.
  const auto two = testing::parse_arch(
      "schema_version: 2\nname: t\nclock: 1 GHz\ncompute:\n"
      "  - {name: mxu, kind: systolic, count: 2, array: {rows: 16, cols: 8, "
      "dataflow: weight_stationary}, macs_per_pe: {int8: 1}}\nmemory:\n"
      "  - {name: spad, capacity: 16 KiB, holds: [inputs, weights]}\n"
      "  - {name: acc, capacity: 16 KiB, holds: [outputs]}\n"
      "dram: {bandwidth: unlimited}\n");
  const results::OpResult r = run_op(workload::make_gemm("g", 64, 16, 48), two);
  EXPECT_EQ(mapping_entry(r, "arrays"), 2u);
  EXPECT_EQ(mapping_entry(r, "T"), 32u);
  // A: two different halves, 2 x 1536 B. B: the same 768 B for both arrays, fetched once (not
  // 2 x 768). Outputs: each array its own 32 x 16, 1024 B in all.
  EXPECT_EQ(traffic(r, "ifmap", "dram"), Bytes{3072});
  EXPECT_EQ(traffic(r, "filter", "dram"), Bytes{768});
  EXPECT_EQ(traffic(r, "ofmap", "dram"), Bytes{1024});
  // The arrays still each read B from the buffer: 3 row folds x 2 col folds of 16 x 8 tiles,
  // 768 B per array.
  EXPECT_EQ(traffic(r, "filter", "sram"), Bytes{2ULL * 768});
}

// The 16 x 8 int8 WS array with accumulation: stripes, and `preload` (exposed or overlapped).
arch::HardwareModel striped_array(const std::string& memory, std::string_view preload) {
  return testing::parse_arch(
      "schema_version: 2\nname: t\nclock: 1 GHz\ncompute:\n"
      "  - {name: mxu, kind: systolic, array: {rows: 16, cols: 8, dataflow: weight_stationary, "
      "accumulation: stripes, weight_preload: " +
      std::string(preload) + "}, macs_per_pe: {int8: 1}}\nmemory:\n" + memory +
      "dram: {bandwidth: unlimited}\n");
}

TEST(SystolicTraffic, StripesKeepPartialSumsInASmallAccumulator) {
  // The GEMM above (M = 64, N = 16, K = 48, int8; 3 row folds of K, 2 column folds of N,
  // T = M = 64) with a 2 KiB accumulator (1 KiB working): a column fold's 8 x 64 partial sums
  // (2048 B) do not fit, so without stripes every row fold's tile goes to DRAM (9216 B, above).
  // With accumulation: stripes, S = 1024 B x 8 / (8 columns x 32 bits) = 32 pixels: 2 stripes
  // per column fold, each run through the 3 row folds; 2 x 2 x 3 = 12 folds of T = 32.
  const workload::Op gemm = workload::make_gemm("g", 64, 16, 48);
  const std::string acc = "  - {name: acc, capacity: 2 KiB, holds: [outputs]}\n";
  // A 2 KiB spad: 1 KiB per role, 512 B working. A (3072 B) and B (768 B) do not fit whole; a
  // column fold's filter (48 x 8 = 384 B) does.
  const std::string spad = "  - {name: spad, capacity: 2 KiB, holds: [inputs, weights]}\n";
  const results::OpResult r = run_op(gemm, striped_array(spad + acc, "exposed"));
  EXPECT_EQ(mapping_entry(r, "stripe"), 32u);
  EXPECT_EQ(mapping_entry(r, "stripes"), 2u);
  // No partial sum reaches DRAM: the finished outputs once, 64 x 16 x 1 B; no note.
  EXPECT_EQ(traffic(r, "ofmap", "dram"), Bytes{1024});
  EXPECT_TRUE(r.notes.empty());
  // Filter: each fold's 16 x 8 tile (128 B) is fetched by the first stripe only; the second
  // stripe finds the column fold's 384 B still in the buffer: 768 B, B once.
  EXPECT_EQ(traffic(r, "filter", "dram"), Bytes{768});
  // Ifmap: every fold's 16 x 32 tile (512 B) is new (the row fold moves every fold): 12 x 512 B
  // = 6144 B, A once per column fold, as without stripes.
  EXPECT_EQ(traffic(r, "ifmap", "dram"), Bytes{6144});
  // SRAM: the filter is loaded into the array once per stripe, 48 x 16 x 2 = 1536 B; the ifmap
  // streams 48 x 64 per column fold, 6144 B; per (column fold, stripe) the array writes 2 row
  // folds of 8 x 32 partial sums (1024 B each) and 8 x 32 finished outputs (256 B): 4 x 2304.
  EXPECT_EQ(traffic(r, "filter", "sram"), Bytes{1536});
  EXPECT_EQ(traffic(r, "ifmap", "sram"), Bytes{6144});
  EXPECT_EQ(traffic(r, "ofmap", "sram"), Bytes{9216});
  // Cycles: 12 folds of T = 32, each 32 + 2 x 16 + 8 - 2 = 70 (the weights preload per stripe):
  // 840, against 6 x 102 = 612 unstriped. Unlimited bandwidth: no stalls.
  EXPECT_EQ(r.cost.compute_cycles, Cycles{840});
  EXPECT_EQ(r.cost.cycles, Cycles{840});
  EXPECT_DOUBLE_EQ(r.mapping_efficiency, 1.0);  // 48 x 16 on 3 x 2 folds of 16 x 8

  // A 1 KiB spad (256 B working) does not hold a column fold's filter: each stripe fetches its
  // 128 B tiles again, 12 x 128 = 1536 B.
  const std::string tiny = "  - {name: spad, capacity: 1 KiB, holds: [inputs, weights]}\n";
  EXPECT_EQ(traffic(run_op(gemm, striped_array(tiny + acc, "exposed")), "filter", "dram"),
            Bytes{1536});

  // weight_preload: overlapped: a fold loads the next tile while it streams, so it takes
  // max(32, 16) + 16 + 8 - 2 = 54, and the first load (16) is exposed once: 12 x 54 + 16 = 664.
  const results::OpResult overlapped = run_op(gemm, striped_array(spad + acc, "overlapped"));
  EXPECT_EQ(overlapped.cost.compute_cycles, Cycles{664});
  EXPECT_EQ(traffic(overlapped, "ofmap", "dram"), Bytes{1024});

  // A 3 KiB accumulator (1536 B working): S = 1536 x 8 / 256 = 48, stripes of 48 and 16 pixels.
  // Per column fold 3 folds of 48 + 38 = 86 and 3 of 16 + 38 = 54 cycles: 2 x 420 = 840; SRAM
  // ofmap as before (the stripes partition T), DRAM still the outputs once.
  const results::OpResult uneven = run_op(
      gemm, striped_array(spad + "  - {name: acc, capacity: 3 KiB, holds: [outputs]}\n",
                          "exposed"));
  EXPECT_EQ(mapping_entry(uneven, "stripe"), 48u);
  EXPECT_EQ(mapping_entry(uneven, "stripes"), 2u);
  EXPECT_EQ(uneven.cost.compute_cycles, Cycles{840});
  EXPECT_EQ(traffic(uneven, "ofmap", "dram"), Bytes{1024});
  EXPECT_EQ(traffic(uneven, "ofmap", "sram"), Bytes{9216});

  // An accumulator that holds the whole column fold (8 KiB, 4 KiB working): one stripe of 64,
  // exactly the unstriped result (612 cycles, outputs once).
  const results::OpResult whole = run_op(
      gemm, striped_array(spad + "  - {name: acc, capacity: 8 KiB, holds: [outputs]}\n",
                          "exposed"));
  EXPECT_EQ(mapping_entry(whole, "stripe"), 64u);
  EXPECT_EQ(mapping_entry(whole, "stripes"), 1u);
  EXPECT_EQ(whole.cost.compute_cycles, Cycles{612});
  EXPECT_EQ(traffic(whole, "ofmap", "dram"), Bytes{1024});
}

// ---- 2. Feature maps, not unrolled matrices ----

// A 3 x 3 conv, pad 1, stride 1: input 1 x 4 x 8 x 8 int8 (256 B), 8 filters (288 B), output
// 1 x 8 x 8 x 8. GEMM view: M' = 64 pixels, N' = 8 filters, K' = 4 x 3 x 3 = 36 (c, r, s in
// that order, s fastest). Its im2col-unrolled ifmap is 64 x 36 = 2304 B, 9 x the feature map.
workload::Op conv3x3() {
  return workload::make_conv2d("conv", {.in_h = 8, .in_w = 8, .in_channels = 4, .filter_h = 3,
                                        .filter_w = 3, .out_channels = 8, .pad_h = 1, .pad_w = 1},
                               8, 8);
}

TEST(SystolicTraffic, WeightStationaryConvFetchesTheFeatureMapNotItsUnrolling) {
  // WS on 16 x 8: Sr = K' = 36 -> row folds of K' [0, 16), [16, 32), [32, 36); Sc = N' = 8, one
  // column fold; T = M' = 64. A row fold's ifmap tile is its K' range over all 64 pixels:
  //   [0, 16)  = channel 0 (9 taps) and channel 1 taps 0-6: channels 0-1, every tap row and
  //              column, so input rows p + r - 1 over p 0-7, r 0-2 clip to 0-7: 2 x 8 x 8 = 128 B
  //   [16, 32) = channel 1 taps 7-8, channel 2, channel 3 taps 0-4: channels 1-3, 3 x 64 = 192 B
  //   [32, 36) = channel 3 taps 5-8 (r 1-2, s 0-2): rows p + r - 1 over r 1-2 clip to 0-7: 64 B
  // (each fewer than its unrolled 16 x 64, 16 x 64, 4 x 64 words).
  const workload::Op conv = conv3x3();
  const std::string acc = "  - {name: acc, capacity: 4 KiB, holds: [outputs]}\n";
  // A 1 KiB spad: 512 B per operand, 256 B working. The whole feature map (256 B) fits: each
  // element is fetched once, by the first fold that needs it: 128 B (channels 0-1), then the
  // prefix K' [0, 32) reaches channels 0-3 (256 B): 128 B more, then nothing. 256 B in all.
  const auto fits =
      ws_array("  - {name: spad, capacity: 1 KiB, holds: [inputs, weights]}\n" + acc);
  const results::OpResult once = run_op(conv, fits);
  EXPECT_EQ(traffic(once, "ifmap", "dram"), Bytes{256});
  const SystolicTraffic folds = systolic_traffic(mapper::map_onto_array(conv, fits), fits);
  ASSERT_EQ(folds.folds.size(), 3u);
  EXPECT_EQ(folds.folds[0].ifmap, 128u);
  EXPECT_EQ(folds.folds[1].ifmap, 128u);
  EXPECT_EQ(folds.folds[2].ifmap, 0u);
  // The filter (8 x 4 x 3 x 3 = 288 B) does not fit the 256 B whole; its tiles (16 x 8, 16 x 8
  // and 4 x 8 filter elements, each a contiguous run of the filter) are each fetched once:
  // 128 + 128 + 32 = 288 B, the filter's bytes.
  EXPECT_EQ(traffic(once, "filter", "dram"), Bytes{288});
  // A 512 B spad: 128 B working, less than the feature map: every row fold fetches its tile's
  // window, 128 + 192 + 64 = 384 B (channels 1 and 3 twice), against 2304 B unrolled.
  const results::OpResult tiles =
      run_op(conv, ws_array("  - {name: spad, capacity: 512 B, holds: [inputs, weights]}\n" + acc));
  EXPECT_EQ(traffic(tiles, "ifmap", "dram"), Bytes{384});
  EXPECT_EQ(traffic(tiles, "filter", "dram"), Bytes{288});
  // The array is still fed the unrolled stream from the spad: 36 x 64 = 2304 B of SRAM reads.
  EXPECT_EQ(traffic(tiles, "ifmap", "sram"), Bytes{2304});
  // Outputs: 3 row folds of 8 x 64 partial sums (2048 B at 32 bits) fit the accumulator's 2 KiB
  // working half: the 64 x 8 int8 outputs go to DRAM once, 512 B.
  EXPECT_EQ(traffic(tiles, "ofmap", "dram"), Bytes{512});
  // 3 folds x (64 + 2 x 16 + 8 - 2 = 102) = 306 cycles, as before.
  EXPECT_EQ(tiles.cost.compute_cycles, Cycles{306});
}

TEST(SystolicTraffic, StripedConvFetchesEachStripesWindowWithItsHalo) {
  // conv3x3() on the 16 x 8 WS array with accumulation: stripes and a 2 KiB accumulator (1 KiB
  // working): 8 x 64 partial sums are 2048 B, so S = 1024 x 8 / (8 x 32) = 32 pixels = output
  // rows 0-3 and 4-7, which read input rows 0-4 and 3-7 (pad 1). K' = 36 in 3 row folds:
  // [0, 16) is channels 0-1, [16, 32) channels 1-3, [32, 36) channel 3 taps r = 1..2.
  const workload::Op conv = conv3x3();
  const std::string acc = "  - {name: acc, capacity: 2 KiB, holds: [outputs]}\n";
  // The map (256 B) fits a 16 KiB spad (4 KiB working): fetched once, 256 B, each element by the
  // first fold whose window reaches it (stripe 0: 80 + 80 + 0; stripe 1 the rows 5-7 of
  // channels 0-1, then of 2-3: 48 + 48 + 0). The filter once, 288 B; the outputs once, 512 B.
  const std::string big = "  - {name: spad, capacity: 16 KiB, holds: [inputs, weights]}\n";
  const results::OpResult fits = run_op(conv, striped_array(big + acc, "exposed"));
  EXPECT_EQ(mapping_entry(fits, "stripes"), 2u);
  EXPECT_EQ(traffic(fits, "ifmap", "dram"), Bytes{256});
  EXPECT_EQ(traffic(fits, "filter", "dram"), Bytes{288});
  EXPECT_EQ(traffic(fits, "ofmap", "dram"), Bytes{512});
  // A 512 B spad (128 B working) holds neither: every fold fetches its window, halo included:
  // stripe 0: 2 x 5 x 8 = 80, 3 x 5 x 8 = 120, 1 x 5 x 8 = 40; stripe 1: 80, 120 and channel 3
  // rows 4-7 (taps r = 1..2 of output rows 4-7 reach rows 4-8, clipped) 1 x 4 x 8 = 32: 472 B.
  // The filter's tiles (128, 128, 32 B) again for the second stripe: 576 B.
  const std::string small = "  - {name: spad, capacity: 512 B, holds: [inputs, weights]}\n";
  const results::OpResult tiles = run_op(conv, striped_array(small + acc, "exposed"));
  EXPECT_EQ(traffic(tiles, "ifmap", "dram"), Bytes{472});
  EXPECT_EQ(traffic(tiles, "filter", "dram"), Bytes{576});
  EXPECT_EQ(traffic(tiles, "ofmap", "dram"), Bytes{512});
}

TEST(SystolicTraffic, OutputStationaryConvFetchesEachPixelTileWithItsHalo) {
  // OS on 16 x 8: Sr = M' = 64 pixels -> 4 row folds of 16 pixels = 2 output rows each; Sc = N'
  // = 8, one column fold; T = K' = 36. A row fold's tile reads all 4 channels over the input
  // rows p + r - 1 of its output rows p, r 0-2 (a halo of one row on each side, clipped at the
  // edges), and all 8 columns:
  //   p 0-1: rows 0-2 (3), p 2-3: rows 1-4 (4), p 4-5: rows 3-6 (4), p 6-7: rows 5-7 (3).
  const workload::Op conv = conv3x3();
  const std::string acc = "  - {name: acc, capacity: 4 KiB, holds: [outputs]}\n";
  // 512 B spad (128 B working, less than the 256 B map): every row fold fetches its window,
  // halo included: 4 channels x 8 columns x (3 + 4 + 4 + 3) rows = 448 B.
  const results::OpResult halos = run_op(
      conv, ws_array("  - {name: spad, capacity: 512 B, holds: [inputs, weights]}\n" + acc,
                     "output_stationary"));
  EXPECT_EQ(traffic(halos, "ifmap", "dram"), Bytes{448});
  // 1 KiB spad (256 B working): the map fits, each row is fetched once, the first time a halo
  // reaches it: rows 0-2, then 3-4, then 5-6, then 7: 4 x 8 x (3 + 2 + 2 + 1) = 256 B.
  const auto fits = ws_array("  - {name: spad, capacity: 1 KiB, holds: [inputs, weights]}\n" + acc,
                             "output_stationary");
  EXPECT_EQ(traffic(run_op(conv, fits), "ifmap", "dram"), Bytes{256});
  const SystolicTraffic folds = systolic_traffic(mapper::map_onto_array(conv, fits), fits);
  ASSERT_EQ(folds.folds.size(), 4u);
  EXPECT_EQ(folds.folds[0].ifmap, 96u);
  EXPECT_EQ(folds.folds[1].ifmap, 64u);
  EXPECT_EQ(folds.folds[2].ifmap, 64u);
  EXPECT_EQ(folds.folds[3].ifmap, 32u);
  // Output stationary finishes its outputs in the PEs: each fold writes its 16 x 8 int8 outputs
  // once, 512 B in all, and no partial sums move.
  EXPECT_EQ(traffic(halos, "ofmap", "dram"), Bytes{512});
  EXPECT_EQ(folds.partial_sums, PartialSums::None);
  EXPECT_TRUE(halos.notes.empty());
}

TEST(SystolicTraffic, SchemaOneCountsWords) {
  // Schema 1 keeps SCALE-Sim's word: every operand and partial sum is word_size bytes. The WS
  // GEMM of OutputsAtTheOpsOwnTypeAndPartialSumsAt32Bits (M 64, N 16, K 48) on a 16 x 8 WS
  // array with 2-byte words and 64 KiB SRAMs: A and B fit and are read once (3072 and 768
  // words); the ofmap SRAM is the accumulator, its 32 KiB working half holds a column fold's
  // 8 x 64 partial sums (1024 B), so the 1024 outputs go to DRAM once: 2048 B.
  const auto hw = testing::make_array(
      {.rows = 16, .cols = 8, .dataflow = arch::Dataflow::WeightStationary, .word_size = Bytes{2}});
  const results::OpResult r = run_op(workload::make_gemm("g", 64, 16, 48), hw);
  EXPECT_EQ(traffic(r, "ifmap", "dram"), Bytes{2ULL * 3072});
  EXPECT_EQ(traffic(r, "filter", "dram"), Bytes{2ULL * 768});
  EXPECT_EQ(traffic(r, "ofmap", "dram"), Bytes{2ULL * 1024});
  // SRAM counts are SCALE-Sim's words x 2: ofmap 3 row folds x 1024 words.
  EXPECT_EQ(traffic(r, "ofmap", "sram"), Bytes{2ULL * 3 * 1024});
}

TEST(SystolicTraffic, PackedDepthwiseConvFetchesEachChannelOnceAndItsFilterDense) {
  // A 3x3 depthwise conv, 32 channels of 56x56, pad 1, on a 32x32 WS array of 1-byte words, its
  // 32 groups packed side by side (systolic_model_test.cpp derives why: 9 folds, the fewest).
  // Sr = K' = 32 channels x 9 taps = 288 in 9 row folds of 32 rows; channel g owns rows
  // [9g, 9g + 9). Row fold i's tile covers channels floor(32i / 9) .. floor((32i + 31) / 9):
  //   0-3, 3-7, 7-10, 10-14, 14-17, 17-21, 21-24, 24-28, 28-31
  // each channel's whole 56 x 56 map (its taps span every input row and column): 3136 B each.
  const workload::Op dw = workload::make_conv2d(
      "dw", {.in_h = 56, .in_w = 56, .in_channels = 32, .filter_h = 3, .filter_w = 3,
             .out_channels = 32, .pad_h = 1, .pad_w = 1, .groups = 32},
      56, 56);
  const auto pack = [&](const arch::HardwareModel& hw) {
    return mapper::with_packing(mapper::map_onto_array(dw, hw), hw, 32);
  };
  // 1 MiB SRAMs (512 KiB working): the map (100352 B) fits, so each fold fetches the channels
  // no earlier fold reached: 4, 4, 3, 4, 3, 4, 3, 4, 3 of them.
  const auto fits = testing::make_array({.rows = 32, .cols = 32,
                                         .dataflow = arch::Dataflow::WeightStationary,
                                         .sram = Bytes{1024ULL * 1024}});
  const SystolicTraffic once = systolic_traffic(pack(fits), fits);
  ASSERT_EQ(once.folds.size(), 9u);
  const std::uint64_t channels_once[] = {4, 4, 3, 4, 3, 4, 3, 4, 3};
  for (std::size_t i = 0; i < 9; ++i) {
    EXPECT_EQ(once.folds[i].ifmap, channels_once[i] * 3136) << "fold " << i;
    // The block-diagonal filter is stored dense: each fold's 32 x 32 tile, zeros included.
    EXPECT_EQ(once.folds[i].filter, 1024u) << "fold " << i;
    // A column fold's 32 x 3136 partial sums (100352 B) add up in the ofmap SRAM; the last
    // row fold writes the finished outputs.
    EXPECT_EQ(once.folds[i].ofmap, i == 8 ? 100352u : 0u) << "fold " << i;
  }
  EXPECT_EQ(once.partial_sums, PartialSums::Accumulated);
  // 64 KiB SRAMs (32 KiB working): the map does not fit, so each fold fetches its tile's
  // channels, shared ones again: 4, 5, 4, 5, 4, 5, 4, 5, 4 channels = 40 x 3136 = 125440 B. The
  // partial sums do not fit either: every row fold writes its 32 x 3136 tile, 9 x 100352 B.
  const auto small = testing::make_array(
      {.rows = 32, .cols = 32, .dataflow = arch::Dataflow::WeightStationary});
  const SystolicTraffic tiles = systolic_traffic(pack(small), small);
  const std::uint64_t channels_tiles[] = {4, 5, 4, 5, 4, 5, 4, 5, 4};
  for (std::size_t i = 0; i < 9; ++i)
    EXPECT_EQ(tiles.folds[i].ifmap, channels_tiles[i] * 3136) << "fold " << i;
  EXPECT_EQ(tiles.dram[0], 125440u);
  EXPECT_EQ(tiles.dram[1], 9216u);
  EXPECT_EQ(tiles.dram[2], 9u * 100352);
  EXPECT_EQ(tiles.partial_sums, PartialSums::ToDram);
}

}  // namespace
}  // namespace coda::sim::analytical
