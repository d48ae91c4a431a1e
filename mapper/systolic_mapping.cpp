#include "mapper/systolic_mapping.h"

#include <algorithm>

#include "core/check.h"

namespace coda::mapper {
namespace {

std::uint64_t extent(const workload::GemmView& g, GemmDim dim) {
  switch (dim) {
    case GemmDim::M: return g.m;
    case GemmDim::N: return g.n;
    case GemmDim::K: return g.k;
  }
  return 0;
}

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

}  // namespace

SystolicMapping map_onto_array(const workload::Op& op, const arch::HardwareModel& hw,
                               std::optional<DataType> precision) {
  CODA_CHECK(op.kind == workload::OpKind::Contraction);
  SystolicMapping m;
  m.dataflow = hw.dataflow();
  m.gemm = workload::gemm_view(op);
  m.space = op.space;
  if (precision)
    for (workload::TensorAccess& access : m.space.accesses) access.dtype = *precision;
  m.arrays = split_over_arrays(m.gemm, hw.arrays());
  switch (m.dataflow) {
    case arch::Dataflow::OutputStationary:
      m.row_dim = GemmDim::M, m.col_dim = GemmDim::N, m.time_dim = GemmDim::K;
      break;
    case arch::Dataflow::WeightStationary:
      m.row_dim = GemmDim::K, m.col_dim = GemmDim::N, m.time_dim = GemmDim::M;
      break;
    case arch::Dataflow::InputStationary:
      m.row_dim = GemmDim::K, m.col_dim = GemmDim::M, m.time_dim = GemmDim::N;
      break;
  }
  m.sr = extent(m.gemm, m.row_dim);
  m.sc = extent(m.gemm, m.col_dim);
  m.t = extent(m.gemm, m.time_dim);
  CODA_CHECK(m.sr > 0 && m.sc > 0 && m.t > 0 && m.gemm.batch > 0);
  m.row_folds = ceil_div(m.sr, hw.rows());
  m.col_folds = ceil_div(m.sc, hw.cols());
  return m;
}

std::uint64_t split_over_arrays(workload::GemmView& gemm, std::uint64_t arrays) {
  if (arrays <= 1) return 1;
  // Groups first: independent GEMMs need no operand shared between arrays.
  if (gemm.batch >= arrays) {
    gemm.batch = ceil_div(gemm.batch, arrays);
    return arrays;
  }
  std::uint64_t& dim = gemm.n >= gemm.m ? gemm.n : gemm.m;
  const std::uint64_t used = std::min(arrays, dim);
  dim = ceil_div(dim, used);
  return used;
}

}  // namespace coda::mapper
