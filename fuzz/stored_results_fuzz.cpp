// Fuzzes the readers of stored results that coda report takes: reports::read_run_json (run.json,
// the analytical or the SystemC engine's), reports::read_sweep_json (a sweep's results.json) and
// reports::read_serve_json (coda serve's serve.json).
// Both keep the reader contract; a run.json the reader accepts survives a round trip through
// core's JSON: written back and read again, it is the same RunResult.

#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "fuzz/fuzz_contract.h"
#include "reports/stored_results.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using coda::fuzz::require;
  const std::string_view text = coda::fuzz::as_text(data, size);

  coda::Diagnostics run_diags;
  const auto run = coda::reports::read_run_json(text, "run.json", run_diags);
  coda::fuzz::check_contract(run.has_value(), run_diags);
  if (run) {
    const nlohmann::ordered_json written = *run;
    coda::Diagnostics again_diags;
    const auto again = coda::reports::read_run_json(written.dump(), "again.json", again_diags);
    coda::fuzz::check_contract(again.has_value(), again_diags);
    require(again.has_value() && *again == *run);
  }

  coda::Diagnostics serve_diags;  // coda serve's serve.json
  const auto served = coda::reports::read_serve_json(text, "serve.json", serve_diags);
  coda::fuzz::check_contract(served.has_value(), serve_diags);

  coda::Diagnostics sweep_diags;
  const auto sweep = coda::reports::read_sweep_json(text, "results.json", sweep_diags);
  coda::fuzz::check_contract(sweep.has_value(), sweep_diags);
  return 0;
}
