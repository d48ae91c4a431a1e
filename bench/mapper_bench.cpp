// Evaluations per second of the loop-nest model (mapper/loop_nest_model.h) for a GEMM on a
// 3-level hierarchy: PE registers, a 256 KiB double-buffered global buffer fanning out to a 16x16
// PE array, and DRAM at 32 B/cycle. A search calls evaluate() millions of times, so the target
// is at least 1 M evaluations per second per core in a release build:
//
//   cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release
//   cmake --build build-release --target bench_mapper && ./build-release/bench/bench_mapper
//
// items_per_second is evaluations (or map-space points) per second on one thread.

#include <benchmark/benchmark.h>

#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "mapper/loop_nest_model.h"
#include "mapper/map_space.h"
#include "workloads/builders.h"

namespace {

using namespace coda;
using namespace coda::mapper;

enum : std::size_t { kM, kN, kK };

Hierarchy three_level() {
  Hierarchy h;
  h.compute = {.unit = "pe_array", .pes = 256, .macs_per_pe_per_cycle = 1, .mac_energy_pj = 0.2};
  h.levels = {
      {.name = "pe", .capacity_bytes = 6, .instances = 256, .fan_out = 1},
      {.name = "buffer",
       .capacity_bytes = std::uint64_t{256} * 1024,
       .instances = 1,
       .fan_out = 256,
       .read_bytes_per_cycle = 64,
       .write_bytes_per_cycle = 64,
       .energy_pj_per_byte = 1.5,
       .double_buffered = true},
      {.name = "dram",
       .instances = 1,
       .read_bytes_per_cycle = 32,
       .write_bytes_per_cycle = 32,
       .shared_port = true,
       .energy_pj_per_byte = 20},
  };
  return h;
}

const workload::Op& gemm() {
  static const workload::Op op = workload::make_gemm("g", 1024, 1024, 1024);
  return op;
}

// Buffer tile 128 x 128 x 64 (m and n spread 16 x 16 over the PEs), DRAM loops m8 n8 k16.
Mapping fixed_mapping() {
  Mapping m = make_mapping(3, 3);
  m.levels[1].spatial = {16, 16, 1};
  m.levels[1].temporal = {8, 8, 64};
  m.levels[2].temporal = {8, 8, 16};
  set_order(m, 1, {kM, kN, kK});
  set_order(m, 2, {kN, kM, kK});
  return m;
}

MapSpace space() {
  std::string why;
  auto s = MapSpace::create(gemm().space, three_level(), {}, why);
  if (!s) throw std::runtime_error(why);
  return *s;
}

void evaluate_fixed_mapping(benchmark::State& state) {
  const LoopNestProblem problem = compile_problem(gemm().space);
  const Hierarchy h = three_level();
  Mapping m = fixed_mapping();
  for (auto _ : state) {
    benchmark::DoNotOptimize(m);
    MappingCost cost = evaluate(problem, m, h);
    benchmark::DoNotOptimize(cost);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(evaluate_fixed_mapping);

void evaluate_fixed_mapping_from_einsum(benchmark::State& state) {
  const Hierarchy h = three_level();
  Mapping m = fixed_mapping();
  for (auto _ : state) {
    benchmark::DoNotOptimize(m);
    MappingCost cost = evaluate(gemm().space, m, h);
    benchmark::DoNotOptimize(cost);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(evaluate_fixed_mapping_from_einsum);

// Valid points drawn from the map space, decoded once, evaluated in turn.
void evaluate_sampled_mappings(benchmark::State& state) {
  const MapSpace s = space();
  std::mt19937_64 rng(1);
  std::vector<Mapping> mappings;
  mappings.reserve(1024);
  for (int k = 0; k < 1024; ++k) mappings.push_back(*s.at(*s.sample(rng)));
  std::size_t next = 0;
  for (auto _ : state) {
    MappingCost cost = evaluate(s.problem(), mappings[next], s.hierarchy());
    benchmark::DoNotOptimize(cost);
    next = (next + 1) % mappings.size();
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(evaluate_sampled_mappings);

// What an ask/tell loop pays per point: decode the index, then evaluate.
void decode_and_evaluate_point(benchmark::State& state) {
  const MapSpace s = space();
  std::mt19937_64 rng(2);
  std::vector<MapSpace::Index> points;
  points.reserve(1024);
  for (int k = 0; k < 1024; ++k) points.push_back(*s.sample(rng));
  std::size_t next = 0;
  for (auto _ : state) {
    MappingCost cost = evaluate_point(s, points[next]);
    benchmark::DoNotOptimize(cost);
    next = (next + 1) % points.size();
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(decode_and_evaluate_point);

void sample_point(benchmark::State& state) {
  const MapSpace s = space();
  std::mt19937_64 rng(3);
  for (auto _ : state) benchmark::DoNotOptimize(s.sample(rng));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(sample_point);

// Exhaustive walk: next_valid from a random start, one valid point per iteration.
void next_valid_point(benchmark::State& state) {
  const MapSpace s = space();
  MapSpace::Index at = s.next_valid(s.size() / 3);
  for (auto _ : state) {
    at = s.next_valid(at + 1);
    if (at >= s.size()) at = s.next_valid(0);
    benchmark::DoNotOptimize(at);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(next_valid_point);

}  // namespace

BENCHMARK_MAIN();
