#pragma once
// Collectives whose ranks span the nodes of a cluster (arch/cluster_spec.h), priced on the chips'
// links inside a node and the network between nodes. docs/cost_models.md ("Collectives across
// nodes") derives it; in short, with p ranks, q of them in each node, n = p / q nodes:
//
//   one node (n = 1)   exactly price_collective (unit_costs.h): the chip's interconnect.
//   bus bandwidth      B = min(B_intra, B_inter): B_intra = the chip's interconnect.bandwidth x
//                      link_fraction (only when q > 1: with q = 1 no intra-node link carries the
//                      collective); B_inter = q x inter_node.bandwidth x inter_node.efficiency,
//                      the q NICs of the group's chips in a node (one NIC per chip; every chip of
//                      a node runs its own group's collective at once, as TP x DP layouts do).
//   ring (NCCL's)      a ring over all p ranks crosses the network n times a lap. NCCL's tuner
//                      (tuning.cc, ncclTopoTuneModel): of the nsteps (all-reduce 2(p-1), reduce-
//                      scatter and all-gather p-1), nInterSteps (2(n-1), n-1) pay the network's
//                      latency a_x = inter_node.latency, the rest the chip's hop:
//                        t = base + (nsteps - nInterSteps) hop + nInterSteps a_x
//                            + S / (min(f B, max) x p / nsteps)
//                      with (base, hop, f, max) the chip's interconnect.nccl ring Simple pair.
//   tree (NCCL's)      all-reduce only: a chain inside each node and a double binary tree across:
//                        t = base + 2 ((q-1) hop + floor(log2 n) a_x) + S / (min(f B, max) x 0.5
//                            x size_correction)
//                      on the tree Simple pair. The cheaper of ring and tree is taken.
//   alpha-beta         a chip without interconnect.nccl: the ring above with base 0, hop = the
//                      chip's interconnect.latency, f = 1: (nsteps - nInterSteps) a + nInterSteps
//                      a_x + (2)(p-1)/p S / B.
//   broadcast          collective_model.h's pipelined ring broadcast on B with every step at a_x.
//   send/recv          a_x + S / (inter_node.bandwidth x efficiency): one chip's NIC.
//   all-to-all         each rank sends S/p to every rank at once (collective_model.h): (p - q)/p
//                      S leave on its own NIC while (q - 1)/p S go to its node's chips over the
//                      chip's links, concurrently: a_x + max((p - q)/p S / NIC, (q - 1)/p S /
//                      B_intra). The network's spine is assumed non-blocking (a rail-optimised
//                      fat tree, as DGX SuperPODs are built).
// Left out, and why: NCCL's LL and LL128 protocols across nodes (their caps, llMaxBws, differ
// by node count and its network latencies by protocol; bulk collectives run Simple), NVLS and
// NVLS-tree (NVLink SHARP; NCCL disables NVLS across nodes without CollNet), CollNet (in-network
// reduction, SHARP switches), the host's per-step network overhead (getNetOverhead, at most the
// NVLink hop on Intel hosts), the ring's "plateau" factor 1.4 on multi-node all-reduce (it needs
// NCCL's channel count), and congestion between groups in the network's spine.
//
// Pure and thread-safe; nothing is printed.

#include <cstdint>
#include <optional>
#include <string>

#include "arch/cluster_spec.h"
#include "arch/hardware_model.h"
#include "sim/analytical/unit_costs.h"

namespace coda::sim::analytical {

// A collective of `bytes` (collective_model.h's S) among `ranks` chips, `ranks_per_node` of them
// in each node the group spans (a TP group of 8 inside a node: 8, 8; a DP group of 64 with TP 8
// inside each node: 64, 1). `chip` is the cluster's chip (as given, or recalibrated);
// `cluster` null means one node. When the group fits in one node (ranks == ranks_per_node) the
// result is price_collective's (no algorithm forced). nullopt with `why` set when the group
// does not fit: ranks or ranks_per_node 0, ranks not a multiple of ranks_per_node, more ranks
// per node than a node has chips, more nodes than the cluster has (or any node beyond the first
// with no cluster), a chip other than the cluster's, or ranks on a chip without an interconnect.
std::optional<PricedCollective> price_cluster_collective(CollectiveKind kind, std::uint64_t bytes,
                                                         std::uint32_t ranks,
                                                         std::uint32_t ranks_per_node,
                                                         const arch::HardwareModel& chip,
                                                         const arch::ClusterSpec* cluster,
                                                         std::string& why);

}  // namespace coda::sim::analytical
