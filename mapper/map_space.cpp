#include "mapper/map_space.h"

#include <algorithm>
#include <functional>
#include <limits>

#include <fmt/format.h>

#include "core/check.h"

namespace coda::mapper {
namespace {

using Index = MapSpace::Index;

constexpr std::array<std::uint64_t, kMaxDims + 1> kFactorial = [] {
  std::array<std::uint64_t, kMaxDims + 1> f{};
  f[0] = 1;
  for (std::size_t i = 1; i <= kMaxDims; ++i) f[i] = f[i - 1] * i;
  return f;
}();

std::vector<std::uint64_t> divisors(std::uint64_t n) {
  std::vector<std::uint64_t> low;
  std::vector<std::uint64_t> high;
  for (std::uint64_t d = 1; d * d <= n; ++d) {
    if (n % d != 0) continue;
    low.push_back(d);
    if (d != n / d) high.push_back(n / d);
  }
  low.insert(low.end(), high.rbegin(), high.rend());
  return low;
}

// Calls `visit` with `prefix` extended by every ordered tuple of `slots` factors (slots >= 1)
// whose product is n; stops as soon as `visit` returns false, and then returns false.
bool for_each_factorization(std::uint64_t n, std::size_t slots, std::vector<std::uint64_t>& prefix,
                            const std::function<bool(std::vector<std::uint64_t>&)>& visit) {
  if (slots == 1) {
    prefix.push_back(n);
    const bool go_on = visit(prefix);
    prefix.pop_back();
    return go_on;
  }
  for (std::uint64_t f : divisors(n)) {
    prefix.push_back(f);
    const bool go_on = for_each_factorization(n / f, slots - 1, prefix, visit);
    prefix.pop_back();
    if (!go_on) return false;
  }
  return true;
}

bool multiply(Index& a, std::uint64_t b) { return !__builtin_mul_overflow(a, Index{b}, &a); }

}  // namespace

std::string to_string(MapSpace::Index index) {
  if (index == 0) return "0";
  std::string out;
  while (index != 0) {
    out += static_cast<char>('0' + static_cast<int>(index % 10));
    index /= 10;
  }
  std::reverse(out.begin(), out.end());
  return out;
}

std::optional<MapSpace> MapSpace::create(const workload::Einsum& einsum,
                                         const Hierarchy& hierarchy,
                                         const MapSpaceOptions& options, std::string& why) {
  MapSpace s;
  s.problem_ = compile_problem(einsum);
  s.hierarchy_ = hierarchy;
  const std::size_t n = hierarchy.levels.size();
  const std::size_t dims = s.problem_.dim_count;
  {
    // The trivial mapping (everything at DRAM) says whether the op and hierarchy fit the model.
    if (n == 0 || n > kMaxLevels) {
      why = n == 0 ? "the hierarchy has no levels"
                   : fmt::format("the hierarchy has {} levels, more than {}", n, kMaxLevels);
      return std::nullopt;
    }
    const MappingStatus status =
        check_resources(s.problem_, make_mapping(n, dims), hierarchy);
    if (status.reason == Infeasible::Unsupported || status.reason == Infeasible::Limits ||
        status.reason == Infeasible::Shape) {
      why = describe(status, hierarchy, einsum);
      return std::nullopt;
    }
  }

  for (std::size_t i = 0; i < n; ++i) {
    s.slots_.push_back({static_cast<std::uint8_t>(i), false});
    if (hierarchy.levels[i].fan_out > 1) s.slots_.push_back({static_cast<std::uint8_t>(i), true});
  }
  const std::size_t slot_count = s.slots_.size();

  for (std::size_t i = 0; i + 1 < n; ++i) {
    std::uint8_t mask = 0;
    if (options.explore_bypass)
      for (std::size_t t = 0; t < s.problem_.tensor_count; ++t)
        if ((hierarchy.levels[i].holds & s.problem_.tensors[t].role_bit) != 0)
          mask = static_cast<std::uint8_t>(mask | (1u << t));
    s.bypassable_[i] = mask;
  }

  // The smallest footprint a split can be checked against: everything bypassable bypassed.
  Mapping base = make_mapping(n, dims);
  for (std::size_t i = 0; i + 1 < n; ++i) base.levels[i].bypass = s.bypassable_[i];

  s.splits_.resize(dims);
  for (std::size_t d = 0; d < dims; ++d) {
    const std::uint64_t extent = s.problem_.extents[d];
    // Every split is checked alone (other dims at 1) as it is generated; only those that fit are
    // kept, so memory follows the kept splits and work is bounded by max_splits_per_dim.
    std::vector<std::vector<std::uint64_t>> kept;
    std::uint64_t generated = 0;
    bool ok = true;
    const std::function<bool(std::vector<std::uint64_t>&)> consider =
        [&](std::vector<std::uint64_t>& tuple) {
          if (++generated > options.max_splits_per_dim) {
            ok = false;
            return false;
          }
          Mapping m = base;
          for (std::size_t k = 0; k < slot_count; ++k) {
            LevelMapping& level = m.levels[s.slots_[k].level];
            (s.slots_[k].spatial ? level.spatial : level.temporal)[d] = tuple[k];
          }
          if (check_resources(s.problem_, m, hierarchy).ok()) kept.push_back(tuple);
          return true;
        };
    std::vector<std::uint64_t> prefix;
    for_each_factorization(extent, slot_count, prefix, consider);
    if (ok && options.imperfect && extent > 2 && divisors(extent).size() <= 4) {
      for (std::uint64_t t = 2; t < extent && ok; t *= 2) {
        if (extent % t == 0) continue;
        const std::uint64_t outer = (extent + t - 1) / t;
        for (std::size_t j = 1; j < slot_count && ok; ++j) {
          prefix.clear();
          for_each_factorization(t, j, prefix, [&](std::vector<std::uint64_t>& inner) {
            return for_each_factorization(outer, slot_count - j, inner, consider);
          });
        }
      }
      // An imperfect split can arise from two inner tiles (7 as 2x2x2 is t=2 and t=4).
      std::sort(kept.begin(), kept.end());
      kept.erase(std::unique(kept.begin(), kept.end()), kept.end());
    }
    if (!ok) {
      why = fmt::format("dim '{}' (extent {}) has more than {} splits over {} slots",
                        einsum.dims[d].name, extent, options.max_splits_per_dim, slot_count);
      return std::nullopt;
    }
    std::vector<std::uint64_t>& list = s.splits_[d];
    for (const auto& tuple : kept) {
      list.insert(list.end(), tuple.begin(), tuple.end());
      for (std::size_t k = 0; k < slot_count; ++k)
        if (!s.slots_[k].spatial && s.slots_[k].level > 0 && tuple[k] > 1)
          s.order_dims_[s.slots_[k].level] =
              static_cast<std::uint16_t>(s.order_dims_[s.slots_[k].level] | (1u << d));
    }
    if (list.empty()) {
      // No split fits even alone: keep the all-at-DRAM one so the space is well formed; every
      // point is then invalid and next_valid says so.
      for (std::size_t k = 0; k < slot_count; ++k)
        list.push_back(k + 1 == slot_count ? extent : 1);
    }
  }

  // Digits, most significant first.
  for (std::size_t i = 0; i + 1 < n; ++i) {
    const int count = __builtin_popcount(s.bypassable_[i]);
    if (count > 0) {
      s.layout_.push_back({DigitKind::Bypass, static_cast<std::uint8_t>(i)});
      s.radices_.push_back(std::uint64_t{1} << count);
    }
  }
  for (std::size_t d = 0; d < dims; ++d) {
    if (s.splits(d) > 1) {
      s.layout_.push_back({DigitKind::Factor, static_cast<std::uint8_t>(d)});
      s.radices_.push_back(s.splits(d));
    }
  }
  for (std::size_t i = n; i-- > 1;) {
    const int count = __builtin_popcount(s.order_dims_[i]);
    if (count > 1 && options.explore_orders) {
      s.layout_.push_back({DigitKind::Order, static_cast<std::uint8_t>(i)});
      s.radices_.push_back(kFactorial[static_cast<std::size_t>(count)]);
    }
  }
  CODA_CHECK(s.layout_.size() <= kMaxDigits);
  s.place_.assign(s.layout_.size(), 1);
  Index size = 1;
  for (std::size_t p = s.layout_.size(); p-- > 0;) {
    s.place_[p] = size;
    if (!multiply(size, s.radices_[p])) {
      why = "the map space has more than 2^128 points; constrain the op or the hierarchy";
      return std::nullopt;
    }
  }
  s.size_ = size;
  // The base of every decode and prefix check: a dim with a single split has it; every other dim
  // sits wholly in DRAM's temporal loop (factor 1 on every constrained slot), so a prefix check
  // with it unapplied is a lower bound.
  s.base_ = make_mapping(n, dims);
  for (std::size_t d = 0; d < dims; ++d) {
    if (s.splits(d) == 1)
      s.apply_split(d, 0, s.base_);
    else
      s.base_.levels[n - 1].temporal[d] = s.problem_.extents[d];
  }
  return s;
}

void MapSpace::to_digits(Index index, DigitArray& out) const {
  constexpr Index kMax64 = std::numeric_limits<std::uint64_t>::max();
  std::size_t p = 0;
  // 128-bit division is a library call: divide in 128 bits only while the index needs them.
  for (; p < layout_.size() && index > kMax64; ++p) {
    out[p] = static_cast<std::uint64_t>(index / place_[p]);
    index %= place_[p];
  }
  auto rest = static_cast<std::uint64_t>(index);
  for (; p < layout_.size(); ++p) {
    if (place_[p] > kMax64) {
      out[p] = 0;
      continue;
    }
    const auto place = static_cast<std::uint64_t>(place_[p]);
    out[p] = rest / place;
    rest %= place;
  }
}

MapSpace::Index MapSpace::from_digits(const DigitArray& digits) const {
  Index index = 0;
  for (std::size_t p = 0; p < layout_.size(); ++p) index += Index{digits[p]} * place_[p];
  return index;
}

std::vector<std::uint64_t> MapSpace::digits(Index index) const {
  DigitArray d{};
  to_digits(index, d);
  return {d.begin(), d.begin() + static_cast<std::ptrdiff_t>(layout_.size())};
}

MapSpace::Index MapSpace::index(std::span<const std::uint64_t> digits) const {
  CODA_CHECK(digits.size() == layout_.size());
  DigitArray d{};
  for (std::size_t p = 0; p < digits.size(); ++p) {
    CODA_CHECK(digits[p] < radices_[p]);
    d[p] = digits[p];
  }
  return from_digits(d);
}

void MapSpace::apply_bypass(const DigitArray& digits, Mapping& m) const {
  for (std::size_t p = 0; p < layout_.size() && layout_[p].kind == DigitKind::Bypass; ++p) {
    const std::size_t level = layout_[p].index;
    std::uint8_t bypass = 0;
    std::uint64_t bits = digits[p];
    for (std::size_t t = 0; t < kMaxTensors; ++t) {
      if (((static_cast<unsigned>(bypassable_[level]) >> t) & 1U) == 0) continue;
      if ((bits & 1u) != 0) bypass = static_cast<std::uint8_t>(bypass | (1u << t));
      bits >>= 1;
    }
    m.levels[level].bypass = bypass;
  }
}

void MapSpace::apply_split(std::size_t dim, std::uint64_t split, Mapping& m) const {
  const std::size_t slot_count = slots_.size();
  const std::uint64_t* tuple = splits_[dim].data() + split * slot_count;
  for (std::size_t k = 0; k < slot_count; ++k) {
    LevelMapping& level = m.levels[slots_[k].level];
    (slots_[k].spatial ? level.spatial : level.temporal)[dim] = tuple[k];
  }
}

bool MapSpace::apply_orders(const DigitArray& digits, Mapping& m, int* bad) const {
  const std::size_t dims = problem_.dim_count;
  std::array<std::uint64_t, kMaxLevels> code{};
  std::array<int, kMaxLevels> position{};
  position.fill(-1);
  for (std::size_t p = 0; p < layout_.size(); ++p) {
    if (layout_[p].kind != DigitKind::Order) continue;
    code[layout_[p].index] = digits[p];
    position[layout_[p].index] = static_cast<int>(p);
  }
  bool canonical = true;
  for (std::size_t i = 0; i < m.level_count; ++i) {
    LevelMapping& level = m.levels[i];
    std::array<std::uint8_t, kMaxDims> tiled;  // entries < k written first
    std::size_t k = 0;
    std::size_t at = 0;
    for (std::size_t d = 0; d < dims; ++d) {
      if (level.temporal[d] > 1)
        tiled[k++] = static_cast<std::uint8_t>(d);
      else
        level.order[at++] = static_cast<std::uint8_t>(d);
    }
    std::uint64_t c = code[i];
    if (c >= kFactorial[k]) {
      // Not canonical; the order written is the code modulo k!, so `m` stays well formed. The
      // most significant offending digit is the one reported.
      if (bad != nullptr && (canonical || position[i] < *bad)) *bad = position[i];
      canonical = false;
      c %= kFactorial[k];
    }
    for (std::size_t remaining = k; remaining > 0; --remaining) {
      const std::uint64_t f = kFactorial[remaining - 1];
      const auto pick = static_cast<std::size_t>(c / f);
      c %= f;
      level.order[at++] = tiled[pick];
      for (std::size_t j = pick; j + 1 < remaining; ++j) tiled[j] = tiled[j + 1];
    }
  }
  return canonical;
}

int MapSpace::first_bad(const DigitArray& digits) const {
  // Fast path: the whole tiling.
  Mapping full = base_;
  apply_bypass(digits, full);
  for (std::size_t p = 0; p < layout_.size(); ++p)
    if (layout_[p].kind == DigitKind::Factor) apply_split(layout_[p].index, digits[p], full);
  if (!check_resources(problem_, full, hierarchy_).ok()) {
    // Find the shortest failing prefix: bypass alone, then one factor digit at a time. Dims not
    // yet applied stay wholly in DRAM's temporal loop (base_).
    Mapping m = base_;
    apply_bypass(digits, m);
    int last_bypass = -2;
    std::size_t p = 0;
    for (; p < layout_.size() && layout_[p].kind == DigitKind::Bypass; ++p)
      last_bypass = static_cast<int>(p);
    if (!check_resources(problem_, m, hierarchy_).ok()) return last_bypass;
    for (; p < layout_.size() && layout_[p].kind == DigitKind::Factor; ++p) {
      apply_split(layout_[p].index, digits[p], m);
      if (!check_resources(problem_, m, hierarchy_).ok()) return static_cast<int>(p);
    }
    return last_bypass;  // not reached: the full tiling failed
  }
  int bad = -1;
  apply_orders(digits, full, &bad);
  return bad;
}

MapSpace::Index MapSpace::next_valid(Index from) const {
  if (from >= size_) return size_;
  DigitArray digits{};
  to_digits(from, digits);
  while (true) {
    const int bad = first_bad(digits);
    if (bad == -1) return from_digits(digits);
    if (bad == -2) return size_;
    auto p = static_cast<std::size_t>(bad);
    for (std::size_t q = p + 1; q < layout_.size(); ++q) digits[q] = 0;
    // An order digit at or above k! stays invalid up to its radix: carry straight away.
    if (layout_[p].kind == DigitKind::Order) digits[p] = radices_[p] - 1;
    while (true) {
      if (++digits[p] < radices_[p]) break;
      digits[p] = 0;
      if (p == 0) return size_;
      --p;
    }
  }
}

std::optional<std::uint64_t> MapSpace::find_split(std::size_t dim,
                                                 std::span<const std::uint64_t> factors) const {
  CODA_CHECK(factors.size() == slots_.size());
  const std::size_t width = slots_.size();
  const std::vector<std::uint64_t>& list = splits_[dim];
  std::size_t lo = 0;
  std::size_t hi = list.size() / width;
  while (lo < hi) {  // the first split not below `factors`
    const std::size_t mid = lo + (hi - lo) / 2;
    const auto at = list.begin() + static_cast<std::ptrdiff_t>(mid * width);
    if (std::lexicographical_compare(at, at + static_cast<std::ptrdiff_t>(width), factors.begin(),
                                     factors.end()))
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo == list.size() / width) return std::nullopt;
  const auto at = list.begin() + static_cast<std::ptrdiff_t>(lo * width);
  if (!std::equal(factors.begin(), factors.end(), at)) return std::nullopt;
  return lo;
}

MappingStatus MapSpace::decode(Index index, Mapping& out) const {
  CODA_CHECK(index < size_);
  DigitArray digits;  // to_digits writes every digit of the layout
  to_digits(index, digits);
  out = base_;
  apply_bypass(digits, out);
  for (std::size_t p = 0; p < layout_.size(); ++p)
    if (layout_[p].kind == DigitKind::Factor) apply_split(layout_[p].index, digits[p], out);
  int bad = -1;
  const bool canonical = apply_orders(digits, out, &bad);
  const MappingStatus status = check_resources(problem_, out, hierarchy_);
  if (!status.ok()) return status;
  if (!canonical) {
    MappingStatus s;
    s.reason = Infeasible::NotCanonical;
    return s;
  }
  return status;
}

std::optional<Mapping> MapSpace::at(Index index) const {
  Mapping m;
  if (!decode(index, m).ok()) return std::nullopt;
  return m;
}

std::optional<MapSpace::Index> MapSpace::sample(std::mt19937_64& rng, SampleMode mode,
                                                std::uint32_t attempts) const {
  DigitArray digits{};
  const auto draw = [&](std::uint64_t radix) {
    return std::uniform_int_distribution<std::uint64_t>(0, radix - 1)(rng);
  };
  for (std::uint32_t a = 0; a < attempts; ++a) {
    if (mode == SampleMode::Uniform) {
      for (std::size_t p = 0; p < layout_.size(); ++p) digits[p] = draw(radices_[p]);
      if (first_bad(digits) == -1) return from_digits(digits);
      continue;
    }
    for (std::size_t p = 0; p < layout_.size(); ++p)
      digits[p] = layout_[p].kind == DigitKind::Order ? 0 : draw(radices_[p]);
    if (first_bad(digits) != -1) continue;  // orders at 0 are always canonical
    Mapping m = base_;
    for (std::size_t p = 0; p < layout_.size(); ++p)
      if (layout_[p].kind == DigitKind::Factor) apply_split(layout_[p].index, digits[p], m);
    for (std::size_t p = 0; p < layout_.size(); ++p) {
      if (layout_[p].kind != DigitKind::Order) continue;
      const LevelMapping& level = m.levels[layout_[p].index];
      std::size_t k = 0;
      for (std::size_t d = 0; d < problem_.dim_count; ++d) if (level.temporal[d] > 1) ++k;
      digits[p] = draw(kFactorial[k]);
    }
    return from_digits(digits);
  }
  return std::nullopt;
}

MappingCost evaluate_point(const MapSpace& space, MapSpace::Index index) {
  Mapping m;
  const MappingStatus status = space.decode(index, m);
  if (!status.ok()) {
    MappingCost cost;
    cost.status = status;
    return cost;
  }
  return evaluate(space.problem(), m, space.hierarchy());
}

}  // namespace coda::mapper
