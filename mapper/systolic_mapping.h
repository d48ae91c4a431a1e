#pragma once
// How an op is laid onto a systolic array. The array sees every contraction as a GEMM
// (workload::gemm_view): M' = output pixels, N' = filters, K' = the reduction window R*S*C.
// Each dataflow keeps two of them on the array's rows and columns (Sr, Sc) and streams the
// third through time (T), as SCALE-Sim v2's compute modules do:
//
//   output stationary  Sr = M', Sc = N', T = K'
//   weight stationary  Sr = K', Sc = N', T = M'
//   input stationary   Sr = K', Sc = M', T = N'
//
// The work folds over an R x C array in ceil(Sr/R) x ceil(Sc/C) folds, run one after another
// with the column fold as the outer loop (SCALE-Sim's order).
//
// Groups (conv groups, a batched GEMM's batch: GemmView::batch) are independent GEMMs. A group
// whose GEMM fills little of the array (a depthwise conv's: K' = 9, N' = 1) can be packed with
// others: `packed` groups side by side as one block-diagonal GEMM, K' = packed x K'g and
// N' = packed x N'g (M' is shared), the filter zero outside the groups' diagonal blocks, so
// every row of the array is fed its own input and every column sums only its own group's rows
// (docs/systolic_model.md, "Grouped and depthwise convolutions"). This is the dense conv with a
// block-diagonal filter that NVDLA's compiler (nvdla/sw, ConvCoreNode::squashWeightGroups) and
// XLA (ConvolutionGroupConverter) emit for a grouped conv, done per pack of groups rather than
// for all of them at once. The packs run one after another, the last with the groups left over;
// packed = 1 is one group at a time, the rule map_onto_array applies. The closed form prices
// every packing packing_candidates offers and keeps the fastest (sim/analytical/systolic_model.h).

#include <cstdint>
#include <optional>
#include <vector>

#include "arch/hardware_model.h"
#include "workloads/op.h"

namespace coda::mapper {

// Which GEMM dimension an operand's two ranks use.
enum class GemmDim : std::uint8_t { M, N, K };

struct SystolicMapping {
  arch::Dataflow dataflow = arch::Dataflow::OutputStationary;
  workload::GemmView gemm;  // one group's GEMM; batch = the groups (of this array's slice)
  std::uint64_t packed = 1;  // groups side by side in one block-diagonal GEMM
  GemmDim row_dim = GemmDim::M;
  GemmDim col_dim = GemmDim::N;
  GemmDim time_dim = GemmDim::K;
  // Extents of the packed GEMM: N' and K' are packed x one group's.
  std::uint64_t sr = 0;  // extent mapped onto the rows
  std::uint64_t sc = 0;  // extent mapped onto the columns
  std::uint64_t t = 0;   // extent streamed through time
  std::uint64_t row_folds = 0;
  std::uint64_t col_folds = 0;
  std::uint64_t arrays = 1;  // arrays running a slice each, in parallel
  // The GEMM dim cut into the arrays' slices (M or N; nullopt: one array, or groups split, which
  // share no operand). The operand that does not use it is the same for every array.
  std::optional<GemmDim> split;
  // The op's iteration space and tensors, each access with its element type (re-typed to the
  // run's precision when it overrides the op's): what the traffic model prices each operand at
  // and where a fold's tile sits in the tensors it reads (sim/analytical/systolic_traffic.h).
  // The GEMM dims flatten the op's dims in the op's order, the first outermost.
  workload::Einsum space;
  // Packs of groups, run one after another; the last holds the groups left over.
  std::uint64_t passes() const { return (gemm.batch + packed - 1) / packed; }
  std::uint64_t last_pack() const { return gemm.batch - (passes() - 1) * packed; }
  friend bool operator==(const SystolicMapping&, const SystolicMapping&) = default;
};

// MACs one PE does per cycle at `precision` (an int8 array that packs two per PE: 2); 1 for
// schema-1 arrays and precisions the unit states no rate for.
double pe_rate(const arch::HardwareModel& hw, DataType precision);

// Stall-free cycles of one fold of `mapping` on `hw` streaming `steps` of T (all of mapping.t
// unless the fold is one stripe of it): the stream takes ceil(steps / rate) cycles at `rate` MACs
// per PE per cycle, plus the fill and drain: steps + R + C - 2 (output stationary) or
// steps + 2R + C - 2 (weight and input stationary: the stationary tile loads first). With
// weight_preload: overlapped the next fold's tile loads into shadow registers while this fold
// streams, so a fold takes max(stream, R) + R + C - 2 and first_load_cycles adds the first load.
std::uint64_t fold_cycles(const SystolicMapping& mapping, const arch::HardwareModel& hw,
                          double rate = 1.0);
std::uint64_t fold_cycles(const SystolicMapping& mapping, const arch::HardwareModel& hw,
                          double rate, std::uint64_t steps);

// Cycles an op's folds add once, before the first: the first stationary tile's load (R) when a
// weight- or input-stationary array overlaps its loads (weight_preload: overlapped); else 0.
std::uint64_t first_load_cycles(const SystolicMapping& mapping, const arch::HardwareModel& hw);

// Whether an op's groups may be packed: every dim of GemmView::batch indexes the input, the
// weight and the output (a conv's groups, a batched GEMM's batch), so each group has its own
// operands and a block-diagonal GEMM computes them all.
bool groups_can_pack(const workload::Einsum& space);

// `mapping` with `packed` groups side by side (1 <= packed <= gemm.batch): its Sr, Sc, T and folds
// those of the packed GEMM.
SystolicMapping with_packing(SystolicMapping mapping, const arch::HardwareModel& hw,
                             std::uint64_t packed);

// The packings worth pricing, ascending: every P from 1 to min(groups, the larger of the array's
// rows and columns); a pack of more groups than that folds over the array in both directions,
// multiplying folds and zeros. {1} when !groups_can_pack.
std::vector<std::uint64_t> packing_candidates(const SystolicMapping& mapping,
                                              const arch::HardwareModel& hw);

// Precondition: op.kind == Contraction. `precision`, when given, re-types every tensor of the
// op (a run-wide --precision).
SystolicMapping map_onto_array(const workload::Op& op, const arch::HardwareModel& hw,
                               std::optional<DataType> precision = std::nullopt);

// The systolic mapping of one array when an op is split over `arrays` arrays (the chip's cores
// and each core's instances): with `groups_first` and at least as many groups (gemm_view's
// batch) as arrays, ceil(batch / arrays) groups an array; otherwise the larger of M and N is cut
// into `arrays` slices of ceil(extent / arrays), one per array, run in parallel. `gemm` above is
// one slice; with one array it is the whole op. map_onto_array maps both ways when the groups
// could split, and keeps the one with fewer stall-free cycles.
std::uint64_t split_over_arrays(workload::GemmView& gemm, std::uint64_t arrays,
                                bool groups_first = true);

}  // namespace coda::mapper
