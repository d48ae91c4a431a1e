#pragma once
// An operator of the workload IR: an iteration space (named dims with extents) and, for each
// tensor it touches, one affine index expression per tensor rank. A GEMM, a convolution and an
// attention matmul all have this one form, so nothing downstream switches on an op's name.
//
//   GEMM   dims {m, n, k}:  A[m][k] (Input) * B[k][n] (Weight) -> C[m][n] (Output)
//   Conv2d dims {n, g, k, c, p, q, r, s}: see make_conv2d in workloads/builders.h

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/diagnostics.h"

namespace coda::workload {

enum class OpKind : std::uint8_t { Contraction };
enum class TensorRole : std::uint8_t { Input, Weight, Output };

std::string_view to_string(OpKind kind);     // "contraction"
std::string_view to_string(TensorRole role);  // "input", "weight", "output"

struct Dim {
  std::string name;
  std::uint64_t extent = 1;
};

// One term of an affine index: coefficient * dims[dim].
struct IndexTerm {
  std::size_t dim = 0;  // index into Einsum::dims
  std::int64_t coefficient = 1;
};

// sum(coefficient * dim) + offset. A conv's input row is p*stride + r - pad: terms {p: stride,
// r: 1}, offset -pad. An offset can point outside the tensor (padding reads zeros).
struct IndexExpr {
  std::vector<IndexTerm> terms;
  std::int64_t offset = 0;
};

struct TensorAccess {
  TensorRole role = TensorRole::Input;
  std::string tensor;               // name local to the op: "A", "ifmap", ...
  std::vector<IndexExpr> indices;   // one per tensor rank, outermost first
};

struct Einsum {
  std::vector<Dim> dims;
  std::vector<TensorAccess> accesses;
};

struct Op {
  std::string name;  // for humans and reports; never used for dispatch
  OpKind kind = OpKind::Contraction;
  Einsum space;
  SourceLocation source;  // where the op was declared (file:line:col), empty for built ops
};

// Product of all dim extents for a Contraction (one multiply-accumulate per point).
std::uint64_t mac_count(const Op& op);

// Whether some index expression of some access with `role` uses dims[dim] with a non-zero
// coefficient.
bool dim_indexes_role(const Einsum& space, std::size_t dim, TensorRole role);

// The op seen as a batch of independent GEMMs, derived only from which tensors each dim indexes
// (never from the op's name):
//   indexes Output, Input and Weight         -> batch (e.g. conv groups, attention heads)
//   indexes Output and Input, not Weight     -> m
//   indexes Output and Weight, not Input     -> n
//   does not index Output                    -> k (a reduction)
//   indexes Output only                      -> batch (independent copies, no reuse)
// Extents of dims in the same class multiply. Conv: batch = groups, m = N*P*Q,
// n = filters per group, k = channels per group * R * S.
struct GemmView {
  std::uint64_t batch = 1, m = 1, n = 1, k = 1;
  friend bool operator==(const GemmView&, const GemmView&) = default;
};
GemmView gemm_view(const Op& op);

}  // namespace coda::workload
