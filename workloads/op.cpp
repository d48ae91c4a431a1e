#include "workloads/op.h"

namespace coda::workload {

std::string_view to_string(OpKind kind) {
  switch (kind) {
    case OpKind::Contraction:
      return "contraction";
  }
  return "unknown";
}

std::string_view to_string(TensorRole role) {
  switch (role) {
    case TensorRole::Input:
      return "input";
    case TensorRole::Weight:
      return "weight";
    case TensorRole::Output:
      return "output";
  }
  return "unknown";
}

std::uint64_t mac_count(const Op& op) {
  switch (op.kind) {
    case OpKind::Contraction: {
      std::uint64_t product = 1;
      for (const Dim& d : op.space.dims) product *= d.extent;
      return product;
    }
  }
  return 0;
}

bool dim_indexes_role(const Einsum& space, std::size_t dim, TensorRole role) {
  for (const TensorAccess& access : space.accesses) {
    if (access.role != role) continue;
    for (const IndexExpr& index : access.indices)
      for (const IndexTerm& term : index.terms)
        if (term.dim == dim && term.coefficient != 0) return true;
  }
  return false;
}

GemmView gemm_view(const Op& op) {
  GemmView view;
  const Einsum& space = op.space;
  for (std::size_t d = 0; d < space.dims.size(); ++d) {
    const std::uint64_t extent = space.dims[d].extent;
    const bool out = dim_indexes_role(space, d, TensorRole::Output);
    const bool in = dim_indexes_role(space, d, TensorRole::Input);
    const bool weight = dim_indexes_role(space, d, TensorRole::Weight);
    if (!out) view.k *= extent;
    else if (in && !weight) view.m *= extent;
    else if (weight && !in) view.n *= extent;
    else view.batch *= extent;  // all three, or the output alone
  }
  return view;
}

}  // namespace coda::workload
