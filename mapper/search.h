#pragma once
// Searching a MapSpace for the best mapping of one op, behind one ask/tell interface, and
// mapping every contraction of a graph with memoization.
//
// A strategy proposes points (ask) and learns their scores (tell); run_search drives it against
// the loop-nest model until the strategy runs dry or the budget ends. Strategies:
//   exhaustive  every valid point of an index range, in order (next_valid skips invalid runs);
//   random      uniform valid points (MapSpace::sample), seeded;
//   heuristic   iterated local search: from the best of 8 random valid points, coordinate
//               descent over the map space's digits, each digit through a bounded neighbourhood
//               (every value where it has at most 24, else one prime factor or a whole slot's
//               factor moved between levels, one loop moved within a level's order, and 4 random
//               values), plus exchanges (two dims trading prime factors between two levels),
//               until a whole cycle improves nothing (moves to equal scores allowed 8 times per
//               improvement: latency has plateaus); then a kick of the best point (2 to 4 random
//               moves), or every third time a fresh random start;
//   annealing   simulated annealing over the same structured moves for three quarters of the
//               budget: a worse point is accepted with probability exp(-relative loss /
//               temperature), the temperature falling geometrically from `initial` to `final`,
//               and the walk returns to the best point after budget / 64 steps without a new
//               best; the last quarter is the heuristic's descent from the best point.
// Every strategy is deterministic for a seed and a budget counted in evaluations. A time limit
// is a guard that makes a run stop early, and so depend on the machine.
//
// Objectives (lower is better): latency (cycles), energy (pJ), or EDP (pJ x cycles), optionally
// under a power cap: a mapping whose average power (energy / time) exceeds it is rejected.

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/enum_table.h"
#include "mapper/loop_nest_model.h"
#include "mapper/map_space.h"
#include "mapper/mapping.h"
#include "workloads/graph.h"

namespace coda::mapper {

enum class Objective : std::uint8_t { Latency, Energy, Edp };
std::string_view to_string(Objective objective);  // "latency", "energy", "edp"
std::optional<Objective> parse_objective(std::string_view text);
std::string objective_list();  // "latency, energy, edp"
EnumTable<Objective> objective_names();  // the table behind them (a config reader's EnumTable)

struct SearchGoal {
  Objective objective = Objective::Latency;
  std::optional<double> max_power_watts;  // reject mappings whose average power exceeds it
  friend bool operator==(const SearchGoal&, const SearchGoal&) = default;
};

// The score of a feasible cost under a goal (lower is better); nullopt when the cost breaks the
// power cap. Precondition: cost.ok().
std::optional<double> score(const MappingCost& cost, const SearchGoal& goal, double clock_hz);

class SearchStrategy {
 public:
  virtual ~SearchStrategy() = default;
  virtual std::string_view name() const = 0;
  // The next point to evaluate, or nullopt when the strategy has nothing more to propose.
  virtual std::optional<MapSpace::Index> ask() = 0;
  // The score of the point last asked for; nullopt when it is invalid or breaks the goal.
  virtual void tell(MapSpace::Index point, std::optional<double> score) = 0;
};

enum class Strategy : std::uint8_t { Exhaustive, Random, Heuristic, Annealing };
std::string_view to_string(Strategy strategy);
std::optional<Strategy> parse_strategy(std::string_view text);
std::string strategy_list();  // "exhaustive, random, heuristic, annealing" (table order)
EnumTable<Strategy> strategy_names();

struct AnnealingOptions {
  double initial_temperature = 2.0;  // relative loss accepted with probability 1/e at the start
  double final_temperature = 1e-3;
};

// `budget_evaluations` sizes the annealing schedule; the others ignore it.
std::unique_ptr<SearchStrategy> make_strategy(Strategy strategy, const MapSpace& space,
                                              std::uint64_t seed,
                                              std::uint64_t budget_evaluations,
                                              const AnnealingOptions& annealing = {});
// Exhaustive over [begin, end) only (one worker's share of a parallel search).
std::unique_ptr<SearchStrategy> make_exhaustive(const MapSpace& space, MapSpace::Index begin,
                                                MapSpace::Index end);

// The evaluation budget per op of `coda run --mapper search`, `coda map` and a sweep's `mapper:
// search` workloads (SearchBudget's own default, 100,000, is the library's for a single op).
inline constexpr std::uint64_t kCommandEvaluations = 20'000;

struct SearchBudget {
  std::uint64_t max_evaluations = 100'000;
  double max_seconds = 0;        // 0: no time limit
  std::uint64_t patience = 0;    // stop after this many evaluations without improvement; 0: never
};

// One of the best points found.
struct Candidate {
  MapSpace::Index index = 0;
  double score = 0;
  Mapping mapping;
  MappingCost cost;
};

struct SearchOutcome {
  std::string strategy;
  std::vector<Candidate> best;   // the best first, then up to kRunnersUp runners-up
  std::uint64_t evaluated = 0;   // points scored (valid or not)
  std::uint64_t valid = 0;       // feasible and within the goal
  // Points rejected, by reason (mapping.h's Infeasible), and for breaking the power cap.
  std::array<std::uint64_t, 8> rejected{};
  std::uint64_t over_power = 0;
  std::string stopped;           // "exhausted", "evaluations", "time", "patience"
  bool found() const { return !best.empty(); }
};

inline constexpr std::size_t kRunnersUp = 4;

SearchOutcome run_search(const MapSpace& space, SearchStrategy& strategy, const SearchGoal& goal,
                         const SearchBudget& budget);

// Exhaustive search of the whole space split into `threads` contiguous index ranges, one worker
// each; the merge keeps the lowest score, ties to the lower index, so the outcome does not depend
// on the thread count. `budget.max_evaluations` applies per worker.
SearchOutcome search_exhaustive(const MapSpace& space, const SearchGoal& goal,
                                const SearchBudget& budget, unsigned threads);

// What identifies a mapping problem for memoization: the op's iteration space and accesses
// (extents, index expressions, roles, element types; never names), the hierarchy, the goal and
// the search settings. Equal keys have equal best mappings.
std::uint64_t op_signature(const workload::Einsum& einsum);
std::uint64_t hierarchy_signature(const Hierarchy& hierarchy);

struct SearchSettings {
  Strategy strategy = Strategy::Heuristic;
  SearchBudget budget;
  std::uint64_t seed = 1;
  unsigned threads = 1;  // exhaustive: workers per search; others: searches at once (map_batch)
  MapSpaceOptions space;
};

// The mapping search of one op: builds the map space and runs the strategy. nullopt with `why`
// when the op has no map space on this hierarchy.
std::optional<SearchOutcome> map_op(const workload::Einsum& einsum, const Hierarchy& hierarchy,
                                    const SearchGoal& goal, const SearchSettings& settings,
                                    std::string& why);

// Memoized map_op results, keyed by (op, hierarchy, goal, settings); safe to share between
// threads. Owned by the caller (no global cache).
class MappingCache {
 public:
  std::optional<SearchOutcome> find(std::uint64_t key) const;
  void insert(std::uint64_t key, SearchOutcome outcome);
  std::size_t size() const;
  std::uint64_t hits() const;

 private:
  mutable std::mutex mutex_;
  std::map<std::uint64_t, SearchOutcome> entries_;
  mutable std::uint64_t hits_ = 0;
};

std::uint64_t cache_key(const workload::Einsum& einsum, const Hierarchy& hierarchy,
                        const SearchGoal& goal, const SearchSettings& settings);

// A batch of mapping problems (each an op's einsum on a hierarchy; both must outlive the call)
// mapped with every distinct problem (cache key) searched once: taken from `cache`, or searched
// and added to it. Distinct problems are searched in parallel, on `settings.threads` workers,
// for the heuristic, random and annealing strategies (one thread each: their results do not
// depend on the thread count); exhaustive searches run one after another, each split over
// `settings.threads` workers. Results come in request order; `cached` marks a problem found in
// the cache or met earlier in the batch.
struct MapRequest {
  const workload::Einsum* einsum = nullptr;
  const Hierarchy* hierarchy = nullptr;
};
struct MapResult {
  std::optional<SearchOutcome> outcome;  // nullopt: no map space (`why`)
  std::string why;
  bool cached = false;
};
std::vector<MapResult> map_batch(const std::vector<MapRequest>& requests, const SearchGoal& goal,
                                 const SearchSettings& settings, MappingCache& cache);

// Every contraction of a graph mapped, repeated signatures once through `cache` (map_batch).
struct OpMapping {
  std::string op;
  std::optional<SearchOutcome> outcome;  // nullopt: no map space (`why`)
  std::string why;
  bool cached = false;
};
std::vector<OpMapping> map_graph(const workload::Graph& graph, const arch::HardwareModel& hw,
                                 const SearchGoal& goal, const SearchSettings& settings,
                                 MappingCache& cache);

}  // namespace coda::mapper
