#include "arch/cluster_spec.h"

#include <system_error>
#include <utility>
#include <variant>

#include <fmt/format.h>

namespace coda::arch {
namespace {

constexpr std::uint32_t kMaxNodes = 1U << 20;  // a typo guard, as the arch reader's counts

void read_inter_node(const YamlReader& node, InterNodeSpec& out, Diagnostics& diags) {
  if (!node.expect_map(diags)) return;
  if (!node.has("bandwidth")) {
    diags.error(node, "missing required key 'bandwidth'",
                "give one chip's network bandwidth per direction, e.g. \"50 GB/s\" for a "
                "400 Gb/s NIC per GPU");
  } else {
    const YamlReader at = node.at("bandwidth");
    Bandwidth value;
    if (at.read(value, diags)) {
      const auto* per_s = std::get_if<BytesPerSecond>(&value);
      if (per_s == nullptr)
        diags.error(at, "a network runs on its own clock: give bytes per second",
                    "e.g. \"50 GB/s\"");
      else if (per_s->value <= 0)
        diags.error(at, "must be above zero", "e.g. \"50 GB/s\"");
      else
        out.bandwidth = *per_s;
    }
  }
  if (!node.has("latency")) {
    diags.error(node, "missing required key 'latency'",
                "give the time of one step that crosses nodes, e.g. \"14 us\"");
  } else if (node.required("latency", out.latency, diags) && out.latency.value < 0) {
    diags.error(node.at("latency"), "must not be negative");
  }
  if (node.has("efficiency")) {
    const YamlReader at = node.at("efficiency");
    double value = 1.0;
    if (at.read(value, diags)) {
      if (value > 0 && value <= 1)
        out.efficiency = value;
      else
        diags.error(at,
                    fmt::format("{} is not a fraction of the bandwidth in (0, 1]", value),
                    "e.g. 0.96; leave it out for 1 (the line rate)");
    }
  }
  node.reject_unknown_keys(diags);
}

}  // namespace

std::optional<LoadedCluster> read_cluster(const YamlReader& root, const std::filesystem::path& file,
                                          Diagnostics& diags) {
  const std::size_t errors_before = diags.error_count();
  if (!root.expect_map(diags)) return std::nullopt;
  LoadedCluster out;
  ClusterSpec& spec = out.spec;
  std::uint32_t version = 0;
  if (root.required("schema_version", version, diags) && version != kClusterSchemaVersion)
    diags.error(root.at("schema_version").location(), "schema_version",
                fmt::format("unsupported schema_version {}", version),
                fmt::format("this coda reads cluster files of schema_version {}",
                            kClusterSchemaVersion));
  root.required("name", spec.name, diags);
  root.optional("description", spec.description, diags);
  root.optional("sources", spec.sources, diags);

  std::string chip;
  if (root.required("chip", chip, diags)) {
    const YamlReader at = root.at("chip");
    // Relative to the file that states it (a preset this file extends may).
    const std::string from = at.location().file.empty() ? file.string() : at.location().file;
    spec.chip = (std::filesystem::path(from).parent_path() / chip).lexically_normal();
    std::error_code ec;
    if (chip.empty() || !std::filesystem::is_regular_file(spec.chip, ec)) {
      diags.error(at, fmt::format("no such file: {}", spec.chip.string()),
                  "chip: names the chip's arch file, relative to this cluster file, e.g. "
                  "../arch/nvidia_h100_sxm.yaml");
    } else if (auto arch = load_arch(spec.chip, diags)) {
      spec.chip_name = arch->spec.name;
      spec.chips_per_node = arch->spec.interconnect ? arch->spec.interconnect->chips : 1;
      out.chip = std::move(*arch);
    } else {
      diags.error(at,
                  fmt::format("the chip's arch {} does not read (its errors above)",
                              spec.chip.string()));
    }
  }

  if (root.required("nodes", spec.nodes, diags)) {
    const YamlReader at = root.at("nodes");
    if (spec.nodes == 0)
      diags.error(at, "must be at least 1", "e.g. nodes: 32");
    else if (spec.nodes > kMaxNodes)
      diags.error(at,
                  fmt::format("{} is larger than the supported {}", spec.nodes, kMaxNodes));
  }
  if (!root.has("inter_node"))
    diags.error(root.location(), "", "missing required key 'inter_node'",
                "add inter_node: {bandwidth: 50 GB/s, latency: 14 us}");
  else
    read_inter_node(root.at("inter_node"), spec.inter_node, diags);
  root.reject_unknown_keys(diags);
  if (diags.error_count() != errors_before) return std::nullopt;
  out.path = file.string();
  return out;
}

std::optional<LoadedCluster> load_cluster(const std::filesystem::path& file, Diagnostics& diags) {
  const auto doc = YamlDocument::load(file, diags);
  if (!doc) return std::nullopt;
  auto cluster = read_cluster(doc->root(), file, diags);
  if (!cluster) return std::nullopt;
  cluster->content_hash = doc->content_hash();
  return cluster;
}

}  // namespace coda::arch
