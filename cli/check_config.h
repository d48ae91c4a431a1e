#pragma once
// What `coda check-config FILE` does for one file, shared with the tests that feed it broken
// inputs: decide whether the file is an arch config or a workload, read it, and collect every
// diagnostic.

#include <filesystem>
#include <optional>
#include <string>

#include "core/diagnostics.h"

namespace coda::cli {

// A .csv whose header names a `kernel` column is a table of kernel measurements
// (docs/validation.md), any other .csv a SCALE-Sim topology (workload); a .json is a Hugging Face
// config.json (an LLM) when it has `model_type`, `hidden_size` or `n_embd` at the top, else a
// coda trace (workload); a YAML file with a top-level `layers:` key is a workload, one with
// `model:` an LLM, one with `axes:` a sweep spec (docs/sweeps.md), one with `cases:` a
// validation case list, one with a `sources:` list the manifest of the published corpus
// (validation/corpus.h; an arch's `sources:` is text), one with `chip:` and `inter_node:` a
// cluster (arch/cluster_spec.h); any other file is an arch config (so YAML
// that does not parse is reported by the arch reader, with its location).
enum class ConfigKind { Arch, Workload, Llm, Sweep, CaseList, Measurements, Corpus, Cluster };
ConfigKind config_kind(const std::filesystem::path& file);

// Reads `file` as its kind. On success returns a one-line summary ("arch 'x', 32x32
// output_stationary", "workload 'resnet18', 21 ops", "sweep 'quick', 4 axes, 81 grid points",
// "validation case list, 12 cases", "measurements, 30 rows", "published corpus, 3 sources, 40
// rows": a corpus's CSV files and arch configs are read too; "cluster 'x', 127 nodes x 8
// 'nvidia-h100-sxm'": its chip's arch is read too); every problem is in `diags`.
std::optional<std::string> check_config_file(const std::filesystem::path& file,
                                             Diagnostics& diags);

}  // namespace coda::cli
