#pragma once
// The report's charts as Vega-Lite specifications (JSON text), drawn from the same chart
// descriptions as the gnuplot scripts (charts.h), for the interactive page: hover shows each mark's
// values, drag and wheel pan and zoom (scatter, line and roofline charts), clicking a legend entry
// picks its series (the others fade). The specs name no data file and fetch nothing: every value is
// inline. report.html draws them with the bundle vega_bundle.h embeds.

#include <string>
#include <vector>

#include "reports/bound_analysis.h"
#include "reports/charts.h"

namespace coda::reports {

// The Vega-Lite schema the specs are written against (Vega-Lite 6, web/package.json).
inline constexpr std::string_view kVegaLiteSchema =
    "https://vega.github.io/schema/vega-lite/v6.json";

// Every design a point; the front joined in x order; the labelled designs ringed, numbered on the
// chart (their labels in the tooltip, so labels never overlap the markers or each other).
// `names[i]`, when given, is point i's hover text.
std::string pareto_spec(const ScatterChart& chart, const std::vector<std::string>& names = {});

// A scatter-plot matrix: every objective against every other, the front's designs blue; dragging
// a rectangle in any panel selects designs and greys the others in every panel (a double-click
// clears it).
std::string pairs_spec(const PairChart& chart);

// Bars per category, one colour per series, stacked or side by side.
std::string bar_spec(const BarChart& chart);

// Lines with points over a numeric x; log y as line_script decides; the limit as a dashed rule.
std::string line_spec(const LineChart& chart);

// Roofline, log-log, in the same units as roofline_script: ops per level as points, each level's
// roof and every peak as lines.
std::string roofline_spec(const std::string& title, const Machine& machine,
                          const std::vector<OpBound>& ops);

}  // namespace coda::reports
