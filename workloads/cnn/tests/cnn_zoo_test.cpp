#include "workloads/cnn/cnn_zoo.h"

#include <cstdint>
#include <string>

#include <gtest/gtest.h>

#include "testing/graph_checks.h"

namespace coda::workload::cnn {
namespace {

using testing::problems;

using testing::count;

std::uint64_t params(const Graph& g) { return total_elements(g, TensorKind::Weight); }

// torchvision's model tables (pytorch.org/vision/stable/models.html) give parameters exactly
// and "GFLOPS" rounded to two decimals, which are multiply-accumulates of the convs and linear
// layers at 224 x 224, batch 1.
constexpr double kGiga = 1e9;

TEST(CnnZoo, Resnet18MatchesTorchvision) {
  const Graph g = resnet18();
  EXPECT_EQ(problems(g), "");
  EXPECT_EQ(params(g), 11'689'512u);  // torchvision resnet18: 11,689,512
  EXPECT_NEAR(static_cast<double>(total_macs(g)) / kGiga, 1.81, 0.005);  // torchvision: 1.81
  // 1 stem + 8 blocks x 2 + 3 projection shortcuts (stages 2-4) = 20 convs, each with a BN;
  // plus the fc.
  EXPECT_EQ(count(g, OpKind::Contraction), 21u);
  EXPECT_EQ(count(g, OpKind::Normalization, Function::BatchNorm), 20u);
  EXPECT_EQ(count(g, OpKind::Elementwise, Function::Add), 8u + 1u);  // residuals + fc bias
  EXPECT_EQ(count(g, OpKind::Pooling, Function::MaxPool), 1u);
  EXPECT_EQ(count(g, OpKind::Reduction, Function::Mean), 1u);
}

TEST(CnnZoo, Resnet50MatchesTorchvision) {
  const Graph g = resnet50();
  EXPECT_EQ(problems(g), "");
  EXPECT_EQ(params(g), 25'557'032u);  // torchvision resnet50 (v1.5): 25,557,032
  EXPECT_NEAR(static_cast<double>(total_macs(g)) / kGiga, 4.09, 0.005);  // torchvision: 4.09
  // 1 stem + 16 blocks x 3 + 4 projection shortcuts (one per stage) = 53 convs; plus the fc.
  EXPECT_EQ(count(g, OpKind::Contraction), 54u);
  EXPECT_EQ(count(g, OpKind::Normalization, Function::BatchNorm), 53u);
  // v1.5: the first block of stage 2 strides on its 3x3 conv (56 -> 28), not on the 1x1.
  std::uint64_t first_1x1_rows = 0, first_3x3_rows = 0;  // output rows, dim p
  for (const Op& op : g.ops) {
    if (op.name == "layer2.0.1.conv") first_1x1_rows = op.space.dims[4].extent;
    if (op.name == "layer2.0.2.conv") first_3x3_rows = op.space.dims[4].extent;
  }
  EXPECT_EQ(first_1x1_rows, 56u);
  EXPECT_EQ(first_3x3_rows, 28u);
}

TEST(CnnZoo, MobilenetV2MatchesTorchvision) {
  const Graph g = mobilenet_v2();
  EXPECT_EQ(problems(g), "");
  EXPECT_EQ(params(g), 3'504'872u);  // torchvision mobilenet_v2: 3,504,872
  // torchvision: 0.30 GFLOPS; Sandler et al. table 4: 300 M multiply-adds.
  EXPECT_NEAR(static_cast<double>(total_macs(g)) / 1e6, 300.0, 1.0);
  // Convs: stem 1; first block (t = 1) depthwise + project 2; 16 blocks x 3 (expand,
  // depthwise, project); last 1x1 conv 1 => 52; plus the classifier.
  EXPECT_EQ(count(g, OpKind::Contraction), 53u);
  // Residual adds where stride 1 and channels in = out: repeats - 1 per stage of table 2:
  // 0 + 1 + 2 + 3 + 2 + 2 + 0 = 10; plus the classifier bias.
  EXPECT_EQ(count(g, OpKind::Elementwise, Function::Add), 10u + 1u);
  // 17 depthwise convs: groups = channels, one channel per group.
  std::size_t depthwise = 0;
  for (const Op& op : g.ops)
    if (op.kind == OpKind::Contraction && op.space.dims.size() == 8 &&
        op.space.dims[1].extent > 1 && op.space.dims[3].extent == 1)
      ++depthwise;
  EXPECT_EQ(depthwise, 17u);
}

TEST(CnnZoo, Vgg16MatchesTorchvision) {
  const Graph g = vgg16();
  EXPECT_EQ(problems(g), "");
  EXPECT_EQ(params(g), 138'357'544u);  // torchvision vgg16: 138,357,544
  EXPECT_NEAR(static_cast<double>(total_macs(g)) / kGiga, 15.47, 0.005);  // torchvision: 15.47
  EXPECT_EQ(count(g, OpKind::Contraction), 13u + 3u);
  EXPECT_EQ(count(g, OpKind::Pooling, Function::MaxPool), 5u);
  EXPECT_EQ(count(g, OpKind::Elementwise, Function::Add), 16u);  // every conv and fc has a bias
  EXPECT_EQ(count(g, OpKind::Normalization, Function::BatchNorm), 0u);  // config D has none
  EXPECT_EQ(count(g, OpKind::DataMovement, Function::Reshape), 1u);     // the flatten
}

TEST(CnnZoo, YoloV3TinyAt416ByHand) {
  CnnOptions o;
  o.height = o.width = 416;
  const Graph g = yolo_tiny(o);
  EXPECT_EQ(problems(g), "");
  // darknet cfg/yolov3-tiny.cfg, conv by conv: output map side, input and output channels,
  // kernel. MACs = side^2 * cin * cout * k^2; parameters = cin * cout * k^2, plus 2 * cout
  // for a batch norm or cout for a bias (the two linear 1x1 detection convs, 255 outputs).
  struct Conv {
    std::uint64_t side, cin, cout, k;
    bool bn;
  };
  const Conv convs[] = {
      {416, 3, 16, 3, true},    {208, 16, 32, 3, true},   {104, 32, 64, 3, true},
      {52, 64, 128, 3, true},   {26, 128, 256, 3, true},  {13, 256, 512, 3, true},
      {13, 512, 1024, 3, true}, {13, 1024, 256, 1, true}, {13, 256, 512, 3, true},
      {13, 512, 255, 1, false}, {13, 256, 128, 1, true},  {26, 384, 256, 3, true},
      {26, 256, 255, 1, false},
  };
  std::uint64_t macs = 0, weights = 0;
  for (const Conv& c : convs) {
    macs += c.side * c.side * c.cin * c.cout * c.k * c.k;
    weights += c.cin * c.cout * c.k * c.k + (c.bn ? 2 * c.cout : c.cout);
  }
  EXPECT_EQ(macs, 2'782'480'896u);  // ~5.56 GFLOPs at 2 per MAC, as darknet reports it
  EXPECT_EQ(total_macs(g), macs);
  EXPECT_EQ(weights, 8'852'366u);  // darknet also stores BN mean and variance: +6,368
  EXPECT_EQ(params(g), weights);
  EXPECT_EQ(count(g, OpKind::Contraction), 13u);
  EXPECT_EQ(count(g, OpKind::Pooling, Function::MaxPool), 6u);
  EXPECT_EQ(count(g, OpKind::DataMovement, Function::Concat), 1u);
  EXPECT_EQ(count(g, OpKind::DataMovement, Function::Copy), 1u);  // the 2x upsample
}

TEST(CnnZoo, EveryNetworkVerifiesAtDefaultsAndAnotherSize) {
  for (const std::string_view name : cnn_names()) {
    for (const std::uint64_t side : {224u, 448u}) {
      CnnOptions o;
      o.height = o.width = side;
      const auto g = build_cnn(name, o);
      ASSERT_TRUE(g) << name;
      EXPECT_EQ(g->name, name);
      EXPECT_FALSE(g->source.empty());
      EXPECT_EQ(problems(*g), "") << name << " at " << side;
    }
  }
}

TEST(CnnZoo, BatchScalesMacsNotParameters) {
  CnnOptions four;
  four.batch = 4;
  const Graph one = resnet50(), batched = resnet50(four);
  EXPECT_EQ(total_macs(batched), 4 * total_macs(one));
  EXPECT_EQ(params(batched), params(one));
  EXPECT_EQ(problems(batched), "");
}

TEST(CnnZoo, DtypeReachesEveryTensor) {
  CnnOptions o;
  o.dtype = DataType::Fp16;
  const Graph g = mobilenet_v2(o);
  for (const Tensor& t : g.tensors) EXPECT_EQ(t.dtype, DataType::Fp16) << t.name;
  // Parameter bytes: 2 per fp16 element.
  EXPECT_EQ(total_bytes(g, TensorKind::Weight), Bytes{2ULL * 3'504'872});
}

TEST(CnnZoo, UnknownNameListsTheKnownOnes) {
  Diagnostics diags;
  EXPECT_FALSE(build_cnn("resnet34", {}, diags));
  ASSERT_EQ(diags.error_count(), 1u);
  EXPECT_EQ(diags.all()[0].path, "cnn.name");
  EXPECT_NE(diags.all()[0].hint.find("resnet18, resnet50, mobilenet_v2, vgg16, yolo_tiny"),
            std::string::npos);
  EXPECT_FALSE(build_cnn("resnet34", {}));
}

TEST(CnnZoo, BadSizesAreDiagnostics) {
  Diagnostics diags;
  CnnOptions o;
  o.height = 100;
  o.batch = 0;
  EXPECT_FALSE(build_cnn("resnet18", o, diags));
  EXPECT_EQ(diags.error_count(), 2u);
  EXPECT_NE(diags.format_all().find("cnn.height: 100 is not a positive multiple of 32"),
            std::string::npos)
      << diags.format_all();
  Diagnostics vgg;
  CnnOptions side256;
  side256.height = side256.width = 256;
  EXPECT_FALSE(build_cnn("vgg16", side256, vgg));
  EXPECT_EQ(vgg.error_count(), 2u);  // height and width: not multiples of 224
  EXPECT_TRUE(build_cnn("resnet18", side256));
}

}  // namespace
}  // namespace coda::workload::cnn
