#include "mapper/search.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <thread>
#include <utility>

#include <fmt/format.h>

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

// Greedy coordinate descent over digits with random restarts.
class Heuristic final : public SearchStrategy {
 public:
  Heuristic(const MapSpace& space, std::uint64_t seed) : space_(space), rng_(seed) {}
  std::string_view name() const override { return "heuristic"; }

  std::optional<Index> ask() override {
    if (!current_) {  // (re)start from a random valid point
      const auto start = space_.sample(rng_);
      if (!start) return std::nullopt;
      return *start;
    }
    // The next single-digit change of the current point.
    const auto radices = space_.radices();
    while (position_ < radices.size()) {
      while (value_ < radices[position_]) {
        const std::uint64_t v = value_++;
        if (v == digits_[position_]) continue;
        std::vector<std::uint64_t> next = digits_;
        next[position_] = v;
        return space_.index(next);
      }
      // Every value of this digit tried: move to the best one seen.
      if (best_move_) {
        digits_ = space_.digits(best_move_->first);
        current_ = best_move_->first;
        current_score_ = best_move_->second;
        best_move_.reset();
        improved_ = true;
      }
      ++position_;
      value_ = 0;
    }
    // A full sweep: sweep again if it improved, else restart.
    if (!improved_) current_.reset();
    position_ = 0;
    value_ = 0;
    improved_ = false;
    return ask();
  }

  void tell(Index point, std::optional<double> score) override {
    if (!current_) {  // the start point
      if (!score) return;  // sample() gives valid points, but the goal may reject it
      current_ = point;
      current_score_ = *score;
      digits_ = space_.digits(point);
      position_ = 0;
      value_ = 0;
      improved_ = false;
      return;
    }
    if (score && *score < current_score_ &&
        (!best_move_ || *score < best_move_->second))
      best_move_ = std::make_pair(point, *score);
  }

 private:
  const MapSpace& space_;
  std::mt19937_64 rng_;
  std::optional<Index> current_;
  double current_score_ = 0;
  std::vector<std::uint64_t> digits_;
  std::size_t position_ = 0;
  std::uint64_t value_ = 0;
  bool improved_ = false;
  std::optional<std::pair<Index, double>> best_move_;
};

class Annealing final : public SearchStrategy {
 public:
  Annealing(const MapSpace& space, std::uint64_t seed, std::uint64_t budget,
            const AnnealingOptions& options)
      : space_(space), rng_(seed), budget_(std::max<std::uint64_t>(budget, 1)),
        options_(options) {}
  std::string_view name() const override { return "annealing"; }

  std::optional<Index> ask() override {
    if (!current_) return space_.sample(rng_);
    const auto radices = space_.radices();
    std::vector<std::uint64_t> next = digits_;
    // A neighbour: one digit with more than one value changed to another value.
    for (int attempt = 0; attempt < 64; ++attempt) {
      const std::size_t p = std::uniform_int_distribution<std::size_t>(0, radices.size() - 1)(rng_);
      if (radices[p] < 2) continue;
      std::uint64_t v = std::uniform_int_distribution<std::uint64_t>(0, radices[p] - 2)(rng_);
      if (v >= digits_[p]) ++v;
      next[p] = v;
      return space_.index(next);
    }
    return space_.sample(rng_);  // every digit has one value: nothing to anneal
  }

  void tell(Index point, std::optional<double> score) override {
    ++step_;
    if (!score) return;
    if (!current_) {
      accept(point, *score);
      return;
    }
    const double loss = (*score - current_score_) / std::max(current_score_, 1e-300);
    const double fraction = static_cast<double>(std::min(step_, budget_)) /
                            static_cast<double>(budget_);
    const double temperature =
        options_.initial_temperature *
        std::pow(options_.final_temperature / options_.initial_temperature, fraction);
    if (loss <= 0 ||
        std::uniform_real_distribution<double>(0.0, 1.0)(rng_) < std::exp(-loss / temperature))
      accept(point, *score);
  }

 private:
  void accept(Index point, double score) {
    current_ = point;
    current_score_ = score;
    digits_ = space_.digits(point);
  }

  const MapSpace& space_;
  std::mt19937_64 rng_;
  std::uint64_t budget_;
  AnnealingOptions options_;
  std::uint64_t step_ = 0;
  std::optional<Index> current_;
  double current_score_ = 0;
  std::vector<std::uint64_t> digits_;
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

std::string_view to_string(Objective objective) {
  for (const auto& [name, value] : kObjectives)
    if (value == objective) return name;
  return "?";
}

std::optional<Objective> parse_objective(std::string_view text) {
  for (const auto& [name, value] : kObjectives)
    if (name == text) return value;
  return std::nullopt;
}

std::string_view to_string(Strategy strategy) {
  for (const auto& [name, value] : kStrategies)
    if (value == strategy) return name;
  return "?";
}

std::optional<Strategy> parse_strategy(std::string_view text) {
  for (const auto& [name, value] : kStrategies)
    if (name == text) return value;
  return std::nullopt;
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
    text += fmt::format("|{},{},{},{},{},{},{},{},{},{}", l.name, l.capacity_bytes, l.instances,
                        l.fan_out, hex(l.read_bytes_per_cycle), hex(l.write_bytes_per_cycle),
                        l.shared_port, hex(l.energy_pj_per_byte), l.holds, l.double_buffered);
  return fnv1a64(text);
}

std::uint64_t cache_key(const workload::Einsum& einsum, const Hierarchy& hierarchy,
                        const SearchGoal& goal, const SearchSettings& s) {
  const std::string text = fmt::format(
      "{:x}|{:x}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}", op_signature(einsum),
      hierarchy_signature(hierarchy), to_string(goal.objective),
      goal.max_power_watts ? hex(*goal.max_power_watts) : std::string("-"), to_string(s.strategy),
      s.budget.max_evaluations, hex(s.budget.max_seconds), s.budget.patience, s.seed, s.threads,
      s.space.imperfect, s.space.explore_bypass, s.space.max_splits_per_dim);
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

std::vector<OpMapping> map_graph(const workload::Graph& graph, const arch::HardwareModel& hw,
                                 const SearchGoal& goal, const SearchSettings& settings,
                                 MappingCache& cache) {
  std::map<DataType, Hierarchy> hierarchies;
  std::vector<OpMapping> out;
  for (const workload::Op& op : graph.ops) {
    if (op.kind != workload::OpKind::Contraction) continue;
    const DataType precision = op_precision(op);
    auto h = hierarchies.find(precision);
    if (h == hierarchies.end())
      h = hierarchies.emplace(precision, make_hierarchy(hw, precision)).first;
    OpMapping result{op.name, std::nullopt, {}, false};
    const std::uint64_t key = cache_key(op.space, h->second, goal, settings);
    if (auto hit = cache.find(key)) {
      result.outcome = std::move(hit);
      result.cached = true;
    } else {
      result.outcome = map_op(op.space, h->second, goal, settings, result.why);
      if (result.outcome) cache.insert(key, *result.outcome);
    }
    out.push_back(std::move(result));
  }
  return out;
}

}  // namespace coda::mapper
