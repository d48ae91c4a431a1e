#include <gtest/gtest.h>

#include "workloads/builders.h"
#include "workloads/graph.h"
#include "workloads/passes/builtin_passes.h"
#include "workloads/passes/pass.h"
#include "workloads/passes/pass_registry.h"

namespace coda::workload {
namespace {

static_assert(GraphPass<DecomposeAttention>);
static_assert(GraphPass<FuseAttention>);
static_assert(GraphPass<FoldBatchNorm>);
static_assert(GraphPass<DeadOpElimination>);
static_assert(GraphPass<VerifyPass>);

PipelineResult run_one(Graph& g, const PassPipeline& pipeline) { return pipeline.run(g); }

// Attention, then a ReLU reading its output.
Graph attention_graph(const AttentionParams& p) {
  Graph g;
  g.name = "attn";
  g.add(make_attention("attn", p, DataType::Fp16));
  g.add(make_elementwise("act", Function::Relu, {p.batch, p.heads, p.q_len, p.head_dim},
                         DataType::Fp16),
        {g.ops[0].tensors[3]});
  return g;
}

TEST(Passes, PipelineDescribesItsPasses) {
  PassPipeline pipeline;
  pipeline.add<DecomposeAttention>().add<FoldBatchNorm>().add(DeadOpElimination{});
  EXPECT_EQ(pipeline.describe(), "decompose-attention,fold-batch-norm,dead-op-elimination");
  EXPECT_EQ(PassPipeline{}.describe(), "");
}

// A value head dim of its own (MLA's prefill: 192 for Q K^T, 128 for the values): Q K^T runs
// over d, P V over e; 2 heads, q 4, kv 8: Q K^T 2*4*8*192 = 12,288 MACs, P V 2*4*8*128 =
// 8,192, the fused op's 20,480; O is [1][2][4][128].
TEST(Passes, DecomposeAttentionWithAValueDim) {
  const AttentionParams p{
      .heads = 2, .kv_heads = 2, .q_len = 4, .kv_len = 8, .head_dim = 192, .value_dim = 128};
  Graph g;
  g.name = "attn";
  g.add(make_attention("attn", p, DataType::Fp16));
  EXPECT_EQ(g.ops[0].space.dims.size(), 7u);
  EXPECT_EQ(g.ops[0].space.accesses[3].shape, (std::vector<std::uint64_t>{1, 2, 4, 128}));
  EXPECT_EQ(total_macs(g), 20'480u);
  const PipelineResult r = run_one(g, PassPipeline{}.add<DecomposeAttention>());
  ASSERT_TRUE(r.ok()) << r.problems.front();
  ASSERT_EQ(g.ops.size(), 3u);
  EXPECT_EQ(gemm_view(g.ops[0]), (GemmView{.batch = 2, .m = 4, .n = 8, .k = 192}));
  EXPECT_EQ(gemm_view(g.ops[2]), (GemmView{.batch = 2, .m = 4, .n = 128, .k = 8}));
  EXPECT_EQ(mac_count(g.ops[0]) + mac_count(g.ops[2]), 20'480u);
}

TEST(Passes, DecomposeGroupedQueryAttention) {
  // 8 query heads sharing 2 kv heads (G = 4), q 4, kv 16, d 64.
  Graph g = attention_graph({.heads = 8, .kv_heads = 2, .q_len = 4, .kv_len = 16, .head_dim = 64});
  const std::uint64_t fused_macs = total_macs(g), fused_flops = total_flops(g);
  const TensorId q = g.ops[0].tensors[0], k = g.ops[0].tensors[1], v = g.ops[0].tensors[2],
                 o = g.ops[0].tensors[3];
  const PipelineResult r = run_one(g, PassPipeline{}.add<DecomposeAttention>());
  ASSERT_TRUE(r.ok()) << r.problems.front();
  ASSERT_EQ(r.reports.size(), 1u);
  EXPECT_EQ(r.reports[0].pass, "decompose-attention");
  EXPECT_TRUE(r.reports[0].changed);
  ASSERT_EQ(g.ops.size(), 4u);
  EXPECT_EQ(g.ops[0].name, "attn.qk");
  EXPECT_EQ(g.ops[1].name, "attn.softmax");
  EXPECT_EQ(g.ops[2].name, "attn.pv");
  EXPECT_EQ(g.ops[3].name, "act");
  EXPECT_EQ(g.ops[0].kind, OpKind::Contraction);
  EXPECT_EQ(g.ops[1].function, Function::Softmax);
  // Q K^T batches over b*hk = 2 kv heads, the 4 query heads of a group stacked along m with
  // the 4 queries: m = 16, n = kv = 16, k = d = 64. P V: m = 16, n = d = 64, k = kv = 16.
  EXPECT_EQ(gemm_view(g.ops[0]), (GemmView{.batch = 2, .m = 16, .n = 16, .k = 64}));
  EXPECT_EQ(gemm_view(g.ops[2]), (GemmView{.batch = 2, .m = 16, .n = 64, .k = 16}));
  // Each matmul is 2*16*16*64 = 32768 MACs; together the fused op's 65536. Softmax: 5 FLOPs on
  // each of 8*4*16 = 512 scores, as the fused op counts, so the FLOPs match too.
  EXPECT_EQ(mac_count(g.ops[0]), 32768u);
  EXPECT_EQ(total_macs(g), fused_macs);
  EXPECT_EQ(total_flops(g), fused_flops);
  // Q, K, V and O keep their tensors; the scores and probabilities are new [1, 8, 4, 16].
  EXPECT_EQ(g.ops[0].tensors[0], q);
  EXPECT_EQ(g.ops[0].tensors[1], k);
  EXPECT_EQ(g.ops[2].tensors[1], v);
  EXPECT_EQ(g.ops[2].tensors[2], o);
  EXPECT_EQ(g.ops[3].tensors[0], o);
  EXPECT_EQ(g.tensor(g.ops[0].tensors[2]).name, "attn.scores");
  EXPECT_EQ(g.tensor(g.ops[1].tensors[1]).shape, (std::vector<std::uint64_t>{1, 8, 4, 16}));
  EXPECT_EQ(g.tensors.size(), 7u);  // Q, K, V, O, act.y + scores, probs
}

TEST(Passes, DecomposeCausalAttentionReportsTheExtraWork) {
  Graph g = attention_graph(
      {.heads = 2, .kv_heads = 2, .q_len = 4, .kv_len = 4, .head_dim = 8, .causal = true});
  // Fused: 10 kept pairs per head (16 - 4*3/2): 2 * 2*10*8 = 320 MACs.
  EXPECT_EQ(total_macs(g), 320u);
  const PipelineResult r = run_one(g, PassPipeline{}.add<DecomposeAttention>());
  ASSERT_TRUE(r.ok());
  // Decomposed: every pair, 2 * 2*16*8 = 512 MACs, 192 more.
  EXPECT_EQ(total_macs(g), 512u);
  ASSERT_EQ(r.reports[0].notes.size(), 2u);
  EXPECT_EQ(r.reports[0].notes[1],
            "1 of them causal: the mask is applied in the softmax, so the matmuls compute every "
            "query-key pair, 192 MACs more than the fused ops");
}

// A soft cap (Gemma 2) decomposes into a fourth op, cap x tanh(S / cap) as one Tanh over S
// between Q K^T and the softmax, reading the scores and writing the capped scores the softmax
// reads; the FLOPs still match the fused op's (which counts the tanh's 1 a score).
TEST(Passes, DecomposeSoftCappedAttentionAddsTheTanh) {
  Graph g = attention_graph(
      {.heads = 2, .kv_heads = 2, .q_len = 4, .kv_len = 4, .head_dim = 8, .softcap = 50});
  const std::uint64_t fused_flops = total_flops(g);
  const PipelineResult r = run_one(g, PassPipeline{}.add<DecomposeAttention>());
  ASSERT_TRUE(r.ok()) << r.problems.front();
  ASSERT_EQ(g.ops.size(), 5u);
  EXPECT_EQ(g.ops[1].name, "attn.softcap");
  EXPECT_EQ(g.ops[1].function, Function::Tanh);
  EXPECT_EQ(g.ops[1].tensors[0], g.ops[0].tensors[2]);  // reads S
  EXPECT_EQ(g.ops[2].tensors[0], g.ops[1].tensors[1]);  // the softmax reads the capped S
  EXPECT_EQ(g.tensor(g.ops[1].tensors[1]).name, "attn.capped");
  EXPECT_EQ(total_flops(g), fused_flops);
  ASSERT_EQ(r.reports[0].notes.size(), 2u);
  EXPECT_EQ(r.reports[0].notes[1],
            "1 of them soft-capped: cap x tanh(S / cap) as one elementwise pass over S before the "
            "softmax");
}

TEST(Passes, DecomposeLeavesOtherGraphsAlone) {
  Graph g;
  g.add(make_gemm("fc", 2, 3, 4));
  const Graph before = g;
  const PipelineResult r = run_one(g, PassPipeline{}.add<DecomposeAttention>());
  EXPECT_FALSE(r.reports[0].changed);
  EXPECT_EQ(g, before);
}

// conv (2 -> 8 channels, 3x3, pad 1 on 4x4) -> batch norm -> relu.
Graph conv_bn_graph(std::uint64_t batch, std::size_t bn_axis) {
  Graph g;
  const Conv2dParams p{.batch = batch, .in_h = 4, .in_w = 4, .in_channels = 2, .filter_h = 3,
                       .filter_w = 3, .out_channels = 8, .pad_h = 1, .pad_w = 1};
  g.add(make_conv2d("conv", p, 4, 4, DataType::Fp16));
  g.add(make_normalization("bn", Function::BatchNorm, {batch, 8, 4, 4}, {bn_axis},
                           DataType::Fp16),
        {g.ops[0].tensors[2]});
  g.add(make_elementwise("relu", Function::Relu, {batch, 8, 4, 4}, DataType::Fp16),
        {g.ops[1].tensors[3]});
  return g;
}

// Out[b][h][m][n] = sum_k A[b][h][m][k] * B[b][h][k][n], as the ONNX importer writes a rank-4
// MatMul: dims b, h, m, n, k, every index a plain dim.
Op batched_matmul(std::string name, std::uint64_t b, std::uint64_t h, std::uint64_t m,
                  std::uint64_t n, std::uint64_t k) {
  const auto at = [](std::size_t d) { return IndexExpr{{IndexTerm{d, 1}}, 0}; };
  Op op;
  op.name = std::move(name);
  op.kind = OpKind::Contraction;
  op.space.dims = {{"b", b}, {"h", h}, {"m", m}, {"n", n}, {"k", k}};
  op.space.accesses = {
      {TensorRole::Input, "A", {at(0), at(1), at(2), at(4)}, {b, h, m, k}, DataType::Fp16},
      {TensorRole::Weight, "B", {at(0), at(1), at(4), at(3)}, {b, h, k, n}, DataType::Fp16},
      {TensorRole::Output, "Out", {at(0), at(1), at(2), at(3)}, {b, h, m, n}, DataType::Fp16}};
  return op;
}

// An exported attention of 2 heads, 4 queries and keys, head dim 8: S = Q K^T, S + a constant
// over `mask_axes` of [1, 2, 4, 4], softmax, P V.
Graph exported_attention(const std::vector<std::size_t>& mask_axes) {
  Graph g;
  g.name = "exported";
  g.add(batched_matmul("qk", 1, 2, 4, 4, 8));
  g.add(make_elementwise("mask", Function::Add, {1, 2, 4, 4}, DataType::Fp16,
                         {{TensorRole::Weight, mask_axes}}),
        {g.ops[0].tensors[2]});
  g.add(make_normalization("softmax", Function::Softmax, {1, 2, 4, 4}, {3}, DataType::Fp16),
        {g.ops[1].tensors[2]});
  g.add(batched_matmul("pv", 1, 2, 4, 8, 4), {g.ops[2].tensors[1]});
  return g;
}

// A [4 x 4] mask shared by both heads is the causal mask: one causal attention op, whose 10 of
// 16 query-key pairs per head give 2 x 1 x 2 x 10 x 8 = 320 MACs. A per-head [2 x 4 x 4]
// constant (a position bias) leaves it not causal: 2 x 1 x 2 x 16 x 8 = 512 MACs, as the two
// matmuls were.
TEST(Passes, FuseAttentionTakesASharedSquareMaskAsCausal) {
  for (const bool shared : {true, false}) {
    Graph g = exported_attention(shared ? std::vector<std::size_t>{2, 3}
                                        : std::vector<std::size_t>{1, 2, 3});
    EXPECT_EQ(total_macs(g), 512u);
    const PipelineResult r = PassPipeline().add<FuseAttention>().run(g);
    ASSERT_TRUE(r.ok()) << r.problems.front();
    ASSERT_EQ(g.ops.size(), 1u);
    EXPECT_EQ(g.ops[0].name, "pv.attention");
    EXPECT_EQ(std::get<AttentionSpec>(g.ops[0].attributes).causal, shared);
    EXPECT_EQ(total_macs(g), shared ? 320u : 512u);
    EXPECT_EQ(g.tensors.size(), 4u);  // Q, K^T, V, O: the mask and the scores went
  }
}

// Out[x][m][n] = sum_k A[x][m][k] * B[x][k][n]: a rank-3 MatMul (batch and heads in one axis).
Op batched_matmul3(std::string name, std::uint64_t x, std::uint64_t m, std::uint64_t n,
                   std::uint64_t k) {
  const auto at = [](std::size_t d) { return IndexExpr{{IndexTerm{d, 1}}, 0}; };
  Op op;
  op.name = std::move(name);
  op.kind = OpKind::Contraction;
  op.space.dims = {{"x", x}, {"m", m}, {"n", n}, {"k", k}};
  op.space.accesses = {
      {TensorRole::Input, "A", {at(0), at(1), at(3)}, {x, m, k}, DataType::Fp16},
      {TensorRole::Weight, "B", {at(0), at(3), at(2)}, {x, k, n}, DataType::Fp16},
      {TensorRole::Output, "Out", {at(0), at(1), at(2)}, {x, m, n}, DataType::Fp16}};
  return op;
}

// The same attention as nn.MultiheadAttention exports it, batch x heads = 2 in one axis, with a
// shared [4 x 4] mask: one causal attention op of one head over 2 sequences (2 x 2 x 10 x 8 =
// 320 MACs, as the rank-4 pattern), between views of Q, K^T and V to [2, 1, ..] and of the
// result back to [2, 4, 8]; the views are reshapes (no work).
TEST(Passes, FuseAttentionTakesRank3PatternsAsOneHeadPerSequence) {
  Graph g;
  g.add(batched_matmul3("qk", 2, 4, 4, 8));
  g.add(make_elementwise("mask", Function::Add, {2, 4, 4}, DataType::Fp16,
                         {{TensorRole::Weight, {1, 2}}}),
        {g.ops[0].tensors[2]});
  g.add(make_normalization("softmax", Function::Softmax, {2, 4, 4}, {2}, DataType::Fp16),
        {g.ops[1].tensors[2]});
  g.add(batched_matmul3("pv", 2, 4, 8, 4), {g.ops[2].tensors[1]});
  const std::string q = g.tensor(g.ops[0].tensors[0]).name;
  const std::string o = g.tensor(g.ops[3].tensors[2]).name;
  EXPECT_EQ(total_macs(g), 512u);
  const PipelineResult r = PassPipeline().add<FuseAttention>().run(g);
  ASSERT_TRUE(r.ok()) << r.problems.front();
  ASSERT_EQ(g.ops.size(), 5u);
  EXPECT_EQ(g.ops[3].name, "pv.attention");
  EXPECT_TRUE(std::get<AttentionSpec>(g.ops[3].attributes).causal);
  EXPECT_EQ(attention_form(g.ops[3]), AttentionForm::Forward);
  EXPECT_EQ(g.ops[3].space.accesses[0].shape, (std::vector<std::uint64_t>{2, 1, 4, 8}));
  EXPECT_EQ(total_macs(g), 320u);
  for (const std::size_t v : {0u, 1u, 2u, 4u})
    EXPECT_EQ(g.ops[v].function, Function::Reshape) << g.ops[v].name;
  // Q is what the first view reads, O what the last writes: the graph's own tensors.
  EXPECT_EQ(g.tensor(g.ops[0].tensors[0]).name, q);
  EXPECT_EQ(g.tensor(g.ops[4].tensors[1]).name, o);
  EXPECT_NE(r.reports[0].notes.front().find("1 of rank 3"), std::string::npos)
      << r.reports[0].notes.front();
}

TEST(Passes, FoldBatchNormIntoConv) {
  Graph g = conv_bn_graph(1, 1);
  // Parameters: filter 8*2*3*3 = 144, scale 8, shift 8.
  EXPECT_EQ(total_elements(g, TensorKind::Weight), 160u);
  const PipelineResult r = run_one(g, PassPipeline{}.add<FoldBatchNorm>());
  ASSERT_TRUE(r.ok()) << r.problems.front();
  EXPECT_TRUE(r.reports[0].changed);
  EXPECT_EQ(r.reports[0].notes,
            (std::vector<std::string>{
                "folded 1 batch norm: 'bn' into 'conv' (scale into the filter, shift into a bias "
                "the contraction's epilogue adds; their parameters leave the parameter count)"}));
  ASSERT_EQ(g.ops.size(), 2u);
  // relu now reads the conv's output; bn.scale, bn.shift and bn.y are gone.
  EXPECT_EQ(g.ops[1].tensors[0], g.ops[0].tensors[2]);
  EXPECT_EQ(g.tensors.size(), 4u);  // conv.ifmap, conv.filter, conv.ofmap, relu.y
  EXPECT_EQ(total_elements(g, TensorKind::Weight), 144u);
}

TEST(Passes, FoldBatchNormNeedsTheConvOutputToItself) {
  Graph g = conv_bn_graph(1, 1);
  // A residual add also reads the conv output: folding would change what it reads.
  g.add(make_elementwise("res", Function::Add, {1, 8, 4, 4}, DataType::Fp16,
                         {{TensorRole::Input, {}}}),
        {g.ops[0].tensors[2], g.ops[2].tensors[1]});
  const Graph before = g;
  const PipelineResult r = run_one(g, PassPipeline{}.add<FoldBatchNorm>());
  EXPECT_FALSE(r.reports[0].changed);
  EXPECT_EQ(g, before);
}

TEST(Passes, FoldBatchNormNeedsPerFilterChannels) {
  // A "batch norm" over the batch axis (n does not index the filter) cannot fold.
  Graph g = conv_bn_graph(2, 0);
  const Graph before = g;
  EXPECT_FALSE(run_one(g, PassPipeline{}.add<FoldBatchNorm>()).reports[0].changed);
  EXPECT_EQ(g, before);
}

// fc -> relu (the result) and two side branches: fc -> s1 -> s2, nobody reads s2; fc -> cache,
// a copy into the KV cache that nobody reads.
Graph branchy_graph() {
  Graph g;
  g.add(make_gemm("fc", 2, 3, 4, DataType::Fp16));
  const TensorId c = g.ops[0].tensors[2];
  g.add(make_elementwise("s1", Function::Sigmoid, {2, 3}, DataType::Fp16), {c});
  g.add(make_elementwise("relu", Function::Relu, {2, 3}, DataType::Fp16), {c});
  g.add(make_elementwise("s2", Function::Sigmoid, {2, 3}, DataType::Fp16), {g.ops[1].tensors[1]});
  const TensorId kv = g.add_tensor({"kv", {2, 3}, DataType::Fp16, TensorKind::KvCache});
  g.add(make_data_movement("cache", Function::Copy, {{2, 3}}, {{2, 3}}, DataType::Fp16), {c, kv});
  return g;
}

TEST(Passes, DeadOpEliminationKeepsWhatReachesAResult) {
  Graph g = branchy_graph();
  g.outputs = {g.ops[2].tensors[1]};  // relu.y
  const PipelineResult r = run_one(g, PassPipeline{}.add<DeadOpElimination>());
  ASSERT_TRUE(r.ok()) << r.problems.front();
  EXPECT_EQ(r.reports[0].notes, (std::vector<std::string>{"removed 2 dead ops: s1, s2"}));
  ASSERT_EQ(g.ops.size(), 3u);
  EXPECT_EQ(g.ops[0].name, "fc");
  EXPECT_EQ(g.ops[1].name, "relu");
  EXPECT_EQ(g.ops[2].name, "cache");  // writes the KV cache: state that outlives the graph
  // s1.y and s2.y are gone; the output is renumbered with the tensors.
  EXPECT_EQ(g.tensors.size(), 5u);  // fc.A, fc.B, fc.C, relu.y, kv
  ASSERT_EQ(g.outputs.size(), 1u);
  EXPECT_EQ(g.tensor(g.outputs[0]).name, "relu.y");
  EXPECT_EQ(g.tensor(g.ops[2].tensors[1]).name, "kv");
}

TEST(Passes, DeadOpEliminationWithoutMarkedResultsKeepsEveryOp) {
  // Unmarked: every tensor written and never read is a result, so s2 and everything is live.
  Graph g = branchy_graph();
  const Graph before = g;
  const PipelineResult r = run_one(g, PassPipeline{}.add<DeadOpElimination>());
  EXPECT_FALSE(r.reports[0].changed);
  EXPECT_EQ(g, before);
}

// A pass with a bug: it leaves a dim of extent 0.
struct BreakIt {
  static constexpr std::string_view kName = "break-it";
  PassReport run(Graph& g) {
    g.ops[0].space.dims[0].extent = 0;
    return {.changed = true};
  }
};
static_assert(GraphPass<BreakIt>);

TEST(Passes, PipelineReportsAGraphAPassBroke) {
  Graph g;
  g.add(make_gemm("fc", 2, 3, 4));
  const PipelineResult r = run_one(g, PassPipeline{}.add<BreakIt>().add<VerifyPass>());
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.reports.size(), 1u);  // stopped after break-it
  EXPECT_EQ(r.problems,
            (std::vector<std::string>{"after pass 'break-it': op 'fc': dim 'm' has extent 0"}));
  // A graph broken before any pass runs no pass.
  const PipelineResult again = run_one(g, PassPipeline{}.add<VerifyPass>());
  EXPECT_TRUE(again.reports.empty());
  EXPECT_EQ(again.problems,
            (std::vector<std::string>{"before any pass: op 'fc': dim 'm' has extent 0"}));
}

TEST(Passes, RegistryParsesListsByName) {
  PassRegistry registry;
  register_builtin_passes(registry);
  std::vector<std::string> names;
  for (const auto& info : registry.list()) names.push_back(info.name);
  EXPECT_EQ(names, (std::vector<std::string>{"verify", "decompose-attention", "fuse-attention",
                                             "fold-batch-norm", "dead-op-elimination"}));
  Diagnostics diags;
  const auto pipeline = registry.parse(" fold-batch-norm,dead-op-elimination ", diags);
  ASSERT_TRUE(pipeline.has_value());
  EXPECT_EQ(pipeline->describe(), "fold-batch-norm,dead-op-elimination");
  EXPECT_TRUE(registry.parse("", diags)->empty());
  EXPECT_FALSE(diags.has_errors());

  EXPECT_FALSE(registry.parse("decompose-atention,,nope", diags).has_value());
  ASSERT_EQ(diags.error_count(), 3u);
  const std::string valid =
      "; passes: verify, decompose-attention, fuse-attention, fold-batch-norm, "
      "dead-op-elimination";
  EXPECT_EQ(format(diags.all()[0]),
            "error: --passes: unknown pass 'decompose-atention' (did you mean "
            "'decompose-attention'?)" + valid);
  EXPECT_EQ(format(diags.all()[1]), "error: --passes: empty pass name in the list" + valid);
  EXPECT_EQ(format(diags.all()[2]), "error: --passes: unknown pass 'nope'" + valid);
}

TEST(Passes, EveryPassOnAMixedGraphVerifies) {
  Graph g = conv_bn_graph(1, 1);
  const Graph a = attention_graph({.heads = 4, .kv_heads = 1, .q_len = 2, .kv_len = 6,
                                   .head_dim = 8, .causal = true});
  for (const Op& op : a.ops) {
    Op copy = op;
    std::vector<TensorId> bound;
    for (const TensorId t : op.tensors) bound.push_back(g.add_tensor(a.tensor(t)));
    if (&op == &a.ops[1]) bound[0] = g.ops.back().tensors[3];  // act reads attn's O
    g.add(std::move(copy), bound);
  }
  PassRegistry registry;
  register_builtin_passes(registry);
  Diagnostics diags;
  const auto pipeline =
      registry.parse("verify,decompose-attention,fold-batch-norm,dead-op-elimination", diags);
  ASSERT_TRUE(pipeline);
  const PipelineResult r = pipeline->run(g);
  EXPECT_TRUE(r.ok()) << (r.problems.empty() ? "" : r.problems.front());
  EXPECT_EQ(r.reports.size(), 4u);
  // conv, relu, attn.qk, attn.softmax, attn.pv, act.
  EXPECT_EQ(g.ops.size(), 6u);
}

}  // namespace
}  // namespace coda::workload
