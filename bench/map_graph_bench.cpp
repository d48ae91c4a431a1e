// How fast the mapper maps whole LLM graphs (the Mapper issue's targets): every contraction of
// LLaMA-2-7B prefill (2048 tokens) on the TPU v4 and H200 presets (target: under 1 s each), and
// GPT-3 175B prefill (2048 tokens) and decode (one token over a 2047-token cache: GPT-3 has
// 2048 learned positions) on an A100
// with TP=4 (target: under 2 s each). The heuristic search with a budget of 2000 evaluations per
// distinct op shape; repeated shapes come from the cache, which starts empty every iteration.
// Counters: contractions, distinct shapes searched, cache hits.
//
//   ./build/bench/bench_map_graph     (from the repository top: it reads configs/)

#include <benchmark/benchmark.h>

#include <stdexcept>
#include <string>

#include "arch/arch_spec.h"
#include "mapper/search.h"
#include "workloads/llm/llm_builder.h"

namespace {

using namespace coda;
using namespace coda::workload;

void map_llm(benchmark::State& state, const std::string& arch_file, const std::string& model,
             llm::PhaseKind kind, std::uint32_t tp, std::uint64_t seq) {
  Diagnostics diags;
  const auto arch = arch::load_arch(arch_file, diags);
  const auto config = llm::load_llm_config(model, diags);
  if (!arch || !config) throw std::runtime_error(diags.format_all());
  const arch::HardwareModel hw(arch->spec);
  const auto graph = llm::try_build_llm(*config, {.kind = kind, .batch = 1, .seq_len = seq},
                                        {.tp = tp, .pp = 1, .dp = 1, .stage = 0,
                                         .micro_batches = 1},
                                        diags);
  if (!graph) throw std::runtime_error(diags.format_all());
  const mapper::SearchSettings settings{.strategy = mapper::Strategy::Heuristic,
                                        .budget = {.max_evaluations = 2000}};
  std::size_t mapped = 0, distinct = 0, hits = 0;
  for (auto _ : state) {
    mapper::MappingCache cache;
    const auto result = mapper::map_graph(*graph, hw, {}, settings, cache);
    mapped = result.size();
    distinct = cache.size();
    hits = cache.hits();
    benchmark::DoNotOptimize(mapped);
  }
  state.counters["contractions"] = static_cast<double>(mapped);
  state.counters["distinct"] = static_cast<double>(distinct);
  state.counters["cache_hits"] = static_cast<double>(hits);
}

BENCHMARK_CAPTURE(map_llm, llama2_7b_prefill_tpu_v4, "configs/arch/google_tpu_v4.yaml",
                  "configs/workloads/llm/llama2_7b.yaml", llm::PhaseKind::Prefill, 1, 2048)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(map_llm, llama2_7b_prefill_h200, "configs/arch/nvidia_h200_sxm.yaml",
                  "configs/workloads/llm/llama2_7b.yaml", llm::PhaseKind::Prefill, 1, 2048)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(map_llm, gpt3_prefill_a100_tp4, "configs/arch/nvidia_a100_sxm_80gb.yaml",
                  "configs/workloads/llm/gpt3_175b.yaml", llm::PhaseKind::Prefill, 4, 2048)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(map_llm, gpt3_decode_a100_tp4, "configs/arch/nvidia_a100_sxm_80gb.yaml",
                  "configs/workloads/llm/gpt3_175b.yaml", llm::PhaseKind::Decode, 4, 2047)
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
