#pragma once
// Prices the ops the schedule placed on a unit other than a systolic array, by filling the plain
// parameters of the closed-form models (gpu_model.h, vector_model.h, collective_model.h) from the
// HardwareModel, and adds every op's energy. docs/cost_models.md derives the models; this file
// only says which hardware figure feeds which parameter:
//
//   tensor cores  sms = cores; MACs per cycle per SM = HardwareModel::achievable_macs_per_cycle
//                 at the op's precision through the arch's GEMM path (the peak x compute_fraction
//                 x tensor_issue x sustained_clock / clock); shared memory = the innermost
//                 core-level memory holding inputs (capacity x instances); L2 = the first
//                 chip-level memory; DRAM = the achievable DRAM bandwidth.
//   vector unit   ops per cycle = the achievable vector rate x cores; its operands stream from
//                 and to DRAM, except fused intermediates (the schedule already took them off). A
//                 softmax or norm reads its input once when a row fits in one core's on-chip
//                 memory, else twice (statistics, then normalisation).
//   transfer      a copy through DRAM: (reads + writes) / the achievable DRAM bandwidth.
//   attention     unfused: decompose-attention's Q K^T, softmax and P V, each priced as above,
//                 one after another (cycles, traffic and energy summed; S and P go through DRAM).
//                 Fused (FlashAttention): fused_attention_cost below.
//   collective    the interconnect: one chip's per-direction bandwidth x link_fraction and its
//                 per-hop latency; all-reduce takes the faster of ring and tree (as NCCL's tuner
//                 chooses by size), the others the ring.
//
// Every op that launches a kernel of its own (not an epilogue or a later link of a fused chain:
// ScheduledOp::own_kernel) pays its kind's fixed cost, HardwareModel::kernel_fixed_seconds (on
// GPUs 4 us unless the arch's calibration states it), added to its time as stall cycles; the op
// is latency-bound when that fixed cost outlasts the rest of its time.
//
// Energy of an op = MACs x energy per MAC at its precision + vector element ops x energy per op
// + on-chip bytes x the per-byte energy of the level they cross + DRAM bytes x DRAM energy per
// byte + static power x the op's time (arch/energy.h gives every figure).

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "arch/hardware_model.h"
#include "core/data_type.h"
#include "core/results.h"
#include "mapper/schedule.h"
#include "sim/analytical/collective_model.h"
#include "sim/analytical/gpu_model.h"
#include "sim/analytical/systolic_model.h"

namespace coda::sim::analytical {

// The tensor-core model's parameters at `precision` through `path` (see above), with the fixed
// cost of a GEMM kernel as its launch overhead. Precondition: hw has a tensor-core unit.
GpuParams gpu_params(DataType precision, const arch::HardwareModel& hw, arch::TensorPath path);

// Adds a kernel's fixed cost to a priced op: its time grows by it (as stall cycles), and the op is
// latency-bound when the fixed cost outlasts the rest of its time. Call before add_energy.
void add_fixed_cost(results::OpResult& out, double fixed_seconds, const arch::HardwareModel& hw);

// The fixed cost of the kernel `op` launches (0 when it runs inside an earlier op's kernel, for a
// reshape, and for a collective that crosses no link); unfused attention: its parts' sum. The
// SystemC engine adds the same launch time.
double op_fixed_seconds(const mapper::ScheduledOp& op, const arch::HardwareModel& hw);

struct PricedCollective {
  CollectiveCost cost;  // without the kernel's fixed cost
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::Ring;
  std::optional<CollectiveProtocol> protocol;  // set when NCCL's tuner priced it
};
// A collective of `bytes` (collective_model.h's S) among `ranks` chips on the arch's
// interconnect at its achievable bandwidth. When the interconnect states `nccl:` and the kind is
// one NCCL's tuner prices (all-reduce, reduce-scatter, all-gather): the cheapest of its
// (algorithm, protocol) pairs (evaluate_nccl), of `algorithm` when given; nullopt when the arch
// states no pair of `algorithm` for the kind. Otherwise the alpha-beta model on the stated
// latency: `algorithm` nullopt is ring, for all-reduce the faster of ring and tree, for
// all-to-all the direct exchange.
// Precondition: the arch has an interconnect.
std::optional<PricedCollective> price_collective(CollectiveKind kind, std::uint64_t bytes,
                                                 std::uint32_t ranks,
                                                 std::optional<CollectiveAlgorithm> algorithm,
                                                 const arch::HardwareModel& hw);

// One fused (FlashAttention-style) attention kernel (docs/cost_models.md, "Fused attention"):
//   matrix   tensor cores: MACs of the kept pairs (forward d + e per pair: Q K^T and P V, e the
//            value dim, d without one; backward 3 d + 2 e: FlashAttention-2's recompute of S and
//            its four gradient GEMMs) / the achievable
//            rate through the implementation's path (fa2: mma_sync, fa3: wgmma; backward x
//            attention_backward), with a kv head's queries padded to the MMA's m (16 or 64) and
//            the grid's wave efficiency (blocks of `block` queries; a grid under one wave splits
//            the keys), and a block's prologue and epilogue (calibration.tile_overhead.attention
//            key-block steps on top of the mean kept key blocks per block). A systolic array:
//            `systolic_matrix_seconds` as given (fused_attention passes the compute cycles of
//            the two GEMMs; backward, of the four gradient GEMMs x 5/4, the recompute of S).
//   vector   the online softmax over the kept pairs in fp32: 5 ops + 1 exp (+ e / block rescale
//            ops forward) per pair, at the achievable vector and special-function rates; a
//            soft cap adds tanh's ops and one multiply a pair (backward: that recompute and
//            3 ops of its derivative, dS x (1 - t^2)).
//   overlap  fa2: matrix + vector (a block's softmax runs between its GEMMs on the same warps);
//            fa3: max(matrix, vector) + (1 - attention_overlap) x min(matrix, vector) (ping-pong
//            warpgroups hide that share of the shorter); systolic arrays: max (separate units).
//   time     fixed cost (attention kernel, when own_kernel) + max(compute, DRAM bytes / the
//            achievable DRAM bandwidth).
//   decode   (q_len 1) on an arch whose decode_attention is per_head (MMHA's kind): the MACs at
//            the vector unit's fp32 rate (one block per query head, waves over the SMs), plus the
//            softmax (no overlap), and K and V re-read by each further query head of a GQA
//            group: (group - 1) x b kv_heads kv_len (d + e) x bytes x decode_kv_reread more DRAM
//            bytes. fa2_forward (FlashAttention-2's prefill kernel run with the one query): each
//            query costs the kernel's padded tile rows (fa2_forward_tile: 128, 64 under
//            split-KV) of matrix and softmax work at fa2's rate, one block per (sequence, query
//            head) and split (fa2_num_splits), K and V re-read as per_head, and under split-KV
//            the partial outputs (fp32, e + 1 a query a split) written and read back by a
//            combine kernel that pays the vector fixed cost.
struct AttentionShape {
  std::uint64_t batch = 1, heads = 1, kv_heads = 1, q_len = 1, kv_len = 1, head_dim = 1;
  std::uint64_t value_dim = 0;  // V's and O's head dim (e); 0: head_dim
  std::uint64_t pairs = 0;  // query-key pairs the mask keeps, over batch and heads
  std::uint64_t block = 128;  // queries (and keys) per thread block
  DataType precision = DataType::Fp16;
  DataType softmax_precision = DataType::Fp32;  // used when the vector unit has no fp32
  double reads = 0;   // DRAM bytes: forward Q, K, V; backward also O and dO
  double writes = 0;  // forward O; backward dQ, dK, dV
  bool backward = false;
  bool softcap = false;  // logit soft-capping (AttentionSpec::softcap): more vector work a pair
};
// The mapping entries of a fused-attention op result that name its backward's helper kernels'
// DRAM bytes (FusedAttentionCost::helper_bytes less and of its helper_writes), so an engine that
// times the op's traffic itself runs them after the main kernel (sim/timing/chip_plan.h).
inline constexpr std::string_view kHelperReadBytes = "helper_read_bytes";
inline constexpr std::string_view kHelperWriteBytes = "helper_write_bytes";
// How many helper kernels that backward runs (the dO.O pass before the main kernel, dQ's
// conversion after it), each at a vector kernel's fixed cost.
inline constexpr double kBackwardHelperKernels = 2;
struct FusedAttentionCost {
  double seconds = 0;
  double matrix_seconds = 0, vector_seconds = 0, compute_seconds = 0, dram_seconds = 0;
  double fixed_seconds = 0;
  // A FlashAttention-family backward's two helper kernels (fa2 and fa3 classes on tensor cores):
  // their DRAM bytes (in dram_bytes too), the bytes of those they write, and their time with
  // their fixed costs, after the main kernel's (unit_costs.cpp cites the kernels).
  double helper_bytes = 0, helper_writes = 0, helper_seconds = 0;
  double dram_bytes = 0;  // reads + writes, and per_head decode's K/V re-reads from DRAM
  bool per_head = false;  // priced as per_head decode attention
  bool fa2_forward = false;  // priced as fa2_forward decode attention
  std::uint64_t splits = 1;  // fa2_forward: the split-KV splits (1: the whole-key kernel)
  double wave_efficiency = 1;
  double vector_ops = 0;
  results::Bound bound = results::Bound::Compute;
};
// FlashAttention-2's forward-kernel tile (rows of queries x keys a thread block takes) for a head
// dim, the SM's shared memory in bytes and whether it is the split-KV kernel (unit_costs.cpp cites
// the source).
struct Fa2ForwardTile {
  std::uint64_t block_m = 128, block_n = 64;
};
Fa2ForwardTile fa2_forward_tile(std::uint64_t head_dim, std::uint64_t smem_bytes_per_sm,
                                bool split_kv);
// FlashAttention-2's split-KV count (flash_api.cpp's num_splits_heuristic) for a grid of
// `query_blocks` (batch x heads x query blocks of 64) over `sms` SMs and `key_blocks` key blocks
// of the split kernel's kBlockN: 1 when the grid fills 80% of the SMs.
std::uint64_t fa2_num_splits(std::uint64_t query_blocks, std::uint64_t sms,
                             std::uint64_t key_blocks, std::uint64_t max_splits);

// `systolic_matrix_seconds`: the matrix time on an arch without tensor cores (nullopt on GPUs).
// `why` is set (and the cost meaningless) when the tensor cores lack the precision.
FusedAttentionCost fused_attention_cost(const AttentionShape& shape, arch::AttentionImpl impl,
                                        const arch::HardwareModel& hw, bool own_kernel,
                                        std::optional<double> systolic_matrix_seconds,
                                        std::string& why);

// nullopt with `why` set when the op cannot run as placed (a GEMM whose every thread-block tile
// overflows the SM).
// `memo`, when given, prices the systolic parts of an unfused attention (one per distinct shape
// in a run; sim/analytical/systolic_model.h); it must have been made for `hw`.
std::optional<results::OpResult> evaluate_placed(const mapper::ScheduledOp& op,
                                                 const arch::HardwareModel& hw, std::string& why,
                                                 SystolicMemo* memo = nullptr);

// A contraction with a loop-nest mapping (op.loop_nest), priced from its loop-nest cost: cycles
// (the larger of compute, fill and drain included, and every level's bandwidth-bound time),
// each level's traffic per tensor, MAC and per-level energy (mapper/loop_nest_model.h). Tensor
// cores add the kernel's fixed cost (op_fixed_seconds) as the closed form does, and the op is
// then latency-bound when it outlasts the loop nest. Fused intermediates come off
// the DRAM traffic (remove_fused_traffic) and energy adds static power over the op's time.
results::OpResult evaluate_loop_nest(const mapper::ScheduledOp& op, const arch::HardwareModel& hw);

// Takes a contraction's on-chip operands (op.dram_reads_saved, op.dram_writes_saved: fused
// intermediates, kept activations, cached weights) off its priced DRAM traffic, at most what was
// priced; reads come off the streamed operand (ifmap, inputs) first. The op's time is not
// recomputed. For tensor cores and loop-nest mappings; the systolic closed form prices
// op.on_chip inside its fold walk instead. Call before add_energy.
void remove_fused_traffic(results::OpResult& result, const mapper::ScheduledOp& op);

// Adds the op's energy to result.cost.energy (see the header comment). `vector_ops` counts the
// vector unit's element operations.
void add_energy(results::OpResult& result, const mapper::ScheduledOp& op, double vector_ops,
                const arch::HardwareModel& hw);

// The time of kernels that run one after another on one GPU when the host issues them eagerly,
// kernel i no earlier than i x `issue` after the first (calibration.eager_issue_time): kernel i
// starts at max(the end of kernel i - 1, i x issue) and runs its own `kernels[i]` seconds. With
// issue 0 (a CUDA graph) it is their sum; with kernels shorter than `issue`, the host's n x issue
// (plus the last kernel). Zero-time entries launch nothing and take no issue slot.
double host_issued_seconds(std::span<const double> kernels, double issue);

}  // namespace coda::sim::analytical
