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
  for (const CollectiveKind kind :
       {AllReduce, ReduceScatter, AllGather, Broadcast, SendRecv, AllToAll})
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

TEST(CollectiveModel, AllToAllIsOneDirectExchange) {
  // p = 8, S = 1 GiB a rank's buffer, S/8 to each rank: the 7 other eighths leave at once,
  // alpha + 7/8 S/beta = 1 us + 9.39524096 ms, one step, on every algorithm (NCCL's grouped
  // send/receive); busbw = algbw x 7/8, nccl-tests' alltoall factor.
  for (const CollectiveAlgorithm algorithm : {Ring, Tree, Direct}) {
    const CollectiveCost c = evaluate_collective(AllToAll, algorithm, kGiB, 8, kLink);
    EXPECT_EQ(c.steps, 1u);
    EXPECT_DOUBLE_EQ(c.bytes_sent_per_rank, 0.875 * kGiB);
    EXPECT_NEAR(c.seconds, 1e-6 + 0.875 * kGiB / 1e11, kRel);
    EXPECT_NEAR(c.bus_bytes_per_second, 0.875 * kGiB / c.seconds, 1e-3);
  }
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(AllToAll, 16), 15.0 / 16.0);
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


// ---- NCCL's tuner (evaluate_nccl). The constants are NCCL's (src/graph/tuning.cc @ 5067397c,
// one node over NVLink, as the A100/H100 presets state them), restated here so these checks do not
// move with a preset; B, the Simple ring's bus bandwidth, is a round 240 GB/s.
using enum arch::NcclProtocol;

NcclTuning nccl(bool nvls) {
  NcclTuning t;
  t.bus_bytes_per_second = 240e9;
  const auto set = [&](CollectiveAlgorithm a, CollectiveProtocol p, NcclPair pair) {
    pair.available = true;
    t.pairs.at(static_cast<std::size_t>(a)).at(static_cast<std::size_t>(p)) = pair;
  };
  set(Ring, Ll, {.base_s = 6.6e-6, .hop_s = 0.6e-6, .bandwidth_fraction = 0.5,
                 .max_bytes_per_second = 87.7e9});
  set(Ring, Ll128, {.base_s = 14e-6, .hop_s = 1.9e-6, .bandwidth_fraction = 0.92});
  set(Ring, Simple, {.base_s = 8.4e-6, .hop_s = 3.4e-6});
  set(Tree, Ll, {.base_s = 6.8e-6, .hop_s = 0.6e-6, .bandwidth_fraction = 0.2421,
                 .max_bytes_per_second = 87.7e9,
                 .size_correction = {1, 1, 1, 1, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6,
                                     .7, .8, .9, 1, 1, 1, 1}});
  set(Tree, Ll128, {.base_s = 14e-6, .hop_s = 1.25e-6, .bandwidth_fraction = 0.7156,
                    .size_correction = {1, 1, 1, 1, 1, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6,
                                        .8, .9, .9, .9, .9, 1, 1}});
  set(Tree, Simple, {.base_s = 8.4e-6, .hop_s = 4.0e-6, .bandwidth_fraction = 0.92,
                     .size_correction = {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5,
                                         .6, .7, .8, .7, .7, .8, .9, .9}});
  if (nvls) set(Nvls, Simple, {.base_s = 0, .hop_s = 25e-6, .bandwidth_fraction = 0.797});
  return t;
}

TEST(NcclModel, OneKibAllReduceOverEightRanksIsTheLlRingsLatency) {
  // Ring LL: 6.6 us + 2(p-1) = 14 hops x 0.6 us = 15.0 us, at min(0.5 B, 87.7 GB/s) = 87.7 GB/s
  // of bus bandwidth = 87.7 x 8/14 GB/s of algbw: + 1024 B / 50.11 GB/s = 20.4 ns.
  // Tree LL: 6.8 + 14 x 0.6 = 15.2 us (+ 1024 / (0.2421 B / 2)): slower. LL128 and Simple pay
  // 40.6 and 56 us of latency.
  const auto c = evaluate_nccl(AllReduce, 1024, 8, nccl(false), std::nullopt, std::nullopt);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->algorithm, Ring);
  EXPECT_EQ(c->protocol, Ll);
  EXPECT_EQ(c->cost.steps, 14u);
  EXPECT_NEAR(c->cost.seconds, 15e-6 + 1024 / (87.7e9 * 8 / 14), kRel);
  // The tree, forced: 15.2 us + 1024 B / (0.2421 x 240 GB/s / 2 x 0.9): 1024 B is size index
  // floor(log2(1024 / 64)) = 4 of NCCL's treeCorrectionFactor, LL row: .9.
  const auto tree = evaluate_nccl(AllReduce, 1024, 8, nccl(false), Tree, std::nullopt);
  ASSERT_TRUE(tree);
  EXPECT_EQ(tree->protocol, Ll);
  EXPECT_NEAR(tree->cost.seconds, 15.2e-6 + 1024 / (0.2421 * 240e9 / 2 * 0.9), kRel);
  // All-gather: p - 1 = 7 steps: 6.6 + 7 x 0.6 = 10.8 us, algbw 87.7 x 8/7 GB/s.
  const auto ag = evaluate_nccl(AllGather, 1024, 8, nccl(false), std::nullopt, std::nullopt);
  ASSERT_TRUE(ag);
  EXPECT_NEAR(ag->cost.seconds, 10.8e-6 + 1024 / (87.7e9 * 8 / 7), kRel);
}

TEST(NcclModel, OneGibAllReduceIsTheSimpleRingsBandwidthTerm) {
  // Simple: 8.4 + 14 x 3.4 = 56 us + 2 x 7/8 x 2^30 / 240 GB/s = 7.83 ms; LL128 moves at
  // 0.92 B: 0.68 ms slower; LL at 87.7 GB/s: far slower.
  const auto c = evaluate_nccl(AllReduce, kGiB, 8, nccl(false), std::nullopt, std::nullopt);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->algorithm, Ring);
  EXPECT_EQ(c->protocol, Simple);
  EXPECT_NEAR(c->cost.seconds, 56e-6 + 1.75 * kGiB / 240e9, kRel);
  EXPECT_DOUBLE_EQ(c->cost.bytes_sent_per_rank, 1.75 * kGiB);
  // busbw = 2(p-1)/p S / t: just under B.
  EXPECT_NEAR(c->cost.bus_bytes_per_second, 1.75 * kGiB / c->cost.seconds, 1e-3);
  EXPECT_LT(c->cost.bus_bytes_per_second, 240e9);
}

TEST(NcclModel, ProtocolSwitchPointsAreWhereTheTimesCross) {
  // Ring LL: 15.0 us + S / (87.7 x 8/14 GB/s); LL128: 40.6 us + S / (0.92 x 240 x 8/14 GB/s).
  // Equal at S1 = 25.6 us / (1 / 50.11 GB/s - 1 / 126.2 GB/s) = 2.13 MB. LL128 and Simple
  // (56 us + S / (240 x 8/14 GB/s)) cross at S2 = 15.4 us / (1/126.2 - 1/137.1 GB/s) = 24.3 MB.
  // The tree's LL128 (31.5 us + S / (0.7156 x 240 / 2 GB/s x c)) would beat both near S1 without
  // NCCL's size correction c (2 MB: index 15, c = .6; 24 MB: index 18, c = .9): with it, it loses.
  const double ll = 87.7e9 * 8 / 14, ll128 = 0.92 * 240e9 * 8 / 14, simple = 240e9 * 8 / 14;
  const double s1 = 25.6e-6 / (1 / ll - 1 / ll128), s2 = 15.4e-6 / (1 / ll128 - 1 / simple);
  EXPECT_NEAR(s1, 2.128e6, 0.001e6);
  EXPECT_NEAR(s2, 24.29e6, 0.01e6);
  const auto pick = [](double bytes) {
    return evaluate_nccl(AllReduce, static_cast<std::uint64_t>(bytes), 8, nccl(false),
                         std::nullopt, std::nullopt)
        ->protocol;
  };
  EXPECT_EQ(pick(0.99 * s1), Ll);
  EXPECT_EQ(pick(1.01 * s1), Ll128);
  EXPECT_EQ(pick(0.99 * s2), Ll128);
  EXPECT_EQ(pick(1.01 * s2), Simple);
}

TEST(NcclModel, NvlsPaysOneLatencyAndPipelinesItsAllReduce) {
  // NVLS all-reduce: 25 us + S / (0.797 B x 2 x p / 2(p-1)) = S / (0.797 x 240 x 8/7 GB/s);
  // all-gather: 25 us + S / (0.797 B x (p-1)/p).
  const auto t = nccl(true);
  const auto ar = evaluate_nccl(AllReduce, kGiB, 8, t, std::nullopt, std::nullopt);
  ASSERT_TRUE(ar);
  EXPECT_EQ(ar->algorithm, Nvls);  // 5.61 ms against the Simple ring's 7.89 ms
  EXPECT_EQ(ar->cost.steps, 1u);
  EXPECT_NEAR(ar->cost.seconds, 25e-6 + kGiB / (0.797 * 240e9 * 8 / 7), kRel);
  const auto ag = evaluate_nccl(AllGather, kGiB, 8, t, Nvls, std::nullopt);
  ASSERT_TRUE(ag);
  EXPECT_NEAR(ag->cost.seconds, 25e-6 + kGiB / (0.797 * 240e9 * 7 / 8), kRel);
  // ...which loses to the ring's S / (B x 8/7) when not forced.
  EXPECT_EQ(evaluate_nccl(AllGather, kGiB, 8, t, std::nullopt, std::nullopt)->algorithm, Ring);
  // Small messages stay on the LL ring: 15 us < 25 us.
  EXPECT_EQ(evaluate_nccl(AllReduce, 1024, 8, t, std::nullopt, std::nullopt)->algorithm, Ring);
}

// NCCL's NVLS chunk schedule (enqueue.cc calcCollChunking) with 16 channels over 8 ranks, 128
// chunks a loop: 128 KiB chunks from 64 x 128 x 128 KiB = 1 GiB up (16 MiB a loop), 64 KiB from
// 8 x 128 x 64 KiB = 64 MiB (8 MiB a loop), 32 KiB from 2 x 128 x 32 KiB = 8 MiB (4 MiB a loop),
// else 16 KiB (2 MiB a loop).
TEST(NcclModel, NvlsLoopsOverItsBufferInNcclsChunks) {
  EXPECT_EQ(nvls_loops(1024, 8, 16), 1u);
  EXPECT_EQ(nvls_loops(2 * kMiB, 8, 16), 1u);  // 16 KiB chunks: one 2 MiB loop
  EXPECT_EQ(nvls_loops(2 * kMiB + 1, 8, 16), 2u);
  EXPECT_EQ(nvls_loops(8 * kMiB - 1, 8, 16), 4u);    // still 16 KiB: 4 loops of 2 MiB
  EXPECT_EQ(nvls_loops(8 * kMiB, 8, 16), 2u);        // 32 KiB: 2 loops of 4 MiB
  EXPECT_EQ(nvls_loops(64 * kMiB - 1, 8, 16), 16u);  // 32 KiB: 16 loops of 4 MiB
  EXPECT_EQ(nvls_loops(64 * kMiB, 8, 16), 8u);       // 64 KiB: 8 loops of 8 MiB
  EXPECT_EQ(nvls_loops(kGiB - 1, 8, 16), 128u);      // 64 KiB: 128 loops of 8 MiB
  EXPECT_EQ(nvls_loops(kGiB, 8, 16), 64u);           // 128 KiB: 64 loops of 16 MiB
  EXPECT_EQ(nvls_loops(16 * kGiB, 8, 16), 1024u);
  // Five ranks: 80 chunks a loop; 8 GiB >= 64 x 80 x 128 KiB = 640 MiB: 128 KiB chunks, 10 MiB a
  // loop, ceil(8192 / 10) = 820 loops.
  EXPECT_EQ(nvls_loops(8 * kGiB, 5, 16), 820u);
}

// An NVLS all-reduce's time is its tuner's and its loops: with 16 channels and 5 us a loop, 1 GiB
// over 8 ranks adds 64 x 5 us. The choice is still the tuner's (the loops do not enter it), and
// all-gather pays no loop time.
TEST(NcclModel, NvlsAllReducePaysItsLoops) {
  NcclTuning t = nccl(true);
  NcclPair& nvls = t.pairs.at(static_cast<std::size_t>(Nvls)).at(static_cast<std::size_t>(Simple));
  nvls.channels = 16;
  nvls.loop_s = 5e-6;
  const auto ar = evaluate_nccl(AllReduce, kGiB, 8, t, std::nullopt, std::nullopt);
  ASSERT_TRUE(ar);
  EXPECT_EQ(ar->algorithm, Nvls);
  EXPECT_NEAR(ar->cost.seconds, 25e-6 + kGiB / (0.797 * 240e9 * 8 / 7) + 64 * 5e-6, kRel);
  EXPECT_NEAR(ar->cost.algorithm_bytes_per_second, kGiB / ar->cost.seconds, 1e-3);
  const auto ag = evaluate_nccl(AllGather, kGiB, 8, t, Nvls, std::nullopt);
  ASSERT_TRUE(ag);
  EXPECT_NEAR(ag->cost.seconds, 25e-6 + kGiB / (0.797 * 240e9 * 7 / 8), kRel);
}

TEST(NcclModel, PairsThatDoNotRunAKindAreNotPicked) {
  const auto t = nccl(false);
  // NCCL's tree runs all-reduce only; no NVLS pair on this (A100-like) tuning; broadcast and
  // send/recv are not tuned this way.
  EXPECT_FALSE(evaluate_nccl(AllGather, kMiB, 8, t, Tree, std::nullopt));
  EXPECT_FALSE(evaluate_nccl(AllReduce, kMiB, 8, t, Nvls, std::nullopt));
  EXPECT_FALSE(evaluate_nccl(Broadcast, kMiB, 8, t, std::nullopt, std::nullopt));
  EXPECT_FALSE(evaluate_nccl(SendRecv, kMiB, 8, t, std::nullopt, std::nullopt));
  // A forced protocol: ring LL128 for 1 KiB is 40.6 us + 1024 / (0.92 x 240 x 8/14 GB/s).
  const auto ll128 = evaluate_nccl(AllReduce, 1024, 8, t, Ring, Ll128);
  ASSERT_TRUE(ll128);
  EXPECT_NEAR(ll128->cost.seconds, 40.6e-6 + 1024 / (0.92 * 240e9 * 8 / 14), kRel);
}

}  // namespace
}  // namespace coda::sim::analytical
