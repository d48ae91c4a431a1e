#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/check.h"
#include "workloads/builders.h"
#include "workloads/passes/builtin_passes.h"

namespace coda::workload {
namespace {

// make_attention's layout: dims b, hk, g, q, kv, d (and e, the value dim, when it has one);
// accesses Q, K, V (Input), O (Output), each of rank 4 with the head at rank 1.
enum : std::size_t { kB, kHk, kG, kQ, kKv, kD, kDims, kE = kDims };
enum : std::size_t { kQAccess, kKAccess, kVAccess, kOAccess, kAccesses };

bool in_builder_form(const Op& op) {
  return attention_form(op) == AttentionForm::Forward && op.tensors.size() == kAccesses;
}

IndexExpr dim_index(std::size_t dim) { return IndexExpr{{IndexTerm{dim, 1}}, 0}; }

// S's (and P's, dP's, dS's) shape and index: b x heads x q x kv, the head at rank 1 as in Q.
std::vector<std::uint64_t> score_shape_of(const Op& attn) {
  const auto& dims = attn.space.dims;
  return {dims[kB].extent, attn.space.accesses[kQAccess].shape[1], dims[kQ].extent,
          dims[kKv].extent};
}
std::vector<IndexExpr> score_index_of(const Op& attn) {
  return {dim_index(kB), attn.space.accesses[kQAccess].indices[1], dim_index(kQ),
          dim_index(kKv)};
}

struct Decomposed {
  std::vector<Op> ops;
  std::uint64_t extra_macs = 0;  // over the fused op (causal only)
};

// A part's iteration space: over d (Q K^T and the gradients dQ, dK) or over the value dim (P V,
// dV, dP). An attention without a value dim of its own keeps its six dims for every part; with
// one, a part over d drops e (no access of it indexes e), and a part over the values drops d,
// its accesses' e moving into d's place.
void restrict_to(Op& part, bool values) {
  auto& dims = part.space.dims;
  if (dims.size() == kDims) return;
  CODA_CHECK(dims.size() == kDims + 1);
  if (!values) {
    dims.pop_back();
    return;
  }
  dims[kD] = dims[kE];
  dims.pop_back();
  for (TensorAccess& a : part.space.accesses)
    for (IndexExpr& index : a.indices)
      for (IndexTerm& term : index.terms) {
        CODA_CHECK(term.dim != kD);  // a part over the values reads no access over d
        if (term.dim == kE) term.dim = kD;
      }
}

bool softcapped(const Op& attn) { return std::get<AttentionSpec>(attn.attributes).softcap > 0; }

// The soft cap's pass over S, cap x tanh(S / cap), as one elementwise Tanh (the division and
// the multiply beside tanh's own ops are not counted).
Op softcap_op(const Op& attn, const std::vector<std::uint64_t>& score_shape, DataType dtype) {
  Op op = make_elementwise(attn.name + ".softcap", Function::Tanh, score_shape, dtype);
  op.source = attn.source;
  return op;
}

// The ops replacing `attn` (three, four with a soft cap); `scores` and `probs` are the new
// tensors S and P, `capped` the capped scores (with a soft cap).
Decomposed decompose(const Op& attn, TensorId scores, std::optional<TensorId> capped,
                     TensorId probs, const std::vector<std::uint64_t>& score_shape) {
  const auto& acc = attn.space.accesses;
  const DataType dtype = acc[kQAccess].dtype;
  const std::vector<IndexExpr> score_index = score_index_of(attn);

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
  restrict_to(qk, false);

  std::optional<Op> cap;
  if (capped) {
    cap = softcap_op(attn, score_shape, dtype);
    cap->tensors = {scores, *capped};
  }
  Op softmax = make_normalization(attn.name + ".softmax", Function::Softmax, score_shape, {3},
                                  dtype);
  softmax.tensors = {capped.value_or(scores), probs};
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
  restrict_to(pv, true);

  Decomposed out;
  out.extra_macs = mac_count(qk) + mac_count(pv) - mac_count(attn);
  out.ops.push_back(std::move(qk));
  if (cap) out.ops.push_back(std::move(*cap));
  out.ops.push_back(std::move(softmax));
  out.ops.push_back(std::move(pv));
  return out;
}

}  // namespace

std::vector<Op> decompose_attention_backward(const Op& attn) {
  CODA_CHECK(attention_form(attn) == AttentionForm::Backward);
  // make_attention_backward's accesses: Q, K, V, O, dO (Input), dQ, dK, dV (Output).
  enum : std::size_t { kBwdQ, kBwdK, kBwdV, kBwdO, kBwdDo, kBwdDq, kBwdDk, kBwdDv };
  const auto& acc = attn.space.accesses;
  const DataType dtype = acc[kBwdQ].dtype;
  const std::vector<std::uint64_t> shape = score_shape_of(attn);
  const std::vector<IndexExpr> index = score_index_of(attn);
  const auto score = [&](TensorRole role, const char* name) {
    return TensorAccess{role, name, index, shape, dtype};
  };
  const auto as_weight = [](TensorAccess a) {
    a.role = TensorRole::Weight;  // the operand indexed by the GEMM's n
    return a;
  };
  // `values`: a GEMM over the value dim (dV, dP) rather than d (dQ, dK).
  const auto contraction = [&](const char* part, std::vector<TensorAccess> accesses, bool values) {
    Op op;
    op.name = attn.name + "." + part;
    op.kind = OpKind::Contraction;
    op.space.dims = attn.space.dims;
    op.space.accesses = std::move(accesses);
    op.source = attn.source;
    restrict_to(op, values);
    return op;
  };
  std::vector<Op> ops;
  // dV = P^T dO (m = kv, n = d, k = g q): P as the forward's softmax saved it.
  ops.push_back(contraction(
      "dv", {score(TensorRole::Input, "P"), as_weight(acc[kBwdDo]), acc[kBwdDv]}, true));
  // dP = dO V^T (m = g q, n = kv, k = d).
  ops.push_back(contraction(
      "dp", {acc[kBwdDo], as_weight(acc[kBwdV]), score(TensorRole::Output, "dP")}, true));
  // dS = P (dP - rowsum(dP P)): the softmax's backward over each row of kv, reading P and dP.
  Op softmax = make_normalization(attn.name + ".softmax_bwd", Function::Softmax, shape, {3}, dtype);
  TensorAccess dy = softmax.space.accesses.front();
  dy.tensor = "dy";
  softmax.space.accesses.insert(softmax.space.accesses.begin() + 1, std::move(dy));
  softmax.source = attn.source;
  ops.push_back(std::move(softmax));
  // A soft cap's backward, dS x (1 - tanh^2), reading dS and the capped scores the forward
  // saved: one pass of tanh over the two (as every unary function's backward is priced).
  if (softcapped(attn)) {
    Op cap = make_elementwise(attn.name + ".softcap_bwd", Function::Tanh, shape, dtype,
                              {{TensorRole::Input, {}}});
    cap.source = attn.source;
    ops.push_back(std::move(cap));
  }
  // dQ = dS K (m = g q, n = d, k = kv); dK = dS^T Q (m = kv, n = d, k = g q).
  ops.push_back(contraction(
      "dq", {score(TensorRole::Input, "dS"), as_weight(acc[kBwdK]), acc[kBwdDq]}, false));
  ops.push_back(contraction(
      "dk", {score(TensorRole::Input, "dS"), as_weight(acc[kBwdQ]), acc[kBwdDk]}, false));
  return ops;
}

PassReport DecomposeAttention::run(Graph& graph) {
  PassReport report;
  std::vector<Op> ops;
  std::size_t decomposed = 0, causal = 0, capped_ops = 0;
  std::uint64_t extra_macs = 0;
  for (Op& op : graph.ops) {
    if (op.kind != OpKind::Attention) {
      ops.push_back(std::move(op));
      continue;
    }
    if (!in_builder_form(op)) {
      report.notes.push_back(
          attention_form(op) == AttentionForm::Backward
              ? fmt::format("left attention backward '{}' as one op: the schedule prices it "
                            "fused or as its five parts (dV, dP, the softmax's backward, dQ, dK)",
                            op.name)
              : fmt::format("left attention '{}' fused: it is not in make_attention's form (6 "
                            "or 7 dims; Q, K, V, O)",
                            op.name));
      ops.push_back(std::move(op));
      continue;
    }
    const DataType dtype = op.space.accesses[kQAccess].dtype;
    const std::vector<std::uint64_t> score_shape = score_shape_of(op);
    const TensorId scores =
        graph.add_tensor({op.name + ".scores", score_shape, dtype, TensorKind::Activation});
    std::optional<TensorId> capped;
    if (softcapped(op))
      capped = graph.add_tensor({op.name + ".capped", score_shape, dtype, TensorKind::Activation});
    const TensorId probs =
        graph.add_tensor({op.name + ".probs", score_shape, dtype, TensorKind::Activation});
    Decomposed d = decompose(op, scores, capped, probs, score_shape);
    ++decomposed;
    if (std::get<AttentionSpec>(op.attributes).causal) ++causal;
    if (softcapped(op)) ++capped_ops;
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
  if (capped_ops > 0)
    report.notes.push_back(fmt::format(
        "{} of them soft-capped: cap x tanh(S / cap) as one elementwise pass over S before the "
        "softmax",
        capped_ops));
  if (causal > 0)
    report.notes.push_back(fmt::format(
        "{} of them causal: the mask is applied in the softmax, so the matmuls compute every "
        "query-key pair, {} MACs more than the fused ops",
        causal, extra_macs));
  return report;
}

}  // namespace coda::workload
