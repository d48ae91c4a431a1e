#include "cli/report_command.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <ostream>
#include <sstream>
#include <system_error>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "arch/arch_spec.h"
#include "arch/hardware_model.h"
#include "cli/options.h"
#include "cli/sweep_command.h"
#include "dse/sweep_spec.h"
#include "core/results.h"
#include "reports/co_design_report.h"
#include "reports/gnuplot.h"
#include "reports/stored_results.h"

namespace coda::cli {
namespace {

namespace fs = std::filesystem;

std::optional<std::string> read_text(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return std::nullopt;
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

// The level bandwidths the run's traffic names, from the arch file it recorded, when that file
// is still there unchanged. Returns a note for the user when it is not.
std::string add_arch_roofs(reports::RunInput& in, const fs::path& run_file) {
  const results::InputHash* arch = nullptr;
  for (const results::InputHash& h : in.run.provenance.inputs)
    if (h.role == "arch") arch = &h;
  if (arch == nullptr) return "the run records no arch file";
  // As recorded (relative to where coda run ran), else beside the run.json.
  // The non-throwing overloads: a path that cannot be a file (a name over 255 bytes) is absent.
  std::error_code ec;
  fs::path path = arch->path;
  if (!fs::exists(path, ec) && fs::path(arch->path).is_relative() &&
      fs::exists(run_file.parent_path() / arch->path, ec))
    path = run_file.parent_path() / arch->path;
  if (!fs::exists(path, ec)) return fmt::format("its arch file '{}' is not found", arch->path);
  Diagnostics diags;
  const auto loaded = arch::load_arch(path, diags);
  if (!loaded) return fmt::format("its arch file '{}' does not load", path.string());
  if (results::hex_hash(loaded->content_hash) != arch->hash)
    return fmt::format("its arch file '{}' changed since the run (hash {}, the run recorded {})",
                       path.string(), results::hex_hash(loaded->content_hash), arch->hash);
  const arch::HardwareModel hw(loaded->spec);
  // The peak at the type the run computed in (its ops' with the most MACs), the matrix unit's
  // other types beside it: a bf16 run is not held to the int8 peak.
  std::map<std::string, std::uint64_t> macs_by_type;
  for (const results::OpResult& op : in.run.ops)
    if (!op.precision.empty() && op.cost.macs > 0) macs_by_type[op.precision] += op.cost.macs;
  const auto most =
      std::max_element(macs_by_type.begin(), macs_by_type.end(),
                       [](const auto& a, const auto& b) { return a.second < b.second; });
  const std::optional<DataType> type =
      most == macs_by_type.end() ? std::nullopt : parse_data_type(most->first);
  if (type && hw.peak_ops_per_second(*type) > 0) {
    in.machine.peak_macs_per_second = hw.peak_ops_per_second(*type) / 2.0;
    in.machine.peak_precision = most->first;
    in.machine.source =
        fmt::format("the arch's {} peak (the type of most of the run's MACs)", most->first);
    for (const DataType other : hw.matrix_precisions())
      if (other != *type && hw.peak_ops_per_second(other) > 0)
        in.machine.other_peaks.emplace_back(std::string(to_string(other)),
                                            hw.peak_ops_per_second(other) / 2.0);
  }
  std::vector<std::string> names;
  for (const results::OpResult& op : in.run.ops)
    for (const results::TensorTraffic& t : op.traffic)
      if (std::find(names.begin(), names.end(), t.level) == names.end()) names.push_back(t.level);
  for (const std::string& name : names) {
    std::optional<double> bandwidth;
    for (const arch::LevelSummary& level : hw.levels())
      if (level.name == name) bandwidth = level.read_bytes_per_second;
    if (name == "sram" && !bandwidth) {
      // The systolic engines' "sram": every on-chip level together; limited only when each is.
      double sum = 0;
      bool limited = hw.levels().size() > 1;
      for (std::size_t l = 0; l + 1 < hw.levels().size(); ++l) {
        const auto& bw = hw.levels()[l].read_bytes_per_second;
        limited = limited && bw.has_value();
        sum += bw.value_or(0.0);
      }
      if (limited) bandwidth = sum;
    }
    if (name == "link" && hw.spec().interconnect)
      bandwidth = hw.spec().interconnect->bandwidth.value;
    if (bandwidth && *bandwidth > 0) in.machine.levels.push_back({name, *bandwidth});
  }
  in.machine.source += fmt::format("; bandwidths from {} (hash {})", path.string(), arch->hash);
  return {};
}

}  // namespace

CLI::App* add_report_command(CLI::App& app, ReportArgs& args) {
  CLI::App* cmd = app.add_subcommand(
      "report",
      "Write the co-design report (docs/report.md) from stored results: a sweep's "
      "output folder or results.json, and/or run.json files, and/or training steps "
      "(coda train --json), and/or serving simulations (coda serve --out); "
      "DIR/report.html (self-contained, interactive Vega-Lite charts), DIR/report.md and "
      "DIR/charts/ (each chart as gnuplot's SVG and as a Vega-Lite spec, .vl.json)");
  cmd->add_option("results", args.results,
                  "A sweep output folder or its results.json, and/or run.json files or the "
                  "folders holding them, and/or training steps as coda train --json writes "
                  "them, and/or serve.json files or the folders coda serve --out wrote (at most "
                  "one sweep)")
      ->required()
      ->check(CLI::ExistingPath);
  cmd->add_option("--out", args.out_dir, "Folder for report.html, report.md and charts/")
      ->required();
  cmd->add_option("--label", args.labels,
                  "A name per run, in the order given (default: the folder of its run.json), "
                  "e.g. --label fp16 --label int8");
  cmd->add_option("--top", args.top, "Designs per workload in the top-designs table")
      ->check(kPositive)
      ->capture_default_str();
  cmd->add_option("--gnuplot-timeout", args.gnuplot_timeout_s,
                  "Seconds one chart may take gnuplot before it is stopped")
      ->check(kPositive)
      ->capture_default_str();
  return cmd;
}

// The designs the Recommendation names, each whole into DIR/designs/point-N.yaml, from the spec
// results.json names when it still reads as the sweep's (the same hash); otherwise a note says
// why none were written and how to write them. False only when writing failed.
bool write_recommended_designs(const reports::SweepResults& sweep,
                               const std::vector<std::uint64_t>& points, const fs::path& dir,
                               std::ostream& out, std::ostream& err) {
  if (points.empty()) return true;
  const std::string how =
      fmt::format("coda sweep SPEC --out DIR --export-design {} writes them from the sweep's spec",
                  fmt::join(points, ","));
  if (sweep.spec_file.empty()) {
    err << fmt::format(
        "note: no designs written: this results.json does not name its spec "
        "(written before coda recorded it); {}\n",
        how);
    return true;
  }
  Diagnostics diags;
  const auto spec = dse::load_sweep_spec(sweep.spec_file, diags);
  if (!spec) {
    err << fmt::format(
        "note: no designs written: the sweep's spec '{}' cannot be read from here "
        "({}); {}\n",
        sweep.spec_file,
        diags.all().empty() ? std::string("unknown reason") : diags.all().front().message, how);
    return true;
  }
  if (results::hex_hash(spec->hash) != sweep.spec_hash) {
    err << fmt::format(
        "note: no designs written: '{}' has changed since the sweep (hash {}, "
        "the sweep's {}), so its points are not the report's; {}\n",
        sweep.spec_file, results::hex_hash(spec->hash), sweep.spec_hash, how);
    return true;
  }
  return write_designs(*spec, points, dir / "designs", out, err);
}

int run_report_command(const ReportArgs& args, std::ostream& out, std::ostream& err) {
  reports::ReportInput input;
  input.top = args.top;
  Diagnostics diags;
  std::vector<std::string> notes;
  std::size_t run_count = 0;
  for (const std::string& given : args.results) {
    fs::path file = given;
    std::error_code ec;  // an unusable path is no folder; reading it then says why
    if (fs::is_directory(file, ec)) {
      if (fs::exists(file / "results.json", ec)) file /= "results.json";
      else if (fs::exists(file / "run.json", ec)) file /= "run.json";
      else if (fs::exists(file / "serve.json", ec))
        file /= "serve.json";
      else {
        err << fmt::format(
            "error: '{}' holds neither results.json (coda sweep --out), "
            "run.json (coda run --out) nor serve.json (coda serve --out)\n",
            given);
        return 2;
      }
    }
    const auto text = read_text(file);
    if (!text) {
      err << fmt::format("error: cannot read '{}'\n", file.string());
      return 1;
    }
    if (file.filename() == "results.json") {
      if (input.sweep) {
        err << fmt::format("error: '{}': only one sweep per report ({} is already given)\n",
                           file.string(), input.sweep->source);
        return 2;
      }
      if (auto sweep = reports::read_sweep_json(*text, file.string(), diags))
        input.sweep = reports::SweepInput{file.string(), std::move(*sweep)};
      continue;
    }
    if (reports::is_train_json(*text)) {  // coda train --json
      auto step = reports::read_train_json(*text, file.string(), diags);
      if (!step) continue;
      const std::size_t n = run_count++;  // labels go to runs and training steps in order
      input.trainings.push_back(
          {n < args.labels.size() ? args.labels[n] : file.stem().string(), file.string(),
           std::move(*step)});
      continue;
    }
    if (reports::is_serve_json(*text)) {  // coda serve --out
      auto served = reports::read_serve_json(*text, file.string(), diags);
      if (!served) continue;
      const std::size_t n = run_count++;
      input.servings.push_back({n < args.labels.size()
                                    ? args.labels[n]
                                    : fs::absolute(file).parent_path().filename().string(),
                                file.string(), std::move(*served)});
      continue;
    }
    auto run = reports::read_run_json(*text, file.string(), diags);
    if (!run) continue;
    reports::RunInput in;
    in.label = run_count < args.labels.size()
                   ? args.labels[run_count]
                   : fs::absolute(file).parent_path().filename().string();
    ++run_count;
    in.source = file.string();
    in.machine = reports::machine_from_run(*run);
    in.run = std::move(*run);
    const std::string missing = add_arch_roofs(in, file);
    if (!missing.empty())
      notes.push_back(fmt::format("run {}: no level bandwidths ({}); its ops are classified by "
                                  "the bound the engine recorded",
                                  in.label, missing));
    input.runs.push_back(std::move(in));
  }
  if (diags.has_errors()) {
    err << diags.format_all() << "no report was written.\n";
    return 1;
  }
  if (args.labels.size() > run_count) {
    err << fmt::format("error: --label given {} times for {} run{}{}\n", args.labels.size(),
                       run_count, run_count == 1 ? "" : "s",
                       input.trainings.empty() ? "" : " and training steps");
    return 2;
  }
  const auto timeout = std::chrono::milliseconds(static_cast<long>(args.gnuplot_timeout_s * 1000));
  const reports::ReportOutcome outcome = reports::build_report(
      input, [&](std::string_view script) { return reports::run_gnuplot(script, timeout); });
  if (!outcome.report) {
    err << fmt::format("error: {}\nno report was written.\n", outcome.error);
    return 1;
  }
  const fs::path dir(args.out_dir);
  std::error_code ec;
  fs::create_directories(dir / "charts", ec);
  if (ec) {
    err << fmt::format("error: cannot create '{}': {}\n", (dir / "charts").string(), ec.message());
    return 1;
  }
  // Each chart twice: gnuplot's SVG (report.md links it) and its Vega-Lite spec (for vega-embed,
  // Altair or the Vega editor), named alike: roofline_1.svg and roofline_1.vl.json.
  for (const reports::ReportChart& chart : outcome.report->charts)
    if (!write_file(dir / "charts" / chart.file, chart.svg, err) ||
        !write_file(dir / "charts" / fs::path(chart.file).replace_extension(".vl.json"), chart.spec,
                    err))
      return 1;
  if (!write_file(dir / "report.md", outcome.report->markdown, err) ||
      !write_file(dir / "report.html", outcome.report->html, err))
    return 1;
  for (const std::string& note : notes) err << "note: " << note << "\n";
  out << fmt::format("wrote {} and {} ({} charts in {})\n", (dir / "report.html").string(),
                     (dir / "report.md").string(), outcome.report->charts.size(),
                     (dir / "charts").string());
  if (input.sweep &&
      !write_recommended_designs(input.sweep->results, outcome.report->designs, dir, out, err))
    return 1;
  return 0;
}

}  // namespace coda::cli
