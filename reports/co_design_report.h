#pragma once
// The co-design report: from a sweep's results.json and/or run.json files, a Markdown summary
// (report.md) and a self-contained HTML page (report.html, charts inlined as SVG, nothing
// fetched when opened). Every number in a table names the point or run it comes from.
// docs/report.md describes each section and chart.

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/results.h"
#include "reports/bound_analysis.h"
#include "reports/gnuplot.h"
#include "reports/stored_results.h"

namespace coda::reports {

struct RunInput {
  std::string label;   // how the report names the run ("h100", "fused")
  std::string source;  // the run.json it was read from
  results::RunResult run;
  Machine machine;     // the roofline's numbers for this run
};

struct SweepInput {
  std::string source;  // the results.json it was read from
  SweepResults results;
};

struct TrainingInput {
  std::string label;   // how the report names the step
  std::string source;  // the file `coda train --json` wrote
  TrainingStepResult step;
};

struct ServingInput {
  std::string label;   // how the report names the simulation
  std::string source;  // the serve.json `coda serve --out` wrote
  ServingResult result;
};

struct ReportInput {
  std::optional<SweepInput> sweep;
  std::vector<RunInput> runs;
  std::vector<TrainingInput> trainings;  // `coda train --json` files
  std::vector<ServingInput> servings;    // `coda serve --out` serve.json files
  std::size_t top = 10;  // designs per workload in the top-designs table
};

// Turns a chart's gnuplot script into SVG; the CLI passes run_gnuplot, tests may pass a stand-in.
using ChartRenderer = std::function<GnuplotOutput(std::string_view script)>;

struct ReportChart {
  std::string file;    // "roofline_1.svg": report.md links charts/<file>
  std::string title;
  std::string script;  // the gnuplot script it was drawn from
  std::string svg;     // gnuplot's output as it came
  std::string spec;    // the same chart as a Vega-Lite specification (JSON; vega_charts.h)
};

struct Report {
  std::string markdown;
  std::string html;
  std::vector<ReportChart> charts;
  // The sweep points the Recommendation names (best per objective, knee, best all-round), each
  // once: the designs `coda report` writes to designs/point-N.yaml.
  std::vector<std::uint64_t> designs;
};

struct ReportOutcome {
  std::optional<Report> report;
  std::string error;  // when no report: which chart failed and why
};

// Precondition: at least one of sweep and runs.
ReportOutcome build_report(const ReportInput& input, const ChartRenderer& render);

}  // namespace coda::reports
