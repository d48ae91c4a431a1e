#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "workloads/builders.h"
#include "workloads/passes/builtin_passes.h"

namespace coda::workload {
namespace {

// make_attention's layout: dims b, hk, g, q, kv, d; accesses Q, K, V (Input), O (Output), each
// of rank 4 with the head at rank 1.
enum : std::size_t { kB, kHk, kG, kQ, kKv, kD, kDims };
enum : std::size_t { kQAccess, kKAccess, kVAccess, kOAccess, kAccesses };

bool in_builder_form(const Op& op) {
  const auto& a = op.space.accesses;
  if (op.space.dims.size() != kDims || a.size() != kAccesses ||
      op.tensors.size() != kAccesses || !std::holds_alternative<AttentionSpec>(op.attributes))
    return false;
  for (std::size_t i = 0; i < kAccesses; ++i)
    if (a[i].indices.size() != 4 || a[i].shape.size() != 4 ||
        a[i].role != (i == kOAccess ? TensorRole::Output : TensorRole::Input))
      return false;
  return true;
}

IndexExpr dim_index(std::size_t dim) { return IndexExpr{{IndexTerm{dim, 1}}, 0}; }

struct Decomposed {
  std::vector<Op> ops;
  std::uint64_t extra_macs = 0;  // over the fused op (causal only)
};

// The three ops replacing `attn`; `scores` and `probs` are the new tensors S and P.
Decomposed decompose(const Op& attn, TensorId scores, TensorId probs,
                     const std::vector<std::uint64_t>& score_shape) {
  const auto& acc = attn.space.accesses;
  const DataType dtype = acc[kQAccess].dtype;
  const IndexExpr& head = acc[kQAccess].indices[1];  // hk*G + g
  const std::vector<IndexExpr> score_index{dim_index(kB), head, dim_index(kQ), dim_index(kKv)};

  Op qk;
  qk.name = attn.name + ".qk";
  qk.kind = OpKind::Contraction;
  qk.space.dims = attn.space.dims;
  TensorAccess k = acc[kKAccess];
  k.role = TensorRole::Weight;  // the operand indexed by n (kv)
  qk.space.accesses = {acc[kQAccess], std::move(k),
                       {TensorRole::Output, "S", score_index, score_shape, dtype}};
  qk.tensors = {attn.tensors[kQAccess], attn.tensors[kKAccess], scores};
  qk.source = attn.source;

  Op softmax = make_normalization(attn.name + ".softmax", Function::Softmax, score_shape, {3},
                                  dtype);
  softmax.tensors = {scores, probs};
  softmax.source = attn.source;

  Op pv;
  pv.name = attn.name + ".pv";
  pv.kind = OpKind::Contraction;
  pv.space.dims = attn.space.dims;
  TensorAccess v = acc[kVAccess];
  v.role = TensorRole::Weight;  // the operand indexed by n (d)
  pv.space.accesses = {{TensorRole::Input, "P", score_index, score_shape, dtype}, std::move(v),
                       acc[kOAccess]};
  pv.tensors = {probs, attn.tensors[kVAccess], attn.tensors[kOAccess]};
  pv.source = attn.source;

  Decomposed out;
  out.extra_macs = mac_count(qk) + mac_count(pv) - mac_count(attn);
  out.ops = {std::move(qk), std::move(softmax), std::move(pv)};
  return out;
}

}  // namespace

PassReport DecomposeAttention::run(Graph& graph) {
  PassReport report;
  std::vector<Op> ops;
  std::size_t decomposed = 0, causal = 0;
  std::uint64_t extra_macs = 0;
  for (Op& op : graph.ops) {
    if (op.kind != OpKind::Attention) {
      ops.push_back(std::move(op));
      continue;
    }
    if (!in_builder_form(op)) {
      report.notes.push_back(fmt::format(
          "left attention '{}' fused: it is not in make_attention's form (6 dims; Q, K, V, O)",
          op.name));
      ops.push_back(std::move(op));
      continue;
    }
    const auto& dims = op.space.dims;
    const DataType dtype = op.space.accesses[kQAccess].dtype;
    const std::vector<std::uint64_t> score_shape{dims[kB].extent, op.space.accesses[kQAccess].shape[1],
                                                 dims[kQ].extent, dims[kKv].extent};
    const TensorId scores =
        graph.add_tensor({op.name + ".scores", score_shape, dtype, TensorKind::Activation});
    const TensorId probs =
        graph.add_tensor({op.name + ".probs", score_shape, dtype, TensorKind::Activation});
    Decomposed d = decompose(op, scores, probs, score_shape);
    ++decomposed;
    if (std::get<AttentionSpec>(op.attributes).causal) ++causal;
    extra_macs += d.extra_macs;
    for (Op& part : d.ops) ops.push_back(std::move(part));
  }
  graph.ops = std::move(ops);
  if (decomposed == 0) return report;
  report.changed = true;
  report.notes.push_back(fmt::format(
      "decomposed {} attention op{} into Q K^T, softmax and P V (grouped-query heads stacked "
      "along m: no copies of K and V)",
      decomposed, decomposed == 1 ? "" : "s"));
  if (causal > 0)
    report.notes.push_back(fmt::format(
        "{} of them causal: the mask is applied in the softmax, so the matmuls compute every "
        "query-key pair, {} MACs more than the fused ops",
        causal, extra_macs));
  return report;
}

}  // namespace coda::workload
