// Fuzzes the ONNX importer on raw bytes: workload::onnx::import_onnx_bytes (protobuf parsing,
// shape inference, import). A graph it accepts must verify, and must still verify after the
// fuse-attention pass that loading a model runs on it (workloads/source.cpp).

#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_contract.h"
#include "workloads/onnx/onnx_importer.h"
#include "workloads/passes/builtin_passes.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  coda::Diagnostics diags;
  coda::workload::onnx::OnnxOptions options;
  options.skip_unsupported = true;
  const auto imported = coda::workload::onnx::import_onnx_bytes(coda::fuzz::as_text(data, size),
                                                                "fuzz.onnx", options, diags);
  coda::fuzz::require(imported.has_value() == !diags.has_errors());
  for (const coda::Diagnostic& d : diags.all()) coda::fuzz::require(!d.message.empty());
  if (!imported) return 0;
  coda::fuzz::require(coda::workload::verify(imported->graph).empty());
  coda::workload::Graph graph = imported->graph;
  coda::workload::PassPipeline pipeline;
  pipeline.add<coda::workload::FuseAttention>();
  coda::fuzz::require(pipeline.run(graph).ok());
  return 0;
}
