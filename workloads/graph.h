#pragma once
// A workload: tensors and the ops that read and write them, in execution order, with where the
// numbers came from. Ops are self-contained (workloads/op.h); each op's `tensors` binds its
// accesses to the graph's tensors, which is the dataflow that verification, passes, fusion and
// memory planning use.

#include <cstdint>
#include <string>
#include <vector>

#include "workloads/op.h"
#include "workloads/tensor.h"

namespace coda::workload {

struct Graph {
  std::string name;
  std::string source;  // provenance: a paper and table, or the file it was imported from
  std::vector<Tensor> tensors;
  std::vector<Op> ops;
  // The graph's results, which dead-op elimination keeps (workloads/passes/dead_op_elimination.h).
  // Empty: every tensor some op writes and no op reads is a result.
  std::vector<TensorId> outputs;

  TensorId add_tensor(Tensor tensor);
  const Tensor& tensor(TensorId id) const;

  // Appends `op`, binding its accesses in order to `bound` and, past the end of `bound`, to
  // fresh tensors named "<op name>.<access name>" with the access's shape and type (kind Weight
  // for Weight accesses, Activation otherwise). A bound tensor must have the access's shape and
  // type (CODA_CHECK: builders validate first).
  OpId add(Op op, std::vector<TensorId> bound = {});

  friend bool operator==(const Graph&, const Graph&) = default;
};

// Sum of mac_count / flop_count over the ops.
std::uint64_t total_macs(const Graph& graph);
std::uint64_t total_flops(const Graph& graph);
// Bytes of the tensors of one kind (weights: the parameter bytes).
Bytes total_bytes(const Graph& graph, TensorKind kind);
// Elements of the tensors of one kind (weights: the parameter count).
std::uint64_t total_elements(const Graph& graph, TensorKind kind);

// Structural checks, each problem a sentence naming the op and the tensor:
//   every op's bindings exist and match its accesses in shape and type;
//   an op's indices fit its tensors (outputs and weights inside the shape; inputs may reach
//   outside, which is padding, but must overlap it);
//   each tensor is written by at most one op, and read only after it is written (or it is a
//   graph input: never written);
//   every dim extent is at least 1;
//   every entry of `outputs` names a tensor of the graph.
std::vector<std::string> verify(const Graph& graph);

}  // namespace coda::workload
