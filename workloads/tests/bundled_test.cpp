// Every workload bundled in configs/workloads loads cleanly, and the ones with a hand-derivable
// size match it. Tests run from the repository top (see cmake/CodaTargets.cmake).

#include <filesystem>
#include <vector>

#include <gtest/gtest.h>

#include "workloads/importers.h"

namespace coda::workload {
namespace {

const std::filesystem::path kDir = "configs/workloads";

Graph load(const std::filesystem::path& file) {
  Diagnostics diags;
  auto g = load_workload(file, diags);
  EXPECT_TRUE(g && diags.all().empty()) << file << "\n" << diags.format_all();
  return g ? *g : Graph{};
}

TEST(BundledWorkloads, EveryFileLoadsWithoutDiagnostics) {
  std::size_t files = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(kDir)) {
    // configs/workloads/llm holds model configs, not layer lists (workloads/llm/tests reads them).
    if (!entry.is_regular_file() || entry.path().parent_path().filename() == "llm") continue;
    ++files;
    const Graph g = load(entry.path());
    EXPECT_FALSE(g.ops.empty()) << entry.path();
    EXPECT_FALSE(g.source.empty()) << entry.path();
  }
  EXPECT_GE(files, 9u);  // 6 layer lists + 3 SCALE-Sim CSVs
}

TEST(BundledWorkloads, Resnet18OpsAndMacs) {
  const Graph g = load(kDir / "resnet18.yaml");
  ASSERT_EQ(g.ops.size(), 21u);  // conv1 + 4 stages x 2 blocks x 2 convs + 3 downsample + fc
  // MACs = P*Q * K * C*R*S per conv:
  //   conv1        112*112 * 64 * 3*7*7                      = 118,013,952
  //   layer1       4 x 56*56 * 64 * 64*3*3   (4 x 115,605,504) = 462,422,016
  //   layer2..4 each (the spatial halving and the channel doubling cancel):
  //     first 3x3  28*28 * 128 * 64*3*3                      =  57,802,752
  //     3 x 3x3    3 x 28*28 * 128 * 128*3*3                 = 346,816,512
  //     downsample 28*28 * 128 * 64                          =   6,422,528
  //     per stage                                            = 411,041,792; x 3 = 1,233,125,376
  //   fc           512 * 1000                                =     512,000
  //   total                                                  = 1,814,073,344 (~1.814e9)
  EXPECT_EQ(total_macs(g), 1'814'073'344u);
}

TEST(BundledWorkloads, OpCounts) {
  EXPECT_EQ(load(kDir / "resnet50.yaml").ops.size(), 54u);   // 1 + 16 x 3 + 4 + 1
  EXPECT_EQ(load(kDir / "alexnet.yaml").ops.size(), 8u);     // 5 convs + 3 fc
  EXPECT_EQ(load(kDir / "mobilenet.yaml").ops.size(), 28u);  // 1 + 13 x (dw + pw) + fc
  EXPECT_EQ(load(kDir / "bert_base_seq512.yaml").ops.size(), 72u);  // 12 layers x 6 GEMMs
  EXPECT_EQ(load(kDir / "gpt2_small_decode.yaml").ops.size(), 73u);  // 12 x 6 + lm_head
}

TEST(BundledWorkloads, Resnet50MacsMatchPublishedCount) {
  // torchvision lists ResNet-50 (v1.5) at 4.09 GFLOPS, counting multiply-adds; conv + fc here.
  const double gmacs = static_cast<double>(total_macs(load(kDir / "resnet50.yaml"))) / 1e9;
  EXPECT_NEAR(gmacs, 4.09, 0.01);
}

TEST(BundledWorkloads, MobilenetMacsMatchPaper) {
  // Howard et al. 2017, Table 2: 569 million mult-adds for 1.0 MobileNet-224.
  const double mmacs = static_cast<double>(total_macs(load(kDir / "mobilenet.yaml"))) / 1e6;
  EXPECT_NEAR(mmacs, 569.0, 1.0);
}

// The SCALE-Sim CSV folds each conv's padding into its IFMAP size so that SCALE-Sim's ceil
// convention gives the real output size: every op must look the same as in the layer list.
void expect_same_gemm_views(const std::string& yaml, const std::string& csv) {
  const Graph a = load(kDir / yaml);
  const Graph b = load(kDir / "scalesim" / csv);
  ASSERT_EQ(a.ops.size(), b.ops.size());
  for (std::size_t i = 0; i < a.ops.size(); ++i) {
    EXPECT_EQ(a.ops[i].name, b.ops[i].name);
    EXPECT_EQ(gemm_view(a.ops[i]), gemm_view(b.ops[i])) << a.ops[i].name;
    EXPECT_EQ(mac_count(a.ops[i]), mac_count(b.ops[i])) << a.ops[i].name;
  }
}

TEST(BundledWorkloads, ScaleSimResnet18MatchesLayerList) {
  expect_same_gemm_views("resnet18.yaml", "resnet18.csv");
}

TEST(BundledWorkloads, ScaleSimAlexnetMatchesLayerList) {
  expect_same_gemm_views("alexnet.yaml", "alexnet.csv");
}

TEST(BundledWorkloads, ScaleSimTransformerIsOneBertEncoderLayer) {
  // One BERT-base encoder layer: the per-head rows add up to the batched GEMMs of layer0.
  const Graph bert = load(kDir / "bert_base_seq512.yaml");
  const Graph csv = load(kDir / "scalesim" / "gemm_transformer.csv");
  ASSERT_EQ(csv.ops.size(), 28u);  // qkv + 12 score heads + 12 context heads + out + 2 FFN
  std::uint64_t layer0 = 0;
  for (std::size_t i = 0; i < 6; ++i) layer0 += mac_count(bert.ops[i]);
  EXPECT_EQ(total_macs(csv), layer0);
  EXPECT_EQ(total_macs(bert), 12 * layer0);
}

}  // namespace
}  // namespace coda::workload
