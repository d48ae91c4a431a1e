// How fast the LLM builder makes a large training-step graph: LLaMA-3-70B, TP=8, PP=4 (stage 0,
// 20 layers), 8 micro-batches of one 8192-token sequence, full recomputation off and on.
// Reports ops and tensors built per graph as counters; the target is well under 100 ms a build.
//
//   ./build/bench/bench_llm            (from the repository top: it reads configs/)

#include <benchmark/benchmark.h>

#include <stdexcept>

#include "workloads/llm/llm_builder.h"

namespace {

using namespace coda;
using namespace coda::workload;

void build_training_step(benchmark::State& state) {
  Diagnostics diags;
  const auto config = llm::load_llm_config("configs/workloads/llm/llama3_70b.yaml", diags);
  if (!config) throw std::runtime_error(diags.format_all());
  const llm::LlmPhase phase{.kind = llm::PhaseKind::Training, .batch = 8, .seq_len = 8192,
                            .recompute = state.range(0) != 0};
  const llm::Parallelism par{.tp = 8, .pp = 4, .dp = 1, .stage = 0, .micro_batches = 8};
  std::size_t ops = 0, tensors = 0;
  for (auto _ : state) {
    const Graph g = llm::build_llm(*config, phase, par);
    ops = g.ops.size();
    tensors = g.tensors.size();
    benchmark::DoNotOptimize(ops);
  }
  state.counters["ops"] = static_cast<double>(ops);
  state.counters["tensors"] = static_cast<double>(tensors);
  state.counters["ops/s"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * static_cast<double>(ops),
      benchmark::Counter::kIsRate);
}
BENCHMARK(build_training_step)->Arg(0)->Arg(1)->ArgName("recompute")->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
