#include "reports/co_design_report.h"

#include <algorithm>

#include <gtest/gtest.h>

#include "reports/tests/report_fixtures.h"
#include "reports/vega_bundle.h"

namespace coda::reports {
namespace {

// Stands in for gnuplot: a tiny SVG per chart.
GnuplotOutput fake_svg(std::string_view /*script*/) {
  return {true, "<?xml version=\"1.0\"?>\n<svg id='x'><path d='M0,0 L1,1'/></svg>", {}};
}

bool has(const std::string& text, std::string_view part) {
  return text.find(part) != std::string::npos;
}

TEST(CoDesignReport, SweepTablesNameEveryDesignByPoint) {
  const ReportOutcome out = build_report(test::full_input(), fake_svg);
  ASSERT_TRUE(out.report) << out.error;
  const std::string& md = out.report->markdown;
  // The front (fixture comment), better latency first; the knee: scaled over the front,
  // point 1 (1, 0) -> 1, point 3 (1/3, 1/3) -> 2/9, point 5 (0, 1) -> 1. Values in the unit
  // that makes the largest read 1 to 999: latencies up to 2.8 ms in ms, energies up to 4 mJ in mJ.
  EXPECT_TRUE(
      has(md,
          "| point | array.rows | dram.bandwidth | latency (ms) | energy (mJ) | chosen as |\n"
          "|---|---:|---:|---:|---:|---:|\n"
          "| 5 | 256 | 34 GB/s | 0.5 | 4 | best latency |\n"
          "| 3 | 128 | 34 GB/s | 1 | 2 | knee |\n"
          "| 1 | 64 | 34 GB/s | 2 | 1 | best energy |\n"))
      << md;
  // Top designs by latency: 5 (0.5 ms), 4 (0.7071 ms), 3 (1 ms), ...
  EXPECT_TRUE(has(md,
                  "| 1 | 5 | 256 | 34 GB/s | 0.5 | 4 | 8 | 10 |\n"
                  "| 2 | 4 | 256 | 17 GB/s | 0.7071 | 4 | 5.657 | 10 |\n"))
      << md;
  // The Pareto chart's axes in words and in the tables' units, its points scaled to them.
  const auto pareto = std::find_if(out.report->charts.begin(), out.report->charts.end(),
                                   [](const ReportChart& c) { return c.file == "pareto_0.svg"; });
  ASSERT_NE(pareto, out.report->charts.end());
  EXPECT_TRUE(has(pareto->script, "set xlabel 'latency (ms)'\nset ylabel 'energy (mJ)'\n"))
      << pareto->script;
  // The fixture's exponents, over 2 groups of 3 (rows) and 3 groups of 2 (bandwidth).
  EXPECT_TRUE(has(md, "| array.rows | -1.000 (2/6) | +1.000 (2/6) |\n"
                      "| dram.bandwidth | -0.500 (3/6) | +0.000 (3/6) |\n"))
      << md;
}

TEST(CoDesignReport, TheRecommendationComesFirstAndNamesTheBaseAndTheRunnerUp) {
  ReportInput input;
  SweepResults s = test::six_point_sweep();
  s.axes[0].base = "128";      // the base arch: 128 rows at 17 GB/s, i.e. point 2
  s.axes[1].base = "17 GB/s";  // (1.414 ms, 2 mJ in the fixture's table)
  input.sweep = SweepInput{"sweep/results.json", s};
  const ReportOutcome out = build_report(input, fake_svg);
  ASSERT_TRUE(out.report) << out.error;
  const std::string& md = out.report->markdown;
  EXPECT_LT(md.find("## Recommendation"), md.find("## Sweep fixture")) << md;
  // Latency: point 5 (0.5 ms); the base 1.414 ms is 2.83x that; the runner-up, point 4
  // (0.7071 ms), is 0.5 / 0.7071 - 1 = -29.3%. The fixture's elasticities: rows -1, bandwidth
  // -0.5, so rows moves latency most.
  EXPECT_TRUE(has(md,
                  "Best latency: point 5 (array.rows 256, dram.bandwidth 34 GB/s) at 500 us; "
                  "2.83x lower than the base design (point 2: 1.414 ms) and 29.3% lower than "
                  "the runner-up (point 4: 707.1 us). What moves latency most: array.rows "
                  "(elasticity -1.00).\n"))
      << md;
  // Energy: points 0 and 1 tie at 1 mJ (they differ only in the bandwidth, which energy
  // ignores); point 1 is named, being on the Pareto front (as fast or faster at the same energy:
  // the point the chart labels), half the base's 2 mJ; the runner-up is the next energy, 2 mJ
  // (points 2 and 3: point 3, on the front, first), twice 1 mJ.
  EXPECT_TRUE(has(md,
                  "Best energy: point 1 (array.rows 64, dram.bandwidth 34 GB/s) at 1 mJ, as "
                  "is 1 other design that differs from it only in dram.bandwidth; 2.00x lower "
                  "than the base design (point 2: 2 mJ) and 2.00x lower than the runner-up "
                  "(point 3: 2 mJ). What moves energy most: array.rows (elasticity +1.00).\n"))
      << md;
  // The knee of the front {1, 3, 5} is point 3 (SweepTablesNameEveryDesignByPoint): 1 ms
  // against 0.5 ms and 2 mJ against 1 mJ.
  EXPECT_TRUE(has(md,
                  "Balanced (the knee of the 3-design front): point 3 (array.rows 128, "
                  "dram.bandwidth 34 GB/s): latency 1 ms (+100.0% against the best), energy "
                  "2 mJ (+100.0% against the best).\n"))
      << md;
  // The base design is labelled on the front's chart.
  ASSERT_FALSE(out.report->charts.empty());
  EXPECT_TRUE(has(out.report->charts.front().script, "point 2: base design"))
      << out.report->charts.front().script;
}

TEST(CoDesignReport, TheRecommendationPicksTheBestAllRoundDesign) {
  // A second workload "v" whose latency grows with the rows (1 ms x rows / 128) and ignores the
  // bandwidth. Worst ratio to each workload's best latency (0.5 ms on both), per point:
  //   0: w 5.657, v 1 -> 5.657   1: w 4, v 1 -> 4   2: w 2.828, v 2 -> 2.828
  //   3: w 2,     v 2 -> 2       4: w 1.414, v 4 -> 4   5: w 1, v 4 -> 4
  // so point 3, within 2.00x everywhere.
  ReportInput input;
  SweepResults s = test::six_point_sweep();
  const std::size_t n = s.rows.size();
  for (std::size_t i = 0; i < n; ++i) {
    SweepRow row = s.rows[i];
    row.workload = "v";
    row.metrics["latency_s"] = 1e-3 * std::stod(row.values[0]) / 128;
    s.rows.push_back(std::move(row));
  }
  input.sweep = SweepInput{"sweep/results.json", s};
  const ReportOutcome out = build_report(input, fake_svg);
  ASSERT_TRUE(out.report) << out.error;
  EXPECT_TRUE(has(out.report->markdown,
                  "Across the 2 workloads (w, v): point 3 (array.rows 128, dram.bandwidth 34 GB/s) "
                  "is the best all-round design, within 2.00x of the best latency on every "
                  "workload (its worst is v)."))
      << out.report->markdown;
  EXPECT_TRUE(has(out.report->markdown, "which this results.json does not record"));
}

TEST(CoDesignReport, RunTablesAndComparison) {
  const ReportOutcome out = build_report(test::full_input(), fake_svg);
  ASSERT_TRUE(out.report) << out.error;
  const std::string& md = out.report->markdown;
  // Shares of the 110 us run: 20, 40 and 50 us.
  EXPECT_TRUE(has(md, "| compute | 2e-05 | 18.2% |\n| memory(dram) | 4e-05 | 36.4% |\n"
                      "| latency | 5e-05 | 45.5% |\n"))
      << md;
  // fc: intensity 5 at sram (balance 1) and dram (balance 10); dram busy 20 of 30 us.
  EXPECT_TRUE(has(md,
                  "| layer1.fc | 30 | 1000000 | memory(dram) | roofline | sram: 5 (1); "
                  "dram: 5 (10) | dram (66.7%) |\n"))
      << md;
  // The ops by kind, each kind's ops folded under it.
  EXPECT_TRUE(has(md, "| fc | 1 | 30 | 27.3% | 1000000 | 1 | memory(dram) 100.0% |\n")) << md;
  EXPECT_TRUE(has(md, "<details><summary>fc: 1 op, 30 us (27.3% of the time)</summary>\n\n| op |"))
      << md;
  EXPECT_TRUE(has(out.report->html,
                  "<details><summary>fc: 1 op, 30 us (27.3% of the time)"
                  "</summary>\n<table>\n<tr><th>op</th>"));
  // Same workload, different archs; edge takes twice the time and energy of dc.
  EXPECT_TRUE(has(md, "## Hardware comparison on w\n")) << md;
  EXPECT_TRUE(has(md, "| dc | datacenter | w | none | 0.00011 | 4e-06 | 1 | 1 |\n"
                      "| edge | edge | w | none | 0.00022 | 8e-06 | 0.5 | 2 |\n"))
      << md;
}

TEST(CoDesignReport, OpsOfOneKindAddUp) {
  // four_op_run's conv renamed into a second fc: fc is then 2 ops, 20 us compute-bound + 30 us
  // memory(dram)-bound = 50 us of the 110 us (45.5%), 2e6 MACs, 1 + 1 uJ; by class 20 / 50 = 40%
  // compute and 30 / 50 = 60% memory(dram).
  ReportInput input;
  input.runs.push_back(test::four_op_run("dc", "datacenter", 1));
  input.runs[0].run.ops[0].name = "layer0.fc";
  const ReportOutcome out = build_report(input, fake_svg);
  ASSERT_TRUE(out.report) << out.error;
  const std::string& md = out.report->markdown;
  EXPECT_TRUE(
      has(md, "| fc | 2 | 50 | 45.5% | 2000000 | 2 | compute 40.0%, memory(dram) 60.0% |\n"))
      << md;
  EXPECT_TRUE(has(md, "<details><summary>fc: 2 ops, 50 us (45.5% of the time)</summary>")) << md;
}

TEST(CoDesignReport, TheTopTableFoldsDesignsThatAreNoOtherChoice) {
  // six_point_sweep with a third axis, sram.ifmap: each design at 1 MiB, and a copy of each at
  // 2 MiB (points 6..11) with the same latency and 10% more energy, so no better on any objective:
  // each copy folds into its original. Point 5 (256 rows, 34 GB/s) is the fastest: 1 ms x 128 /
  // 256 = 0.5 ms, 256 / 64 = 4 mJ, 4 mJ / 0.5 ms = 8 W; its copy is point 11.
  ReportInput input;
  SweepResults s = test::six_point_sweep();
  s.axes.push_back({"sram.ifmap", {"1 MiB", "2 MiB"}});
  const std::size_t n = s.rows.size();
  for (std::size_t i = 0; i < n; ++i) {
    s.rows[i].values.emplace_back("1 MiB");
    SweepRow copy = s.rows[i];
    copy.point = n + i;
    copy.values.back() = "2 MiB";
    copy.metrics["energy_j"] *= 1.1;
    s.rows.push_back(std::move(copy));
  }
  input.sweep = SweepInput{"sweep/results.json", s};
  const ReportOutcome out = build_report(input, fake_svg);
  ASSERT_TRUE(out.report) << out.error;
  const std::string& md = out.report->markdown;
  EXPECT_TRUE(has(md,
                  "Top 6 feasible designs by latency (6 more designs as good on latency but no "
                  "better on any objective are folded into the row they match, under "
                  "'alike'):"))
      << md;
  EXPECT_TRUE(has(md,
                  "| 1 | 5 | 256 | 34 GB/s | 1 MiB | 0.5 | 4 | 8 | 10 | 1 (point 11: "
                  "sram.ifmap 2 MiB) |\n"))
      << md;
}

TEST(CoDesignReport, ChartsAreInlinedAndLinked) {
  const ReportOutcome out = build_report(test::full_input(), fake_svg);
  ASSERT_TRUE(out.report) << out.error;
  // Sweep: Pareto and sensitivity; each run: roofline, latency, energy; comparison: 2.
  ASSERT_EQ(out.report->charts.size(), 2U + 3U * 2U + 2U);
  EXPECT_TRUE(has(out.report->markdown, "![Pareto front, w](charts/pareto_0.svg)"));
  const std::string& html = out.report->html;
  EXPECT_TRUE(
      has(html, "<figure class=\"chart\" id=\"chart0\">\n<div class=\"plot\">\n<svg id='c0_x'>"))
      << html.substr(0, 2000);
  // Each chart's Vega-Lite spec sits beside its SVG, and the chart keeps it.
  EXPECT_TRUE(has(html, "<script type=\"application/json\" class=\"spec\">{\"$schema\":"));
  for (const ReportChart& chart : out.report->charts)
    EXPECT_TRUE(has(html, chart.spec)) << chart.file;
  // The chart libraries are in the page when the build embedded them (-DCODA_WITH_VEGA=ON).
  EXPECT_EQ(has(html, "vegaEmbed("), !vega_scripts().empty());
  EXPECT_FALSE(has(html, "<?xml"));
  EXPECT_FALSE(has(html, "http://") && has(html, "<link"));  // nothing to fetch
}

TEST(CoDesignReport, AChartThatFailsStopsTheReport) {
  const auto broken = [](std::string_view) {
    return GnuplotOutput{false, {}, "'gnuplot' is not installed"};
  };
  const ReportOutcome out = build_report(test::full_input(), broken);
  EXPECT_FALSE(out.report);
  EXPECT_EQ(out.error, "chart 'Pareto front, w': 'gnuplot' is not installed");
}


// A training step as `coda train --json` writes it, two pipeline stages, 4 micro-batches; the
// numbers are made up for the arithmetic below (not a measurement, not a coda price).
constexpr std::string_view kTrainJson = R"({
  "schema_version": 1,
  "training_step": {
    "model": "m", "arch": "chip",
    "layout": {"tp": 2, "pp": 2, "virtual_stages": 1, "dp": 1, "chips": 4, "micro_batch_size": 1,
               "micro_batches": 4, "global_batch": 4, "recompute": "full", "zero": 0,
               "sequence_parallel": true},
    "seq": 1024, "tokens": 4096, "step_s": 2.0, "tokens_per_s": 2048.0, "mfu": 0.4, "hfu": 0.5,
    "memory_per_chip_bytes": 1073741824, "capacity_bytes": 2147483648, "fits": true,
    "critical_stage": 0,
    "stages": [
      {"stage": 0, "layer_ranges": "0-3", "compute_s": 1.2, "tp_comm_s": 0.05, "bubble_s": 0.5,
       "dp_exposed_s": 0.1, "optimizer_s": 0.2, "end_s": 2.0,
       "memory": {"total_bytes": 1073741824}},
      {"stage": 1, "layer_ranges": "4-7", "compute_s": 1.2, "tp_comm_s": 0.05, "bubble_s": 0.2,
       "dp_exposed_s": 0.1, "optimizer_s": 0.2, "end_s": 1.7,
       "memory": {"total_bytes": 536870912}}
    ]
  }
})";

// The stage that ends the step (2 s): TP communication 4 micro-batches x 0.05 s = 0.2 s, so
// compute without it 1.0 s = 50.0%, TP 10.0%, bubble 0.5 s = 25.0%, DP 5.0%, optimizer 10.0%.
TEST(CoDesignReport, TrainingStepsShowTheirTimeSplit) {
  Diagnostics diags;
  ASSERT_TRUE(is_train_json(kTrainJson));
  EXPECT_FALSE(is_train_json("{\"ops\": []}"));
  EXPECT_FALSE(is_train_json("not json"));
  auto step = read_train_json(kTrainJson, "step.json", diags);
  ASSERT_TRUE(step) << diags.format_all();
  EXPECT_EQ(step->layout, "tp 2 (SP) pp 2 dp 1, micro-batch 1 x 4, recompute full, ZeRO 0");
  EXPECT_DOUBLE_EQ(step->stages[0].tp_comm_s, 0.2);
  ReportInput input;
  input.trainings.push_back({"seven", "step.json", std::move(*step)});
  const ReportOutcome out = build_report(input, fake_svg);
  ASSERT_TRUE(out.report) << out.error;
  const std::string& md = out.report->markdown;
  EXPECT_TRUE(has(md, "## Training step seven")) << md;
  EXPECT_TRUE(has(md, "| memory per chip | 1 GiB of 2 GiB (fits) |")) << md;
  EXPECT_TRUE(has(md, "Stage 0 ends the step: compute 50.0% of it (TP communication 10.0%), "
                      "pipeline bubble 25.0%, exposed data-parallel communication 5.0%, "
                      "optimizer 10.0%."))
      << md;
  EXPECT_EQ(out.report->charts.size(), 1u);
}

// A field of the wrong type is an error located in the file, naming the field.
TEST(CoDesignReport, ABrokenTrainingStepIsALocatedError) {
  std::string text(kTrainJson);
  const std::string bad = "\"step_s\": 2.0";
  text.replace(text.find(bad), bad.size(), "\"step_s\": \"2\"");
  Diagnostics diags;
  EXPECT_FALSE(read_train_json(text, "step.json", diags));
  ASSERT_FALSE(diags.all().empty());
  EXPECT_EQ(diags.all().front().path, "training_step.step_s");
  EXPECT_EQ(diags.all().front().where.file, "step.json");
  EXPECT_GT(diags.all().front().where.line, 1u);
}

TEST(CoDesignReport, ServingShowsItsLatenciesAndTheirCurveAgainstLoad) {
  Diagnostics diags;
  ASSERT_TRUE(is_serve_json(test::kServeJson));
  EXPECT_FALSE(is_serve_json(kTrainJson));
  auto served = read_serve_json(test::kServeJson, "serve.json", diags);
  ASSERT_TRUE(served) << diags.format_all();
  EXPECT_EQ(served->curve.size(), 2u);
  EXPECT_DOUBLE_EQ(served->curve[1].ttft.p99, 9);
  ReportInput input;
  input.servings.push_back({"tp2", "serve.json", std::move(*served)});
  const ReportOutcome out = build_report(input, fake_svg);
  ASSERT_TRUE(out.report) << out.error;
  const std::string& md = out.report->markdown;
  EXPECT_TRUE(has(md, "## Serving tp2")) << md;
  EXPECT_TRUE(has(md, "llama2_7b on 4 x h100 chips (TP 2, 2 replicas)")) << md;
  EXPECT_TRUE(has(md, "| TTFT p50 / p99 (ms) | 50 / 400 |")) << md;
  EXPECT_TRUE(has(md, "| 16 | 9 | 1100 | 3000 | 9000 | 50 | 120 | not met |")) << md;
  EXPECT_EQ(out.report->charts.size(), 2u);  // TTFT and TPOT against the rate
}

TEST(CoDesignReport, ABrokenServeJsonIsALocatedError) {
  std::string text(test::kServeJson);
  const std::string bad = "\"preemptions\": 3";
  text.replace(text.find(bad), bad.size(), "\"preemptions\": -3");
  Diagnostics diags;
  EXPECT_FALSE(read_serve_json(text, "serve.json", diags));
  ASSERT_FALSE(diags.all().empty());
  EXPECT_EQ(diags.all().front().path, "summary.preemptions");
}

}  // namespace
}  // namespace coda::reports
