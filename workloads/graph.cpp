#include "workloads/graph.h"

namespace coda::workload {

std::uint64_t total_macs(const Graph& graph) {
  std::uint64_t total = 0;
  for (const Op& op : graph.ops) total += mac_count(op);
  return total;
}

}  // namespace coda::workload
