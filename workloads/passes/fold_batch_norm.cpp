#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "workloads/passes/builtin_passes.h"
#include "workloads/passes/graph_edit.h"

namespace coda::workload {
namespace {

// make_normalization's BatchNorm: x (Input), scale, shift (Weight), y (Output), all indexed by
// the dims d0, d1, ... of x's shape.
bool is_batch_norm(const Op& op) {
  const auto& a = op.space.accesses;
  return op.kind == OpKind::Normalization && op.function == Function::BatchNorm &&
         a.size() == 4 && op.tensors.size() == 4 && a[0].role == TensorRole::Input &&
         a[1].role == TensorRole::Weight && a[2].role == TensorRole::Weight &&
         a[3].role == TensorRole::Output && a[0].shape == a[3].shape &&
         a[0].dtype == a[3].dtype && a[1].indices == a[2].indices &&
         a[0].indices.size() == a[0].shape.size();
}

// Whether the batch norm's channel axes (the ranks of x its scale is indexed by) are, in
// `producer`'s output access `out`, indexed only by dims that also index its Weight.
bool channels_have_own_filters(const Op& bn, const Op& producer, const TensorAccess& out) {
  if (out.indices.size() != out.shape.size()) return false;
  for (const IndexExpr& scale_index : bn.space.accesses[1].indices) {
    for (const IndexTerm& term : scale_index.terms) {
      const std::size_t axis = term.dim;  // dim d<i> is rank i of x
      if (axis >= out.indices.size()) return false;
      for (const IndexTerm& t : out.indices[axis].terms)
        if (!dim_indexes_role(producer.space, t.dim, TensorRole::Weight)) return false;
    }
  }
  return true;
}

}  // namespace

PassReport FoldBatchNorm::run(Graph& graph) {
  PassReport report;
  const auto uses = passes::tensor_uses(graph);
  std::vector<bool> remove(graph.ops.size(), false);
  std::vector<std::string> folded;
  for (std::size_t i = 0; i < graph.ops.size(); ++i) {
    const Op& bn = graph.ops[i];
    if (!is_batch_norm(bn)) continue;
    const TensorId x = bn.tensors[0], y = bn.tensors[3];
    const auto& use = uses[x.value];
    if (use.writers.size() != 1 || use.readers != std::vector<std::size_t>{i}) continue;
    if (std::find(graph.outputs.begin(), graph.outputs.end(), x) != graph.outputs.end()) continue;
    const Op& producer = graph.ops[use.writers[0]];
    if (producer.kind != OpKind::Contraction || remove[use.writers[0]]) continue;
    const auto it = std::find(producer.tensors.begin(), producer.tensors.end(), x);
    const TensorAccess& out =
        producer.space.accesses[static_cast<std::size_t>(it - producer.tensors.begin())];
    if (out.role != TensorRole::Output || !channels_have_own_filters(bn, producer, out)) continue;
    passes::rebind(graph, y, x, i);
    remove[i] = true;
    folded.push_back(fmt::format("'{}' into '{}'", graph.ops[i].name, producer.name));
  }
  if (folded.empty()) return report;
  passes::remove_ops(graph, remove);
  report.changed = true;
  report.notes.push_back(fmt::format(
      "folded {} batch norm{}: {} (scale into the filter, shift into a bias the contraction's "
      "epilogue adds; their parameters leave the parameter count)",
      folded.size(), folded.size() == 1 ? "" : "s", fmt::join(folded, ", ")));
  return report;
}

}  // namespace coda::workload
