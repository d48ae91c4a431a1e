#pragma once
// The space of loop-nest mappings of one op on one hierarchy, indexed by an integer so a search
// can split it across threads (ranges of indices), walk it exhaustively (next_valid) or sample it
// (sample), and name every point it asks about (the ask/tell loop of mapper/search.h's design).
//
// A point is a mixed-radix number; its digits, most significant first:
//   bypass  one per level below DRAM, only with MapSpaceOptions::explore_bypass: which of the
//           tensors the level could hold it skips (radix 2^tensors the level holds)
//   factor  one per dim: which split of the dim's extent over the slots (each level's temporal
//           factor, and its spatial factor where its fan-out is above 1), from a list built once:
//           every ordered factorization of the extent into divisors, plus, for an extent with at
//           most 4 divisors (a prime, p*q, p^2, p^3; option `imperfect`), the ceil splits: an
//           inner tile t (a power of two that does not divide the extent) factored over the
//           inner slots and ceil(extent / t) over the outer ones, so only the last tile is
//           partial and none is empty. Splits whose spatial factor exceeds a fan-out, or whose
//           tiles alone overflow a level, are dropped from the list.
//   order   one per level above 0 whose temporal slot some split uses: radix C! for C such dims.
//           For a given split only the k dims that level actually tiles are loops, and only
//           digits below k! are valid (their Lehmer code orders the k dims; the level's other dims
//           stand outermost in ascending order), so each distinct loop order appears once. Level
//           0's order never matters (the PEs below it hold nothing) and has no digit.
// A point is valid when its tiles fit every level and its spatial factors every fan-out (the
// same check as evaluate()), and its order digits are canonical. Validity is monotone in the
// factor digits' prefix (tiles only grow as dims are added), which is how next_valid skips
// whole blocks: a prefix of dims that already overflows a level skips every point below it.
//
// Thread safety: every member is const after create(); share one MapSpace between threads.

#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "mapper/loop_nest_model.h"
#include "mapper/mapping.h"
#include "workloads/op.h"

namespace coda::mapper {

struct MapSpaceOptions {
  bool imperfect = true;         // add ceil splits for extents with at most 4 divisors
  bool explore_bypass = false;   // false: every level keeps every tensor whose role it holds
  // false: no order digits; every level runs its loops in ascending dim order (the order that
  // order digit 0 stands for), so the space is the tilings alone.
  bool explore_orders = true;
  // A dim whose split list would grow beyond this makes create() fail with a reason.
  std::uint64_t max_splits_per_dim = std::uint64_t{1} << 22;
};

enum class SampleMode : std::uint8_t {
  // Digits drawn uniformly; a draw that is not a valid point is drawn again. Uniform over the
  // valid points, but slow where few order digits are canonical (many dims, few tiled).
  Uniform,
  // A valid tiling (bypass and factor digits) drawn uniformly, then one of its distinct loop
  // orders uniformly: never wastes a draw on an order, but a tiling's points share its weight.
  PerChoice,
};

class MapSpace {
 public:
  __extension__ using Index = unsigned __int128;

  // Fails (nullopt and `why`) when the op cannot be compiled (limits, non-affine accesses), the
  // hierarchy cannot run it, a split list or the index space is too large.
  static std::optional<MapSpace> create(const workload::Einsum& einsum, const Hierarchy& hierarchy,
                                        const MapSpaceOptions& options, std::string& why);

  // Points in [0, size()); the valid ones are a subset.
  Index size() const { return size_; }
  // The smallest valid point >= from, or size() when there is none.
  Index next_valid(Index from) const;
  // Writes the point's mapping to `out` and says whether it is valid (capacity, fan-out, a
  // canonical order); `out` is complete either way. No allocation. Precondition: index < size().
  MappingStatus decode(Index index, Mapping& out) const;
  // The point's mapping when it is valid.
  std::optional<Mapping> at(Index index) const;
  // A valid point, or nullopt after `attempts` draws found none.
  std::optional<Index> sample(std::mt19937_64& rng, SampleMode mode = SampleMode::PerChoice,
                              std::uint32_t attempts = 100000) const;

  // Digits, most significant first, for searches that mutate points (genetic, annealing).
  std::span<const std::uint64_t> radices() const { return radices_; }
  std::vector<std::uint64_t> digits(Index index) const;
  Index index(std::span<const std::uint64_t> digits) const;

  // What each digit chooses, for searches that make structured moves (move a factor from one
  // slot to another, reorder one level's loops) instead of drawing a digit's value blindly.
  enum class DigitKind : std::uint8_t { Bypass, Factor, Order };
  struct Digit {
    DigitKind kind = DigitKind::Factor;
    std::uint8_t index = 0;  // level (Bypass, Order) or dim (Factor)
  };
  std::span<const Digit> layout() const { return layout_; }

  const LoopNestProblem& problem() const { return problem_; }
  const Hierarchy& hierarchy() const { return hierarchy_; }
  // The splits of a dim: each `slot_count()` factors, slot s at level slot_level(s) (its
  // temporal factor, or its spatial one where slot_spatial(s)). A dim with one split has no
  // factor digit; its split is 0. A dim's splits are in ascending lexicographic order of their
  // factor tuples, so find_split is a binary search.
  std::size_t splits(std::size_t dim) const { return splits_[dim].size() / slots_.size(); }
  std::size_t slot_count() const { return slots_.size(); }
  std::size_t slot_level(std::size_t slot) const { return slots_[slot].level; }
  bool slot_spatial(std::size_t slot) const { return slots_[slot].spatial; }
  std::span<const std::uint64_t> split(std::size_t dim, std::size_t s) const {
    return std::span<const std::uint64_t>(splits_[dim]).subspan(s * slots_.size(), slots_.size());
  }
  // The split of `dim` with exactly these factors (slot_count() of them), if the list has it.
  std::optional<std::uint64_t> find_split(std::size_t dim,
                                          std::span<const std::uint64_t> factors) const;

 private:
  struct Slot {
    std::uint8_t level = 0;
    bool spatial = false;
  };
  static constexpr std::size_t kMaxDigits = 2 * kMaxLevels + kMaxDims;
  using DigitArray = std::array<std::uint64_t, kMaxDigits>;

  MapSpace() = default;
  void to_digits(Index index, DigitArray& out) const;
  Index from_digits(const DigitArray& digits) const;
  void apply_bypass(const DigitArray& digits, Mapping& m) const;
  void apply_split(std::size_t dim, std::uint64_t split, Mapping& m) const;
  // The first digit position whose prefix is invalid; -1 when the point is valid, -2 when no
  // point is (the bypass choice alone overflows and there is no digit to change).
  int first_bad(const DigitArray& digits) const;
  // Writes the orders; false when an order digit is not canonical (`bad` = its position).
  bool apply_orders(const DigitArray& digits, Mapping& m, int* bad) const;

  LoopNestProblem problem_;
  Hierarchy hierarchy_;
  std::vector<Slot> slots_;
  std::vector<std::vector<std::uint64_t>> splits_;        // per dim, flat: splits x slots
  std::array<std::uint16_t, kMaxLevels> order_dims_{};    // per level: dims some split tiles
  std::array<std::uint8_t, kMaxLevels> bypassable_{};     // per level: tensors it may skip
  std::vector<Digit> layout_;                             // most significant first
  std::vector<std::uint64_t> radices_;
  std::vector<Index> place_;                              // value of one unit of each digit
  Mapping base_;  // single-split dims applied, the others wholly at DRAM; nothing bypassed
  Index size_ = 0;
};

// Decimal text of an index (for logs and reports).
std::string to_string(MapSpace::Index index);

// decode() then evaluate(): the cost of a point, or the status that rejects it.
MappingCost evaluate_point(const MapSpace& space, MapSpace::Index index);

}  // namespace coda::mapper
