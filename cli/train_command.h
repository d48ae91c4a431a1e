#pragma once
// `coda train --arch A --llm M --seq S [--tp --cp --ep --pp --dp --micro-batch-size --micro-batches
// --recompute --zero ...]`: one optimizer step of LLM training on tp x pp x dp chips
// (sim/training_step.h): step time, tokens/s, MFU and HFU, memory per chip and whether it fits,
// and each pipeline stage's time split into compute, bubble, exposed data-parallel communication
// and optimizer. With --search-layouts --chips N --global-batch B, every layout of N chips priced
// and the best few printed.

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "cli/search_options.h"

namespace CLI {
class App;
}

namespace coda::cli {

struct TrainArgs {
  std::string arch;
  std::string cluster;
  std::string llm;
  std::string dtype;
  std::uint64_t seq = 2048;
  std::uint64_t tp = 1, pp = 1, dp = 1, cp = 1, ep = 1;
  std::uint64_t virtual_stages = 1;
  std::uint64_t micro_batch_size = 1;
  std::uint64_t micro_batches = 1;
  std::uint64_t global_batch = 0;  // sequences; with --search-layouts (or instead of --micro-batches)
  bool recompute = false;
  std::uint64_t recompute_layers = 0;  // --recompute-layers
  bool sequence_parallel = false;
  bool pipeline_counts_embedding = false;  // --account-for-embedding-in-pipeline-split
  bool pipeline_counts_loss = false;       // --account-for-loss-in-pipeline-split
  std::uint32_t zero = 0;
  double bucket_mib = 25;
  std::string grad_reduce;
  std::string precision = "mixed";
  std::string runtime = "default";  // default or hf_transformers (GPT2LMHeadModel, autocast)
  bool overlap_param_gather = false;
  std::string fusion;
  std::string attention;
  std::string engine = "analytical";
  std::string launch = "graph";
  std::string mapper = "fixed";
  SearchArgs search;
  bool search_layouts = false;
  std::uint64_t chips = 0;
  std::uint64_t top = 10;
  std::vector<std::uint64_t> search_cp{1};  // --search-cp
  std::vector<std::uint64_t> search_ep{1};  // --search-ep
  std::string json_out;
};

CLI::App* add_train_command(CLI::App& app, TrainArgs& args);
int run_train_command(const TrainArgs& args, std::ostream& out, std::ostream& err);

}  // namespace coda::cli
