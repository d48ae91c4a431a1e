#include "sim/driver.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "testing/temp_dir.h"

namespace coda::sim {
namespace {

TEST(Driver, RunsBundledResNet18OnTheScaleSimPreset) {
  Diagnostics diags;
  const auto run = run_files({"configs/arch/scalesim_32x32_os.yaml",
                              "configs/workloads/resnet18.yaml", "analytical"},
                             diags);
  ASSERT_TRUE(run) << diags.format_all();
  ASSERT_EQ(run->ops.size(), 21u);
  // conv1: 224x224x3, 7x7/2, pad 3, 64 filters -> 112x112. M' = 12544, N' = 64, K' = 147.
  // OS on 32x32: 392 row folds x 2 col folds, each 147 + 32 + 32 - 2 = 209 cycles: 163856.
  const auto& conv1 = run->ops.front();
  EXPECT_EQ(conv1.name, "conv1");
  EXPECT_EQ(conv1.cost.compute_cycles, Cycles{163856});
  // Totals are the sum over ops.
  results::Cost sum;
  for (const auto& op : run->ops) sum = sum + op.cost;
  EXPECT_EQ(sum, run->total);
  EXPECT_EQ(run->provenance.engine, "analytical");
  ASSERT_EQ(run->provenance.inputs.size(), 2u);
  EXPECT_EQ(run->provenance.inputs[0].hash.size(), 16u);
}

TEST(Driver, ScaleSimCsvAndYamlResNet18GiveTheSameLayers) {
  // configs/workloads/scalesim/resnet18.csv is the same network in SCALE-Sim's format (padding
  // folded into the ifmap size, docs/workloads.md), so every layer must price identically: the
  // CSV is what a SCALE-Sim user would run, the YAML is what coda's main job runs.
  Diagnostics diags;
  const auto yaml = run_files({"configs/arch/scalesim_32x32_os.yaml",
                               "configs/workloads/resnet18.yaml", "analytical"},
                              diags);
  const auto csv = run_files({"configs/arch/scalesim_32x32_os.yaml",
                              "configs/workloads/scalesim/resnet18.csv", "analytical"},
                             diags);
  ASSERT_TRUE(yaml && csv) << diags.format_all();
  ASSERT_EQ(yaml->ops.size(), csv->ops.size());
  for (std::size_t i = 0; i < yaml->ops.size(); ++i) {
    EXPECT_EQ(yaml->ops[i].mapping, csv->ops[i].mapping) << yaml->ops[i].name;
    EXPECT_EQ(yaml->ops[i].cost.compute_cycles, csv->ops[i].cost.compute_cycles)
        << yaml->ops[i].name;
  }
}

TEST(Driver, ReportsErrorsFromBothInputsAtOnce) {
  Diagnostics diags;
  EXPECT_FALSE(run_files({"configs/arch/missing.yaml", "configs/workloads/missing.yaml"}, diags));
  EXPECT_EQ(diags.error_count(), 2u) << diags.format_all();
}

// The 32x32 SCALE-Sim preset with dram.model: scalesim, written to the test's temp folder.
// In the test's own folder: two tests writing one shared file raced under ctest -j (one read it
// while the other had just truncated it: "the document is empty").
std::filesystem::path scalesim_user_arch() {
  const coda::testing::TempDir dir;
  return dir.write("scalesim_32x32_os_user.yaml",
                   "schema_version: 1\nextends: " +
                       std::filesystem::absolute("configs/arch/scalesim_32x32_os.yaml").string() +
                       "\nname: scalesim-user\ndram: {model: scalesim, bandwidth: 10 B/cycle}\n");
}

TEST(Driver, ScaleSimDramModelMatchesSCALESimOnAlexNetLayers) {
  // SCALE-Sim's own run of these two layers on its scale.cfg in USER mode
  // (sim/tests/data/scalesim/README.md): Total Cycles 5394063 and 820173, Stall Cycles 5223712
  // and 687118. coda's cycles are compute + stalls, its 0-based total plus one.
  Diagnostics diags;
  const auto run = run_files(
      {scalesim_user_arch(), "sim/tests/data/scalesim/alexnet_conv3_fc8.csv"}, diags);
  ASSERT_TRUE(run) << diags.format_all();
  ASSERT_EQ(run->ops.size(), 2u);
  EXPECT_EQ(run->ops[0].cost.stall_cycles, Cycles{5223712});
  EXPECT_EQ(run->ops[0].cost.cycles, Cycles{5394063 + 1});
  EXPECT_EQ(run->ops[1].cost.stall_cycles, Cycles{687118});
  EXPECT_EQ(run->ops[1].cost.cycles, Cycles{820173 + 1});
}

TEST(Driver, ScaleSimDramModelRejectsWhatSCALESimCannotRun) {
  // Grouped (depthwise) convs: SCALE-Sim runs one GEMM per layer.
  Diagnostics groups;
  EXPECT_FALSE(run_files({scalesim_user_arch(), "configs/workloads/mobilenet.yaml"}, groups));
  EXPECT_NE(groups.format_all().find(
                "configs/workloads/mobilenet.yaml:11:5: error: op 'block1.dw': a contraction op "
                "is 32 GEMMs (groups or batch entries); dram.model: scalesim reproduces "
                "SCALE-Sim, which runs one GEMM per layer on one array"),
            std::string::npos)
      << groups.format_all();
  // The loop-nest search prices DRAM with coda's own hierarchy model.
  Diagnostics search;
  RunFiles files{scalesim_user_arch(), "configs/workloads/resnet18.yaml"};
  files.search = mapper::ScheduleSearch{};
  EXPECT_FALSE(run_files(files, search));
  EXPECT_NE(search.format_all().find("error: dram.model: model: scalesim times the analytical "
                                     "engine's folds as SCALE-Sim does; --mapper search prices "
                                     "loop nests with coda's own memory model"),
            std::string::npos)
      << search.format_all();
}

// LLaMA-2-7B decoding one token over a 2k context, int8 (the edge sweep's workload), on `arch`.
RunFiles llama2_7b_decode(const std::filesystem::path& arch) {
  RunFiles files{arch, {}, "analytical"};
  files.source = workload::LlmSource{
      .config = "configs/workloads/llm/llama2_7b.yaml",
      .phase = {.kind = workload::llm::PhaseKind::Decode, .batch = 1, .seq_len = 2047},
      .parallelism = {},
      .dtype = DataType::Int8};
  return files;
}

TEST(Driver, DecodeAttentionClassIsTheUsersChoiceAndRecorded) {
  // LLaMA-2-7B decoding one token over a 2k context (int8), on the H100 preset, whose
  // calibration states no decode_attention: grouped by default.
  Diagnostics diags;
  RunFiles files = llama2_7b_decode("configs/arch/nvidia_h100_sxm.yaml");
  const auto grouped = run_files(files, diags);
  ASSERT_TRUE(grouped) << diags.format_all();
  EXPECT_EQ(grouped->decode_attention, "grouped");
  files.decode_attention = arch::DecodeAttention::PerHead;
  const auto per_head = run_files(files, diags);
  ASSERT_TRUE(per_head) << diags.format_all();
  EXPECT_EQ(per_head->decode_attention, "per_head");
  ASSERT_EQ(per_head->ops.size(), grouped->ops.size());
  int attention_ops = 0;
  for (std::size_t i = 0; i < per_head->ops.size(); ++i) {
    if (per_head->ops[i].unit != results::OpUnit::Attention) {
      EXPECT_EQ(per_head->ops[i].cost, grouped->ops[i].cost);  // only attention changes
      continue;
    }
    ++attention_ops;
    // LLaMA-2-7B has 32 KV heads for 32 query heads: a group of 1, so per_head re-reads
    // nothing (group - 1 = 0) and the DRAM bytes are the same. Its QK^T and PV run on the CUDA
    // cores' fp32 FMAs: 32 heads x 2048 keys x 2 x 128 MACs = 16.8 M over 32 blocks (one per
    // head, 32 of 132 SMs) of 128 FMAs a cycle = 4096 cycles (6702 with the softmax on the same
    // warps), under the layer's K and V reads
    // (2 x 32 x 2048 x 128 int8 = 16.8 MB at 3.35 TB/s x dram_fraction 0.784 = 6.4 us, ~11.7k
    // cycles at 1.83 GHz): memory-bound either way, so the time is the same too.
    EXPECT_EQ(per_head->ops[i].cost.dram_reads, grouped->ops[i].cost.dram_reads);
    EXPECT_EQ(per_head->ops[i].cost.cycles, grouped->ops[i].cost.cycles);
    EXPECT_LT(per_head->ops[i].cost.compute_cycles.value, 11700u) << per_head->ops[i].cost.compute_cycles.value;
  }
  EXPECT_EQ(attention_ops, 32);  // one per layer

  // fa2_forward: FlashAttention-2's prefill kernel with the one query, in a fused attention (the
  // classes price a fused attention kernel). One sequence x 32 heads is 32 blocks, under 80% of
  // 132 SMs, so its split-KV kernel runs: over 2048 keys in 16 blocks of 128, FlashAttention's
  // heuristic takes 4 splits (wave efficiency 128 / 132 = 0.97, the best; 1-3 splits reach
  // 0.24-0.73), and the combine kernel adds the splits' partial outputs,
  // 2 x 4 x 32 x (128 + 1) x 4 B = 132,096 B, to the reads (recorded as the op's DRAM reads).
  files.fusion = mapper::FusionMode::Epilogue;
  files.decode_attention = arch::DecodeAttention::Grouped;
  const auto fused = run_files(files, diags);
  files.decode_attention = arch::DecodeAttention::Fa2Forward;
  const auto fa2_forward = run_files(files, diags);
  ASSERT_TRUE(fused && fa2_forward) << diags.format_all();
  EXPECT_EQ(fa2_forward->decode_attention, "fa2_forward");
  ASSERT_EQ(fa2_forward->ops.size(), fused->ops.size());
  int fa2_ops = 0;
  for (std::size_t i = 0; i < fa2_forward->ops.size(); ++i) {
    const results::OpResult& op = fa2_forward->ops[i];
    if (op.unit != results::OpUnit::Attention) continue;
    ++fa2_ops;
    const auto splits = std::find(op.mapping.begin(), op.mapping.end(),
                                  std::pair<std::string, std::uint64_t>{"splits", 4});
    EXPECT_NE(splits, op.mapping.end()) << op.name;
    EXPECT_EQ(op.cost.dram_reads.value, fused->ops[i].cost.dram_reads.value + 132'096);
  }
  EXPECT_EQ(fa2_ops, 32);

  // On an arch without tensor cores the flag is a located error.
  RunFiles npu = llama2_7b_decode("configs/arch/rk3588_npu.yaml");
  npu.decode_attention = arch::DecodeAttention::PerHead;
  Diagnostics npu_diags;
  EXPECT_FALSE(run_files(npu, npu_diags));
  EXPECT_EQ(npu_diags.format_all(),
            "configs/arch/rk3588_npu.yaml: error: --decode-attention: the arch has no tensor "
            "cores: its decode attention is not a GPU kernel; leave --decode-attention out\n1 error\n");
}

// --attention triton prices the fused attention at the arch's calibration.attention_triton share
// of fa2's matrix rate: the Jetson AGX Orin GPU preset states none, so it is a located error
// there (and the A100 preset's 0.49 runs).
TEST(Driver, TritonAttentionNeedsTheArchsShare) {
  RunFiles orin = llama2_7b_decode("configs/arch/jetson_agx_orin_gpu.yaml");
  orin.attention = arch::AttentionImpl::Triton;
  Diagnostics diags;
  EXPECT_FALSE(run_files(orin, diags));
  EXPECT_EQ(diags.format_all(),
            "configs/arch/jetson_agx_orin_gpu.yaml: error: --attention: triton needs "
            "calibration.attention_triton (its share of fa2's matrix rate), which this arch does "
            "not state; leave --attention out, use fa2, or state calibration.attention_triton\n"
            "1 error\n");
  RunFiles a100 = llama2_7b_decode("configs/arch/nvidia_a100_sxm_80gb.yaml");
  a100.attention = arch::AttentionImpl::Triton;
  Diagnostics a100_diags;
  EXPECT_TRUE(run_files(a100, a100_diags)) << a100_diags.format_all();
}

// An eager launch: kernel i waits for the host's i-th issue slot (add_host_issue).
TEST(Driver, EagerLaunchWaitsOnTheHost) {
  // Three ops at 1 GHz: a kernel of 10 us, an op fused into it (2 us, no kernel of its own) and a
  // kernel of 1 us. The host issues every 20 us: the first kernel runs 0..12 us, the second is
  // issued at 20 us and ends at 21 us; the ops' own time is 13 us, so the GPU waits 8 us.
  mapper::Schedule schedule;
  schedule.ops.resize(3);
  schedule.ops[1].own_kernel = false;
  results::RunResult run;
  run.clock = Hertz{1e9};
  run.ops.resize(3);
  run.ops[0].cost.cycles = Cycles{10000};
  run.ops[1].cost.cycles = Cycles{2000};
  run.ops[2].cost.cycles = Cycles{1000};
  run.total.cycles = Cycles{13000};
  add_host_issue(run, schedule, 20e-6);
  EXPECT_EQ(run.launch, "eager");
  EXPECT_DOUBLE_EQ(run.host_issue.value, 20e-6);
  EXPECT_NEAR(run.host_wait.value, 8e-6, 1e-12);
  EXPECT_NEAR(results::run_time(run).value, 21e-6, 1e-12);
  // A host faster than every kernel never holds the GPU back.
  add_host_issue(run, schedule, 1e-6);
  EXPECT_EQ(run.host_wait.value, 0.0);

  // run_files: the H100 preset states eager_issue_time; the ops are priced as from a graph and
  // the wait comes on top, recorded in run.json.
  Diagnostics diags;
  RunFiles files = llama2_7b_decode("configs/arch/nvidia_h100_sxm.yaml");
  const auto graph = run_files(files, diags);
  files.eager = true;
  const auto eager = run_files(files, diags);
  ASSERT_TRUE(graph && eager) << diags.format_all();
  EXPECT_TRUE(graph->launch.empty());
  EXPECT_EQ(eager->launch, "eager");
  EXPECT_EQ(eager->total, graph->total);
  EXPECT_GT(eager->host_wait.value, 0.0);
  EXPECT_NEAR(results::run_time(*eager).value,
              results::run_time(*graph).value + eager->host_wait.value, 1e-12);
  nlohmann::ordered_json j = *eager;
  EXPECT_EQ(j.at("launch").at("mode"), "eager");
  EXPECT_EQ(j.get<results::RunResult>(), *eager);

  // An arch that states no issue time (the Jetson AGX Orin GPU's) cannot price an eager launch: a
  // located error.
  RunFiles orin = llama2_7b_decode("configs/arch/jetson_agx_orin_gpu.yaml");
  orin.eager = true;
  Diagnostics orin_diags;
  EXPECT_FALSE(run_files(orin, orin_diags));
  EXPECT_NE(orin_diags.format_all().find("configs/arch/jetson_agx_orin_gpu.yaml: error: --launch "
                                         "eager: the arch states no calibration.eager_issue_time"),
            std::string::npos)
      << orin_diags.format_all();
}

TEST(Driver, UnknownEngineListsTheKnownOnes) {
  Diagnostics diags;
  try {
    run_files({"configs/arch/scalesim_32x32_os.yaml", "configs/workloads/resnet18.yaml", "magic"},
              diags);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "unknown engine 'magic'; known engines: analytical");
  }
}

}  // namespace
}  // namespace coda::sim
