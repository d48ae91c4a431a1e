// coda-onnx.so's entry point (onnx_plugin.h): the table through which coda::workload_sources
// reaches this module's copy of the ONNX importer. The only symbol the module exports.

#include "workloads/onnx/onnx_plugin.h"

// Returns `const void*`, the type core/plugin.h calls every entry point through (a call through
// a pointer of another function type is undefined); the loader casts it back.
extern "C" __attribute__((visibility("default"))) const void* coda_onnx_plugin_v1() {
  static constexpr coda::workload::onnx::PluginTable kTable{.import_file =
                                                                &coda::workload::onnx::import_onnx};
  return &kTable;
}
