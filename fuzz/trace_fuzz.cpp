// Fuzzes the JSON trace reader: workload::read_trace. A graph it accepts must verify and must
// write back to the same trace.

#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_contract.h"
#include "workloads/trace.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  coda::Diagnostics diags;
  const auto graph = coda::workload::read_trace(coda::fuzz::as_text(data, size), "fuzz.json", diags);
  if (graph) {
    coda::fuzz::require(coda::workload::verify(*graph).empty());
    coda::Diagnostics again;
    const auto back =
        coda::workload::read_trace(coda::workload::write_trace(*graph), "again.json", again);
    coda::fuzz::require(back.has_value() && *back == *graph);
  }
  // Semantic errors in a trace carry a JSON path but no line (nlohmann keeps no positions), so
  // only the value-or-error half of the contract applies to them.
  coda::fuzz::require(graph.has_value() == !diags.has_errors());
  for (const coda::Diagnostic& d : diags.all()) coda::fuzz::require(!d.message.empty());
  return 0;
}
