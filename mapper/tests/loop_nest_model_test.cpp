#include "mapper/loop_nest_model.h"

#include <gtest/gtest.h>

#include "workloads/builders.h"

namespace coda::mapper {
namespace {

// GEMM dims and tensors (workload::make_gemm): A[m][k] (Input), B[k][n] (Weight), C[m][n].
enum : std::size_t { kM, kN, kK };
enum : std::size_t { kA, kB, kC };
constexpr std::size_t kBuffer = 0;
constexpr std::size_t kDram = 1;

// One buffer feeding `pes` MAC lanes of 1 MAC per cycle, then DRAM. Energies: 1 pJ per MAC,
// 1 pJ per buffer byte, 100 pJ per DRAM byte. int8 data: 1 byte per element.
Hierarchy two_level(std::uint64_t buffer_bytes, std::uint64_t pes = 1, double dram_bw = 0) {
  Hierarchy h;
  h.compute = {.unit = "mac", .pes = pes, .macs_per_pe_per_cycle = 1, .mac_energy_pj = 1};
  h.levels = {{.name = "buffer",
               .capacity_bytes = buffer_bytes,
               .instances = 1,
               .fan_out = pes,
               .energy_pj_per_byte = 1},
              {.name = "dram",
               .instances = 1,
               .fan_out = 1,
               .read_bytes_per_cycle = dram_bw,
               .write_bytes_per_cycle = dram_bw,
               .shared_port = true,
               .energy_pj_per_byte = 100}};
  return h;
}

const workload::Op& gemm444() {
  static const workload::Op op = workload::make_gemm("g", 4, 4, 4);
  return op;
}

double dram_read(const MappingCost& c, std::size_t t) {
  return c.levels[kDram].tensors[t].read_bytes;
}
double dram_write(const MappingCost& c, std::size_t t) {
  return c.levels[kDram].tensors[t].write_bytes;
}

// Buffer tile m=2, n=2, k=4 (A 2x4 = 8 B, B 4x2 = 8 B, C 2x2 = 4 B: 20 B); DRAM loops m=2, n=2.
Mapping tile_224(std::initializer_list<std::size_t> dram_order) {
  Mapping m = make_mapping(2, 3);
  m.levels[kBuffer].temporal = {2, 2, 4};
  m.levels[kDram].temporal = {2, 2, 1};
  set_order(m, kDram, dram_order);
  return m;
}

TEST(LoopNestModel, InputStationaryOrderReadsATheOnceAndBTwice) {
  // DRAM order m outer, n inner. A[m][k] does not depend on n, the innermost DRAM loop, so A's
  // tile stays in the buffer while n turns: A is filled 2 times (once per m) x 8 B = 16 B (A read
  // once). B[k][n] changes with n: filled 2 x 2 = 4 times x 8 B = 32 B (B read twice). C[m][n]
  // changes with n too: 4 tiles of 4 B, each written back once, 16 B; never read back, since k
  // is wholly inside the buffer.
  const MappingCost c = evaluate(gemm444().space, tile_224({kM, kN}), two_level(20));
  ASSERT_TRUE(c.ok()) << describe(c.status, two_level(20), gemm444().space);
  EXPECT_DOUBLE_EQ(dram_read(c, kA), 16);
  EXPECT_DOUBLE_EQ(dram_read(c, kB), 32);
  EXPECT_DOUBLE_EQ(dram_write(c, kC), 16);
  EXPECT_DOUBLE_EQ(dram_read(c, kC), 0);
  EXPECT_DOUBLE_EQ(c.levels[kBuffer].tile_bytes, 20);

  // Buffer side: it is written what DRAM sent (A 16, B 32) and read once per MAC for A and B
  // (64 each). C: every MAC writes its partial sum (64), and every MAC but the first on each of
  // the 16 outputs reads it first (48); the 4 tiles drain to DRAM (16 more reads).
  EXPECT_DOUBLE_EQ(c.levels[kBuffer].tensors[kA].write_bytes, 16);
  EXPECT_DOUBLE_EQ(c.levels[kBuffer].tensors[kA].read_bytes, 64);
  EXPECT_DOUBLE_EQ(c.levels[kBuffer].tensors[kB].read_bytes, 64);
  EXPECT_DOUBLE_EQ(c.levels[kBuffer].tensors[kC].write_bytes, 64);
  EXPECT_DOUBLE_EQ(c.levels[kBuffer].tensors[kC].read_bytes, 48 + 16);

  // Energy: 64 MACs x 1 pJ + buffer (16+64 + 32+64 + 64+64 = 304 B) x 1 pJ
  //         + DRAM (16 + 32 + 16 = 64 B) x 100 pJ = 64 + 304 + 6400.
  EXPECT_DOUBLE_EQ(c.energy_pj, 6768);
  EXPECT_DOUBLE_EQ(c.compute_cycles, 64);  // 64 MACs on one lane, no bandwidth limit
  EXPECT_DOUBLE_EQ(c.cycles, 64);
  EXPECT_EQ(c.bottleneck, kComputeBound);
  EXPECT_DOUBLE_EQ(c.edp, 6768.0 * 64);
}

TEST(LoopNestModel, WeightStationaryOrderSwapsTheRolesOfAAndB) {
  // DRAM order n outer, m inner: now B[k][n] stays while m turns (read once, 16 B) and A is
  // refetched per n (32 B). C still 16 B written.
  const MappingCost c = evaluate(gemm444().space, tile_224({kN, kM}), two_level(20));
  ASSERT_TRUE(c.ok());
  EXPECT_DOUBLE_EQ(dram_read(c, kA), 32);
  EXPECT_DOUBLE_EQ(dram_read(c, kB), 16);
  EXPECT_DOUBLE_EQ(dram_write(c, kC), 16);
  EXPECT_DOUBLE_EQ(dram_read(c, kC), 0);
}

// Buffer tile m=4, n=2, k=2 (A 4x2 = 8 B, B 2x2 = 4 B, C 4x2 = 8 B: 20 B); DRAM loops n=2, k=2.
Mapping tile_422(std::initializer_list<std::size_t> dram_order) {
  Mapping m = make_mapping(2, 3);
  m.levels[kBuffer].temporal = {4, 2, 2};
  m.levels[kDram].temporal = {1, 2, 2};
  set_order(m, kDram, dram_order);
  return m;
}

TEST(LoopNestModel, OutputStationaryOrderKeepsPartialSumsOnChip) {
  // DRAM order n outer, k inner: C[m][n] does not depend on k, so its tile stays while k turns:
  // 2 tiles x 8 B = 16 B written, nothing read back. A[m][k] changes with k: 2 x 2 = 4 fills x
  // 8 B = 32 B. B[k][n]: 4 fills x 4 B = 16 B.
  const MappingCost c = evaluate(gemm444().space, tile_422({kN, kK}), two_level(20));
  ASSERT_TRUE(c.ok());
  EXPECT_DOUBLE_EQ(dram_read(c, kA), 32);
  EXPECT_DOUBLE_EQ(dram_read(c, kB), 16);
  EXPECT_DOUBLE_EQ(dram_write(c, kC), 16);
  EXPECT_DOUBLE_EQ(dram_read(c, kC), 0);
}

TEST(LoopNestModel, ReductionLoopOutsideSpillsPartialSums) {
  // DRAM order k outer, n inner: A does not depend on n: 2 fills (per k) x 8 B = 16 B. B: 4 x 4 B
  // = 16 B. C changes with n, inside k: each of its 2 tiles is visited once per k, 4 residencies:
  // 4 x 8 B = 32 B written back; the 2 residencies that are not a tile's first visit read its
  // partial sums back: 2 x 8 B = 16 B read.
  const MappingCost c = evaluate(gemm444().space, tile_422({kK, kN}), two_level(20));
  ASSERT_TRUE(c.ok());
  EXPECT_DOUBLE_EQ(dram_read(c, kA), 16);
  EXPECT_DOUBLE_EQ(dram_read(c, kB), 16);
  EXPECT_DOUBLE_EQ(dram_write(c, kC), 32);
  EXPECT_DOUBLE_EQ(dram_read(c, kC), 16);
  EXPECT_DOUBLE_EQ(c.levels[kBuffer].tensors[kC].write_bytes, 64 + 16);  // updates + read-backs
}

TEST(LoopNestModel, DramBandwidthBoundsTheCycles) {
  // tile_224 m-then-n: 64 B cross DRAM (16 + 32 + 16), reads and writes on one port of 0.5 B per
  // cycle: 128 cycles against 64 of compute.
  const MappingCost c = evaluate(gemm444().space, tile_224({kM, kN}), two_level(20, 1, 0.5));
  ASSERT_TRUE(c.ok());
  EXPECT_DOUBLE_EQ(c.levels[kDram].cycles, 128);
  EXPECT_DOUBLE_EQ(c.cycles, 128);
  EXPECT_EQ(c.bottleneck, kDram);
  EXPECT_DOUBLE_EQ(c.utilization, 0.5);  // 64 MACs in 128 cycles on one lane
}

TEST(LoopNestModel, SpatialFanOutMulticastsAndReduces) {
  // Whole GEMM in the buffer, 4 lanes. n spread over the lanes: A[m][k] does not depend on n, so
  // each A element read is multicast to the 4 lanes: 64 MACs / 4 = 16 B read. B and C depend on n:
  // 64 B each. C: 64 updates written; each lane owns one n column, 4 outputs (m) visited 4 times
  // (k): 4 first visits per lane, 16 over the lanes, so 64 - 16 = 48 read-backs.
  Mapping m = make_mapping(2, 3);
  m.levels[kBuffer].temporal = {4, 1, 4};
  m.levels[kBuffer].spatial = {1, 4, 1};
  const MappingCost c = evaluate(gemm444().space, m, two_level(48, 4));
  ASSERT_TRUE(c.ok());
  EXPECT_DOUBLE_EQ(c.levels[kBuffer].tensors[kA].read_bytes, 16);
  EXPECT_DOUBLE_EQ(c.levels[kBuffer].tensors[kB].read_bytes, 64);
  EXPECT_DOUBLE_EQ(c.levels[kBuffer].tensors[kC].write_bytes, 64);
  EXPECT_DOUBLE_EQ(c.levels[kBuffer].tensors[kC].read_bytes, 48 + 16);  // + drain to DRAM
  EXPECT_DOUBLE_EQ(c.compute_cycles, 16);  // 64 MACs / 4 lanes
  EXPECT_DOUBLE_EQ(c.spatial_utilization, 1);
  EXPECT_EQ(c.used_pes, 4u);

  // k spread instead: the 4 lanes' products for one output are summed on the way up (spatial
  // reduction): the buffer takes 64 / 4 = 16 updates, and no lane ever reads a partial sum back
  // (each lane's one visit per output is its first). A and B both depend on k: 64 B each.
  m.levels[kBuffer].temporal = {4, 4, 1};
  m.levels[kBuffer].spatial = {1, 1, 4};
  const MappingCost r = evaluate(gemm444().space, m, two_level(48, 4));
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ(r.levels[kBuffer].tensors[kC].write_bytes, 16);
  EXPECT_DOUBLE_EQ(r.levels[kBuffer].tensors[kC].read_bytes, 0 + 16);  // drain only
  EXPECT_DOUBLE_EQ(r.levels[kBuffer].tensors[kA].read_bytes, 64);
}

// Register files of 1 PE each under one shared level that fans out to them, then DRAM: a GPU's
// shape in miniature. `multicast` and `waves` set the shared level's network and scheduler.
constexpr std::size_t kRegs = 0;
constexpr std::size_t kShared = 1;
Hierarchy register_files(std::uint64_t files, std::uint64_t fan_out, bool multicast, bool waves) {
  Hierarchy h;
  h.compute = {.unit = "mac", .pes = files, .macs_per_pe_per_cycle = 1};
  h.levels = {{.name = "regs", .instances = files, .fan_out = 1, .read_bytes_per_cycle = 1,
               .write_bytes_per_cycle = 1},
              {.name = "shared", .instances = 1, .fan_out = fan_out, .multicast = multicast,
               .waves = waves},
              {.name = "dram", .instances = 1, .fan_out = 1, .shared_port = true}};
  return h;
}

TEST(LoopNestModel, WithoutMulticastEveryChildFetchesItsOwnCopy) {
  // n spread over the 4 register files, each holding m 4 x k 4 of A (16 B) and one column of C.
  // A does not depend on n, so the 4 files hold the same tile: 4 x 16 = 64 B moved. A multicast
  // network reads it once (16 B); without one (a GPU's warps loading their own fragments) the
  // shared level reads all 64 B.
  Mapping m = make_mapping(3, 3);
  m.levels[kShared].spatial = {1, 4, 1};
  m.levels[kRegs].temporal = {4, 1, 4};
  const MappingCost with = evaluate(gemm444().space, m, register_files(4, 4, true, false));
  const MappingCost without = evaluate(gemm444().space, m, register_files(4, 4, false, false));
  ASSERT_TRUE(with.ok() && without.ok());
  EXPECT_DOUBLE_EQ(with.levels[kShared].tensors[kA].read_bytes, 16);
  EXPECT_DOUBLE_EQ(without.levels[kShared].tensors[kA].read_bytes, 64);
  EXPECT_DOUBLE_EQ(without.levels[kRegs].tensors[kA].write_bytes, 64);
  // C: each file owns 4 outputs, written up once (16 B), never read back; the shared level
  // drains them to DRAM (16 B read).
  EXPECT_DOUBLE_EQ(without.levels[kShared].tensors[kC].write_bytes, 16);
  EXPECT_DOUBLE_EQ(without.levels[kShared].tensors[kC].read_bytes, 0 + 16);  // + drain to DRAM

  // k spread instead (split-K): the 4 files compute partial sums of the same 16 outputs (16 B
  // each, 64 B moved). A reduction network sums them on the way (16 B written); without one,
  // every file writes its own (64 B) and all but the first arrival of each output add to what
  // the shared level holds: 64 - 64 / 4 = 48 B read back.
  m.levels[kShared].spatial = {1, 1, 4};
  m.levels[kRegs].temporal = {4, 4, 1};
  const MappingCost reduced = evaluate(gemm444().space, m, register_files(4, 4, true, false));
  const MappingCost summed = evaluate(gemm444().space, m, register_files(4, 4, false, false));
  ASSERT_TRUE(reduced.ok() && summed.ok());
  EXPECT_DOUBLE_EQ(reduced.levels[kShared].tensors[kC].write_bytes, 16);
  EXPECT_DOUBLE_EQ(reduced.levels[kShared].tensors[kC].read_bytes, 0 + 16);
  EXPECT_DOUBLE_EQ(summed.levels[kShared].tensors[kC].write_bytes, 64);
  EXPECT_DOUBLE_EQ(summed.levels[kShared].tensors[kC].read_bytes, 48 + 16);
}

TEST(LoopNestModel, WavesRunAGridLargerThanTheFanOutInRounds) {
  // Two register files (1 PE each) under a shared level that deals 4 blocks (m spread 4) out in
  // waves: 2 rounds. Each block: n 4 x k 2 in its registers; DRAM loops k 2 around the grid.
  Mapping m = make_mapping(3, 3);
  m.levels[kShared].spatial = {4, 1, 1};
  m.levels[kRegs].temporal = {1, 4, 2};
  m.levels[2].temporal = {1, 1, 2};
  EXPECT_EQ(evaluate(gemm444().space, m, register_files(2, 2, false, false)).status.reason,
            Infeasible::SpatialFanout);  // no scheduler: 4 blocks on 2 files do not fit
  const MappingCost c = evaluate(gemm444().space, m, register_files(2, 2, false, true));
  ASSERT_TRUE(c.ok()) << describe(c.status, register_files(2, 2, false, true), gemm444().space);
  // Compute: 16 iterations per block x 2 rounds = 32 cycles = 64 MACs / 2 PEs, all PEs busy.
  EXPECT_DOUBLE_EQ(c.rounds, 2);
  EXPECT_DOUBLE_EQ(c.compute_cycles, 32);
  EXPECT_EQ(c.used_pes, 4u);
  EXPECT_DOUBLE_EQ(c.spatial_utilization, 1);
  // C: a block's 4 outputs (4 B) cannot stay in its registers across the DRAM loop over k (the
  // other round's block ran in between): drained twice per block, 2 x 4 x 4 blocks = 32 B written
  // to the shared level, of which the second visits (16 B) add to partial sums read back. With
  // 4 files and no waves the tile stays while k turns at DRAM: 16 B, nothing read back.
  EXPECT_DOUBLE_EQ(c.levels[kShared].tensors[kC].write_bytes, 32);
  EXPECT_DOUBLE_EQ(c.levels[kShared].tensors[kC].read_bytes, 16 + 16);  // + drain to DRAM
  const MappingCost all = evaluate(gemm444().space, m, register_files(4, 4, false, false));
  ASSERT_TRUE(all.ok());
  EXPECT_DOUBLE_EQ(all.levels[kShared].tensors[kC].write_bytes, 16);
  EXPECT_DOUBLE_EQ(all.levels[kShared].tensors[kC].read_bytes, 0 + 16);
  // Register reads (1 B/cycle per file): A 64 and B 64 (one per MAC), C 48 read back by the
  // lanes (every MAC but the first of each output's 4 visits: 64 - 16) and 32 drained: 208 B.
  // The 4 blocks' files are 2 physical ones, each serving 2 rounds: 208 / 2 = 104 cycles.
  EXPECT_DOUBLE_EQ(c.levels[kRegs].read_bytes, 208);
  EXPECT_DOUBLE_EQ(c.levels[kRegs].cycles, 104);
  EXPECT_EQ(c.bottleneck, kRegs);
}

TEST(LoopNestModel, BypassedTensorStreamsFromTheLevelAbove) {
  // tile_224 m-then-n with B bypassing the buffer: every MAC reads its B element from DRAM
  // (64 B), and the buffer holds only A (8 B) and C (4 B).
  Mapping m = tile_224({kM, kN});
  m.levels[kBuffer].bypass = 1u << kB;
  const MappingCost c = evaluate(gemm444().space, m, two_level(12));
  ASSERT_TRUE(c.ok());
  EXPECT_DOUBLE_EQ(dram_read(c, kB), 64);
  EXPECT_DOUBLE_EQ(c.levels[kBuffer].tensors[kB].read_bytes, 0);
  EXPECT_DOUBLE_EQ(c.levels[kBuffer].tile_bytes, 12);
}

TEST(LoopNestModel, InfeasibleMappingsAreValuesWithAReason) {
  const auto& space = gemm444().space;
  // 20 B of tiles in a 19 B buffer.
  MappingCost c = evaluate(space, tile_224({kM, kN}), two_level(19));
  EXPECT_EQ(c.status.reason, Infeasible::Capacity);
  EXPECT_EQ(c.status.level, kBuffer);
  EXPECT_DOUBLE_EQ(c.status.needed, 20);
  EXPECT_DOUBLE_EQ(c.status.available, 19);
  EXPECT_DOUBLE_EQ(c.energy_pj, 0);

  // Double buffering doubles the footprint: 40 B in a 39 B buffer.
  Hierarchy db = two_level(39);
  db.levels[kBuffer].double_buffered = true;
  c = evaluate(space, tile_224({kM, kN}), db);
  EXPECT_EQ(c.status.reason, Infeasible::Capacity);
  EXPECT_DOUBLE_EQ(c.status.needed, 40);

  // 8 lanes asked of a fan-out of 4.
  Mapping wide = make_mapping(2, 3);
  wide.levels[kBuffer].spatial = {2, 4, 1};
  wide.levels[kDram].temporal = {2, 1, 4};
  c = evaluate(space, wide, two_level(1000, 4));
  EXPECT_EQ(c.status.reason, Infeasible::SpatialFanout);
  EXPECT_DOUBLE_EQ(c.status.needed, 8);
  EXPECT_DOUBLE_EQ(c.status.available, 4);

  // k covered only to 2 of 4.
  Mapping short_k = tile_224({kM, kN});
  short_k.levels[kBuffer].temporal[kK] = 2;
  c = evaluate(space, short_k, two_level(1000));
  EXPECT_EQ(c.status.reason, Infeasible::Coverage);
  EXPECT_EQ(c.status.dim, kK);

  // A mapping for another level count, and an order that repeats a dim.
  c = evaluate(space, make_mapping(3, 3), two_level(1000));
  EXPECT_EQ(c.status.reason, Infeasible::Shape);
  Mapping repeat = tile_224({kM, kN});
  repeat.levels[kDram].order = {0, 0, 1};
  EXPECT_EQ(evaluate(space, repeat, two_level(1000)).status.reason, Infeasible::Shape);

  // No matrix unit at the precision.
  Hierarchy none = two_level(1000);
  none.unsupported = "matrix unit 'mxu' does not support fp8_e4m3";
  EXPECT_EQ(evaluate(space, tile_224({kM, kN}), none).status.reason, Infeasible::Unsupported);
}

TEST(LoopNestModel, ConvInputTileIsTheSlidingWindow) {
  // 1x1-channel conv, 6x6 input, 3x3 filter, stride 1: output 4x4. dims n g k c p q r s.
  const workload::Op conv = workload::make_conv2d(
      "c", {.in_h = 6, .in_w = 6, .filter_h = 3, .filter_w = 3}, 4, 4);
  const LoopNestProblem p = compile_problem(conv.space);
  ASSERT_TRUE(p.status.ok());
  const ProblemTensor& ifmap = p.tensors[0];
  // Tile p=2, q=4, r=3, s=3: rows (2-1)*1 + 3 = 4, cols (4-1)*1 + 3 = 6.
  std::array<double, kMaxDims> x{1, 1, 1, 1, 2, 4, 3, 3};
  EXPECT_DOUBLE_EQ(tile_elements(ifmap, x), 4 * 6);
  // Stride 2, 9x9 input: rows (2-1)*2 + 3 = 5.
  const workload::Op strided = workload::make_conv2d(
      "s", {.in_h = 9, .in_w = 9, .filter_h = 3, .filter_w = 3, .stride_h = 2, .stride_w = 2}, 4,
      4);
  const LoopNestProblem ps = compile_problem(strided.space);
  EXPECT_DOUBLE_EQ(tile_elements(ps.tensors[0], x), 5 * ((4 - 1) * 2 + 3));
  // A 1x1 filter at stride 2 touches every other row: 4 output rows read 4 input rows, not the
  // bounding box's (4-1)*2 + 1 = 7.
  const workload::Op pointwise = workload::make_conv2d(
      "pw", {.in_h = 8, .in_w = 8, .stride_h = 2, .stride_w = 2}, 4, 4);
  std::array<double, kMaxDims> y{1, 1, 1, 1, 4, 4, 1, 1};
  EXPECT_DOUBLE_EQ(tile_elements(compile_problem(pointwise.space).tensors[0], y), 4 * 4);

  // The whole stride-1 conv, p split in two at DRAM: each half reads input rows 0-3 and 2-5,
  // 4 x 6 = 24 B each; the halo rows 2-3 come twice: 48 B against the 36 B input.
  Hierarchy h = two_level(1000);
  Mapping m = make_mapping(2, 8);
  m.levels[kBuffer].temporal = {1, 1, 1, 1, 2, 4, 3, 3};
  m.levels[kDram].temporal = {1, 1, 1, 1, 2, 1, 1, 1};
  const MappingCost c = evaluate(conv.space, m, h);
  ASSERT_TRUE(c.ok());
  EXPECT_DOUBLE_EQ(c.levels[kDram].tensors[0].read_bytes, 48);
  EXPECT_DOUBLE_EQ(c.levels[kDram].tensors[1].read_bytes, 9);   // the filter once
  EXPECT_DOUBLE_EQ(c.levels[kDram].tensors[2].write_bytes, 16); // the 4x4 output once
  EXPECT_DOUBLE_EQ(c.levels[kBuffer].tile_bytes, 24 + 9 + 2 * 4);
}

TEST(LoopNestModel, ImperfectFactorPricesThePartialTile) {
  // GEMM M=7, N=K=4: m tiled by 4 in the buffer and 2 at DRAM (8 >= 7: the second tile has 3
  // rows). Capacity counts the full tile: A 4x4 + B 4x4 + C 4x4 = 48 B.
  const workload::Op g = workload::make_gemm("g", 7, 4, 4);
  Mapping m = make_mapping(2, 3);
  m.levels[kBuffer].temporal = {4, 4, 4};
  m.levels[kDram].temporal = {2, 1, 1};
  const MappingCost c = evaluate(g.space, m, two_level(48));
  ASSERT_TRUE(c.ok());
  EXPECT_DOUBLE_EQ(c.levels[kBuffer].tile_bytes, 48);
  // Traffic is exact: A is 7x4 = 28 B (tiles of 16 and 12 B), B 16 B once, C 7x4 = 28 B.
  EXPECT_DOUBLE_EQ(dram_read(c, kA), 28);
  EXPECT_DOUBLE_EQ(dram_read(c, kB), 16);
  EXPECT_DOUBLE_EQ(dram_write(c, kC), 28);
  // Time pays the padding: 2 x 4 x 4 x 4 = 128 iterations for 112 MACs; energy only the 112.
  EXPECT_DOUBLE_EQ(c.macs, 112);
  EXPECT_DOUBLE_EQ(c.padded_macs, 128);
  EXPECT_DOUBLE_EQ(c.compute_cycles, 128);
  EXPECT_DOUBLE_EQ(c.mac_energy_pj, 112);
  EXPECT_DOUBLE_EQ(c.utilization, 112.0 / 128);
  // The same split of M=8 (no partial tile) reads all 8x4 = 32 B of A.
  const workload::Op g8 = workload::make_gemm("g", 8, 4, 4);
  EXPECT_DOUBLE_EQ(dram_read(evaluate(g8.space, m, two_level(48)), kA), 32);
}

TEST(LoopNestModel, MatchesTimeloopsOneLevelConv1dExercise) {
  // Timeloop's exercise 00-model-conv1d-1level (1 MAC, one buffer that is the whole memory), as
  // NVlabs/timeloop issue #42 explains its figures: O[p] += I[p + r] * W[r], P = 16, R = 3.
  // Weights and inputs: one read per MAC, 48 each. Outputs: 48 updates (one per MAC), 32 reads
  // (every update but the first of each of the 16 outputs reads the partial sum).
  workload::Einsum conv1d;
  conv1d.dims = {{"p", 16}, {"r", 3}};
  conv1d.accesses = {
      {workload::TensorRole::Weight, "W", {{{{1, 1}}, 0}}, {3}, DataType::Int8},
      {workload::TensorRole::Input, "I", {{{{0, 1}, {1, 1}}, 0}}, {18}, DataType::Int8},
      {workload::TensorRole::Output, "O", {{{{0, 1}}, 0}}, {16}, DataType::Int8},
  };
  Hierarchy h;
  h.compute = {.unit = "mac", .pes = 1, .macs_per_pe_per_cycle = 1};
  h.levels = {{.name = "buffer"}};  // the only level: it holds everything, as DRAM would
  Mapping m = make_mapping(1, 2);
  m.levels[0].temporal = {16, 3};
  set_order(m, 0, {0, 1});  // for p, for r (r innermost)
  const MappingCost c = evaluate(conv1d, m, h);
  ASSERT_TRUE(c.ok()) << describe(c.status, h, conv1d);
  EXPECT_DOUBLE_EQ(c.levels[0].tensors[0].read_bytes, 48);
  EXPECT_DOUBLE_EQ(c.levels[0].tensors[1].read_bytes, 48);
  EXPECT_DOUBLE_EQ(c.levels[0].tensors[2].write_bytes, 48);
  EXPECT_DOUBLE_EQ(c.levels[0].tensors[2].read_bytes, 32);
  EXPECT_DOUBLE_EQ(c.compute_cycles, 48);
}

TEST(LoopNestModel, CompiledAndEinsumOverloadsAgree) {
  const LoopNestProblem p = compile_problem(gemm444().space);
  const Mapping m = tile_422({kK, kN});
  const MappingCost a = evaluate(p, m, two_level(20));
  const MappingCost b = evaluate(gemm444().space, m, two_level(20));
  EXPECT_DOUBLE_EQ(a.energy_pj, b.energy_pj);
  EXPECT_DOUBLE_EQ(a.cycles, b.cycles);
}

TEST(LoopNestModel, SystolicArrayPaysFillAndDrainOncePerPass) {
  // A 2x2 array (4 PEs, 1 MAC per cycle) under one buffer and DRAM; GEMM 4x4x4 (64 MACs, 16 per
  // PE). Levels: pe (its registers), buffer (fans out to the 4 PEs), DRAM. A pass lasts while
  // the buffer's innermost loop turns over a dim the stationary tensor does not have.
  Hierarchy h = two_level(1024, 4);
  h.compute.array_rows = 2;
  h.compute.array_cols = 2;
  h.levels.insert(h.levels.begin(),
                  StorageLevel{.name = "pe", .capacity_bytes = 6, .instances = 4, .fan_out = 1});
  constexpr std::size_t kBuf = 1;
  constexpr std::size_t kTop = 2;
  // Output stationary: the array holds m 2 x n 2, the buffer loops over k (4 steps) with C's
  // element still; DRAM loops m 2, n 2: 4 passes of 4 + (R + C - 2 = 2) = 6 cycles: 24.
  Mapping os = make_mapping(3, 3);
  os.levels[kBuf].spatial = {2, 2, 1};
  os.levels[kBuf].temporal = {1, 1, 4};
  os.levels[kTop].temporal = {2, 2, 1};
  const MappingCost a = evaluate(gemm444().space, os, h);
  ASSERT_TRUE(a.ok()) << describe(a.status, h, gemm444().space);
  EXPECT_DOUBLE_EQ(a.compute_cycles, 24);
  // Weight stationary: the array holds k 2 x n 2, the buffer loops over m (4 steps) with B's
  // element preloaded; DRAM loops k 2, n 2: 4 passes of 4 + (2R + C - 2 = 4) = 8 cycles: 32.
  Mapping ws = make_mapping(3, 3);
  ws.levels[kBuf].spatial = {1, 2, 2};
  ws.levels[kBuf].temporal = {4, 1, 1};
  ws.levels[kTop].temporal = {1, 2, 2};
  const MappingCost b = evaluate(gemm444().space, ws, h);
  ASSERT_TRUE(b.ok()) << describe(b.status, h, gemm444().space);
  EXPECT_DOUBLE_EQ(b.compute_cycles, 32);
  // The buffer's m loop moved to DRAM, outermost: DRAM loops m 4, k 2, n 2 (n innermost). A's
  // element stays while n turns (2 steps), B and C change every step: 8 passes, A stationary
  // (an input: preloaded), 16 + 8 x (2R + C - 2 = 4) = 48 cycles.
  Mapping churn = ws;
  churn.levels[kBuf].temporal = {1, 1, 1};
  churn.levels[kTop].temporal = {4, 2, 2};
  set_order(churn, kTop, {kM, kK, kN});
  const MappingCost c = evaluate(gemm444().space, churn, h);
  ASSERT_TRUE(c.ok()) << describe(c.status, h, gemm444().space);
  EXPECT_DOUBLE_EQ(c.compute_cycles, 48);
  // Without an array shape (tensor-core lanes) there is no fill: 16 iterations per PE.
  h.compute.array_rows = 0;
  EXPECT_DOUBLE_EQ(evaluate(gemm444().space, ws, h).compute_cycles, 16);
}

}  // namespace
}  // namespace coda::mapper
