#pragma once
// A cluster: identical nodes of one chip, joined by a network (configs/cluster/*.yaml, docs/arch.md
// "Clusters"). The file names its chip's arch file instead of copying it; a node holds as many
// chips as the chip's interconnect joins (its `interconnect.chips`: 8 on an HGX board), or one
// when the arch states no interconnect.
//
//   schema_version: 1
//   name: dgx-h100-superpod
//   chip: ../arch/nvidia_h100_sxm.yaml   # relative to this file
//   nodes: 127
//   inter_node:
//     bandwidth: 50 GB/s    # per chip, per direction: the chip's share of its node's NICs
//     latency: 14 us        # per step of a collective that crosses nodes
//     efficiency: 0.96      # the share of `bandwidth` collectives reach, (0, 1]; default 1
//
// sim/analytical/cluster_collective.h prices collectives whose ranks span nodes on it.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "arch/arch_spec.h"
#include "core/diagnostics.h"
#include "core/units.h"
#include "core/yaml_reader.h"

namespace coda::arch {

inline constexpr std::uint32_t kClusterSchemaVersion = 1;

// The network between nodes, as one chip sees it.
struct InterNodeSpec {
  // One chip's injection bandwidth into the network, per direction (a DGX H100: eight 400 Gb/s
  // NICs for eight GPUs, 50 GB/s a GPU).
  BytesPerSecond bandwidth;
  // A step of a collective that crosses nodes (NCCL's tuner: hwLatencies[NET]).
  Seconds latency;
  // The share of `bandwidth` collectives reach, in (0, 1].
  double efficiency = 1.0;
  friend bool operator==(const InterNodeSpec&, const InterNodeSpec&) = default;
};

struct ClusterSpec {
  std::string name;
  std::string description;
  std::string sources;
  std::filesystem::path chip;       // the chip's arch file, resolved against the cluster file
  std::string chip_name;            // that arch's `name`
  std::uint32_t nodes = 1;
  std::uint32_t chips_per_node = 1;  // the chip's interconnect.chips; 1 without one
  InterNodeSpec inter_node;
  std::uint64_t chips() const { return std::uint64_t{nodes} * chips_per_node; }
  friend bool operator==(const ClusterSpec&, const ClusterSpec&) = default;
};

struct LoadedCluster {
  ClusterSpec spec;
  LoadedArch chip;  // the arch `chip` names, as load_arch read it
  std::string path;
  std::uint64_t content_hash = 0;  // of the cluster document (the chip's hash is in `chip`)
};

// Reads a cluster document whose file is `file` (its `chip:` resolves against the folder of the
// file that states it: `file`, or a preset it extends) and the chip's arch. Never throws: every problem is a Diagnostic located in the cluster
// file (or, for a bad chip arch, in the chip's file).
std::optional<LoadedCluster> read_cluster(const YamlReader& root, const std::filesystem::path& file,
                                          Diagnostics& diags);
std::optional<LoadedCluster> load_cluster(const std::filesystem::path& file, Diagnostics& diags);

}  // namespace coda::arch
