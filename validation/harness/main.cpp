// coda-bench: runs a case list of the bundled CUDA kernels on GPU 0 and writes one measurement
// row per case (docs/validation.md has the schema and how to run it).
//
//   coda-bench --cases validation/cases/default.yaml --out out/measurements.csv
//   coda-bench --cases validation/cases/smoke.yaml --list          # no GPU needed
//   coda-bench --cases validation/cases/ncu.yaml --only-case 3 --repetitions 1 --warmup 0
//
// Exit status: 0 every case passed its check, 1 some case failed or did not run, 2 the case list
// has errors, 3 no CUDA device, 4 the output file cannot be written.

#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "core/version.h"
#include "validation/case_list.h"
#include "validation/harness/bench_support.h"
#include "validation/harness/runner.h"

namespace {

using namespace coda::validation;

std::string describe(const Case& c) {
  const KernelInfo& ki = info(c.kernel);
  return fmt::format("{} {} {}", ki.name, dtype_name(c.dtype), shape_text(ki.shape, c.shape));
}

std::string result_line(const Measurement& m) {
  if (std::isnan(m.median_us)) return fmt::format("did not run: {}", m.note);
  std::string rate;
  if (!std::isnan(achieved_tflops(m))) rate += fmt::format(", {:.2f} TFLOP/s", achieved_tflops(m));
  if (!std::isnan(achieved_gbps(m))) rate += fmt::format(", {:.1f} GB/s", achieved_gbps(m));
  std::string quant;
  if (m.quant_error_per_tensor && m.quant_error_per_channel)
    quant = fmt::format(", int8 error per-tensor {:.2e} per-channel {:.2e}",
                        *m.quant_error_per_tensor, *m.quant_error_per_channel);
  return fmt::format("{:.2f} us{}{}, max_error {:.2e} {}{}", m.median_us, rate, quant,
                     m.max_error, m.passed ? "ok" : "FAILED: ", m.passed ? "" : m.note);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"coda-bench: measure coda's bundled CUDA kernels"};
  std::string cases_file;
  std::string out_file;
  std::string filter;
  std::size_t only_case = 0;
  std::uint32_t repetitions = 0;
  std::uint32_t warmup = 0;
  bool list_only = false;
  app.add_option("--cases", cases_file, "YAML case list")->required()->check(CLI::ExistingFile);
  app.add_option("--out", out_file, "measurement CSV to write (default: standard output)");
  app.add_option("--filter", filter, "run only the cases whose kernel name contains this");
  app.add_option("--only-case", only_case, "run only the case at this 1-based position in the list")
      ->check(CLI::PositiveNumber);
  app.add_option("--repetitions", repetitions, "override every case's timed repetitions");
  const CLI::Option* warmup_option =
      app.add_option("--warmup", warmup, "override every case's warm-up runs");
  app.add_flag("--list", list_only, "print the cases and exit (no GPU needed)");
  CLI11_PARSE(app, argc, argv);

  coda::Diagnostics diags;
  const auto list = load_case_list(cases_file, diags);
  if (!list) {
    std::cerr << diags.format_all() << "\nno case was run.\n";
    return 2;
  }
  if (only_case > list->cases.size()) {
    std::cerr << fmt::format("coda-bench: --only-case {}: {} has {} cases\n", only_case,
                             cases_file, list->cases.size());
    return 2;
  }
  std::vector<Case> cases;
  for (std::size_t i = 0; i < list->cases.size(); ++i) {
    Case c = list->cases[i];
    if (only_case > 0 && i + 1 != only_case) continue;
    if (!filter.empty() && info(c.kernel).name.find(filter) == std::string_view::npos) continue;
    if (repetitions > 0) c.repetitions = repetitions;
    if (warmup_option->count() > 0) c.warmup = warmup;
    cases.push_back(c);
  }
  if (list_only) {
    for (const Case& c : cases)
      std::cout << describe(c) << " (" << c.repetitions << " runs after " << c.warmup
                << " warm-up)\n";
    return 0;
  }

  std::string why;
  const auto runner = Runner::open(why);
  if (!runner) {
    std::cerr << "coda-bench: no CUDA device: " << why << "\n";
    return 3;
  }
  const DeviceInfo& dev = runner->device();
  std::cerr << fmt::format("coda-bench {}: {} (sm_{}, {} SMs, {} MHz, L2 {} MiB, driver {}, "
                           "runtime {}, ECC {})\n",
                           coda::kVersion, dev.name, dev.compute_capability, dev.sm_count,
                           dev.sm_clock_mhz, dev.l2_bytes >> 20U, dev.driver, dev.cuda_runtime,
                           dev.ecc);

  std::ofstream file;
  if (!out_file.empty()) {
    file.open(out_file);
    if (!file) {
      std::cerr << "coda-bench: cannot write " << out_file << "\n";
      return 4;
    }
  }
  std::ostream& out = out_file.empty() ? std::cout : file;
  write_measurement_header(out);

  const RunSettings settings{.seed = list->seed,
                             .check_samples = list->check_samples,
                             .date = iso_utc(std::chrono::system_clock::now()),
                             .source = fmt::format("measured: coda-bench {}", coda::kVersion)};
  int failed = 0;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    std::cerr << fmt::format("[{}/{}] {}: ", i + 1, cases.size(), describe(cases[i])) << std::flush;
    const Measurement m = runner->run(cases[i], settings);
    write_measurement_row(out, m);
    out.flush();
    std::cerr << result_line(m) << "\n";
    if (!m.passed) ++failed;
  }
  std::cerr << fmt::format("{} of {} cases passed\n", cases.size() - static_cast<std::size_t>(failed),
                           cases.size());
  return failed == 0 ? 0 : 1;
}
