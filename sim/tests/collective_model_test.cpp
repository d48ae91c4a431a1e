// Hand-derived checks of the alpha-beta collective model (sim/analytical/collective_model.h).
// Notation: p ranks, S bytes, alpha = latency per step, beta = bytes per second per direction.
#include "sim/analytical/collective_model.h"

#include <gtest/gtest.h>

namespace coda::sim::analytical {
namespace {

using enum CollectiveKind;
using enum CollectiveAlgorithm;

constexpr double kRel = 1e-12;
constexpr LinkParams kLink{.bytes_per_second = 100e9, .latency_s = 1e-6};  // 100 GB/s, 1 us
constexpr std::uint64_t kGiB = 1ULL << 30;
constexpr std::uint64_t kMiB = 1ULL << 20;

TEST(CollectiveModel, RingAllReduceOfOneGiBOverEightRanks) {
  // 2(p-1) = 14 steps: 14 us of latency; 2(p-1)/p S = 1.75 x 1073741824 = 1879048192 B per rank
  // at 100 GB/s = 18.79048192 ms. Total 18.80448192 ms.
  const CollectiveCost c = evaluate_collective(AllReduce, Ring, kGiB, 8, kLink);
  EXPECT_EQ(c.steps, 14u);
  EXPECT_DOUBLE_EQ(c.bytes_sent_per_rank, 1879048192.0);
  EXPECT_NEAR(c.seconds, 18.80448192e-3, kRel);
  // algbw = S / t = 57.10 GB/s; busbw = algbw x 2(p-1)/p = 1879048192 / 18.80448192 ms
  // = 99.93 GB/s, just under beta (the latency terms).
  EXPECT_NEAR(c.algorithm_bytes_per_second, 1073741824 / 18.80448192e-3, 1e-3);
  EXPECT_NEAR(c.bus_bytes_per_second, 1879048192 / 18.80448192e-3, 1e-3);
  EXPECT_LT(c.bus_bytes_per_second, kLink.bytes_per_second);
  EXPECT_GT(c.bus_bytes_per_second, 0.999 * kLink.bytes_per_second);
}

TEST(CollectiveModel, OneRankCostsNothing) {
  for (const CollectiveKind kind : {AllReduce, ReduceScatter, AllGather, Broadcast, SendRecv})
    for (const CollectiveAlgorithm algorithm : {Ring, Tree, Direct})
      EXPECT_EQ(evaluate_collective(kind, algorithm, kGiB, 1, kLink), CollectiveCost{})
          << to_string(kind) << " " << to_string(algorithm);
}

TEST(CollectiveModel, TreeBeatsRingOnSmallAllReduces) {
  // p = 8: ring 14 alpha + 1.75 S/beta; tree 2 x 3 (alpha + S/beta) = 6 alpha + 6 S/beta.
  // Equal when 8 alpha = 4.25 S/beta: S* = 8 x 1e-6 x 1e11 / 4.25 = 188235.3 B.
  // 64 KiB: ring 14 + 1.1469 = 15.147 us; tree 6 + 3.932 = 9.932 us.
  const auto time = [](CollectiveAlgorithm a, std::uint64_t s) {
    return evaluate_collective(AllReduce, a, s, 8, kLink).seconds;
  };
  EXPECT_NEAR(time(Ring, 65536), 14e-6 + 1.75 * 65536 / 1e11, kRel);
  EXPECT_NEAR(time(Tree, 65536), 6e-6 + 6.0 * 65536 / 1e11, kRel);
  EXPECT_LT(time(Tree, 65536), time(Ring, 65536));
  // 1 MiB: ring 14 + 18.35 = 32.35 us; tree 6 + 62.91 = 68.91 us.
  EXPECT_GT(time(Tree, kMiB), time(Ring, kMiB));
  // The crossover sits between 188235 and 188236 bytes.
  EXPECT_LT(time(Tree, 188235), time(Ring, 188235));
  EXPECT_GT(time(Tree, 188236), time(Ring, 188236));
  EXPECT_EQ(evaluate_collective(AllReduce, Tree, 65536, 8, kLink).steps, 6u);
  // p = 5 is not a power of two: ceil(lg 5) = 3, still 6 steps.
  EXPECT_EQ(evaluate_collective(AllReduce, Tree, 65536, 5, kLink).steps, 6u);
}

TEST(CollectiveModel, ReduceScatterAndAllGather) {
  // Ring, p = 8, 1 GiB: 7 alpha + 0.875 S/beta = 7 us + 9.39524096 ms; busbw factor 7/8.
  for (const CollectiveKind kind : {ReduceScatter, AllGather}) {
    const CollectiveCost ring = evaluate_collective(kind, Ring, kGiB, 8, kLink);
    EXPECT_EQ(ring.steps, 7u);
    EXPECT_DOUBLE_EQ(ring.bytes_sent_per_rank, 0.875 * kGiB);
    EXPECT_NEAR(ring.seconds, 7e-6 + 0.875 * kGiB / 1e11, kRel);
    EXPECT_NEAR(ring.bus_bytes_per_second, 0.875 * kGiB / ring.seconds, 1e-3);
    // Recursive halving / doubling: 3 steps, the same bytes: 3 us + 9.39524096 ms.
    const CollectiveCost tree = evaluate_collective(kind, Tree, kGiB, 8, kLink);
    EXPECT_EQ(tree.steps, 3u);
    EXPECT_NEAR(tree.seconds, 3e-6 + 0.875 * kGiB / 1e11, kRel);
    // Direct through a switch: one step.
    EXPECT_NEAR(evaluate_collective(kind, Direct, kGiB, 8, kLink).seconds,
                1e-6 + 0.875 * kGiB / 1e11, kRel);
  }
}

TEST(CollectiveModel, DirectAllReduceIsTwoShots) {
  // A direct reduce-scatter then a direct all-gather: 2 alpha + 2(p-1)/p S/beta.
  // p = 8, 1 MiB: 2 us + 1.75 x 10.48576 us = 20.350080 us.
  const CollectiveCost c = evaluate_collective(AllReduce, Direct, kMiB, 8, kLink);
  EXPECT_EQ(c.steps, 2u);
  EXPECT_NEAR(c.seconds, 2e-6 + 1.75 * kMiB / 1e11, kRel);
  // Every algorithm moves 2(p-1)/p S per rank on average.
  EXPECT_DOUBLE_EQ(c.bytes_sent_per_rank, 1.75 * kMiB);
  EXPECT_DOUBLE_EQ(evaluate_collective(AllReduce, Tree, kMiB, 8, kLink).bytes_sent_per_rank,
                   1.75 * kMiB);
}

TEST(CollectiveModel, BroadcastVariants) {
  // Ring = pipelined chain: (p - 2 + c)(alpha + S/(c beta)). p = 8, 1 MiB: c* = sqrt(6 x 1048576
  // / (1e-6 x 1e11)) = 7.93. c = 7: 13 x (1 + 1.497966) us = 32.4736 us; c = 8: 14 x (1 +
  // 1.31072) us = 32.35008 us. Best c = 8: 14 steps.
  const CollectiveCost ring = evaluate_collective(Broadcast, Ring, kMiB, 8, kLink);
  EXPECT_EQ(ring.steps, 14u);
  EXPECT_NEAR(ring.seconds, 14 * (1e-6 + kMiB / 8.0 / 1e11), kRel);
  EXPECT_DOUBLE_EQ(ring.bus_bytes_per_second, ring.algorithm_bytes_per_second);  // factor 1
  // Binomial tree: 3 x (1 + 10.48576) us = 34.45728 us.
  EXPECT_NEAR(evaluate_collective(Broadcast, Tree, kMiB, 8, kLink).seconds,
              3 * (1e-6 + kMiB / 1e11), kRel);
  // Direct: the root sends S to each of 7 peers over its one link: 1 + 73.40032 us.
  EXPECT_NEAR(evaluate_collective(Broadcast, Direct, kMiB, 8, kLink).seconds,
              1e-6 + 7.0 * kMiB / 1e11, kRel);
  // p = 2: c* = 0, so one chunk: alpha + S/beta.
  EXPECT_NEAR(evaluate_collective(Broadcast, Ring, kMiB, 2, kLink).seconds,
              1e-6 + 1.0 * kMiB / 1e11, kRel);
  // Large messages approach S/beta: 1 GiB: c* = sqrt(6 x 2^30 / 1e5) = 253.8, c = 254:
  // 260 x (1 us + 2^30 / 254 / 1e11) = 11.251 ms vs S/beta = 10.737 ms.
  EXPECT_NEAR(evaluate_collective(Broadcast, Ring, kGiB, 8, kLink).seconds,
              260 * (1e-6 + kGiB / 254.0 / 1e11), kRel);
}

TEST(CollectiveModel, SendRecv) {
  // alpha + S/beta, whatever the algorithm: 1 us + 10.48576 us.
  for (const CollectiveAlgorithm algorithm : {Ring, Tree, Direct}) {
    const CollectiveCost c = evaluate_collective(SendRecv, algorithm, kMiB, 2, kLink);
    EXPECT_EQ(c.steps, 1u);
    EXPECT_NEAR(c.seconds, 11.48576e-6, kRel);
    EXPECT_DOUBLE_EQ(c.bytes_sent_per_rank, static_cast<double>(kMiB));
  }
}

TEST(CollectiveModel, ZeroBytesCostsLatencyOnly) {
  const CollectiveCost c = evaluate_collective(AllReduce, Ring, 0, 4, kLink);
  EXPECT_NEAR(c.seconds, 6e-6, kRel);  // 2(p-1) = 6 steps
  EXPECT_EQ(c.algorithm_bytes_per_second, 0.0);
}

TEST(CollectiveModel, BusBandwidthFactorsAreNcclTests) {
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(AllReduce, 8), 1.75);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(ReduceScatter, 8), 0.875);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(AllGather, 4), 0.75);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Broadcast, 8), 1.0);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(SendRecv, 2), 1.0);
}

}  // namespace
}  // namespace coda::sim::analytical
