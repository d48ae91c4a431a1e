#pragma once
// `coda map --arch A --workload W [--op NAME] [--objective O] [--search S] ...`: map the
// contractions of a workload onto an architecture with the loop-nest mapper. With --op, print
// that op's best mapping as a loop nest with its cost, the runners-up and the rejection counts by
// reason; without, a table of every contraction (repeated shapes mapped once).

#include <iosfwd>
#include <string>

#include "cli/search_options.h"
#include "cli/workload_source_options.h"

namespace CLI {
class App;
}

namespace coda::cli {

struct MapArgs {
  std::string arch;
  WorkloadSourceArgs source;  // --workload FILE, --llm or --cnn
  std::string op;
  SearchArgs search;
  std::string precision;
};

CLI::App* add_map_command(CLI::App& app, MapArgs& args);
int run_map_command(const MapArgs& args, std::ostream& out, std::ostream& err);

}  // namespace coda::cli
