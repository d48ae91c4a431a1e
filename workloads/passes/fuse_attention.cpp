#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "workloads/builders.h"
#include "workloads/passes/builtin_passes.h"
#include "workloads/passes/graph_edit.h"

namespace coda::workload {
namespace {

using passes::TensorUse;

// The dim an index expression names when it is a plain dim (one term of coefficient 1, no
// offset); nullopt otherwise.
std::optional<std::size_t> plain_dim(const IndexExpr& e) {
  if (e.terms.size() != 1 || e.terms[0].coefficient != 1 || e.offset != 0) return std::nullopt;
  return e.terms[0].dim;
}

// A batched matmul Out[b][h][m][n] = sum_k A[b][h][m][k] * B[b][h][k][n] over rank-4 tensors:
// accesses A (Input), B (Input or Weight), Out (Output), every index a plain dim, the batch and
// head dims shared, k in A's last and B's third place and nowhere in Out.
bool is_batched_matmul(const Op& op) {
  if (op.kind != OpKind::Contraction || op.space.accesses.size() != 3 || op.tensors.size() != 3)
    return false;
  const auto& acc = op.space.accesses;
  if (acc[0].role != TensorRole::Input || acc[1].role == TensorRole::Output ||
      acc[2].role != TensorRole::Output)
    return false;
  std::size_t d[3][4];
  for (std::size_t a = 0; a < 3; ++a) {
    if (acc[a].indices.size() != 4 || acc[a].shape.size() != 4) return false;
    for (std::size_t i = 0; i < 4; ++i) {
      const auto dim = plain_dim(acc[a].indices[i]);
      if (!dim) return false;
      d[a][i] = *dim;
    }
  }
  const bool shared =
      d[0][0] == d[1][0] && d[1][0] == d[2][0] && d[0][1] == d[1][1] && d[1][1] == d[2][1];
  const std::size_t k = d[0][3];
  return shared && d[2][2] == d[0][2] && d[2][3] == d[1][3] && d[1][2] == k && k != d[2][2] &&
         k != d[2][3];
}

// What lies between the scores and the softmax: scalings by a constant (Mul, Div) and masks added
// from a constant (Add, which is also how a masked fill, Where, is imported).
struct Chain {
  std::vector<std::size_t> ops;                    // in graph order
  std::optional<std::vector<std::uint64_t>> mask;  // the mask constant's shape, if any
};

// The ops from S's writer (the first matmul, excluded) to the softmax's input, walking back from
// the softmax; nullopt when one of them is not a constant scaling or mask, or its output has
// other readers. `x` is the softmax's input tensor.
std::optional<Chain> chain_to(const Graph& graph, const std::vector<TensorUse>& uses,
                              const std::vector<bool>& results, TensorId x,
                              std::size_t& first_matmul) {
  Chain chain;
  while (true) {
    const TensorUse& use = uses[x.value];
    if (use.writers.size() != 1 || use.readers.size() != 1 || results[x.value]) return std::nullopt;
    const std::size_t w = use.writers.front();
    const Op& op = graph.ops[w];
    if (op.kind == OpKind::Contraction) {
      first_matmul = w;
      return chain;
    }
    if (op.kind != OpKind::Elementwise ||
        (op.function != Function::Mul && op.function != Function::Div &&
         op.function != Function::Add))
      return std::nullopt;
    std::optional<TensorId> data;
    for (std::size_t a = 0; a < op.space.accesses.size(); ++a) {
      const TensorAccess& access = op.space.accesses[a];
      if (access.role == TensorRole::Output) continue;
      const Tensor& t = graph.tensors[op.tensors[a].value];
      if (t.kind == TensorKind::Activation) {
        if (data) return std::nullopt;  // two activations: not a constant scaling or mask
        data = op.tensors[a];
      } else if (op.function == Function::Add) {
        chain.mask = t.shape;
      } else if (element_count(t.shape) != 1) {
        return std::nullopt;  // a scaling by a tensor, not a scalar
      }
    }
    if (!data) return std::nullopt;
    chain.ops.insert(chain.ops.begin(), w);
    x = *data;
  }
}

}  // namespace

PassReport FuseAttention::run(Graph& graph) {
  PassReport report;
  const std::vector<TensorUse> uses = passes::tensor_uses(graph);
  const std::vector<bool> results = passes::result_tensors(graph);
  std::vector<bool> remove(graph.ops.size(), false);
  std::vector<std::pair<std::size_t, Op>> fused;  // at the second matmul's place
  std::size_t causal = 0, merged_heads = 0;
  for (std::size_t s = 0; s < graph.ops.size(); ++s) {
    const Op& softmax = graph.ops[s];
    if (softmax.kind != OpKind::Normalization || softmax.function != Function::Softmax ||
        softmax.tensors.size() != 2)
      continue;
    const TensorId probs = softmax.tensors[1];
    const TensorUse& p_use = uses[probs.value];
    if (p_use.readers.size() != 1 || results[probs.value]) continue;
    const std::size_t pv_index = p_use.readers.front();
    const Op& pv = graph.ops[pv_index];
    std::size_t qk_index = 0;
    const auto chain = chain_to(graph, uses, results, softmax.tensors[0], qk_index);
    if (!chain || pv.tensors.size() != 3 || pv.tensors[0] != probs) continue;
    const Op& qk = graph.ops[qk_index];
    const auto rank = qk.space.accesses.empty() ? 0 : qk.space.accesses[0].shape.size();
    if (rank == 3 && pv.kind == OpKind::Contraction) {
      ++merged_heads;  // nn.MultiheadAttention's export: batch and heads in one axis
      continue;
    }
    if (!is_batched_matmul(qk) || !is_batched_matmul(pv)) continue;
    // Q [b][h][q][d], K^T [b][h][d][kv], S [b][h][q][kv]; P [b][h][q][kv], V [b][h][kv][d].
    const auto& q_shape = qk.space.accesses[0].shape;
    const auto& kt_shape = qk.space.accesses[1].shape;
    const auto& v_shape = pv.space.accesses[1].shape;
    AttentionParams p{.batch = q_shape[0],
                      .heads = q_shape[1],
                      .kv_heads = q_shape[1],
                      .q_len = q_shape[2],
                      .kv_len = kt_shape[3],
                      .head_dim = q_shape[3]};
    if (kt_shape[0] != p.batch || kt_shape[1] != p.heads || kt_shape[2] != p.head_dim ||
        v_shape != std::vector<std::uint64_t>{p.batch, p.heads, p.kv_len, p.head_dim})
      continue;
    // A constant mask over the square score matrix, shared by every batch and head, is the causal
    // mask exporters build from the sequence length (tril of ones): priced as causal. Other masks
    // (padding, or a per-head position bias such as T5's or ALiBi's) are not priced.
    const auto is_causal_mask = [&](const std::vector<std::uint64_t>& shape) {
      if (p.q_len != p.kv_len || shape.size() < 2) return false;
      for (std::size_t i = 0; i + 2 < shape.size(); ++i)
        if (shape[i] != 1) return false;
      return shape[shape.size() - 2] == p.q_len && shape.back() == p.kv_len;
    };
    if (chain->mask && is_causal_mask(*chain->mask)) {
      p.causal = true;
      ++causal;
    }
    Op attn = make_attention(pv.name + ".attention", p, qk.space.accesses[0].dtype);
    // K as the first matmul reads it, transposed: [b][h][d][kv].
    TensorAccess& k = attn.space.accesses[1];
    std::swap(k.indices[2], k.indices[3]);
    std::swap(k.shape[2], k.shape[3]);
    attn.tensors = {qk.tensors[0], qk.tensors[1], pv.tensors[1], pv.tensors[2]};
    attn.source = pv.source;
    remove[qk_index] = remove[s] = remove[pv_index] = true;
    for (const std::size_t c : chain->ops) remove[c] = true;
    fused.emplace_back(pv_index, std::move(attn));
  }
  if (merged_heads > 0)
    report.notes.push_back(fmt::format(
        "left {} attention pattern{} unfused: batch and heads merged into one axis (rank 3, as "
        "nn.MultiheadAttention exports it); coda's attention op needs them apart",
        merged_heads, merged_heads == 1 ? "" : "s"));
  if (fused.empty()) return report;
  // Each fused op replaces its second matmul in place, then the rest of its pattern goes.
  for (auto& [index, op] : fused) {
    graph.ops[index] = std::move(op);
    remove[index] = false;
  }
  passes::remove_ops(graph, remove);
  report.changed = true;
  report.notes.push_back(fmt::format(
      "fused {} attention pattern{} (Q K^T, scaling, mask, softmax, P V) into attention ops{}",
      fused.size(), fused.size() == 1 ? "" : "s",
      causal > 0 ? fmt::format(", {} causal (a constant mask over the square score matrix)", causal)
                 : ""));
  return report;
}

}  // namespace coda::workload
