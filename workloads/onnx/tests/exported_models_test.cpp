// Real exports: models as torch.onnx.export (torch 1.13, Debian's python3-torch) writes them at
// opset 17, with their float weights stripped (scripts/export_torch_onnx.py, which wrote the
// committed files in workloads/onnx/tests/exported/). Each must import with exactly the MACs and
// parameters below, derived by hand or taken from torchvision's model cards. Where torch is
// present the script runs again into a temporary folder and the fresh exports must give the
// same numbers (skipped without torch, as in CI).

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>
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
  std::size_t normalizations;  // LayerNorm, RMSNorm, BatchNorm and Softmax ops after folding
  const char* functions;       // what fuse_functions recognised (function_patterns.h)
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
//   plus the 8 x 8 causal mask the masked fill reads (a constant of the sequence's shape: 64)
//   and the 1/sqrt(8) scale: 12,769. Its erf GELU (Div by sqrt(2), Erf, Add 1, Mul, Mul by 0.5)
//   is one gelu op, whose three scalars nothing reads.
// The same block at opset 14 with GPT-2's tanh GELU: the same MACs; its two LayerNorms exported
//   as ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add are one layer_norm op each, and
//   its GELU (x * x * x, 0.044715, sqrt(2/pi), Tanh, Add 1, Mul, Mul by 0.5) one gelu op, so
//   their scalars are not read either: 12,769 again; 3 normalizations (2 LayerNorms, softmax).
// The LLaMA-style block (d 32, 4 heads and 2 KV heads of 8, FFN 96, batch 2 x 8 tokens):
//   q 16 x 32 x 32 = 16,384; k and v 16 x 32 x 16 = 8,192 each; Q K^T and P V 2 x 4 x 8 x 8 x 8
//   = 4,096 each (after repeat_kv); o 16,384; gate, up and down 16 x 32 x 96 = 49,152 each:
//   204,800. torch's parameters: 2 x 32 + 1,024 + 512 + 512 + 1,024 + 3 x 3,072 = 12,352; plus
//   the rotary cos and sin tables (8 x 8 each, constants of the sequence: 128), the causal mask
//   (64) and the 1/sqrt(8) scale: 12,545. 9 contractions; 2 RMSNorms (Cast, Pow, ReduceMean,
//   Add, Sqrt, Div, Mul, Cast, Mul each) and the softmax; the SiLU (Sigmoid, Mul) one op.
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
    {"torch_transformer_encoder.onnx", 278'528, 17'090, 12, 6, ""},
    {"torch_gpt_block.onnx", 204'800, 12'769, 6, 3, "gelu 1"},
    {"torch_gpt_block_opset14.onnx", 204'800, 12'769, 6, 3, "gelu 1, layer_norm 2"},
    {"torch_llama_block.onnx", 204'800, 12'545, 9, 3, "rms_norm 2, silu 1"},
    {"torchvision_resnet18.onnx", 1'814'073'344, 11'684'712, 21, 0, ""},
    {"torchvision_mobilenet_v2.onnx", 300'774'272, 3'487'816, 53, 0, ""},
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
  std::string functions;
  for (const auto& [name, n] : imported->functions)
    functions += fmt::format("{}{} {}", functions.empty() ? "" : ", ", name, n);
  EXPECT_EQ(functions, e.functions);
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
// parameters lose the mask (64) and the scale (1): 12,704, torch's count. nn.TransformerEncoder's
// attention, exported with batch and heads in one axis, is left as it is, with a note.
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
  EXPECT_EQ(total_elements(g, TensorKind::Weight), 12'704u);
  ASSERT_FALSE(gpt->notes.empty());
  EXPECT_EQ(gpt->notes.front(),
            "fuse-functions: recognised 1 gelu (each pattern imported as one op)");
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
  EXPECT_NE(describe(FileSource{.file = "m.onnx"}),
            describe(FileSource{.file = "m.onnx", .fuse_functions = false}));

  // The LLaMA-style block loads as the builder writes a layer: 2 RMSNorms, 1 SiLU, 1 causal
  // attention op of 4 heads over 8 x 8 (4,608 MACs as the GPT block's), 7 projections.
  const auto llama = load_source(FileSource{.file = folder / "torch_llama_block.onnx"}, diags);
  ASSERT_TRUE(llama) << diags.format_all();
  EXPECT_EQ(count(llama->graph, OpKind::Attention), 1u);
  EXPECT_EQ(count(llama->graph, OpKind::Normalization, Function::RmsNorm), 2u);
  EXPECT_EQ(count(llama->graph, OpKind::Elementwise, Function::Silu), 1u);
  EXPECT_EQ(count(llama->graph, OpKind::Contraction), 7u);
  EXPECT_EQ(total_macs(llama->graph), 201'216u);
  // Named by the module scope their nodes share, as the exporter names nodes.
  std::vector<std::string> norms;
  for (const Op& op : llama->graph.ops)
    if (op.function == Function::RmsNorm) norms.push_back(op.name);
  EXPECT_EQ(norms, (std::vector<std::string>{"/norm1/rms_norm", "/norm2/rms_norm"}));
  // Without the recognition the same file keeps its pieces: 2 x (Pow, ReduceMean, Add, Sqrt,
  // Div, Mul, Mul) and (Sigmoid, Mul), 13 ops more than the 3 (the Casts are no work in fp32).
  const auto pieces = load_source(
      FileSource{.file = folder / "torch_llama_block.onnx", .fuse_functions = false}, diags);
  ASSERT_TRUE(pieces) << diags.format_all();
  EXPECT_EQ(pieces->graph.ops.size(), llama->graph.ops.size() + 13u);
  EXPECT_EQ(count(pieces->graph, OpKind::Normalization, Function::RmsNorm), 0u);

  const auto encoder =
      load_source(FileSource{.file = folder / "torch_transformer_encoder.onnx"}, diags);
  ASSERT_TRUE(encoder) << diags.format_all();
  // nn.TransformerEncoder's attention, exported with batch and heads in one axis ([2 x 4, 8,
  // 8]): one op a layer over 8 sequences of one head, not causal, so its MACs are the two
  // matmuls' (2 x 8 x 8 x 8 x 8 = 8,192 a layer) and the total stays 278,528; the views to and
  // from rank 4 (4 a layer) are reshapes, no work. Parameters unchanged: the scale is on Q.
  EXPECT_EQ(total_macs(encoder->graph), 278'528u);
  EXPECT_EQ(total_elements(encoder->graph, TensorKind::Weight), 17'090u);
  ASSERT_EQ(count(encoder->graph, OpKind::Attention), 2u);
  for (const Op& op : encoder->graph.ops)
    if (op.kind == OpKind::Attention) {
      EXPECT_EQ(attention_form(op), AttentionForm::Forward);
      EXPECT_FALSE(std::get<AttentionSpec>(op.attributes).causal);
      EXPECT_EQ(mac_count(op), 8'192u);
    }
  EXPECT_EQ(count(encoder->graph, OpKind::Contraction), 8u);
  EXPECT_EQ(count(encoder->graph, OpKind::DataMovement, Function::Reshape) -
                count(load_source(FileSource{.file = folder / "torch_transformer_encoder.onnx",
                                             .fuse_attention = false},
                                  diags)
                          ->graph,
                      OpKind::DataMovement, Function::Reshape),
            8u);
  ASSERT_FALSE(encoder->notes.empty());
  EXPECT_EQ(encoder->notes.back(),
            "fuse-attention: fused 2 attention patterns (Q K^T, scaling, mask, softmax, P V) into "
            "attention ops, 2 of rank 3 (batch and heads in one axis, as nn.MultiheadAttention "
            "exports it: priced as that many sequences of one head)");
}

}  // namespace
}  // namespace coda::workload::onnx
