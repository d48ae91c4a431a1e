#include "cli/validate_command.h"

#include <filesystem>
#include <ostream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "arch/arch_spec.h"
#include "cli/options.h"
#include "core/results.h"
#include "validation/compare.h"
#include "validation/corpus.h"
#include "validation/corpus_compare.h"
#include "validation/measurement.h"
#include "validation/validation_report.h"

namespace coda::cli {

CLI::App* add_validate_command(CLI::App& app, ValidateArgs& args) {
  CLI::App* cmd = app.add_subcommand(
      "validate", "Compare coda's predictions with measured kernel times (a coda-bench CSV or a "
                  "published table in its schema); optionally fit the arch's calibration knobs");
  auto* measurements =
      cmd->add_option("--measurements", args.measurements,
                      "Measurement CSV (docs/validation.md: coda-bench's output, or a hand-written "
                      "table with at least kernel, dtype, shape, median_us, source)")
          ->check(CLI::ExistingFile);
  auto* arch = cmd->add_option("--arch", args.arch, "Architecture config (YAML), e.g. "
                                                    "configs/arch/nvidia_h200_sxm.yaml")
                   ->check(CLI::ExistingFile);
  auto* corpus =
      cmd->add_option("--corpus", args.corpus,
                      "A published-measurement corpus (validation/published/corpus.yaml): every "
                      "row priced on its source's arch, the error per split, class, source and "
                      "arch (instead of --measurements and --arch)")
          ->check(CLI::ExistingFile)
          ->excludes(measurements)
          ->excludes(arch);
  measurements->needs(arch);
  arch->needs(measurements);
  cmd->add_flag("--fit", args.fit,
                "With --corpus: fit each family of archs' calibration knobs on the calibration "
                "split only and report both splits with them (writes calibration_*.yaml to --out)")
      ->needs(corpus);
  cmd->add_flag("--fit-whole-models-only", args.fit_whole_models,
                "With --fit: fit only the whole-model knobs (in_model_fixed_cost, "
                "llm_step_fixed_cost, eager_issue_time, decode_kv_reread, training_clock) on the "
                "calibration split's whole-model rows, every kernel knob held at the arch's value")
      ->needs("--fit");
  cmd->add_option("--fit-knobs", args.fit_knobs,
                  "With --fit: fit only these knobs, comma-separated (a name as the fit prints "
                  "it, or its prefix up to a '.': fixed_cost.gemm, tile_overhead.gemm, "
                  "tensor_issue.wgmma, dram_fraction, ...); every other knob keeps the arch's "
                  "value. For refitting what a model change touches")
      ->delimiter(',')
      ->needs("--fit");
  cmd->add_option("--models", args.models,
                  "Folder of the LLM presets llm_* rows name (default: configs/workloads/llm of "
                  "the repository the input file is in)")
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--out", args.out_dir,
                  "Folder to write validation.json, validation.csv, validation.md (and "
                  "calibration.yaml when calibrating) into; with --corpus, corpus.json (and "
                  "calibration_<arch>.yaml with --fit)");
  cmd->add_option("--calibrate-on", args.calibrate_on,
                  "Fit the calibration knobs (fixed costs, tile overheads, tensor issue per "
                  "path, DRAM and link fractions, ...; docs/validation.md) on these classes "
                  "(gemm, memory, attention, fusion, launch, collective, llm, network) or kernel "
                  "names, comma-separated; the rest is held out");
  return cmd;
}

namespace {

// Where llm_* rows find their models: --models, else configs/workloads/llm of the repository the
// input file lives in (the nearest folder above it with configs/), else of the working folder.
std::filesystem::path llm_dir(const ValidateArgs& args, const std::string& input) {
  if (!args.models.empty()) return args.models;
  const auto top = validation::corpus_root(std::filesystem::path(input).parent_path());
  return (top ? *top : std::filesystem::path(".")) / "configs/workloads/llm";
}

bool make_dir(const std::filesystem::path& dir, std::ostream& err) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) err << fmt::format("error: cannot create '{}': {}\n", dir.string(), ec.message());
  return !ec;
}

int run_corpus(const ValidateArgs& args, std::ostream& out, std::ostream& err) {
  if (!args.calibrate_on.empty()) {
    err << "error: --calibrate-on fits a subset of one measurement file; with --corpus use --fit, "
           "which fits on the calibration split\n";
    return 2;
  }
  Diagnostics diags;
  const auto corpus = validation::load_corpus(args.corpus, diags);
  if (!corpus) {
    err << diags.format_all() << "nothing was compared.\n";
    return 1;
  }
  std::string why;
  const auto report =
      validation::compare_corpus(*corpus,
                                 {.fit = args.fit,
                                  .fit_whole_models_only = args.fit_whole_models,
                                  .fit_knobs = args.fit_knobs,
                                  .pricing = {.llm_dir = llm_dir(args, args.corpus)}},
                                 why);
  if (!report) {
    err << why << "nothing was compared.\n";
    return 1;
  }
  out << validation::corpus_report_text(*report, *corpus);
  if (args.out_dir.empty()) return 0;
  const std::filesystem::path dir(args.out_dir);
  if (!make_dir(dir, err) ||
      !write_file(dir / "corpus.json", validation::corpus_report_json(*report, *corpus), err))
    return 1;
  out << fmt::format("\nwrote {}\n", (dir / "corpus.json").string());
  for (std::size_t f = 0; f < report->families.size(); ++f) {
    if (!report->families[f].fit) continue;
    const auto& arch = report->archs[report->families[f].archs.front()].spec;
    const std::filesystem::path yaml = dir / fmt::format("calibration_{}.yaml", arch.name);
    if (!write_file(yaml, validation::family_calibration_yaml(*report, f), err)) return 1;
    out << fmt::format("wrote {}\n", yaml.string());
  }
  return 0;
}

}  // namespace

int run_validate_command(const ValidateArgs& args, std::ostream& out, std::ostream& err) {
  if (!args.corpus.empty()) return run_corpus(args, out, err);
  if (args.measurements.empty() || args.arch.empty()) {
    err << "error: give --measurements M.csv and --arch A.yaml, or --corpus MANIFEST\n";
    return 2;
  }
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
  Diagnostics warnings;
  validation::warn_device_mismatch(*rows, arch->spec.name, arch->spec.description,
                                   args.measurements, warnings);
  for (const Diagnostic& d : warnings.all()) err << format(d) << '\n';
  std::string why;
  const auto report = validation::compare(*rows, arch->spec, subset, why,
                                          {.llm_dir = llm_dir(args, args.measurements)});
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
  if (!make_dir(dir, err)) return 1;
  if (!write_file(dir / "validation.json", validation::report_json(*report, inputs), err) ||
      !write_file(dir / "validation.csv", validation::report_csv(*report), err) ||
      !write_file(dir / "validation.md", validation::report_markdown(*report, inputs), err))
    return 1;
  out << fmt::format("\nwrote {}, {} and {}\n", (dir / "validation.json").string(),
                     (dir / "validation.csv").string(), (dir / "validation.md").string());
  if (report->calibration) {
    // extends: is resolved against the file that names it, so point from DIR to the arch.
    std::error_code ec;
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
