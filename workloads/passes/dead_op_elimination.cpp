#include <string>
#include <vector>

#include <fmt/format.h>

#include "workloads/passes/builtin_passes.h"
#include "workloads/passes/graph_edit.h"

namespace coda::workload {

PassReport DeadOpElimination::run(Graph& graph) {
  PassReport report;
  std::vector<bool> live_tensor = passes::result_tensors(graph);
  std::vector<bool> remove(graph.ops.size(), false);
  std::vector<std::string> removed;
  // Readers come after writers (verify), so one backward sweep sees every reader of a tensor
  // before its writer.
  for (std::size_t i = graph.ops.size(); i-- > 0;) {
    const Op& op = graph.ops[i];
    bool live = op.kind == OpKind::Collective;
    for (std::size_t a = 0; a < op.tensors.size(); ++a) {
      if (op.space.accesses[a].role != TensorRole::Output) continue;
      const TensorId t = op.tensors[a];
      if (live_tensor[t.value] || graph.tensor(t).kind != TensorKind::Activation) live = true;
    }
    if (!live) {
      remove[i] = true;
      removed.push_back(op.name);
      continue;
    }
    for (std::size_t a = 0; a < op.tensors.size(); ++a)
      if (op.space.accesses[a].role != TensorRole::Output) live_tensor[op.tensors[a].value] = true;
  }
  if (removed.empty()) return report;
  passes::remove_ops(graph, remove);
  std::vector<std::string> in_order(removed.rbegin(), removed.rend());
  report.changed = true;
  report.notes.push_back(fmt::format("removed {} dead op{}: {}", in_order.size(),
                                     in_order.size() == 1 ? "" : "s", fmt::join(in_order, ", ")));
  return report;
}

}  // namespace coda::workload
