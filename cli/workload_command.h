#pragma once
// `coda workload W [--passes LIST] [--list-passes] [--summary] [--json OUT] [--export-trace OUT]`:
// load a workload, run graph passes on it, print its summary, and write the summary and the
// (transformed) graph as JSON.

#include <iosfwd>
#include <cstdint>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace coda::cli {

struct WorkloadArgs {
  // Exactly one source: a workload file (.yaml / .yml layer list, .csv SCALE-Sim topology,
  // .json coda trace, .onnx model), an LLM (`llm`: a coda model YAML or a Hugging Face
  // config.json, built for a phase and a parallelism) or a network of the CNN zoo (`cnn`).
  std::string file;
  std::string llm;
  std::string cnn;
  // LLM phase and parallelism.
  std::string phase = "prefill";
  std::uint64_t batch = 1;
  std::uint64_t seq = 2048;
  bool recompute = false;
  std::uint64_t tp = 1, pp = 1, dp = 1, stage = 0, micro_batches = 1;
  bool sequence_parallel = false;
  // CNN input (batch is shared with the LLM) and element type for LLM and CNN.
  std::uint64_t image = 224;
  std::string dtype;  // empty: the model's own (LLM) or int8 (CNN)
  // ONNX: dynamic dims as NAME=VALUE, and whether to skip unsupported nodes (counted).
  std::vector<std::string> bind;
  bool skip_unsupported = false;
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
