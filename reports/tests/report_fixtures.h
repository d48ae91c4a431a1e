#pragma once
// Hand-made inputs for the report tests: a six-point sweep whose objectives follow exact power
// laws, and two runs of four ops on machines with known peaks and bandwidths.

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string_view>

#include <fmt/format.h>

#include "reports/co_design_report.h"

namespace coda::reports::test {

// Whether `program` is an executable file in a folder of PATH.
inline bool on_path(std::string_view program) {
  namespace fs = std::filesystem;
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path != nullptr ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    std::error_code ec;
    const fs::path candidate = fs::path(dir) / program;
    if (fs::is_regular_file(candidate, ec) &&
        (fs::status(candidate, ec).permissions() & fs::perms::owner_exec) != fs::perms::none)
      return true;
  }
  return false;
}

// An empty folder for one test's files, under the build folder (CODA_BINARY_DIR, set by CTest)
// or the system's temporary folder.
inline std::filesystem::path scratch_dir(const std::string& suite, const std::string& name) {
  namespace fs = std::filesystem;
  const char* build = std::getenv("CODA_BINARY_DIR");
  fs::path dir =
      fs::path(build != nullptr ? build : fs::temp_directory_path().string()) / suite / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// One op, 1e6 MACs in 20 us = 5e10 MACs/s at 20 MACs per DRAM byte, on a machine with a bf16 peak
// of 1e11 MACs/s (an int8 peak twice it beside it) and DRAM at 1e10 B/s: ridge 10 MACs/B. Rates
// in GMAC/s (the largest, the int8 peak's 2e11, reads 200): the op 50, the peaks 100 and 200.
inline OpBound one_conv_op() {
  OpBound op;
  op.op = "layer1.conv2";
  op.macs = 1'000'000;
  op.seconds = 20e-6;
  op.levels = {{"dram", 50'000, 20.0, 10.0, 0.25}};
  return op;
}
inline Machine bf16_machine() { return {1e11, {{"dram", 1e10}}, "test", "bf16", {{"int8", 2e11}}}; }

// array.rows in {64, 128, 256} x dram.bandwidth in {17, 34} GB/s, rows turning slowest:
//   latency = 1 ms x (128 / rows) x sqrt(34 GB/s / bandwidth)   (elasticities -1 and -0.5)
//   energy  = 1 mJ x rows / 64                                   (elasticities +1 and 0)
// point  rows  bw   latency (ms)  energy (mJ)
//   0     64   17   2.828         1
//   1     64   34   2            1
//   2    128   17   1.414         2
//   3    128   34   1            2
//   4    256   17   0.7071        4
//   5    256   34   0.5          4
// Front: 1, 3, 5 (each dominates the point with the same rows at 17 GB/s).
inline SweepResults six_point_sweep() {
  SweepResults s{"fixture", "00000000000000aa", "grid",
                 {{"array.rows", {"64", "128", "256"}}, {"dram.bandwidth", {"17 GB/s", "34 GB/s"}}},
                 {"latency", "energy"}, {}};
  std::uint64_t point = 0;
  for (const double rows : {64.0, 128.0, 256.0})
    for (const double bw : {17e9, 34e9}) {
      SweepRow row;
      row.point = point++;
      row.workload = "w";
      row.values = {fmt::format("{}", rows), std::string(bw == 17e9 ? "17 GB/s" : "34 GB/s")};
      row.status = results::RowStatus::Ok;
      row.feasible = true;
      const double latency = 1e-3 * (128 / rows) * std::sqrt(34e9 / bw);
      const double energy = 1e-3 * rows / 64;
      row.metrics = {{"latency_s", latency},      {"throughput_per_s", 1 / latency},
                     {"energy_j", energy},        {"edp_js", energy * latency},
                     {"perf_per_watt_tops_per_w", 1.0}, {"perf_per_mm2_tops_per_mm2", 0.0},
                     {"area_mm2", 10.0},          {"power_w", energy / latency}};
      s.rows.push_back(std::move(row));
    }
  return s;
}

inline results::OpResult fixture_op(const char* name, std::uint64_t macs, std::uint64_t cycles,
                                    std::uint64_t compute_cycles, results::Bound bound,
                                    std::vector<results::TensorTraffic> traffic, double joules) {
  results::OpResult o;
  o.name = name;
  o.unit = results::OpUnit::Systolic;
  o.cost.macs = macs;
  o.cost.cycles = Cycles{cycles};
  o.cost.compute_cycles = Cycles{compute_cycles};
  o.cost.stall_cycles = Cycles{cycles - compute_cycles};
  o.cost.energy = Joules{joules};
  o.bound = bound;
  o.traffic = std::move(traffic);
  return o;
}

// 1 GHz, 100 PEs (peak 1e11 MACs/s); SRAM 1e11 B/s (balance 1), DRAM 1e10 B/s (balance 10).
// conv: compute-bound, 20 us; fc: memory(dram), 30 us; softmax: no MACs, memory, 10 us;
// qkv: latency, 50 us. `scale` multiplies every op's cycles and energy (1 uJ per op at 1).
inline RunInput four_op_run(std::string label, std::string arch, std::uint64_t scale) {
  using results::Bound;
  results::RunResult run;
  run.provenance = {"0.1.0", "analytical", {{"arch", "configs/arch/" + arch + ".yaml", "00ff"}}};
  run.arch = std::move(arch);
  run.workload = "w";
  run.clock = Hertz{1e9};
  run.processing_elements = 100;
  const auto s = scale;
  const auto j = static_cast<double>(scale) * 1e-6;
  run.ops = {fixture_op("layer1.conv2", 1'000'000, 20'000 * s, 10'000 * s, Bound::Compute,
                        {{"ifmap", "sram", Bytes{400'000}, Bytes{}},
                         {"ofmap", "sram", Bytes{}, Bytes{100'000}},
                         {"ifmap", "dram", Bytes{50'000}, Bytes{}}},
                        j),
             fixture_op("layer1.fc", 1'000'000, 30'000 * s, 10'000 * s, Bound::Memory,
                        {{"filter", "sram", Bytes{200'000}, Bytes{}},
                         {"filter", "dram", Bytes{200'000}, Bytes{}}},
                        j),
             fixture_op("layer2.softmax", 0, 10'000 * s, 2'000 * s, Bound::Memory,
                        {{"inputs", "dram", Bytes{50'000}, Bytes{50'000}}}, j),
             fixture_op("layer3.qkv", 1'000, 50'000 * s, 10 * s, Bound::Latency,
                        {{"inputs", "dram", Bytes{1'000}, Bytes{}}}, j)};
  for (const auto& op : run.ops) run.total = run.total + op.cost;
  RunInput in;
  in.label = std::move(label);
  in.source = in.label + "/run.json";
  in.machine = machine_from_run(run);
  in.machine.levels = {{"sram", 1e11}, {"dram", 1e10}};
  in.run = std::move(run);
  return in;
}

// A sweep and two runs on different archs ("datacenter" twice as fast as "edge").
inline ReportInput full_input() {
  ReportInput input;
  input.sweep = SweepInput{"sweep/results.json", six_point_sweep()};
  input.runs.push_back(four_op_run("dc", "datacenter", 1));
  input.runs.push_back(four_op_run("edge", "edge", 2));
  return input;
}

// serve.json as coda serve --out writes it (sim/serving/serve_output.cpp), with a rate curve.
constexpr std::string_view kServeJson = R"({
  "config": {"model": "llama2_7b", "arch": "h100", "tp": 2, "replicas": 2,
             "arrivals": "poisson", "rate": 8, "requests": 100,
             "slo": {"ttft_s": 2.0, "tpot_s": 0.1, "percentile": 99}},
  "kv_cache": {"blocks": 5000},
  "max_batched_tokens": 2048,
  "summary": {"requests": 100, "requests_per_s": 7.5, "output_tokens_per_s": 960,
              "ttft_s": {"mean": 0.1, "p50": 0.05, "p90": 0.2, "p99": 0.4, "max": 0.5},
              "tpot_s": {"mean": 0.02, "p50": 0.02, "p90": 0.03, "p99": 0.04, "max": 0.05},
              "itl_s": {"mean": 0.02, "p50": 0.02, "p90": 0.03, "p99": 0.06, "max": 0.1},
              "e2e_s": {"mean": 3, "p50": 2.5, "p90": 4, "p99": 5, "max": 6},
              "slo_attainment": 0.97, "goodput_rps": 7.275, "meets_slo": true,
              "iterations": 900, "mean_batch": 12.5, "max_batch": 30,
              "kv_utilisation_mean": 0.25, "kv_utilisation_max": 0.5, "preemptions": 3},
  "rate_curve": [
    {"rate": 4, "meets_slo": true, "summary": {"requests_per_s": 4, "output_tokens_per_s": 512,
      "ttft_s": {"p50": 0.04, "p99": 0.1}, "tpot_s": {"p50": 0.015, "p99": 0.02},
      "meets_slo": true}},
    {"rate": 16, "meets_slo": false, "summary": {"requests_per_s": 9, "output_tokens_per_s": 1100,
      "ttft_s": {"p50": 3, "p99": 9}, "tpot_s": {"p50": 0.05, "p99": 0.12},
      "meets_slo": false}}
  ]
})";

}  // namespace coda::reports::test
