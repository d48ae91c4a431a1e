#include "mapper/map_space.h"

#include <algorithm>
#include <array>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "testing/test_hardware.h"
#include "workloads/builders.h"

namespace coda::mapper {
namespace {

enum : std::size_t { kM, kN, kK };
constexpr std::size_t kBuffer = 0;
constexpr std::size_t kDram = 1;

// A 12-byte buffer feeding 2 lanes (1 MAC per cycle each), then DRAM at 2 B per cycle. Energies:
// 1 pJ per MAC, 1 pJ per buffer byte, 100 pJ per DRAM byte.
Hierarchy tiny() {
  Hierarchy h;
  h.compute = {.unit = "mac", .pes = 2, .macs_per_pe_per_cycle = 1, .mac_energy_pj = 1};
  h.levels = {{.name = "buffer", .capacity_bytes = 12, .fan_out = 2, .energy_pj_per_byte = 1},
              {.name = "dram",
               .read_bytes_per_cycle = 2,
               .write_bytes_per_cycle = 2,
               .shared_port = true,
               .energy_pj_per_byte = 100}};
  return h;
}

MapSpace make_space(const workload::Op& op, const Hierarchy& h, MapSpaceOptions options = {}) {
  std::string why;
  auto space = MapSpace::create(op.space, h, options, why);
  if (!space) throw std::runtime_error(why);
  return *space;
}

std::vector<MapSpace::Index> valid_points(const MapSpace& space) {
  std::vector<MapSpace::Index> out;
  for (auto i = space.next_valid(0); i < space.size(); i = space.next_valid(i + 1))
    out.push_back(i);
  return out;
}

struct Split {
  std::uint64_t temporal, spatial, outer;  // buffer temporal, buffer spatial, DRAM temporal
};

// Every (t, s, o) with t * s * o == extent, written out by divisor loops.
std::vector<Split> splits_of(std::uint64_t extent) {
  std::vector<Split> out;
  for (std::uint64_t t = 1; t <= extent; ++t) {
    if (extent % t != 0) continue;
    for (std::uint64_t s = 1; s <= extent / t; ++s)
      if ((extent / t) % s == 0) out.push_back({t, s, extent / t / s});
  }
  return out;
}

TEST(MapSpace, ExhaustiveBestEqualsBruteForceOverEveryFactorization) {
  // GEMM M=4, N=2, K=4 on tiny(). Brute force: every split of each dim over (buffer temporal,
  // buffer spatial, DRAM temporal), spatial product <= 2, buffer tiles A (m x k) + B (k x n) +
  // C (m x n) <= 12 B, and all 6 DRAM loop orders. Distinct points: per valid tiling, the orders
  // of the dims DRAM actually loops over (k! for k such dims).
  const workload::Op gemm = workload::make_gemm("g", 4, 2, 4);
  const Hierarchy h = tiny();
  const LoopNestProblem problem = compile_problem(gemm.space);
  double best = std::numeric_limits<double>::infinity();
  std::uint64_t distinct = 0;
  const std::array<std::array<std::size_t, 3>, 6> orders = {
      {{kM, kN, kK}, {kM, kK, kN}, {kN, kM, kK}, {kN, kK, kM}, {kK, kM, kN}, {kK, kN, kM}}};
  for (const Split& m : splits_of(4)) {
    for (const Split& n : splits_of(2)) {
      for (const Split& k : splits_of(4)) {
        if (m.spatial * n.spatial * k.spatial > 2) continue;
        const std::uint64_t tm = m.temporal * m.spatial, tn = n.temporal * n.spatial,
                            tk = k.temporal * k.spatial;
        if (tm * tk + tk * tn + tm * tn > 12) continue;
        const int looped = int{m.outer > 1} + int{n.outer > 1} + int{k.outer > 1};
        distinct += looped == 3 ? 6 : looped == 2 ? 2 : 1;
        for (const auto& order : orders) {
          Mapping map = make_mapping(2, 3);
          map.levels[kBuffer].temporal = {m.temporal, n.temporal, k.temporal};
          map.levels[kBuffer].spatial = {m.spatial, n.spatial, k.spatial};
          map.levels[kDram].temporal = {m.outer, n.outer, k.outer};
          set_order(map, kDram, {order[0], order[1], order[2]});
          const MappingCost c = evaluate(problem, map, h);
          ASSERT_TRUE(c.ok()) << describe(c.status, h, gemm.space);
          best = std::min(best, c.edp);
        }
      }
    }
  }

  const MapSpace space = make_space(gemm, h, {.imperfect = false});
  const auto points = valid_points(space);
  EXPECT_EQ(points.size(), distinct);
  double found = std::numeric_limits<double>::infinity();
  for (const auto i : points) {
    const MappingCost c = evaluate_point(space, i);
    ASSERT_TRUE(c.ok());
    found = std::min(found, c.edp);
  }
  EXPECT_DOUBLE_EQ(found, best);
}

TEST(MapSpace, EveryValidPointCoversItsExtentsAndFitsItsLevels) {
  // GEMM M=7 (prime), N=2, K=4 on tiny(), with the ceil splits of M.
  const workload::Op gemm = workload::make_gemm("g", 7, 2, 4);
  const Hierarchy h = tiny();
  const MapSpace space = make_space(gemm, h);
  const auto points = valid_points(space);
  ASSERT_FALSE(points.empty());
  bool saw_partial = false;
  for (const auto i : points) {
    const std::optional<Mapping> m = space.at(i);
    ASSERT_TRUE(m.has_value());
    std::array<std::uint64_t, 3> tile{};
    for (std::size_t d = 0; d < 3; ++d) {
      const std::uint64_t extent = gemm.space.dims[d].extent;
      const std::uint64_t inner = m->levels[kBuffer].temporal[d] * m->levels[kBuffer].spatial[d];
      const std::uint64_t product = inner * m->levels[kDram].temporal[d];
      // Perfect: the factors multiply to the extent. Imperfect: they cover it, and only the last
      // tile is partial (one tile fewer would not cover it).
      if (product != extent) {
        EXPECT_GT(product, extent);
        EXPECT_LT(product - inner, extent);
        saw_partial = true;
      }
      tile[d] = std::min(inner, extent);
    }
    // Buffer footprint by hand: A (m x k) + B (k x n) + C (m x n), 1 B each.
    EXPECT_LE(tile[kM] * tile[kK] + tile[kK] * tile[kN] + tile[kM] * tile[kN], 12u);
    EXPECT_LE(m->levels[kBuffer].spatial[kM] * m->levels[kBuffer].spatial[kN] *
                  m->levels[kBuffer].spatial[kK],
              2u);
    const MappingCost c = evaluate(space.problem(), *m, h);
    ASSERT_TRUE(c.ok());
    EXPECT_LE(c.levels[kBuffer].tile_bytes, 12.0);
    EXPECT_DOUBLE_EQ(c.macs, 7 * 2 * 4);
  }
  EXPECT_TRUE(saw_partial);
}

TEST(MapSpace, PrimeExtentGetsCeilSplits) {
  // M=7 over (buffer temporal, buffer spatial, DRAM temporal), fan-out 2, 12 B buffer, N=K=1.
  // Perfect: (1,1,7) only; (7,1,1) needs 7 + 1 + 7 = 15 B and (1,7,1) 7 lanes. Ceil splits with
  // inner tile 2 (outer 4) and 4 (outer 2): (2,1,4) (1,2,4) (2,2,2) (4,1,2); (4,2,1) would hold
  // 8 rows (15 B) and (2,4,1) use 4 lanes.
  const workload::Op gemm = workload::make_gemm("g", 7, 1, 1);
  const MapSpace space = make_space(gemm, tiny());
  EXPECT_EQ(space.splits(kM), 5u);
  const MapSpace perfect = make_space(gemm, tiny(), {.imperfect = false});
  EXPECT_EQ(perfect.splits(kM), 1u);
}

// Decodes every index of `space` and checks next_valid against it: next_valid(i) is the smallest
// valid index >= i, so its block skipping never jumps over a valid point.
void expect_next_valid_matches_decode(const MapSpace& space) {
  std::vector<bool> valid;
  for (MapSpace::Index i = 0; i < space.size(); ++i) {
    Mapping m;
    const MappingStatus s = space.decode(i, m);
    EXPECT_EQ(s.ok(), space.at(i).has_value());
    EXPECT_TRUE(s.ok() || s.reason == Infeasible::Capacity ||
                s.reason == Infeasible::NotCanonical || s.reason == Infeasible::SpatialFanout);
    valid.push_back(s.ok());
  }
  MapSpace::Index expected = space.size();
  for (std::size_t i = valid.size(); i-- > 0;) {
    if (valid[i]) expected = i;
    ASSERT_TRUE(space.next_valid(i) == expected) << "at index " << i;
  }
}

TEST(MapSpace, InvalidIndicesSayWhy) {
  const workload::Op gemm = workload::make_gemm("g", 4, 2, 4);
  const MapSpace space = make_space(gemm, tiny(), {.imperfect = false});
  std::size_t capacity = 0;
  std::size_t canonical = 0;
  for (MapSpace::Index i = 0; i < space.size(); ++i) {
    Mapping m;
    const MappingStatus s = space.decode(i, m);
    if (s.reason == Infeasible::Capacity) ++capacity;
    if (s.reason == Infeasible::NotCanonical) ++canonical;
  }
  EXPECT_GT(capacity, 0u);
  EXPECT_GT(canonical, 0u);
  expect_next_valid_matches_decode(space);
}

TEST(MapSpace, NextValidNeverSkipsAValidPoint) {
  // Two buffers (one per core) under a DRAM that fans out to both: DRAM has a spatial slot too,
  // and with bypass choices the capacity check depends on the most significant digits.
  const workload::Op gemm = workload::make_gemm("g", 4, 2, 4);
  Hierarchy h = tiny();
  h.compute.pes = 4;
  h.levels[kBuffer].instances = 2;
  h.levels[kDram].fan_out = 2;
  expect_next_valid_matches_decode(make_space(gemm, h, {.imperfect = false}));
  expect_next_valid_matches_decode(make_space(gemm, h, {.explore_bypass = true}));
  const workload::Op prime = workload::make_gemm("p", 7, 2, 3);
  expect_next_valid_matches_decode(make_space(prime, h));
}

TEST(MapSpace, DigitsRoundTrip) {
  const workload::Op gemm = workload::make_gemm("g", 4, 2, 4);
  const MapSpace space = make_space(gemm, tiny());
  for (MapSpace::Index i = 0; i < space.size(); i += 7) {
    const auto d = space.digits(i);
    ASSERT_EQ(d.size(), space.radices().size());
    EXPECT_TRUE(space.index(d) == i);
  }
  EXPECT_EQ(to_string(MapSpace::Index{1234567}), "1234567");
}

TEST(MapSpace, SplitsAreSortedAndFoundByTheirFactors) {
  // tiny() has three slots: the buffer's temporal and spatial factors (fan-out 2), then DRAM's
  // temporal factor. M=7 has perfect and ceil splits (PrimeExtentGetsCeilSplits lists them:
  // (1,1,7) (1,2,4) (2,1,4) (2,2,2) (4,1,2) in ascending order); N=4 and K=2 perfect ones only.
  const workload::Op gemm = workload::make_gemm("g", 7, 4, 2);
  const MapSpace space = make_space(gemm, tiny());
  ASSERT_EQ(space.slot_count(), 3u);
  EXPECT_EQ(space.slot_level(0), kBuffer);
  EXPECT_FALSE(space.slot_spatial(0));
  EXPECT_EQ(space.slot_level(1), kBuffer);
  EXPECT_TRUE(space.slot_spatial(1));
  EXPECT_EQ(space.slot_level(2), kDram);
  EXPECT_FALSE(space.slot_spatial(2));
  const std::vector<std::vector<std::uint64_t>> m_splits = {
      {1, 1, 7}, {1, 2, 4}, {2, 1, 4}, {2, 2, 2}, {4, 1, 2}};
  ASSERT_EQ(space.splits(kM), m_splits.size());
  for (std::size_t s = 0; s < m_splits.size(); ++s) {
    const auto split = space.split(kM, s);
    EXPECT_TRUE(std::equal(split.begin(), split.end(), m_splits[s].begin(), m_splits[s].end()));
  }
  for (std::size_t d = 0; d < 3; ++d) {
    for (std::size_t s = 0; s < space.splits(d); ++s) {
      const auto split = space.split(d, s);
      EXPECT_EQ(space.find_split(d, split), s);
      if (s > 0) {
        const auto before = space.split(d, s - 1);
        EXPECT_TRUE(std::lexicographical_compare(before.begin(), before.end(), split.begin(),
                                                 split.end()));
      }
    }
  }
  // (7, 1, 1) overflows the buffer (15 B) and (1, 3, 3) is no split of 7: neither is listed.
  EXPECT_FALSE(space.find_split(kM, std::vector<std::uint64_t>{7, 1, 1}));
  EXPECT_FALSE(space.find_split(kM, std::vector<std::uint64_t>{1, 3, 3}));
  // The layout: one factor digit per dim with several splits, then DRAM's order digit.
  const auto layout = space.layout();
  ASSERT_EQ(layout.size(), space.radices().size());
  EXPECT_EQ(layout.front().kind, MapSpace::DigitKind::Factor);
  EXPECT_EQ(layout.front().index, kM);
  EXPECT_EQ(layout.back().kind, MapSpace::DigitKind::Order);
  EXPECT_EQ(layout.back().index, kDram);
}

TEST(MapSpace, WithoutOrdersEveryLevelLoopsInAscendingDimOrder) {
  // GEMM M=4, N=2, K=4 on tiny(): without order digits the points are the tilings alone (one
  // factor digit per dim), and DRAM's loops run in ascending dim order (m, then n, then k).
  const workload::Op gemm = workload::make_gemm("g", 4, 2, 4);
  const MapSpace ordered = make_space(gemm, tiny(), {.imperfect = false});
  const MapSpace space = make_space(gemm, tiny(), {.imperfect = false, .explore_orders = false});
  ASSERT_EQ(space.layout().size(), 3u);
  for (const MapSpace::Digit& d : space.layout()) EXPECT_EQ(d.kind, MapSpace::DigitKind::Factor);
  EXPECT_TRUE(space.size() == MapSpace::Index{space.radices()[0]} * space.radices()[1] *
                                  space.radices()[2]);
  // One point per valid tiling: the ordered space's points with order digit 0.
  std::size_t tilings = 0;
  for (const auto i : valid_points(ordered))
    if (ordered.digits(i).back() == 0) ++tilings;
  const auto points = valid_points(space);
  EXPECT_EQ(points.size(), tilings);
  for (const auto i : points) {
    const auto m = space.at(i);
    ASSERT_TRUE(m.has_value());
    const LevelMapping& dram = m->levels[kDram];
    std::vector<std::size_t> loops;  // DRAM's real loops, outermost first
    for (std::size_t k = 0; k < 3; ++k)
      if (dram.temporal[dram.order[k]] > 1) loops.push_back(dram.order[k]);
    EXPECT_TRUE(std::is_sorted(loops.begin(), loops.end()));
  }
}

TEST(MapSpace, SamplesAreValidAndSeeded) {
  const workload::Op gemm = workload::make_gemm("g", 16, 8, 16);
  const Hierarchy h = tiny();
  const MapSpace space = make_space(gemm, h);
  std::mt19937_64 a(42);
  std::mt19937_64 b(42);
  std::mt19937_64 c(43);
  for (int k = 0; k < 50; ++k) {
    const auto i = space.sample(a);
    const auto j = space.sample(b);
    ASSERT_TRUE(i.has_value() && j.has_value());
    EXPECT_TRUE(*i == *j);
    EXPECT_TRUE(space.at(*i).has_value());
    const auto u = space.sample(c, SampleMode::Uniform);
    ASSERT_TRUE(u.has_value());
    EXPECT_TRUE(evaluate_point(space, *u).ok());
  }
}

TEST(MapSpace, ExploresBypass) {
  // With bypass choices the buffer may also drop any of the three tensors (which then streams
  // from DRAM), so there are more valid points, and some of them bypass.
  const workload::Op gemm = workload::make_gemm("g", 4, 2, 4);
  Hierarchy h = tiny();
  const std::size_t plain = valid_points(make_space(gemm, h)).size();
  const MapSpace space = make_space(gemm, h, {.explore_bypass = true});
  EXPECT_EQ(space.radices()[0], 8u);  // the buffer may skip any of A, B, C
  const auto points = valid_points(space);
  EXPECT_GT(points.size(), plain);
  bool bypassed = false;
  for (const auto i : points) bypassed |= space.at(i)->levels[kBuffer].bypass != 0;
  EXPECT_TRUE(bypassed);
}

TEST(MapSpace, ConvOnASystolicNpuNeedsMoreThan64Bits) {
  // A ResNet-style 3x3 conv (64 -> 64 channels, 56x56) on the mini NPU: the index space exceeds
  // 2^64 points, and sampled points evaluate.
  const workload::Op conv = workload::make_conv2d(
      "conv", {.in_h = 58, .in_w = 58, .in_channels = 64, .filter_h = 3, .filter_w = 3,
               .out_channels = 64}, 56, 56);
  const Hierarchy h = make_hierarchy(testing::parse_arch(testing::kMiniNpu), DataType::Int8);
  const MapSpace space = make_space(conv, h);
  EXPECT_TRUE(space.size() > MapSpace::Index{std::numeric_limits<std::uint64_t>::max()});
  std::mt19937_64 rng(7);
  for (int k = 0; k < 20; ++k) {
    const auto i = space.sample(rng);
    ASSERT_TRUE(i.has_value());
    const MappingCost c = evaluate_point(space, *i);
    ASSERT_TRUE(c.ok()) << describe(c.status, h, conv.space);
    EXPECT_DOUBLE_EQ(c.macs, 64.0 * 64 * 56 * 56 * 9);
  }
}

TEST(MapSpace, CreateFailsWithAReason) {
  const workload::Op gemm = workload::make_gemm("g", 4, 2, 4);
  Hierarchy h = tiny();
  h.unsupported = "no matrix unit";
  std::string why;
  EXPECT_FALSE(MapSpace::create(gemm.space, h, {}, why).has_value());
  EXPECT_NE(why.find("no matrix unit"), std::string::npos);
}

}  // namespace
}  // namespace coda::mapper
