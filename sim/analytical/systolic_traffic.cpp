#include "sim/analytical/systolic_traffic.h"

#include <algorithm>

#include "core/check.h"

namespace coda::sim::analytical {
namespace {

using mapper::GemmDim;
using mapper::SystolicMapping;
using workload::TensorRole;

std::uint64_t ceil_bytes(std::uint64_t bits) { return (bits + 7) / 8; }

std::size_t role_index(TensorRole role) {
  switch (role) {
    case TensorRole::Input: return 0;
    case TensorRole::Weight: return 1;
    case TensorRole::Output: return 2;
  }
  return 0;
}

// Which of the array's loops an operand's tile follows (its two GEMM dims; see
// systolic_model.cpp's table).
struct OperandShape {
  bool uses_rows = false;
  bool uses_cols = false;
  bool uses_time = false;
};

OperandShape shape_of(std::size_t operand, const SystolicMapping& m) {
  constexpr std::array<std::array<GemmDim, 2>, 3> kDims{{{GemmDim::M, GemmDim::K},
                                                         {GemmDim::K, GemmDim::N},
                                                         {GemmDim::M, GemmDim::N}}};
  OperandShape s;
  for (const GemmDim d : kDims[operand]) {
    s.uses_rows |= d == m.row_dim;
    s.uses_cols |= d == m.col_dim;
    s.uses_time |= d == m.time_dim;
  }
  return s;
}

std::uint64_t tile_words(const OperandShape& s, std::uint64_t rows_used, std::uint64_t cols_used,
                         std::uint64_t t) {
  return (s.uses_rows ? rows_used : 1) * (s.uses_cols ? cols_used : 1) * (s.uses_time ? t : 1);
}

}  // namespace

SystolicTraffic systolic_traffic(const SystolicMapping& m, const arch::HardwareModel& hw) {
  CODA_CHECK(!m.space.accesses.empty());
  const std::uint64_t rows = hw.rows(), cols = hw.cols();
  const std::uint64_t folds = m.row_folds * m.col_folds;
  const std::optional<std::uint64_t> word = hw.word_bytes();

  SystolicTraffic out;
  // Element sizes: the first access of each role (schema 1: the word).
  std::array<bool, 3> seen{};
  for (const workload::TensorAccess& access : m.space.accesses) {
    const std::size_t i = role_index(access.role);
    if (seen[i]) continue;
    seen[i] = true;
    out.element_bits[i] = word ? static_cast<std::uint32_t>(*word * 8) : bit_width(access.dtype);
  }
  for (std::size_t i = 0; i < 3; ++i)
    if (!seen[i]) out.element_bits[i] = word ? static_cast<std::uint32_t>(*word * 8) : 8;
  out.partial_sum_bits =
      word ? out.element_bits[2] : std::max(out.element_bits[2], arch::kAccumulatorBits);

  std::array<OperandShape, 3> shapes{};
  for (std::size_t i = 0; i < 3; ++i) shapes[i] = shape_of(i, m);
  constexpr arch::Operand kInputs[2] = {arch::Operand::Ifmap, arch::Operand::Filter};
  std::array<bool, 2> fits_whole{};
  for (std::size_t k = 0; k < 2; ++k)
    fits_whole[k] = ceil_bytes(tile_words(shapes[k], m.sr, m.sc, m.t) * out.element_bits[k]) <=
                    hw.working_bytes(kInputs[k]);
  const bool partial = !shapes[2].uses_rows && m.row_folds > 1;

  out.folds.resize(folds);
  std::array<std::uint64_t, 3> sram_bits{};
  for (std::uint64_t i = 0; i < folds; ++i) {
    const std::uint64_t c = i / m.row_folds, r = i % m.row_folds;
    const std::uint64_t rows_used = std::min(rows, m.sr - r * rows);
    const std::uint64_t cols_used = std::min(cols, m.sc - c * cols);
    FoldBytes& fold = out.folds[i];
    for (std::size_t k = 0; k < 2; ++k) {
      const OperandShape& s = shapes[k];
      const bool rows_only = s.uses_rows && !s.uses_cols;
      const bool cols_only = s.uses_cols && !s.uses_rows;
      const std::uint64_t tile =
          ceil_bytes(tile_words(s, rows_used, cols_used, m.t) * out.element_bits[k]);
      std::uint64_t fetched = tile;
      if (fits_whole[k]) {
        // Each distinct tile is fetched once and stays: a row-indexed tile is first seen while
        // c == 0, a column-indexed one while r == 0, a tile indexed by both in its own fold.
        if ((rows_only && c != 0) || (cols_only && r != 0)) fetched = 0;
      } else {
        // Otherwise only the previous fold's tile can still be there: a column-indexed tile
        // while r advances, a row-indexed tile when there is a single row fold. A tile larger
        // than the working half of its buffer streams through and is fetched again every fold.
        const bool same_as_previous =
            i != 0 && ((cols_only && r != 0) || (rows_only && m.row_folds == 1));
        if (same_as_previous && tile <= hw.working_bytes(kInputs[k])) fetched = 0;
      }
      (k == 0 ? fold.ifmap : fold.filter) = fetched;
      out.dram[k] += fetched;
    }
    // Outputs: partial sums of every row fold but the last, then the finished outputs.
    const bool finished = !partial || r + 1 == m.row_folds;
    const std::uint64_t bits = tile_words(shapes[2], rows_used, cols_used, m.t) *
                               (finished ? out.element_bits[2] : out.partial_sum_bits);
    sram_bits[2] += bits;
    fold.ofmap = ceil_bytes(bits);
    out.dram[2] += fold.ofmap;
  }

  // SRAM: each fold streams its input tiles into the array, summed in closed form.
  for (std::size_t k = 0; k < 2; ++k) {
    const OperandShape& s = shapes[k];
    // Its whole matrix, again for every row fold it does not follow and every column fold.
    const std::uint64_t words = (s.uses_rows ? m.sr : m.row_folds) *
                                (s.uses_cols ? m.sc : m.col_folds) * (s.uses_time ? m.t : 1);
    sram_bits[k] = words * out.element_bits[k];
  }
  for (std::size_t k = 0; k < 3; ++k) out.sram[k] = ceil_bytes(sram_bits[k]);
  return out;
}

}  // namespace coda::sim::analytical
