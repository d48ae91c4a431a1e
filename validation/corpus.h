#pragma once
// The manifest of the published-measurement corpus (validation/published/corpus.yaml, described
// in validation/published/README.md): one entry per (source, device) CSV file, with the arch its
// rows are priced on, its split and the classes of kernel it holds. Read with located
// diagnostics (file:line:col, YAML path, did-you-mean), like the case lists.
//
//   schema_version: 1
//   sources:
//     - id: fa3_paper                           # the source; one entry per device file
//       file: gpu/fa3_h100.csv                  # relative to the manifest's folder
//       arch: configs/arch/nvidia_h100_sxm.yaml # relative to the repository top (below)
//       split: validation                       # calibration | validation
//       classes: [attention]                    # gemm attention row copy collective llm network
//       citation: "Shah et al., FlashAttention-3 (2024), Fig. 5"
//       cluster: configs/cluster/dgx_h100_superpod.yaml  # optional, relative to the top
//
// A file is listed once; the entries of one source (id) must all have the same split, since a
// source's rows go to one side. `file` must exist and read as a measurement CSV (load_measurements: its own diagnostics are
// located in the CSV). `arch` is resolved against the repository top: the nearest folder that
// holds a `configs/` folder, looking from the manifest's folder upwards (the folder itself
// first); it must exist (it is read as an arch where the arch reader is at hand: `coda
// check-config` reads it). `cluster`, when given, names the cluster the rows' devices run on
// (arch/cluster_spec.h: rows whose ranks span nodes, such as llm_train with dp beyond one node,
// price their collectives on it); resolved as `arch`, it must exist, and its chip must be the
// entry's arch (checked where the cluster reader is at hand: `coda check-config` and `coda
// validate --corpus`).

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/diagnostics.h"
#include "core/enum_table.h"
#include "core/yaml_reader.h"
#include "validation/measurement.h"

namespace coda::validation {

inline constexpr std::uint32_t kCorpusSchemaVersion = 1;

// calibration rows may be fitted on; validation rows are held out (validation/published/SPLIT.md).
enum class Split : std::uint8_t { Calibration, Validation };
std::string_view to_string(Split split);
EnumTable<Split> split_names();  // "calibration", "validation"

// What a source's rows are, as its manifest entry states it.
enum class CorpusClass : std::uint8_t {
  Gemm, Attention, Row, Copy, Collective, Llm, Training, Network
};
std::string_view to_string(CorpusClass c);
std::span<const CorpusClass> all_corpus_classes();

struct CorpusEntry {
  std::string id;
  std::filesystem::path file;  // resolved: the manifest's folder / `file`
  std::filesystem::path arch;  // resolved: the repository top / `arch`
  std::filesystem::path cluster;  // resolved: the repository top / `cluster`; empty: none
  SourceLocation cluster_where;   // the `cluster:` value in the manifest
  std::string cluster_key;        // its YAML path, "sources[3].cluster"
  Split split = Split::Validation;
  std::vector<CorpusClass> classes;
  std::string citation;
  std::vector<Measurement> rows;  // the file's rows (load_measurements)
  SourceLocation where;           // the entry in the manifest
};

struct Corpus {
  std::filesystem::path root;  // the repository top the arch paths were resolved against
  std::vector<CorpusEntry> entries;
};

// The repository top for a manifest in `folder`: the nearest of folder, folder/.., ... that
// holds a `configs/` folder, written as folder/../.. (lexically normal); nullopt when none does.
std::optional<std::filesystem::path> corpus_root(const std::filesystem::path& folder);

// Reads a parsed manifest whose file is in `folder`; reads every CSV it names. Never throws on
// bad input: every problem is a Diagnostic, and the result is nullopt when there was any error.
std::optional<Corpus> read_corpus(const YamlReader& root, const std::filesystem::path& folder,
                                  Diagnostics& diags);
// Reads a manifest file.
std::optional<Corpus> load_corpus(const std::filesystem::path& manifest, Diagnostics& diags);

}  // namespace coda::validation
