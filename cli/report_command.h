#pragma once
// `coda report RESULTS... --out DIR`: the co-design report (docs/report.md) from stored results.
// RESULTS are a sweep's output folder (its results.json is read) or a results.json, and/or
// run.json files (or the folders `coda run --out` wrote them to). Writes DIR/report.html
// (self-contained, charts inlined as SVG), DIR/report.md and DIR/charts/*.svg. The charts are
// drawn by gnuplot (Debian gnuplot-nox).

#include <cstddef>
#include <iosfwd>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace coda::cli {

struct ReportArgs {
  std::vector<std::string> results;
  std::string out_dir;
  std::vector<std::string> labels;  // one per run, in order; default: the run's folder name
  std::size_t top = 10;
  double gnuplot_timeout_s = 20;
};

CLI::App* add_report_command(CLI::App& app, ReportArgs& args);
int run_report_command(const ReportArgs& args, std::ostream& out, std::ostream& err);

}  // namespace coda::cli
