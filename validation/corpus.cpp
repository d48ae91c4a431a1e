#include "validation/corpus.h"

#include <algorithm>
#include <array>
#include <system_error>
#include <tuple>
#include <utility>

#include <fmt/format.h>

namespace coda::validation {
namespace {

namespace fs = std::filesystem;

constexpr std::array<std::pair<std::string_view, Split>, 2> kSplits{{
    {"calibration", Split::Calibration},
    {"validation", Split::Validation},
}};

constexpr std::array<std::pair<std::string_view, CorpusClass>, 8> kClasses{{
    {"gemm", CorpusClass::Gemm},
    {"attention", CorpusClass::Attention},
    {"row", CorpusClass::Row},
    {"copy", CorpusClass::Copy},
    {"collective", CorpusClass::Collective},
    {"llm", CorpusClass::Llm},
    {"training", CorpusClass::Training},
    {"network", CorpusClass::Network},
}};
constexpr std::array kAllClasses{CorpusClass::Gemm, CorpusClass::Attention, CorpusClass::Row,
                                 CorpusClass::Copy, CorpusClass::Collective, CorpusClass::Llm,
                                 CorpusClass::Training, CorpusClass::Network};

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

// A required, non-empty text value.
bool read_text(const YamlReader& item, std::string_view key, std::string& out,
               std::string_view example, Diagnostics& diags) {
  if (!item.required(key, out, diags)) return false;
  if (!out.empty()) return true;
  diags.error(item.at(key), "must not be empty",
              fmt::format("e.g. {}", example));
  return false;
}

std::optional<CorpusEntry> read_entry(const YamlReader& item, const fs::path& folder,
                                      const std::optional<fs::path>& root, Diagnostics& diags) {
  if (!item.expect_map(diags)) return std::nullopt;
  const auto errors_before = diags.error_count();
  CorpusEntry e;
  e.where = item.location();
  read_text(item, "id", e.id, "fa3_h100", diags);

  std::string file;
  if (read_text(item, "file", file, "gpu/fa3_h100.csv", diags)) {
    e.file = (folder / file).lexically_normal();
    if (!is_file(e.file))
      diags.error(item.at("file"),
                  fmt::format("no such file: {}", e.file.string()),
                  "the path is relative to the manifest's folder");
  }

  std::string arch;
  if (read_text(item, "arch", arch, "configs/arch/nvidia_h100_sxm.yaml", diags)) {
    if (!root) {
      diags.error(item.at("arch"),
                  "no folder above the manifest holds a configs/ folder",
                  "arch paths are relative to the repository top; keep the manifest inside it");
    } else {
      e.arch = (*root / arch).lexically_normal();
      if (!is_file(e.arch))
        diags.error(item.at("arch"),
                    fmt::format("no such file: {}", e.arch.string()),
                    fmt::format("the path is relative to the repository top ({})",
                                root->string()));
    }
  }

  if (item.has("cluster")) {
    std::string cluster;
    const YamlReader at = item.at("cluster");
    if (read_text(item, "cluster", cluster, "configs/cluster/dgx_h100_superpod.yaml", diags)) {
      e.cluster_where = at.location();
      e.cluster_key = at.path();
      if (!root) {
        diags.error(at, "no folder above the manifest holds a configs/ folder",
                    "cluster paths are relative to the repository top; keep the manifest inside it");
      } else {
        e.cluster = (*root / cluster).lexically_normal();
        if (!is_file(e.cluster))
          diags.error(at, fmt::format("no such file: {}", e.cluster.string()),
                      fmt::format("the path is relative to the repository top ({}), e.g. "
                                  "configs/cluster/dgx_h100_superpod.yaml",
                                  root->string()));
      }
    }
  }

  item.required_enum("split", e.split, EnumTable<Split>(kSplits), diags);

  if (item.has("classes")) {
    const YamlReader classes = item.at("classes");
    if (classes.expect_sequence(diags)) {
      for (const YamlReader& c : classes.items()) {
        CorpusClass value{};
        if (!c.read_enum(value, EnumTable<CorpusClass>(kClasses), diags)) continue;
        if (std::find(e.classes.begin(), e.classes.end(), value) != e.classes.end())
          diags.error(c,
                      fmt::format("'{}' is listed twice", to_string(value)));
        else
          e.classes.push_back(value);
      }
      if (classes.items().empty())
        diags.error(classes, "no classes",
                    "list the classes of kernel the file holds, e.g. [gemm]");
    }
  } else {
    diags.error(item, "missing required key 'classes'",
                "list the classes of kernel the file holds, e.g. classes: [gemm]");
  }

  read_text(item, "citation", e.citation, "\"Shah et al., FlashAttention-3 (2024), Fig. 5\"",
            diags);
  item.reject_unknown_keys(diags);

  // The CSV is read when it exists, whatever else is wrong, so one run shows every mistake.
  if (!e.file.empty() && is_file(e.file)) {
    if (auto rows = load_measurements(e.file, diags)) e.rows = std::move(*rows);
  }
  if (diags.error_count() != errors_before) return std::nullopt;
  return e;
}

}  // namespace

EnumTable<Split> split_names() { return kSplits; }

std::string_view to_string(Split split) {
  for (const auto& [name, value] : kSplits)
    if (value == split) return name;
  return "?";
}

std::string_view to_string(CorpusClass c) {
  for (const auto& [name, value] : kClasses)
    if (value == c) return name;
  return "?";
}

std::span<const CorpusClass> all_corpus_classes() { return kAllClasses; }

std::optional<fs::path> corpus_root(const fs::path& folder) {
  fs::path candidate = folder.empty() ? fs::path(".") : folder;
  std::error_code ec;
  // At most as many steps up as the absolute path has parts, so it ends at the file system root.
  const fs::path absolute = fs::absolute(candidate, ec).lexically_normal();
  const auto levels = static_cast<std::size_t>(std::distance(absolute.begin(), absolute.end()));
  for (std::size_t i = 0; i <= levels; ++i) {
    if (fs::is_directory(candidate / "configs", ec)) {
      const fs::path top = candidate.lexically_normal();  // "a/b/" for "a/b/c/..": drop the "/"
      return top.has_filename() || top == top.root_path() ? top : top.parent_path();
    }
    candidate /= "..";
  }
  return std::nullopt;
}

std::optional<Corpus> read_corpus(const YamlReader& root, const fs::path& folder,
                                  Diagnostics& diags) {
  if (!root.expect_map(diags)) return std::nullopt;
  const auto errors_before = diags.error_count();
  std::uint32_t version = 0;
  if (root.required("schema_version", version, diags) && version != kCorpusSchemaVersion) {
    diags.error(root.at("schema_version"),
                fmt::format("unsupported version {}", version),
                fmt::format("this coda reads version {}", kCorpusSchemaVersion));
  }
  Corpus corpus;
  const std::optional<fs::path> top = corpus_root(folder);
  if (top) corpus.root = *top;
  if (root.has("sources")) {
    const YamlReader sources = root.at("sources");
    if (sources.expect_sequence(diags)) {
      // One entry per file; a source (an id) may have one entry per device file, all on the
      // same side of the split. Judged on the text, even when an entry has other errors.
      std::vector<std::pair<std::string, std::size_t>> files;                 // file -> line
      std::vector<std::tuple<std::string, std::string, std::size_t>> splits;  // id, split, line
      const auto text = [](const YamlReader& item, std::string_view key) {
        return item.is_map() && item.has(key) && item.at(key).is_scalar()
                   ? std::optional<std::string>(item.at(key).node().Scalar())
                   : std::nullopt;
      };
      for (const YamlReader& item : sources.items()) {
        if (const auto file = text(item, "file")) {
          const auto first = std::find_if(files.begin(), files.end(),
                                          [&](const auto& seen) { return seen.first == *file; });
          if (first != files.end())
            diags.error(item.at("file"),
                        fmt::format("'{}' is listed twice (first at line {})", *file,
                                    first->second),
                        "each file is one entry");
          else
            files.emplace_back(*file, item.at("file").location().line);
        }
        const auto id = text(item, "id");
        const auto split = text(item, "split");
        if (id && split && (*split == "calibration" || *split == "validation")) {
          const auto first = std::find_if(splits.begin(), splits.end(), [&](const auto& seen) {
            return std::get<0>(seen) == *id;
          });
          if (first != splits.end() && std::get<1>(*first) != *split)
            diags.error(item.at("split"),
                        fmt::format("source '{}' is in {} here but in {} at line {}", *id, *split,
                                    std::get<1>(*first), std::get<2>(*first)),
                        "all the rows of a source go to one side of the split (SPLIT.md)");
          else if (first == splits.end())
            splits.emplace_back(*id, *split, item.at("split").location().line);
        }
        if (auto e = read_entry(item, folder, top, diags)) corpus.entries.push_back(std::move(*e));
      }
      if (sources.items().empty())
        diags.error(sources, "no sources", "list at least one source");
    }
  } else {
    diags.error(root, "missing required key 'sources'",
                "list the published CSV files, e.g. sources: [{id: ..., file: gpu/x.csv, ...}]");
  }
  root.reject_unknown_keys(diags);
  if (diags.error_count() != errors_before) return std::nullopt;
  return corpus;
}

std::optional<Corpus> load_corpus(const fs::path& manifest, Diagnostics& diags) {
  auto doc = YamlDocument::load(manifest, diags);
  if (!doc) return std::nullopt;
  return read_corpus(doc->root(), manifest.parent_path(), diags);
}

}  // namespace coda::validation
