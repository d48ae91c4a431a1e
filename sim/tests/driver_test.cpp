#include "sim/driver.h"

#include <gtest/gtest.h>

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
