#include <cstdint>
#include <map>
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

// A batched matmul Out[..][m][n] = sum_k A[..][m][k] * B[..][k][n] over tensors of one rank
// (3: [batch][m][k], 4: [b][h][m][k]): accesses A (Input), B (Input or Weight), Out (Output),
// every index a plain dim, the leading (batch) dims shared, k in A's last and B's next-to-last
// place and nowhere in Out.
bool is_batched_matmul(const Op& op, std::size_t rank) {
  if (op.kind != OpKind::Contraction || op.space.accesses.size() != 3 || op.tensors.size() != 3)
    return false;
  const auto& acc = op.space.accesses;
  if (acc[0].role != TensorRole::Input || acc[1].role == TensorRole::Output ||
      acc[2].role != TensorRole::Output)
    return false;
  std::size_t d[3][4];
  for (std::size_t a = 0; a < 3; ++a) {
    if (acc[a].indices.size() != rank || acc[a].shape.size() != rank) return false;
    for (std::size_t i = 0; i < rank; ++i) {
      const auto dim = plain_dim(acc[a].indices[i]);
      if (!dim) return false;
      d[a][i] = *dim;
    }
  }
  for (std::size_t i = 0; i + 2 < rank; ++i)
    if (d[0][i] != d[1][i] || d[1][i] != d[2][i]) return false;
  const std::size_t m = rank - 2, n = rank - 1, k = d[0][n];
  return d[2][m] == d[0][m] && d[2][n] == d[1][n] && d[1][m] == k && k != d[2][m] && k != d[2][n];
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
  // The ops each pattern becomes, at its second matmul's place: the attention op, and for a
  // rank-3 pattern the views to and from rank 4 around it.
  std::map<std::size_t, std::vector<Op>> fused;
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
    const std::size_t rank = qk.space.accesses.empty() ? 0 : qk.space.accesses[0].shape.size();
    if ((rank != 3 && rank != 4) || !is_batched_matmul(qk, rank) || !is_batched_matmul(pv, rank))
      continue;
    // Rank 4: Q [b][h][q][d], K^T [b][h][d][kv], P [b][h][q][kv], V [b][h][kv][d]. Rank 3 (batch
    // and heads in one axis, as nn.MultiheadAttention exports it): the same with h = 1 and b the
    // merged axis, which is the same work.
    const std::size_t lead = rank - 2;
    const auto& q_shape = qk.space.accesses[0].shape;
    const auto& kt_shape = qk.space.accesses[1].shape;
    const auto& v_shape = pv.space.accesses[1].shape;
    AttentionParams p{.batch = q_shape[0],
                      .heads = rank == 4 ? q_shape[1] : 1,
                      .kv_heads = rank == 4 ? q_shape[1] : 1,
                      .q_len = q_shape[lead],
                      .kv_len = kt_shape[lead + 1],
                      .head_dim = q_shape[lead + 1]};
    std::vector<std::uint64_t> expected_v{p.batch, p.heads, p.kv_len, p.head_dim};
    if (rank == 3) expected_v.erase(expected_v.begin() + 1);
    if (kt_shape[lead] != p.head_dim || v_shape != expected_v) continue;
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
    const DataType dtype = qk.space.accesses[0].dtype;
    Op attn = make_attention(pv.name + ".attention", p, dtype);
    // K as the first matmul reads it, transposed: [b][h][d][kv].
    TensorAccess& k = attn.space.accesses[1];
    std::swap(k.indices[2], k.indices[3]);
    std::swap(k.shape[2], k.shape[3]);
    attn.tensors = {qk.tensors[0], qk.tensors[1], pv.tensors[1], pv.tensors[2]};
    attn.source = pv.source;
    std::vector<Op> ops;
    if (rank == 3) {
      // Views of Q, K^T and V as [b][1][..], and of the result back: reshapes, no work.
      ++merged_heads;
      const auto view = [&](const std::string& name, TensorId from, bool to_rank4) {
        // Copies: add_tensor may move the graph's tensors.
        const std::vector<std::uint64_t> three = graph.tensor(from).shape;
        const DataType type = graph.tensor(from).dtype;
        std::vector<std::uint64_t> four = three;
        four.insert(four.begin() + 1, 1);
        const TensorId other =
            graph.add_tensor({pv.name + "." + name, four, type, TensorKind::Activation});
        Op op = make_data_movement(pv.name + "." + name, Function::Reshape,
                                   {to_rank4 ? three : four}, {to_rank4 ? four : three}, type);
        op.tensors =
            to_rank4 ? std::vector<TensorId>{from, other} : std::vector<TensorId>{other, from};
        op.source = pv.source;
        return std::make_pair(other, std::move(op));
      };
      auto [q4, q_view] = view("q_heads", attn.tensors[0], true);
      auto [kt4, kt_view] = view("kt_heads", attn.tensors[1], true);
      auto [v4, v_view] = view("v_heads", attn.tensors[2], true);
      auto [o4, o_view] = view("o_heads", attn.tensors[3], false);
      attn.tensors = {q4, kt4, v4, o4};
      ops = {std::move(q_view), std::move(kt_view), std::move(v_view), std::move(attn),
             std::move(o_view)};
    } else {
      ops.push_back(std::move(attn));
    }
    remove[qk_index] = remove[s] = remove[pv_index] = true;
    for (const std::size_t c : chain->ops) remove[c] = true;
    fused.emplace(pv_index, std::move(ops));
  }
  if (fused.empty()) return report;
  // Each pattern's ops take its second matmul's place, then the rest of its pattern goes.
  std::vector<Op> ops;
  std::vector<bool> drop;
  for (std::size_t i = 0; i < graph.ops.size(); ++i) {
    const auto f = fused.find(i);
    if (f == fused.end()) {
      ops.push_back(std::move(graph.ops[i]));
      drop.push_back(remove[i]);
      continue;
    }
    for (Op& op : f->second) {
      ops.push_back(std::move(op));
      drop.push_back(false);
    }
  }
  graph.ops = std::move(ops);
  passes::remove_ops(graph, drop);
  report.changed = true;
  report.notes.push_back(fmt::format(
      "fused {} attention pattern{} (Q K^T, scaling, mask, softmax, P V) into attention ops{}{}",
      fused.size(), fused.size() == 1 ? "" : "s",
      causal > 0 ? fmt::format(", {} causal (a constant mask over the square score matrix)", causal)
                 : "",
      merged_heads > 0
          ? fmt::format(", {} of rank 3 (batch and heads in one axis, as nn.MultiheadAttention "
                        "exports it: priced as that many sequences of one head)",
                        merged_heads)
          : ""));
  return report;
}

}  // namespace coda::workload
