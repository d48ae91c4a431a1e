#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "workloads/importers.h"
#include "workloads/trace.h"

namespace coda::workload {

std::optional<Graph> load_workload(const std::filesystem::path& file, Diagnostics& diags) {
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
    std::ifstream in(file, std::ios::binary);
    if (!in) {
      diags.error({file.string(), 0, 0}, "", "cannot open the file",
                  "check that the path exists and is readable");
      return std::nullopt;
    }
    std::ostringstream text;
    text << in.rdbuf();
    if (ext == ".json") return read_trace(text.str(), file.string(), diags);
    return read_scalesim_csv(text.str(), file.string(), diags);
  }
  diags.error({file.string(), 0, 0}, "",
              ext.empty() ? std::string("workload file has no extension")
                          : fmt::format("unknown workload file extension '{}'", ext),
              "expected .yaml or .yml (coda layer list), .csv (SCALE-Sim topology) or .json (coda "
              "trace)");
  return std::nullopt;
}

}  // namespace coda::workload
