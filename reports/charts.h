#pragma once
// The report's charts as gnuplot scripts (SVG terminal, data inlined as datablocks), and the step
// that makes gnuplot's SVG fit inside an HTML page. Scripts are plain text: building one runs
// nothing (gnuplot.h runs them).

#include <cstddef>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "reports/bound_analysis.h"

namespace coda::reports {

// The SI prefix ("T", "G", "M", "k" or none) that makes `largest` read 1 to 999, and the factor
// that scales a value to it (1e-12 for "T").
struct SiScale {
  double factor = 1;
  std::string_view prefix;
};
SiScale si_scale(double largest);

// Roofline (log-log): each level's roof min(peak, bandwidth x intensity) and the compute peak,
// and every op with MACs placed at (its intensity at a level, MACs / its time), one series per
// level. Without a peak, the ops are placed with no roofs.
std::string roofline_script(const std::string& title, const Machine& machine,
                            const std::vector<OpBound>& ops);

// Bars per category (x), one series per entry of `series`; `values[s][c]` is series s at
// category c (NaN: no bar). Stacked when `stacked`, else side by side.
struct BarChart {
  std::string title;
  std::string y_label;
  std::vector<std::string> categories;
  std::vector<std::string> series;
  std::vector<std::vector<double>> values;
  bool stacked = false;
};
std::string bar_script(const BarChart& chart);

// Scatter of every design (x, y), the front joined in x order, chosen designs labelled.
struct ScatterChart {
  std::string title;
  std::string x_label;
  std::string y_label;
  std::vector<std::pair<double, double>> points;
  std::vector<std::size_t> front;                             // indices into points
  std::vector<std::pair<std::size_t, std::string>> labelled;  // index into points, label
};
std::string pareto_script(const ScatterChart& chart);

// Lines over a numeric x: one series per entry of `series`, `values[s][i]` at x[i] (NaN: a gap).
// The y axis is logarithmic when `log_y` and every value is positive.
struct LineChart {
  std::string title;
  std::string x_label;
  std::string y_label;
  std::vector<double> x;
  std::vector<std::string> series;
  std::vector<std::vector<double>> values;
  bool log_y = false;
  // A horizontal line (an SLO limit) and its name; NaN: none.
  double limit = std::numeric_limits<double>::quiet_NaN();
  std::string limit_label;
};
std::string line_script(const LineChart& chart);

// gnuplot's SVG made fit to sit inside an HTML page next to other charts: the XML prolog is
// dropped and every id (and reference to one) gets `prefix`, so ids stay unique in the page.
std::string inline_svg(const std::string& svg, const std::string& prefix);

}  // namespace coda::reports
