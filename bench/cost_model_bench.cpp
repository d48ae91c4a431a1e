// Per-call cost of the closed-form GPU, vector and collective models: a mapper calls them
// millions of times, so each must stay in the tens of nanoseconds (choose_gpu_tile: one
// evaluation per candidate). Inputs pass through DoNotOptimize so nothing is constant-folded.
//
//   ./build/bench/bench_cost_models

#include <benchmark/benchmark.h>

#include "sim/analytical/collective_model.h"
#include "sim/analytical/gpu_model.h"
#include "sim/analytical/vector_model.h"

namespace {

using namespace coda::sim::analytical;

// A100-SXM4-40GB, as in sim/tests/gpu_model_test.cpp.
GpuParams a100() {
  return {.sms = 108,
          .clock_hz = 1.41e9,
          .macs_per_cycle_per_sm = 1024,
          .smem_bytes_per_sm = 164ULL * 1024,
          .registers_per_sm = 65536,
          .max_blocks_per_sm = 32,
          .max_warps_per_sm = 64,
          .l2_bytes = 40ULL * 1024 * 1024,
          .l2_bytes_per_second = 5120 * 1.41e9,
          .dram_bytes_per_second = 1.555e12};
}

void evaluate_gpu_gemm_4096(benchmark::State& state) {
  GpuParams params = a100();
  GemmShape shape{.m = 4096, .n = 4096, .k = 4096};
  BlockTile tile{.tile_m = 128, .tile_n = 128, .tile_k = 32, .warps = 4, .stages = 3};
  for (auto _ : state) {
    benchmark::DoNotOptimize(shape);
    benchmark::DoNotOptimize(tile);
    benchmark::DoNotOptimize(params);
    GpuKernelCost cost = evaluate_gpu_gemm(shape, tile, params);
    benchmark::DoNotOptimize(cost);
  }
}
BENCHMARK(evaluate_gpu_gemm_4096);

void choose_gpu_tile_4096(benchmark::State& state) {
  GpuParams params = a100();
  GemmShape shape{.m = 4096, .n = 4096, .k = 4096};
  for (auto _ : state) {
    benchmark::DoNotOptimize(shape);
    benchmark::DoNotOptimize(params);
    GpuTileChoice choice = choose_gpu_tile(shape, params);
    benchmark::DoNotOptimize(choice);
  }
  state.counters["candidates"] = static_cast<double>(gpu_tile_candidates().size());
}
BENCHMARK(choose_gpu_tile_4096);

void evaluate_vector_softmax(benchmark::State& state) {
  VectorParams params{.ops_per_cycle = 6912, .special_ops_per_cycle = 1728, .clock_hz = 1.41e9,
                      .bytes_per_second = 1.555e12};
  VectorWork work = make_vector_work(VectorFunction::Softmax, 4096ULL * 4096, 2, 2);
  for (auto _ : state) {
    benchmark::DoNotOptimize(work);
    benchmark::DoNotOptimize(params);
    VectorCost cost = evaluate_vector(work, params);
    benchmark::DoNotOptimize(cost);
  }
}
BENCHMARK(evaluate_vector_softmax);

void evaluate_collective_ring_all_reduce(benchmark::State& state) {
  LinkParams link{.bytes_per_second = 100e9, .latency_s = 1e-6};
  std::uint64_t bytes = 1ULL << 30;
  std::uint32_t ranks = 8;
  for (auto _ : state) {
    benchmark::DoNotOptimize(bytes);
    benchmark::DoNotOptimize(ranks);
    benchmark::DoNotOptimize(link);
    CollectiveCost cost = evaluate_collective(CollectiveKind::AllReduce,
                                              CollectiveAlgorithm::Ring, bytes, ranks, link);
    benchmark::DoNotOptimize(cost);
  }
}
BENCHMARK(evaluate_collective_ring_all_reduce);

// The ring broadcast searches its chunk count (a square root and two evaluations).
void evaluate_collective_ring_broadcast(benchmark::State& state) {
  LinkParams link{.bytes_per_second = 100e9, .latency_s = 1e-6};
  std::uint64_t bytes = 1ULL << 30;
  std::uint32_t ranks = 8;
  for (auto _ : state) {
    benchmark::DoNotOptimize(bytes);
    benchmark::DoNotOptimize(ranks);
    benchmark::DoNotOptimize(link);
    CollectiveCost cost = evaluate_collective(CollectiveKind::Broadcast,
                                              CollectiveAlgorithm::Ring, bytes, ranks, link);
    benchmark::DoNotOptimize(cost);
  }
}
BENCHMARK(evaluate_collective_ring_broadcast);

}  // namespace

BENCHMARK_MAIN();
