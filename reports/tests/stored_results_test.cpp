#include "reports/stored_results.h"

#include <algorithm>
#include <cstddef>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "reports/json_locator.h"

namespace coda::reports {
namespace {

results::RunResult small_run() {
  results::RunResult run;
  run.provenance = {"0.1.0", "analytical", {{"arch", "configs/arch/a.yaml", "0123456789abcdef"}}};
  run.arch = "a";
  run.workload = "w";
  run.clock = Hertz{1e9};
  run.processing_elements = 64;
  results::OpResult op;
  op.name = "conv1";
  op.unit = results::OpUnit::Systolic;
  op.mapping = {{"Sr", 8}, {"Sc", 8}};
  op.cost = {Cycles{50}, Cycles{40}, Cycles{10}, 96, Bytes{100}, Bytes{16}, Bytes{30}, Bytes{16}};
  op.bound = results::Bound::Memory;
  op.traffic = {{"ifmap", "sram", Bytes{60}, Bytes{}}};
  run.ops.push_back(op);
  run.total = op.cost;
  return run;
}

std::string first_error(const Diagnostics& diags) {
  return diags.all().empty() ? "" : format(diags.all().front());
}

TEST(StoredResults, RunJsonRoundTrips) {
  const results::RunResult run = small_run();
  const std::string text = nlohmann::ordered_json(run).dump(2);
  Diagnostics diags;
  const auto read = read_run_json(text, "run.json", diags);
  ASSERT_TRUE(read) << diags.format_all();
  EXPECT_EQ(*read, run);
}

TEST(StoredResults, LocatesAMissingKeyAndAWrongType) {
  // Three mistakes, each located at its value: the negative processing_elements (line 2 col 72),
  // the cost object of ops[0] that lacks "cycles" (line 3 col 48), the unknown bound (line 4
  // col 71).
  const std::string text = R"({"provenance": {"coda_version": "x", "engine": "e", "inputs": []},
 "arch": "a", "workload": "w", "clock_hz": 1e9, "processing_elements": -4, "total": {"cycles": 1, "compute_cycles": 1, "stall_cycles": 0, "macs": 1, "sram_read_bytes": 0, "sram_write_bytes": 0, "dram_read_bytes": 0, "dram_write_bytes": 0},
 "ops": [{"name": "op", "mapping": {}, "cost": {"compute_cycles": 1, "stall_cycles": 0, "macs": 1, "sram_read_bytes": 0, "sram_write_bytes": 0, "dram_read_bytes": 0, "dram_write_bytes": 0},
          "mapping_efficiency": 1, "compute_utilization": 1, "bound": "fast", "arithmetic_intensity": 0, "traffic": []}],
 "skipped": []})";
  Diagnostics diags;
  EXPECT_FALSE(read_run_json(text, "run.json", diags));
  ASSERT_EQ(diags.error_count(), 3U) << diags.format_all();
  EXPECT_EQ(format(diags.all()[0]),
            "run.json:2:72: error: processing_elements: expected a whole number, 0 or more, found "
            "a negative number");
  EXPECT_EQ(format(diags.all()[1]),
            "run.json:3:48: error: ops[0].cost: missing required key 'cycles'; 'cycles' is a whole "
            "number, 0 or more");
  EXPECT_EQ(format(diags.all()[2]),
            "run.json:4:71: error: ops[0].bound: unknown bound 'fast'; expected compute, memory, "
            "latency");
}

TEST(StoredResults, AnUnknownUnitIsLocated) {
  // ops[0].unit "gpu" on line 2: its value opens at column 33 (the 32 characters before it are
  // ` "ops": [{"name": "op", "unit": `).
  const std::string text = R"({"provenance": {"coda_version": "x", "engine": "e", "inputs": []}, "arch": "a", "workload": "w", "clock_hz": 1e9, "processing_elements": 4, "total": {"cycles": 1, "compute_cycles": 1, "stall_cycles": 0, "macs": 1, "sram_read_bytes": 0, "sram_write_bytes": 0, "dram_read_bytes": 0, "dram_write_bytes": 0},
 "ops": [{"name": "op", "unit": "gpu", "mapping": {}, "cost": {"cycles": 1, "compute_cycles": 1, "stall_cycles": 0, "macs": 1, "sram_read_bytes": 0, "sram_write_bytes": 0, "dram_read_bytes": 0, "dram_write_bytes": 0},
          "mapping_efficiency": 1, "compute_utilization": 1, "bound": "compute", "arithmetic_intensity": 0, "traffic": []}],
 "skipped": []})";
  Diagnostics diags;
  EXPECT_FALSE(read_run_json(text, "run.json", diags));
  ASSERT_EQ(diags.error_count(), 1U) << diags.format_all();
  EXPECT_EQ(format(diags.all()[0]),
            "run.json:2:33: error: ops[0].unit: unknown unit 'gpu'; expected systolic, tensor_core, "
            "vector, transfer, collective, attention");
}

TEST(StoredResults, AnUnknownMemoryStatusIsLocated) {
  std::string text = nlohmann::ordered_json(small_run()).dump(2);
  const std::string was = R"("status": "unknown capacity")";
  const std::size_t at = text.find(was);
  ASSERT_NE(at, std::string::npos);
  text.replace(at, was.size(), R"("status": "full")");
  // The value's position: its line, and its column counted from that line's start.
  const std::size_t value = at + std::string(R"("status": )").size();
  const auto line =
      1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(value), '\n');
  const std::size_t column = value - text.rfind('\n', value);
  Diagnostics diags;
  EXPECT_FALSE(read_run_json(text, "run.json", diags));
  ASSERT_EQ(diags.error_count(), 1U) << diags.format_all();
  EXPECT_EQ(format(diags.all()[0]),
            fmt::format("run.json:{}:{}: error: memory.status: unknown status 'full'; expected "
                        "fits, does not fit, unknown capacity",
                        line, column));
}

TEST(StoredResults, SyntaxErrorIsLocated) {
  Diagnostics diags;
  EXPECT_FALSE(read_run_json("{\n  \"arch\": ,\n}", "run.json", diags));
  EXPECT_EQ(first_error(diags).rfind("run.json:2:11: error: ", 0), 0U) << first_error(diags);
}

TEST(StoredResults, LocatorFindsNestedValues) {
  const std::string text = "{\n  \"a\": [1, {\"b\": 2}]\n}";
  // Line 2: col 8 is '[', col 12 the '{' of a[1], col 18 the 2.
  EXPECT_EQ(locate_json(text, "/a/1/b", "f").column, 18);
  EXPECT_EQ(locate_json(text, "/a/1", "f").column, 12);
  EXPECT_EQ(locate_json(text, "/a/5", "f").column, 8);  // no a[5]: its parent
  EXPECT_EQ(locate_json(text, "", "f").line, 1);
}

constexpr std::string_view kSweep = R"({
  "sweep": "s", "spec_hash": "00000000000000ff", "sampling": "grid",
  "axes": [{"path": "array.rows", "values": ["64", "128"]}],
  "objectives": ["latency", "speed"],
  "constraints": {},
  "results": [
    {"point": 0, "workload": "w", "values": {"array.rows": "64"}, "arch_hash": "h", "status": "ok",
     "feasible": true, "metrics": {"latency_s": 2.0, "throughput_per_s": 0.5, "energy_j": 3.0,
     "edp_js": 6.0, "perf_per_watt_tops_per_w": 1.0, "perf_per_mm2_tops_per_mm2": 0.0,
     "area_mm2": 0.0, "power_w": 1.5}},
    {"point": 1, "workload": "w", "values": {"array.rows": "128"}, "arch_hash": "h",
     "status": "infeasible", "feasible": false, "reason": "too big"}
  ]
})";

TEST(StoredResults, SweepWithAnUnknownObjective) {
  // "speed" is objectives[1], line 4 col 29.
  Diagnostics diags;
  EXPECT_FALSE(read_sweep_json(kSweep, "results.json", diags));
  EXPECT_EQ(first_error(diags),
            "results.json:4:29: error: objectives[1]: unknown objective 'speed'; expected one of: "
            "latency, throughput, energy, edp, perf_per_watt, perf_per_mm2");
}

// results.json files written before the metric table named two metrics without their units:
// refused with the way to rewrite them, not read as missing metrics. The row's "metrics" object
// is line 8, col 35.
TEST(StoredResults, ASweepOfAnOlderCodaSaysHowToRewriteIt) {
  std::string text(kSweep);
  text.replace(text.find("\"speed\""), 7, "\"energy\"");
  text.replace(text.find("perf_per_watt_tops_per_w"), 24, "perf_per_watt");
  Diagnostics diags;
  EXPECT_FALSE(read_sweep_json(text, "results.json", diags));
  EXPECT_EQ(first_error(diags),
            "results.json:8:35: error: results[0].metrics: written by an older coda "
            "(metrics.perf_per_watt; now perf_per_watt_tops_per_w, as in results.csv); run the "
            "same coda sweep into its folder again: it reuses the store and rewrites "
            "results.json");
}

TEST(StoredResults, SweepRows) {
  std::string text(kSweep);
  text.replace(text.find("\"speed\""), 7, "\"energy\"");
  Diagnostics diags;
  const auto sweep = read_sweep_json(text, "results.json", diags);
  ASSERT_TRUE(sweep) << diags.format_all();
  ASSERT_EQ(sweep->axes.size(), 1U);
  EXPECT_EQ(sweep->axes[0].values, (std::vector<std::string>{"64", "128"}));
  ASSERT_EQ(sweep->rows.size(), 2U);
  EXPECT_EQ(sweep->rows[0].values, std::vector<std::string>{"64"});
  EXPECT_EQ(sweep->rows[0].metrics.at("energy_j"), 3.0);
  EXPECT_TRUE(sweep->rows[0].feasible);
  EXPECT_EQ(sweep->rows[1].status, results::RowStatus::Infeasible);
  EXPECT_EQ(sweep->rows[1].reason, "too big");
  EXPECT_TRUE(sweep->rows[1].metrics.empty());
  EXPECT_FALSE(sweep->axes[0].base);  // a results.json of an older coda states no base
}

TEST(StoredResults, SweepAxesCarryTheBaseArchsValue) {
  std::string text(kSweep);
  text.replace(text.find("\"speed\""), 7, "\"energy\"");
  const std::string values = R"("values": ["64", "128"])";
  text.replace(text.find(values), values.size(), values + R"(, "base": "128")");
  Diagnostics diags;
  const auto sweep = read_sweep_json(text, "results.json", diags);
  ASSERT_TRUE(sweep) << diags.format_all();
  EXPECT_EQ(sweep->axes[0].base, "128");
  // A base that is not text is a located error at its value: line 3 reads
  //   `  "axes": [{"path": "array.rows", "values": ["64", "128"], "base": 128}],`
  // where the 128 after "base": starts at column 68.
  const std::string base = R"("base": "128")";
  text.replace(text.find(base), base.size(), R"("base": 128)");
  EXPECT_FALSE(read_sweep_json(text, "results.json", diags));
  EXPECT_EQ(first_error(diags),
            "results.json:3:68: error: axes[0].base: expected a string, found a whole number");
}

}  // namespace
}  // namespace coda::reports
