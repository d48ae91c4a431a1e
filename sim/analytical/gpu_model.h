#pragma once
// A closed-form model of one tensor-core GEMM kernel on a GPU, of the CUTLASS kind: a grid of
// thread blocks, each computing one tm x tn tile of C by stepping through K in tk slices staged
// through shared memory. docs/cost_models.md derives every formula; in short:
//
// Grid. blocks = batch x ceil(m / tm) x ceil(n / tn); tiles are numbered m-tile fastest, then
// n-tile, then batch (CUTLASS's identity threadblock swizzle: blockIdx.x walks M); with a raster
// group of G, the m-tiles are cut into groups of G' = min(G, tiles_m) and the blocks walk a
// group's G' m-tiles, then the next n-tile, and the next group after its last n-tile (Triton's
// GROUP_SIZE_M order).
//
// Resources per block. Shared memory = stages x (tm + tn) x tk x element_bytes (A and B slices
// of every pipeline stage). Registers per thread = ceil(tm x tn / threads) 32-bit accumulators
// + kRegisterOverheadPerThread (addresses, loop counters, fragments), or the compiled kernel's own
// count where the tile states it (BlockTile::registers_per_thread); threads = 32 x warps.
// (fp32/int32 accumulators take one register each; allocation granularity is ignored.)
//
// Occupancy. blocks_per_sm = min(max_blocks_per_sm, smem_per_sm / smem_per_block,
// registers_per_sm / registers_per_block, max_warps_per_sm / warps). Zero means the tile does
// not fit: an infeasible *value* naming the limiting resource, never an exception.
//
// Waves. A wave is sms x blocks_per_sm blocks; waves = ceil(blocks / wave). Wave efficiency =
// blocks / (waves x wave). Compute: a block does tm x tn x ceil(k / tk) x tk MACs (padding
// counts), and its prologue and epilogue cost tile_overhead_steps more K steps of tile_k. An SM
// shares macs_per_cycle_per_sm over its resident blocks, and a wave lasts as long
// as its busiest SM: r = min(blocks_per_sm, ceil(W / sms)) blocks for a wave of W blocks, so
// r x block MACs / macs_per_cycle_per_sm cycles (a full wave: r = blocks_per_sm). A block
// reaches at most warps / kSubPartitionsPerSm of the SM's rate (one warp per tensor-core
// sub-partition), so r blocks of w warps get min(1, r w / 4) of it. Hence one block past a full
// wave with blocks_per_sm = 1 costs a whole extra wave (wave quantization, NVIDIA's Matrix
// Multiplication Background guide).
//
// Memory. L2 -> SM: every block reads (tm + tn) x k input elements and writes tm x tn outputs.
// With clusters of c blocks multicasting (GpuParams::cluster_multicast), c blocks adjacent along M
// share one B panel, or adjacent along N one A panel, and fetch it from L2 once: a block reads
// min(tm + tn / c, tm / c + tn) x k elements (an orientation needs c tiles along its dimension).
// DRAM: if one batch's A + B + C fits in L2, only compulsory traffic (A and B read once, C
// written once; a convolution's A is its feature map, GemmShape::a_dram_bytes). Otherwise
// blocks of one wave share what they read (the resident blocks walk K together, so their
// panels' K slices meet in L2) and nothing is reused across waves. A wave of W blocks spans
// ceil(W / (tiles_m x tiles_n)) batches; in each, with w = min(W, tiles_m x tiles_n) blocks and
// G' the raster group (tiles_m for the identity order), it covers g = ceil(w / (G' x tiles_n))
// groups and reads min(w, g x G', tiles_m) A row-panels (a panel: A's DRAM bytes / tiles_m; a
// conv's adjacent windows meet in L2, so the halo is not counted) and min(ceil(w / G'),
// tiles_n) B column-panels. C is written once, shared out over waves by their block counts.
//
// Operand delivery (CUDA-core kernels only: GpuParams::cuda_core_operands). A thread holding o =
// tm x tn / threads outputs as a square register tile loads 2 sqrt(o) operands per k (its
// column of A and row of B; 2 for one output each), one warp-wide load instruction apiece, and
// each takes the shared-memory/L1 data path for a whole kWavefrontBytes wavefront however few
// of its bytes are distinct (a broadcast of one A element costs as much as 32 of B). So a block
// needs warps x 2 sqrt(o) x k_steps wavefronts (k_steps with the tile overhead, as for MACs),
// at smem_bytes_per_cycle / kWavefrontBytes a cycle; a wave's compute time is the larger of its
// MACs and its operand delivery. With 128 B/cycle and one output a thread that is 16 FMAs a
// cycle per SM, an eighth of Hopper's 128; an 8 x 8 register tile (o = 64) reaches 128.
//
// Load latency (BlockTile::serial_load_trips > 0 only). A kernel without a software pipeline
// loads a K step's A and B slices and waits for them before its math, in t dependent global
// round trips (a load, then the shared-memory store that consumes it, before the next load
// issues). Its blocks then take at least ceil(k / tk) x t x global_load_latency_s each, whatever
// the bandwidth: the chain. Resident blocks overlap one another's chains, so a wave lasts at
// least one chain. The arithmetic, stores and barriers between the loads are not counted, so
// the chain is a lower bound. Pipelined kernels (t = 0: cp.async or TMA stages, every library
// candidate) hide the latency behind the math and pay no chain.
//
// Time = launch_overhead_s + sum over waves of max(compute, L2 bytes / L2 bandwidth,
// DRAM bytes / DRAM bandwidth, chain): within a wave they overlap, waves run one after another.

#include <cstdint>
#include <span>
#include <string_view>

#include "arch/arch_spec.h"

namespace coda::sim::analytical {

// The GPU at one precision (the op's). Plain numbers; the lead's adapter fills them from
// arch::HardwareModel.
struct GpuParams {
  std::uint32_t sms = 0;
  double clock_hz = 0.0;
  double macs_per_cycle_per_sm = 0.0;        // tensor-core MACs at the op's precision
  std::uint64_t smem_bytes_per_sm = 0;       // usable by blocks (the shared-memory carve-out)
  std::uint32_t registers_per_sm = 0;        // 32-bit registers
  std::uint32_t max_registers_per_thread = 255;  // every NVIDIA GPU since sm_35
  std::uint32_t max_blocks_per_sm = 0;
  std::uint32_t max_warps_per_sm = 0;
  std::uint64_t l2_bytes = 0;
  double l2_bytes_per_second = 0.0;          // L2 -> SMs; 0 = unlimited
  double dram_bytes_per_second = 0.0;        // 0 = unlimited
  // The kernel's fixed cost (launch, ramp-up, tail): arch::kDefaultGpuLaunchSeconds unless the
  // arch's calibration states one (unit_costs.h gpu_params fills it from HardwareModel).
  double launch_overhead_s = arch::kDefaultGpuLaunchSeconds;
  // A block's prologue and epilogue (pipeline fill, C's write-back) in K steps of tile_k: a
  // block of ceil(k / tile_k) steps computes for ceil(k / tile_k) + tile_overhead_steps.
  double tile_overhead_steps = 0.0;
  // Grouped rasterization: blocks walk this many m-tiles, then the next n-tile (0: the identity
  // order, m-tile fastest over a whole batch). arch calibration.raster_group.
  std::uint32_t raster_group = 0;
  // Thread-block clusters of this many blocks multicast the operand panel they share (Hopper's
  // TMA multicast; arch calibration.cluster_multicast, wgmma path only): see "Memory" above.
  // 1: every block fetches both of its panels from L2.
  std::uint32_t cluster_multicast = 1;
  // Shared memory's read bandwidth per SM (L1 shares its data path since Volta), bytes per
  // cycle: the innermost core-level memory's read_bandwidth; 0 = not stated. Only a CUDA-core
  // kernel is held to it (cuda_core_operands).
  double smem_bytes_per_cycle = 0.0;
  // A load that misses L1 and L2 (arch: the tensor-core unit's global_load_latency), seconds;
  // 0 = not stated, and no chain is priced (see "Load latency" above).
  double global_load_latency_s = 0.0;
  // A CUDA-core kernel (fp32 FMAs, no tensor cores): each thread loads its A and B operands from
  // shared memory or L1 one element per instruction, as coda's own tiled and naive kernels do.
  // False for tensor-core kernels, whose operand paths (ldmatrix, wgmma's descriptors) this
  // model does not price.
  bool cuda_core_operands = false;
};

struct GemmShape {
  std::uint64_t batch = 1;
  std::uint64_t m = 0;
  std::uint64_t n = 0;
  std::uint64_t k = 0;
  std::uint32_t element_bytes = 2;  // A and B
  std::uint32_t output_bytes = 2;   // C, per element
  // A's bytes in DRAM per batch entry; 0: m x k x element_bytes (a GEMM). An implicit-GEMM
  // convolution's A is its feature map: DRAM holds it once and the kernel unrolls it on the way
  // to the SMs (the window's re-reads are L2 traffic, block_l2 below), so its compulsory DRAM
  // read is the feature map, not the m x k unrolled matrix. Never more than the unrolled
  // matrix: a strided 1x1 conv skips rows and pixels of its map (the touched box counts them).
  double a_dram_bytes = 0;
  // B's bytes per element as stored, where B is narrower than the compute type (a weight-only
  // quantized weight with its scales, unpacked in registers as Marlin and TensorRT-LLM's
  // weight-only kernels do); 0: element_bytes. B's DRAM and L2 traffic take it.
  double b_element_bytes = 0;
};

struct BlockTile {
  std::uint32_t tile_m = 128;
  std::uint32_t tile_n = 128;
  std::uint32_t tile_k = 32;
  std::uint32_t warps = 4;
  std::uint32_t stages = 3;  // shared-memory pipeline depth
  // Dependent global round trips a K step waits for before its math (see "Load latency"); 0: the
  // kernel pipelines its loads (every library candidate).
  std::uint32_t serial_load_trips = 0;
  // Registers a thread of the kernel uses, as its compiler reports them (ptxas -v); 0: the
  // estimate above (accumulators + kRegisterOverheadPerThread), for kernels not yet compiled.
  std::uint32_t registers_per_thread = 0;
  friend constexpr bool operator==(const BlockTile&, const BlockTile&) = default;
};

// Registers a thread needs besides its accumulators.
inline constexpr std::uint32_t kRegisterOverheadPerThread = 32;
inline constexpr std::uint32_t kMaxThreadsPerBlock = 1024;  // CUDA's limit on every GPU
// Tensor-core sub-partitions (processing blocks) per SM, Volta through Hopper.
inline constexpr std::uint32_t kSubPartitionsPerSm = 4;
// Bytes one pass of the shared-memory/L1 data path serves: 32 banks x 4 bytes (CUDA C++
// Programming Guide, "Shared Memory"); a warp's load of up to 4 bytes a thread is one pass.
inline constexpr double kWavefrontBytes = 128;

// What capped blocks_per_sm; when nothing fits it is why the tile is infeasible.
enum class GpuLimit : std::uint8_t {
  BlockSlots,     // max_blocks_per_sm
  SharedMemory,
  Registers,      // per SM, or per thread above max_registers_per_thread
  Warps,          // max_warps_per_sm
  InvalidTile,    // a zero dimension, or more than kMaxThreadsPerBlock threads
};
std::string_view to_string(GpuLimit limit);

// Latency: the waves' load chains outlast their compute and traffic (see "Load latency").
enum class GpuBound : std::uint8_t { Compute, L2, Dram, Launch, Latency };
std::string_view to_string(GpuBound bound);

struct GpuKernelCost {
  bool feasible = false;
  GpuLimit limit = GpuLimit::InvalidTile;  // see GpuLimit
  // Resources (filled in even when infeasible, so the caller can say by how much).
  std::uint64_t smem_bytes_per_block = 0;
  std::uint32_t registers_per_thread = 0;
  std::uint64_t registers_per_block = 0;
  std::uint32_t blocks_per_sm = 0;
  double occupancy = 0.0;                  // resident warps / max_warps_per_sm
  // Grid.
  std::uint64_t blocks = 0;
  std::uint64_t waves = 0;
  double wave_efficiency = 0.0;            // blocks / (waves x sms x blocks_per_sm)
  // Time: seconds = launch overhead + per-wave overlap (see the header comment).
  double seconds = 0.0;
  double cycles = 0.0;                     // seconds x clock_hz
  double compute_seconds = 0.0;            // sum of the waves' compute times: no launch, no memory
  double chain_seconds = 0.0;              // sum of the waves' load chains (0: loads pipelined)
  double l2_bytes = 0.0;                   // L2 <-> SM traffic
  double dram_bytes = 0.0;
  double utilization = 0.0;                // batch*m*n*k / (sms x macs/cycle x clock x seconds)
  GpuBound bound = GpuBound::Compute;
  friend bool operator==(const GpuKernelCost&, const GpuKernelCost&) = default;
};

// Pure, thread-safe, O(1), no allocation. Preconditions (CODA_CHECK): params.sms, clock_hz,
// macs_per_cycle_per_sm, max_blocks_per_sm, max_warps_per_sm > 0; shape batch, m, n, k,
// element_bytes > 0. A tile that cannot run is an infeasible result, not a failure.
GpuKernelCost evaluate_gpu_gemm(const GemmShape& shape, const BlockTile& tile,
                                const GpuParams& params);

// The fixed candidate list choose_gpu_tile searches, in preference order: tiles 256x128,
// 128x256, 128x128, 128x64, 64x128, 64x64, 32x32 (tile_k 32), each with 8 then 4 warps and 4 then
// 3 stages.
std::span<const BlockTile> gpu_tile_candidates();

struct GpuTileChoice {
  BlockTile tile;
  GpuKernelCost cost;  // cost.feasible is false when no candidate fits
};

// The feasible candidate with the least predicted time; ties (within a relative 1e-9) go to the
// earlier candidate, so the larger tile, then more warps, then more stages. When none is
// feasible, returns the last candidate with its infeasible cost. O(candidates), no allocation.
GpuTileChoice choose_gpu_tile(const GemmShape& shape, const GpuParams& params);

}  // namespace coda::sim::analytical
