#include "mapper/systolic_mapping.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

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

double pe_rate(const arch::HardwareModel& hw, DataType precision) {
  const arch::ComputeUnitSpec* unit = hw.matrix_unit();
  if (unit == nullptr || hw.spec().schema_version == 1) return 1.0;
  const auto rate = unit->rates.find(precision);
  return rate == unit->rates.end() || rate->second <= 0 ? 1.0 : rate->second;
}

std::uint64_t fold_cycles(const SystolicMapping& m, const arch::HardwareModel& hw, double rate) {
  return fold_cycles(m, hw, rate, m.t);
}

std::uint64_t fold_cycles(const SystolicMapping& m, const arch::HardwareModel& hw, double rate,
                          std::uint64_t steps) {
  const std::uint64_t r = hw.rows(), c = hw.cols();
  const auto stream = static_cast<std::uint64_t>(std::ceil(static_cast<double>(steps) / rate));
  if (m.dataflow == arch::Dataflow::OutputStationary) return stream + r + c - 2;
  if (hw.weight_preload() == arch::WeightPreload::Overlapped)
    return std::max(stream, r) + r + c - 2;
  return stream + 2 * r + c - 2;
}

std::uint64_t first_load_cycles(const SystolicMapping& m, const arch::HardwareModel& hw) {
  return m.dataflow != arch::Dataflow::OutputStationary &&
                 hw.weight_preload() == arch::WeightPreload::Overlapped
             ? hw.rows()
             : 0;
}

bool groups_can_pack(const workload::Einsum& space) {
  using workload::TensorRole;
  bool any = false;
  for (std::size_t d = 0; d < space.dims.size(); ++d) {
    const bool out = workload::dim_indexes_role(space, d, TensorRole::Output);
    const bool in = workload::dim_indexes_role(space, d, TensorRole::Input);
    const bool weight = workload::dim_indexes_role(space, d, TensorRole::Weight);
    const bool batch = out && in == weight;  // gemm_view's batch: all three, or the output alone
    if (!batch || space.dims[d].extent == 1) continue;
    if (!in) return false;  // indexes the output alone: its groups share their operands
    any = true;
  }
  return any;
}

SystolicMapping with_packing(SystolicMapping m, const arch::HardwareModel& hw,
                             std::uint64_t packed) {
  CODA_CHECK(packed >= 1 && packed <= m.gemm.batch);
  const auto packed_extent = [&](GemmDim dim) {
    return extent(m.gemm, dim) * (dim == GemmDim::M ? 1 : packed);
  };
  m.packed = packed;
  m.sr = packed_extent(m.row_dim);
  m.sc = packed_extent(m.col_dim);
  m.t = packed_extent(m.time_dim);
  m.row_folds = ceil_div(m.sr, hw.rows());
  m.col_folds = ceil_div(m.sc, hw.cols());
  return m;
}

std::vector<std::uint64_t> packing_candidates(const SystolicMapping& m,
                                              const arch::HardwareModel& hw) {
  std::vector<std::uint64_t> out{1};
  if (m.gemm.batch <= 1 || !groups_can_pack(m.space)) return out;
  const std::uint64_t cap = std::min<std::uint64_t>(m.gemm.batch, std::max(hw.rows(), hw.cols()));
  for (std::uint64_t p = 2; p <= cap; ++p) out.push_back(p);
  return out;
}

SystolicMapping map_onto_array(const workload::Op& op, const arch::HardwareModel& hw,
                               std::optional<DataType> precision) {
  CODA_CHECK(op.kind == workload::OpKind::Contraction);
  const auto mapped = [&](bool groups_first) {
    SystolicMapping m;
    m.dataflow = hw.dataflow();
    m.gemm = workload::gemm_view(op);
    m.space = op.space;
    if (precision)
      for (workload::TensorAccess& access : m.space.accesses) access.dtype = *precision;
    const bool groups_split = groups_first && m.gemm.batch >= hw.arrays();
    const GemmDim larger = m.gemm.n >= m.gemm.m ? GemmDim::N : GemmDim::M;
    m.arrays = split_over_arrays(m.gemm, hw.arrays(), groups_first);
    if (m.arrays > 1 && !groups_split) m.split = larger;
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
    CODA_CHECK(m.gemm.m > 0 && m.gemm.n > 0 && m.gemm.k > 0 && m.gemm.batch > 0);
    return with_packing(std::move(m), hw, 1);
  };
  SystolicMapping groups = mapped(true);
  if (hw.arrays() <= 1 || groups.gemm.batch == workload::gemm_view(op).batch) return groups;
  // Groups over the arrays leave some arrays a group more than others when they do not divide
  // (4 experts on 3 arrays: 2, 1, 1); cutting every group's M or N instead keeps them even.
  // The split with fewer stall-free cycles per array wins, groups on a tie (no shared operand).
  SystolicMapping dims = mapped(false);
  const double rate = pe_rate(hw, precision.value_or(op.space.accesses.front().dtype));
  const auto cycles = [&](const SystolicMapping& m) {
    return m.gemm.batch * m.row_folds * m.col_folds * fold_cycles(m, hw, rate);
  };
  return cycles(dims) < cycles(groups) ? dims : groups;
}

std::uint64_t split_over_arrays(workload::GemmView& gemm, std::uint64_t arrays, bool groups_first) {
  if (arrays <= 1) return 1;
  // Groups first: independent GEMMs need no operand shared between arrays.
  if (groups_first && gemm.batch >= arrays) {
    gemm.batch = ceil_div(gemm.batch, arrays);
    return arrays;
  }
  std::uint64_t& dim = gemm.n >= gemm.m ? gemm.n : gemm.m;
  const std::uint64_t used = std::min(arrays, dim);
  dim = ceil_div(dim, used);
  return used;
}

}  // namespace coda::mapper
