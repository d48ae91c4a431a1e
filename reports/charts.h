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

// Log scale on an axis when its values are all positive and span more than `decades`.
bool wants_log(const std::vector<double>& values, double decades);

// A roofline's numbers in the units it is drawn in, for both renderers (gnuplot's and Vega-Lite's):
// rates in MAC/s scaled by `scale` (the prefix that makes the largest rate, a peak or the fastest
// op, read 1 to 999: TMAC/s on a GPU, GMAC/s on an edge NPU), intensities in MACs per byte.
struct RooflinePoint {
  double intensity = 0;
  double rate = 0;
  std::string op;
};
struct RooflineSeries {
  std::size_t index = 0;  // the level's place among the levels the ops name, first named first
  std::string level;
  std::vector<RooflinePoint> ops;  // never empty
};
struct RooflineRoof {
  std::string name;               // the level's
  double rate_per_intensity = 0;  // its bandwidth in the rate's unit per byte
  double ridge = 0;               // peak / bandwidth, MACs per byte
};
struct RooflinePlot {
  SiScale scale;
  std::vector<RooflineSeries> series;  // the ops at each level they have bytes at
  double peak = 0;                     // 0: none (no roofs either)
  std::string peak_label;
  std::vector<std::pair<std::string, double>> other_peaks;  // label, rate (> 0)
  std::vector<RooflineRoof> roofs;
  // The axes' range: every op, peak and ridge with a factor of 4 of margin each side.
  double x_lo = 1, x_hi = 1, y_lo = 1, y_hi = 1;
  bool empty() const { return series.empty() && peak <= 0; }
};
RooflinePlot roofline_plot(const Machine& machine, const std::vector<OpBound>& ops);

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

// Every design in every pair of three or more objectives (the front is computed over all of
// them, so its designs need not look undominated in any one pair): `values[d][k]` is design d's
// objective k, `front[d]` whether d is on the front, `names[d]` its hover text, `chosen[d]` why
// the report points it out ("best latency, knee", "base design"; empty: not chosen).
struct PairChart {
  std::string title;
  std::vector<std::string> labels;  // an axis title per objective, unit included
  std::vector<std::vector<double>> values;
  std::vector<bool> front;
  std::vector<std::string> names;
  std::vector<std::string> chosen;
};
// One panel per pair of objectives (k (k - 1) / 2 of them), side by side; the chosen designs
// ringed in red.
std::string pairs_script(const PairChart& chart);

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
