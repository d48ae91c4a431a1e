#pragma once
// The analytical (closed-form) model of one op on a systolic array with three double-buffered
// SRAMs and a DRAM interface. docs/systolic_model.md derives every formula; in short:
//
// Compute. Each fold takes T + R + C - 2 cycles (output stationary: operands skew in over R - 1
// and C - 1 cycles, T steps of accumulation, no separate drain) or T + 2R + C - 2 cycles
// (weight and input stationary: R cycles to preload the stationary tile first). A partial fold
// takes as long as a full one. These are SCALE-Sim v2's stall-free cycles; SCALE-Sim prints a
// 0-based cycle index, one less than the count reported here.
//
// Traffic (systolic_traffic.h, each operand at its own element size). SRAM: every element of a
// fold's tiles crosses the array edge once per fold: the stationary operand Sr x Sc, each
// streamed operand (its spatial extent) x T. DRAM: what each fold fetches (a convolution's
// feature-map window with its halo, not the unrolled matrix) and writes back (finished outputs;
// partial sums only when the accumulator level cannot hold them). Operands the schedule holds on
// chip for the whole op (ScheduledOp::on_chip: kept activations, cached weights, fused
// intermediates) move no DRAM bytes, so the folds below are timed without them.
//
// Stalls (finite bandwidth, double-buffered). Fold i+1's inputs are prefetched and fold i-1's
// outputs drained while fold i computes, sharing one DRAM channel of B bytes per cycle:
//   cycles = in_0/B + sum_i max(C_i, (in_{i+1} + out_{i-1})/B) + out_last/B
// Without double buffering nothing overlaps: cycles = sum_i (in_i + out_i)/B + C_i.
// With unlimited bandwidth there are no stalls and cycles = compute cycles. With
// dram.model: scalesim the stalls are SCALE-Sim v2's USER mode's instead (scalesim_memory.h).
//
// Groups (mapping.gemm.batch) run in packs of mapping.packed side by side (a block-diagonal
// GEMM, mapper/systolic_mapping.h): the packs run one after another, each folding and moving
// bytes as the packed GEMM does.

#include <vector>

#include "arch/hardware_model.h"
#include "core/results.h"
#include "mapper/schedule.h"

namespace coda::sim::analytical {

// pe_rate and fold_cycles live with the mapping (mapper/systolic_mapping.h), whose choice of
// packed groups uses them, so the two cannot disagree.
using mapper::fold_cycles;
using mapper::pe_rate;

// Prices op.mapping with its groups packed as mapping.packed says. Pure and thread-safe; O(folds)
// arithmetic, no per-cycle or per-element work.
results::OpResult evaluate_systolic_as_mapped(const mapper::ScheduledOp& op,
                                              const arch::HardwareModel& hw);

// Prices every packing of the op's groups that mapper::packing_candidates offers (one group at a
// time first) and returns the one with the fewest cycles, stalls included; on a tie the fewer
// groups per pack. An op without groups to pack is priced as mapped. Pure and thread-safe;
// O(candidates x folds).
results::OpResult evaluate_systolic(const mapper::ScheduledOp& op, const arch::HardwareModel& hw);

// evaluate_systolic, each distinct op priced once. The result is a pure function of the op's
// mapping (its iteration space and accesses, local tensor names included), precision, MACs and
// on-chip operands on one `hw`; the fold walk is the costly part, and a network repeats shapes
// (LLaMA: every layer, its attention's parts included), so a run walks each shape once and copies
// the result under the op's name. One memo per run and hw; the ops must outlive it. Not
// thread-safe (one per thread).
class SystolicMemo {
 public:
  explicit SystolicMemo(const arch::HardwareModel& hw) : hw_(hw) {}
  results::OpResult evaluate(const mapper::ScheduledOp& op);

 private:
  struct Walked {
    const mapper::ScheduledOp* op;
    results::OpResult result;
  };
  const arch::HardwareModel& hw_;
  std::vector<Walked> walked_;
};

}  // namespace coda::sim::analytical
