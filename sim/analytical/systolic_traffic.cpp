#include "sim/analytical/systolic_traffic.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/check.h"

namespace coda::sim::analytical {
namespace {

using mapper::GemmDim;
using mapper::SystolicMapping;
using workload::TensorRole;

// The GEMM view's axes: the batch (groups) and M', N', K'.
enum Axis : std::size_t { kBatch, kM, kN, kK, kAxes };

Axis axis_of(GemmDim dim) {
  switch (dim) {
    case GemmDim::M: return kM;
    case GemmDim::N: return kN;
    case GemmDim::K: return kK;
  }
  return kM;
}

// A half-open range of a flattened GEMM axis.
struct Range {
  std::uint64_t lo = 0, hi = 0;
  std::uint64_t size() const { return hi - lo; }
};
using GemmBox = std::array<Range, kAxes>;

std::uint64_t ceil_bytes(std::uint64_t bits) { return (bits + 7) / 8; }

constexpr std::uint64_t kAllOfT = ~std::uint64_t{0};  // a box's T range: all of it

// TensorRole is declared Input, Weight, Output (workloads/op.h): the ifmap, filter, ofmap order.
std::size_t role_index(TensorRole role) { return static_cast<std::size_t>(role); }

// Where tiles of the GEMM view sit in the op's tensors (see the header, "The footprint of a
// tile"). Holds scratch space, so one instance serves one evaluation.
//
// With `packed` > 1 groups side by side (mapper/systolic_mapping.h) a box's N' and K' ranges are
// of the packed GEMM: each flattens the batch dims (outermost) and one group's N' (K') dims, so
// a range of it says which groups it covers as well. An access reached through a packed axis
// takes its groups from it (an access using both, the block-diagonal filter, from the groups
// both cover); box[kBatch] is the pack, [0, packed). The block-diagonal filter is stored whole,
// zeros included (as the compilers that make it do): a tile of it is its words, dense.
class Footprints {
 public:
  Footprints(const workload::Einsum& space, std::uint64_t packed)
      : space_(space), packed_(packed) {
    const std::size_t n = space.dims.size();
    axis_of_dim_.resize(n);
    for (std::size_t d = 0; d < n; ++d) {
      // gemm_view's classes (workloads/op.h).
      const bool out = workload::dim_indexes_role(space, d, TensorRole::Output);
      const bool in = workload::dim_indexes_role(space, d, TensorRole::Input);
      const bool weight = workload::dim_indexes_role(space, d, TensorRole::Weight);
      const Axis axis = !out ? kK : in && !weight ? kM : weight && !in ? kN : kBatch;
      axis_of_dim_[d] = axis;
      axis_dims_[axis].push_back(d);
    }
    for (const workload::TensorAccess& access : space.accesses) {
      std::array<bool, kAxes> uses{};
      for (const workload::IndexExpr& index : access.indices)
        for (const workload::IndexTerm& term : index.terms)
          if (term.coefficient != 0 && term.dim < n) uses[axis_of_dim_[term.dim]] = true;
      uses_.push_back(uses);
      plain_.push_back(is_plain(access, uses) || (packed_ > 1 && uses[kN] && uses[kK]));
    }
    for (const Axis axis : {kN, kK}) {
      packed_dims_[axis] = axis_dims_[kBatch];
      packed_dims_[axis].insert(packed_dims_[axis].end(), axis_dims_[axis].begin(),
                                axis_dims_[axis].end());
    }
    dim_lo_.resize(n);
    dim_hi_.resize(n);
    digits_lo_.resize(n);
    digits_hi_.resize(n);
  }

  // Elements of access `a` a GEMM box touches: the smaller of its words and its bounding box.
  std::uint64_t elements(std::size_t a, const GemmBox& box) {
    if (empty(box)) return 0;
    if (plain_[a]) return words(a, box);
    return std::min(words(a, box), bounding_box(a, box, lo_a_, hi_a_));
  }

  // Elements of access `a` the union of two disjoint GEMM boxes touches: the smaller of their
  // words and of the union of their bounding boxes (inclusion-exclusion over the two boxes).
  std::uint64_t union_elements(std::size_t a, const GemmBox& first, const GemmBox& second) {
    if (empty(first)) return elements(a, second);
    if (empty(second)) return elements(a, first);
    const std::uint64_t both_words = words(a, first) + words(a, second);
    if (plain_[a]) return both_words;
    const std::uint64_t box_a = bounding_box(a, first, lo_a_, hi_a_);
    const std::uint64_t box_b = bounding_box(a, second, lo_b_, hi_b_);
    std::uint64_t common = 1;
    for (std::size_t r = 0; r < lo_a_.size(); ++r) {
      const std::int64_t lo = std::max(lo_a_[r], lo_b_[r]), hi = std::min(hi_a_[r], hi_b_[r]);
      common *= hi >= lo ? static_cast<std::uint64_t>(hi - lo + 1) : 0;
    }
    if (lo_a_.empty()) common = std::min(box_a, box_b);  // whole-tensor accesses
    return std::min(both_words, box_a + box_b - common);
  }

  // The product of the box's ranges over the axes the access's indices use (a packed axis's
  // range counts its groups' elements: the batch range is inside it).
  std::uint64_t words(std::size_t a, const GemmBox& box) const {
    const bool through_packed = packed_ > 1 && (uses_[a][kN] || uses_[a][kK]);
    std::uint64_t w = 1;
    for (std::size_t axis = 0; axis < kAxes; ++axis)
      if (uses_[a][axis] && !(axis == kBatch && through_packed)) w *= box[axis].size();
    return w;
  }

 private:
  // Whether every rank of the access is one dim of its own, with coefficient 1, no offset and
  // no clipping, and the access indexes every dim of the GEMM dims it uses (a GEMM operand, a
  // conv's filter and outputs): then distinct points of the iteration space are distinct
  // elements, and a tile touches exactly its words.
  bool is_plain(const workload::TensorAccess& access, const std::array<bool, kAxes>& uses) const {
    if (access.indices.size() != access.shape.size()) return false;
    std::vector<bool> used(space_.dims.size(), false);
    for (std::size_t r = 0; r < access.indices.size(); ++r) {
      const workload::IndexExpr& index = access.indices[r];
      if (index.offset != 0 || index.terms.size() != 1) return false;
      const workload::IndexTerm& term = index.terms.front();
      if (term.coefficient != 1 || term.dim >= used.size() || used[term.dim]) return false;
      if (space_.dims[term.dim].extent > access.shape[r]) return false;
      used[term.dim] = true;
    }
    for (std::size_t axis = 0; axis < kAxes; ++axis)
      if (uses[axis])
        for (const std::size_t d : axis_dims_[axis])
          if (!used[d]) return false;
    return true;
  }

  static bool empty(const GemmBox& box) {
    return std::any_of(box.begin(), box.end(), [](const Range& r) { return r.hi <= r.lo; });
  }

  // The bounding box of a range of a flattened axis (its op dims `dims`, outermost first), per
  // op dim: the dims before the first where the range's ends differ keep their one value, that
  // dim spans the ends' values, and the dims after it (faster-varying) span their whole extent.
  // The first `intersect` dims (a packed axis's batch dims) narrow the ranges they have.
  void set_dims(const std::vector<std::size_t>& dims, Range range, std::size_t intersect = 0) {
    std::uint64_t lo = range.lo, hi = range.hi - 1;
    for (std::size_t i = dims.size(); i-- > 0;) {
      const std::uint64_t extent = space_.dims[dims[i]].extent;
      digits_lo_[i] = lo % extent;
      digits_hi_[i] = hi % extent;
      lo /= extent;
      hi /= extent;
    }
    bool spread = false;
    for (std::size_t i = 0; i < dims.size(); ++i) {
      const std::size_t d = dims[i];
      std::uint64_t first = 0, last = space_.dims[d].extent - 1;
      if (!spread) {
        first = digits_lo_[i];
        last = digits_hi_[i];
        spread = digits_lo_[i] != digits_hi_[i];
      }
      if (i < intersect) {
        first = std::max(first, dim_lo_[d]);
        last = std::min(last, dim_hi_[d]);
        if (first > last) disjoint_ = true;
      }
      dim_lo_[d] = first;
      dim_hi_[d] = last;
    }
  }

  // Elements of access `a`'s bounding box over `box`; its per-rank ranges go to lo, hi. An
  // access without indices touches its whole tensor (as workload::tensor_bytes counts it).
  std::uint64_t bounding_box(std::size_t a, const GemmBox& box, std::vector<std::int64_t>& lo,
                             std::vector<std::int64_t>& hi) {
    const workload::TensorAccess& access = space_.accesses[a];
    lo.clear();
    hi.clear();
    if (access.indices.size() != access.shape.size()) {
      std::uint64_t all = 1;
      for (const std::uint64_t extent : access.shape) all *= extent;
      return all;
    }
    const bool packing = packed_ > 1;
    for (std::size_t axis = 0; axis < kAxes; ++axis)
      if (!axis_dims_[axis].empty() && !(packing && (axis == kN || axis == kK)))
        set_dims(axis_dims_[axis], box[axis]);
    disjoint_ = false;
    if (packing)
      for (const Axis axis : {kN, kK})
        if (uses_[a][axis]) set_dims(packed_dims_[axis], box[axis], axis_dims_[kBatch].size());
    if (disjoint_) {  // its packed axes cover no group in common
      lo.assign(access.shape.size(), 0);
      hi.assign(access.shape.size(), -1);
      return 0;
    }
    std::uint64_t count = 1;
    for (std::size_t r = 0; r < access.shape.size(); ++r) {
      std::int64_t first = access.indices[r].offset, last = access.indices[r].offset;
      for (const workload::IndexTerm& term : access.indices[r].terms) {
        const auto low = term.coefficient * static_cast<std::int64_t>(dim_lo_[term.dim]);
        const auto high = term.coefficient * static_cast<std::int64_t>(dim_hi_[term.dim]);
        first += std::min(low, high);
        last += std::max(low, high);
      }
      first = std::max<std::int64_t>(first, 0);
      last = std::min<std::int64_t>(last, static_cast<std::int64_t>(access.shape[r]) - 1);
      lo.push_back(first);
      hi.push_back(last);
      count *= last >= first ? static_cast<std::uint64_t>(last - first + 1) : 0;
    }
    return count;
  }

  const workload::Einsum& space_;
  std::uint64_t packed_ = 1;
  bool disjoint_ = false;
  std::vector<Axis> axis_of_dim_;
  std::array<std::vector<std::size_t>, kAxes> axis_dims_;
  std::array<std::vector<std::size_t>, kAxes> packed_dims_;  // kN, kK: batch dims, then its own
  std::vector<std::array<bool, kAxes>> uses_;
  std::vector<bool> plain_;
  std::vector<std::uint64_t> dim_lo_, dim_hi_, digits_lo_, digits_hi_;
  std::vector<std::int64_t> lo_a_, hi_a_, lo_b_, hi_b_;
};

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

}  // namespace

std::uint64_t fold_steps(const SystolicTraffic& traffic, const SystolicMapping& mapping,
                         std::uint64_t fold) {
  const std::uint64_t stripe = fold / mapping.row_folds % traffic.stripes;
  return std::min(mapping.t, (stripe + 1) * traffic.stripe) - stripe * traffic.stripe;
}

SystolicTraffic systolic_traffic(const SystolicMapping& m, const arch::HardwareModel& hw,
                                 std::array<bool, 3> on_chip) {
  CODA_CHECK(!m.space.accesses.empty());
  const std::uint64_t rows = hw.rows(), cols = hw.cols();
  const std::uint64_t folds = m.row_folds * m.col_folds;
  const std::optional<std::uint64_t> word = hw.word_bytes();

  SystolicTraffic out;
  // Element sizes: the first access of each role (schema 1: the word).
  std::array<bool, 3> seen{};
  // The accumulators' (C += A B) element bits, summed: each is read once per output tile.
  std::uint64_t accumulator_bits = 0;
  for (const workload::TensorAccess& access : m.space.accesses) {
    if (workload::is_accumulator(m.space, access)) {
      accumulator_bits += word ? *word * 8 : bit_width(access.dtype);
      continue;
    }
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
  const Axis row_axis = axis_of(m.row_dim), col_axis = axis_of(m.col_dim);
  const Axis time_axis = axis_of(m.time_dim);
  // A box of one pack's GEMM view: rows [r0, r1), columns [c0, c1), T [t0, t1) (all of it unless
  // a stripe), its groups.
  const auto box = [&](std::uint64_t r0, std::uint64_t r1, std::uint64_t c0, std::uint64_t c1,
                       std::uint64_t t0 = 0, std::uint64_t t1 = kAllOfT) {
    GemmBox b;
    b[kBatch] = {0, m.packed};
    b[row_axis] = {r0, r1};
    b[col_axis] = {c0, c1};
    b[time_axis] = {t0, std::min(t1, m.t)};
    return b;
  };

  Footprints footprints(m.space, m.packed);
  constexpr arch::Operand kInputs[2] = {arch::Operand::Ifmap, arch::Operand::Filter};
  // Bits of an input operand's accesses over one box, or over the union of two disjoint ones.
  const auto bits_of = [&](std::size_t operand, const GemmBox& first, const GemmBox* second) {
    std::uint64_t bits = 0;
    for (std::size_t a = 0; a < m.space.accesses.size(); ++a) {
      const workload::TensorAccess& access = m.space.accesses[a];
      if (role_index(access.role) != operand || workload::is_accumulator(m.space, access))
        continue;
      const std::uint64_t elements = second != nullptr
                                         ? footprints.union_elements(a, first, *second)
                                         : footprints.elements(a, first);
      bits += elements * (word ? *word * 8 : bit_width(m.space.accesses[a].dtype));
    }
    return bits;
  };

  // Each input's whole footprint (one pack of this array's slice), and whether it fits the
  // working part of its buffer.
  const std::array<std::uint64_t, 2> whole_bits{bits_of(0, box(0, m.sr, 0, m.sc), nullptr),
                                                 bits_of(1, box(0, m.sr, 0, m.sc), nullptr)};
  std::array<bool, 2> fits_whole{};
  for (std::size_t k = 0; k < 2; ++k)
    fits_whole[k] = ceil_bytes(whole_bits[k]) <= hw.working_bytes(kInputs[k]);

  // Outputs: partial sums add up over the row folds when the rows do not index the outputs.
  const bool partial = !shapes[2].uses_rows && m.row_folds > 1;
  const arch::MemoryLevelSpec* accumulator = hw.operand_level(arch::Operand::Ofmap);
  const std::uint64_t acc_working = hw.working_bytes(arch::Operand::Ofmap);
  if (partial) out.partial_sums = PartialSums::Accumulated;

  // Stripes (accumulation: stripes): when a column fold's cols used x T partial sums exceed the
  // accumulator's working part, T is cut into the largest stripes S whose S x cols used partial
  // sums fit it, and each stripe runs through every row fold before the next.
  out.stripe = m.t;
  const std::uint64_t cols_used = std::min(m.sc, cols);
  if (partial && accumulator != nullptr && hw.accumulation() == arch::Accumulation::Stripes &&
      ceil_bytes(cols_used * m.t * out.partial_sum_bits) > acc_working) {
    const std::uint64_t fits = acc_working * 8 / (cols_used * out.partial_sum_bits);
    if (fits > 0) out.stripe = fits;  // else not even one step fits: partial sums go to DRAM
  }
  out.stripes = (m.t + out.stripe - 1) / out.stripe;
  const bool striped = out.stripes > 1;

  // An operand indexed by the rows only (or the columns only) has one tile per row fold (column
  // fold), and the union of the tiles so far is a prefix of its rows (columns): both are
  // computed once per row (column) fold, not once per fold.
  const auto row_range = [&](std::uint64_t r) {
    return Range{r * rows, std::min(m.sr, r * rows + rows)};
  };
  const auto col_range = [&](std::uint64_t c) {
    return Range{c * cols, std::min(m.sc, c * cols + cols)};
  };
  struct PerFold {
    std::vector<std::uint64_t> tile_bytes;   // by row (column) fold
    std::vector<std::uint64_t> prefix_bits;  // by row (column) fold: the union of tiles 0..it
  };
  std::array<PerFold, 2> per_fold;
  for (std::size_t k = 0; k < 2; ++k) {
    const OperandShape& s = shapes[k];
    if (s.uses_rows == s.uses_cols) continue;  // indexed by both: per fold below
    const std::uint64_t n = s.uses_rows ? m.row_folds : m.col_folds;
    for (std::uint64_t j = 0; j < n; ++j) {
      const Range range = s.uses_rows ? row_range(j) : col_range(j);
      const GemmBox tile = s.uses_rows ? box(range.lo, range.hi, 0, m.sc)
                                       : box(0, m.sr, range.lo, range.hi);
      const GemmBox prefix = s.uses_rows ? box(0, range.hi, 0, m.sc) : box(0, m.sr, 0, range.hi);
      per_fold[k].tile_bytes.push_back(ceil_bytes(bits_of(k, tile, nullptr)));
      if (fits_whole[k]) per_fold[k].prefix_bits.push_back(bits_of(k, prefix, nullptr));
    }
  }

  out.folds.resize(folds * out.stripes);
  std::array<std::uint64_t, 2> seen_bits{};  // fits_whole: max U(j) so far
  std::array<std::uint64_t, 3> sram_bits{};
  std::uint64_t pc = 0, ps = 0, pr = 0;  // the previous fold's column fold, stripe, row fold
  // Striped: each input's column-fold footprint, computed once per column fold.
  std::array<std::uint64_t, 2> column_bytes{};
  for (std::uint64_t i = 0; i < out.folds.size(); ++i) {
    // Column fold outer, then stripe, then row fold (one stripe: SCALE-Sim's order).
    const std::uint64_t c = i / (out.stripes * m.row_folds);
    const std::uint64_t st = i / m.row_folds % out.stripes, r = i % m.row_folds;
    const std::uint64_t r0 = row_range(r).lo, r1 = row_range(r).hi;
    const std::uint64_t c0 = col_range(c).lo, c1 = col_range(c).hi;
    const std::uint64_t t0 = st * out.stripe, t1 = std::min(m.t, t0 + out.stripe);
    FoldBytes& fold = out.folds[i];
    for (std::size_t k = 0; k < 2; ++k) {
      const OperandShape& s = shapes[k];
      const bool rows_only = s.uses_rows && !s.uses_cols;
      const bool cols_only = s.uses_cols && !s.uses_rows;
      std::uint64_t fetched = 0;
      if (on_chip[k]) {
        // Already in the buffer: no fold fetches it.
      } else if (fits_whole[k] && striped) {
        // U(i) over the order column fold, stripe, row fold. The stationary tile (not indexed
        // by T): all rows of the earlier column folds, the rows so far of this one (all of them
        // after its first stripe). A streamed tile: every earlier stripe's (and column fold's)
        // rows or columns, and this stripe's so far.
        std::uint64_t union_bits = 0;
        if (!s.uses_time) {
          const GemmBox this_column = box(0, st > 0 ? m.sr : r1, c0, c1);
          union_bits = bits_of(k, box(0, m.sr, 0, c0), &this_column);
        } else if (s.uses_rows) {
          const GemmBox this_stripe = box(0, r1, 0, m.sc, t0, t1);
          const GemmBox earlier_stripes = box(0, m.sr, 0, m.sc, 0, t0);
          union_bits = c > 0 ? whole_bits[k] : bits_of(k, earlier_stripes, &this_stripe);
        } else {
          const GemmBox this_column = box(0, m.sr, c0, c1, 0, t1);
          union_bits = bits_of(k, box(0, m.sr, 0, c0), &this_column);
        }
        const std::uint64_t before = seen_bits[k];
        seen_bits[k] = std::max(before, union_bits);
        fetched = ceil_bytes(seen_bits[k]) - ceil_bytes(before);
      } else if (striped) {
        // The previous fold's tile is still there when it fits and no loop the operand's tile
        // follows has moved; a stationary tile stays for the column fold's later stripes when
        // the column fold's tiles of it all fit the working part.
        const std::uint64_t working = hw.working_bytes(kInputs[k]);
        const std::uint64_t tile_bytes = ceil_bytes(bits_of(
            k, box(s.uses_rows ? r0 : 0, s.uses_rows ? r1 : m.sr, s.uses_cols ? c0 : 0,
                   s.uses_cols ? c1 : m.sc, s.uses_time ? t0 : 0, s.uses_time ? t1 : m.t),
            nullptr));
        const bool same_as_previous = i != 0 && (!s.uses_rows || r == pr) &&
                                      (!s.uses_cols || c == pc) && (!s.uses_time || st == ps);
        if (!s.uses_time && (i == 0 || c != pc))
          column_bytes[k] = ceil_bytes(bits_of(k, box(0, m.sr, c0, c1), nullptr));
        const bool column_kept = !s.uses_time && st > 0 && column_bytes[k] <= working;
        fetched = (same_as_previous && tile_bytes <= working) || column_kept ? 0 : tile_bytes;
      } else if (fits_whole[k]) {
        // U(i): the union of the tiles of folds 0..i, as the operand sees it.
        std::uint64_t union_bits = 0;
        if (rows_only) {
          union_bits = c == 0 ? per_fold[k].prefix_bits[r] : whole_bits[k];
        } else if (cols_only) {
          union_bits = per_fold[k].prefix_bits[c];
        } else {
          const GemmBox earlier_columns = box(0, m.sr, 0, c0);
          const GemmBox this_column = box(0, r1, c0, c1);
          union_bits = bits_of(k, earlier_columns, &this_column);
        }
        const std::uint64_t before = seen_bits[k];
        seen_bits[k] = std::max(before, union_bits);
        fetched = ceil_bytes(seen_bits[k]) - ceil_bytes(before);
      } else {
        const bool same_as_previous =
            i != 0 && ((cols_only && r != 0) || (rows_only && m.row_folds == 1));
        const std::uint64_t tile_bytes =
            rows_only   ? per_fold[k].tile_bytes[r]
            : cols_only ? per_fold[k].tile_bytes[c]
                        : ceil_bytes(bits_of(k, box(r0, r1, c0, c1), nullptr));
        fetched = same_as_previous && tile_bytes <= hw.working_bytes(kInputs[k]) ? 0 : tile_bytes;
      }
      (k == 0 ? fold.ifmap : fold.filter) = fetched;
      out.dram[k] += fetched;
    }

    // Outputs: the fold's tile of the ofmap (rows x columns, or columns x its stripe of T).
    const std::uint64_t out_words = (shapes[2].uses_rows ? r1 - r0 : 1) *
                                    (shapes[2].uses_cols ? c1 - c0 : 1) *
                                    (shapes[2].uses_time ? t1 - t0 : 1);
    const bool finished = !partial || r + 1 == m.row_folds;
    const std::uint64_t bits =
        out_words * (finished ? out.element_bits[2] : out.partial_sum_bits);
    sram_bits[2] += bits;
    const bool held = accumulator != nullptr &&
                      ceil_bytes(out_words * out.partial_sum_bits) <= acc_working;
    if (partial && !held) out.partial_sums = PartialSums::ToDram;
    fold.ofmap = (finished && !on_chip[2]) || (!finished && !held) ? ceil_bytes(bits) : 0;
    out.dram[2] += fold.ofmap;
    // The output tile's earlier values, before the first fold that adds to it.
    if (accumulator_bits > 0 && (!partial || r == 0)) {
      const std::uint64_t acc = ceil_bytes(out_words * accumulator_bits);
      out.sram_accumulated += acc;
      fold.accumulated = on_chip[2] ? 0 : acc;
      out.dram_accumulated += fold.accumulated;
    }
    pc = c, ps = st, pr = r;
  }

  // SRAM: each fold streams its input tiles into the array (unrolled), summed in closed form.
  for (std::size_t k = 0; k < 2; ++k) {
    const OperandShape& s = shapes[k];
    // Its whole matrix, again for every row fold it does not follow and every column fold;
    // the stationary tile again for every stripe (the stripes of T partition a streamed one).
    const std::uint64_t words = (s.uses_rows ? m.sr : m.row_folds) *
                                (s.uses_cols ? m.sc : m.col_folds) *
                                (s.uses_time ? m.t : out.stripes);
    sram_bits[k] = words * out.element_bits[k];
  }
  for (std::size_t k = 0; k < 3; ++k) out.sram[k] = ceil_bytes(sram_bits[k]);

  // Said once per arch, whatever the op's shape (RunResult gathers the distinct notes).
  if (out.partial_sums == PartialSums::ToDram)
    out.note =
        accumulator == nullptr
            ? fmt::format("partial sums go to DRAM every row fold, {} bits each: '{}' has no "
                          "memory level holding outputs (an accumulator); reading them back is "
                          "not counted",
                          out.partial_sum_bits, hw.name())
            : fmt::format("partial sums go to DRAM every row fold, {} bits each, where a column "
                          "fold's tile of them exceeds the {} B working part of '{}'; reading "
                          "them back is not counted",
                          out.partial_sum_bits, acc_working, accumulator->name);
  return out;
}

}  // namespace coda::sim::analytical
