#include "workloads/passes/graph_edit.h"

#include <algorithm>
#include <cstdint>

#include "core/check.h"

namespace coda::workload::passes {

std::vector<TensorUse> tensor_uses(const Graph& graph) {
  std::vector<TensorUse> uses(graph.tensors.size());
  for (std::size_t i = 0; i < graph.ops.size(); ++i) {
    const Op& op = graph.ops[i];
    CODA_CHECK(op.tensors.size() == op.space.accesses.size());
    for (std::size_t a = 0; a < op.tensors.size(); ++a) {
      CODA_CHECK(op.tensors[a].value < uses.size());
      auto& list = op.space.accesses[a].role == TensorRole::Output ? uses[op.tensors[a].value].writers
                                                                   : uses[op.tensors[a].value].readers;
      if (list.empty() || list.back() != i) list.push_back(i);
    }
  }
  return uses;
}

std::vector<bool> result_tensors(const Graph& graph) {
  std::vector<bool> result(graph.tensors.size(), false);
  if (!graph.outputs.empty()) {
    for (const TensorId t : graph.outputs) result.at(t.value) = true;
    return result;
  }
  const auto uses = tensor_uses(graph);
  for (std::size_t t = 0; t < uses.size(); ++t)
    result[t] = !uses[t].writers.empty() && uses[t].readers.empty();
  return result;
}

void rebind(Graph& graph, TensorId from, TensorId to, std::size_t except_op) {
  for (std::size_t i = 0; i < graph.ops.size(); ++i)
    if (i != except_op)
      std::replace(graph.ops[i].tensors.begin(), graph.ops[i].tensors.end(), from, to);
  std::replace(graph.outputs.begin(), graph.outputs.end(), from, to);
}

void remove_ops(Graph& graph, const std::vector<bool>& remove) {
  CODA_CHECK(remove.size() == graph.ops.size());
  std::vector<bool> used_before(graph.tensors.size(), false), used_after(graph.tensors.size(), false);
  std::vector<Op> kept;
  for (std::size_t i = 0; i < graph.ops.size(); ++i) {
    for (const TensorId t : graph.ops[i].tensors) {
      used_before.at(t.value) = true;
      if (!remove[i]) used_after.at(t.value) = true;
    }
    if (!remove[i]) kept.push_back(std::move(graph.ops[i]));
  }
  graph.ops = std::move(kept);
  for (const TensorId t : graph.outputs) used_after.at(t.value) = true;

  // New id of each tensor that stays.
  std::vector<std::uint32_t> new_id(graph.tensors.size(), 0);
  std::vector<Tensor> tensors;
  for (std::size_t t = 0; t < graph.tensors.size(); ++t) {
    if (used_before[t] && !used_after[t]) continue;
    new_id[t] = static_cast<std::uint32_t>(tensors.size());
    tensors.push_back(std::move(graph.tensors[t]));
  }
  graph.tensors = std::move(tensors);
  for (Op& op : graph.ops)
    for (TensorId& t : op.tensors) t.value = new_id[t.value];
  for (TensorId& t : graph.outputs) t.value = new_id[t.value];
}

}  // namespace coda::workload::passes
