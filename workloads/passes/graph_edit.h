#pragma once
// Dataflow queries and edits the passes share. Not a public API beyond workloads/passes/.

#include <cstddef>
#include <vector>

#include "workloads/graph.h"

namespace coda::workload::passes {

// The ops (indices into Graph::ops) that read each tensor (Input and Weight accesses) and that
// write it (Output accesses). An in-place update is both a reader and a writer.
struct TensorUse {
  std::vector<std::size_t> readers;
  std::vector<std::size_t> writers;
};
std::vector<TensorUse> tensor_uses(const Graph& graph);

// Which tensors are the graph's results: Graph::outputs, or when that is empty, every tensor
// that some op writes and no op reads.
std::vector<bool> result_tensors(const Graph& graph);

// Every binding of `from` (in ops other than `except_op`, and in Graph::outputs) becomes `to`.
void rebind(Graph& graph, TensorId from, TensorId to, std::size_t except_op);

// Removes the ops marked in `remove` (one flag per op) and then every tensor that only removed
// ops referenced and that is not in Graph::outputs, renumbering the TensorIds that remain.
void remove_ops(Graph& graph, const std::vector<bool>& remove);

}  // namespace coda::workload::passes
