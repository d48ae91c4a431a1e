// Fuzzes the ONNX importer on raw bytes: workload::onnx::import_onnx_bytes (protobuf parsing,
// shape inference, import). A graph it accepts must verify.

#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_contract.h"
#include "workloads/onnx/onnx_importer.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  coda::Diagnostics diags;
  coda::workload::onnx::OnnxOptions options;
  options.skip_unsupported = true;
  const auto imported = coda::workload::onnx::import_onnx_bytes(coda::fuzz::as_text(data, size),
                                                                "fuzz.onnx", options, diags);
  coda::fuzz::require(imported.has_value() == !diags.has_errors());
  for (const coda::Diagnostic& d : diags.all()) coda::fuzz::require(!d.message.empty());
  if (imported) coda::fuzz::require(coda::workload::verify(imported->graph).empty());
  return 0;
}
