// The loader half of onnx_plugin.h, compiled into coda::workload_sources (no libonnx).

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/plugin.h"
#include "workloads/onnx/onnx_plugin.h"

namespace coda::workload::onnx {

std::optional<OnnxImport> import_onnx_via_plugin(const std::filesystem::path& file,
                                                 const OnnxOptions& options, Diagnostics& diags) {
  std::vector<std::string> why;
  const auto* table = static_cast<const PluginTable*>(
      load_plugin(kPluginFile, kPluginEntry, PluginScope::local, why));
  const PluginTable expected;
  if (table != nullptr &&
      (table->abi != expected.abi || table->options_size != expected.options_size ||
       table->import_size != expected.import_size ||
       table->diagnostics_size != expected.diagnostics_size || table->import_file == nullptr)) {
    why.push_back(fmt::format("the module found is not of this build (ABI {}, this coda's {})",
                              table->abi, expected.abi));
    table = nullptr;
  }
  if (table == nullptr) {
    diags.error({file.string(), 0, 0}, "",
                fmt::format("this coda reads ONNX files through its module {}, which could not be "
                            "loaded: {}",
                            kPluginFile, fmt::join(why, "; ")),
                "build it (cmake --build build --target coda_onnx_plugin) and keep it beside the "
                "coda binary");
    return std::nullopt;
  }
  return table->import_file(file, options, diags);
}

}  // namespace coda::workload::onnx
