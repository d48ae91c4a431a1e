#pragma once
// The mapping-search options shared by `coda map` and `coda run --mapper search`: objective,
// strategy, budget, seed, threads and power cap (mapper/search.h).

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>

#include "mapper/schedule.h"

namespace CLI {
class App;
}

namespace coda::cli {

struct SearchArgs {
  std::string objective = "latency";
  std::string search = "heuristic";
  std::uint64_t evaluations = mapper::kCommandEvaluations;
  double seconds = 0;
  std::uint64_t patience = 0;
  std::uint64_t seed = 1;
  unsigned threads = 0;  // 0: every core
  double max_power = 0;  // watts; 0: no cap
};

void add_search_options(CLI::App& cmd, SearchArgs& args);

// The goal and settings the options name; nullopt after printing the error (an unknown objective
// or strategy, with the valid names) to `err`.
std::optional<mapper::ScheduleSearch> read_search(const SearchArgs& args, std::ostream& err);

}  // namespace coda::cli
