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

// The largest count coda takes from a workload: every op's iteration space (its MACs, or its
// points) and every tensor's elements, 2^62, so that products and sums of them in 64 bits
// (bytes, FLOPs, cycles) cannot overflow.
inline constexpr std::uint64_t kMaxWorkloadCount = std::uint64_t{1} << 62;

// The ops and tensors whose counts exceed kMaxWorkloadCount, each a sentence naming it and its
// extents (a GEMM of 2^31-1 on every side has 2^93 MACs: it priced at 0 cycles on H100 and ran
// out of memory on a systolic array). The readers' value limits cannot catch a product.
std::vector<std::string> size_problems(const Graph& graph);

}  // namespace coda::workload
