#include "cli/validate_command.h"

#include <filesystem>
#include <ostream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "arch/arch_spec.h"
#include "cli/options.h"
#include "core/results.h"
#include "validation/compare.h"
#include "validation/measurement.h"
#include "validation/validation_report.h"

namespace coda::cli {

CLI::App* add_validate_command(CLI::App& app, ValidateArgs& args) {
  CLI::App* cmd = app.add_subcommand(
      "validate", "Compare coda's predictions with measured kernel times (a coda-bench CSV or a "
                  "published table in its schema); optionally fit the arch's calibration knobs");
  cmd->add_option("--measurements", args.measurements,
                  "Measurement CSV (docs/validation.md: coda-bench's output, or a hand-written "
                  "table with at least kernel, dtype, shape, median_us, source)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--arch", args.arch, "Architecture config (YAML), e.g. "
                                       "configs/arch/nvidia_h200_sxm.yaml")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--out", args.out_dir,
                  "Folder to write validation.json, validation.csv, validation.md (and "
                  "calibration.yaml when calibrating) into");
  cmd->add_option("--calibrate-on", args.calibrate_on,
                  "Fit the calibration knobs (launch overhead, compute and DRAM fractions) on "
                  "these classes (gemm, memory, attention, fusion, launch) or kernel names, "
                  "comma-separated; the rest is held out");
  return cmd;
}

int run_validate_command(const ValidateArgs& args, std::ostream& out, std::ostream& err) {
  std::vector<std::string> subset;
  if (!args.calibrate_on.empty()) {
    std::string why;
    const auto parsed = validation::parse_subset(args.calibrate_on, why);
    if (!parsed) {
      err << fmt::format("error: --calibrate-on: {}\n", why);
      return 2;
    }
    subset = *parsed;
  }
  Diagnostics diags;
  const auto arch = arch::load_arch(args.arch, diags);
  const auto rows = validation::load_measurements(args.measurements, diags);
  if (!arch || !rows) {
    err << diags.format_all() << "nothing was compared.\n";
    return 1;
  }
  std::string why;
  const auto report = validation::compare(*rows, arch->spec, subset, why);
  if (!report) {
    err << fmt::format("error: {}\n", why);
    return 1;
  }
  const validation::ReportInputs inputs{.measurements = args.measurements,
                                        .arch = args.arch,
                                        .arch_hash = results::hex_hash(arch->content_hash)};
  out << validation::report_text(*report, inputs);
  if (args.out_dir.empty()) return 0;

  const std::filesystem::path dir(args.out_dir);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    err << fmt::format("error: cannot create '{}': {}\n", dir.string(), ec.message());
    return 1;
  }
  if (!write_file(dir / "validation.json", validation::report_json(*report, inputs), err) ||
      !write_file(dir / "validation.csv", validation::report_csv(*report), err) ||
      !write_file(dir / "validation.md", validation::report_markdown(*report, inputs), err))
    return 1;
  out << fmt::format("\nwrote {}, {} and {}\n", (dir / "validation.json").string(),
                     (dir / "validation.csv").string(), (dir / "validation.md").string());
  if (report->calibration) {
    // extends: is resolved against the file that names it, so point from DIR to the arch.
    const std::string extends =
        std::filesystem::proximate(std::filesystem::absolute(args.arch),
                                   std::filesystem::absolute(dir), ec)
            .generic_string();
    const std::filesystem::path yaml = dir / "calibration.yaml";
    if (!write_file(yaml, validation::calibration_yaml(*report, inputs, extends), err)) return 1;
    out << fmt::format("wrote {} (an arch that extends {} with the fitted knobs)\n",
                       yaml.string(), args.arch);
  }
  return 0;
}

}  // namespace coda::cli
