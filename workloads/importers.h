#pragma once
// Reading workloads from files. Nothing here throws on bad input or prints: every problem is a
// Diagnostic with file:line:col, a path ("layers[3].conv2d.stride", "row 7, column 'Strides'")
// and a hint, and all of them are collected before a reader gives up. See docs/workloads.md for
// both formats.

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "core/diagnostics.h"
#include "core/yaml_reader.h"
#include "workloads/graph.h"

namespace coda::workload {

// coda's native layer list (schema_version 1): name, source, layers of conv2d or gemm.
// Conv output sizes use the floor convention (conv_output_extent).
std::optional<Graph> read_layer_list(const YamlReader& root, Diagnostics& diags);

// A SCALE-Sim v2 topology CSV, conv or GEMM format (chosen by the header), read as SCALE-Sim
// reads it: conv output sizes ceil((H - F) / stride) + 1 with padding folded into H and W, and
// a layer whose name contains "DP" is depthwise (one grouped conv with groups = Channels).
// `file` names the text in locations and becomes the graph's name (its stem) and source.
std::optional<Graph> read_scalesim_csv(std::string_view text, const std::string& file,
                                       Diagnostics& diags);

// Reads a workload file by extension: .yaml / .yml (layer list, `extends:` allowed), .csv
// (SCALE-Sim topology) or .json (coda trace, workloads/trace.h). Any other extension is a diagnostic listing the valid ones.
std::optional<Graph> load_workload(const std::filesystem::path& file, Diagnostics& diags);

}  // namespace coda::workload
