// LLM training steps run end to end (issue 18, item 1): the builder's training graphs (forward,
// backward with one attention-backward op per layer, AdamW) through `coda run`'s path
// (sim::run_files) on a GPU (H100), a TPU (v4) and an edge NPU's systolic array (RK3588), with
// --fusion none and epilogue, --mapper fixed and search, and the SystemC engine.
//
// What each run must show, whatever the model's details:
//   - nothing unsupported or skipped, and one result per graph op (a fused op keeps its row);
//   - fused attention prices the model's MACs: with every attention op fused (epilogue), the
//     run's MACs equal the graph's, workload::total_macs; the training graph's MACs are
//     3 x its forward's (each forward GEMM has dX and dW of its size; each attention a backward
//     op of twice its MACs: LlmBuilder.TrainingIsThreeTimesForwardFourWithRecompute);
//   - unfused (none), an attention's GEMMs cover every query-key pair, the mask acting in the
//     softmax (DecomposeAttention; decompose_attention_backward), so the run's MACs exceed the
//     graph's by the masked pairs: per causal attention of h heads over q = kv = s tokens and
//     head dim d, forward 2 h (s^2 - (s^2 - s (s - 1) / 2)) d = h s (s - 1) d, backward twice that;
//   - the engines agree on what runs: SystemC prices the same ops and MACs as the analytical
//     engine.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "cli/options.h"
#include "core/diagnostics.h"
#include "mapper/schedule.h"
#include "sim/driver.h"
#include "testing/temp_dir.h"
#include "workloads/llm/llm_builder.h"
#include "workloads/llm/llm_config.h"
#include "workloads/trace.h"

namespace coda {
namespace {

namespace fs = std::filesystem;
using workload::llm::LlmPhase;
using workload::llm::PhaseKind;

struct Model {
  std::string name;
  std::uint64_t layers = 0, heads = 0, head_dim = 0;  // as the preset states them
};

// Every attention op is causal over s tokens (training), h heads, head dim d: the unfused parts'
// extra MACs over the model's, forward and backward (see the header).
std::uint64_t masked_macs(const Model& m, std::uint64_t batch, std::uint64_t s) {
  const std::uint64_t forward = batch * m.heads * s * (s - 1) * m.head_dim;
  return m.layers * 3 * forward;
}

fs::path training_trace(const Model& m, std::uint64_t batch, std::uint64_t seq,
                        const testing::TempDir& dir, workload::Graph& graph,
                        workload::llm::Precision precision = workload::llm::Precision::Mixed) {
  Diagnostics diags;
  const auto config =
      workload::llm::load_llm_config("configs/workloads/llm/" + m.name + ".yaml", diags);
  EXPECT_TRUE(config.has_value()) << diags.format_all();
  if (!config) return {};
  const auto built = workload::llm::try_build_llm(
      *config,
      LlmPhase{.kind = PhaseKind::Training, .batch = batch, .seq_len = seq, .precision = precision},
      {}, diags);
  EXPECT_TRUE(built.has_value()) << diags.format_all();
  if (!built) return {};
  graph = *built;
  return dir.write(fmt::format("{}_training_{}.json", m.name, workload::llm::to_string(precision)),
                   workload::write_trace(graph));
}

std::optional<results::RunResult> run(const fs::path& arch, const fs::path& trace,
                                      mapper::FusionMode fusion, bool search,
                                      const std::string& engine,
                                      const sim::EngineRegistry& engines) {
  SCOPED_TRACE(arch.string() + " " + trace.filename().string() +
               (fusion == mapper::FusionMode::None ? " fusion none" : " fusion epilogue") +
               (search ? " search " : " fixed ") + engine);
  sim::RunFiles files{.arch = arch, .workload = trace, .engine = engine, .fusion = fusion,
                      .engines = &engines};
  if (search) {
    mapper::ScheduleSearch s;
    s.settings.strategy = mapper::Strategy::Heuristic;
    s.settings.budget.max_evaluations = 300;
    s.settings.seed = 1;
    files.search = s;
  }
  Diagnostics diags;
  auto result = sim::run_files(files, diags);
  EXPECT_TRUE(result.has_value()) << diags.format_all();
  EXPECT_FALSE(diags.has_errors()) << diags.format_all();
  return result;
}

std::uint64_t attention_fused(const results::RunResult& r) {
  std::uint64_t fused = 0;
  for (const results::OpResult& op : r.ops)
    if (op.unit == results::OpUnit::Attention)
      for (const auto& [key, value] : op.mapping)
        if (key == "fused" && value == 1) ++fused;
  return fused;
}

// The step on `arch` with --fusion none and epilogue, --mapper fixed and search (analytical):
// every op priced, none skipped; fused, every attention op (forward and backward) runs fused and
// the run prices the graph's MACs; unfused, none does and the run adds the masked pairs the
// unfused kernels compute anyway.
void every_mode_prices_the_step(const fs::path& arch, const fs::path& trace,
                                const workload::Graph& graph, const Model& model,
                                std::uint64_t batch, std::uint64_t seq,
                                const sim::EngineRegistry& engines, bool with_search = true) {
  const std::uint64_t graph_macs = workload::total_macs(graph);
  for (const auto fusion : {mapper::FusionMode::None, mapper::FusionMode::Epilogue}) {
    for (const bool search : {false, true}) {
      if (search && !with_search) continue;
      const auto r = run(arch, trace, fusion, search, "analytical", engines);
      ASSERT_TRUE(r.has_value());
      EXPECT_TRUE(r->skipped.empty());
      ASSERT_EQ(r->ops.size(), graph.ops.size());
      EXPECT_GT(r->total.cycles.value, 0u);
      if (fusion == mapper::FusionMode::Epilogue) {
        EXPECT_EQ(attention_fused(*r), 2 * model.layers) << arch;
        EXPECT_EQ(r->total.macs, graph_macs) << arch;
      } else {
        EXPECT_EQ(attention_fused(*r), 0u);
        EXPECT_EQ(r->total.macs, graph_macs + masked_macs(model, batch, seq)) << arch;
      }
    }
  }
}

TEST(Training, EveryStepRunsOnGpuTpuAndNpuInEveryMode) {
  const testing::TempDir dir;
  const sim::EngineRegistry engines = cli::all_engines();
  // gpt2_small: 12 layers, 12 heads of 64; llama2_7b: 32 layers, 32 heads of 128
  // (configs/workloads/llm/). One sequence of 128 tokens keeps the runs short.
  const std::uint64_t batch = 1, seq = 128;
  for (const Model& model : {Model{"gpt2_small", 12, 12, 64}, Model{"llama2_7b", 32, 32, 128}}) {
    workload::Graph graph;
    const fs::path trace = training_trace(model, batch, seq, dir, graph);
    ASSERT_FALSE(trace.empty());
    for (const char* arch : {"configs/arch/nvidia_h100_sxm.yaml",
                             "configs/arch/google_tpu_v4.yaml", "configs/arch/rk3588_npu.yaml"}) {
      every_mode_prices_the_step(arch, trace, graph, model, batch, seq, engines);
      // The cycle-approximate engine on the same step (LLaMA-2-7B only on the GPU: the edge
      // NPU's SystemC run of it takes tens of seconds).
      if (model.name == "llama2_7b" && std::string(arch) != "configs/arch/nvidia_h100_sxm.yaml")
        continue;
      const auto analytical =
          run(arch, trace, mapper::FusionMode::Epilogue, false, "analytical", engines);
      const auto systemc = run(arch, trace, mapper::FusionMode::Epilogue, false, "systemc", engines);
      ASSERT_TRUE(analytical && systemc);
      ASSERT_EQ(systemc->ops.size(), analytical->ops.size());
      EXPECT_EQ(systemc->total.macs, analytical->total.macs);
      EXPECT_GT(systemc->total.cycles.value, 0u);
    }
  }
}

// DeepSeek-V2-Lite's step (multi-head latent attention in its prefill form, dense layer 0, 26
// MoE layers of 64 routed and 2 shared experts) runs on the TPU in every mode, on the GPU fused
// and unfused with the fixed mapper and on both engines (its 2,700 ops take minutes under the
// sanitizers on every arch and mode; GPT-2's and LLaMA's steps above run them all, the NPU's
// included). Its attention is causal over 16 heads with 192 dims for
// Q K^T and 128 for P V: the unfused parts' extra MACs are those of masked_macs with head_dim
// (192 + 128) / 2 = 160 (each masked pair costs 192 + 128 = 2 x 160 MACs a head).
TEST(Training, MultiHeadLatentAttentionStepRunsInEveryMode) {
  const testing::TempDir dir;
  const sim::EngineRegistry engines = cli::all_engines();
  const Model model{"deepseek_v2_lite", 27, 16, 160};
  const std::uint64_t batch = 1, seq = 64;
  workload::Graph graph;
  const fs::path trace = training_trace(model, batch, seq, dir, graph);
  ASSERT_FALSE(trace.empty());
  const fs::path gpu = "configs/arch/nvidia_h100_sxm.yaml";
  every_mode_prices_the_step("configs/arch/google_tpu_v4.yaml", trace, graph, model, batch, seq,
                             engines);
  every_mode_prices_the_step(gpu, trace, graph, model, batch, seq, engines, false);
  const auto analytical =
      run(gpu, trace, mapper::FusionMode::Epilogue, false, "analytical", engines);
  const auto systemc = run(gpu, trace, mapper::FusionMode::Epilogue, false, "systemc", engines);
  ASSERT_TRUE(analytical && systemc);
  EXPECT_EQ(systemc->total.macs, analytical->total.macs);
  EXPECT_GT(systemc->total.cycles.value, 0u);
}

// PyTorch autocast's step (fp32 parameters, casts, fp32 residual stream and norms) runs on the
// GPU and the TPU in every mode and on both engines: the same matrix work as the mixed-precision
// step (a cast does no MACs), and more time (the casts and the fp32 tensors add traffic and
// kernels, and take none away).
TEST(Training, AutocastStepRunsAndCostsMoreThanMixed) {
  const testing::TempDir dir;
  const sim::EngineRegistry engines = cli::all_engines();
  const Model model{"gpt2_small", 12, 12, 64};
  workload::Graph mixed_graph, autocast_graph;
  const fs::path mixed = training_trace(model, 1, 128, dir, mixed_graph);
  const fs::path autocast = training_trace(model, 1, 128, dir, autocast_graph,
                                           workload::llm::Precision::Autocast);
  ASSERT_FALSE(mixed.empty() || autocast.empty());
  EXPECT_EQ(workload::total_macs(autocast_graph), workload::total_macs(mixed_graph));
  for (const char* arch : {"configs/arch/nvidia_h100_sxm.yaml", "configs/arch/google_tpu_v4.yaml"}) {
    for (const auto fusion : {mapper::FusionMode::None, mapper::FusionMode::Epilogue}) {
      for (const char* engine : {"analytical", "systemc"}) {
        const auto a = run(arch, autocast, fusion, false, engine, engines);
        const auto m = run(arch, mixed, fusion, false, engine, engines);
        ASSERT_TRUE(a && m);
        EXPECT_TRUE(a->skipped.empty());
        EXPECT_EQ(a->total.macs, m->total.macs);
        EXPECT_GT(a->total.cycles.value, m->total.cycles.value) << arch << " " << engine;
      }
    }
  }
}

}  // namespace
}  // namespace coda
