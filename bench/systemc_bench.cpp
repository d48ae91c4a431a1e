// How fast the SystemC engine simulates whole workloads (the SystemC issue's targets: each under
// 2 s on one core): ResNet-50 (batch 1) on the 128x128 TPU-like preset and one LLaMA-2-7B decode
// step (batch 1, 1024 tokens cached, int8) on the 3-core RK3588 NPU preset. Each iteration runs
// the engine once: the analytical pricing it builds on, planning the tile programs, starting the
// worker program, elaborating and simulating, and reading the outcome back. One GEMM of 64^3 on
// the RK3588 (a few tile steps) shows what every run pays whatever it simulates: starting the
// worker program (posix_spawn + exec + loading libsystemc) and the JSON both ways. Baseline in the same run: the
// analytical engine on the same schedule. Counters: simulated tile steps and memory requests
// (TLM transactions, the engine's events) per second of wall time, quantum-keeper syncs, and the
// simulated time against the analytical engine's.
//
//   ./build/bench/bench_systemc     (from the repository top: it reads configs/)

#include <benchmark/benchmark.h>

#include <stdexcept>
#include <string>

#include "arch/arch_spec.h"
#include "mapper/schedule.h"
#include "sim/analytical/analytical_engine.h"
#include "sim/systemc/systemc_engine.h"
#include "workloads/builders.h"
#include "workloads/importers.h"
#include "workloads/llm/llm_builder.h"
#include "workloads/llm/llm_config.h"

namespace {

using namespace coda;

struct Case {
  arch::HardwareModel hw;
  mapper::Schedule schedule;
};

arch::HardwareModel load_hw(const std::string& file) {
  Diagnostics diags;
  const auto arch = arch::load_arch(file, diags);
  if (!arch) throw std::runtime_error(diags.format_all());
  return arch::HardwareModel(arch->spec);
}

Case resnet50_tpu_like(bool searched) {
  Diagnostics diags;
  arch::HardwareModel hw = load_hw("configs/arch/tpu_like_128x128_ws.yaml");
  const auto graph = workload::load_workload("configs/workloads/resnet50.yaml", diags);
  if (!graph) throw std::runtime_error(diags.format_all());
  mapper::ScheduleOptions options;
  if (searched) options.search = mapper::ScheduleSearch{};
  mapper::Schedule schedule = mapper::schedule_graph(*graph, hw, options);
  return {std::move(hw), std::move(schedule)};
}

Case resnet50_tpu_like_fixed() { return resnet50_tpu_like(false); }
// Every conv and the fc as its searched loop nest's tile program (the search runs once, before
// timing).
Case resnet50_tpu_like_searched() { return resnet50_tpu_like(true); }

Case one_small_gemm_rk3588() {
  arch::HardwareModel hw = load_hw("configs/arch/rk3588_npu.yaml");
  workload::Graph graph{"g", "", {}, {}};
  graph.add(workload::make_gemm("gemm", 64, 64, 64));
  mapper::Schedule schedule = mapper::schedule_graph(graph, hw, {});
  return {std::move(hw), std::move(schedule)};
}

Case llama2_7b_decode_rk3588() {
  Diagnostics diags;
  arch::HardwareModel hw = load_hw("configs/arch/rk3588_npu.yaml");
  const auto config =
      workload::llm::load_llm_config("configs/workloads/llm/llama2_7b.yaml", diags);
  if (!config) throw std::runtime_error(diags.format_all());
  const auto graph = workload::llm::try_build_llm(
      *config, {.kind = workload::llm::PhaseKind::Decode, .batch = 1, .seq_len = 1024}, {},
      diags);
  if (!graph) throw std::runtime_error(diags.format_all());
  mapper::Schedule schedule = mapper::schedule_graph(*graph, hw, {.precision = DataType::Int8});
  return {std::move(hw), std::move(schedule)};
}

void systemc(benchmark::State& state, Case (*make)()) {
  const Case c = make();
  const sim::systemc::SystemCEngine engine;
  sim::systemc::SystemCRun run;
  for (auto _ : state) {
    run = engine.run_with_stats(c.schedule, c.hw, {});
    benchmark::DoNotOptimize(run);
  }
  const double analytical = static_cast<double>(
      sim::analytical::AnalyticalEngine().run(c.schedule, c.hw, {}).total.cycles.value);
  state.counters["ops"] = static_cast<double>(run.result.ops.size());
  state.counters["tiles/s"] = benchmark::Counter(static_cast<double>(run.stats.steps),
                                                 benchmark::Counter::kIsIterationInvariantRate);
  state.counters["events/s"] = benchmark::Counter(static_cast<double>(run.stats.transactions),
                                                  benchmark::Counter::kIsIterationInvariantRate);
  state.counters["tiles"] = static_cast<double>(run.stats.steps);
  state.counters["syncs"] = static_cast<double>(run.stats.syncs);
  state.counters["vs_analytical"] = static_cast<double>(run.result.total.cycles.value) / analytical;
}

void analytical(benchmark::State& state, Case (*make)()) {
  const Case c = make();
  const sim::analytical::AnalyticalEngine engine;
  for (auto _ : state) benchmark::DoNotOptimize(engine.run(c.schedule, c.hw, {}));
}

BENCHMARK_CAPTURE(systemc, one_small_gemm_rk3588, &one_small_gemm_rk3588)
    ->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(analytical, one_small_gemm_rk3588, &one_small_gemm_rk3588)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(systemc, resnet50_tpu_like_128x128, &resnet50_tpu_like_fixed)
    ->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(analytical, resnet50_tpu_like_128x128, &resnet50_tpu_like_fixed)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(systemc, resnet50_tpu_like_128x128_searched, &resnet50_tpu_like_searched)
    ->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(analytical, resnet50_tpu_like_128x128_searched, &resnet50_tpu_like_searched)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(systemc, llama2_7b_decode_rk3588, &llama2_7b_decode_rk3588)
    ->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(analytical, llama2_7b_decode_rk3588, &llama2_7b_decode_rk3588)
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
