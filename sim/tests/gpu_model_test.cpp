// Hand-derived checks of the GPU GEMM model (sim/analytical/gpu_model.h). Notation: a tile
// tm x tn x tk with w warps and s stages; bps = blocks per SM; a wave = sms x bps blocks; a wave
// of W blocks computes for min(bps, ceil(W / sms)) x block MACs / (MACs per cycle per SM).
#include "sim/analytical/gpu_model.h"

#include <gtest/gtest.h>

namespace coda::sim::analytical {
namespace {

constexpr double kRel = 1e-12;

// NVIDIA A100-SXM4-40GB (A100 whitepaper): 108 SMs at 1410 MHz boost; 312 dense fp16 tensor
// TFLOPS = 156e12 MACs/s = 108 x 1.41e9 x 1024 MACs per cycle per SM; up to 164 KiB shared memory
// per SM; 64 Ki 32-bit registers, 32 blocks and 64 warps per SM; 40 MiB L2 reading 5120 B/clk;
// 1555 GB/s HBM2.
GpuParams a100() {
  return {.sms = 108,
          .clock_hz = 1.41e9,
          .macs_per_cycle_per_sm = 1024,
          .smem_bytes_per_sm = 164ULL * 1024,
          .registers_per_sm = 65536,
          .max_blocks_per_sm = 32,
          .max_warps_per_sm = 64,
          .l2_bytes = 40ULL * 1024 * 1024,
          .l2_bytes_per_second = 5120 * 1.41e9,
          .dram_bytes_per_second = 1.555e12};
}

// A toy GPU for rules in isolation: 2 SMs at 1 GHz, 1024 MACs per cycle, one block per SM,
// ample shared memory and registers, unlimited bandwidth, no launch overhead.
GpuParams toy() {
  return {.sms = 2,
          .clock_hz = 1e9,
          .macs_per_cycle_per_sm = 1024,
          .smem_bytes_per_sm = 1 << 20,
          .registers_per_sm = 65536,
          .max_blocks_per_sm = 1,
          .max_warps_per_sm = 64,
          .l2_bytes = 0,
          .launch_overhead_s = 0.0};
}

constexpr BlockTile k128x128{.tile_m = 128, .tile_n = 128, .tile_k = 32, .warps = 4, .stages = 3};

TEST(GpuModel, A100Fp16Gemm4096Cubed) {
  const GemmShape shape{.m = 4096, .n = 4096, .k = 4096};  // fp16 in and out
  const GpuKernelCost c = evaluate_gpu_gemm(shape, k128x128, a100());
  ASSERT_TRUE(c.feasible);
  // Shared memory: 3 stages x (128 + 128) x 32 x 2 B = 49152 B; 167936 / 49152 = 3.
  EXPECT_EQ(c.smem_bytes_per_block, 49152u);
  // Registers: 128*128 accumulators over 128 threads = 128, + 32 = 160 per thread; x 128 threads
  // = 20480 per block; 65536 / 20480 = 3. Warps 64 / 4 = 16, block slots 32. bps = 3, and the
  // tie between shared memory and registers names shared memory.
  EXPECT_EQ(c.registers_per_thread, 160u);
  EXPECT_EQ(c.registers_per_block, 20480u);
  EXPECT_EQ(c.blocks_per_sm, 3u);
  EXPECT_EQ(c.limit, GpuLimit::SharedMemory);
  EXPECT_DOUBLE_EQ(c.occupancy, 12.0 / 64.0);  // 3 blocks x 4 warps of 64
  // Grid 32 x 32 = 1024 blocks; a wave is 108 x 3 = 324: 3 full waves (972) + a tail of 52.
  EXPECT_EQ(c.blocks, 1024u);
  EXPECT_EQ(c.waves, 4u);
  EXPECT_DOUBLE_EQ(c.wave_efficiency, 1024.0 / 1296.0);  // 0.790
  // Compute: a block does 128*128*4096 MACs = 65536 cycles at 1024/cycle. A full wave holds 3 per
  // SM: 196608 cycles; the 52-block tail holds ceil(52/108) = 1: 65536. Sum 655360 cycles.
  EXPECT_NEAR(c.compute_seconds, 655360 / 1.41e9, kRel * c.compute_seconds);
  // L2: a block reads (128+128) x 4096 x 2 B = 2097152 and writes 128*128*2 = 32768: 2129920 B.
  EXPECT_DOUBLE_EQ(c.l2_bytes, 1024.0 * 2129920);
  // DRAM: A + B + C = 96 MiB > 40 MiB L2, so waves share panels (tiles_m = tiles_n = 32, each
  // panel of A or B is 1 MiB). Full wave (324 blocks): all 32 A panels, ceil(324/32) = 11 B
  // panels, C share 324 x 32768 B: 33554432 + 11534336 + 10616832 = 55705600 B.
  // Tail (52): 32 A panels, 2 B panels, 52 x 32768 C: 33554432 + 2097152 + 1703936 = 37355520.
  EXPECT_DOUBLE_EQ(c.dram_bytes, 3.0 * 55705600 + 37355520);
  // Per full wave: compute 196608 / 1.41e9 = 139.4 us; L2 324 x 2129920 / 7.2192e12 = 95.6 us;
  // DRAM 55705600 / 1.555e12 = 35.8 us. Tail: compute 46.5 us, L2 15.3 us, DRAM 24.0 us.
  // Compute-bound throughout: 4 us launch + 655360 cycles.
  const double seconds = 4e-6 + 655360 / 1.41e9;  // 468.79 us
  EXPECT_NEAR(c.seconds, seconds, kRel * seconds);
  EXPECT_NEAR(c.cycles, seconds * 1.41e9, kRel * seconds * 1.41e9);
  EXPECT_EQ(c.bound, GpuBound::Compute);
  // Utilization: 4096^3 MACs / (156e12 MACs/s x 468.79 us) = 0.940.
  const double peak = 108 * 1024 * 1.41e9;
  EXPECT_NEAR(c.utilization, 4096.0 * 4096 * 4096 / (peak * seconds), 1e-12);
}

TEST(GpuModel, OneBlockPastAFullWaveCostsAWholeWave) {
  // Toy: 2 SMs x 1 block = waves of 2. m = 256, n = 128: 2 x 1 tiles = one full wave.
  // Block: 128*128*64 MACs / 1024 = 1024 cycles = 1.024 us.
  const GpuParams p = toy();
  const GemmShape full{.m = 256, .n = 128, .k = 64};
  const GpuKernelCost one = evaluate_gpu_gemm(full, k128x128, p);
  EXPECT_EQ(one.blocks, 2u);
  EXPECT_EQ(one.waves, 1u);
  EXPECT_DOUBLE_EQ(one.wave_efficiency, 1.0);
  EXPECT_NEAR(one.seconds, 1.024e-6, kRel);
  // One more row: ceil(257/128) = 3 blocks, 2 waves; the last holds one block on one SM, which
  // takes the same 1024 cycles. Time doubles, wave efficiency 3 / 4.
  const GemmShape plus_one{.m = 257, .n = 128, .k = 64};
  const GpuKernelCost two = evaluate_gpu_gemm(plus_one, k128x128, p);
  EXPECT_EQ(two.blocks, 3u);
  EXPECT_EQ(two.waves, 2u);
  EXPECT_DOUBLE_EQ(two.wave_efficiency, 0.75);
  EXPECT_NEAR(two.seconds, 2.048e-6, kRel);
  // K padding counts: k = 65 runs ceil(65/32) = 3 slices of 32, 96 deep: 1536 cycles a block.
  const GpuKernelCost padded = evaluate_gpu_gemm({.m = 256, .n = 128, .k = 65}, k128x128, p);
  EXPECT_NEAR(padded.seconds, 1.536e-6, kRel);
}

TEST(GpuModel, OneExtraRowOnA100AddsATailWave) {
  // 2304 = 18 x 128: 18 x 18 = 324 blocks, exactly one wave of 3 per SM.
  // Compute 3 x 65536 = 196608 cycles = 139.4 us; L2 324 x 2129920 B -> 95.6 us; DRAM
  // A + B + C = 2 x 18874368 + 10616832 = 48365568 B > 40 MiB, one wave covers every panel once:
  // 48365568 B (compulsory) -> 31.1 us. Compute-bound.
  const GpuKernelCost even = evaluate_gpu_gemm({.m = 2304, .n = 2304, .k = 4096}, k128x128, a100());
  EXPECT_EQ(even.blocks, 324u);
  EXPECT_EQ(even.waves, 1u);
  EXPECT_DOUBLE_EQ(even.wave_efficiency, 1.0);
  EXPECT_DOUBLE_EQ(even.dram_bytes, 48365568.0);
  EXPECT_NEAR(even.seconds, 4e-6 + 196608 / 1.41e9, kRel);
  // m = 2305: 19 x 18 = 342 blocks: a full wave and a tail of 18 (one block on 18 SMs):
  // 196608 + 65536 cycles. Wave efficiency 342 / 648.
  const GpuKernelCost odd = evaluate_gpu_gemm({.m = 2305, .n = 2304, .k = 4096}, k128x128, a100());
  EXPECT_EQ(odd.blocks, 342u);
  EXPECT_EQ(odd.waves, 2u);
  EXPECT_DOUBLE_EQ(odd.wave_efficiency, 342.0 / 648.0);
  EXPECT_NEAR(odd.seconds, 4e-6 + (196608 + 65536) / 1.41e9, kRel);
  EXPECT_EQ(odd.bound, GpuBound::Compute);
}

TEST(GpuModel, InfeasibleTilesAreValuesWithAReason) {
  GpuParams p = a100();
  p.smem_bytes_per_sm = 64ULL * 1024;
  // 256x128x32, 4 stages, fp16: 4 x (256 + 128) x 32 x 2 = 98304 B > 65536 B.
  const BlockTile big{.tile_m = 256, .tile_n = 128, .tile_k = 32, .warps = 8, .stages = 4};
  const GpuKernelCost smem = evaluate_gpu_gemm({.m = 4096, .n = 4096, .k = 4096}, big, p);
  EXPECT_FALSE(smem.feasible);
  EXPECT_EQ(smem.limit, GpuLimit::SharedMemory);
  EXPECT_EQ(smem.smem_bytes_per_block, 98304u);  // reported so the caller can say by how much
  EXPECT_EQ(smem.blocks_per_sm, 0u);
  EXPECT_EQ(to_string(smem.limit), "shared memory");

  // 256x128 with 4 warps: 32768 accumulators / 128 threads = 256, + 32 = 288 > 255 per thread.
  const BlockTile greedy{.tile_m = 256, .tile_n = 128, .tile_k = 32, .warps = 4, .stages = 3};
  const GpuKernelCost regs = evaluate_gpu_gemm({.m = 4096, .n = 4096, .k = 4096}, greedy, a100());
  EXPECT_FALSE(regs.feasible);
  EXPECT_EQ(regs.limit, GpuLimit::Registers);
  EXPECT_EQ(regs.registers_per_thread, 288u);

  // No warps, or 33 warps = 1056 threads > 1024: not a tile at all.
  for (const std::uint32_t warps : {0U, 33U}) {
    BlockTile bad = k128x128;
    bad.warps = warps;
    const GpuKernelCost c = evaluate_gpu_gemm({.m = 128, .n = 128, .k = 128}, bad, a100());
    EXPECT_FALSE(c.feasible);
    EXPECT_EQ(c.limit, GpuLimit::InvalidTile);
  }
}

TEST(GpuModel, OccupancyLimitedByWarpsOrBlockSlots) {
  GpuParams p = a100();
  p.max_warps_per_sm = 8;  // 8 / 4 warps = 2 blocks, below shared memory's and registers' 3
  const GpuKernelCost warps = evaluate_gpu_gemm({.m = 4096, .n = 4096, .k = 4096}, k128x128, p);
  EXPECT_EQ(warps.blocks_per_sm, 2u);
  EXPECT_EQ(warps.limit, GpuLimit::Warps);
  EXPECT_DOUBLE_EQ(warps.occupancy, 1.0);  // 2 x 4 of 8 warps
  p = a100();
  p.max_blocks_per_sm = 1;
  const GpuKernelCost slots = evaluate_gpu_gemm({.m = 4096, .n = 4096, .k = 4096}, k128x128, p);
  EXPECT_EQ(slots.blocks_per_sm, 1u);
  EXPECT_EQ(slots.limit, GpuLimit::BlockSlots);
}

TEST(GpuModel, FewWarpsReachPartOfTheSm) {
  // Toy with one SM and room for 2 blocks; 64x64x32 tiles, k = 64: a block does 64*64*64 MACs =
  // 256 cycles at the full rate. A 2-warp block alone reaches 2 of the 4 sub-partitions: 512
  // cycles. Two 2-warp blocks (m = 128) together reach all 4: 2 x 256 = 512 cycles as well.
  GpuParams p = toy();
  p.sms = 1;
  p.max_blocks_per_sm = 2;
  const BlockTile two_warps{.tile_m = 64, .tile_n = 64, .tile_k = 32, .warps = 2, .stages = 3};
  EXPECT_NEAR(evaluate_gpu_gemm({.m = 64, .n = 64, .k = 64}, two_warps, p).seconds, 0.512e-6,
              kRel);
  EXPECT_NEAR(evaluate_gpu_gemm({.m = 128, .n = 64, .k = 64}, two_warps, p).seconds, 0.512e-6,
              kRel);
  // With 4 warps one block reaches the whole SM: 256 cycles.
  BlockTile four_warps = two_warps;
  four_warps.warps = 4;
  EXPECT_NEAR(evaluate_gpu_gemm({.m = 64, .n = 64, .k = 64}, four_warps, p).seconds, 0.256e-6,
              kRel);
}

TEST(GpuModel, DramTrafficWithAndWithoutL2Reuse) {
  // Toy (waves of 2 blocks), m = 512, n = 256, k = 64, fp16: tiles_m = 4, tiles_n = 2, 8 blocks,
  // 4 waves. A = 512*64*2 = 65536 B, B = 64*256*2 = 32768 B, C = 512*256*2 = 262144 B.
  const GemmShape shape{.m = 512, .n = 256, .k = 64};
  GpuParams p = toy();
  // L2 of 0 B: a wave of 2 reads min(2, 4) = 2 A panels (half of A) and ceil(2/4) = 1 B panel
  // (half of B), and writes 2/8 of C: 32768 + 16384 + 65536 = 114688 B; 4 waves = 2A + 2B + C =
  // 458752 B: A is read again for each of the 2 tile columns, B for each half column.
  const GpuKernelCost no_l2 = evaluate_gpu_gemm(shape, k128x128, p);
  EXPECT_DOUBLE_EQ(no_l2.dram_bytes, 458752.0);
  // L2 of 1 MiB holds A + B + C = 360448 B: compulsory traffic only.
  p.l2_bytes = 1 << 20;
  EXPECT_DOUBLE_EQ(evaluate_gpu_gemm(shape, k128x128, p).dram_bytes, 360448.0);
  // DRAM at 100 GB/s without L2 reuse: a wave moves 114688 B in 1.14688 us > its 1.024 us of
  // compute (128*128*64 / 1024 cycles): 4 x 1.14688 = 4.58752 us, DRAM-bound.
  p.l2_bytes = 0;
  p.dram_bytes_per_second = 1e11;
  const GpuKernelCost slow = evaluate_gpu_gemm(shape, k128x128, p);
  EXPECT_NEAR(slow.seconds, 4.58752e-6, kRel);
  EXPECT_EQ(slow.bound, GpuBound::Dram);
  // L2 at 100 GB/s instead: a block moves (128+128)*64*2 + 128*128*2 = 65536 B, a wave 131072 B
  // = 1.31072 us > 1.024 us: 4 x 1.31072 = 5.24288 us, L2-bound.
  p.dram_bytes_per_second = 0.0;
  p.l2_bytes_per_second = 1e11;
  const GpuKernelCost l2 = evaluate_gpu_gemm(shape, k128x128, p);
  EXPECT_DOUBLE_EQ(l2.l2_bytes, 8.0 * 65536);
  EXPECT_NEAR(l2.seconds, 5.24288e-6, kRel);
  EXPECT_EQ(l2.bound, GpuBound::L2);
}

TEST(GpuModel, ClusterMulticastSharesTheLargerPanel) {
  // Toy, m = 512, n = 256, k = 64, fp16, 128 x 128 tiles: tiles_m = 4, tiles_n = 2. Per block
  // an A panel is 128 x 64 x 2 = 16384 B, a B panel the same, C 128 x 128 x 2 = 32768 B.
  const GemmShape shape{.m = 512, .n = 256, .k = 64};
  GpuParams p = toy();
  p.l2_bytes_per_second = 1e11;
  // No cluster: 16384 + 16384 + 32768 = 65536 B a block (as above).
  EXPECT_DOUBLE_EQ(evaluate_gpu_gemm(shape, k128x128, p).l2_bytes, 8.0 * 65536);
  // Clusters of 2: two blocks share one panel, fetched once: 16384 + 16384 / 2 + 32768 = 57344 B
  // a block (both orientations fit: tiles_m = 4 >= 2 and tiles_n = 2 >= 2).
  p.cluster_multicast = 2;
  const GpuKernelCost two = evaluate_gpu_gemm(shape, k128x128, p);
  EXPECT_DOUBLE_EQ(two.l2_bytes, 8.0 * 57344);
  // A wave of 2 blocks moves 114688 B in 1.14688 us > 1.024 us of compute: still L2-bound,
  // 4 waves = 4.58752 us (5.24288 us without the cluster).
  EXPECT_NEAR(two.seconds, 4.58752e-6, kRel);
  // Clusters of 4: only M has 4 tiles, so 4 blocks along M share a B panel: 16384 + 4096 +
  // 32768 = 53248 B.
  p.cluster_multicast = 4;
  EXPECT_DOUBLE_EQ(evaluate_gpu_gemm(shape, k128x128, p).l2_bytes, 8.0 * 53248);
  const GemmShape one_column{.m = 512, .n = 128, .k = 64};
  // 4 blocks, one column: B shared 4 ways: 16384 + 4096 + 32768 = 53248 B a block.
  EXPECT_DOUBLE_EQ(evaluate_gpu_gemm(one_column, k128x128, p).l2_bytes, 4.0 * 53248);
  // One row of tiles (m = 128) and 2 columns: neither dimension has 4 tiles, no sharing.
  const GemmShape one_row{.m = 128, .n = 256, .k = 64};
  EXPECT_DOUBLE_EQ(evaluate_gpu_gemm(one_row, k128x128, p).l2_bytes, 2.0 * 65536);
}

TEST(GpuModel, ImplicitGemmConvReadsItsFeatureMapOnce) {
  // A 3x3 conv, stride 1, pad 1, of a 16x16x32 fp16 map to 64 filters as an implicit GEMM:
  // m = 16*16 = 256 pixels, n = 64, k = 3*3*32 = 288. Unrolled A = 256*288*2 = 147456 B; the map
  // is 16*16*32*2 = 16384 B (a_dram_bytes). B = 288*64*2 = 36864 B, C = 256*64*2 = 32768 B.
  GemmShape shape{.m = 256, .n = 64, .k = 288};
  shape.a_dram_bytes = 16384;
  GpuParams p = toy();
  // L2 of 1 MiB holds map + B + C: compulsory traffic = 16384 + 36864 + 32768 = 86016 B, where
  // the unrolled A would make it 147456 + 36864 + 32768 = 217088 B.
  p.l2_bytes = 1 << 20;
  EXPECT_DOUBLE_EQ(evaluate_gpu_gemm(shape, k128x128, p).dram_bytes, 86016.0);
  shape.a_dram_bytes = 0;
  EXPECT_DOUBLE_EQ(evaluate_gpu_gemm(shape, k128x128, p).dram_bytes, 217088.0);
  // L2 traffic is the unrolled tiles either way: 2 x 1 blocks of (128 + 128) * 288 * 2 +
  // 128*128*2 B = 2 x 180224 = 360448 B.
  shape.a_dram_bytes = 16384;
  EXPECT_DOUBLE_EQ(evaluate_gpu_gemm(shape, k128x128, p).l2_bytes, 360448.0);
  // L2 of 0 B: tiles_m = 2, tiles_n = 1, waves of 2 blocks: one wave reads min(2, 2) = 2 A
  // panels of 16384 / 2 B and 1 B panel: 16384 + 36864 + 32768 = 86016 B again.
  p.l2_bytes = 0;
  EXPECT_DOUBLE_EQ(evaluate_gpu_gemm(shape, k128x128, p).dram_bytes, 86016.0);
  // A strided 1x1 conv's touched map can exceed its unrolled matrix (it skips pixels): A is
  // read as the smaller, 256*288*2 = 147456 B, never the 10 MB given.
  shape.a_dram_bytes = 10e6;
  p.l2_bytes = 1 << 20;
  EXPECT_DOUBLE_EQ(evaluate_gpu_gemm(shape, k128x128, p).dram_bytes, 217088.0);
}

TEST(GpuModel, RasterGroupTradesAPanelsForBPanels) {
  // 8 SMs x 1 block: waves of 8. m = 1024, n = 512, k = 64, fp16, 128x128 tiles: tiles_m = 8,
  // tiles_n = 4, 32 blocks, 4 waves. A = 1024*64*2 = 131072 B (panel 16384), B = 64*512*2 =
  // 65536 B (panel 16384), C = 1024*512*2 = 1048576 B. L2 of 0 B.
  GpuParams p = toy();
  p.sms = 8;
  const GemmShape shape{.m = 1024, .n = 512, .k = 64};
  // Identity order: a wave walks all 8 m-tiles of one n-tile: 8 A panels + 1 B panel = 147456 B;
  // 4 waves + C = 589824 + 1048576 = 1638400 B.
  EXPECT_DOUBLE_EQ(evaluate_gpu_gemm(shape, k128x128, p).dram_bytes, 1638400.0);
  // Raster group 2: a wave covers ceil(8 / (2 x 4)) = 1 group: 2 A panels x 4 B panels =
  // 32768 + 65536 = 98304 B; 4 waves + C = 393216 + 1048576 = 1441792 B.
  p.raster_group = 2;
  EXPECT_DOUBLE_EQ(evaluate_gpu_gemm(shape, k128x128, p).dram_bytes, 1441792.0);
  // A group of 8 or more is tiles_m: the identity order again.
  p.raster_group = 64;
  EXPECT_DOUBLE_EQ(evaluate_gpu_gemm(shape, k128x128, p).dram_bytes, 1638400.0);
}

TEST(GpuModel, BatchedWavesSpanSeveralBatches) {
  // Toy, batch 4 of one 128x128 tile each (k = 64), L2 0 B: a wave of 2 spans 2 batches, so it
  // reads 2 A panels and ceil(2/1) = 2 B panels, each a whole batch's matrix: every A and B is
  // read once. A = B = 128*64*2 = 16384 B, C = 32768 B per batch: 4 x 65536 = 262144 B.
  const GpuKernelCost c = evaluate_gpu_gemm({.batch = 4, .m = 128, .n = 128, .k = 64}, k128x128,
                                            toy());
  EXPECT_EQ(c.blocks, 4u);
  EXPECT_EQ(c.waves, 2u);
  EXPECT_DOUBLE_EQ(c.dram_bytes, 262144.0);
  // A batch split between two waves is read once: 3 SMs (waves of 3 blocks), batch 3 of 2 tiles
  // each (m = 256): the first wave runs batch 0 and half of batch 1, the second the rest. Each
  // wave covers 3 / 2 = 1.5 batches of A (256*64*2 = 32768 B) and B (16384 B), so A and B are
  // read 3 times in all, and C (65536 B a batch) written once: 3 x 114688 = 344064 B. (Counting
  // every batch a wave touches as whole read 4 of each: 393216 B.)
  GpuParams three = toy();
  three.sms = 3;
  const GpuKernelCost split =
      evaluate_gpu_gemm({.batch = 3, .m = 256, .n = 128, .k = 64}, k128x128, three);
  EXPECT_EQ(split.blocks, 6u);
  EXPECT_EQ(split.waves, 2u);
  EXPECT_DOUBLE_EQ(split.dram_bytes, 344064.0);
}

TEST(GpuModel, TinyGemmIsLaunchBound) {
  // 64^3 on A100 with 128x128: one block, alone on its SM: 128*128*64 / 1024 = 1024 cycles
  // = 0.73 us < 4 us launch overhead.
  const GpuKernelCost c = evaluate_gpu_gemm({.m = 64, .n = 64, .k = 64}, k128x128, a100());
  EXPECT_EQ(c.blocks, 1u);
  EXPECT_NEAR(c.seconds, 4e-6 + 1024 / 1.41e9, kRel);
  EXPECT_EQ(c.bound, GpuBound::Launch);
}

TEST(GpuModel, ChooseTileForDecodeGemmReachesTheDramFloor) {
  // m = 16, n = k = 4096 (one decode step of a 4096-wide projection, batch 16). A + B + C =
  // 131072 + 33554432 + 131072 = 33816576 B fits the 40 MiB L2: compulsory, 21.75 us at
  // 1555 GB/s. Tall tiles waste most of their MACs on padding: 128x128 (32 blocks, one per SM)
  // computes 65536 cycles = 46.5 us; 128x64 and 64x128, 32768 cycles = 23.2 us. 64x64 (64
  // blocks, one per SM): 16384 cycles = 11.6 us; L2 64 x (128*4096*2 + 64*64*2) B = 9.4 us;
  // DRAM-bound at 21.75 us. 32x32 ties at the same floor; the tie goes to the larger tile, and
  // 8 warps, 4 stages is the first 64x64 candidate (bps 5: shared memory 4*128*32*2 = 32 KiB).
  const GemmShape decode{.m = 16, .n = 4096, .k = 4096};
  const GpuTileChoice choice = choose_gpu_tile(decode, a100());
  EXPECT_EQ(choice.tile,
            (BlockTile{.tile_m = 64, .tile_n = 64, .tile_k = 32, .warps = 8, .stages = 4}));
  ASSERT_TRUE(choice.cost.feasible);
  EXPECT_NEAR(choice.cost.seconds, 4e-6 + 33816576 / 1.555e12, kRel);
  EXPECT_EQ(choice.cost.bound, GpuBound::Dram);
  EXPECT_EQ(choice.cost, evaluate_gpu_gemm(decode, choice.tile, a100()));
}

TEST(GpuModel, ChooseTileFor4096CubedTradesWavesAgainstL2) {
  // 256x128 (8 warps, bps 1 by registers: 160 x 256 = 40960), 128x256 and 128x128 all compute
  // 655360 cycles: 468.79 us. 128x64 with 8 warps and 3 stages: shared memory 3*192*32*2 = 36864
  // -> 4, registers (32 + 32) x 256 = 16384 -> 4, warps 8: bps 4, waves of 432, 2048 blocks:
  // 4 full waves + a tail of 320. A full wave computes 4 x 128*64*4096/1024 = 131072 cycles
  // = 92.96 us but moves 432 x (192*4096*2 + 128*64*2 = 1589248) B through L2 = 95.10 us;
  // the tail (3 per SM) computes 98304 cycles = 69.72 us, moves 320 x 1589248 B = 70.45 us.
  // 4 + 4 x 95.10 + 70.45 = 454.85 us. The 4-warp twin ties (later in the list); 64x128 ties
  // too (later); 4 stages give bps 3 and 7 waves (455.98 us); 64x64 and 32x32 are L2-bound at
  // 603.6 and 1198.5 us.
  const GemmShape shape{.m = 4096, .n = 4096, .k = 4096};
  const GpuTileChoice choice = choose_gpu_tile(shape, a100());
  EXPECT_EQ(choice.tile,
            (BlockTile{.tile_m = 128, .tile_n = 64, .tile_k = 32, .warps = 8, .stages = 3}));
  const double l2_bw = 5120 * 1.41e9;
  const double seconds = 4e-6 + 4 * (432 * 1589248.0 / l2_bw) + 320 * 1589248.0 / l2_bw;
  EXPECT_NEAR(choice.cost.seconds, seconds, kRel * seconds);
  EXPECT_EQ(choice.cost.bound, GpuBound::L2);  // 2048 x 1589248 B / L2 bw > 441.6 us compute
}

TEST(GpuModel, ChooseTileWhenNothingFits) {
  GpuParams p = a100();
  p.smem_bytes_per_sm = 1024;  // the smallest candidate needs 3*(32+32)*32*2 = 12 KiB
  const GpuTileChoice choice = choose_gpu_tile({.m = 128, .n = 128, .k = 128}, p);
  EXPECT_FALSE(choice.cost.feasible);
  EXPECT_EQ(choice.cost.limit, GpuLimit::SharedMemory);
  EXPECT_EQ(choice.tile, gpu_tile_candidates().back());
}

TEST(GpuModel, CandidateListIsLargestFirst) {
  const auto list = gpu_tile_candidates();
  ASSERT_EQ(list.size(), 28u);  // 7 tiles x {8, 4} warps x {4, 3} stages
  EXPECT_EQ(list.front(),
            (BlockTile{.tile_m = 256, .tile_n = 128, .tile_k = 32, .warps = 8, .stages = 4}));
  EXPECT_EQ(list.back(),
            (BlockTile{.tile_m = 32, .tile_n = 32, .tile_k = 32, .warps = 4, .stages = 3}));
}

TEST(GpuModel, ACudaCoreKernelWithOneOutputAThreadIsBoundByItsOperandLoads) {
  // The toy GPU's SMs at 128 fp32 FMAs a cycle (Hopper's CUDA cores) with shared memory reading
  // 128 B a cycle: one 128-byte wavefront a cycle.
  GpuParams p = toy();
  p.macs_per_cycle_per_sm = 128;
  p.smem_bytes_per_cycle = 128;
  p.cuda_core_operands = true;
  // coda's tiled kernel: a 32 x 32 tile of 1024 threads (32 warps), one output each, k step 32,
  // one block (m = n = 32), k = 1024. A thread loads 2 operands per k (its A and its B element):
  // 32 warps x 2 x 1024 k = 65536 wavefronts = 65536 cycles, where its 32 x 32 x 1024 =
  // 1048576 MACs take 1048576 / 128 = 8192: operand-bound at 16 FMAs a cycle, an eighth.
  const GemmShape shape{.m = 32, .n = 32, .k = 1024, .element_bytes = 4, .output_bytes = 4};
  const BlockTile tiled{.tile_m = 32, .tile_n = 32, .tile_k = 32, .warps = 32, .stages = 1};
  const GpuKernelCost c = evaluate_gpu_gemm(shape, tiled, p);
  ASSERT_TRUE(c.feasible);
  EXPECT_NEAR(c.compute_seconds, 65536e-9, 65536e-9 * kRel);
  EXPECT_EQ(c.bound, GpuBound::Compute);
  // Not a CUDA-core kernel (a tensor-core one): its MACs alone.
  p.cuda_core_operands = false;
  EXPECT_NEAR(evaluate_gpu_gemm(shape, tiled, p).compute_seconds, 8192e-9, 8192e-9 * kRel);
  // An 8 x 8 register tile (a 128 x 128 tile of 256 threads, o = 64): 2 x 8 = 16 loads per k a
  // thread, 8 warps x 16 = 128 wavefronts per k for 128 x 128 = 16384 MACs: 128 a cycle, the
  // FMA rate, so both take 16384 x 1024 / 128 = 131072 cycles.
  p.cuda_core_operands = true;
  const GemmShape big{.m = 128, .n = 128, .k = 1024, .element_bytes = 4, .output_bytes = 4};
  const BlockTile reg8{.tile_m = 128, .tile_n = 128, .tile_k = 32, .warps = 8, .stages = 1};
  EXPECT_NEAR(evaluate_gpu_gemm(big, reg8, p).compute_seconds, 131072e-9, 131072e-9 * kRel);
}

TEST(GpuModel, AKernelWithoutALoadPipelineWaitsForItsLoadChain) {
  // The toy GPU (2 SMs, 1 block each, 1024 MACs a cycle at 1 GHz, unlimited bandwidth) with a
  // 500 ns global load. coda's WMMA kernel's tile, 64 x 64 x 32 with 4 warps, which waits for 4
  // dependent round trips a K step. m = 128, n = 64: 2 blocks, one wave. k = 3200: 100 K steps.
  GpuParams p = toy();
  p.global_load_latency_s = 500e-9;
  const GemmShape shape{.m = 128, .n = 64, .k = 3200};
  const BlockTile unpipelined{
      .tile_m = 64, .tile_n = 64, .tile_k = 32, .warps = 4, .stages = 1, .serial_load_trips = 4};
  const GpuKernelCost c = evaluate_gpu_gemm(shape, unpipelined, p);
  ASSERT_TRUE(c.feasible);
  // Compute: 64 x 64 x 3200 MACs / 1024 a cycle = 12800 cycles = 12.8 us. The chain: 100 steps x
  // 4 trips x 500 ns = 200 us, which the wave waits for.
  EXPECT_NEAR(c.compute_seconds, 12.8e-6, 12.8e-6 * kRel);
  EXPECT_NEAR(c.chain_seconds, 200e-6, 200e-6 * kRel);
  EXPECT_NEAR(c.seconds, 200e-6, 200e-6 * kRel);
  EXPECT_EQ(c.bound, GpuBound::Latency);
  // k = 3201 pads to 101 steps: 202 us. Two waves (m = 256: 4 blocks) wait for two chains.
  EXPECT_NEAR(evaluate_gpu_gemm({.m = 128, .n = 64, .k = 3201}, unpipelined, p).seconds, 202e-6,
              202e-6 * kRel);
  EXPECT_NEAR(evaluate_gpu_gemm({.m = 256, .n = 64, .k = 3200}, unpipelined, p).seconds, 400e-6,
              400e-6 * kRel);
  // A pipelined kernel (no trips), or an arch that states no latency, pays no chain: compute.
  BlockTile pipelined = unpipelined;
  pipelined.serial_load_trips = 0;
  EXPECT_NEAR(evaluate_gpu_gemm(shape, pipelined, p).seconds, 12.8e-6, 12.8e-6 * kRel);
  p.global_load_latency_s = 0;
  const GpuKernelCost unstated = evaluate_gpu_gemm(shape, unpipelined, p);
  EXPECT_EQ(unstated.chain_seconds, 0.0);
  EXPECT_EQ(unstated.bound, GpuBound::Compute);
}

TEST(GpuModel, AKernelsOwnRegisterCountSetsItsOccupancy) {
  // A100's SM (64 Ki registers, 64 warps, 32 blocks, 164 KiB shared memory). The 64 x 64 x 32
  // tile of 4 warps is estimated at 64 x 64 / 128 + 32 = 64 registers a thread: 65536 / (64 x
  // 128) = 8 blocks. Compiled, coda's WMMA kernel uses 71 (ptxas -v): 65536 / 9088 = 7.2, so 7.
  const BlockTile estimated{.tile_m = 64, .tile_n = 64, .tile_k = 32, .warps = 4, .stages = 1};
  const GemmShape shape{.m = 4096, .n = 4096, .k = 4096};
  const GpuKernelCost e = evaluate_gpu_gemm(shape, estimated, a100());
  EXPECT_EQ(e.registers_per_thread, 64u);
  EXPECT_EQ(e.blocks_per_sm, 8u);
  BlockTile compiled = estimated;
  compiled.registers_per_thread = 71;
  const GpuKernelCost c = evaluate_gpu_gemm(shape, compiled, a100());
  EXPECT_EQ(c.registers_per_thread, 71u);
  EXPECT_EQ(c.registers_per_block, 9088u);
  EXPECT_EQ(c.blocks_per_sm, 7u);
  EXPECT_EQ(c.limit, GpuLimit::Registers);
  // 64 x 64 = 4096 blocks over waves of 108 x 7 = 756: 6 waves (5 full + 316), where 8 a SM
  // (864 a wave) ran 5.
  EXPECT_EQ(c.waves, 6u);
  EXPECT_EQ(e.waves, 5u);
}

}  // namespace
}  // namespace coda::sim::analytical
