// Every preset in configs/workloads/llm loads cleanly and builds a prefill, a decode step and a
// training step whose graphs verify (an encoder: prefill only, its other phases an error). Tests
// run from the repository top.

#include <filesystem>

#include <gtest/gtest.h>

#include "workloads/llm/llm_builder.h"

namespace coda::workload::llm {
namespace {

TEST(LlmPresets, EveryPresetBuildsEveryPhase) {
  std::size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator("configs/workloads/llm")) {
    if (entry.path().extension() != ".yaml") continue;
    ++files;
    Diagnostics diags;
    const auto c = load_llm_config(entry.path(), diags);
    ASSERT_TRUE(c && diags.all().empty()) << entry.path() << "\n" << diags.format_all();
    EXPECT_FALSE(c->source.empty());
    const LlmPhase phases[] = {
        {.kind = PhaseKind::Prefill, .batch = 2, .seq_len = 128},
        {.kind = PhaseKind::Decode, .batch = 2, .seq_len = 128},
        {.kind = PhaseKind::Training, .batch = 2, .seq_len = 64, .recompute = true},
    };
    for (const LlmPhase& phase : phases) {
      const Parallelism par{.micro_batches = phase.kind == PhaseKind::Training ? 2u : 1u};
      if (c->encoder && phase.kind != PhaseKind::Prefill) {
        Diagnostics refused;
        EXPECT_FALSE(try_build_llm(*c, phase, par, refused)) << entry.path();
        ASSERT_EQ(refused.error_count(), 1u) << refused.format_all();
        EXPECT_EQ(refused.all().front().path, "phase.kind");
        continue;
      }
      const auto g = try_build_llm(*c, phase, par, diags);
      ASSERT_TRUE(g) << entry.path() << "\n" << diags.format_all();
      const auto problems = verify(*g);
      EXPECT_TRUE(problems.empty()) << entry.path() << " " << to_string(phase.kind) << ": "
                                    << problems.front();
      EXPECT_GT(total_flops(*g), 0u);
    }
    EXPECT_TRUE(diags.all().empty()) << diags.format_all();
  }
  // 21 + the 10 GPTs of Megatron-LM's weak scaling (megatron_gpt_*) + the edge corpus's Qwen2-0.5B,
  // Qwen2.5-1.5B and Phi-3-mini + Qwen3-0.6B, Qwen3-8B and Qwen3-30B-A3B + Gemma 2 2B, 9B, 27B
  // + Qwen1.5-MoE-A2.7B + Gemma 3 1B + DeepSeek-V3 and DeepSeek-V2-Lite + Pythia-160M and
  // 6.9B, GPT-J-6B, Falcon-7B and Phi-2 + BERT-base, BERT-large and RoBERTa-base + the MoE
  // training corpus's Qwen3-235B-A22B and GPT-OSS-120B.
  EXPECT_EQ(files, 54u);
}

}  // namespace
}  // namespace coda::workload::llm
