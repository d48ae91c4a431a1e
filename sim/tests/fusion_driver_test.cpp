// run_files with a fusion mode: the plan is applied and recorded in the RunResult.

#include <gtest/gtest.h>

#include "testing/graph_checks.h"

#include "sim/driver.h"
#include "testing/temp_dir.h"
#include "workloads/builders.h"
#include "workloads/trace.h"

namespace coda::sim {
namespace {

using workload::Function;
using workload::TensorId;
using workload::TensorRole;

// fc: C[64][32] = A[64][16] x B[16][32], bias, relu; an attention op; fc2, relu and another
// reader of fc2's output; all fp16.
std::string trace() {
  workload::Graph g = testing::gemm_bias_relu();
  g.name = "fusable";
  g.add(workload::make_attention(
      "attn", {.heads = 4, .kv_heads = 4, .q_len = 128, .kv_len = 128, .head_dim = 64},
      DataType::Fp16));
  // fc2's output (tensor 12) has a second reader, so it stays in DRAM.
  g.add(workload::make_gemm("fc2", 64, 32, 16, DataType::Fp16));
  g.add(workload::make_elementwise("fc2.relu", Function::Relu, {64, 32}, DataType::Fp16),
        {TensorId{12}});
  g.add(workload::make_elementwise("other", Function::Sigmoid, {64, 32}, DataType::Fp16),
        {TensorId{12}});
  return workload::write_trace(g);
}

TEST(FusionDriver, RecordsTheGroupsItFused) {
  const testing::TempDir tmp;
  const auto file = tmp.write("fusable.json", trace());
  RunFiles files{"configs/arch/nvidia_h100_sxm.yaml", file, "analytical"};
  Diagnostics diags;
  const auto none = run_files(files, diags);
  files.fusion = mapper::FusionMode::Epilogue;
  const auto fused = run_files(files, diags);
  ASSERT_TRUE(none && fused) << diags.format_all();
  EXPECT_EQ(none->fusion_mode, "none");
  EXPECT_TRUE(none->fusion.empty());
  EXPECT_EQ(fused->fusion_mode, "epilogue");
  // The epilogue saves 2 x 2 x (64 x 32 x 2 B) = 16384 B; attention 4 x S with
  // S = 4 x 128 x 128 x 2 B = 131072 B: 524288 B.
  ASSERT_EQ(fused->fusion.size(), 2u);
  EXPECT_EQ(fused->fusion[0],
            (results::FusedGroup{"epilogue", {"fc", "fc.bias", "fc.relu"}, Bytes{16384}}));
  EXPECT_EQ(fused->fusion[1], (results::FusedGroup{"attention", {"attn"}, Bytes{524288}}));
  ASSERT_EQ(fused->fusion_rejected.size(), 1u);
  EXPECT_EQ(fused->fusion_rejected[0],
            (results::RejectedGroup{"epilogue", {"fc2", "fc2.relu"},
                                    "'fc2.C' is also read by 'other'"}));
  // Priced: the epilogue's 16384 B, and attention's S and P each written and read once, 4 x
  // 131072 B (every operand fits H100's 50 MiB L2, and the softmax reads S once: a row of 128
  // fp16 scores fits an SM's shared memory).
  const auto dram = [](const results::Cost& c) {
    return c.dram_reads.value + c.dram_writes.value;
  };
  EXPECT_EQ(dram(none->total) - dram(fused->total), 16384u + 4 * 131072);
}

TEST(FusionDriver, WithoutAModeRunsAsTheArchsVendorCompilerFuses) {
  // The H100 preset states no calibration.fusion: a run without a mode fuses nothing.
  // coral_edge_tpu.yaml states `fusion: all` (the Edge TPU compiler runs the graph as one op):
  // a run without a mode is the run with --fusion all, and --fusion none still overrides it.
  const testing::TempDir tmp;
  const auto file = tmp.write("fusable.json", trace());
  Diagnostics diags;
  const auto h100 = run_files({"configs/arch/nvidia_h100_sxm.yaml", file, "analytical"}, diags);
  RunFiles coral{"configs/arch/coral_edge_tpu.yaml", file, "analytical"};
  coral.precision = DataType::Int8;  // the Edge TPU runs int8 only
  coral.skip_unsupported = true;     // attention has no unit on it
  const auto by_arch = run_files(coral, diags);
  coral.fusion = mapper::FusionMode::All;
  const auto all = run_files(coral, diags);
  coral.fusion = mapper::FusionMode::None;
  const auto none = run_files(coral, diags);
  ASSERT_TRUE(h100 && by_arch && all && none) << diags.format_all();
  EXPECT_EQ(h100->fusion_mode, "none");
  EXPECT_EQ(by_arch->fusion_mode, "all");
  EXPECT_EQ(none->fusion_mode, "none");
  EXPECT_EQ(by_arch->total, all->total);
  EXPECT_EQ(by_arch->fusion, all->fusion);
  EXPECT_FALSE(by_arch->fusion.empty());
}

}  // namespace
}  // namespace coda::sim
