#pragma once
// `coda validate --measurements M.csv --arch A.yaml [--out DIR] [--calibrate-on LIST]`: price
// every measured case with coda, print the predicted-vs-measured table with its error per class
// and per source (MAPE, worst case, Spearman), and with --out write validation.json,
// validation.csv and validation.md; with --calibrate-on, fit the arch's calibration knobs on the
// named classes or kernels, report the error on them and on the held-out rest, and write
// calibration.yaml (docs/validation.md).

#include <iosfwd>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace coda::cli {

struct ValidateArgs {
  std::string measurements;
  std::string corpus;  // a published-corpus manifest instead of --measurements and --arch
  bool fit = false;    // with --corpus: fit on the calibration split
  bool fit_whole_models = false;  // with --fit: the whole-model knobs only
  std::vector<std::string> fit_knobs;  // with --fit: only these knobs (names or prefixes)
  std::string models;  // where llm_* rows find their model; empty: configs/workloads/llm of the
                       // repository the input lives in
  std::string arch;
  std::string out_dir;
  std::string calibrate_on;  // empty: no fitting
};

CLI::App* add_validate_command(CLI::App& app, ValidateArgs& args);

// Exit codes as run_main's: 0 success, 1 bad input (diagnostics on `err`), 2 bad usage.
int run_validate_command(const ValidateArgs& args, std::ostream& out, std::ostream& err);

}  // namespace coda::cli
