#include "cli/check_config.h"

#include <cstdint>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "arch/arch_spec.h"
#include "arch/cluster_spec.h"
#include "core/text.h"
#include "dse/sweep_spec.h"
#include "validation/case_list.h"
#include "validation/corpus.h"
#include "validation/corpus_compare.h"
#include "validation/measurement.h"
#include "workloads/importers.h"
#include "workloads/llm/hf_config.h"
#include "workloads/llm/llm_config.h"

namespace coda::cli {

namespace {

// Whether the first line of a CSV names a `kernel` column (a measurement table); SCALE-Sim's
// topology headers begin with `Layer name` or `Layer`.
bool has_kernel_column(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::string header;
  std::getline(in, header);
  std::istringstream cells(header);
  for (std::string cell; std::getline(cells, cell, ',');) {
    const auto first = cell.find_first_not_of(" \t\r\"");
    const auto last = cell.find_last_not_of(" \t\r\"");
    if (first != std::string::npos && cell.substr(first, last - first + 1) == "kernel")
      return true;
  }
  return false;
}

}  // namespace

ConfigKind config_kind(const std::filesystem::path& file) {
  // Not a regular file (a device, a pipe: reading it could block or never end) or too large:
  // left to the readers, which say what it is without reading it (core/text.h read_text_file).
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec) ||
      std::filesystem::file_size(file, ec) > kMaxTextFileBytes) {
    if (file.extension() == ".csv" || file.extension() == ".json") return ConfigKind::Workload;
    return ConfigKind::Arch;
  }
  if (file.extension() == ".csv")
    return has_kernel_column(file) ? ConfigKind::Measurements : ConfigKind::Workload;
  if (file.extension() == ".json") {
    std::ifstream in(file, std::ios::binary);
    bool hf = false;
    try {
      const auto root = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
      hf = root.is_object() && (root.contains("model_type") || root.contains("hidden_size") ||
                                root.contains("n_embd"));
    } catch (const nlohmann::json::exception&) {
      // Even without exceptions nlohmann throws for numbers beyond a double; the trace reader
      // reports it with the file's name.
    }
    return hf ? ConfigKind::Llm : ConfigKind::Workload;  // a bad trace is reported by its reader
  }
  try {
    const YAML::Node root = YAML::LoadFile(file.string());
    if (root.IsMap() && root["layers"]) return ConfigKind::Workload;
    if (root.IsMap() && root["model"]) return ConfigKind::Llm;
    if (root.IsMap() && root["axes"]) return ConfigKind::Sweep;
    if (root.IsMap() && root["cases"]) return ConfigKind::CaseList;
    // An arch's `sources:` is a line of text; a corpus manifest's is a list of files.
    if (root.IsMap() && root["sources"] && root["sources"].IsSequence()) return ConfigKind::Corpus;
    // A cluster states its chip and network, or extends a cluster and states its nodes.
    if (root.IsMap() && (root["chip"] || root["inter_node"] || root["nodes"]))
      return ConfigKind::Cluster;
  } catch (const YAML::Exception&) {
    // Reported with its location by the arch reader.
  }
  return ConfigKind::Arch;
}

std::optional<std::string> check_config_file(const std::filesystem::path& file,
                                             Diagnostics& diags) {
  const ConfigKind kind = config_kind(file);
  if (kind == ConfigKind::Llm) {
    const auto config = file.extension() == ".json" ? workload::llm::load_hf_config(file, diags)
                                                    : workload::llm::load_llm_config(file, diags);
    if (!config) return std::nullopt;
    return fmt::format("llm '{}', {} layers, hidden {}, {} heads ({} kv)", config->name,
                       config->layers, config->hidden, config->heads, config->kv_heads);
  }
  if (kind == ConfigKind::Sweep) {
    const auto spec = dse::load_sweep_spec(file, diags);
    if (!spec) return std::nullopt;
    const std::uint64_t points = spec->sampling.method == dse::SamplingMethod::Grid
                                     ? dse::grid_size(*spec, UINT64_MAX).value_or(0)
                                     : spec->sampling.points;
    return fmt::format("sweep '{}', {} {}, {} {} point{}", spec->name, spec->axes.size(),
                       spec->axes.size() == 1 ? "axis" : "axes", points,
                       dse::to_string(spec->sampling.method), points == 1 ? "" : "s");
  }
  if (kind == ConfigKind::CaseList) {
    const auto cases = validation::load_case_list(file, diags);
    if (!cases) return std::nullopt;
    return fmt::format("validation case list, {} case{}", cases->cases.size(),
                       cases->cases.size() == 1 ? "" : "s");
  }
  if (kind == ConfigKind::Corpus) {
    const auto errors_before = diags.error_count();
    const auto corpus = validation::load_corpus(file, diags);
    if (!corpus) return std::nullopt;
    // Each arch and cluster it names is read too, as `coda validate` will read it.
    std::size_t rows = 0;
    for (const validation::CorpusEntry& e : corpus->entries) {
      rows += e.rows.size();
      (void)arch::load_arch(e.arch, diags);
      if (e.cluster.empty()) continue;
      if (const auto cluster = arch::load_cluster(e.cluster, diags))
        (void)validation::check_cluster_chip(*cluster, e, diags);
    }
    if (diags.error_count() != errors_before) return std::nullopt;
    return fmt::format("published corpus, {} source{}, {} row{}", corpus->entries.size(),
                       corpus->entries.size() == 1 ? "" : "s", rows, rows == 1 ? "" : "s");
  }
  if (kind == ConfigKind::Measurements) {
    const auto rows = validation::load_measurements(file, diags);
    if (!rows) return std::nullopt;
    return fmt::format("measurements, {} row{}", rows->size(), rows->size() == 1 ? "" : "s");
  }
  if (kind == ConfigKind::Workload) {
    const auto graph = workload::load_workload(file, diags);
    if (!graph) return std::nullopt;
    return fmt::format("workload '{}', {} ops", graph->name, graph->ops.size());
  }
  if (kind == ConfigKind::Cluster) {
    const auto cluster = arch::load_cluster(file, diags);
    if (!cluster) return std::nullopt;
    return fmt::format("cluster '{}', {} nodes x {} '{}' ({} chips)", cluster->spec.name,
                       cluster->spec.nodes, cluster->spec.chips_per_node, cluster->spec.chip_name,
                       cluster->spec.chips());
  }
  const auto arch = arch::load_arch(file, diags);
  if (!arch) return std::nullopt;
  return fmt::format("arch '{}', {}", arch->spec.name, arch::describe_compute(arch->spec));
}

}  // namespace coda::cli
