#pragma once
// Prices the ops the schedule placed on a unit other than a systolic array, by filling the plain
// parameters of the closed-form models (gpu_model.h, vector_model.h, collective_model.h) from the
// HardwareModel, and adds every op's energy. docs/cost_models.md derives the models; this file
// only says which hardware figure feeds which parameter:
//
//   tensor cores  sms = cores; MACs per cycle per SM = the unit's rate at the op's precision x
//                 count; shared memory = the innermost core-level memory holding inputs
//                 (capacity x instances); L2 = the first chip-level memory; DRAM = dram.
//   vector unit   ops per cycle = the unit's rate x count x cores; its operands stream from and
//                 to DRAM, except fused intermediates (the schedule already took them off).
//   transfer      a copy through DRAM: (reads + writes) / DRAM bandwidth.
//   attention     unfused: decompose-attention's Q K^T, softmax and P V, each priced as above,
//                 one after another (cycles, traffic and energy summed; S and P go through DRAM).
//                 Fused (FlashAttention): matrix = the compute time of the two GEMMs (the tensor-
//                 core model's compute_seconds of its chosen tile, or the systolic model's
//                 compute cycles) x pairs / all_pairs, as a causal mask skips the masked blocks;
//                 vector = the online softmax over the kept pairs (5 ops + 1 special + d / Bc
//                 ops per pair, unit_costs.cpp); DRAM = (Q + K + V + O bytes) / bandwidth.
//                 Overlap rule: the three run concurrently (the softmax of one block under the
//                 GEMMs of the next, as FlashAttention-3 schedules them), so time = launch
//                 overhead (tensor cores: one kernel, gpu_model.h's 4 us) + max(matrix, vector,
//                 DRAM). On-chip traffic: Q, K, V and O once through the feeding level.
//   collective    the interconnect: one chip's per-direction bandwidth and per-hop latency;
//                 all-reduce takes the faster of ring and tree (as NCCL's tuner chooses by size),
//                 the others the ring.
//
// Calibration (arch/arch_spec.h CalibrationSpec, the arch's optional `calibration:` section):
// the launch overhead replaces gpu_model.h's 4 us wherever a tensor-core kernel launch is added;
// compute_fraction scales the matrix unit's MAC rate and the vector unit's element rate at a
// precision; dram_fraction scales the DRAM bandwidth of every model here. Without the section
// every figure is as before (4 us, fractions 1).
//
// Energy of an op = MACs x energy per MAC at its precision + vector element ops x energy per op
// + on-chip bytes x the per-byte energy of the level they cross + DRAM bytes x DRAM energy per
// byte + static power x the op's time (arch/energy.h gives every figure).

#include <optional>
#include <string>

#include "arch/hardware_model.h"
#include "core/data_type.h"
#include "core/results.h"
#include "mapper/schedule.h"
#include "sim/analytical/gpu_model.h"

namespace coda::sim::analytical {

// The launch overhead of one tensor-core kernel: calibration.launch_overhead, else 4 us.
double launch_overhead_s(const arch::HardwareModel& hw);

// The tensor-core model's parameters at `precision` (see above), calibration applied.
// Precondition: hw has a matrix unit with a rate at `precision`.
GpuParams gpu_params(DataType precision, const arch::HardwareModel& hw);

// nullopt with `why` set when the op cannot run as placed (a GEMM whose every thread-block tile
// overflows the SM).
std::optional<results::OpResult> evaluate_placed(const mapper::ScheduledOp& op,
                                                 const arch::HardwareModel& hw, std::string& why);

// A contraction with a loop-nest mapping (op.loop_nest), priced from its loop-nest cost: cycles
// (the larger of compute, fill and drain included, and every level's bandwidth-bound time),
// each level's traffic per tensor, MAC and per-level energy (mapper/loop_nest_model.h). Tensor
// cores add the kernel launch (gpu_model.h's launch overhead) as the closed form does, and the
// op is then latency-bound when the launch outlasts the loop nest. Fused intermediates come off
// the DRAM traffic (remove_fused_traffic) and energy adds static power over the op's time.
results::OpResult evaluate_loop_nest(const mapper::ScheduledOp& op, const arch::HardwareModel& hw);

// Takes a contraction's fused intermediates (op.dram_reads_saved, op.dram_writes_saved) off its
// priced DRAM traffic, at most what was priced; reads come off the streamed operand (ifmap,
// inputs) first. The op's time is not recomputed. Call before add_energy.
void remove_fused_traffic(results::OpResult& result, const mapper::ScheduledOp& op);

// Adds the op's energy to result.cost.energy (see the header comment). `vector_ops` counts the
// vector unit's element operations.
void add_energy(results::OpResult& result, const mapper::ScheduledOp& op, double vector_ops,
                const arch::HardwareModel& hw);

}  // namespace coda::sim::analytical
