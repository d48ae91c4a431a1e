// Hand-derived and externally referenced checks of the analytical systolic model. Notation:
// an R x C array; Sr, Sc, T as in mapper/systolic_mapping.h; a fold takes T + R + C - 2 cycles
// (output stationary) or T + 2R + C - 2 (weight / input stationary).
#include "sim/analytical/systolic_model.h"

#include <gtest/gtest.h>

#include "mapper/loop_nest_model.h"
#include "testing/test_hardware.h"
#include "workloads/builders.h"

namespace coda::sim::analytical {
namespace {

using arch::Dataflow;
using testing::ArrayParams;
using testing::make_array;

results::OpResult run_op(const workload::Op& op, const ArrayParams& params) {
  const arch::HardwareModel hw = make_array(params);
  return evaluate_systolic({op.name, workload::mac_count(op), mapper::map_onto_array(op, hw)}, hw);
}

std::uint64_t mapping_entry(const results::OpResult& r, std::string_view key) {
  for (const auto& [name, value] : r.mapping)
    if (name == key) return value;
  ADD_FAILURE() << "no mapping entry " << key;
  return 0;
}

Bytes traffic(const results::OpResult& r, std::string_view tensor, std::string_view level) {
  for (const auto& t : r.traffic)
    if (t.tensor == tensor && t.level == level) return t.reads.value ? t.reads : t.writes;
  ADD_FAILURE() << "no traffic entry " << tensor << "/" << level;
  return {};
}

// --- External reference: SCALE-Sim v2's stored golden reports ---------------------------------

TEST(SystolicModel, MatchesScaleSimGoldenAlexNetConv1WeightStationary) {
  // SCALE-Sim v2 test/golden_trace/COMPUTE_REPORT.csv: topologies/conv_nets/alexnet_part.csv
  // (Conv1: ifmap 224x224, 11x11 filter, 3 channels, 96 filters, stride 4) on its 32x32 WS array:
  // "Total Cycles" 112283 (a 0-based index: 112284 cycles), 0 stalls, mapping efficiency
  // 94.53125 %, SRAM ifmap reads 3294225, filter reads 34848, ofmap writes 3484800.
  // Output: ceil((224 - 11) / 4) + 1 = 55, so M' = 3025, K' = 11*11*3 = 363, N' = 96.
  const workload::Op conv1 = workload::make_conv2d(
      "Conv1", {.in_h = 224, .in_w = 224, .in_channels = 3, .filter_h = 11, .filter_w = 11,
                .out_channels = 96, .stride_h = 4, .stride_w = 4},
      55, 55);
  const auto r = run_op(conv1, {.rows = 32, .cols = 32, .dataflow = Dataflow::WeightStationary});
  EXPECT_EQ(r.cost.compute_cycles, Cycles{112283 + 1});
  EXPECT_EQ(r.cost.stall_cycles, Cycles{0});  // unlimited bandwidth = SCALE-Sim's CALC mode
  EXPECT_DOUBLE_EQ(r.mapping_efficiency * 100.0, 94.53125);
  EXPECT_EQ(traffic(r, "ifmap", "sram"), Bytes{3294225});
  EXPECT_EQ(traffic(r, "filter", "sram"), Bytes{34848});
  EXPECT_EQ(traffic(r, "ofmap", "sram"), Bytes{3484800});
  // Utilization = MACs / (PEs * cycles) = 3025*363*96 / (1024 * 112284).
  EXPECT_DOUBLE_EQ(r.compute_utilization, 105415200.0 / (1024.0 * 112284.0));
}

TEST(SystolicModel, MatchesScaleSimGoldenGemmStallFreeCycles) {
  // SCALE-Sim v2 test/general/golden_trace_user_{os,ws,is}: GEMM M=256, N=128, K=256 on 32x32.
  // Its Total Cycles minus its Stall Cycles are 52447-42272 = 10175 (OS), 52447-41248 = 11199
  // (WS), 19984-5777 = 14207 (IS): 0-based, so the cycle counts are one more.
  //   OS: Sr=256 (8 folds), Sc=128 (4), T=256: 32 folds * (256+32+32-2 = 318) = 10176
  //   WS: Sr=256 (8), Sc=128 (4), T=256:       32 folds * (256+64+32-2 = 350) = 11200
  //   IS: Sr=256 (8), Sc=256 (8), T=128:       64 folds * (128+64+32-2 = 222) = 14208
  const workload::Op gemm = workload::make_gemm("Test 1", 256, 128, 256);
  const auto os = run_op(gemm, {.rows = 32, .cols = 32, .dataflow = Dataflow::OutputStationary});
  const auto ws = run_op(gemm, {.rows = 32, .cols = 32, .dataflow = Dataflow::WeightStationary});
  const auto is = run_op(gemm, {.rows = 32, .cols = 32, .dataflow = Dataflow::InputStationary});
  EXPECT_EQ(os.cost.compute_cycles, Cycles{10175 + 1});
  EXPECT_EQ(ws.cost.compute_cycles, Cycles{11199 + 1});
  EXPECT_EQ(is.cost.compute_cycles, Cycles{14207 + 1});
  // Its SRAM counters (DETAILED_ACCESS_REPORT): OS ifmap 262144, filter 262144; WS 262144,
  // 32768, ofmap 262144; IS 65536, 262144, ofmap 262144. (SCALE-Sim's OS ofmap count, 34816,
  // adds R + C per fold to the 256*128 = 32768 outputs; coda counts the outputs.)
  EXPECT_EQ(traffic(os, "ifmap", "sram"), Bytes{262144});
  EXPECT_EQ(traffic(os, "filter", "sram"), Bytes{262144});
  EXPECT_EQ(traffic(os, "ofmap", "sram"), Bytes{32768});
  EXPECT_EQ(traffic(ws, "ifmap", "sram"), Bytes{262144});
  EXPECT_EQ(traffic(ws, "filter", "sram"), Bytes{32768});
  EXPECT_EQ(traffic(ws, "ofmap", "sram"), Bytes{262144});
  EXPECT_EQ(traffic(is, "ifmap", "sram"), Bytes{65536});
  EXPECT_EQ(traffic(is, "filter", "sram"), Bytes{262144});
  EXPECT_EQ(traffic(is, "ofmap", "sram"), Bytes{262144});
  EXPECT_DOUBLE_EQ(os.mapping_efficiency, 1.0);
  // OS utilization = T / fold = 256 / 318 (SCALE-Sim's 80.503 %).
  EXPECT_DOUBLE_EQ(os.compute_utilization, 256.0 / 318.0);
}

// --- Hand derivations -------------------------------------------------------------------------

TEST(SystolicModel, FoldsThatDoNotDivideEvenlyOnEachDataflow) {
  // GEMM M=100, N=20, K=30 (60000 MACs) on an 8-row, 16-column array.
  const workload::Op gemm = workload::make_gemm("g", 100, 20, 30);
  // OS: Sr=100 -> ceil(100/8) = 13 row folds, Sc=20 -> 2 col folds, T=30.
  //     26 folds * (30 + 8 + 16 - 2 = 52) = 1352 cycles; the last row fold uses 4 of 8 rows and
  //     the last col fold 4 of 16 columns but still takes the full 52 cycles.
  const auto os = run_op(gemm, {.rows = 8, .cols = 16});
  EXPECT_EQ(os.cost.compute_cycles, Cycles{1352});
  EXPECT_EQ(os.cost.cycles, Cycles{1352});
  // Mapping efficiency: 100*20 used PE-slots of 13*8 * 2*16 = 3328 -> 2000/3328.
  EXPECT_DOUBLE_EQ(os.mapping_efficiency, 2000.0 / 3328.0);
  EXPECT_DOUBLE_EQ(os.compute_utilization, 60000.0 / (128.0 * 1352.0));
  // SRAM: ifmap (M x K) streamed once per col fold: 2 * 3000; filter (K x N) once per row fold:
  // 13 * 600; ofmap M x N = 2000 once.
  EXPECT_EQ(traffic(os, "ifmap", "sram"), Bytes{6000});
  EXPECT_EQ(traffic(os, "filter", "sram"), Bytes{7800});
  EXPECT_EQ(traffic(os, "ofmap", "sram"), Bytes{2000});
  // WS: Sr=K=30 -> 4 row folds, Sc=N=20 -> 2, T=M=100: 8 * (100 + 16 + 16 - 2 = 130) = 1040.
  const auto ws = run_op(gemm, {.rows = 8, .cols = 16, .dataflow = Dataflow::WeightStationary});
  EXPECT_EQ(ws.cost.compute_cycles, Cycles{1040});
  // WS SRAM: ifmap once per col fold 2*3000; filter stationary once 600; ofmap once per row
  // fold (partial sums) 4 * 2000.
  EXPECT_EQ(traffic(ws, "ifmap", "sram"), Bytes{6000});
  EXPECT_EQ(traffic(ws, "filter", "sram"), Bytes{600});
  EXPECT_EQ(traffic(ws, "ofmap", "sram"), Bytes{8000});
  // IS: Sr=K=30 -> 4, Sc=M=100 -> ceil(100/16) = 7, T=N=20: 28 * (20 + 16 + 16 - 2 = 50) = 1400.
  const auto is = run_op(gemm, {.rows = 8, .cols = 16, .dataflow = Dataflow::InputStationary});
  EXPECT_EQ(is.cost.compute_cycles, Cycles{1400});
  EXPECT_EQ(traffic(is, "ifmap", "sram"), Bytes{3000});   // stationary: once
  EXPECT_EQ(traffic(is, "filter", "sram"), Bytes{4200});  // once per col fold: 7 * 600
  EXPECT_EQ(traffic(is, "ofmap", "sram"), Bytes{8000});   // once per row fold: 4 * 2000
}

TEST(SystolicModel, OneRowAndOneColumnArrays) {
  const workload::Op gemm = workload::make_gemm("g", 3, 5, 2);
  // 1x4 OS: Sr=3 -> 3 row folds, Sc=5 -> 2 col folds, fold = 2 + 1 + 4 - 2 = 5: 6 * 5 = 30.
  EXPECT_EQ(run_op(gemm, {.rows = 1, .cols = 4}).cost.compute_cycles, Cycles{30});
  // 4x1 OS: 1 row fold, 5 col folds, fold = 2 + 4 + 1 - 2 = 5: 25.
  EXPECT_EQ(run_op(gemm, {.rows = 4, .cols = 1}).cost.compute_cycles, Cycles{25});
  // 1x1 WS: Sr=K=2, Sc=N=5, T=M=3: 10 folds * (3 + 2 + 1 - 2 = 4) = 40.
  EXPECT_EQ(
      run_op(gemm, {.rows = 1, .cols = 1, .dataflow = Dataflow::WeightStationary})
          .cost.compute_cycles,
      Cycles{40});
  // 1x1 IS: Sr=K=2, Sc=M=3, T=N=5: 6 folds * (5 + 2 + 1 - 2 = 6) = 36.
  EXPECT_EQ(
      run_op(gemm, {.rows = 1, .cols = 1, .dataflow = Dataflow::InputStationary})
          .cost.compute_cycles,
      Cycles{36});
}

TEST(SystolicModel, SingleStepStream) {
  // T = 1: OS GEMM with K = 1 on 4x4: 1 fold of 1 + 4 + 4 - 2 = 7 cycles (skew in and out).
  EXPECT_EQ(run_op(workload::make_gemm("g", 4, 4, 1), {.rows = 4, .cols = 4}).cost.compute_cycles,
            Cycles{7});
  // WS with M = 1 (one input row, a decode-like GEMV): 1 + 8 + 4 - 2 = 11.
  EXPECT_EQ(run_op(workload::make_gemm("g", 1, 4, 4),
                   {.rows = 4, .cols = 4, .dataflow = Dataflow::WeightStationary})
                .cost.compute_cycles,
            Cycles{11});
}

TEST(SystolicModel, GroupsPackSideBySideWhenThatIsFaster) {
  // Depthwise 3x3 conv, 4 channels, 10x10 input, no padding: 4 groups of a GEMM with
  // M' = 8*8 = 64, N'g = 1, K'g = 9; MACs 4 * 64 * 9 = 2304. OS on 8x8: Sr = M' = 64, 8 row
  // folds; P groups packed side by side make Sc = P (1 col fold) and T = 9P, a fold
  // 9P + 8 + 8 - 2 = 9P + 14 cycles, ceil(4 / P) packs (the last with the groups left over):
  //   P = 1: 4 packs x 8 x 23 = 736 (one group at a time)
  //   P = 2: 2 x 8 x 32 = 512;  P = 3: 8 x 41 + 8 x 23 (the last pack is 1 group) = 512
  //   P = 4: 1 x 8 x (36 + 14) = 400, the fewest: taken.
  const workload::Op dw = workload::make_conv2d(
      "dw", {.in_h = 10, .in_w = 10, .in_channels = 4, .filter_h = 3, .filter_w = 3,
             .out_channels = 4, .groups = 4},
      8, 8);
  const auto hw = make_array({.rows = 8, .cols = 8});
  const mapper::ScheduledOp one_at_a_time{dw.name, workload::mac_count(dw),
                                          mapper::map_onto_array(dw, hw)};
  ASSERT_EQ(one_at_a_time.mapping.packed, 1u);
  EXPECT_EQ(evaluate_systolic_as_mapped(one_at_a_time, hw).cost.compute_cycles, Cycles{736});
  mapper::ScheduledOp three = one_at_a_time;
  three.mapping = mapper::with_packing(one_at_a_time.mapping, hw, 3);
  EXPECT_EQ(evaluate_systolic_as_mapped(three, hw).cost.compute_cycles, Cycles{512});
  const auto r = run_op(dw, {.rows = 8, .cols = 8});
  EXPECT_EQ(r.cost.compute_cycles, Cycles{400});
  EXPECT_EQ(r.cost.macs, 2304u);
  EXPECT_EQ(mapping_entry(r, "packed"), 4u);
  EXPECT_EQ(mapping_entry(r, "Sc"), 4u);
  EXPECT_EQ(mapping_entry(r, "T"), 36u);
  // Outputs: 4 x 64, each written once (OS finishes them in the PEs).
  EXPECT_EQ(traffic(r, "ofmap", "sram"), Bytes{4ULL * 64});
  // A pack does work in 1 / 4 of its PE-steps: 8 folds hold 64 x 4 / 4 = 64 PEs' work of 64 each.
  EXPECT_DOUBLE_EQ(r.mapping_efficiency, 64.0 / (8.0 * 64.0));
}

// A 3x3 depthwise conv over 32 channels of 56x56, stride 1, pad 1 (56x56 out): 32 groups with
// M' = 3136, N'g = 1, K'g = 9; 903168 MACs. The feature map and the outputs are 32 x 56 x 56 =
// 100352 one-byte words each.
workload::Op depthwise_56x56x32() {
  return workload::make_conv2d("dw", {.in_h = 56, .in_w = 56, .in_channels = 32, .filter_h = 3,
                                      .filter_w = 3, .out_channels = 32, .pad_h = 1, .pad_w = 1,
                                      .groups = 32},
                               56, 56);
}

TEST(SystolicModel, DepthwiseConvOnA32x32WeightStationaryArrayPacksItsChannels) {
  // WS: Sr = K' = 9P, Sc = N' = P, T = M' = 3136; every fold is 3136 + 64 + 32 - 2 = 3230 cycles,
  // so the packing with the fewest folds wins. Folds over the ceil(32 / P) packs:
  //   P = 1: 32 x 1 = 32 (one channel at a time: 9 of 32 rows, 1 of 32 columns)
  //   P = 3: 10 packs of 27 rows + one of 2 channels (18 rows), 1 fold each: 11
  //   P = 7: 4 packs of 63 rows (2 folds) + one of 4 (36 rows, 2 folds): 10
  //   P = 32: one pack, Sr = 288 (9 row folds) x Sc = 32 (1 col fold): 9, the fewest
  // (every other P needs at least 10). 9 x 3230 = 29070 cycles against 32 x 3230 = 103360.
  // 1 MiB SRAMs (512 KiB working): everything fits, and a column fold's 32 x 3136 partial sums
  // (1-byte words, 100352 B) add up in the ofmap SRAM.
  const workload::Op dw = depthwise_56x56x32();
  const ArrayParams array{.rows = 32, .cols = 32, .dataflow = Dataflow::WeightStationary,
                          .sram = Bytes{1024ULL * 1024}};
  const auto hw = make_array(array);
  EXPECT_EQ(evaluate_systolic_as_mapped(
                {dw.name, workload::mac_count(dw), mapper::map_onto_array(dw, hw)}, hw)
                .cost.compute_cycles,
            Cycles{103360});
  const auto r = run_op(dw, array);
  EXPECT_EQ(mapping_entry(r, "packed"), 32u);
  EXPECT_EQ(mapping_entry(r, "Sr"), 288u);
  EXPECT_EQ(mapping_entry(r, "row_folds"), 9u);
  EXPECT_EQ(r.cost.compute_cycles, Cycles{29070});
  EXPECT_EQ(r.cost.cycles, Cycles{29070});  // unlimited DRAM bandwidth
  // DRAM: the feature map once (100352 B); the block-diagonal filter, zeros included, 288 x 32
  // = 9216 B (its 288 real weights are 1/32 of it); the outputs once (100352 B).
  EXPECT_EQ(traffic(r, "ifmap", "dram"), Bytes{100352});
  EXPECT_EQ(traffic(r, "filter", "dram"), Bytes{9216});
  EXPECT_EQ(traffic(r, "ofmap", "dram"), Bytes{100352});
  // SRAM: the unrolled ifmap stream Sr x T = 288 x 3136 = 903168; the stationary filter once,
  // 9216; the outputs every row fold, 9 x 32 x 3136 = 903168.
  EXPECT_EQ(traffic(r, "ifmap", "sram"), Bytes{903168});
  EXPECT_EQ(traffic(r, "filter", "sram"), Bytes{9216});
  EXPECT_EQ(traffic(r, "ofmap", "sram"), Bytes{903168});
  // Work in 288 x 32 / 32 = 288 of 9 x 1024 PE slots: 1/32. Utilization 903168 MACs over
  // 1024 PEs x 29070 cycles (one channel at a time: 903168 / (1024 x 103360), 0.85%).
  EXPECT_DOUBLE_EQ(r.mapping_efficiency, 1.0 / 32.0);
  EXPECT_DOUBLE_EQ(r.compute_utilization, 903168.0 / (1024.0 * 29070.0));
}

TEST(SystolicModel, DepthwiseConvOnA32x32OutputStationaryArrayPacksItsChannels) {
  // OS: Sr = M' = 3136 (98 row folds), Sc = N' = P, T = K' = 9P; a fold is 9P + 62 cycles and a
  // pack of P <= 32 groups one column fold, so a group costs 98 x (9 + 62 / P): least at P = 32,
  // 98 x (288 + 62) = 34300 cycles (one at a time: 32 x 98 x 71 = 222656; P = 16: 2 x 98 x 206
  // = 40376; any P that leaves a last pack of fewer groups pays its 62-cycle fill again).
  const workload::Op dw = depthwise_56x56x32();
  const ArrayParams array{.rows = 32, .cols = 32, .sram = Bytes{1024ULL * 1024}};
  const auto hw = make_array(array);
  EXPECT_EQ(evaluate_systolic_as_mapped(
                {dw.name, workload::mac_count(dw), mapper::map_onto_array(dw, hw)}, hw)
                .cost.compute_cycles,
            Cycles{222656});
  const auto r = run_op(dw, array);
  EXPECT_EQ(mapping_entry(r, "packed"), 32u);
  EXPECT_EQ(mapping_entry(r, "T"), 288u);
  EXPECT_EQ(r.cost.compute_cycles, Cycles{34300});
  // DRAM as on WS: map 100352, dense block-diagonal filter 9216, outputs 100352 once.
  EXPECT_EQ(traffic(r, "ifmap", "dram"), Bytes{100352});
  EXPECT_EQ(traffic(r, "filter", "dram"), Bytes{9216});
  EXPECT_EQ(traffic(r, "ofmap", "dram"), Bytes{100352});
  // SRAM: ifmap Sr x T = 3136 x 288 = 903168 (one col fold); the filter Sc x T = 32 x 288 once
  // per row fold, 98 x 9216 = 903168; outputs M' x N' = 100352.
  EXPECT_EQ(traffic(r, "ifmap", "sram"), Bytes{903168});
  EXPECT_EQ(traffic(r, "filter", "sram"), Bytes{903168});
  EXPECT_EQ(traffic(r, "ofmap", "sram"), Bytes{100352});
  // Every PE holds an output, but multiplies a zero in 31 of 32 steps: 1/32.
  EXPECT_DOUBLE_EQ(r.mapping_efficiency, 1.0 / 32.0);
}

TEST(SystolicModel, GroupedConvOfTwoGroupsOfSixteenChannelsPacksBoth) {
  // 3x3 conv, 32 -> 32 channels in 2 groups of 16, 56x56, pad 1: per group M' = 3136,
  // N'g = 16, K'g = 16 x 9 = 144; MACs 2 x 3136 x 16 x 144 = 14450688.
  const workload::Op conv = workload::make_conv2d(
      "g2", {.in_h = 56, .in_w = 56, .in_channels = 32, .filter_h = 3, .filter_w = 3,
             .out_channels = 32, .pad_h = 1, .pad_w = 1, .groups = 2},
      56, 56);
  // WS 32x32, folds of 3136 + 94 = 3230 cycles. One group at a time: 2 x ceil(144/32) = 10
  // folds, 32300 cycles, each using 16 of 32 columns. Both packed: Sr = 288 (9 row folds),
  // Sc = 32 (1): 9 folds, 29070 cycles.
  const ArrayParams ws{.rows = 32, .cols = 32, .dataflow = Dataflow::WeightStationary,
                       .sram = Bytes{1024ULL * 1024}};
  const auto hw = make_array(ws);
  EXPECT_EQ(evaluate_systolic_as_mapped(
                {conv.name, workload::mac_count(conv), mapper::map_onto_array(conv, hw)}, hw)
                .cost.compute_cycles,
            Cycles{32300});
  const auto w = run_op(conv, ws);
  EXPECT_EQ(mapping_entry(w, "packed"), 2u);
  EXPECT_EQ(w.cost.compute_cycles, Cycles{29070});
  // DRAM: the map once (100352 B); the block-diagonal filter 288 x 32 = 9216 B, twice its 4608 B
  // of real weights; the outputs once (100352 B).
  EXPECT_EQ(traffic(w, "ifmap", "dram"), Bytes{100352});
  EXPECT_EQ(traffic(w, "filter", "dram"), Bytes{9216});
  EXPECT_EQ(traffic(w, "ofmap", "dram"), Bytes{100352});
  // Work in 288 x 32 / 2 of 9 x 1024 PE slots: 1/2.
  EXPECT_DOUBLE_EQ(w.mapping_efficiency, 0.5);
  // OS 32x32: Sr = 3136 (98 row folds). One at a time: 2 x 98 x (144 + 62) = 40376; packed:
  // Sc = 32, T = 288: 98 x (288 + 62) = 34300.
  const auto o = run_op(conv, {.rows = 32, .cols = 32, .sram = Bytes{1024ULL * 1024}});
  EXPECT_EQ(mapping_entry(o, "packed"), 2u);
  EXPECT_EQ(o.cost.compute_cycles, Cycles{34300});
}

TEST(SystolicModel, GroupsThatFillTheArrayRunOneAfterAnother) {
  // A batched GEMM, 4 x (M = N = K = 32), on a 32x32 OS array: one group is one full fold of
  // 32 + 62 = 94 cycles, 376 in all. Two side by side would fold 1 x 2 times per pack at
  // 64 + 62 = 126 cycles: 2 packs x 2 x 126 = 504. Packing only adds zeros: one at a time stays.
  const workload::Op bmm = workload::make_batched_gemm("bmm", 4, 32, 32, 32);
  const auto r = run_op(bmm, {.rows = 32, .cols = 32});
  EXPECT_EQ(mapping_entry(r, "packed"), 1u);
  EXPECT_EQ(r.cost.compute_cycles, Cycles{376});
  EXPECT_DOUBLE_EQ(r.mapping_efficiency, 1.0);
}

TEST(SystolicModel, PackingIsChosenByCyclesWithStalls) {
  // With 1 B/cycle of DRAM the depthwise conv above is memory-bound; the packing taken is the
  // one whose cycles, stalls included, are fewest of every candidate the mapper offers.
  const workload::Op dw = depthwise_56x56x32();
  const auto hw = make_array({.rows = 32, .cols = 32, .dataflow = Dataflow::WeightStationary,
                              .sram = Bytes{1024ULL * 1024}, .bytes_per_cycle = 1.0});
  const mapper::ScheduledOp op{dw.name, workload::mac_count(dw), mapper::map_onto_array(dw, hw)};
  const results::OpResult chosen = evaluate_systolic(op, hw);
  std::uint64_t fewest = ~0ULL;
  for (const std::uint64_t p : mapper::packing_candidates(op.mapping, hw)) {
    mapper::ScheduledOp candidate = op;
    candidate.mapping = mapper::with_packing(op.mapping, hw, p);
    fewest = std::min(fewest, evaluate_systolic_as_mapped(candidate, hw).cost.cycles.value);
  }
  EXPECT_EQ(chosen.cost.cycles.value, fewest);
  EXPECT_EQ(chosen.bound, results::Bound::Memory);
  // 32 candidates: P = 1 .. min(32 groups, 32).
  EXPECT_EQ(mapper::packing_candidates(op.mapping, hw).size(), 32u);
}

TEST(SystolicModel, StallsWhenDramBandwidthIsFinite) {
  // OS GEMM M=16, N=8, K=4 on 8x8, 64 KiB SRAMs (everything fits), 1-byte words.
  // Sr=16 -> 2 row folds, Sc=8 -> 1 col fold, T=4; fold = 4 + 8 + 8 - 2 = 18; compute 36.
  // Fetches: fold 0 needs ifmap rows 0-7 (8*4 = 32 B) and the filter (4*8 = 32 B) = 64 B;
  // fold 1 needs ifmap rows 8-15 (32 B), the filter stays. Each fold writes 8*8 = 64 B.
  const workload::Op gemm = workload::make_gemm("g", 16, 8, 4);
  // 4 B/cycle: fetch fold 0: 64/4 = 16; fold 0 overlaps fold 1's fetch: max(18, 32/4) = 18;
  // fold 1 overlaps fold 0's write-back: max(18, 64/4) = 18; drain fold 1: 64/4 = 16.
  // 16 + 18 + 18 + 16 = 68 cycles, 32 stall cycles.
  const auto r = run_op(gemm, {.rows = 8, .cols = 8, .bytes_per_cycle = 4.0});
  EXPECT_EQ(r.cost.compute_cycles, Cycles{36});
  EXPECT_EQ(r.cost.cycles, Cycles{68});
  EXPECT_EQ(r.cost.stall_cycles, Cycles{32});
  EXPECT_EQ(r.cost.dram_reads, Bytes{96});
  EXPECT_EQ(r.cost.dram_writes, Bytes{128});
  // 224 DRAM bytes / 4 B per cycle = 56 cycles > 36 compute cycles.
  EXPECT_EQ(r.bound, results::Bound::Memory);
  // 1 B/cycle: 64 + max(18, 32) + max(18, 64) + 64 = 224 = every byte back to back.
  EXPECT_EQ(run_op(gemm, {.rows = 8, .cols = 8, .bytes_per_cycle = 1.0}).cost.cycles,
            Cycles{224});
  // Without double buffering nothing overlaps: (64 + 64)/4 + 18 + (32 + 64)/4 + 18 = 92.
  EXPECT_EQ(run_op(gemm, {.rows = 8, .cols = 8, .bytes_per_cycle = 4.0, .double_buffered = false})
                .cost.cycles,
            Cycles{92});
  // Unlimited bandwidth: stall-free, compute-bound, same traffic.
  const auto free = run_op(gemm, {.rows = 8, .cols = 8});
  EXPECT_EQ(free.cost.cycles, Cycles{36});
  EXPECT_EQ(free.cost.dram_reads, Bytes{96});
  EXPECT_EQ(free.bound, results::Bound::Compute);
}

TEST(SystolicModel, DramTrafficDependsOnWhatFitsTheWorkingHalf) {
  // OS GEMM M=16, N=16, K=8 on 8x8: 2 row folds x 2 col folds, tiles of 8*8 = 64 words.
  const workload::Op gemm = workload::make_gemm("g", 16, 16, 8);
  // 200 B SRAMs: working half 100 words. The ifmap (16x8 = 128 words) does not fit whole, so its
  // row tiles are fetched again for the second col fold: 4 * 64 = 256. The filter (8x16 = 128)
  // does not fit whole either, but its col tile (64 <= 100) stays while the row fold advances:
  // 2 * 64 = 128. Outputs: 16*16 = 256 written once.
  const auto small = run_op(gemm, {.rows = 8, .cols = 8, .sram = Bytes{200}});
  EXPECT_EQ(traffic(small, "ifmap", "dram"), Bytes{256});
  EXPECT_EQ(traffic(small, "filter", "dram"), Bytes{128});
  EXPECT_EQ(traffic(small, "ofmap", "dram"), Bytes{256});
  // 256 B SRAMs: working half 128 words, both matrices fit whole: each fetched once (128).
  const auto fits = run_op(gemm, {.rows = 8, .cols = 8, .sram = Bytes{256}});
  EXPECT_EQ(traffic(fits, "ifmap", "dram"), Bytes{128});
  EXPECT_EQ(traffic(fits, "filter", "dram"), Bytes{128});
  // 100 B SRAMs: working half 50 words < a 64-word tile: every tile streams every fold: 4 * 64.
  const auto tiny = run_op(gemm, {.rows = 8, .cols = 8, .sram = Bytes{100}});
  EXPECT_EQ(traffic(tiny, "ifmap", "dram"), Bytes{256});
  EXPECT_EQ(traffic(tiny, "filter", "dram"), Bytes{256});
  // 2-byte words double every byte count.
  const auto wide = run_op(gemm, {.rows = 8, .cols = 8, .sram = Bytes{512}, .word_size = Bytes{2}});
  EXPECT_EQ(traffic(wide, "ifmap", "dram"), Bytes{256});
  EXPECT_EQ(traffic(wide, "ofmap", "sram"), Bytes{512});
}

TEST(SystolicModel, PesThatPackTwoMacsStreamTwiceAsFast) {
  // An 8x16 output-stationary array whose PEs do 2 int8 MACs per cycle (TPU v5e's int8). GEMM
  // M=100, N=20, K=30: 13 x 2 = 26 folds as above; the stream of T = 30 steps takes
  // ceil(30 / 2) = 15 cycles, so a fold is 15 + 8 + 16 - 2 = 37 cycles: 962 in all. Utilization
  // counts both MACs of a PE: 60000 / (128 x 2 x 962).
  const auto hw = testing::parse_arch(R"(schema_version: 2
name: packed
clock: 1 GHz
compute:
  - {name: mxu, kind: systolic, array: {rows: 8, cols: 16, dataflow: output_stationary},
     macs_per_pe: {int8: 2, bf16: 1}}
memory:
  - {name: buf, capacity: 1 MiB}
dram: {bandwidth: unlimited}
)");
  const workload::Op gemm = workload::make_gemm("g", 100, 20, 30);
  const mapper::SystolicMapping m = mapper::map_onto_array(gemm, hw);
  mapper::ScheduledOp op{gemm.name, workload::mac_count(gemm), m};
  op.precision = DataType::Int8;
  const auto r = evaluate_systolic(op, hw);
  EXPECT_EQ(r.cost.compute_cycles, Cycles{962});
  EXPECT_DOUBLE_EQ(r.compute_utilization, 60000.0 / (128.0 * 2.0 * 962.0));
  // At bf16 the same PEs do one MAC per cycle: 26 x (30 + 22) = 1352, as on a plain array.
  op.precision = DataType::Bf16;
  EXPECT_EQ(evaluate_systolic(op, hw).cost.compute_cycles, Cycles{1352});
}

// --- Cross-check: the loop-nest model folds as the closed form does -------------------------

// A loop-nest mapping of a GEMM (dims m, n, k) that folds as a dataflow does: the first SRAM
// (which fans out to the PEs) spreads two dims over the array and loops over the streamed one
// while the third tensor's element stays in each PE; every fold is a DRAM-level loop. make_array's hierarchy: pe, ifmap,
// filter and ofmap SRAMs, DRAM.
mapper::Mapping folds_as(Dataflow dataflow, std::uint64_t m, std::uint64_t n, std::uint64_t k,
                         std::uint64_t rows, std::uint64_t cols) {
  enum : std::size_t { kM, kN, kK };
  enum : std::size_t { kIfmap = 1, kDram = 4 };
  auto folds = [](std::uint64_t extent, std::uint64_t tile) { return (extent + tile - 1) / tile; };
  mapper::Mapping mapping = mapper::make_mapping(5, 3);
  auto& stream = mapping.levels[kIfmap].temporal;
  auto& array = mapping.levels[kIfmap].spatial;
  auto& dram = mapping.levels[kDram].temporal;
  switch (dataflow) {
    case Dataflow::OutputStationary:  // Sr = M', Sc = N', T = K'
      stream[kK] = k;
      array[kM] = rows;
      array[kN] = cols;
      dram[kM] = folds(m, rows);
      dram[kN] = folds(n, cols);
      break;
    case Dataflow::WeightStationary:  // Sr = K', Sc = N', T = M'
      stream[kM] = m;
      array[kK] = rows;
      array[kN] = cols;
      dram[kK] = folds(k, rows);
      dram[kN] = folds(n, cols);
      break;
    case Dataflow::InputStationary:  // Sr = K', Sc = M', T = N'
      stream[kN] = n;
      array[kK] = rows;
      array[kM] = cols;
      dram[kK] = folds(k, rows);
      dram[kM] = folds(m, cols);
      break;
  }
  return mapping;
}

TEST(SystolicModel, LoopNestMappingThatFoldsAsTheClosedFormGivesItsCyclesExactly) {
  // The loop-nest model charges each pass R + C - 2 (output stationary) or 2R + C - 2 cycles of
  // fill and drain, as the closed form charges each fold; with the same folds the stall-free
  // cycles agree exactly, including partial folds. Cases: SCALE-Sim's GEMM 256x128x256 on 32x32
  // (10176 / 11200 / 14208 cycles, see above) and M=100, N=20, K=30 on 8x16 (1352 / 1040 / 1400).
  struct Case {
    std::uint64_t m, n, k;
    std::uint32_t rows, cols;
    Cycles os, ws, is;
  };
  for (const Case& c : {Case{256, 128, 256, 32, 32, Cycles{10176}, Cycles{11200}, Cycles{14208}},
                        Case{100, 20, 30, 8, 16, Cycles{1352}, Cycles{1040}, Cycles{1400}}}) {
    const workload::Op gemm = workload::make_gemm("g", c.m, c.n, c.k);
    for (const auto& [dataflow, expected] :
         {std::pair{Dataflow::OutputStationary, c.os}, std::pair{Dataflow::WeightStationary, c.ws},
          std::pair{Dataflow::InputStationary, c.is}}) {
      const auto hw = make_array({.rows = c.rows, .cols = c.cols, .dataflow = dataflow});
      const auto closed = evaluate_systolic(
          {gemm.name, workload::mac_count(gemm), mapper::map_onto_array(gemm, hw)}, hw);
      const mapper::Hierarchy h = mapper::make_hierarchy(hw, DataType::Int8);
      const mapper::MappingCost nest = mapper::evaluate(
          gemm.space, folds_as(dataflow, c.m, c.n, c.k, c.rows, c.cols), h);
      ASSERT_TRUE(nest.ok()) << mapper::describe(nest.status, h, gemm.space);
      EXPECT_EQ(closed.cost.compute_cycles, expected);
      EXPECT_DOUBLE_EQ(nest.compute_cycles, static_cast<double>(expected.value))
          << c.m << "x" << c.n << "x" << c.k << " " << arch::to_string(dataflow);
    }
  }
}

TEST(SystolicModel, LoopNestAndClosedFormAgreeWithOverlappedWeightLoads) {
  // weight_preload: overlapped (NVDLA's shadow weights, mapper::fold_cycles): a fold takes
  // max(T, R) + R + C - 2 and the op's first load R once. M=100, N=20, K=30 on 8x16: WS folds
  // K into 4 and N into 2 (8 folds of T = 100): 8 x (100 + 8 + 16 - 2) + 8 = 984 (exposed:
  // 1040); IS folds K into 4 and M into 7 (28 folds of T = 20): 28 x (20 + 22) + 8 = 1184
  // (exposed: 1400). The loop nest's passes expose the same.
  const workload::Op gemm = workload::make_gemm("g", 100, 20, 30);
  for (const auto& [dataflow, expected] : {std::pair{Dataflow::WeightStationary, Cycles{984}},
                                           std::pair{Dataflow::InputStationary, Cycles{1184}}}) {
    const auto hw = make_array({.rows = 8,
                                .cols = 16,
                                .dataflow = dataflow,
                                .weight_preload = arch::WeightPreload::Overlapped});
    const auto closed = evaluate_systolic(
        {gemm.name, workload::mac_count(gemm), mapper::map_onto_array(gemm, hw)}, hw);
    const mapper::Hierarchy h = mapper::make_hierarchy(hw, DataType::Int8);
    const mapper::MappingCost nest =
        mapper::evaluate(gemm.space, folds_as(dataflow, 100, 20, 30, 8, 16), h);
    ASSERT_TRUE(nest.ok()) << mapper::describe(nest.status, h, gemm.space);
    EXPECT_EQ(closed.cost.compute_cycles, expected) << arch::to_string(dataflow);
    EXPECT_DOUBLE_EQ(nest.compute_cycles, static_cast<double>(expected.value))
        << arch::to_string(dataflow);
  }
}

TEST(SystolicModel, LoopNestMappingOfAPackThatFitsOneFoldGivesItsCyclesExactly) {
  // A 3x3 depthwise conv over 3 channels of 10x10 (8x8 out) on a 32x32 WS array: the 3 groups
  // pack into one fold, Sr = 27 rows (each its own channel's tap), Sc = 3 columns, T = 64
  // pixels: 64 + 64 + 32 - 2 = 158 cycles (one at a time: 3 x 158 = 474). The loop-nest model
  // holds the same work without the block-diagonal zeros: the first SRAM spreads g, r, s (27
  // PEs, each with its channel's weight) and streams p, q; one pass, preloaded first:
  // 64 + (2 x 32 + 32 - 2) = 158. The two agree wherever a pack is one fold; over several folds
  // the closed form also times the zeros' PEs and steps, which the loop nest leaves out.
  const workload::Op dw = workload::make_conv2d(
      "dw3", {.in_h = 10, .in_w = 10, .in_channels = 3, .filter_h = 3, .filter_w = 3,
              .out_channels = 3, .groups = 3},
      8, 8);
  const auto hw = make_array({.rows = 32, .cols = 32, .dataflow = Dataflow::WeightStationary});
  const auto closed = run_op(dw, {.rows = 32, .cols = 32, .dataflow = Dataflow::WeightStationary});
  EXPECT_EQ(mapping_entry(closed, "packed"), 3u);
  EXPECT_EQ(closed.cost.compute_cycles, Cycles{158});
  // Dims n, g, k, c, p, q, r, s; levels pe, ifmap, filter, ofmap, DRAM.
  enum : std::size_t { kG = 1, kP = 4, kQ = 5, kR = 6, kS = 7 };
  mapper::Mapping mapping = mapper::make_mapping(5, 8);
  auto& level = mapping.levels[1];
  level.spatial[kG] = 3;
  level.spatial[kR] = 3;
  level.spatial[kS] = 3;
  level.temporal[kP] = 8;
  level.temporal[kQ] = 8;
  const mapper::Hierarchy h = mapper::make_hierarchy(hw, DataType::Int8);
  const mapper::MappingCost nest = mapper::evaluate(dw.space, mapping, h);
  ASSERT_TRUE(nest.ok()) << mapper::describe(nest.status, h, dw.space);
  EXPECT_DOUBLE_EQ(nest.compute_cycles, 158.0);
}

}  // namespace
}  // namespace coda::sim::analytical
