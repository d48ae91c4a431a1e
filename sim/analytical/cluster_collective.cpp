#include "sim/analytical/cluster_collective.h"

#include <algorithm>
#include <bit>

#include <fmt/format.h>

namespace coda::sim::analytical {
namespace {

// floor(log2 n) for n >= 1 (NCCL's log2i).
std::uint64_t floor_log2(std::uint32_t n) { return static_cast<std::uint64_t>(std::bit_width(n)) - 1; }

struct Span {
  double p = 0, q = 0;
  std::uint32_t ranks = 0, per_node = 0, nodes = 0;
};

// Every rank sends the same on a ring: 2(p-1)/p S for all-reduce, (p-1)/p S for the others.
void finish(CollectiveCost& cost, CollectiveKind kind, double s, const Span& span) {
  const double share = (span.p - 1.0) / span.p * s;
  switch (kind) {
    case CollectiveKind::AllReduce: cost.bytes_sent_per_rank = 2.0 * share; break;
    case CollectiveKind::ReduceScatter:
    case CollectiveKind::AllGather:
    case CollectiveKind::Broadcast:
    case CollectiveKind::AllToAll:
      cost.bytes_sent_per_rank = share;
      break;
    case CollectiveKind::SendRecv: cost.bytes_sent_per_rank = s; break;
  }
  if (cost.seconds > 0.0) {
    cost.algorithm_bytes_per_second = s / cost.seconds;
    cost.bus_bytes_per_second =
        cost.algorithm_bytes_per_second * bus_bandwidth_factor(kind, span.ranks);
  }
}

// all-reduce, reduce-scatter, all-gather across nodes (see the header).
PricedCollective gather_scatter_reduce(CollectiveKind kind, double s, const Span& span,
                                       double bus, double hop_s, double inter_s,
                                       const std::optional<arch::NcclSpec>& nccl) {
  const bool all_reduce = kind == CollectiveKind::AllReduce;
  const std::uint64_t nsteps = all_reduce ? 2ULL * (span.ranks - 1) : span.ranks - 1ULL;
  const std::uint64_t inter_steps = all_reduce ? 2ULL * (span.nodes - 1) : span.nodes - 1ULL;
  const double intra_steps = static_cast<double>(nsteps - inter_steps);
  const double ring_ratio = span.p / static_cast<double>(nsteps);  // algbw = busbw x p / nsteps

  PricedCollective out;
  out.algorithm = CollectiveAlgorithm::Ring;
  const NcclTuning tuning = nccl ? nccl_tuning(*nccl, bus) : NcclTuning{};
  const NcclPair& ring = tuning.at(CollectiveAlgorithm::Ring, CollectiveProtocol::Simple);
  const NcclPair& tree = tuning.at(CollectiveAlgorithm::Tree, CollectiveProtocol::Simple);
  if (!ring.available && !tree.available) {
    // The alpha-beta ring: base 0, the chip's latency per intra-node step, f = 1.
    out.cost.steps = nsteps;
    out.cost.seconds = intra_steps * hop_s + static_cast<double>(inter_steps) * inter_s +
                       s / (bus * ring_ratio);
    finish(out.cost, kind, s, span);
    return out;
  }
  std::optional<CollectiveCost> best;
  if (tree.available && all_reduce) {  // NCCL's order on ties: tree first
    const std::uint64_t log_nodes = floor_log2(span.nodes);
    double bw = std::min(tree.bandwidth_fraction * bus, tree.max_bytes_per_second) * 0.5;
    if (s >= 64.0) {  // ncclTopoGetAlgoTime: treeCorrectionFactor[log2i(nBytes >> 6)]
      const auto index =
          static_cast<std::size_t>(std::bit_width(static_cast<std::uint64_t>(s) >> 6U) - 1);
      if (index < tree.size_correction.size()) bw *= tree.size_correction[index];
    }
    CollectiveCost c;
    c.steps = 2 * ((span.per_node - 1ULL) + log_nodes);
    c.seconds = tree.base_s +
                2.0 * ((span.q - 1.0) * tree.hop_s + static_cast<double>(log_nodes) * inter_s) +
                s / bw;
    best = c;
    out.algorithm = CollectiveAlgorithm::Tree;
  }
  if (ring.available) {
    const double bw =
        std::min(ring.bandwidth_fraction * bus, ring.max_bytes_per_second) * ring_ratio;
    CollectiveCost c;
    c.steps = nsteps;
    c.seconds = ring.base_s + intra_steps * ring.hop_s +
                static_cast<double>(inter_steps) * inter_s + s / bw;
    if (!best || c.seconds < best->seconds) {
      best = c;
      out.algorithm = CollectiveAlgorithm::Ring;
    }
  }
  if (!best) {  // reduce-scatter or all-gather on a chip that states the tree's pair alone
    out.cost.steps = nsteps;
    out.cost.seconds = intra_steps * hop_s + static_cast<double>(inter_steps) * inter_s +
                       s / (bus * ring_ratio);
    finish(out.cost, kind, s, span);
    return out;
  }
  out.cost = *best;
  out.protocol = CollectiveProtocol::Simple;
  finish(out.cost, kind, s, span);
  return out;
}

}  // namespace

std::optional<PricedCollective> price_cluster_collective(CollectiveKind kind, std::uint64_t bytes,
                                                         std::uint32_t ranks,
                                                         std::uint32_t ranks_per_node,
                                                         const arch::HardwareModel& chip,
                                                         const arch::ClusterSpec* cluster,
                                                         std::string& why) {
  const auto& ic = chip.spec().interconnect;
  if (ranks == 0 || ranks_per_node == 0) {
    why = fmt::format("a collective needs at least one rank (ranks {}, ranks per node {})", ranks,
                      ranks_per_node);
    return std::nullopt;
  }
  if (ranks % ranks_per_node != 0) {
    why = fmt::format("{} ranks with {} in each node do not fill whole nodes", ranks,
                      ranks_per_node);
    return std::nullopt;
  }
  if (cluster != nullptr && cluster->chip_name != chip.name()) {
    why = fmt::format("the cluster '{}' is made of '{}', not '{}'", cluster->name,
                      cluster->chip_name, chip.name());
    return std::nullopt;
  }
  const std::uint32_t chips_per_node =
      cluster != nullptr ? cluster->chips_per_node : (ic ? ic->chips : 1U);
  if (ranks_per_node > chips_per_node) {
    why = fmt::format("{} ranks per node, but a node of '{}' holds {} chip{}", ranks_per_node,
                      chip.name(), chips_per_node, chips_per_node == 1 ? "" : "s");
    return std::nullopt;
  }
  const std::uint32_t nodes = ranks / ranks_per_node;
  if (ranks == 1) return PricedCollective{};  // nothing moves
  if (nodes == 1) {
    if (!ic) {
      why = fmt::format("'{}' has no interconnect joining {} chips", chip.name(), ranks);
      return std::nullopt;
    }
    auto priced = price_collective(kind, bytes, ranks, std::nullopt, chip);
    if (!priced) why = fmt::format("'{}' prices no {} among {} ranks", chip.name(), to_string(kind),
                                   ranks);
    return priced;
  }
  if (cluster == nullptr) {
    why = fmt::format("{} ranks, {} per node, span {} nodes: give a cluster (configs/cluster/) "
                      "to price the network between them",
                      ranks, ranks_per_node, nodes);
    return std::nullopt;
  }
  if (nodes > cluster->nodes) {
    why = fmt::format("{} ranks, {} per node, need {} nodes; the cluster '{}' has {} ({} chips)",
                      ranks, ranks_per_node, nodes, cluster->name, cluster->nodes,
                      cluster->chips());
    return std::nullopt;
  }

  const Span span{static_cast<double>(ranks), static_cast<double>(ranks_per_node), ranks,
                  ranks_per_node, nodes};
  const arch::InterNodeSpec& net = cluster->inter_node;
  const double nic = net.bandwidth.value * net.efficiency;  // one chip's share of the network
  double bus = span.q * nic;
  double hop_s = 0.0;
  if (ranks_per_node > 1) {  // chips_per_node > 1: the chip states an interconnect
    bus = std::min(bus, chip.achievable_link_bytes_per_second());
    hop_s = ic->latency.value;
  }
  const double s = static_cast<double>(bytes);
  const double inter_s = net.latency.value;

  PricedCollective out;
  switch (kind) {
    case CollectiveKind::SendRecv:
      out.cost.steps = 1;
      out.cost.seconds = inter_s + s / nic;
      finish(out.cost, kind, s, span);
      return out;
    case CollectiveKind::Broadcast:
      out.cost = evaluate_collective(kind, CollectiveAlgorithm::Ring, bytes, ranks,
                                     LinkParams{bus, inter_s});
      return out;
    case CollectiveKind::AllToAll: {  // the network's share and the node's at once
      out.algorithm = CollectiveAlgorithm::Direct;
      out.cost.steps = 1;
      const double across = (span.p - span.q) / span.p * s / nic;
      const double within =
          ranks_per_node > 1 ? (span.q - 1.0) / span.p * s / chip.achievable_link_bytes_per_second()
                             : 0.0;
      out.cost.seconds = inter_s + std::max(across, within);
      finish(out.cost, kind, s, span);
      return out;
    }
    case CollectiveKind::AllReduce:
    case CollectiveKind::ReduceScatter:
    case CollectiveKind::AllGather:
      return gather_scatter_reduce(kind, s, span, bus, hop_s, inter_s,
                                   ic ? ic->nccl : std::nullopt);
  }
  why = fmt::format("no model of {} across nodes", to_string(kind));
  return std::nullopt;
}

}  // namespace coda::sim::analytical
