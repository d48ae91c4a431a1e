// The cluster reader (arch/cluster_spec.h): the presets, and located errors for bad input.

#include "arch/cluster_spec.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace coda::arch {
namespace {

// The tests run from the source tree (gtest_discover_tests sets WORKING_DIRECTORY).
const std::filesystem::path kClusters = std::filesystem::path("configs") / "cluster";

// Reads `text` as if it were configs/cluster/test.yaml (so `chip:` resolves against
// configs/cluster/).
std::optional<LoadedCluster> read(const std::string& text, Diagnostics& diags) {
  const std::filesystem::path file = kClusters / "test.yaml";
  const auto doc = YamlDocument::parse(text, file.string(), diags);
  if (!doc) return std::nullopt;
  return read_cluster(doc->root(), file, diags);
}

bool mentions(const Diagnostics& diags, const std::string& path, const std::string& words,
              int line) {
  for (const Diagnostic& d : diags.all())
    if (d.path == path && d.message.find(words) != std::string::npos && d.where.line == line)
      return true;
  return false;
}

TEST(ClusterSpec, DgxH100PresetReads) {
  Diagnostics diags;
  const auto c = load_cluster(kClusters / "dgx_h100_superpod.yaml", diags);
  ASSERT_TRUE(c) << diags.format_all();
  EXPECT_EQ(c->spec.name, "dgx-h100-superpod");
  EXPECT_EQ(c->spec.chip_name, "nvidia-h100-sxm");
  EXPECT_EQ(c->chip.spec.name, "nvidia-h100-sxm");
  EXPECT_EQ(c->spec.chip, std::filesystem::path("configs/arch/nvidia_h100_sxm.yaml"));
  EXPECT_EQ(c->spec.chips_per_node, 8u);  // the HGX H100 board: interconnect.chips
  EXPECT_EQ(c->spec.nodes, 127u);
  EXPECT_EQ(c->spec.chips(), 127u * 8u);
  EXPECT_DOUBLE_EQ(c->spec.inter_node.bandwidth.value, 50e9);  // 400 Gb/s / 8
  EXPECT_DOUBLE_EQ(c->spec.inter_node.latency.value, 14e-6);
  EXPECT_DOUBLE_EQ(c->spec.inter_node.efficiency, 0.96);
}

TEST(ClusterSpec, DgxA100PresetReads) {
  Diagnostics diags;
  const auto c = load_cluster(kClusters / "dgx_a100_superpod.yaml", diags);
  ASSERT_TRUE(c) << diags.format_all();
  EXPECT_EQ(c->spec.chip_name, "nvidia-a100-sxm-80gb");
  EXPECT_EQ(c->spec.chips_per_node, 8u);
  EXPECT_EQ(c->spec.nodes, 140u);
  EXPECT_DOUBLE_EQ(c->spec.inter_node.bandwidth.value, 25e9);  // 200 Gb/s / 8
}

TEST(ClusterSpec, EfficiencyDefaultsToTheLineRate) {
  Diagnostics diags;
  const auto c = read(
      "schema_version: 1\nname: t\nchip: ../arch/nvidia_h100_sxm.yaml\nnodes: 2\n"
      "inter_node: {bandwidth: 50 GB/s, latency: 5 us}\n",
      diags);
  ASSERT_TRUE(c) << diags.format_all();
  EXPECT_DOUBLE_EQ(c->spec.inter_node.efficiency, 1.0);
}

TEST(ClusterSpec, ChipWithoutInterconnectIsOneChipANode) {
  Diagnostics diags;
  const auto c = read(
      "schema_version: 1\nname: t\nchip: ../arch/systolic_8x8.yaml\nnodes: 4\n"
      "inter_node: {bandwidth: 12.5 GB/s, latency: 5 us}\n",
      diags);
  ASSERT_TRUE(c) << diags.format_all();
  EXPECT_EQ(c->spec.chips_per_node, 1u);
}

TEST(ClusterSpec, BadInputIsLocated) {
  Diagnostics diags;
  const auto c = read(
      "schema_version: 1\n"                         // line 1
      "name: t\n"                                   // 2
      "chip: ../arch/no_such_chip.yaml\n"           // 3
      "nodes: 0\n"                                  // 4
      "inter_node:\n"                               // 5
      "  bandwith: 50 GB/s\n"                       // 6
      "  latency: 2 cycles\n"                       // 7
      "  efficiency: 1.5\n",                        // 8
      diags);
  EXPECT_FALSE(c);
  EXPECT_TRUE(mentions(diags, "chip", "no such file", 3)) << diags.format_all();
  EXPECT_TRUE(mentions(diags, "nodes", "at least 1", 4)) << diags.format_all();
  EXPECT_TRUE(mentions(diags, "inter_node", "missing required key 'bandwidth'", 6))
      << diags.format_all();
  EXPECT_TRUE(mentions(diags, "inter_node.bandwith", "did you mean 'bandwidth'", 6))
      << diags.format_all();
  EXPECT_TRUE(mentions(diags, "inter_node.efficiency", "(0, 1]", 8)) << diags.format_all();
  for (const Diagnostic& d : diags.all())
    EXPECT_EQ(d.where.file, (kClusters / "test.yaml").string());
}

TEST(ClusterSpec, MissingKeysAndBadBandwidthAreErrors) {
  Diagnostics diags;
  EXPECT_FALSE(read("schema_version: 2\nname: t\nnodes: 2\n", diags));
  EXPECT_TRUE(mentions(diags, "schema_version", "unsupported schema_version 2", 1));
  EXPECT_TRUE(mentions(diags, "", "missing required key 'chip'", 1)) << diags.format_all();
  EXPECT_TRUE(mentions(diags, "", "missing required key 'inter_node'", 1)) << diags.format_all();

  Diagnostics cycles;
  EXPECT_FALSE(read(
      "schema_version: 1\nname: t\nchip: ../arch/nvidia_h100_sxm.yaml\nnodes: 2\n"
      "inter_node: {bandwidth: 64 B/cycle, latency: 5 us}\n",
      cycles));
  EXPECT_TRUE(mentions(cycles, "inter_node.bandwidth", "bytes per second", 5))
      << cycles.format_all();
}

}  // namespace
}  // namespace coda::arch
