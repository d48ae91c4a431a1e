// How fast memory planning (mapper/memory_plan.h) handles a large graph: one TP=8 rank of a
// LLaMA-2-70B training step (8 micro-batches of one 4096-token sequence), as stage 0 of PP=4
// (20 layers, ~7-10k tensors) and as the whole model (PP=1: 80 layers, ~29-42k tensors), with full
// recomputation off and on. The graph is built once; each iteration plans it (liveness, peaks,
// greedy best-fit arena). Counters: tensors, the plan's figures in GiB, and tensors planned per
// second. The target is well under a second per plan.
//
//   ./build/bench/bench_memory_plan            (from the repository top: it reads configs/)

#include <benchmark/benchmark.h>

#include <cstdint>
#include <stdexcept>

#include "mapper/memory_plan.h"
#include "workloads/llm/llm_builder.h"

namespace {

using namespace coda;
using namespace coda::workload;

double gib(Bytes bytes) { return static_cast<double>(bytes.value) / (1024.0 * 1024.0 * 1024.0); }

void plan_training_step(benchmark::State& state) {
  Diagnostics diags;
  const auto config = llm::load_llm_config("configs/workloads/llm/llama2_70b.yaml", diags);
  if (!config) throw std::runtime_error(diags.format_all());
  const llm::LlmPhase phase{.kind = llm::PhaseKind::Training, .batch = 8, .seq_len = 4096,
                            .recompute = state.range(1) != 0};
  const llm::Parallelism par{.tp = 8, .pp = static_cast<std::uint64_t>(state.range(0)), .dp = 1,
                             .stage = 0, .micro_batches = 8};
  const auto graph = llm::try_build_llm(*config, phase, par, diags);
  if (!graph) throw std::runtime_error(diags.format_all());
  mapper::MemoryPlan plan;
  for (auto _ : state) {
    plan = mapper::plan_memory(*graph);
    benchmark::DoNotOptimize(plan.arena);
  }
  state.counters["ops"] = static_cast<double>(graph->ops.size());
  state.counters["tensors"] = static_cast<double>(graph->tensors.size());
  state.counters["persistent_GiB"] = gib(plan.persistent);
  state.counters["arena_GiB"] = gib(plan.arena);
  state.counters["peak_live_GiB"] = gib(plan.peak_live);
  state.counters["no_reuse_GiB"] = gib(plan.transient_without_reuse);
  state.counters["tensors/s"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * static_cast<double>(graph->tensors.size()),
      benchmark::Counter::kIsRate);
}
BENCHMARK(plan_training_step)
    ->ArgsProduct({{4, 1}, {0, 1}})
    ->ArgNames({"pp", "recompute"})
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
