#pragma once
// Fusion planning: which consecutive ops of a graph (in graph order) run as one kernel, so that
// the tensors passed between them stay on chip instead of going to DRAM and back. Every decision
// is a value: the ops, the rule that grouped them, the tensors kept on chip, the DRAM bytes that
// saves and the on-chip bytes it needs; a candidate that fails a rule is listed in `rejected`
// with the reason. docs/fusion.md states the rules; in short:
//
//   epilogue           a contraction followed by elementwise ops (bias, activation, residual
//                      add, quantize), each reading the previous op's output
//   conv_bn_relu       the same with an inference batch norm (a per-channel scale and shift)
//                      among the followers: conv -> bn -> relu, conv -> bn -> add -> relu
//   attention          an Attention op run FlashAttention-style: S = Q K^T and P = softmax(S)
//                      never leave the chip (they are not graph tensors; the saving is counted
//                      against the decomposed form: Q K^T, softmax, P V); a transpose right
//                      after it that merges the heads of O joins the group (FlashAttention
//                      writes O as b x q x heads x d, already merged), saving its copy of O
//   elementwise_chain  consecutive elementwise and normalization ops, each reading the previous
//                      op's output (All only)
//
// Activations kept on chip between layers that are not one kernel (any number of ops apart, any
// number of readers) are the residency plan's (mapper/residency.h), which All mode adds on
// hardware whose matrix unit is a systolic array.
//
// A tensor is kept on chip (an intermediate) only when it is an activation that its producer
// writes and its consumer, the next op, reads, and that no other op touches and the graph does
// not name as a result. Ops must be bound to graph tensors (Op::tensors); unbound ops (a plain
// layer list) have no dataflow and never fuse.
//
// Bytes saved: in the unfused schedule each intermediate is written to DRAM once by its producer
// and read once by its consumer, so keeping it on chip saves 2 x its bytes. That is what the plan
// counts. The priced saving (the engine's DRAM bytes with and without fusion) can be larger: a
// softmax or norm reads its input twice, and a contraction's model may fetch an operand more than
// once.
//
// On-chip bytes. Epilogues and chains work tile by tile and transform the tile in place, so a
// group needs the largest tile of its intermediates: a systolic array's rows x cols outputs, or a
// 128 x 128 thread-block tile on tensor cores and vector units (widened to a whole row when a
// norm or softmax, which reduce over the last axis, consumes it). It is compared with one core's
// on-chip memory (the core-level levels, every instance; a chip-level one shared out over the
// cores when the core has none). FlashAttention holds a Br x Bc fp32 score tile and Br + 2 Bc
// rows of Q, K and V: the largest block of 128, 64, 32, 16 that fits one core is taken.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "arch/hardware_model.h"
#include "core/units.h"
#include "workloads/graph.h"

namespace coda::mapper {

// None, Epilogue or All (arch/arch_spec.h, where an arch's calibration can name the one its
// vendor's compiler applies).
using arch::FusionMode;
using arch::parse_fusion_mode;
using arch::to_string;

enum class FusionKind : std::uint8_t {
  Epilogue,
  ConvBnRelu,
  ElementwiseChain,
  Attention,
};
// "epilogue", "conv_bn_relu", "elementwise_chain", "attention"
std::string_view to_string(FusionKind kind);

// Whether an op is bound to graph tensors (one per access): only bound ops have dataflow, so
// only they fuse or keep a tensor on chip (a plain layer list's unmatched layers are not).
bool is_bound(const workload::Op& op);

struct FusionGroup {
  FusionKind kind = FusionKind::Epilogue;
  std::vector<std::size_t> ops;                   // indices into graph.ops: consecutive, in order
  std::vector<workload::TensorId> intermediates;  // graph tensors kept on chip (attention: none)
  // Bytes of what stays on chip: the intermediates, or, for attention, S and P of the
  // decomposed form (b x heads x q x kv elements each, in Q's type; backward: P, dP and dS).
  Bytes intermediate_bytes;
  // 2 x intermediate_bytes: each written once and read once unfused (an attention backward:
  // 7 x a score tensor's bytes, see plan_attention).
  Bytes dram_bytes_saved;
  Bytes on_chip_bytes;      // what the group holds on chip at once (see the header comment)
  Bytes on_chip_capacity;   // what on_chip_bytes was compared with
  std::uint64_t flash_block = 0;  // attention: the Br = Bc block size taken
  friend bool operator==(const FusionGroup&, const FusionGroup&) = default;
};

// A candidate group that a rule turned down.
struct RejectedFusion {
  FusionKind kind = FusionKind::Epilogue;
  std::vector<std::size_t> ops;  // the ops that would have been grouped
  std::string reason;            // a sentence naming the ops and tensors
  friend bool operator==(const RejectedFusion&, const RejectedFusion&) = default;
};

struct FusionPlan {
  FusionMode mode = FusionMode::None;
  std::vector<FusionGroup> groups;  // disjoint, in graph order
  std::vector<RejectedFusion> rejected;
  friend bool operator==(const FusionPlan&, const FusionPlan&) = default;
};

// The sum of the groups' dram_bytes_saved.
Bytes total_dram_bytes_saved(const FusionPlan& plan);

// Pure and deterministic; O(ops + accesses). None returns an empty plan.
FusionPlan plan_fusion(const workload::Graph& graph, const arch::HardwareModel& hw,
                       FusionMode mode);

}  // namespace coda::mapper
