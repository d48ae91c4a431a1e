// Collectives across the nodes of a cluster (sim/analytical/cluster_collective.h), on the DGX
// presets (configs/cluster/), with values derived by hand from their figures.

#include "sim/analytical/cluster_collective.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace coda::sim::analytical {
namespace {

struct Loaded {
  arch::LoadedCluster cluster;
  arch::HardwareModel chip;
};

// The tests run from the source tree (gtest_discover_tests sets WORKING_DIRECTORY).
Loaded load(const char* file) {
  Diagnostics diags;
  auto c = arch::load_cluster(std::filesystem::path("configs/cluster") / file, diags);
  if (!c) throw ConfigError(diags);
  arch::HardwareModel hw(c->chip.spec);
  return {std::move(*c), std::move(hw)};
}

constexpr std::uint64_t kGiB = 1ULL << 30;

PricedCollective priced(CollectiveKind kind, std::uint64_t bytes, std::uint32_t ranks,
                        std::uint32_t per_node, const Loaded& l) {
  std::string why;
  auto p = price_cluster_collective(kind, bytes, ranks, per_node, l.chip, &l.cluster.spec, why);
  EXPECT_TRUE(p) << why;
  return p.value_or(PricedCollective{});
}

TEST(ClusterCollective, InsideOneNodeIsPriceCollective) {
  const Loaded h100 = load("dgx_h100_superpod.yaml");
  for (const CollectiveKind kind :
       {CollectiveKind::AllReduce, CollectiveKind::ReduceScatter, CollectiveKind::AllGather,
        CollectiveKind::Broadcast, CollectiveKind::SendRecv, CollectiveKind::AllToAll})
    for (const std::uint64_t bytes : {std::uint64_t{4096}, std::uint64_t{1} << 20, kGiB})
      for (const std::uint32_t ranks : {2U, 4U, 8U}) {
        const PricedCollective got = priced(kind, bytes, ranks, ranks, h100);
        const auto want = price_collective(kind, bytes, ranks, std::nullopt, h100.chip);
        ASSERT_TRUE(want);
        EXPECT_EQ(got.cost, want->cost) << to_string(kind) << " " << bytes << " " << ranks;
        EXPECT_EQ(got.algorithm, want->algorithm);
        EXPECT_EQ(got.protocol, want->protocol);
        // No cluster at all: the same.
        std::string why;
        const auto alone =
            price_cluster_collective(kind, bytes, ranks, ranks, h100.chip, nullptr, why);
        ASSERT_TRUE(alone) << why;
        EXPECT_EQ(alone->cost, want->cost);
      }
}

TEST(ClusterCollective, TwoNodeAllReduceOnDgxH100IsNvlinkBound) {
  const Loaded h100 = load("dgx_h100_superpod.yaml");
  const PricedCollective r = priced(CollectiveKind::AllReduce, kGiB, 16, 8, h100);
  // p = 16 ranks, q = 8 per node, n = 2 nodes.
  // B_intra = 450 GB/s x link_fraction 0.811 = 364.95 GB/s; B_inter = 8 x 50 GB/s x 0.96 =
  // 384 GB/s; B = min = 364.95 GB/s (NVLink, not the NICs, limits a full node on H100).
  // Ring, Simple pair (base 8.4 us, hop 3.4 us, f 1): nsteps 2(16-1) = 30, nInterSteps 2(2-1) = 2:
  //   latency 8.4 + 28 x 3.4 + 2 x 14 = 131.6 us; algbw 364.95 x 16 / 30 = 194.64 GB/s.
  // Tree, Simple (base 8.4, hop 4.0, f 0.92): 8.4 + 2 (7 x 4.0 + 1 x 14) = 92.4 us, algbw
  //   0.92 x 364.95 x 0.5 = 167.88 GB/s (1 GiB >> 6 = 2^24: index 24, past the 23 corrections):
  //   6.40 ms > the ring's 5.65 ms, so the ring.
  const double bus = 450e9 * 0.811;
  EXPECT_EQ(r.algorithm, CollectiveAlgorithm::Ring);
  EXPECT_EQ(r.protocol, CollectiveProtocol::Simple);
  EXPECT_EQ(r.cost.steps, 30u);
  EXPECT_NEAR(r.cost.seconds, 131.6e-6 + static_cast<double>(kGiB) / (bus * 16.0 / 30.0), 1e-12);
  EXPECT_NEAR(r.cost.seconds, 5.6482e-3, 1e-7);
  EXPECT_DOUBLE_EQ(r.cost.bytes_sent_per_rank, 2.0 * 15.0 / 16.0 * static_cast<double>(kGiB));
}

TEST(ClusterCollective, TwoNodeAllReduceOnDgxA100IsNicBound) {
  const Loaded a100 = load("dgx_a100_superpod.yaml");
  const PricedCollective r = priced(CollectiveKind::AllReduce, kGiB, 16, 8, a100);
  // B_intra = 300 GB/s x 0.760 = 228 GB/s; B_inter = 8 x 25 GB/s x 0.96 = 192 GB/s: B = 192 GB/s.
  // Ring: 131.6 us (as on H100: same NCCL constants) + 2^30 B / (192 x 16 / 30 = 102.4 GB/s)
  //   = 131.6 us + 10.4858 ms = 10.6174 ms. Tree: 92.4 us + 2^30 / (0.92 x 192 x 0.5 = 88.32
  //   GB/s) = 12.25 ms: the ring.
  EXPECT_EQ(r.algorithm, CollectiveAlgorithm::Ring);
  EXPECT_NEAR(r.cost.seconds, 131.6e-6 + static_cast<double>(kGiB) / (192e9 * 16.0 / 30.0),
              1e-12);
  EXPECT_NEAR(r.cost.seconds, 10.6174e-3, 1e-7);
  // nccl-tests' bus bandwidth: algbw x 2(p-1)/p, under B because of the latency.
  EXPECT_LT(r.cost.bus_bytes_per_second, 192e9);
  EXPECT_GT(r.cost.bus_bytes_per_second, 0.98 * 192e9);
}

TEST(ClusterCollective, OneRankPerNodeRunsOnOneNic) {
  const Loaded h100 = load("dgx_h100_superpod.yaml");
  // A DP group of 64 with TP 8 inside each node: 64 ranks, 1 per node, 64 nodes. B = 1 x 50 x
  // 0.96 = 48 GB/s (no intra-node link in the ring). All-gather: nsteps 63, all of them cross
  // (nInterSteps 64 - 1): 8.4 + 0 x 3.4 + 63 x 14 = 890.4 us; algbw 48 x 64 / 63 GB/s.
  const PricedCollective g = priced(CollectiveKind::AllGather, kGiB, 64, 1, h100);
  EXPECT_EQ(g.algorithm, CollectiveAlgorithm::Ring);
  EXPECT_EQ(g.cost.steps, 63u);
  EXPECT_NEAR(g.cost.seconds, 890.4e-6 + static_cast<double>(kGiB) * 63.0 / (64.0 * 48e9), 1e-12);
  // Send/recv between two nodes: 14 us + S / 48 GB/s.
  const PricedCollective s = priced(CollectiveKind::SendRecv, 1 << 20, 2, 1, h100);
  EXPECT_NEAR(s.cost.seconds, 14e-6 + 1048576.0 / 48e9, 1e-15);
  EXPECT_EQ(s.cost.steps, 1u);
}

TEST(ClusterCollective, AllToAllAcrossNodesSendsHalfOnTheNic) {
  const Loaded h100 = load("dgx_h100_superpod.yaml");
  // Expert parallelism over 16 ranks in 2 nodes of 8: each rank sends S/16 to each rank, 8/16 S
  // to the other node's 8 over its own NIC (50 GB/s x 0.96 = 48 GB/s) while 7/16 S go to its
  // node's 7 over NVLink (450 GB/s x 0.811 = 364.95 GB/s): the NIC's share is the longer.
  // 128 MiB: 14 us + 0.5 x 134217728 / 48e9 = 14 us + 1.398101 ms.
  const double s = 128.0 * (1 << 20);
  const PricedCollective a = priced(CollectiveKind::AllToAll, 128ULL << 20, 16, 8, h100);
  EXPECT_EQ(a.algorithm, CollectiveAlgorithm::Direct);
  EXPECT_EQ(a.cost.steps, 1u);
  EXPECT_NEAR(a.cost.seconds, 14e-6 + 0.5 * s / 48e9, 1e-15);
  EXPECT_GT(0.5 * s / 48e9, 7.0 / 16.0 * s / (450e9 * 0.811));
  EXPECT_DOUBLE_EQ(a.cost.bytes_sent_per_rank, 15.0 / 16.0 * s);
  // One rank in each of 4 nodes: everything but its own quarter on the NIC, 3/4 S / 48 GB/s.
  const PricedCollective b = priced(CollectiveKind::AllToAll, 128ULL << 20, 4, 1, h100);
  EXPECT_NEAR(b.cost.seconds, 14e-6 + 0.75 * s / 48e9, 1e-15);
}

TEST(ClusterCollective, TreeWinsSmallAllReducesAcrossManyNodes) {
  const Loaded h100 = load("dgx_h100_superpod.yaml");
  // 128 ranks on 16 nodes, 64 KiB: ring latency 8.4 + (254 - 30) x 3.4 + 30 x 14 = 1190 us;
  // tree 8.4 + 2 (7 x 4.0 + 4 x 14) = 176.4 us, plus 65536 B at 0.92 x 364.95 x 0.5 x
  // size_correction[log2(65536 >> 6) = 10] = 0.6: 65536 / 100.73 GB/s = 0.65 us.
  const PricedCollective r = priced(CollectiveKind::AllReduce, 65536, 128, 8, h100);
  EXPECT_EQ(r.algorithm, CollectiveAlgorithm::Tree);
  EXPECT_NEAR(r.cost.seconds, 176.4e-6 + 65536.0 / (0.92 * 450e9 * 0.811 * 0.5 * 0.6), 1e-12);
}

TEST(ClusterCollective, GroupsThatDoNotFitAreErrors) {
  const Loaded h100 = load("dgx_h100_superpod.yaml");
  const auto refused = [&](std::uint32_t ranks, std::uint32_t per_node,
                           const arch::ClusterSpec* cluster, const char* words) {
    std::string why;
    EXPECT_FALSE(price_cluster_collective(CollectiveKind::AllReduce, kGiB, ranks, per_node,
                                          h100.chip, cluster, why));
    EXPECT_NE(why.find(words), std::string::npos) << why;
  };
  const arch::ClusterSpec* c = &h100.cluster.spec;
  refused(1024, 8, c, "need 128 nodes");         // 127 nodes of 8
  refused(16, 8, nullptr, "give a cluster");     // two nodes, no cluster
  refused(16, 16, c, "holds 8 chips");           // a node has 8
  refused(12, 8, c, "do not fill whole nodes");
  refused(0, 1, c, "at least one rank");
  arch::ClusterSpec other = *c;
  other.chip_name = "some-other-chip";
  refused(16, 8, &other, "is made of");
  // 127 x 8 ranks fit.
  std::string why;
  EXPECT_TRUE(price_cluster_collective(CollectiveKind::AllReduce, kGiB, 1016, 8, h100.chip, c, why))
      << why;
}

}  // namespace
}  // namespace coda::sim::analytical
