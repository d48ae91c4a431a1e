// Serving simulation speed (docs/serving.md, "Speed"). Timed program, not Google Benchmark: one
// simulation is a second long and its wall time is the figure. Run from the repository top (it
// reads configs/), on one core:
//   taskset -c 0 build/bench/bench_serving
// Reports, in the same run:
//   10,000 requests of LLaMA-2-7B on one H100 (Poisson at 10 requests/s, log-normal lengths:
//   prompts of median 512, answers of median 200): wall time, iterations, graphs priced;
//   the baseline, every iteration priced from fresh graphs (no memoisation, as pricing each step
//   with its own `coda run` would, without the process start): the time per iteration measured
//   on the run's first 300 iterations, times the run's iterations, and the ratio to the real run;
//   the rate search within an SLO (2 s TTFT, 100 ms TPOT at p99) over the same 10,000 requests
//   (the offline run, the bracket's probes, 12 bisections).

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>

#include <fmt/format.h>

#include "arch/arch_spec.h"
#include "arch/hardware_model.h"
#include "sim/serving/iteration_cost.h"
#include "sim/serving/requests.h"
#include "sim/serving/simulator.h"
#include "workloads/llm/llm_config.h"

namespace {

namespace sv = coda::sim::serving;
using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

}  // namespace

int main() {
  coda::Diagnostics diags;
  const auto arch =
      coda::arch::load_arch(std::filesystem::path("configs/arch/nvidia_h100_sxm.yaml"), diags);
  const auto model =
      coda::workload::llm::load_llm_config("configs/workloads/llm/llama2_7b.yaml", diags);
  if (!arch || !model) {
    std::fputs(diags.format_all().c_str(), stderr);
    return 1;
  }
  const coda::arch::HardwareModel hw(arch->spec);
  const sv::PricerOptions pricing{.tp = 1};  // the arch's fusion, as coda run
  sv::RequestSpec spec;
  spec.arrivals = {.kind = sv::ArrivalKind::Poisson, .rate = 10};
  spec.count = 10000;
  spec.input = {
      .kind = sv::LengthKind::LogNormal, .min = 16, .max = 3000, .median = 512, .sigma = 0.8};
  spec.output = {
      .kind = sv::LengthKind::LogNormal, .min = 4, .max = 1000, .median = 200, .sigma = 0.8};
  const sv::Slo slo{.ttft = 2.0, .tpot = 0.1};
  const sv::Deployment deployment;

  auto start = Clock::now();
  auto pricer = sv::IterationPricer::make(*model, hw, pricing, diags);
  if (!pricer) {
    std::fputs(diags.format_all().c_str(), stderr);
    return 1;
  }
  const auto result =
      sv::simulate(*pricer, deployment, sv::make_requests(spec), spec.arrivals, slo, diags);
  const double run_s = since(start);
  if (!result) {
    std::fputs(diags.format_all().c_str(), stderr);
    return 1;
  }
  const std::size_t iterations = result->iterations.size();
  std::printf(
      "10,000 requests, LLaMA-2-7B on H100 (poisson 10/s): %.3f s wall, %zu iterations, "
      "%zu graphs priced, %.2f us per iteration; simulated %.1f s, %.0f output tokens/s, "
      "TTFT p99 %.3f s, TPOT p99 %.4f s\n",
      run_s, iterations, pricer->graphs_priced(), 1e6 * run_s / static_cast<double>(iterations),
      result->summary.duration, result->summary.output_tokens_per_s, result->summary.ttft.p99,
      result->summary.tpot.p99);

  // Baseline: each of the first 300 iterations priced by a fresh pricer (nothing kept): a copy of
  // one just made, so that the whole-model build make() does once is not timed per iteration.
  const auto made = sv::IterationPricer::make(*model, hw, pricing, diags);
  const std::size_t sample = std::min<std::size_t>(300, iterations);
  start = Clock::now();
  double check = 0;
  for (std::size_t i = 0; i < sample; ++i) {
    const sv::IterationRecord& it = result->iterations[i];
    sv::IterationPricer fresh = *made;
    sv::IterationBatch b;
    b.decode_sequences = it.decode_sequences;
    b.decode_context_sum = it.decode_sequences * 700;  // any context: the cost is the graphs'
    b.decode_window_context_sum = b.decode_context_sum;  // (a windowed model reads these)
    if (it.prefill_tokens > 0) b.prefill.push_back({it.prefill_tokens, 0, true});
    check += fresh.price(b).total();
  }
  const double per_iteration = since(start) / static_cast<double>(sample);
  const double baseline = per_iteration * static_cast<double>(iterations);
  std::printf(
      "baseline, fresh graphs every iteration: %.1f us per iteration (%zu sampled), "
      "%.1f s for the run's %zu iterations: %.0fx the memoised run (checksum %.3g)\n",
      1e6 * per_iteration, sample, baseline, iterations, baseline / run_s, check);

  start = Clock::now();
  const auto searched = sv::search_rate(*pricer, deployment, spec, slo, 12, diags);
  const double search_s = since(start);
  if (!searched) {
    std::fputs(diags.format_all().c_str(), stderr);
    return 1;
  }
  std::printf(
      "rate search (p99 TTFT <= 2 s, TPOT <= 100 ms; offline run, bracket and 12 bisections, "
      "10,000 requests each): %.2f s wall; offline %.3f requests/s, highest within the SLO "
      "%.3f requests/s\n",
      search_s, searched->offline_rps, searched->rate);
  return 0;
}
