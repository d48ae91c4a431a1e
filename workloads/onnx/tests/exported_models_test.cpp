// Real exports: models as torch.onnx.export (torch 1.13, Debian's python3-torch) writes them at
// opset 17, with their float weights stripped (scripts/export_torch_onnx.py, which wrote the
// committed files in workloads/onnx/tests/exported/). Each must import with exactly the MACs and
// parameters below, derived by hand or taken from torchvision's model cards. Where torch is
// present the script runs again into a temporary folder and the fresh exports must give the
// same numbers (skipped without torch, as in CI).

#include <cstdlib>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "testing/graph_checks.h"
#include "testing/temp_dir.h"
#include "workloads/onnx/onnx_importer.h"
#include "workloads/source.h"

namespace coda::workload::onnx {
namespace {

using coda::testing::count;
using coda::testing::problems;

struct Expected {
  const char* file;
  std::uint64_t macs;
  std::uint64_t parameters;  // elements of Weight tensors
  std::size_t contractions;
  std::size_t normalizations;  // LayerNorm, BatchNorm and Softmax ops left after folding
};

// nn.TransformerEncoder, 2 layers of d_model 32, 4 heads of 8, FFN 64, batch 2 x 8 tokens:
//   per layer: in_proj 16 x 32 x 96 = 49,152; Q K^T 2 x 4 x 8 x 8 x 8 = 4,096; P V 4,096;
//   out_proj 16 x 32 x 32 = 16,384; FFN 16 x 32 x 64 x 2 = 65,536: 139,264; x 2 = 278,528.
//   Parameters, torch's count: (32 x 96 + 96) + (32 x 32 + 32) + (32 x 64 + 64) + (64 x 32 + 32)
//   + 2 x 64 (two LayerNorms) = 8,544 a layer, 17,088; plus each layer's attention scale, a
//   one-element constant the scaling Mul reads (a Weight): 17,090. 6 GEMMs and 3 normalizations
//   (2 LayerNorms, 1 softmax) a layer.
// The GPT-2-style block of the script (d 32, 4 heads of 8, FFN 128, batch 2 x 8 tokens):
//   qkv 16 x 32 x 96 = 49,152; Q K^T 4,096; P V 4,096; proj 16,384; up 16 x 32 x 128 = 65,536;
//   down 65,536: 204,800. torch's parameters: 64 + 3,168 + 1,056 + 64 + 4,224 + 4,128 = 12,704;
//   plus the 8 x 8 causal mask the masked fill reads (a constant of the sequence's shape: 64),
//   the 1/sqrt(8) scale and erf-GELU's three scalars (1/sqrt(2), 1 and 0.5): 12,772.
// torchvision resnet18 at 224 x 224, batch 1: 1,814,073,344 MACs (torchvision's 1.81 GFLOPS
//   column counts MACs; docs/cnn_onnx.md). torch.onnx.export folds each eval-mode BatchNorm into
//   its conv, so a BatchNorm's 2 x C parameters become the conv's C biases: torchvision's
//   11,689,512 less the BatchNorms' channels (64 + 4 x 64 + (4 x 128 + 128) + (4 x 256 + 256) +
//   (4 x 512 + 512) = 4,800): 11,684,712. 20 convs and the classifier; no normalization left.
// torchvision mobilenet_v2 at 224 x 224, batch 1: 300,774,272 MACs (torchvision; the paper's
//   300 M). Parameters: torchvision's 3,504,872 less the BatchNorms' channels, 17,056 (the stem's
//   32; per inverted residual (t, c, n) the expansion's, the depthwise's and the projection's:
//   (1,16,1) 48, (6,24,2) 528, (6,32,3) 1,152, (6,64,4) 2,944, (6,96,3) 3,360, (6,160,3) 5,472,
//   (6,320,1) 2,240; the last 1x1 conv's 1,280): 3,487,816. 52 convs and the classifier.
constexpr Expected kExpected[] = {
    {"torch_transformer_encoder.onnx", 278'528, 17'090, 12, 6},
    {"torch_gpt_block.onnx", 204'800, 12'772, 6, 3},
    {"torchvision_resnet18.onnx", 1'814'073'344, 11'684'712, 21, 0},
    {"torchvision_mobilenet_v2.onnx", 300'774'272, 3'487'816, 53, 0},
};

void check(const std::filesystem::path& folder, const Expected& e) {
  SCOPED_TRACE(e.file);
  OnnxOptions options;
  // torchvision's exports have a dynamic batch (the script's dynamic_axes); the others are static.
  if (std::string(e.file).starts_with("torchvision")) options.dim_bindings["batch"] = 1;
  Diagnostics diags;
  const auto imported = import_onnx(folder / e.file, options, diags);
  ASSERT_TRUE(imported) << diags.format_all();
  EXPECT_FALSE(diags.has_errors()) << diags.format_all();
  const Graph& g = imported->graph;
  EXPECT_EQ(problems(g), "");
  EXPECT_EQ(total_macs(g), e.macs);
  EXPECT_EQ(total_elements(g, TensorKind::Weight), e.parameters);
  EXPECT_EQ(count(g, OpKind::Contraction), e.contractions);
  std::size_t normalizations = 0;
  for (const Op& op : g.ops) normalizations += op.kind == OpKind::Normalization ? 1 : 0;
  EXPECT_EQ(normalizations, e.normalizations);
}

TEST(ExportedModels, TheCommittedExportsImportExactly) {
  for (const Expected& e : kExpected) check("workloads/onnx/tests/exported", e);
}

TEST(ExportedModels, FreshExportsImportAsTheCommittedOnes) {
  const std::string python = CODA_PYTHON3;
  if (std::system((python + " -c 'import torch, torchvision, onnx' 2>/dev/null").c_str()) != 0)
    GTEST_SKIP() << python << " has no torch, torchvision or onnx (Debian's python3-torch, "
                 << "python3-torchvision, python3-onnx): the committed exports stand";
  const testing::TempDir dir;
  const std::string command = python + " scripts/export_torch_onnx.py " + dir.path().string() +
                              " > " + (dir.path() / "log.txt").string() + " 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0) << "see " << command;
  for (const Expected& e : kExpected) check(dir.path(), e);
}

// Loaded as coda run, map and sweeps load a model (load_source), the GPT block's attention (Q K^T,
// the 1/sqrt(8) scale, the causal mask's masked fill, softmax, P V) is one causal attention op
// (fuse-attention, on by default): b 2 x 4 heads x 8 queries x 8 keys x d 8, of whose 64
// query-key pairs a causal op counts the 36 at or below the diagonal: 2 x 2 x 4 x 36 x 8 = 4,608
// MACs where the two matmuls did 2 x 4,096. So 204,800 - 8,192 + 4,608 = 201,216 MACs, and the
// parameters lose the mask (64) and the scale (1): 12,707. nn.TransformerEncoder's attention,
// exported with batch and heads in one axis, is left as it is, with a note.
TEST(ExportedModels, TheirAttentionIsOneOpWhenLoaded) {
  const std::filesystem::path folder = "workloads/onnx/tests/exported";
  Diagnostics diags;
  const auto gpt = load_source(FileSource{.file = folder / "torch_gpt_block.onnx"}, diags);
  ASSERT_TRUE(gpt) << diags.format_all();
  const Graph& g = gpt->graph;
  EXPECT_EQ(problems(g), "");
  ASSERT_EQ(count(g, OpKind::Attention), 1u);
  for (const Op& op : g.ops)
    if (op.kind == OpKind::Attention) {
      EXPECT_EQ(attention_form(op), AttentionForm::Forward);
      EXPECT_TRUE(std::get<AttentionSpec>(op.attributes).causal);
      EXPECT_EQ(op.name, "/MatMul_1.attention");
    }
  EXPECT_EQ(count(g, OpKind::Contraction), 4u);
  EXPECT_EQ(total_macs(g), 201'216u);
  EXPECT_EQ(total_elements(g, TensorKind::Weight), 12'707u);
  ASSERT_FALSE(gpt->notes.empty());
  EXPECT_EQ(gpt->notes.back(),
            "fuse-attention: fused 1 attention pattern (Q K^T, scaling, mask, softmax, P V) into "
            "attention ops, 1 causal (a constant mask over the square score matrix)");

  const auto raw = load_source(
      FileSource{.file = folder / "torch_gpt_block.onnx", .fuse_attention = false}, diags);
  ASSERT_TRUE(raw) << diags.format_all();
  EXPECT_EQ(total_macs(raw->graph), 204'800u);
  EXPECT_EQ(count(raw->graph, OpKind::Attention), 0u);
  EXPECT_NE(describe(FileSource{.file = "m.onnx"}),
            describe(FileSource{.file = "m.onnx", .fuse_attention = false}));

  const auto encoder =
      load_source(FileSource{.file = folder / "torch_transformer_encoder.onnx"}, diags);
  ASSERT_TRUE(encoder) << diags.format_all();
  EXPECT_EQ(total_macs(encoder->graph), 278'528u);
  EXPECT_EQ(count(encoder->graph, OpKind::Attention), 0u);
  ASSERT_FALSE(encoder->notes.empty());
  EXPECT_TRUE(
      encoder->notes.back().starts_with("fuse-attention: left 2 attention patterns "
                                        "unfused: batch and heads merged"))
      << encoder->notes.back();
}

}  // namespace
}  // namespace coda::workload::onnx
