#pragma once
// `coda serve --arch A --llm M (--rate R | --concurrency N | --offline | --trace F) ...`: an LLM
// serving deployment under a request stream (sim/serving/, docs/serving.md): continuous batching,
// a paged KV cache, TTFT/TPOT/ITL/E2E percentiles, throughput and goodput under an SLO; with
// --search-rate, the highest Poisson rate within the SLO; with --search-deployments --chips N,
// every TP x replicas layout of N chips (prefill-first and chunked) ranked by that rate.

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace coda::cli {

struct ServeArgs {
  std::string arch;
  std::string llm;
  std::string dtype;
  std::string quant;     // --quant: an inference quantization scheme
  std::string kv_dtype;  // --kv-dtype: the KV cache's type
  bool fp8_context_fmha = false;
  std::uint64_t tp = 1;
  std::uint64_t pp = 1;  // pipeline stages per replica
  std::uint64_t replicas = 1;
  std::string disaggregate;  // "P:D": P prefill and D decode replicas
  std::uint64_t decode_tp = 0;  // the decode pool's TP; 0: --tp
  // Arrivals: one of these.
  double rate = 0;                // Poisson (or gamma with --cv) requests per second
  double cv = 0;                  // gamma gaps' coefficient of variation; 0: Poisson
  std::uint64_t concurrency = 0;  // closed loop
  std::uint64_t warmup = 0;       // the harness's warm-up requests, left out of the statistics
  bool offline = false;
  std::string trace;
  std::uint64_t requests = 1000;
  std::string input_len = "512";
  std::string output_len = "128";
  std::uint64_t seed = 1;
  std::uint64_t shared_prefix = 0;
  // Scheduler.
  std::uint64_t max_batch = 256;
  std::uint64_t max_batched_tokens = 0;
  std::string runtime = "vllm";  // the scheduler defaults: vllm or tensorrt_llm
  std::string batching;          // empty: the runtime's
  bool chunked_prefill = false;  // --batching chunked
  bool prefix_caching = false;
  std::string policy = "fcfs";
  std::string kv_admission;  // empty: the runtime's
  std::string preemption = "recompute";
  double swap_space_gib = 0;  // 0: not given (vLLM's default, 4 GiB)
  std::uint64_t block_size = 16;
  double memory_utilization = 0.9;
  double watermark = 0.01;
  std::uint64_t kv_blocks = 0;
  double iteration_overhead_ms = -1;  // < 0: the arch's calibration.llm_step_fixed_cost
  // SLO and search.
  double slo_ttft_ms = 0;
  double slo_tpot_ms = 0;
  double slo_percentile = 99;
  std::vector<double> rates;  // a latency-vs-rate curve
  bool search_rate = false;
  int search_steps = 12;
  bool search_deployments = false;
  std::uint64_t chips = 0;
  double chip_cost = 0;  // per chip-hour; 0: no cost column
  // Pricing.
  std::string fusion;
  std::string attention;
  std::string decode_attention;
  std::string out;
};

CLI::App* add_serve_command(CLI::App& app, ServeArgs& args);
int run_serve_command(const ServeArgs& args, std::ostream& out, std::ostream& err);

}  // namespace coda::cli
