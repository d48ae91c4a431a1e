#include "reports/charts.h"

#include <cmath>

#include <gtest/gtest.h>

#include "reports/tests/report_fixtures.h"

namespace coda::reports {
namespace {

TEST(Charts, InlineSvgDropsThePrologAndPrefixesIds) {
  const std::string svg =
      "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<svg><path id='gpPt1'/>"
      "<use xlink:href='#gpPt1'/><g id=\"canvas\" clip-path=\"url(#clip1)\"/></svg>";
  EXPECT_EQ(inline_svg(svg, "c3_"),
            "\n<svg><path id='c3_gpPt1'/><use xlink:href='#c3_gpPt1'/>"
            "<g id=\"c3_canvas\" clip-path=\"url(#c3_clip1)\"/></svg>");
}

TEST(Charts, RooflinePlacesOpsAndDrawsRoofs) {
  // test::one_conv_op() on test::bf16_machine(): the op at (20 MACs/B, 50 GMAC/s), peaks 100 and
  // 200 GMAC/s, ridge 10 MACs/B.
  const std::string script =
      roofline_script("Roofline, it's a test", test::bf16_machine(), {test::one_conv_op()});
  EXPECT_NE(script.find("set title 'Roofline, it''s a test'\n"), std::string::npos) << script;
  EXPECT_NE(script.find("set ylabel 'achieved GMAC/s'\n"), std::string::npos) << script;
  EXPECT_NE(script.find("$ops0 << EOD\n20 50 \"layer1.conv2\"\nEOD\n"), std::string::npos)
      << script;
  EXPECT_NE(script.find("peak = 100\n"), std::string::npos);
  EXPECT_NE(script.find("title 'bf16 peak (the run''s)'"), std::string::npos) << script;
  EXPECT_NE(script.find("peak0 = 200\n"), std::string::npos);
  EXPECT_NE(script.find("title 'int8 peak'"), std::string::npos) << script;
  EXPECT_NE(script.find("bw0 = 10\n"), std::string::npos);  // 1e10 B/s as GMAC/s per MAC/B
  EXPECT_NE(script.find("'dram roof (ridge 10 MACs/B)'"), std::string::npos) << script;
  // x spans the op's 20 and the ridge's 10, a factor 4 each side.
  EXPECT_NE(script.find("set xrange [2.5:80]\n"), std::string::npos) << script;
}

TEST(Charts, BarsWithAMissingValue) {
  const BarChart chart{"t", "y", {"conv", "fc"}, {"a", "b"}, {{1, 2}, {std::nan(""), 4}}, true};
  const std::string script = bar_script(chart);
  EXPECT_NE(script.find("set style histogram rowstacked\n"), std::string::npos);
  EXPECT_NE(script.find("$bars << EOD\n\"conv\" 1 NaN\n\"fc\" 2 4\nEOD\n"), std::string::npos)
      << script;
  EXPECT_NE(script.find("plot $bars using 2:xtic(1) title 'a', $bars using 3 title 'b'\n"),
            std::string::npos)
      << script;
}

TEST(Charts, PairsDrawEachPairOnceWithTheFrontApart) {
  // Three designs, three objectives; A and B on the front, B chosen. Pairs (0,1), (0,2), (1,2):
  // three panels.
  const PairChart chart{
      "pairs", {"a", "b", "c"}, {{1, 2, 3}, {2, 1, 1}, {3, 3, 3}}, {true, true, false},
      {},      {"", "knee", ""}};
  const std::string script = pairs_script(chart);
  EXPECT_NE(script.find("set multiplot layout 1,3 title 'pairs'\n"), std::string::npos) << script;
  EXPECT_NE(script.find("$all01 << EOD\n3 3\nEOD\n$front01 << EOD\n1 2\n2 1\nEOD\n"),
            std::string::npos)
      << script;
  EXPECT_NE(script.find("$front12 << EOD\n2 3\n1 1\nEOD\n$chosen12 << EOD\n1 1\nEOD\n"),
            std::string::npos)
      << script;
  EXPECT_NE(script.find("set xlabel 'b'\nset ylabel 'c'\n"), std::string::npos) << script;
  EXPECT_EQ(script.find("$all10"), std::string::npos);  // each pair once
}

TEST(LineScript, OneColumnASeriesAndTheLimitAsALine) {
  LineChart c{"TTFT", "rate", "ms", {1, 2}, {"p50", "p99"}, {{10, 20}, {30, 40}}, true};
  c.limit = 100;
  c.limit_label = "SLO";
  const std::string s = line_script(c);
  EXPECT_NE(s.find("$lines << EOD\n1 10 30\n2 20 40\nEOD\n"), std::string::npos) << s;
  EXPECT_NE(s.find("set logscale y"), std::string::npos);
  EXPECT_NE(s.find("$lines using 1:3 with linespoints"), std::string::npos);
  EXPECT_NE(s.find("100 with lines dt 2"), std::string::npos);
  c.values[0][0] = 0;  // a zero cannot go on a log axis
  EXPECT_EQ(line_script(c).find("set logscale y"), std::string::npos);
}

}  // namespace
}  // namespace coda::reports
