#include <gtest/gtest.h>

#include "workloads/importers.h"
#include "workloads/summary.h"
#include "testing/temp_dir.h"

namespace coda::workload {
namespace {

std::optional<Graph> read(const std::string& text, Diagnostics& diags) {
  auto doc = YamlDocument::parse(text, "w.yaml", diags);
  if (!doc) return std::nullopt;
  return read_layer_list(doc->root(), diags);
}

// Every diagnostic of reading `text`, formatted, one per line.
std::string errors(const std::string& text) {
  Diagnostics diags;
  EXPECT_FALSE(read(text, diags));
  std::string out;
  for (const Diagnostic& d : diags.all()) out += format(d) + "\n";
  return out;
}

const std::string kHead = "schema_version: 1\nname: tiny\nlayers:\n";

TEST(LayerList, ReadsConvGemmAndBatchedGemm) {
  Diagnostics diags;
  const auto g = read(
      "schema_version: 1\n"
      "name: tiny\n"
      "source: hand-made\n"
      "layers:\n"
      "  - name: conv\n"
      "    conv2d: {input: [8, 6], channels: 4, filters: 6, kernel: [3, 1], stride: [1, 2],\n"
      "             padding: [1, 0], batch: 2, groups: 2}\n"
      "  - name: fc\n"
      "    gemm: {m: 1, n: 10, k: 96}\n"
      "  - {name: heads, gemm: {m: 4, n: 4, k: 8, batch: 3}}\n",
      diags);
  ASSERT_TRUE(g) << diags.format_all();
  EXPECT_TRUE(diags.all().empty());
  EXPECT_EQ(g->name, "tiny");
  EXPECT_EQ(g->source, "hand-made");
  ASSERT_EQ(g->ops.size(), 3u);
  EXPECT_EQ(g->ops[0].name, "conv");
  EXPECT_EQ(g->ops[0].source, (SourceLocation{"w.yaml", 5, 5}));
  // P = floor((8 + 2 - 3)/1) + 1 = 8, Q = floor((6 + 0 - 1)/2) + 1 = 3.
  // batch = 2 groups; m = N*P*Q = 2*8*3 = 48; n = 6/2 = 3; k = (4/2)*3*1 = 6.
  EXPECT_EQ(gemm_view(g->ops[0]), (GemmView{.batch = 2, .m = 48, .n = 3, .k = 6}));
  EXPECT_EQ(mac_count(g->ops[0]), 2u * 48u * 3u * 6u);
  EXPECT_EQ(gemm_view(g->ops[1]), (GemmView{.batch = 1, .m = 1, .n = 10, .k = 96}));
  EXPECT_EQ(gemm_view(g->ops[2]), (GemmView{.batch = 3, .m = 4, .n = 4, .k = 8}));
}

TEST(LayerList, EachLayerReadsItsPredecessorsOutputWhenTheShapesMatch) {
  Diagnostics diags;
  const auto g = read(kHead +
                          // c1: [1][4][8][8] -> [1][8][8][8]; c2 reads [1][8][8][8]: linked.
                          "  - {name: c1, conv2d: {input: 8, channels: 4, filters: 8, kernel: 3,"
                          " padding: 1}}\n"
                          "  - {name: c2, conv2d: {input: 8, channels: 8, filters: 8, kernel: 3,"
                          " padding: 1}}\n"
                          // c3 reads [1][8][16][16] (a pooling layer the list leaves out would
                          // make it so): a graph input of its own.
                          "  - {name: c3, conv2d: {input: 16, channels: 8, filters: 8, kernel: 1}}\n"
                          // fc: A[2][64] * B[64][32] -> C[2][32]; fc2 reads A[2][32]: linked.
                          "  - {name: fc, gemm: {m: 2, n: 32, k: 64}}\n"
                          "  - {name: fc2, gemm: {m: 2, n: 10, k: 32}}\n",
                      diags);
  ASSERT_TRUE(g) << diags.format_all();
  ASSERT_EQ(g->ops.size(), 5u);
  // Tensors in order: c1 ifmap 0, filter 1, ofmap 2; c2 filter 3, ofmap 4 (its ifmap is 2);
  // c3 ifmap 5, filter 6, ofmap 7; fc A 8, B 9, C 10; fc2 B 11, C 12 (its A is 10).
  EXPECT_EQ(g->ops[1].tensors, (std::vector<TensorId>{{2}, {3}, {4}}));
  EXPECT_EQ(g->ops[2].tensors, (std::vector<TensorId>{{5}, {6}, {7}}));
  EXPECT_EQ(g->ops[4].tensors, (std::vector<TensorId>{{10}, {11}, {12}}));
  EXPECT_EQ(g->tensors.size(), 13u);
  EXPECT_TRUE(verify(*g).empty());
  EXPECT_EQ(summarize(*g).links, 2u);
}

TEST(LayerList, BundledResnet18Has15Links) {
  // configs/workloads/resnet18.yaml, shape by shape: layer1.0.conv1 reads 56x56x64 after conv1's
  // 112x112x64 (the max pool is left out): no link; the three later layer1 convs link (3);
  // layer2.0.conv1 reads layer1.1.conv2's 56x56x64 (4) and conv2 its 28x28x128 (5); the
  // downsample reads 56x56x64 after 28x28x128: no link; layer2.1.conv1 and conv2 link (7);
  // layer3 and layer4 repeat layer2's pattern (4 links each: 15); fc's [1][512] after
  // 7x7x512: no link.
  Diagnostics diags;
  const auto g = load_workload(std::filesystem::path("configs/workloads/resnet18.yaml"), diags);
  ASSERT_TRUE(g) << diags.format_all();
  EXPECT_EQ(summarize(*g).links, 15u);
  EXPECT_TRUE(verify(*g).empty());
}

TEST(LayerList, UnknownKeyHasDidYouMean) {
  EXPECT_EQ(errors(kHead +
                   "  - name: c\n"
                   "    conv2d: {input: 8, channels: 4, filters: 6, kernel: 3, strides: 2}\n"),
            "w.yaml:5:60: error: layers[0].conv2d.strides: unknown key (did you mean 'stride'?)\n");
  EXPECT_EQ(errors(kHead + "  - name: c\n    conv2: {}\n"),
            "w.yaml:5:5: error: layers[0].conv2: unknown key (did you mean 'conv2d'?)\n");
  EXPECT_EQ(errors("schema_version: 1\nname: x\nlayer: []\n"),
            "w.yaml:1:1: error: missing required key 'layers'\n"
            "w.yaml:3:1: error: layer: unknown key (did you mean 'layers'?)\n");
}

TEST(LayerList, MissingField) {
  EXPECT_EQ(errors(kHead + "  - name: fc\n    gemm: {m: 1, n: 10}\n"),
            "w.yaml:5:11: error: layers[0].gemm: missing required key 'k'\n");
}

TEST(LayerList, ZeroSize) {
  EXPECT_EQ(errors(kHead + "  - name: c\n"
                           "    conv2d: {input: 8, channels: 0, filters: 6, kernel: [3, 0]}\n"),
            "w.yaml:5:34: error: layers[0].conv2d.channels: must be at least 1, not 0\n"
            "w.yaml:5:57: error: layers[0].conv2d.kernel: must be at least 1, not [3, 0]\n");
}

TEST(LayerList, BothConvAndGemm) {
  EXPECT_EQ(errors(kHead + "  - name: x\n"
                           "    conv2d: {input: 8, channels: 4, filters: 6, kernel: 3}\n"
                           "    gemm: {m: 1, n: 1, k: 1}\n"),
            "w.yaml:4:5: error: layers[0]: has both 'conv2d' and 'gemm'; a layer is exactly one "
            "op: move one of them into a layer of its own\n");
  EXPECT_EQ(errors(kHead + "  - name: x\n"),
            "w.yaml:4:5: error: layers[0]: needs one of 'conv2d' or 'gemm'; write e.g. gemm: "
            "{m: 1, n: 1000, k: 512}\n");
}

TEST(LayerList, ChannelsAndFiltersMustSplitIntoGroups) {
  EXPECT_EQ(errors(kHead + "  - name: c\n"
                           "    conv2d: {input: 8, channels: 6, filters: 8, kernel: 3, "
                           "groups: 4}\n"),
            "w.yaml:5:34: error: layers[0].conv2d.channels: 6 channels do not split into 4 "
            "groups; channels must be a multiple of groups\n");
}

TEST(LayerList, KernelLargerThanPaddedInput) {
  EXPECT_EQ(errors(kHead + "  - name: c\n"
                           "    conv2d: {input: 3, channels: 1, filters: 1, kernel: [7, 5], "
                           "padding: 1}\n"),
            "w.yaml:5:57: error: layers[0].conv2d.kernel: kernel height 7 is larger than the "
            "padded input height 5 (input 3 + 2 x padding 1)\n");
}

TEST(LayerList, DuplicateNames) {
  EXPECT_EQ(errors(kHead + "  - {name: fc, gemm: {m: 1, n: 1, k: 1}}\n"
                           "  - {name: fc, gemm: {m: 1, n: 1, k: 1}}\n"),
            "w.yaml:5:12: error: layers[1].name: duplicate layer name 'fc' (first at line 4); "
            "layer names must be unique\n");
}

TEST(LayerList, SchemaVersionAndEmptyLayers) {
  EXPECT_EQ(errors("schema_version: 2\nname: x\nlayers: []\n"),
            "w.yaml:1:17: error: schema_version: unsupported schema_version 2; this version of "
            "coda reads schema_version 1\n"
            "w.yaml:3:9: error: layers: has no layers; list at least one layer, e.g. - {name: "
            "fc, gemm: {m: 1, n: 1000, k: 512}}\n");
}

TEST(LayerList, BadPair) {
  EXPECT_EQ(errors(kHead + "  - name: c\n"
                           "    conv2d: {input: [8, 8, 3], channels: 3, filters: 6, kernel: 3}\n"),
            "w.yaml:5:21: error: layers[0].conv2d.input: expected a [height, width] pair, found "
            "a list of 3; write e.g. input: [3, 3], or input: 3 for both\n");
}

TEST(LoadWorkload, ByExtension) {
  const testing::TempDir dir;
  Diagnostics diags;
  const auto yaml = load_workload(
      dir.write("w.YML", kHead + "  - {name: fc, gemm: {m: 2, n: 3, k: 4}}\n"), diags);
  ASSERT_TRUE(yaml) << diags.format_all();
  EXPECT_EQ(total_macs(*yaml), 24u);
  const auto csv = load_workload(dir.write("g.csv", "Layer, M, N, K,\nfc, 2, 3, 4,\n"), diags);
  ASSERT_TRUE(csv) << diags.format_all();
  EXPECT_EQ(csv->name, "g");
  EXPECT_EQ(total_macs(*csv), 24u);
  EXPECT_TRUE(diags.all().empty());
}

TEST(LoadWorkload, UnknownExtensionAndMissingFile) {
  const testing::TempDir dir;
  Diagnostics diags;
  const auto path = dir.write("w.txt", "x");
  EXPECT_FALSE(load_workload(path, diags));
  EXPECT_FALSE(load_workload(path.parent_path() / "absent.csv", diags));
  ASSERT_EQ(diags.error_count(), 2u);
  EXPECT_EQ(format(diags.all()[0]),
            path.string() + ": error: unknown workload file extension '.txt'; expected .yaml or "
                            ".yml (coda layer list), .csv (SCALE-Sim topology) or .json (coda "
                            "trace)");
  EXPECT_EQ(diags.all()[1].where.file, (path.parent_path() / "absent.csv").string());
}

}  // namespace
}  // namespace coda::workload
