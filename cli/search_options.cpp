#include "cli/search_options.h"

#include <algorithm>
#include <ostream>
#include <thread>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

namespace coda::cli {

void add_search_options(CLI::App& cmd, SearchArgs& args) {
  cmd.add_option("--objective", args.objective, "What the mapping search minimises: latency, "
                                                "energy or edp")
      ->capture_default_str();
  cmd.add_option("--search", args.search, "Mapping search: heuristic, exhaustive, random or "
                                          "annealing")
      ->capture_default_str();
  cmd.add_option("--evaluations", args.evaluations, "Mapping evaluation budget per op")
      ->capture_default_str();
  cmd.add_option("--seconds", args.seconds, "Mapping time limit per op (0: none; makes runs "
                                            "machine-dependent)");
  cmd.add_option("--patience", args.patience,
                 "Stop an op's search after this many evaluations without improvement (0: never)");
  cmd.add_option("--seed", args.seed, "Seed of the random, heuristic and annealing searches")
      ->capture_default_str();
  cmd.add_option("--threads", args.threads,
                 "Worker threads (0: every core): an exhaustive search is split over them; the "
                 "other searches map that many distinct shapes at once. Results do not depend on "
                 "it, except for an exhaustive search its budget stops early (the budget is per "
                 "worker)")
      ->capture_default_str();
  cmd.add_option("--max-power", args.max_power, "Reject mappings above this average power (W)");
}

std::optional<mapper::ScheduleSearch> read_search(const SearchArgs& args, std::ostream& err) {
  const auto objective = mapper::parse_objective(args.objective);
  if (!objective) {
    err << fmt::format("error: --objective: unknown objective '{}'; expected one of: {}\n",
                       args.objective, mapper::objective_list());
    return std::nullopt;
  }
  const auto strategy = mapper::parse_strategy(args.search);
  if (!strategy) {
    err << fmt::format("error: --search: unknown search '{}'; expected one of: {}\n",
                       args.search, mapper::strategy_list());
    return std::nullopt;
  }
  mapper::ScheduleSearch out;
  out.goal = {*objective,
              args.max_power > 0 ? std::optional<double>(args.max_power) : std::nullopt};
  out.settings = {.strategy = *strategy,
                  .budget = {.max_evaluations = args.evaluations,
                             .max_seconds = args.seconds,
                             .patience = args.patience},
                  .seed = args.seed,
                  .threads = args.threads > 0 ? args.threads
                                              : std::max(1U, std::thread::hardware_concurrency())};
  return out;
}

}  // namespace coda::cli
