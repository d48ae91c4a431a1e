#pragma once
// The ONNX importer as a plugin (issue 22, item 4): libonnx and protobuf cost every coda command
// ~2.7 ms of dynamic linking at start-up (3 of its 20 libraries, and protobuf's descriptor
// registration) though few commands read an ONNX file. So the importer (coda::workloads_onnx)
// is built into a module of its own, coda-onnx.so beside the coda binary, and
// coda::workload_sources loads it with dlopen the first time a source is an .onnx file.
//
// The module and its loader are built from one tree in one build: they share this header, the
// types it names (OnnxOptions, OnnxImport, Diagnostics) and the C++ runtime, so the table below
// passes C++ objects across; kAbi and the sizes guard against a module from another build.

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string_view>

#include "core/diagnostics.h"
#include "workloads/onnx/onnx_importer.h"

namespace coda::workload::onnx {

// What the module's entry point returns.
struct PluginTable {
  static constexpr unsigned kAbi = 1;
  unsigned abi = kAbi;
  std::size_t options_size = sizeof(OnnxOptions);
  std::size_t import_size = sizeof(OnnxImport);
  std::size_t diagnostics_size = sizeof(Diagnostics);
  std::optional<OnnxImport> (*import_file)(const std::filesystem::path& file,
                                           const OnnxOptions& options,
                                           Diagnostics& diags) = nullptr;
};

// The module's file name (core/plugin.h says where it is looked for) and its one exported
// symbol: extern "C" const void* NAME(), which returns a `const PluginTable*`.
inline constexpr std::string_view kPluginFile = "coda-onnx.so";
inline constexpr const char* kPluginEntry = "coda_onnx_plugin_v1";

// import_onnx (onnx_importer.h) through the module: loads it on first use (a later call finds it
// loaded; it is never unloaded). A missing or mismatched module is a Diagnostic at `file` that
// names the paths tried and the build target that makes it (coda_onnx_plugin).
std::optional<OnnxImport> import_onnx_via_plugin(const std::filesystem::path& file,
                                                 const OnnxOptions& options, Diagnostics& diags);

}  // namespace coda::workload::onnx
