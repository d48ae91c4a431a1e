#include "reports/vega_charts.h"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "reports/tests/report_fixtures.h"

namespace coda::reports {
namespace {

using nlohmann::json;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

json values(const json& view) { return view.at("data").at("values"); }

TEST(VegaCharts, ParetoMarksTheFrontAndNumbersTheChosen) {
  // Three designs; the first and third on the front, the third chosen. x spans 10 to 1000 (two
  // decades: a log axis, past line_script's 1.3), y 1 to 3 (a linear axis).
  const ScatterChart chart{
      "Pareto front, w",   "latency (ms)", "energy (mJ)", {{10, 3}, {100, 2}, {1000, 1}}, {0, 2},
      {{2, "best energy"}}};
  const json spec = json::parse(pareto_spec(chart, {"point 1", "point 2", "point 3"}));
  EXPECT_EQ(spec.at("$schema"), kVegaLiteSchema);
  EXPECT_EQ(spec.at("title"), "Pareto front, w");
  EXPECT_EQ(spec.at("encoding").at("x").at("scale").at("type"), "log");
  EXPECT_EQ(spec.at("encoding").at("x").at("title"), "latency (ms)");
  EXPECT_FALSE(spec.at("encoding").at("y").at("scale").contains("type"));
  const json rows = values(spec);
  ASSERT_EQ(rows.size(), 3U);
  EXPECT_EQ(rows[0].at("role"), "Pareto front");
  EXPECT_EQ(rows[1].at("role"), "design");
  EXPECT_EQ(rows[1].at("design"), "point 2");
  EXPECT_FALSE(rows[1].contains("chosen"));
  EXPECT_EQ(rows[2].at("chosen"), "best energy");
  EXPECT_EQ(rows[2].at("n"), 1);
  // Points, the front's line, the chosen designs' rings and their numbers; zoom and the legend's
  // pick on the points.
  ASSERT_EQ(spec.at("layer").size(), 4U);
  EXPECT_EQ(spec.at("layer")[0].at("params")[0].at("bind"), "scales");
  EXPECT_EQ(spec.at("layer")[0].at("params")[1].at("bind"), "legend");
  EXPECT_EQ(spec.at("layer")[1].at("mark").at("type"), "line");
  EXPECT_EQ(spec.at("layer")[3].at("mark").at("type"), "text");
}

TEST(VegaCharts, ParetoDropsPointsALogAxisCannotShow) {
  // The NaN has no point; the zero makes x's values not all positive, so x's axis is linear and
  // the zero stays.
  const ScatterChart chart{"t", "x", "y", {{kNaN, 1}, {0, 2}, {1000, 3}}, {}, {}};
  const json spec = json::parse(pareto_spec(chart));
  ASSERT_EQ(values(spec).size(), 2U);
  EXPECT_EQ(values(spec)[0].at("design"), "design 2");
  EXPECT_FALSE(spec.at("encoding").at("x").at("scale").contains("type"));
}

TEST(VegaCharts, PairsRepeatEveryObjectiveAgainstEveryOther) {
  // A dot in a title would be read as a nested field: it is escaped in the field, not in the data.
  const PairChart chart{"pairs",
                        {"perf (TOPS/W, v1.0)", "b", "c"},
                        {{1, 2, 3}, {2, 1, 1}, {kNaN, 3, 3}},
                        {true, true, false},
                        {"point 0", "point 1", "point 2"},
                        {"", "knee", ""}};
  const json spec = json::parse(pairs_spec(chart));
  const json fields = {"perf (TOPS/W, v1\\.0)", "b", "c"};
  EXPECT_EQ(spec.at("repeat").at("row"), fields);
  EXPECT_EQ(spec.at("repeat").at("column"), fields);
  // Design 2 has a NaN: no row. The others keep their values under the unescaped titles.
  ASSERT_EQ(values(spec).size(), 2U);
  // Point 1 is chosen: its role says so (red, larger), and why is in its tooltip.
  EXPECT_EQ(values(spec)[1], json({{"design", "point 1"},
                                   {"role", "chosen"},
                                   {"chosen", "knee"},
                                   {"perf (TOPS/W, v1.0)", 2},
                                   {"b", 1},
                                   {"c", 1}}));
  // One brush for every panel.
  EXPECT_EQ(spec.at("spec").at("params")[0].at("select").at("resolve"), "global");
  EXPECT_EQ(spec.at("spec").at("encoding").at("color").at("condition").at("param"), "brush");
}

TEST(VegaCharts, BarsStackOrStandSideBySide) {
  BarChart chart{"Latency by op kind",  "time (us)",         {"gemm", "softmax"},
                 {"compute", "memory"}, {{3, kNaN}, {1, 2}}, true};
  json spec = json::parse(bar_spec(chart));
  // The NaN (compute at softmax) has no bar: three rows.
  ASSERT_EQ(values(spec).size(), 3U);
  EXPECT_EQ(values(spec)[2], json({{"category", "softmax"}, {"series", "memory"}, {"value", 2}}));
  EXPECT_FALSE(spec.at("encoding").at("y").contains("stack"));  // stacked: Vega-Lite's default
  EXPECT_FALSE(spec.at("encoding").contains("xOffset"));
  EXPECT_EQ(spec.at("encoding").at("x").at("sort"), json({"gemm", "softmax"}));
  chart.stacked = false;
  spec = json::parse(bar_spec(chart));
  EXPECT_TRUE(spec.at("encoding").at("y").at("stack").is_null());
  EXPECT_EQ(spec.at("encoding").at("xOffset").at("field"), "series");
}

TEST(VegaCharts, LinesDrawTheLimitAndUseLogOnlyWhenEveryValueIsPositive) {
  LineChart chart{"TTFT", "request rate (1/s)", "TTFT p99 (ms)", {1, 2}, {"p99"}, {{5, 50}}, true,
                  20,     "SLO 20 ms"};
  json spec = json::parse(line_spec(chart));
  const json& lines = spec.at("layer")[0];
  EXPECT_EQ(lines.at("encoding").at("y").at("scale").at("type"), "log");
  ASSERT_EQ(spec.at("layer").size(), 3U);  // lines, the limit's rule, its name
  EXPECT_EQ(values(spec.at("layer")[1])[0], json({{"limit", 20}, {"name", "SLO 20 ms"}}));
  chart.values = {{0, 50}};
  chart.limit = kNaN;
  spec = json::parse(line_spec(chart));
  EXPECT_FALSE(spec.at("layer")[0].at("encoding").at("y").at("scale").contains("type"));
  EXPECT_EQ(spec.at("layer").size(), 1U);
}

TEST(VegaCharts, RooflineRoofsMeetThePeakAtTheRidge) {
  // test::one_conv_op() on test::bf16_machine(): the op at 20 MACs/B and 50 GMAC/s; peaks 100
  // (bf16, the run's) and 200 GMAC/s (int8); DRAM's roof 1e10 B/s = 10 GMAC/s per MAC/B, ridge
  // 100 / 10 = 10 MACs/B.
  const json spec =
      json::parse(roofline_spec("Roofline </script>", test::bf16_machine(), {test::one_conv_op()}));
  EXPECT_EQ(spec.at("title"), "Roofline </script>");  // parsed back from "<\/script>"
  EXPECT_EQ(spec.at("encoding").at("y").at("title"), "achieved GMAC/s");
  // Axes: intensities 10 (ridge) .. 20 (op) and rates 50 .. 200, with a factor of 4 each side.
  EXPECT_EQ(spec.at("encoding").at("x").at("scale").at("domain"), json({2.5, 80}));
  // (5e10 MACs/s x 1e-9 is 50 to within a rounding, hence NEAR.)
  EXPECT_NEAR(spec.at("encoding").at("y").at("scale").at("domain")[0].get<double>(), 12.5, 1e-9);
  EXPECT_EQ(spec.at("encoding").at("y").at("scale").at("domain")[1], 800);
  const json ops = values(spec.at("layer")[0]);
  ASSERT_EQ(ops.size(), 1U);
  EXPECT_EQ(ops[0].at("x"), 20);
  EXPECT_NEAR(ops[0].at("y").get<double>(), 50, 1e-9);
  EXPECT_EQ(ops[0].at("op"), "layer1.conv2");
  EXPECT_EQ(ops[0].at("series"), "ops at dram");
  // Lines: the run's peak and the int8 peak across the axis, then the roof from where it enters
  // the plot (where it crosses the axis's floor, 12.5 / 10 = 1.25, is left of the axis's 2.5, so
  // at 2.5, rate 25) to the ridge (10, 100).
  const json lines = values(spec.at("layer")[1]);
  ASSERT_EQ(lines.size(), 6U);
  EXPECT_EQ(lines[0],
            json({{"x", 2.5}, {"y", 100}, {"line", "bf16 peak (the run's)"}, {"kind", "peak"}}));
  EXPECT_EQ(lines[2].at("y"), 200);
  EXPECT_EQ(
      lines[4],
      json({{"x", 2.5}, {"y", 25}, {"line", "dram roof (ridge 10 MACs/B)"}, {"kind", "roof"}}));
  EXPECT_EQ(lines[5].at("x"), 10);
  EXPECT_EQ(lines[5].at("y"), 100);
}

TEST(VegaCharts, ARooflineWithNothingToPlaceSaysSo) {
  const json spec = json::parse(roofline_spec("empty", Machine{}, {}));
  EXPECT_EQ(values(spec)[0].at("note"), "no op has MACs to place");
}

TEST(VegaCharts, NoSpecEndsTheScriptElementItSitsIn) {
  const BarChart chart{"a </script><script>alert(1)</script>", "y", {"</"}, {"s"}, {{1}}, false};
  const std::string text = bar_spec(chart);
  EXPECT_EQ(text.find("</"), std::string::npos) << text;
  EXPECT_EQ(json::parse(text).at("title"), chart.title);
}

}  // namespace
}  // namespace coda::reports
