// The SystemC engine (sim/systemc/): its cross-checks against the closed forms, the row-buffer
// effect by hand, the timeline's format, and a run on every preset. Every run starts the worker
// program (SystemC elaborates once per process), so these tests are also the worker's tests; the
// last ones test the engine's dealings with it (the plan it sends, threads, failures).

#include "sim/systemc/systemc_engine.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "arch/arch_spec.h"
#include "mapper/schedule.h"
#include "sim/analytical/analytical_engine.h"
#include "sim/timing/chip_plan.h"
#include "testing/temp_dir.h"
#include "testing/test_hardware.h"
#include "workloads/builders.h"
#include "workloads/importers.h"
#include "workloads/llm/llm_builder.h"
#include "workloads/llm/llm_config.h"

namespace coda::sim::systemc {
namespace {

using testing::parse_arch;

workload::Graph one_op(workload::Op op) {
  workload::Graph g{"g", "", {}, {}};
  g.add(std::move(op));
  return g;
}

struct Runs {
  results::RunResult analytical;
  results::RunResult systemc;
};

Runs run_both(const workload::Graph& graph, const arch::HardwareModel& hw,
              const mapper::ScheduleOptions& options = {}, const RunOptions& run = {}) {
  const mapper::Schedule schedule = mapper::schedule_graph(graph, hw, options);
  return {analytical::AnalyticalEngine().run(schedule, hw, {}),
          SystemCEngine().run(schedule, hw, run)};
}

arch::HardwareModel preset(const std::string& name) {
  Diagnostics diags;
  const auto loaded = arch::load_arch("configs/arch/" + name + ".yaml", diags);
  if (!loaded) throw std::invalid_argument(diags.format_all());
  return arch::HardwareModel(loaded->spec);
}

workload::Graph llama2_7b_decode(std::uint64_t context) {
  Diagnostics diags;
  const auto config =
      workload::llm::load_llm_config("configs/workloads/llm/llama2_7b.yaml", diags);
  if (!config) throw std::invalid_argument(diags.format_all());
  auto graph = workload::llm::try_build_llm(
      *config, {.kind = workload::llm::PhaseKind::Decode, .batch = 1, .seq_len = context}, {},
      diags);
  if (!graph) throw std::invalid_argument(diags.format_all());
  return std::move(*graph);
}

TEST(SystemCEngine, IdealMemoryGivesTheSystolicStallFreeCyclesExactly) {
  // SCALE-Sim's GEMM M=256, N=128, K=256 on 32x32 (sim/tests/systolic_model_test.cpp derives the
  // stall-free cycles: OS 10176, WS 11200, IS 14208). With unlimited DRAM bandwidth and no
  // latency or row timing stated, memory is ideal: the engine's cycles are exactly those.
  const workload::Graph g = one_op(workload::make_gemm("gemm", 256, 128, 256));
  const std::pair<arch::Dataflow, std::uint64_t> cases[] = {
      {arch::Dataflow::OutputStationary, 10176},
      {arch::Dataflow::WeightStationary, 11200},
      {arch::Dataflow::InputStationary, 14208}};
  for (const auto& [dataflow, cycles] : cases) {
    const auto hw = testing::make_array({.rows = 32, .cols = 32, .dataflow = dataflow});
    const Runs runs = run_both(g, hw);
    ASSERT_EQ(runs.systemc.ops.size(), 1u);
    EXPECT_EQ(runs.analytical.ops[0].cost.compute_cycles, Cycles{cycles});
    EXPECT_EQ(runs.systemc.ops[0].cost.cycles, Cycles{cycles});
    EXPECT_EQ(runs.systemc.ops[0].cost.stall_cycles, Cycles{0});
    EXPECT_EQ(runs.systemc.provenance.engine, "systemc");
  }
}

TEST(SystemCEngine, IdealMemoryGivesAPackedDepthwiseConvsStallFreeCycles) {
  // A 3x3 depthwise conv, 32 channels of 56x56, pad 1, on 32x32 arrays: the analytical engine
  // packs its 32 channels side by side, 9 folds of 3230 cycles on WS, 98 folds of 350 on OS
  // (sim/tests/systolic_model_test.cpp derives both); the tile engine runs the packed op's
  // priced traffic and compute, so on ideal memory it takes exactly those cycles.
  const workload::Graph g = one_op(workload::make_conv2d(
      "dw", {.in_h = 56, .in_w = 56, .in_channels = 32, .filter_h = 3, .filter_w = 3,
             .out_channels = 32, .pad_h = 1, .pad_w = 1, .groups = 32},
      56, 56));
  for (const auto& [dataflow, cycles] : {std::pair{arch::Dataflow::WeightStationary, 29070ULL},
                                         std::pair{arch::Dataflow::OutputStationary, 34300ULL}}) {
    const auto hw = testing::make_array(
        {.rows = 32, .cols = 32, .dataflow = dataflow, .sram = Bytes{1024ULL * 1024}});
    const Runs runs = run_both(g, hw);
    ASSERT_EQ(runs.systemc.ops.size(), 1u);
    EXPECT_EQ(runs.analytical.ops[0].cost.compute_cycles, Cycles{cycles});
    EXPECT_EQ(runs.systemc.ops[0].cost.cycles, Cycles{cycles});
    EXPECT_EQ(runs.systemc.ops[0].cost.dram_reads, runs.analytical.ops[0].cost.dram_reads);
  }
}

TEST(SystemCEngine, IdealMemoryGivesTheSearchedLoopNestsStallFreeCycles) {
  // GEMM 8x8x64 on kTinyArray's 8x8 array: the searched optimum is one pass of 64 + 8 + 8 - 2
  // = 78 cycles (sim/tests/loop_nest_pricing_test.cpp); its tile program runs them stall-free.
  const auto hw = parse_arch(testing::kTinyArray);
  mapper::ScheduleSearch search;
  search.settings.strategy = mapper::Strategy::Exhaustive;
  search.settings.budget.max_evaluations = 5'000'000;
  const Runs runs = run_both(one_op(workload::make_gemm("g", 8, 8, 64)), hw, {.search = search});
  ASSERT_EQ(runs.systemc.ops.size(), 1u);
  EXPECT_EQ(runs.systemc.ops[0].cost.cycles, Cycles{78});
  EXPECT_EQ(runs.systemc.ops[0].cost.compute_cycles, Cycles{78});
}

TEST(SystemCEngine, ComputeBoundGemmsAgreeWithTheAnalyticalEngineWithinTwoAndAHalfPercent) {
  // GEMMs the analytical engine finds compute-bound with DRAM time well below compute: their
  // tiles load under compute, leaving only the first load and the last drain exposed. Gemmini's
  // 16x16 array with searched loop nests, and the H100's tensor-core closed form. The H100
  // preset carries a calibration (issue efficiency, tile overhead, DRAM fraction, fixed costs:
  // docs/arch.md): both engines read the rates HardwareModel derives from it, so the two agree
  // with it as they do at the peaks (its GEMM fixed cost included on both sides).
  ASSERT_FALSE(preset("nvidia_h100_sxm").spec().calibration.tensor_issue.empty());
  using Shape = std::tuple<std::uint64_t, std::uint64_t, std::uint64_t>;
  mapper::ScheduleSearch search;
  search.settings.budget.max_evaluations = 20'000;
  const struct {
    const char* arch;
    bool searched;
    Shape shape;
  } cases[] = {{"gemmini_default", true, {2048, 2048, 2048}},
               {"gemmini_default", true, {4096, 1024, 1024}},
               {"gemmini_default", true, {512, 512, 8192}},
               {"nvidia_h100_sxm", false, {2048, 2048, 2048}},
               {"nvidia_h100_sxm", false, {4096, 1024, 1024}}};
  for (const auto& c : cases) {
    const auto [m, n, k] = c.shape;
    SCOPED_TRACE(fmt::format("{} {}x{}x{}", c.arch, m, n, k));
    mapper::ScheduleOptions options;
    if (c.searched) options.search = search;
    const Runs runs = run_both(one_op(workload::make_gemm("g", m, n, k)), preset(c.arch), options);
    const results::OpResult& a = runs.analytical.ops[0];
    const results::OpResult& s = runs.systemc.ops[0];
    ASSERT_EQ(a.bound, results::Bound::Compute);
    const double ratio = static_cast<double>(s.cost.cycles.value) /
                         static_cast<double>(a.cost.cycles.value);
    EXPECT_GE(ratio, 1.0);
    // The exposed first tile load and last drain: up to 2.1% of H100's 4096x1024x1024 (~10 us),
    // now that its in-model fixed cost (1.1 us, graph-launched kernels) dilutes them less than the
    // 2.23 us it was fitted to before.
    EXPECT_LE(ratio, 1.025);
  }
}

TEST(SystemCEngine, AFlashAttentionBackwardRunsItsHelperKernelsAfterItsMainOne) {
  // FlashAttention-2's backward on the H100 preset (fa3 class by default there: its helpers are
  // the same), 4 sequences x 12 heads x 1024 queries of head dim 64 (GPT-2 small's, bf16). The
  // analytical engine adds the two helper kernels' bytes at the DRAM rate and their fixed costs
  // after the main kernel; the tile engine runs them as a second work of the op, their bytes
  // streamed with no compute after the main kernel's compute-bound stream. The two agree within
  // 2% (the main kernel's first load and last drain, the helpers' DRAM row-buffer timing), and the
  // run keeps one op. Without the second work the tile engine hid the helpers' 4 x 12 x 1024 x
  // 900 B = 44 MB under the main kernel's compute: a third less time.
  const auto hw = preset("nvidia_h100_sxm");
  const workload::AttentionParams p{.batch = 4,
                                    .heads = 12,
                                    .kv_heads = 12,
                                    .q_len = 1024,
                                    .kv_len = 1024,
                                    .head_dim = 64,
                                    .causal = true};
  const Runs runs = run_both(one_op(workload::make_attention_backward("bwd", p, DataType::Bf16)),
                             hw, {.fusion = mapper::FusionMode::Epilogue});
  ASSERT_EQ(runs.analytical.ops.size(), 1u);
  ASSERT_EQ(runs.systemc.ops.size(), 1u);
  const results::OpResult& a = runs.analytical.ops[0];
  const results::OpResult& s = runs.systemc.ops[0];
  ASSERT_EQ(a.unit, results::OpUnit::Attention);
  const double ratio =
      static_cast<double>(s.cost.cycles.value) / static_cast<double>(a.cost.cycles.value);
  EXPECT_GE(ratio, 0.98);
  EXPECT_LE(ratio, 1.02);
  EXPECT_EQ(s.cost.dram_reads, a.cost.dram_reads);
  EXPECT_EQ(s.cost.dram_writes, a.cost.dram_writes);
}

TEST(SystemCEngine, ASplitKvDecodePaysItsCombineKernelInBothEngines) {
  // LLaMA-2-7B decode at 4,096 tokens, batch 1, on the H200 with decode attention of the
  // fa2_forward class: 32 heads fill too few SMs, so FlashAttention-2 splits the keys (4 splits
  // here) and a combine kernel follows, a vector kernel's fixed cost the closed form adds. The
  // tile engine adds it to the op's launch: the attention op agrees within 2% (it came out 4.4%
  // short without it).
  arch::ArchSpec spec = preset("nvidia_h200_sxm").spec();
  spec.calibration.decode_attention = arch::DecodeAttention::Fa2Forward;
  const arch::HardwareModel hw(spec);
  const Runs runs = run_both(llama2_7b_decode(4096), hw, {.fusion = mapper::FusionMode::Epilogue});
  const auto attention = [](const results::RunResult& run) {
    for (const results::OpResult& op : run.ops)
      if (op.unit == results::OpUnit::Attention) return op;
    return results::OpResult{};
  };
  const results::OpResult a = attention(runs.analytical);
  const results::OpResult s = attention(runs.systemc);
  ASSERT_EQ(a.unit, results::OpUnit::Attention);
  ASSERT_GT(results::mapping_value(a, "splits"), 1u);
  const double ratio =
      static_cast<double>(s.cost.cycles.value) / static_cast<double>(a.cost.cycles.value);
  EXPECT_GE(ratio, 0.98);
  EXPECT_LE(ratio, 1.02);
}

TEST(SystemCEngine, BurstyTileLoadsAreExposedWhereTheAveragesHideThem) {
  // tpu_like_128x128_ws, 2048^3 int8, searched: a mapping the loop-nest model calls compute-bound
  // (DRAM 16.8 MB at 48.6 B/cycle = 345k cycles against 589k of compute) that keeps a 2 MiB tile
  // of A on chip for 128 steps of 2.3k cycles: each A load (43k cycles) outlasts the step it
  // hides under, so the tile engine is slower (docs/systemc.md measures 15%), never faster.
  mapper::ScheduleSearch search;
  search.settings.budget.max_evaluations = 20'000;
  const Runs runs = run_both(one_op(workload::make_gemm("g", 2048, 2048, 2048)),
                             preset("tpu_like_128x128_ws"), {.search = search});
  const results::OpResult& a = runs.analytical.ops[0];
  const results::OpResult& s = runs.systemc.ops[0];
  ASSERT_EQ(a.bound, results::Bound::Compute);
  EXPECT_EQ(s.cost.compute_cycles, a.cost.compute_cycles);
  EXPECT_GT(s.cost.cycles.value, a.cost.cycles.value * 105 / 100);
  ASSERT_TRUE(s.stalls);
  EXPECT_GT(s.stalls->dram_bandwidth.value, 0u);
}

TEST(SystemCEngine, MemoryBoundOpsAreNeverFasterThanTheAnalyticalBound) {
  // LLaMA-2-7B decode on the 3-core RK3588 NPU: matrix-vector products streaming their weights,
  // the three cores sharing LPDDR4X. The analytical time of a memory-bound op is its DRAM bytes
  // over the bandwidth; the tile engine moves the same bytes through the same bandwidth, plus
  // latency, row misses and the cores' contention: never faster.
  const auto hw = preset("rk3588_npu");
  const Runs runs = run_both(llama2_7b_decode(128), hw, {.precision = DataType::Int8});
  ASSERT_EQ(runs.systemc.ops.size(), runs.analytical.ops.size());
  std::size_t memory_bound = 0;
  for (std::size_t i = 0; i < runs.analytical.ops.size(); ++i) {
    const results::OpResult& a = runs.analytical.ops[i];
    const results::OpResult& s = runs.systemc.ops[i];
    if (a.bound != results::Bound::Memory) continue;
    ++memory_bound;
    EXPECT_GE(s.cost.cycles.value, a.cost.cycles.value) << a.name;
  }
  EXPECT_GT(memory_bound, 100u);  // 32 layers of them
  EXPECT_GE(runs.systemc.total.cycles.value, runs.analytical.total.cycles.value);
}

// One core with a vector unit, 32 KiB of buffer, 16 B/cycle of DRAM on one channel of `banks`
// banks with 2 KiB rows, 15 ns (30 cycles at 1 GHz) for t_rcd + t_rp, no access latency.
std::string row_arch(int banks, int cores = 1) {
  return fmt::format(R"(schema_version: 2
name: row-test
clock: 1 GHz
cores: {}
compute:
  - name: mxu
    kind: systolic
    array: {{rows: 8, cols: 8, dataflow: output_stationary}}
    macs_per_pe: {{int8: 1}}
  - {{name: simd, kind: vector, ops_per_cycle: {{int8: 64}}}}
memory:
  - {{name: buf, capacity: 32 KiB}}
dram:
  bandwidth: 16 B/cycle
  channels: 1
  latency: 0 cycles
  timing: {{banks_per_channel: {}, row_buffer: 2 KiB, t_rcd: 15 ns, t_rp: 15 ns}}
)",
                     cores, banks);
}

TEST(SystemCEngine, DramBoundStreamShowsTheRowBufferEffectTheHandDerivationPredicts) {
  // ReLU over 32 KiB of int8 on the vector unit: DRAM reads 32 KiB and writes 32 KiB, in 4 steps
  // (half the 32 KiB buffer per step): each step reads 8 KiB (rows 4s..4s+3 of the input's 0..15)
  // and writes 8 KiB (rows 16+4s..19+4s), 128 cycles per 2 KiB row at 16 B/cycle, 512 per tile.
  // Compute (8192 elements / 64 per cycle = 128 cycles a step) hides under DRAM; every one of the
  // 32 rows is opened once (30 cycles). What the openings cost depends on the banks:
  //   1 bank: a bank cannot open a row while it moves data, so every opening adds its 30
  //     cycles: 65536 / 16 = 4096 + 32 x 30 = 5056.
  //   4 banks (row r in bank r mod 4): a row opens while the other banks' rows use the bus.
  //     Loads run two steps ahead (half the buffer, 16 KiB, holds two steps' 8 KiB of reads:
  //     prefetch_depth), so the bus always has requests queued and only the very first opening
  //     is exposed (rows 0-3 open together at 30, nothing to move before): 4096 + 30.
  const workload::Graph g =
      one_op(workload::make_elementwise("relu", workload::Function::Relu, {32768}, DataType::Int8));
  const Runs one = run_both(g, parse_arch(row_arch(1)));
  const Runs four = run_both(g, parse_arch(row_arch(4)));
  ASSERT_EQ(one.systemc.ops.size(), 1u);
  EXPECT_EQ(one.analytical.ops[0].cost.dram_reads, Bytes{32768});
  EXPECT_EQ(one.analytical.ops[0].cost.dram_writes, Bytes{32768});
  EXPECT_EQ(one.systemc.ops[0].cost.cycles, Cycles{4096 + 32 * 30});
  EXPECT_EQ(four.systemc.ops[0].cost.cycles, Cycles{4096 + 30});
  ASSERT_TRUE(one.systemc.ops[0].stalls);
  EXPECT_GT(one.systemc.ops[0].stalls->bank_conflicts.value, 0u);
  EXPECT_EQ(one.systemc.ops[0].bound, results::Bound::Memory);
  // The analytical bound is the bytes over the bandwidth alone.
  EXPECT_EQ(one.analytical.ops[0].cost.cycles, Cycles{4096});
}

TEST(SystemCEngine, CoresContendForTheSharedDram) {
  // The same ReLU on two cores (each running two of the four steps at half the chip's rate) and
  // one DRAM channel: both cores load at once, so the op cannot beat the channel's busy time
  // (65536 B / 16 B per cycle = 4096 cycles), and the channel is busy nearly all the time.
  const workload::Graph g =
      one_op(workload::make_elementwise("relu", workload::Function::Relu, {32768}, DataType::Int8));
  const Runs two = run_both(g, parse_arch(row_arch(4, 2)));
  ASSERT_EQ(two.systemc.ops.size(), 1u);
  EXPECT_GE(two.systemc.ops[0].cost.cycles.value, 4096u);
  ASSERT_FALSE(two.systemc.activity.empty());
  EXPECT_EQ(two.systemc.activity[0].level, "dram");
  EXPECT_EQ(two.systemc.activity[0].bytes, Bytes{65536});
  EXPECT_EQ(two.systemc.activity[0].busy, Cycles{4096});
  EXPECT_GT(two.systemc.activity[0].utilization, 0.95);
}

TEST(SystemCEngine, LlamaDecodeTimelineIsValidTraceEventJson) {
  // The Chrome trace-event format (the JSON object form): "traceEvents" is an array of events,
  // each with a name, a phase ("X" complete events with ts and dur in microseconds, "M"
  // metadata), a pid and a tid; complete events on one thread never overlap.
  const auto hw = preset("rk3588_npu");
  const testing::TempDir dir;
  const std::filesystem::path trace = dir.path() / "decode.trace.json";
  const Runs runs =
      run_both(llama2_7b_decode(128), hw, {.precision = DataType::Int8}, {.trace = trace});
  std::ifstream in(trace);
  ASSERT_TRUE(in) << trace;
  const nlohmann::json j = nlohmann::json::parse(in);  // throws on malformed JSON
  ASSERT_TRUE(j.contains("traceEvents"));
  ASSERT_TRUE(j["traceEvents"].is_array());
  std::map<int, double> thread_end;
  std::set<std::string> names;
  std::size_t complete = 0;
  for (const auto& e : j["traceEvents"]) {
    ASSERT_TRUE(e.at("name").is_string());
    ASSERT_TRUE(e.at("pid").is_number_integer());
    ASSERT_TRUE(e.at("tid").is_number_integer());
    const std::string ph = e.at("ph");
    ASSERT_TRUE(ph == "X" || ph == "M") << ph;
    if (ph != "X") continue;
    ++complete;
    // The category: "launch", or the unit the op ran on by its name.
    ASSERT_TRUE(e.at("cat").is_string()) << e.dump();
    const std::string cat = e.at("cat");
    EXPECT_TRUE(cat == "launch" || results::parse_op_unit(cat)) << cat;
    const double ts = e.at("ts");
    const double dur = e.at("dur");
    EXPECT_GE(ts, 0.0);
    EXPECT_GE(dur, 0.0);
    const int tid = e.at("tid");
    EXPECT_GE(ts + 1e-9, thread_end[tid]) << e.dump();
    thread_end[tid] = ts + dur;
    names.insert(e.at("name").get<std::string>());
  }
  EXPECT_EQ(thread_end.size(), 3u);  // three cores
  EXPECT_GE(complete, runs.systemc.ops.size());
  for (const results::OpResult& op : runs.systemc.ops) EXPECT_TRUE(names.contains(op.name));
  // The last event ends where the run does.
  double end = 0;
  for (const auto& [tid, t] : thread_end) end = std::max(end, t);
  EXPECT_NEAR(end * 1e-6, results::run_time(runs.systemc).value,
              1e-6 * results::run_time(runs.systemc).value);
}

TEST(SystemCEngine, RunsEveryPresetWithTheSameResultTypes) {
  // GPT-2 small decode on every bundled preset: the run's totals add up, every op's cycles are
  // its compute plus its stalls, and the time is never below the compute.
  for (const auto& entry : std::filesystem::directory_iterator("configs/arch")) {
    if (entry.path().extension() != ".yaml") continue;
    SCOPED_TRACE(entry.path().string());
    Diagnostics diags;
    const auto loaded = arch::load_arch(entry.path(), diags);
    ASSERT_TRUE(loaded) << diags.format_all();
    const arch::HardwareModel hw(loaded->spec);
    const auto graph = workload::load_workload("configs/workloads/gpt2_small_decode.yaml", diags);
    ASSERT_TRUE(graph) << diags.format_all();
    // At the first precision the matrix unit has (Eyeriss has no int8).
    const mapper::Schedule schedule =
        mapper::schedule_graph(*graph, hw, {.precision = hw.matrix_precisions().front()});
    const results::RunResult run = SystemCEngine().run(schedule, hw, {});
    ASSERT_FALSE(run.ops.empty());
    std::uint64_t cycles = 0;
    for (const results::OpResult& op : run.ops) {
      cycles += op.cost.cycles.value;
      EXPECT_EQ(op.cost.cycles.value, op.cost.compute_cycles.value + op.cost.stall_cycles.value);
      ASSERT_TRUE(op.stalls);
    }
    EXPECT_EQ(run.total.cycles.value, cycles);
    ASSERT_TRUE(run.stalls);
    EXPECT_FALSE(run.engine_notes.empty());
    ASSERT_FALSE(run.activity.empty());
    EXPECT_EQ(run.activity[0].level, "dram");
    EXPECT_LE(run.activity[0].utilization, 1.0 + 1e-9);
  }
}

TEST(SystemCEngine, RerunsAreIdentical) {
  const auto hw = preset("rk3588_npu");
  Diagnostics diags;
  const auto g = workload::load_workload("configs/workloads/gpt2_small_decode.yaml", diags);
  ASSERT_TRUE(g) << diags.format_all();
  const mapper::Schedule schedule = mapper::schedule_graph(*g, hw, {});
  EXPECT_EQ(SystemCEngine().run(schedule, hw, {}), SystemCEngine().run(schedule, hw, {}));
}

TEST(SystemCEngine, ThePlanRoundTripsThroughJsonExactly) {
  // What the worker receives is what the engine planned, on every preset: doubles print in their
  // shortest round-trip form, and every field is sent.
  Diagnostics diags;
  const auto graph = workload::load_workload("configs/workloads/gpt2_small_decode.yaml", diags);
  ASSERT_TRUE(graph) << diags.format_all();
  for (const auto& entry : std::filesystem::directory_iterator("configs/arch")) {
    if (entry.path().extension() != ".yaml") continue;
    SCOPED_TRACE(entry.path().string());
    const auto loaded = arch::load_arch(entry.path(), diags);
    ASSERT_TRUE(loaded) << diags.format_all();
    const arch::HardwareModel hw(loaded->spec);
    const mapper::Schedule schedule =
        mapper::schedule_graph(*graph, hw, {.precision = hw.matrix_precisions().front()});
    const timing::ChipPlan plan{
        timing::chip_params(hw),
        timing::plan_ops(schedule, analytical::price_ops(schedule, hw), hw)};
    ASSERT_FALSE(plan.works.empty());
    const std::string text = nlohmann::ordered_json(plan).dump();
    EXPECT_TRUE(nlohmann::ordered_json::parse(text).get<timing::ChipPlan>() == plan);
  }
}

TEST(SystemCEngine, RunsFromManyThreadsAtOnceGiveTheSerialResult) {
  // A sweep runs its points on several threads, each starting workers. Every concurrent run
  // returns what a run alone returns. (The engine forked itself before: under AddressSanitizer
  // the child of a multithreaded fork could hang in the allocator's lock, and with it the run.)
  const auto hw = preset("rk3588_npu");
  const mapper::Schedule schedule =
      mapper::schedule_graph(one_op(workload::make_gemm("gemm", 256, 256, 256)), hw, {});
  const results::RunResult alone = SystemCEngine().run(schedule, hw, {});
  constexpr int kThreads = 4;
  constexpr int kRunsEach = 3;
  std::vector<std::vector<results::RunResult>> runs(kThreads);
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRunsEach; ++r)
        runs[static_cast<std::size_t>(t)].push_back(SystemCEngine().run(schedule, hw, {}));
    });
  for (std::thread& t : threads) t.join();
  for (const auto& each : runs) {
    ASSERT_EQ(each.size(), static_cast<std::size_t>(kRunsEach));
    for (const results::RunResult& run : each) EXPECT_EQ(run, alone);
  }
}

// The message of what `run` throws, or "" when it throws nothing.
template <typename F>
std::string thrown(F&& run) {
  try {
    run();
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

TEST(SystemCEngine, AWorkerThatCannotRunOrAnswerIsAnErrorSayingWhich) {
  const auto hw = preset("rk3588_npu");
  const mapper::Schedule schedule =
      mapper::schedule_graph(one_op(workload::make_gemm("gemm", 64, 64, 64)), hw, {});
  const auto run_with = [&](const std::string& worker) {
    return thrown([&] { SystemCEngine(worker).run(schedule, hw, {}); });
  };
  const std::string missing = run_with("/nonexistent/coda-systemc-worker");
  EXPECT_NE(missing.find("cannot start its worker program /nonexistent/coda-systemc-worker"),
            std::string::npos)
      << missing;
  const std::string failed = run_with("/bin/false");
  EXPECT_NE(failed.find("/bin/false exited with status 1"), std::string::npos) << failed;
  // cat echoes the plan back: an answer that is neither "ok" nor "error".
  const std::string garbled = run_with("/bin/cat");
  EXPECT_NE(garbled.find("did not answer \"ok\" or \"error\""), std::string::npos) << garbled;
}

TEST(SystemCEngine, TheWorkerAnswersAMalformedPlanWithAnError) {
  // The worker run by hand: a plan without its fields is "error" and why, exit status 1.
  const std::string worker = SystemCEngine().worker_program().string();
  FILE* pipe = ::popen(("echo '{\"cores\": 1}' | SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1 " + worker).c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string out;
  char buffer[4096];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, n);
  const int status = ::pclose(pipe);
  EXPECT_EQ(out.rfind("error\n", 0), 0u) << out;
  EXPECT_NE(out.find("dram"), std::string::npos) << out;  // the missing field
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << status;
}

}  // namespace
}  // namespace coda::sim::systemc
