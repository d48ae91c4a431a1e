// Fuzzes the SCALE-Sim topology CSV reader: workload::read_scalesim_csv.

#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_contract.h"
#include "workloads/importers.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  coda::Diagnostics diags;
  const std::string file = "fuzz.csv";
  const auto graph =
      coda::workload::read_scalesim_csv(coda::fuzz::as_text(data, size), file, diags);
  if (graph) coda::fuzz::require(!graph->ops.empty());
  coda::fuzz::check_contract(graph.has_value(), diags);
  return 0;
}
