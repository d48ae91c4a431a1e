// How fast coda prices LLM training (sim/training_step.h): one step of LLaMA-2-7B on 8 H100s
// (tp 2, pp 4, 8 micro-batches: three distinct stage graphs priced), and the layout search over
// every layout of 8 H100s (LLaMA-2-7B, global batch 64) and of 64 H100s on the DGX H100 cluster
// (LLaMA-2-70B, global batch 128). Counters: layouts priced per search and per second, and the
// best layout's MFU (a figure of the model, for the closing note; not a target).
//
//   ./build/bench/bench_training        (from the repository top: it reads configs/)

#include <benchmark/benchmark.h>

#include <optional>
#include <stdexcept>
#include <string>

#include "arch/arch_spec.h"
#include "arch/cluster_spec.h"
#include "arch/hardware_model.h"
#include "sim/training_step.h"
#include "workloads/llm/llm_config.h"

namespace {

using namespace coda;
namespace tr = sim::training;

workload::llm::LlmConfig model(const std::string& name) {
  Diagnostics diags;
  auto config = workload::llm::load_llm_config("configs/workloads/llm/" + name + ".yaml", diags);
  if (!config) throw std::runtime_error(diags.format_all());
  return *config;
}

void price_step(benchmark::State& state) {
  Diagnostics diags;
  const auto arch = arch::load_arch("configs/arch/nvidia_h100_sxm.yaml", diags);
  if (!arch) throw std::runtime_error(diags.format_all());
  const arch::HardwareModel hw(arch->spec);
  const auto config = model("llama2_7b");
  double mfu = 0;
  for (auto _ : state) {
    const auto r = tr::price_training_step(config, 4096, {.tp = 2, .pp = 4, .micro_batches = 8},
                                           {}, hw, {}, diags);
    if (!r) throw std::runtime_error(diags.format_all());
    mfu = r->mfu;
    // Not DoNotOptimize(mfu): with Debian 12's Google Benchmark and GCC 12 the double read back
    // as 0 after the loop (observed 2026-12-03; its asm operand is "+m,r"), so an integer.
    benchmark::DoNotOptimize(r->tokens);
  }
  state.counters["MFU"] = mfu;
}
BENCHMARK(price_step)->Unit(benchmark::kMillisecond);

void search(benchmark::State& state) {
  const bool cluster_run = state.range(0) != 0;
  Diagnostics diags;
  std::optional<arch::LoadedCluster> cluster;
  std::optional<arch::LoadedArch> arch;
  if (cluster_run) {
    cluster = arch::load_cluster("configs/cluster/dgx_h100_superpod.yaml", diags);
    if (cluster) arch = cluster->chip;
  } else {
    arch = arch::load_arch("configs/arch/nvidia_h100_sxm.yaml", diags);
  }
  if (!arch) throw std::runtime_error(diags.format_all());
  const arch::HardwareModel hw(arch->spec);
  const auto config = model(cluster_run ? "llama2_70b" : "llama2_7b");
  tr::StepOptions options;
  if (cluster) options.cluster = &cluster->spec;
  const tr::LayoutSearch space{.chips = cluster_run ? 64u : 8u,
                               .global_batch = cluster_run ? 128u : 64u};
  tr::LayoutSearchResult found;
  for (auto _ : state) {
    found = tr::search_layouts(config, cluster_run ? 4096 : 2048, space, {}, hw, options);
    benchmark::DoNotOptimize(found.tried);
  }
  state.counters["layouts"] = static_cast<double>(found.tried);
  state.counters["layouts/s"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * static_cast<double>(found.tried),
                         benchmark::Counter::kIsRate);
  state.counters["best MFU"] = found.ranked.empty() ? 0.0 : found.ranked.front().mfu;
}
BENCHMARK(search)->Arg(0)->Arg(1)->ArgName("cluster64")->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
