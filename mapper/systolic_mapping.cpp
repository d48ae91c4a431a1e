#include "mapper/systolic_mapping.h"

#include <fmt/format.h>

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

SystolicMapping map_onto_array(const workload::Op& op, const arch::HardwareModel& hw) {
  CODA_CHECK(op.kind == workload::OpKind::Contraction);
  SystolicMapping m;
  m.dataflow = hw.dataflow();
  m.gemm = workload::gemm_view(op);
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

Schedule schedule_graph(const workload::Graph& graph, const arch::HardwareModel& hw) {
  Schedule schedule{graph.name, {}, {}};
  schedule.ops.reserve(graph.ops.size());
  for (const workload::Op& op : graph.ops) {
    const std::string_view kind = workload::to_string(op.kind);
    const bool vowel = kind.find_first_of("aeiou") == 0;
    if (op.kind == workload::OpKind::Contraction) {
      schedule.ops.push_back({op.name, workload::mac_count(op), map_onto_array(op, hw)});
      continue;
    }
    schedule.unsupported.push_back(
        {op.name,
         fmt::format("{} op ({}) cannot run on '{}': a systolic array computes contractions "
                     "only, and this one has no vector unit",
                     fmt::format("{} {}", vowel ? "an" : "a", kind),
                     workload::to_string(op.function), hw.name()),
         op.source});
  }
  return schedule;
}

}  // namespace coda::mapper
