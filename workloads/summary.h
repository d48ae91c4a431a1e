#pragma once
// What a workload is, in numbers: ops, parameters, bytes by tensor kind, MACs and FLOPs, a
// breakdown per op kind, and the arithmetic intensity of running each op alone. A plain value;
// `coda workload` prints it (format_summary) and writes it (to_json).

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/units.h"
#include "workloads/graph.h"

namespace coda::workload {

struct OpKindSummary {
  OpKind kind = OpKind::Contraction;
  std::uint64_t count = 0;
  std::uint64_t macs = 0;
  std::uint64_t flops = 0;
  Bytes bytes;  // sum of tensor_bytes(op) over the ops of this kind
  friend bool operator==(const OpKindSummary&, const OpKindSummary&) = default;
};

struct WorkloadSummary {
  std::string name;
  std::string source;
  std::uint64_t ops = 0;
  std::uint64_t tensors = 0;
  // Dataflow links: operands (inputs and weights) bound to a tensor an earlier op writes, i.e.
  // the edges along which one op passes data to another. 0 for unbound ops (a SCALE-Sim CSV).
  std::uint64_t links = 0;
  std::uint64_t parameters = 0;  // elements of Weight tensors
  Bytes parameter_bytes;
  Bytes activation_bytes;        // storage of every Activation tensor
  Bytes kv_cache_bytes;
  std::uint64_t macs = 0;
  std::uint64_t flops = 0;
  // Compulsory traffic: sum over ops of tensor_bytes(op), every tensor an op touches once per
  // op, as if no op's data stayed on chip for the next.
  Bytes compulsory_bytes;
  double arithmetic_intensity = 0.0;  // flops / compulsory_bytes (0 when no bytes)
  std::vector<OpKindSummary> by_kind;  // kinds that occur, in OpKind order
  friend bool operator==(const WorkloadSummary&, const WorkloadSummary&) = default;
};

WorkloadSummary summarize(const Graph& graph);

// A table for the terminal: totals, then one row per op kind.
std::string format_summary(const WorkloadSummary& summary);

// {"name", "source", "ops", "tensors", "parameters", "parameter_bytes", ..., "by_kind": [...]}.
void to_json(nlohmann::ordered_json& j, const WorkloadSummary& summary);

}  // namespace coda::workload
