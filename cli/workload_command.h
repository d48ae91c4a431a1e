#pragma once
// `coda workload W [--passes LIST] [--list-passes] [--summary] [--json OUT] [--export-trace OUT]`:
// load a workload, run graph passes on it, print its summary, and write the summary and the
// (transformed) graph as JSON.

#include <iosfwd>
#include <cstdint>
#include <string>
#include <vector>

#include "cli/workload_source_options.h"

namespace CLI {
class App;
}

namespace coda::cli {

struct WorkloadArgs {
  WorkloadSourceArgs source;  // the file, --llm or --cnn and their parameters
  std::string passes;         // "a,b,c", run in order
  bool list_passes = false;
  bool summary = false;       // print the summary table (also when nothing else is asked)
  std::string json_out;       // summary and pass reports as JSON
  std::string trace_out;      // the graph after the passes, as a trace
};

// Adds the `workload` subcommand to `app`, filling `args` when it parses.
CLI::App* add_workload_command(CLI::App& app, WorkloadArgs& args);

// Runs it. Exit codes as run_main's: 0 success, 1 bad input, 2 bad usage.
int run_workload_command(const WorkloadArgs& args, std::ostream& out, std::ostream& err);

}  // namespace coda::cli
