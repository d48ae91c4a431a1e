#pragma once
// Test helpers over workload graphs.

#include <cstddef>
#include <string>

#include "workloads/builders.h"
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

// fc: C[64][32] = A[64][16] x B[16][32]; bias: Y1 = C + b[32]; relu: Y2 = max(Y1, 0); all fp16.
// Tensors: 0 A, 1 B, 2 C, 3 bias, 4 Y1, 5 Y2. The smallest graph an epilogue fuses.
inline workload::Graph gemm_bias_relu() {
  workload::Graph g{"g", "", {}, {}, {}};
  g.add(workload::make_gemm("fc", 64, 32, 16, DataType::Fp16));
  g.add(workload::make_elementwise("fc.bias", workload::Function::Add, {64, 32}, DataType::Fp16,
                                   {{workload::TensorRole::Weight, {1}}}),
        {workload::TensorId{2}});
  g.add(workload::make_elementwise("fc.relu", workload::Function::Relu, {64, 32},
                                   DataType::Fp16),
        {workload::TensorId{4}});
  return g;
}

}  // namespace coda::testing
