#include "sim/analytical/systolic_model.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "core/check.h"

namespace coda::sim::analytical {
namespace {

using arch::Operand;
using mapper::GemmDim;
using mapper::SystolicMapping;

constexpr std::array<Operand, 3> kOperands{Operand::Ifmap, Operand::Filter, Operand::Ofmap};

const char* operand_name(Operand operand) {
  switch (operand) {
    case Operand::Ifmap: return "ifmap";
    case Operand::Filter: return "filter";
    case Operand::Ofmap: return "ofmap";
  }
  return "?";
}

// The two GEMM dims an operand is indexed by: ifmap A[m][k], filter B[k][n], ofmap C[m][n].
std::array<GemmDim, 2> operand_dims(Operand operand) {
  switch (operand) {
    case Operand::Ifmap: return {GemmDim::M, GemmDim::K};
    case Operand::Filter: return {GemmDim::K, GemmDim::N};
    case Operand::Ofmap: return {GemmDim::M, GemmDim::N};
  }
  return {GemmDim::M, GemmDim::N};
}

// Where an operand's tile sits relative to the fold loop.
struct OperandShape {
  bool uses_rows = false;  // indexed by the dim on the array rows: changes with the row fold
  bool uses_cols = false;  // indexed by the dim on the array columns: changes with the col fold
  bool uses_time = false;  // indexed by the streamed dim: every tile spans all of T
};

OperandShape shape_of(Operand operand, const SystolicMapping& m) {
  OperandShape s;
  for (const GemmDim d : operand_dims(operand)) {
    s.uses_rows |= d == m.row_dim;
    s.uses_cols |= d == m.col_dim;
    s.uses_time |= d == m.time_dim;
  }
  return s;
}

struct Fold {
  std::uint64_t rows_used;
  std::uint64_t cols_used;
};

std::uint64_t tile_words(const OperandShape& s, const Fold& f, std::uint64_t t) {
  return (s.uses_rows ? f.rows_used : 1) * (s.uses_cols ? f.cols_used : 1) * (s.uses_time ? t : 1);
}

// The words of one operand's whole matrix for one group.
std::uint64_t matrix_words(const OperandShape& s, const SystolicMapping& m) {
  return (s.uses_rows ? m.sr : 1) * (s.uses_cols ? m.sc : 1) * (s.uses_time ? m.t : 1);
}

// Words fetched from DRAM for input operand `s` before fold (r, c). Folds run c outer, r inner,
// so the previous fold is (r-1, c), or (last row fold, c-1) when r == 0.
std::uint64_t fetch_words(const OperandShape& s, std::uint64_t r, std::uint64_t c,
                          bool first_of_group, std::uint64_t row_folds, std::uint64_t tile,
                          bool fits_whole, std::uint64_t working) {
  const bool rows_only = s.uses_rows && !s.uses_cols;
  const bool cols_only = s.uses_cols && !s.uses_rows;
  if (fits_whole) {
    // Each distinct tile is fetched once and stays: a row-indexed tile is first seen while
    // c == 0, a column-indexed one while r == 0, a tile indexed by both in its own fold.
    if (rows_only) return c == 0 ? tile : 0;
    if (cols_only) return r == 0 ? tile : 0;
    return tile;
  }
  // Otherwise only the previous fold's tile can still be there: a column-indexed tile while r
  // advances, a row-indexed tile when there is a single row fold. A tile larger than the working
  // half of its SRAM streams through and is fetched again every fold.
  const bool same_as_previous =
      !first_of_group && ((cols_only && r != 0) || (rows_only && row_folds == 1));
  return same_as_previous && tile <= working ? 0 : tile;
}

}  // namespace

double pe_rate(const arch::HardwareModel& hw, DataType precision) {
  const arch::ComputeUnitSpec* unit = hw.matrix_unit();
  if (unit == nullptr || hw.spec().schema_version == 1) return 1.0;
  const auto rate = unit->rates.find(precision);
  return rate == unit->rates.end() || rate->second <= 0 ? 1.0 : rate->second;
}

std::uint64_t fold_cycles(const SystolicMapping& m, const arch::HardwareModel& hw, double rate) {
  const std::uint64_t r = hw.rows(), c = hw.cols();
  const auto stream = static_cast<std::uint64_t>(std::ceil(static_cast<double>(m.t) / rate));
  return m.dataflow == arch::Dataflow::OutputStationary ? stream + r + c - 2
                                                        : stream + 2 * r + c - 2;
}

results::OpResult evaluate_systolic(const mapper::ScheduledOp& op, const arch::HardwareModel& hw) {
  const SystolicMapping& m = op.mapping;
  const std::uint64_t rows = hw.rows(), cols = hw.cols();
  const std::uint64_t folds_per_group = m.row_folds * m.col_folds;
  const std::uint64_t groups = m.gemm.batch;
  const double rate = pe_rate(hw, op.precision);
  const std::uint64_t per_fold = fold_cycles(m, hw, rate);
  const std::uint64_t word = hw.word_bytes();

  results::OpResult out;
  out.name = op.name;
  out.unit = "systolic";
  out.mapping = {{"Sr", m.sr},          {"Sc", m.sc},          {"T", m.t},
                 {"row_folds", m.row_folds}, {"col_folds", m.col_folds}, {"groups", groups}};
  if (m.arrays > 1) out.mapping.emplace_back("arrays", m.arrays);
  out.cost.macs = op.macs;
  out.cost.compute_cycles = Cycles{groups * folds_per_group * per_fold};

  // SRAM: a fold moves each operand's tile once; summed over folds in closed form.
  std::array<std::uint64_t, 3> sram_words{};
  std::array<OperandShape, 3> shapes{};
  for (std::size_t i = 0; i < kOperands.size(); ++i) {
    const OperandShape s = shape_of(kOperands[i], m);
    shapes[i] = s;
    std::uint64_t per_group = matrix_words(s, m);
    if (!s.uses_rows) per_group *= m.row_folds;  // streamed again for every row fold
    if (!s.uses_cols) per_group *= m.col_folds;  // streamed again for every column fold
    sram_words[i] = per_group * groups;
  }

  // DRAM: walk the folds (groups, then c outer, r inner) with O(1) work each.
  std::array<bool, 2> fits_whole{};
  for (std::size_t i = 0; i < fits_whole.size(); ++i)
    fits_whole[i] = matrix_words(shapes[i], m) <= hw.working_words(kOperands[i]);
  std::array<std::uint64_t, 3> dram_words{};
  struct FoldIo {
    double in_bytes = 0.0;   // fetched before the fold can start
    double out_bytes = 0.0;  // written back after it
  };
  auto fold_io = [&](std::uint64_t index) {  // index over all groups' folds
    const std::uint64_t in_group = index % folds_per_group;
    const std::uint64_t c = in_group / m.row_folds, r = in_group % m.row_folds;
    const Fold f{std::min(rows, m.sr - r * rows), std::min(cols, m.sc - c * cols)};
    FoldIo io;
    for (std::size_t i = 0; i < fits_whole.size(); ++i) {
      const std::uint64_t words = fetch_words(shapes[i], r, c, in_group == 0, m.row_folds,
                                              tile_words(shapes[i], f, m.t), fits_whole[i],
                                              hw.working_words(kOperands[i]));
      dram_words[i] += words;
      io.in_bytes += static_cast<double>(words * word);
    }
    const std::uint64_t out_words = tile_words(shapes[2], f, m.t);
    dram_words[2] += out_words;
    io.out_bytes = static_cast<double>(out_words * word);
    return io;
  };

  // Time the folds on one DRAM channel of `bw` bytes per cycle (see the header). Unlimited
  // bandwidth still walks the folds to count the traffic.
  // Each of the arrays running a slice in parallel has an equal share of the chip's DRAM.
  std::optional<double> bw = hw.achievable_dram_bytes_per_cycle();
  if (bw) *bw /= static_cast<double>(m.arrays);
  const double b = bw.value_or(1.0);
  const double compute_per_fold = static_cast<double>(per_fold);
  const std::uint64_t folds = groups * folds_per_group;
  FoldIo current = fold_io(0);
  double time = hw.double_buffered() ? current.in_bytes / b : 0.0;
  double previous_out = 0.0;
  for (std::uint64_t i = 0; i < folds; ++i) {
    const FoldIo next = i + 1 < folds ? fold_io(i + 1) : FoldIo{};
    if (hw.double_buffered())
      time += std::max(compute_per_fold, (next.in_bytes + previous_out) / b);
    else
      time += (current.in_bytes + current.out_bytes) / b + compute_per_fold;
    previous_out = current.out_bytes;
    current = next;
  }
  if (hw.double_buffered()) time += previous_out / b;

  const std::uint64_t compute = out.cost.compute_cycles.value;
  const std::uint64_t total =
      bw ? std::max<std::uint64_t>(compute, static_cast<std::uint64_t>(std::ceil(time - 1e-9)))
         : compute;
  out.cost.cycles = Cycles{total};
  out.cost.stall_cycles = Cycles{total - compute};

  // Every array moves its own slice's traffic.
  for (std::size_t i = 0; i < kOperands.size(); ++i) {
    const bool is_output = kOperands[i] == Operand::Ofmap;
    const Bytes sram{sram_words[i] * word * m.arrays};
    const Bytes dram{dram_words[i] * word * m.arrays};
    out.traffic.push_back({operand_name(kOperands[i]), "sram", is_output ? Bytes{} : sram,
                           is_output ? sram : Bytes{}});
    out.traffic.push_back({operand_name(kOperands[i]), "dram", is_output ? Bytes{} : dram,
                           is_output ? dram : Bytes{}});
    if (is_output) {
      out.cost.sram_writes += sram;
      out.cost.dram_writes += dram;
    } else {
      out.cost.sram_reads += sram;
      out.cost.dram_reads += dram;
    }
  }

  const double pes = static_cast<double>(hw.processing_elements());
  out.mapping_efficiency = static_cast<double>(m.sr * m.sc) /
                           static_cast<double>(m.row_folds * rows * m.col_folds * cols);
  out.compute_utilization =
      static_cast<double>(op.macs) / (pes * rate * static_cast<double>(compute));
  const double dram_bytes =
      static_cast<double>(out.cost.dram_reads.value + out.cost.dram_writes.value);
  out.arithmetic_intensity = dram_bytes > 0 ? static_cast<double>(op.macs) / dram_bytes : 0.0;
  // Memory-bound when moving the DRAM bytes at full bandwidth takes longer than computing.
  out.bound = bw && dram_bytes / (*bw * static_cast<double>(m.arrays)) >
                        static_cast<double>(compute) ? results::Bound::Memory
                                                                     : results::Bound::Compute;
  CODA_CHECK(out.cost.cycles >= out.cost.compute_cycles);
  return out;
}

}  // namespace coda::sim::analytical
