#pragma once
// A workload: an ordered list of ops, run one after another, with where the numbers came from.

#include <cstdint>
#include <string>
#include <vector>

#include "workloads/op.h"

namespace coda::workload {

struct Graph {
  std::string name;
  std::string source;  // provenance: a paper and table, or the file it was imported from
  std::vector<Op> ops;
};

// Sum of mac_count over the ops.
std::uint64_t total_macs(const Graph& graph);

}  // namespace coda::workload
