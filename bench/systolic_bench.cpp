// How fast the analytical systolic model runs whole networks. Reports layers per second as a
// counter; the baseline in the same run is the scheduling step alone (mapping every layer
// without evaluating it), so the ratio isolates the model's own cost.
//
//   ./build/bench/bench_systolic            (from the repository top)
//
// For scale: SCALE-Sim v2 takes minutes per network on the same machine (its README and the
// coda issue tracker quote 528 s for ResNet-18 on its 32x32 OS config).

#include <benchmark/benchmark.h>

#include <stdexcept>
#include <string>

#include "arch/arch_spec.h"
#include "mapper/schedule.h"
#include "sim/analytical/analytical_engine.h"
#include "workloads/importers.h"

namespace {

using namespace coda;

struct Fixture {
  arch::HardwareModel hw;
  workload::Graph graph;
};

Fixture load(const std::string& arch_file, const std::string& workload_file) {
  Diagnostics diags;
  auto arch = arch::load_arch(arch_file, diags);
  auto graph = workload::load_workload(workload_file, diags);
  if (!arch || !graph) throw std::runtime_error(diags.format_all());
  return {arch::HardwareModel(arch->spec), std::move(*graph)};
}

void run_network(benchmark::State& state, const std::string& arch_file,
                 const std::string& workload_file) {
  const Fixture f = load(arch_file, workload_file);
  const sim::analytical::AnalyticalEngine engine;
  std::uint64_t cycles = 0;
  for (auto _ : state) {
    const auto schedule = mapper::schedule_graph(f.graph, f.hw);
    const auto run = engine.run(schedule, f.hw, sim::RunOptions{});
    cycles = run.total.cycles.value;
    benchmark::DoNotOptimize(cycles);
  }
  state.counters["layers/s"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * static_cast<double>(f.graph.ops.size()), benchmark::Counter::kIsRate);
  state.counters["layers"] = static_cast<double>(f.graph.ops.size());
  state.counters["sim_cycles"] = static_cast<double>(cycles);
}

void schedule_only(benchmark::State& state, const std::string& arch_file,
                   const std::string& workload_file) {
  const Fixture f = load(arch_file, workload_file);
  for (auto _ : state) {
    auto schedule = mapper::schedule_graph(f.graph, f.hw);
    benchmark::DoNotOptimize(schedule);
  }
  state.counters["layers/s"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * static_cast<double>(f.graph.ops.size()), benchmark::Counter::kIsRate);
}

}  // namespace

BENCHMARK_CAPTURE(schedule_only, resnet50_32x32_os_baseline, "configs/arch/scalesim_32x32_os.yaml",
                  "configs/workloads/resnet50.yaml")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(run_network, resnet50_32x32_os, "configs/arch/scalesim_32x32_os.yaml",
                  "configs/workloads/resnet50.yaml")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(run_network, resnet18_32x32_os, "configs/arch/scalesim_32x32_os.yaml",
                  "configs/workloads/resnet18.yaml")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(run_network, resnet50_8x8_os, "configs/arch/systolic_8x8.yaml",
                  "configs/workloads/resnet50.yaml")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(run_network, resnet50_tpu_v1, "configs/arch/tpu_v1_256x256_ws.yaml",
                  "configs/workloads/resnet50.yaml")
    ->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
