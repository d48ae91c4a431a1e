#include "sim/analytical/gpu_model.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "core/check.h"
#include "mapper/mapping.h"

namespace coda::sim::analytical {
namespace {

constexpr std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

constexpr std::array<BlockTile, 28> make_candidates() {
  constexpr std::array<std::array<std::uint32_t, 2>, 7> kTiles{
      {{256, 128}, {128, 256}, {128, 128}, {128, 64}, {64, 128}, {64, 64}, {32, 32}}};
  std::array<BlockTile, 28> out{};
  std::size_t i = 0;
  for (const auto& [tm, tn] : kTiles)
    for (const std::uint32_t warps : {8U, 4U})
      for (const std::uint32_t stages : {4U, 3U})
        out[i++] = BlockTile{.tile_m = tm, .tile_n = tn, .tile_k = 32, .warps = warps,
                             .stages = stages};
  return out;
}

constexpr std::array<BlockTile, 28> kCandidates = make_candidates();
// The loop-nest model counts calibration.tile_overhead.gemm in steps of this tile_k too.
static_assert(kCandidates.front().tile_k == static_cast<std::uint32_t>(mapper::kTileOverheadStepK));

// Seconds to move `bytes` at `bytes_per_second`; 0 = unlimited.
double transfer_seconds(double bytes, double bytes_per_second) {
  return bytes_per_second > 0.0 ? bytes / bytes_per_second : 0.0;
}

}  // namespace

std::string_view to_string(GpuLimit limit) {
  switch (limit) {
    case GpuLimit::BlockSlots: return "block slots";
    case GpuLimit::SharedMemory: return "shared memory";
    case GpuLimit::Registers: return "registers";
    case GpuLimit::Warps: return "warps";
    case GpuLimit::InvalidTile: return "invalid tile";
  }
  return "?";
}

std::string_view to_string(GpuBound bound) {
  switch (bound) {
    case GpuBound::Compute: return "compute";
    case GpuBound::L2: return "l2";
    case GpuBound::Dram: return "dram";
    case GpuBound::Launch: return "launch";
    case GpuBound::Latency:
      return "latency";
  }
  return "?";
}

GpuKernelCost evaluate_gpu_gemm(const GemmShape& shape, const BlockTile& tile,
                                const GpuParams& params) {
  CODA_CHECK(params.sms > 0 && params.clock_hz > 0.0 && params.macs_per_cycle_per_sm > 0.0);
  CODA_CHECK(params.max_blocks_per_sm > 0 && params.max_warps_per_sm > 0);
  CODA_CHECK(shape.batch > 0 && shape.m > 0 && shape.n > 0 && shape.k > 0);
  CODA_CHECK(shape.element_bytes > 0);

  GpuKernelCost out;
  const std::uint64_t tm = tile.tile_m, tn = tile.tile_n, tk = tile.tile_k;
  const std::uint64_t threads = std::uint64_t{32} * tile.warps;
  if (tm == 0 || tn == 0 || tk == 0 || tile.warps == 0 || tile.stages == 0 ||
      threads > kMaxThreadsPerBlock)
    return out;  // limit = InvalidTile

  // Resources per block and how many blocks fit on one SM.
  out.smem_bytes_per_block = tile.stages * (tm + tn) * tk * shape.element_bytes;
  const std::uint64_t regs_per_thread =
      tile.registers_per_thread > 0 ? tile.registers_per_thread
                                    : ceil_div(tm * tn, threads) + kRegisterOverheadPerThread;
  out.registers_per_thread = static_cast<std::uint32_t>(std::min<std::uint64_t>(
      regs_per_thread, std::numeric_limits<std::uint32_t>::max()));
  out.registers_per_block = regs_per_thread * threads;
  if (regs_per_thread > params.max_registers_per_thread) {
    out.limit = GpuLimit::Registers;
    return out;
  }
  // Ties name the first of shared memory, registers, warps, block slots.
  std::uint64_t fit = params.smem_bytes_per_sm / out.smem_bytes_per_block;
  out.limit = GpuLimit::SharedMemory;
  const auto tighter = [&](std::uint64_t candidate, GpuLimit limit) {
    if (candidate < fit) {
      fit = candidate;
      out.limit = limit;
    }
  };
  tighter(params.registers_per_sm / out.registers_per_block, GpuLimit::Registers);
  tighter(params.max_warps_per_sm / tile.warps, GpuLimit::Warps);
  tighter(params.max_blocks_per_sm, GpuLimit::BlockSlots);
  out.blocks_per_sm = static_cast<std::uint32_t>(fit);  // <= max_blocks_per_sm
  if (fit == 0) return out;
  out.feasible = true;
  out.occupancy = static_cast<double>(fit * tile.warps) / params.max_warps_per_sm;

  // Grid and waves.
  const std::uint64_t tiles_m = ceil_div(shape.m, tm), tiles_n = ceil_div(shape.n, tn);
  out.blocks = shape.batch * tiles_m * tiles_n;
  const std::uint64_t wave = std::uint64_t{params.sms} * fit;
  const std::uint64_t full_waves = out.blocks / wave;
  const std::uint64_t tail = out.blocks - full_waves * wave;  // blocks in a partial last wave
  out.waves = full_waves + (tail > 0 ? 1 : 0);
  out.wave_efficiency =
      static_cast<double>(out.blocks) / static_cast<double>(out.waves * wave);

  // Compute: the busiest SM of a wave of w blocks holds r = min(fit, ceil(w / sms)) of them and
  // shares its rate over them; r blocks of `warps` warps reach min(1, r x warps / 4) of it.
  const double block_macs =
      static_cast<double>(tm * tn * tk) *
      (static_cast<double>(ceil_div(shape.k, tk)) + params.tile_overhead_steps);
  // A CUDA-core block's operand loads, in cycles of the shared-memory/L1 path (header comment).
  double block_operand_cycles = 0.0;
  if (params.cuda_core_operands && params.smem_bytes_per_cycle > 0) {
    const double block_threads = 32.0 * tile.warps;
    const double outputs = std::max(1.0, static_cast<double>(tm * tn) / block_threads);
    const double k_steps = block_macs / static_cast<double>(tm * tn);
    block_operand_cycles = static_cast<double>(tile.warps) * 2.0 * std::sqrt(outputs) * k_steps *
                           kWavefrontBytes / params.smem_bytes_per_cycle;
  }
  auto wave_compute_s = [&](std::uint64_t w) {
    const std::uint64_t r = std::min(fit, ceil_div(w, params.sms));
    const double reach = std::min(1.0, static_cast<double>(r * tile.warps) / kSubPartitionsPerSm);
    const double macs_s = static_cast<double>(r) * block_macs /
                          (params.macs_per_cycle_per_sm * reach * params.clock_hz);
    return std::max(macs_s, static_cast<double>(r) * block_operand_cycles / params.clock_hz);
  };
  // Traffic of a wave of w blocks.
  const double eb = shape.element_bytes, ob = shape.output_bytes;
  const double a_unrolled = static_cast<double>(shape.m * shape.k) * eb;
  const double a_batch =
      shape.a_dram_bytes > 0 ? std::min(shape.a_dram_bytes, a_unrolled) : a_unrolled;
  const double b_eb = shape.b_element_bytes > 0 ? shape.b_element_bytes : eb;
  const double b_batch = static_cast<double>(shape.k * shape.n) * b_eb;
  const double c_batch = static_cast<double>(shape.m * shape.n) * ob;
  const double a_panel = static_cast<double>(tm * shape.k) * eb;
  const double b_panel = static_cast<double>(tn * shape.k) * b_eb;
  double block_inputs = a_panel + b_panel;
  if (const std::uint64_t c = params.cluster_multicast; c > 1) {
    const double cd = static_cast<double>(c);
    if (tiles_m >= c) block_inputs = std::min(block_inputs, a_panel + b_panel / cd);  // share B
    if (tiles_n >= c) block_inputs = std::min(block_inputs, a_panel / cd + b_panel);  // share A
  }
  const double block_l2 = block_inputs + static_cast<double>(tm * tn) * ob;
  const bool fits_l2 = a_batch + b_batch + c_batch <= static_cast<double>(params.l2_bytes);
  const double blocks = static_cast<double>(out.blocks);
  const double batches = static_cast<double>(shape.batch);
  auto wave_dram = [&](std::uint64_t w) {
    const double share = static_cast<double>(w) / blocks;
    if (fits_l2) return share * batches * (a_batch + b_batch + c_batch);
    const std::uint64_t per_batch = tiles_m * tiles_n;
    // The batches the wave covers: a wave of at least a batch's blocks covers w / per_batch of
    // them (waves run the blocks in order, so over all waves the batches add up to `batch`, each
    // read once; counting every batch a wave touches as whole would read a batch split between
    // two waves twice); a smaller wave, one (or a part of two).
    const double spans =
        w >= per_batch ? static_cast<double>(w) / static_cast<double>(per_batch) : 1.0;
    const std::uint64_t in_batch = std::min(w, per_batch);
    const std::uint64_t group =
        params.raster_group > 0 ? std::min<std::uint64_t>(params.raster_group, tiles_m) : tiles_m;
    const std::uint64_t groups = ceil_div(in_batch, group * tiles_n);
    const std::uint64_t a_panels = std::min({in_batch, groups * group, tiles_m});
    const std::uint64_t b_panels = std::min(ceil_div(in_batch, group), tiles_n);
    return spans * static_cast<double>(a_panels) * a_batch / static_cast<double>(tiles_m) +
           spans * static_cast<double>(b_panels) * b_batch / static_cast<double>(tiles_n) +
           share * batches * c_batch;
  };
  // A block's chain of dependent load round trips, when the kernel does not pipeline its loads.
  const double chain_s = tile.serial_load_trips > 0 && params.global_load_latency_s > 0
                             ? static_cast<double>(ceil_div(shape.k, tk)) *
                                   static_cast<double>(tile.serial_load_trips) *
                                   params.global_load_latency_s
                             : 0.0;
  // A wave's compute, L2, DRAM and chain overlap; waves run one after another.
  auto wave_seconds = [&](std::uint64_t w, double compute_s, double dram) {
    const double l2 = static_cast<double>(w) * block_l2;
    return std::max({compute_s, transfer_seconds(l2, params.l2_bytes_per_second),
                     transfer_seconds(dram, params.dram_bytes_per_second), chain_s});
  };
  double waves_s = 0.0;
  if (full_waves > 0) {
    const double compute_s = wave_compute_s(wave), dram = wave_dram(wave);
    const double n = static_cast<double>(full_waves);
    out.compute_seconds += n * compute_s;
    out.dram_bytes += n * dram;
    waves_s += n * wave_seconds(wave, compute_s, dram);
  }
  if (tail > 0) {
    const double compute_s = wave_compute_s(tail), dram = wave_dram(tail);
    out.compute_seconds += compute_s;
    out.dram_bytes += dram;
    waves_s += wave_seconds(tail, compute_s, dram);
  }
  out.l2_bytes = blocks * block_l2;
  out.chain_seconds = static_cast<double>(out.waves) * chain_s;

  out.seconds = params.launch_overhead_s + waves_s;
  out.cycles = out.seconds * params.clock_hz;
  const double useful_macs = batches * static_cast<double>(shape.m) *
                             static_cast<double>(shape.n) * static_cast<double>(shape.k);
  out.utilization = useful_macs / (static_cast<double>(params.sms) *
                                   params.macs_per_cycle_per_sm * params.clock_hz * out.seconds);

  // Bound: the largest of the kernel's totals; launch when it outweighs all the waves.
  const double l2_s = transfer_seconds(out.l2_bytes, params.l2_bytes_per_second);
  const double dram_s = transfer_seconds(out.dram_bytes, params.dram_bytes_per_second);
  if (params.launch_overhead_s > waves_s)
    out.bound = GpuBound::Launch;
  else if (out.chain_seconds > std::max({out.compute_seconds, l2_s, dram_s}))
    out.bound = GpuBound::Latency;
  else if (dram_s > out.compute_seconds && dram_s >= l2_s)
    out.bound = GpuBound::Dram;
  else if (l2_s > out.compute_seconds)
    out.bound = GpuBound::L2;
  else
    out.bound = GpuBound::Compute;
  return out;
}

std::span<const BlockTile> gpu_tile_candidates() { return kCandidates; }

GpuTileChoice choose_gpu_tile(const GemmShape& shape, const GpuParams& params) {
  GpuTileChoice best{kCandidates.back(), {}};
  for (const BlockTile& tile : kCandidates) {
    const GpuKernelCost cost = evaluate_gpu_gemm(shape, tile, params);
    if (!cost.feasible) continue;
    if (!best.cost.feasible || cost.seconds < best.cost.seconds * (1.0 - 1e-9))
      best = {tile, cost};
  }
  if (!best.cost.feasible) best.cost = evaluate_gpu_gemm(shape, best.tile, params);
  return best;
}

}  // namespace coda::sim::analytical
