#pragma once
// The command-line options that name a workload (a file, --llm or --cnn, and the parameters each
// takes), shared by `coda run`, `coda map` and `coda workload`, and their translation into a
// workload::WorkloadSource (workloads/source.h).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/diagnostics.h"
#include "workloads/source.h"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace coda::cli {

struct WorkloadSourceArgs {
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
  std::string precision = "mixed";  // training: pure, mixed, autocast or fp8
  std::string runtime = "default";  // inference: default or hf_transformers
  std::uint64_t tp = 1, pp = 1, dp = 1, stage = 0, micro_batches = 1;
  bool sequence_parallel = false;
  std::uint64_t cp = 1;  // --cp
  std::uint64_t ep = 1;  // --ep
  // LLM inference quantization (workloads/llm/quantization.h): a scheme and the KV cache's type;
  // empty: none, the model's type.
  std::string quant;
  std::string kv_dtype;
  bool fp8_context_fmha = false;
  // CNN input (batch is shared with the LLM) and element type for LLM and CNN.
  std::uint64_t image = 224;
  std::string dtype;  // empty: the model's own (LLM) or int8 (CNN)
  // ONNX: dynamic dims as NAME=VALUE, and whether to skip unsupported nodes (listed).
  std::vector<std::string> bind;
  bool skip_unsupported = false;
  bool no_fuse_attention = false;  // ONNX: keep the exported attention ops as they are
  bool no_fuse_functions = false;  // ONNX: keep exported norms' and activations' pieces
};

// Adds --llm, --cnn and the LLM, CNN and ONNX parameters to `cmd`; `file` is the command's own
// option for a workload file (positional or --workload), made exclusive with --llm and --cnn.
// With `onnx_skip`, also --skip-unsupported (a command that has its own leaves it out and sets
// skip_unsupported itself).
void add_workload_source_options(CLI::App& cmd, WorkloadSourceArgs& args, CLI::Option* file,
                                 bool onnx_skip = true);

// Whether the arguments name a source at all.
bool names_a_source(const WorkloadSourceArgs& args);

// The source the arguments name; nullopt with the problem (an unknown phase or element type, a
// malformed --bind) in `diags`.
std::optional<workload::WorkloadSource> workload_source(const WorkloadSourceArgs& args,
                                                        Diagnostics& diags);

}  // namespace coda::cli
