#pragma once
// Test helpers over workload graphs.

#include <cstddef>
#include <string>

#include "workloads/graph.h"

namespace coda::testing {

// verify()'s problems, one per line ("" for a clean graph), for EXPECT_EQ(problems(g), "").
inline std::string problems(const workload::Graph& g) {
  std::string out;
  for (const std::string& p : workload::verify(g)) out += p + "\n";
  return out;
}

// Ops of one kind and function.
inline std::size_t count(const workload::Graph& g, workload::OpKind kind,
                         workload::Function f = workload::Function::None) {
  std::size_t n = 0;
  for (const workload::Op& op : g.ops) n += op.kind == kind && op.function == f ? 1 : 0;
  return n;
}

}  // namespace coda::testing
