#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "core/text.h"
#include "workloads/importers.h"
#include "workloads/trace.h"

namespace coda::workload {

namespace {

std::optional<Graph> read_any(const std::filesystem::path& file, Diagnostics& diags) {
  std::string ext = file.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](char c) {
    return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  });
  if (ext == ".yaml" || ext == ".yml") {
    const auto doc = YamlDocument::load(file, diags);
    if (!doc) return std::nullopt;
    return read_layer_list(doc->root(), diags);
  }
  if (ext == ".csv" || ext == ".json") {
    std::string why;
    const auto text = read_text_file(file, why);
    if (!text) {
      diags.error({file.string(), 0, 0}, "", why, "name a readable workload file");
      return std::nullopt;
    }
    if (ext == ".json") return read_trace(*text, file.string(), diags);
    return read_scalesim_csv(*text, file.string(), diags);
  }
  if (ext == ".onnx") {
    diags.error({file.string(), 0, 0}, "", "an ONNX model is not a workload file",
                fmt::format("import it first: coda workload {} --export-trace T.json (with --bind "
                            "NAME=VALUE for its dynamic dimensions), then give T.json",
                            file.string()));
    return std::nullopt;
  }
  diags.error({file.string(), 0, 0}, "",
              ext.empty() ? std::string("workload file has no extension")
                          : fmt::format("unknown workload file extension '{}'", ext),
              "expected .yaml or .yml (coda layer list), .csv (SCALE-Sim topology) or .json (coda "
              "trace)");
  return std::nullopt;
}

}  // namespace

std::optional<Graph> load_workload(const std::filesystem::path& file, Diagnostics& diags) {
  auto graph = read_any(file, diags);
  if (!graph) return std::nullopt;
  const std::vector<std::string> problems = size_problems(*graph);
  for (const std::string& problem : problems) diags.error({file.string(), 0, 0}, "", problem);
  if (!problems.empty()) return std::nullopt;
  return graph;
}

}  // namespace coda::workload
