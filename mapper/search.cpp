#include "mapper/search.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <random>
#include <span>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "core/enum_table.h"
#include "core/hash.h"
#include "mapper/schedule.h"

namespace coda::mapper {
namespace {

using Index = MapSpace::Index;

constexpr std::array<std::pair<std::string_view, Objective>, 3> kObjectives{{
    {"latency", Objective::Latency},
    {"energy", Objective::Energy},
    {"edp", Objective::Edp},
}};

constexpr std::array<std::pair<std::string_view, Strategy>, 4> kStrategies{{
    {"exhaustive", Strategy::Exhaustive},
    {"random", Strategy::Random},
    {"heuristic", Strategy::Heuristic},
    {"annealing", Strategy::Annealing},
}};

// ---- strategies ------------------------------------------------------------------------------

class Exhaustive final : public SearchStrategy {
 public:
  Exhaustive(const MapSpace& space, Index begin, Index end)
      : space_(space), end_(std::min(end, space.size())), cursor_(space.next_valid(begin)) {}
  std::string_view name() const override { return "exhaustive"; }
  std::optional<Index> ask() override {
    if (cursor_ >= end_) return std::nullopt;
    return cursor_;
  }
  void tell(Index point, std::optional<double> /*score*/) override {
    cursor_ = point + 1 < end_ ? space_.next_valid(point + 1) : end_;
  }

 private:
  const MapSpace& space_;
  Index end_;
  Index cursor_;
};

class RandomSearch final : public SearchStrategy {
 public:
  RandomSearch(const MapSpace& space, std::uint64_t seed) : space_(space), rng_(seed) {}
  std::string_view name() const override { return "random"; }
  std::optional<Index> ask() override { return space_.sample(rng_); }
  void tell(Index /*point*/, std::optional<double> /*score*/) override {}

 private:
  const MapSpace& space_;
  std::mt19937_64 rng_;
};

// ---- structured moves ------------------------------------------------------------------------

constexpr std::array<std::uint64_t, kMaxDims + 1> kFactorial = [] {
  std::array<std::uint64_t, kMaxDims + 1> f{};
  f[0] = 1;
  for (std::size_t i = 1; i <= kMaxDims; ++i) f[i] = f[i - 1] * i;
  return f;
}();

// A digit with at most this many values is tried whole by the heuristic; a larger one through
// its structured moves plus kRandomValues uniform draws.
constexpr std::uint64_t kWholeDigit = 24;
constexpr std::size_t kRandomValues = 4;
// At most this many exchanges (two dims trading factors) per visit of the heuristic.
constexpr std::size_t kExchanges = 48;

// The distinct primes of n, ascending.
void primes_of(std::uint64_t n, std::vector<std::uint64_t>& out) {
  out.clear();
  for (std::uint64_t p = 2; p * p <= n; ++p) {
    if (n % p != 0) continue;
    out.push_back(p);
    while (n % p == 0) n /= p;
  }
  if (n > 1) out.push_back(n);
}

// The Lehmer code of a permutation of 0..k-1 and back, as MapSpace's order digits use it: the
// digit is sum over positions i of (how many later entries are smaller) x (k - 1 - i)!.
void permutation_of(std::uint64_t code, std::size_t k, std::array<std::uint8_t, kMaxDims>& out) {
  std::array<std::uint8_t, kMaxDims> left{};
  for (std::size_t i = 0; i < k; ++i) left[i] = static_cast<std::uint8_t>(i);
  for (std::size_t remaining = k, i = 0; remaining > 0; --remaining, ++i) {
    const std::uint64_t f = kFactorial[remaining - 1];
    const auto pick = static_cast<std::size_t>(code / f);
    code %= f;
    out[i] = left[pick];
    for (std::size_t j = pick; j + 1 < remaining; ++j) left[j] = left[j + 1];
  }
}

std::uint64_t code_of(const std::array<std::uint8_t, kMaxDims>& perm, std::size_t k) {
  std::uint64_t code = 0;
  for (std::size_t i = 0; i < k; ++i) {
    std::uint64_t smaller = 0;
    for (std::size_t j = i + 1; j < k; ++j) if (perm[j] < perm[i]) ++smaller;
    code += smaller * kFactorial[k - 1 - i];
  }
  return code;
}

// The loop order with the loop at position `from` taken out and put back at position `to`.
std::uint64_t move_loop(std::uint64_t code, std::size_t k, std::size_t from, std::size_t to) {
  std::array<std::uint8_t, kMaxDims> perm{};
  permutation_of(code, k, perm);
  const std::uint8_t loop = perm[from];
  if (from < to)
    for (std::size_t i = from; i < to; ++i) perm[i] = perm[i + 1];
  else
    for (std::size_t i = from; i > to; --i) perm[i] = perm[i - 1];
  perm[to] = loop;
  return code_of(perm, k);
}

// The neighbours of a point, digit by digit. Beside a digit's other values (all of them where it
// has few), two structured moves that keep most of the mapping:
//   factor  one prime factor of a dim, or a whole slot's factor, moved from one slot to another
//           (the split with those factors, when the dim's list has it);
//   order   one loop of a level moved to another place in the level's loop order.
// A move that changes which dims a level tiles changes that level's loop count k; its order digit
// is then reduced modulo k! (the loop order decode() writes for it), so no neighbour is
// rejected as not canonical.
class Moves {
 public:
  explicit Moves(const MapSpace& space) : space_(space) {
    const auto layout = space.layout();
    factor_position_.assign(space.problem().dim_count, -1);
    for (std::size_t p = 0; p < layout.size(); ++p)
      if (layout[p].kind == MapSpace::DigitKind::Factor)
        factor_position_[layout[p].index] = static_cast<int>(p);
    temporal_slot_.assign(space.hierarchy().levels.size(), 0);
    for (std::size_t s = 0; s < space.slot_count(); ++s)
      if (!space.slot_spatial(s)) temporal_slot_[space.slot_level(s)] = s;
    for (std::size_t p = 0; p < layout.size(); ++p) {
      if (space.radices()[p] > 1) movable_.push_back(p);
      if (layout[p].kind == MapSpace::DigitKind::Factor) factor_digits_.push_back(p);
    }
  }

  std::size_t digit_count() const { return space_.radices().size(); }
  bool can_move() const { return !movable_.empty(); }
  // Whether two dims have factor digits, so that exchanges exist.
  bool can_exchange() const { return factor_digits_.size() >= 2; }

  // Appends up to kExchanges exchanges of `digits` to `out` (canonical, distinct, not
  // necessarily valid): dim d1 moves a prime factor from slot a to slot b while dim d2 moves one
  // from b to a, so the slots' products (a level's tile, a fan-out's use) stay about the same.
  // A single-digit change cannot do that when a level is full. When there are more, a random
  // subset.
  void exchanges(std::span<const std::uint64_t> digits, std::mt19937_64& rng,
                 std::vector<MapSpace::Index>& out) {
    const std::size_t first = out.size();
    const std::size_t slots = space_.slot_count();
    scratch_.assign(digits.begin(), digits.end());
    for (std::size_t i = 0; i < factor_digits_.size(); ++i) {
      for (std::size_t j = i + 1; j < factor_digits_.size(); ++j) {
        const std::size_t p1 = factor_digits_[i];
        const std::size_t p2 = factor_digits_[j];
        const std::size_t d1 = space_.layout()[p1].index;
        const std::size_t d2 = space_.layout()[p2].index;
        const auto t1 = space_.split(d1, digits[p1]);
        const auto t2 = space_.split(d2, digits[p2]);
        for (std::size_t a = 0; a < slots; ++a) {
          if (t1[a] == 1) continue;
          for (std::size_t b = 0; b < slots; ++b) {
            if (b == a || t2[b] == 1) continue;
            primes_of(t1[a], primes_);
            primes_of(t2[b], other_primes_);
            for (const std::uint64_t q1 : primes_) {
              tuple_.assign(t1.begin(), t1.end());
              tuple_[a] /= q1;
              tuple_[b] *= q1;
              const auto s1 = space_.find_split(d1, tuple_);
              if (!s1) continue;
              for (const std::uint64_t q2 : other_primes_) {
                tuple_.assign(t2.begin(), t2.end());
                tuple_[b] /= q2;
                tuple_[a] *= q2;
                const auto s2 = space_.find_split(d2, tuple_);
                if (!s2) continue;
                next_.assign(scratch_.begin(), scratch_.end());
                next_[p1] = *s1;
                next_[p2] = *s2;
                canonicalize(next_);
                out.push_back(space_.index(next_));
              }
            }
          }
        }
      }
    }
    std::sort(out.begin() + static_cast<std::ptrdiff_t>(first), out.end());
    out.erase(std::unique(out.begin() + static_cast<std::ptrdiff_t>(first), out.end()), out.end());
    std::shuffle(out.begin() + static_cast<std::ptrdiff_t>(first), out.end(), rng);
    if (out.size() - first > kExchanges)
      out.resize(first + kExchanges);
  }

  // The loops level `level` has at `digits`: the dims with a temporal factor above 1 there.
  std::size_t loops(std::span<const std::uint64_t> digits, std::size_t level) const {
    std::size_t k = 0;
    for (std::size_t d = 0; d < factor_position_.size(); ++d) {
      const int p = factor_position_[d];
      const std::uint64_t split = p < 0 ? 0 : digits[static_cast<std::size_t>(p)];
      if (space_.split(d, split)[temporal_slot_[level]] > 1) ++k;
    }
    return k;
  }

  void canonicalize(std::span<std::uint64_t> digits) const {
    const auto layout = space_.layout();
    for (std::size_t p = 0; p < layout.size(); ++p) {
      if (layout[p].kind != MapSpace::DigitKind::Order) continue;
      const std::uint64_t count = kFactorial[loops(digits, layout[p].index)];
      if (digits[p] >= count) digits[p] %= count;
    }
  }

  // Appends the neighbours of `digits` that differ in digit p (canonical, distinct from each
  // other and from `digits`, not necessarily valid) to `out`.
  void neighbours(std::span<const std::uint64_t> digits, std::size_t p, std::mt19937_64& rng,
                  std::vector<MapSpace::Index>& out) {
    const MapSpace::Digit digit = space_.layout()[p];
    const std::uint64_t radix = space_.radices()[p];
    values_.clear();
    if (digit.kind == MapSpace::DigitKind::Order) {
      const std::size_t k = loops(digits, digit.index);
      if (kFactorial[k] <= kWholeDigit) {
        for (std::uint64_t v = 0; v < kFactorial[k]; ++v) values_.push_back(v);
      } else {
        for (std::size_t from = 0; from < k; ++from)
          for (std::size_t to = 0; to < k; ++to)
            if (from != to) values_.push_back(move_loop(digits[p], k, from, to));
        for (std::size_t r = 0; r < kRandomValues; ++r)
          values_.push_back(std::uniform_int_distribution<std::uint64_t>(0, kFactorial[k] - 1)(rng));
      }
    } else if (radix <= kWholeDigit) {
      for (std::uint64_t v = 0; v < radix; ++v) values_.push_back(v);
    } else {
      if (digit.kind == MapSpace::DigitKind::Factor) factor_moves(digit.index, digits[p]);
      for (std::size_t r = 0; r < kRandomValues; ++r)
        values_.push_back(std::uniform_int_distribution<std::uint64_t>(0, radix - 1)(rng));
    }
    // Distinct values in the order found (the lists are short), the current one left out.
    scratch_.assign(digits.begin(), digits.end());
    const std::size_t first = out.size();
    for (std::size_t i = 0; i < values_.size(); ++i) {
      const std::uint64_t v = values_[i];
      if (v == digits[p] || std::find(values_.begin(), values_.begin() +
                                          static_cast<std::ptrdiff_t>(i), v) !=
                                values_.begin() + static_cast<std::ptrdiff_t>(i))
        continue;
      scratch_[p] = v;
      if (digit.kind == MapSpace::DigitKind::Factor) {
        next_.assign(scratch_.begin(), scratch_.end());
        canonicalize(next_);
        out.push_back(space_.index(next_));
      } else {
        out.push_back(space_.index(scratch_));
      }
    }
    // Canonicalizing can map two values to one point.
    std::sort(out.begin() + static_cast<std::ptrdiff_t>(first), out.end());
    out.erase(std::unique(out.begin() + static_cast<std::ptrdiff_t>(first), out.end()), out.end());
    std::shuffle(out.begin() + static_cast<std::ptrdiff_t>(first), out.end(), rng);
  }

  // One random neighbour of `digits`, changed in place: a structured move of a random digit, or
  // one time in eight a uniform draw of its value. No-op when no digit has two values.
  void random_move(std::vector<std::uint64_t>& digits, std::mt19937_64& rng) {
    if (movable_.empty()) return;
    if (can_exchange() && std::uniform_int_distribution<int>(0, 3)(rng) == 0 &&
        random_exchange(digits, rng))
      return;
    const std::size_t p =
        movable_[std::uniform_int_distribution<std::size_t>(0, movable_.size() - 1)(rng)];
    const MapSpace::Digit digit = space_.layout()[p];
    const std::uint64_t radix = space_.radices()[p];
    const bool uniform = std::uniform_int_distribution<int>(0, 7)(rng) == 0;
    std::uint64_t value = digits[p];
    if (digit.kind == MapSpace::DigitKind::Order) {
      const std::size_t k = loops(digits, digit.index);
      if (k < 2) return;  // one order only: the move is a no-op, evaluated as a repeat
      if (uniform || kFactorial[k] <= kWholeDigit) {
        value = draw_other(kFactorial[k], digits[p], rng);
      } else {
        const std::size_t from = std::uniform_int_distribution<std::size_t>(0, k - 1)(rng);
        std::size_t to = std::uniform_int_distribution<std::size_t>(0, k - 2)(rng);
        if (to >= from) ++to;
        value = move_loop(digits[p], k, from, to);
      }
    } else if (digit.kind == MapSpace::DigitKind::Factor && !uniform) {
      for (int attempt = 0; attempt < 8 && value == digits[p]; ++attempt)
        if (const auto v = random_factor_move(digit.index, digits[p], rng)) value = *v;
      if (value == digits[p]) value = draw_other(radix, digits[p], rng);
    } else {
      value = draw_other(radix, digits[p], rng);
    }
    digits[p] = value;
    if (digit.kind == MapSpace::DigitKind::Factor) canonicalize(digits);
  }

 private:
  static std::uint64_t draw_other(std::uint64_t radix, std::uint64_t current,
                                  std::mt19937_64& rng) {
    if (radix < 2) return current;
    std::uint64_t v = std::uniform_int_distribution<std::uint64_t>(0, radix - 2)(rng);
    if (v >= current) ++v;
    return v;
  }

  // Appends to values_ every split of `dim` reached from split `from` by moving one prime factor
  // or a whole slot's factor from one slot to another.
  void factor_moves(std::size_t dim, std::uint64_t from) {
    const auto split = space_.split(dim, from);
    const std::size_t slots = split.size();
    for (std::size_t a = 0; a < slots; ++a) {
      if (split[a] == 1) continue;
      primes_of(split[a], primes_);
      if (primes_.size() != 1 || primes_.front() != split[a]) primes_.push_back(split[a]);
      for (const std::uint64_t q : primes_) {
        for (std::size_t b = 0; b < slots; ++b) {
          if (b == a) continue;
          tuple_.assign(split.begin(), split.end());
          tuple_[a] /= q;
          tuple_[b] *= q;
          if (const auto s = space_.find_split(dim, tuple_)) values_.push_back(*s);
        }
      }
    }
  }

  std::optional<std::uint64_t> random_factor_move(std::size_t dim, std::uint64_t from,
                                                  std::mt19937_64& rng) {
    const auto split = space_.split(dim, from);
    const std::size_t slots = split.size();
    std::size_t nonunit = 0;
    for (const std::uint64_t f : split)
      if (f > 1) ++nonunit;
    if (nonunit == 0 || slots < 2) return std::nullopt;
    std::size_t pick = std::uniform_int_distribution<std::size_t>(0, nonunit - 1)(rng);
    std::size_t a = 0;
    for (; a < slots; ++a)
      if (split[a] > 1 && pick-- == 0) break;
    primes_of(split[a], primes_);
    const bool whole = std::uniform_int_distribution<int>(0, 3)(rng) == 0;
    const std::uint64_t q =
        whole ? split[a]
              : primes_[std::uniform_int_distribution<std::size_t>(0, primes_.size() - 1)(rng)];
    std::size_t b = std::uniform_int_distribution<std::size_t>(0, slots - 2)(rng);
    if (b >= a) ++b;
    tuple_.assign(split.begin(), split.end());
    tuple_[a] /= q;
    tuple_[b] *= q;
    return space_.find_split(dim, tuple_);
  }

  const MapSpace& space_;
  std::vector<int> factor_position_;     // per dim: its factor digit, -1 when it has one split
  std::vector<std::size_t> temporal_slot_;  // per level
  // One random exchange (see exchanges()) applied to `digits`; false when the one drawn does not
  // exist (the splits are not in the lists), and then `digits` is unchanged.
  bool random_exchange(std::vector<std::uint64_t>& digits, std::mt19937_64& rng) {
    const std::size_t slots = space_.slot_count();
    const std::size_t i =
        std::uniform_int_distribution<std::size_t>(0, factor_digits_.size() - 1)(rng);
    std::size_t j = std::uniform_int_distribution<std::size_t>(0, factor_digits_.size() - 2)(rng);
    if (j >= i) ++j;
    const std::size_t p1 = factor_digits_[i];
    const std::size_t p2 = factor_digits_[j];
    const std::size_t d1 = space_.layout()[p1].index;
    const std::size_t d2 = space_.layout()[p2].index;
    const auto t1 = space_.split(d1, digits[p1]);
    const auto t2 = space_.split(d2, digits[p2]);
    const std::size_t a = std::uniform_int_distribution<std::size_t>(0, slots - 1)(rng);
    std::size_t b = std::uniform_int_distribution<std::size_t>(0, slots - 2)(rng);
    if (b >= a) ++b;
    if (t1[a] == 1 || t2[b] == 1) return false;
    primes_of(t1[a], primes_);
    primes_of(t2[b], other_primes_);
    tuple_.assign(t1.begin(), t1.end());
    const std::uint64_t q1 =
        primes_[std::uniform_int_distribution<std::size_t>(0, primes_.size() - 1)(rng)];
    tuple_[a] /= q1;
    tuple_[b] *= q1;
    const auto s1 = space_.find_split(d1, tuple_);
    tuple_.assign(t2.begin(), t2.end());
    const std::uint64_t q2 =
        other_primes_[std::uniform_int_distribution<std::size_t>(0, other_primes_.size() - 1)(rng)];
    tuple_[b] /= q2;
    tuple_[a] *= q2;
    const auto s2 = space_.find_split(d2, tuple_);
    if (!s1 || !s2) return false;
    digits[p1] = *s1;
    digits[p2] = *s2;
    canonicalize(digits);
    return true;
  }

  std::vector<std::size_t> movable_;     // digits with more than one value
  std::vector<std::size_t> factor_digits_;  // the factor digits' positions
  std::vector<std::uint64_t> values_, primes_, other_primes_, tuple_, scratch_, next_;  // scratch
};

// Iterated local search. A start is the best of kStartDraws random valid points; from it,
// coordinate descent: digit by digit (cyclically), every neighbour that differs in that digit
// (Moves::neighbours, at most a few dozen however many values the digit has) is evaluated and
// the best improving one taken; after the digits, the exchanges (Moves::exchanges) are one more
// position of the cycle. Where nothing improves, a neighbour with the same score may be taken,
// kSideways times per improvement. A local optimum is reached when a whole cycle improves
// nothing. Then a restart: two times in three a kick (2 to 4 random moves) of the best point so
// far, the third a fresh start.
class Heuristic final : public SearchStrategy {
 public:
  Heuristic(const MapSpace& space, std::uint64_t seed)
      : space_(space), rng_(seed), moves_(space),
        start_draws_(moves_.can_move() ? kStartDraws : 1) {}
  std::string_view name() const override { return "heuristic"; }

  // Descends from `point` (valid, scored `score`) instead of drawing a start. Call before ask().
  void start_from(Index point, double score) {
    draws_ = start_draws_;
    descend_from({point, score});
  }

  std::optional<Index> ask() override {
    for (;;) {
      if (cursor_ < pending_.size()) return pending_[cursor_++];
      if (done_) return std::nullopt;
      switch (phase_) {
        case Phase::Start:
          if (draws_ < start_draws_) {
            ++draws_;
            const auto start = space_.sample(rng_);
            if (!start) return std::nullopt;
            pending_.assign(1, *start);
            cursor_ = 0;
            continue;
          }
          if (!start_) {  // every draw was rejected by the goal: draw again
            draws_ = 0;
            continue;
          }
          descend_from(*start_);
          continue;
        case Phase::Kick:
          if (kicked_) {
            descend_from(*kicked_);
            continue;
          }
          kick();
          continue;
        case Phase::Descend:
          finish_digit();
          continue;
      }
    }
  }

  void tell(Index point, std::optional<double> score) override {
    if (!score) return;
    switch (phase_) {
      case Phase::Start:
        if (!start_ || *score < start_->second) start_ = std::make_pair(point, *score);
        return;
      case Phase::Kick:
        kicked_ = std::make_pair(point, *score);
        return;
      case Phase::Descend:
        if (*score < current_score_ && (!best_move_ || *score < best_move_->second))
          best_move_ = std::make_pair(point, *score);
        else if (*score == current_score_ && !sideways_)
          sideways_ = point;
        return;
    }
  }

 private:
  enum class Phase : std::uint8_t { Start, Kick, Descend };
  static constexpr std::uint64_t kStartDraws = 8;
  static constexpr int kKickTries = 8;
  static constexpr int kSideways = 8;  // moves to equal points per descent without improvement

  void descend_from(std::pair<Index, double> point) {
    phase_ = Phase::Descend;
    digits_ = space_.digits(point.first);
    current_score_ = point.second;
    position_ = 0;
    unimproved_ = 0;
    best_move_.reset();
    sideways_.reset();
    sideways_left_ = kSideways;
    if (!moves_.can_move()) {  // a single point: nothing to descend
      pending_.clear();
      cursor_ = 0;
      local_optimum();
      return;
    }
    prepare_digit();
  }

  // The positions of a cycle: every digit, then the exchanges where there are any.
  std::size_t positions() const {
    return moves_.digit_count() + (moves_.can_exchange() ? 1 : 0);
  }

  void prepare_digit() {
    pending_.clear();
    cursor_ = 0;
    if (position_ < moves_.digit_count())
      moves_.neighbours(digits_, position_, rng_, pending_);
    else
      moves_.exchanges(digits_, rng_, pending_);
  }

  // Every neighbour of the current digit told: take the best improving one, go on to the next
  // digit, or restart at a local optimum.
  void finish_digit() {
    if (best_move_) {
      digits_ = space_.digits(best_move_->first);
      current_score_ = best_move_->second;
      unimproved_ = 1;  // this digit is at its best
      sideways_left_ = kSideways;
    } else if (sideways_ && sideways_left_ > 0) {
      // A plateau (latency is often flat: the same bottleneck under many tilings): step along
      // it, a bounded number of times per improvement.
      digits_ = space_.digits(*sideways_);
      --sideways_left_;
      unimproved_ = 1;
    } else {
      ++unimproved_;
    }
    best_move_.reset();
    sideways_.reset();
    if (unimproved_ >= positions()) {
      local_optimum();
      return;
    }
    position_ = (position_ + 1) % positions();
    prepare_digit();
  }

  void local_optimum() {
    if (!best_ || current_score_ < best_score_) {
      best_ = digits_;
      best_score_ = current_score_;
    }
    pending_.clear();
    cursor_ = 0;
    if (!moves_.can_move()) {  // the space has one point, and it has been told
      done_ = true;
      return;
    }
    ++restarts_;
    if (restarts_ % 3 == 0) {
      phase_ = Phase::Start;
      draws_ = start_draws_ - 1;  // a fresh start is one draw
      start_.reset();
      return;
    }
    phase_ = Phase::Kick;
    kicked_.reset();
    kick_tries_ = 0;
  }

  // Proposes the best point so far changed by 2 to 4 random moves.
  void kick() {
    if (kick_tries_++ >= kKickTries) {  // the kicks keep landing on invalid points
      phase_ = Phase::Start;
      draws_ = start_draws_ - 1;
      start_.reset();
      return;
    }
    std::vector<std::uint64_t> next = *best_;
    const int moves = std::uniform_int_distribution<int>(2, 4)(rng_);
    for (int m = 0; m < moves; ++m) moves_.random_move(next, rng_);
    pending_.assign(1, space_.index(next));
    cursor_ = 0;
  }

  const MapSpace& space_;
  std::mt19937_64 rng_;
  Moves moves_;
  std::uint64_t start_draws_;  // kStartDraws, or 1 where the space has a single point
  Phase phase_ = Phase::Start;
  std::vector<Index> pending_;  // points to propose, in order
  std::size_t cursor_ = 0;
  bool done_ = false;
  // Start
  std::uint64_t draws_ = 0;
  std::optional<std::pair<Index, double>> start_;
  // Kick
  std::optional<std::pair<Index, double>> kicked_;
  int kick_tries_ = 0;
  // Descend
  std::vector<std::uint64_t> digits_;
  double current_score_ = 0;
  std::size_t position_ = 0;
  std::size_t unimproved_ = 0;  // digits in a row whose neighbours improved nothing
  std::optional<std::pair<Index, double>> best_move_;
  std::optional<Index> sideways_;  // a neighbour that scores as the current point does
  int sideways_left_ = kSideways;
  // The best local optimum
  std::optional<std::vector<std::uint64_t>> best_;
  double best_score_ = 0;
  std::uint64_t restarts_ = 0;
};

// Simulated annealing over structured moves (Moves::random_move), then a greedy polish. The
// start is the best of kStartDraws random valid points; over the first three quarters of the
// budget the temperature falls geometrically from `initial` to `final`, and a worse neighbour is
// accepted with probability exp(-relative loss / T). The walk goes back to the best point so far
// whenever budget / 64 steps (at least 16) have passed without improving on it. The last quarter
// is the heuristic's descent (and restarts) from the best point annealing found: annealing finds
// the basin, the descent its bottom.
class Annealing final : public SearchStrategy {
 public:
  Annealing(const MapSpace& space, std::uint64_t seed, std::uint64_t budget,
            const AnnealingOptions& options)
      : space_(space), rng_(seed), moves_(space), budget_(std::max<std::uint64_t>(budget, 1)),
        options_(options), anneal_steps_(std::max<std::uint64_t>(budget_ - budget_ / 4, 1)),
        patience_(std::max<std::uint64_t>(budget_ / 64, 16)) {}
  std::string_view name() const override { return "annealing"; }

  std::optional<Index> ask() override {
    if (!polish_ && step_ >= anneal_steps_ && have_best_) {
      polish_ = std::make_unique<Heuristic>(space_, rng_());
      polish_->start_from(best_, best_score_);
    }
    if (polish_) return polish_->ask();
    drawing_ = draws_ < (moves_.can_move() ? kStartDraws : 1) || !current_;
    if (drawing_) {
      ++draws_;
      return space_.sample(rng_);
    }
    if (!moves_.can_move()) return std::nullopt;  // one point, already told
    next_ = digits_;
    moves_.random_move(next_, rng_);
    return space_.index(next_);
  }

  void tell(Index point, std::optional<double> score) override {
    if (polish_) {
      polish_->tell(point, score);
      return;
    }
    ++step_;
    ++since_best_;
    if (!score) return;
    if (drawing_) {  // a start draw
      if (!current_ || *score < current_score_) accept(point, *score);
      return;
    }
    const double loss = (*score - current_score_) / std::max(current_score_, 1e-300);
    const double fraction = static_cast<double>(std::min(step_, anneal_steps_)) /
                            static_cast<double>(anneal_steps_);
    const double temperature =
        options_.initial_temperature *
        std::pow(options_.final_temperature / options_.initial_temperature, fraction);
    if (loss <= 0 ||
        std::uniform_real_distribution<double>(0.0, 1.0)(rng_) < std::exp(-loss / temperature))
      accept(point, *score);
    if (since_best_ >= patience_) {  // drifted too long: back to the best point
      since_best_ = 0;
      current_ = best_;
      current_score_ = best_score_;
      digits_ = space_.digits(best_);
    }
  }

 private:
  static constexpr std::uint64_t kStartDraws = 8;

  void accept(Index point, double score) {
    current_ = point;
    current_score_ = score;
    digits_ = space_.digits(point);
    if (!have_best_ || score < best_score_) {
      have_best_ = true;
      best_ = point;
      best_score_ = score;
      since_best_ = 0;
    }
  }

  const MapSpace& space_;
  std::mt19937_64 rng_;
  Moves moves_;
  std::uint64_t budget_;
  AnnealingOptions options_;
  std::uint64_t anneal_steps_;  // the first three quarters of the budget; then the polish
  std::uint64_t patience_;
  std::unique_ptr<Heuristic> polish_;
  std::uint64_t draws_ = 0;
  bool drawing_ = true;  // the point asked for is a start draw
  std::uint64_t step_ = 0;
  std::uint64_t since_best_ = 0;
  std::optional<Index> current_;
  double current_score_ = 0;
  std::vector<std::uint64_t> digits_, next_;
  bool have_best_ = false;
  Index best_ = 0;
  double best_score_ = 0;
};

// ---- the best-K list -------------------------------------------------------------------------

bool better(const Candidate& a, const Candidate& b) {
  return a.score < b.score || (a.score == b.score && a.index < b.index);
}

void offer(std::vector<Candidate>& best, const Candidate& candidate) {
  for (const Candidate& c : best)
    if (c.index == candidate.index) return;  // a point proposed again
  if (best.size() == kRunnersUp + 1 && !better(candidate, best.back())) return;
  best.insert(std::upper_bound(best.begin(), best.end(), candidate, better), candidate);
  if (best.size() > kRunnersUp + 1) best.pop_back();
}

// ---- signatures ------------------------------------------------------------------------------

std::string hex(double v) { return fmt::format("{:a}", v); }

}  // namespace

std::string_view to_string(Objective objective) { return enum_name(kObjectives, objective); }
std::optional<Objective> parse_objective(std::string_view text) {
  return enum_value(kObjectives, text);
}
std::string objective_list() { return enum_names(kObjectives); }
EnumTable<Objective> objective_names() { return kObjectives; }
std::string strategy_list() { return enum_names(kStrategies); }
EnumTable<Strategy> strategy_names() { return kStrategies; }
std::string_view to_string(Strategy strategy) { return enum_name(kStrategies, strategy); }
std::optional<Strategy> parse_strategy(std::string_view text) {
  return enum_value(kStrategies, text);
}

std::optional<double> score(const MappingCost& cost, const SearchGoal& goal, double clock_hz) {
  if (goal.max_power_watts && cost.cycles > 0) {
    const double watts = cost.energy_pj * 1e-12 / (cost.cycles / clock_hz);
    if (watts > *goal.max_power_watts) return std::nullopt;
  }
  switch (goal.objective) {
    case Objective::Latency: return cost.cycles;
    case Objective::Energy: return cost.energy_pj;
    case Objective::Edp: return cost.edp;
  }
  return std::nullopt;
}

std::unique_ptr<SearchStrategy> make_exhaustive(const MapSpace& space, Index begin, Index end) {
  return std::make_unique<Exhaustive>(space, begin, end);
}

std::unique_ptr<SearchStrategy> make_strategy(Strategy strategy, const MapSpace& space,
                                              std::uint64_t seed,
                                              std::uint64_t budget_evaluations,
                                              const AnnealingOptions& annealing) {
  switch (strategy) {
    case Strategy::Exhaustive: return make_exhaustive(space, 0, space.size());
    case Strategy::Random: return std::make_unique<RandomSearch>(space, seed);
    case Strategy::Heuristic: return std::make_unique<Heuristic>(space, seed);
    case Strategy::Annealing:
      return std::make_unique<Annealing>(space, seed, budget_evaluations, annealing);
  }
  return nullptr;
}

SearchOutcome run_search(const MapSpace& space, SearchStrategy& strategy, const SearchGoal& goal,
                         const SearchBudget& budget) {
  SearchOutcome out;
  out.strategy = std::string(strategy.name());
  const auto start = std::chrono::steady_clock::now();
  const double clock_hz = space.hierarchy().clock_hz;
  std::uint64_t since_improvement = 0;
  Mapping mapping;
  for (;;) {
    if (out.evaluated >= budget.max_evaluations) {
      out.stopped = "evaluations";
      break;
    }
    if (budget.patience > 0 && since_improvement >= budget.patience) {
      out.stopped = "patience";
      break;
    }
    if (budget.max_seconds > 0 && (out.evaluated & 1023U) == 0 &&
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >
            budget.max_seconds) {
      out.stopped = "time";
      break;
    }
    const auto point = strategy.ask();
    if (!point) {
      out.stopped = "exhausted";
      break;
    }
    ++out.evaluated;
    ++since_improvement;
    const MappingStatus status = space.decode(*point, mapping);
    if (!status.ok()) {
      ++out.rejected[static_cast<std::size_t>(status.reason)];
      strategy.tell(*point, std::nullopt);
      continue;
    }
    const MappingCost cost = evaluate(space.problem(), mapping, space.hierarchy());
    if (!cost.ok()) {
      ++out.rejected[static_cast<std::size_t>(cost.status.reason)];
      strategy.tell(*point, std::nullopt);
      continue;
    }
    const auto s = score(cost, goal, clock_hz);
    if (!s) {
      ++out.over_power;
      strategy.tell(*point, std::nullopt);
      continue;
    }
    ++out.valid;
    if (out.best.empty() || *s < out.best.front().score) since_improvement = 0;
    offer(out.best, Candidate{*point, *s, mapping, cost});
    strategy.tell(*point, s);
  }
  return out;
}

SearchOutcome search_exhaustive(const MapSpace& space, const SearchGoal& goal,
                                const SearchBudget& budget, unsigned threads) {
  threads = std::max(1U, threads);
  const Index size = space.size();
  std::vector<SearchOutcome> parts(threads);
  std::vector<std::thread> workers;
  for (unsigned t = 0; t < threads; ++t) {
    const Index begin = size / threads * t + std::min<Index>(t, size % threads);
    const Index end = begin + size / threads + (t < size % threads ? 1 : 0);
    workers.emplace_back([&, t, begin, end] {
      const auto strategy = make_exhaustive(space, begin, end);
      parts[t] = run_search(space, *strategy, goal, budget);
    });
  }
  for (std::thread& w : workers) w.join();
  SearchOutcome out;
  out.strategy = "exhaustive";
  out.stopped = "exhausted";
  for (SearchOutcome& part : parts) {
    out.evaluated += part.evaluated;
    out.valid += part.valid;
    out.over_power += part.over_power;
    for (std::size_t r = 0; r < out.rejected.size(); ++r) out.rejected[r] += part.rejected[r];
    if (part.stopped != "exhausted") out.stopped = part.stopped;
    for (const Candidate& c : part.best) offer(out.best, c);
  }
  return out;
}

std::uint64_t op_signature(const workload::Einsum& einsum) {
  std::string text;
  for (const workload::Dim& d : einsum.dims) text += fmt::format("d{};", d.extent);
  for (const workload::TensorAccess& a : einsum.accesses) {
    text += fmt::format("a{},{}:", static_cast<int>(a.role), to_string(a.dtype));
    for (const std::uint64_t s : a.shape) text += fmt::format("{},", s);
    for (const workload::IndexExpr& e : a.indices) {
      text += fmt::format("[{}", e.offset);
      for (const workload::IndexTerm& t : e.terms)
        text += fmt::format("+{}*{}", t.coefficient, t.dim);
      text += "]";
    }
    text += ";";
  }
  return fnv1a64(text);
}

std::uint64_t hierarchy_signature(const Hierarchy& h) {
  std::string text = fmt::format("{}|{}|{}|{}|{}|{}|{}|{}", hex(h.clock_hz), to_string(h.precision),
                                 h.compute.unit, static_cast<int>(h.compute.kind), h.compute.pes,
                                 hex(h.compute.macs_per_pe_per_cycle),
                                 hex(h.compute.mac_energy_pj), h.unsupported);
  for (const StorageLevel& l : h.levels)
    text += fmt::format("|{},{},{},{},{},{},{},{},{},{},{},{}", l.name, l.capacity_bytes,
                        l.instances, l.fan_out, hex(l.read_bytes_per_cycle),
                        hex(l.write_bytes_per_cycle), l.shared_port, hex(l.energy_pj_per_byte),
                        l.holds, l.double_buffered, l.multicast, l.waves);
  return fnv1a64(text);
}

std::uint64_t cache_key(const workload::Einsum& einsum, const Hierarchy& hierarchy,
                        const SearchGoal& goal, const SearchSettings& s) {
  const std::string text = fmt::format(
      "{:x}|{:x}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}", op_signature(einsum),
      hierarchy_signature(hierarchy), to_string(goal.objective),
      goal.max_power_watts ? hex(*goal.max_power_watts) : std::string("-"), to_string(s.strategy),
      s.budget.max_evaluations, hex(s.budget.max_seconds), s.budget.patience, s.seed, s.threads,
      s.space.imperfect, s.space.explore_bypass, s.space.max_splits_per_dim,
      s.space.explore_orders);
  return fnv1a64(text);
}

std::optional<SearchOutcome> map_op(const workload::Einsum& einsum, const Hierarchy& hierarchy,
                                    const SearchGoal& goal, const SearchSettings& settings,
                                    std::string& why) {
  if (!hierarchy.unsupported.empty()) {
    why = hierarchy.unsupported;
    return std::nullopt;
  }
  const auto space = MapSpace::create(einsum, hierarchy, settings.space, why);
  if (!space) return std::nullopt;
  if (settings.strategy == Strategy::Exhaustive)
    return search_exhaustive(*space, goal, settings.budget, settings.threads);
  const auto strategy = make_strategy(settings.strategy, *space, settings.seed,
                                      settings.budget.max_evaluations);
  return run_search(*space, *strategy, goal, settings.budget);
}

std::optional<SearchOutcome> MappingCache::find(std::uint64_t key) const {
  const std::lock_guard lock(mutex_);
  const auto it = entries_.find(key);
  if (it == entries_.end()) return std::nullopt;
  ++hits_;
  return it->second;
}

void MappingCache::insert(std::uint64_t key, SearchOutcome outcome) {
  const std::lock_guard lock(mutex_);
  entries_.insert_or_assign(key, std::move(outcome));
}

std::size_t MappingCache::size() const {
  const std::lock_guard lock(mutex_);
  return entries_.size();
}

std::uint64_t MappingCache::hits() const {
  const std::lock_guard lock(mutex_);
  return hits_;
}

std::vector<MapResult> map_batch(const std::vector<MapRequest>& requests, const SearchGoal& goal,
                                 const SearchSettings& settings, MappingCache& cache) {
  std::vector<MapResult> out(requests.size());
  std::vector<std::uint64_t> keys(requests.size());
  std::map<std::uint64_t, std::size_t> first;  // key -> first request with it
  std::vector<std::size_t> to_search;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    keys[i] = cache_key(*requests[i].einsum, *requests[i].hierarchy, goal, settings);
    if (first.contains(keys[i])) continue;  // filled from the cache below
    first.emplace(keys[i], i);
    if (auto hit = cache.find(keys[i])) {
      out[i].outcome = std::move(hit);
      out[i].cached = true;
    } else {
      to_search.push_back(i);
    }
  }

  const auto search = [&](std::size_t i, const SearchSettings& with) {
    out[i].outcome = map_op(*requests[i].einsum, *requests[i].hierarchy, goal, with, out[i].why);
  };
  const unsigned workers =
      settings.strategy == Strategy::Exhaustive
          ? 1U
          : static_cast<unsigned>(std::min<std::size_t>(std::max(settings.threads, 1U),
                                                        to_search.size()));
  if (workers <= 1) {
    for (const std::size_t i : to_search) search(i, settings);
  } else {
    SearchSettings single = settings;
    single.threads = 1;
    std::atomic<std::size_t> next{0};
    std::vector<std::thread> pool;
    pool.reserve(workers);
    for (unsigned w = 0; w < workers; ++w)
      pool.emplace_back([&] {
        for (std::size_t k = next++; k < to_search.size(); k = next++) search(to_search[k], single);
      });
    for (std::thread& thread : pool) thread.join();
  }
  for (const std::size_t i : to_search)  // in request order: the cache's content is deterministic
    if (out[i].outcome) cache.insert(keys[i], *out[i].outcome);

  for (std::size_t i = 0; i < requests.size(); ++i) {
    const std::size_t origin = first.at(keys[i]);
    if (origin == i) continue;
    out[i].cached = true;
    out[i].outcome = cache.find(keys[i]);
    if (!out[i].outcome) out[i].why = out[origin].why;  // the first found no map space
  }
  return out;
}

std::vector<OpMapping> map_graph(const workload::Graph& graph, const arch::HardwareModel& hw,
                                 const SearchGoal& goal, const SearchSettings& settings,
                                 MappingCache& cache) {
  std::map<std::pair<DataType, bool>, Hierarchy> hierarchies;  // by precision and alignment
  std::vector<MapRequest> requests;
  std::vector<const workload::Op*> ops;
  for (const workload::Op& op : graph.ops) {
    if (op.kind != workload::OpKind::Contraction) continue;
    const DataType precision = op_precision(op);
    const std::pair key{precision, gemm_operands_aligned(op, precision)};
    auto h = hierarchies.find(key);
    if (h == hierarchies.end())
      h = hierarchies.emplace(key, make_hierarchy(hw, precision, key.second)).first;
    requests.push_back({&op.space, &h->second});
    ops.push_back(&op);
  }
  std::vector<MapResult> mapped = map_batch(requests, goal, settings, cache);
  std::vector<OpMapping> out;
  out.reserve(mapped.size());
  for (std::size_t i = 0; i < mapped.size(); ++i)
    out.push_back({ops[i]->name, std::move(mapped[i].outcome), std::move(mapped[i].why),
                   mapped[i].cached});
  return out;
}

}  // namespace coda::mapper
