#pragma once
// The analytical loop-nest model: the cost of one Mapping of one einsum op on a Hierarchy, by
// Timeloop-style reuse analysis in closed form. O(levels x dims x tensors) per call, no
// allocation (fixed arrays, limits in mapping.h), pure and thread-safe. docs/mapping.md derives
// the rules; in short:
//
//   tile      dim d's tile extent at level i is x_i[d] = product of d's temporal and spatial
//             factors at levels 0..i. A tensor's tile is the product over its ranks of the rank's
//             extent: a rank indexed by one dim spans x[d] elements (whatever its coefficient:
//             a strided index touches x points); a rank indexed by several dims (a conv's
//             p*stride + r) spans its bounding box 1 + sum |c| (x - 1), at most the product of the
//             x's (the points that exist): (P-1)*stride + R for stride <= R. Clipped to the
//             tensor's shape.
//   fills     how often level i's tile of a tensor is (re)loaded, per instance: the product of the
//             temporal factors of every loop above level i, innermost first, after skipping the
//             innermost run of loops over dims that do not index the tensor (the tile stays put
//             while they turn: stationarity). The PE array below level 0 has no storage: it sees
//             every temporal iteration.
//   traffic   per kept tensor, from each level c to the next level p above that keeps it:
//             moved = fills(c) x tile(c) x used instances of c; p reads moved / share, where
//             share = product of the spatial factors at levels c+1..p over dims that do not index
//             the tensor (multicast of inputs and weights, spatial reduction of outputs), counted
//             only at levels that multicast (StorageLevel::multicast; a GPU's levels do not:
//             every SM and warp fetches its own copy). Outputs flow up: c reads moved (its
//             drains) and p writes moved / multicast; every write that is not a tile's first
//             arrival adds to partial sums p reads back (moved / multicast - first visits /
//             share), and a revisited child tile reloads its partial sums ((moved - first
//             visits) / share). The PE array moves one element per MAC.
//   capacity  per level: the sum of the full tiles of the tensors it keeps, x2 if double-
//             buffered, must fit its capacity per instance.
//   waves     a level whose children are dealt work by a scheduler (StorageLevel::waves: a GPU's
//             L2 over its SMs) may spread more than its fan-out: its children then run
//             rounds = ceil(spread / fan-out) virtual instances (thread blocks) one after
//             another. Compute time is x rounds; a level below it has used instances / rounds
//             physical ones busy for its bandwidth; the level's own temporal loops run inside
//             each virtual instance, but no tile below it stays put across a loop above it (the
//             other rounds ran in between), so those loops all count in its fills.
//   time      compute cycles = temporal iterations x rounds / MACs per PE per cycle (a partial
//             tile takes a full tile's time), plus, on a systolic array, the pipeline's fill and
//             drain once per pass. A pass lasts while the PEs' stationary tile stays: passes = the
//             fewest loads of any tensor's level-0 tile (its fills). Each pays R + C - 2 when that
//             tensor is the output (output stationary), else 2R + C - 2 (the stationary weight or
//             input tile is preloaded first; weight_preload: overlapped, R + C - 2 + max(0, R - the
//             pass's stream), and R once for the first load): the closed form's cycles per fold
//             (docs/systolic_model.md), which a mapping that folds as the closed form does
//             reproduces exactly; on tensor cores, x (1 + block_overhead_k / reduction): each
//             output tile's thread-block prologue and epilogue (Hierarchy::block_overhead_k) over
//             its reduction (the reduction dims' extents' product), as the closed form charges a
//             block tile_overhead steps (a split reduction is not charged per split); cycles = the
//             maximum of compute and every level's reads / (read bandwidth x used instances) and
//             writes / (write bandwidth x used instances), summed where reads and writes share a
//             port (DRAM): transfers overlap compute.
//   energy    actual MACs x MAC energy + every level's bytes read and written x its energy per
//             byte; EDP = energy x cycles.
//
// Imperfect factors (a product above the extent): tiles for capacity are full (x clipped to the
// extent); traffic uses each dim's average tile extent x[d] x extent / product, so the elements
// moved over a sweep are exact for ranks indexed by one dim; compute time counts the padded
// iterations, energy only the actual MACs.

#include <array>
#include <cstdint>

#include "mapper/mapping.h"
#include "workloads/op.h"

namespace coda::mapper {

// ---- the op, compiled into fixed arrays once ----

struct ProblemRank {
  std::uint8_t term_count = 0;
  std::array<std::uint8_t, kMaxTerms> dim{};
  std::array<std::uint64_t, kMaxTerms> coefficient{};  // absolute values
  std::uint64_t shape = 0;                             // 0 = unknown: no clipping
};

struct ProblemTensor {
  workload::TensorRole role = workload::TensorRole::Input;
  std::uint8_t role_bit = 1;        // arch::Holds bit of the role
  double bytes_per_element = 1;     // bits / 8 (int4: 0.5)
  std::uint16_t dim_mask = 0;       // bit d: dims[d] indexes the tensor
  std::uint8_t rank_count = 0;
  std::array<ProblemRank, kMaxRanks> ranks{};
};

struct LoopNestProblem {
  MappingStatus status;             // Limits or Unsupported when the op cannot be compiled
  std::uint8_t dim_count = 0;
  std::uint8_t tensor_count = 0;
  std::array<std::uint64_t, kMaxDims> extents{};
  std::array<ProblemTensor, kMaxTensors> tensors{};
  double points = 0;                // product of the extents: MACs of a contraction
  // Product of the extents of the dims the output is not indexed by (workload::dim_indexes_role):
  // the reduction each output point sums over, a GEMM's K.
  double reduction = 1;
};

LoopNestProblem compile_problem(const workload::Einsum& einsum);

// Elements of a tensor's tile given each dim's tile extent (the rules above).
double tile_elements(const ProblemTensor& tensor, const std::array<double, kMaxDims>& extent);

// ---- the cost ----

struct TensorTraffic {
  double read_bytes = 0;
  double write_bytes = 0;
};

struct LevelCost {
  std::array<TensorTraffic, kMaxTensors> tensors{};  // index = Einsum::accesses
  double read_bytes = 0;      // all tensors, all instances
  double write_bytes = 0;
  double tile_bytes = 0;      // capacity used per instance (x2 where double-buffered)
  std::uint64_t used_instances = 1;
  double cycles = 0;          // bandwidth-bound cycles of this level
  double energy_pj = 0;
  std::uint8_t kept = 0;      // bit t: the level keeps tensor t
};

inline constexpr std::uint8_t kComputeBound = 0xff;

struct MappingCost {
  MappingStatus status;                      // not ok(): every figure below is 0
  std::uint8_t level_count = 0;
  std::uint8_t tensor_count = 0;
  std::array<LevelCost, kMaxLevels> levels{};
  double macs = 0;                           // actual MACs (points of the iteration space)
  double padded_macs = 0;                    // temporal iterations x used PEs
  double compute_cycles = 0;
  double rounds = 1;                         // waves a scheduled level runs its spread in
  double cycles = 0;                         // max of compute and every level's cycles
  std::uint8_t bottleneck = kComputeBound;   // level index, or kComputeBound
  double mac_energy_pj = 0;
  double energy_pj = 0;                      // MACs + every level
  double edp = 0;                            // energy_pj x cycles (pJ x cycles)
  std::uint64_t used_pes = 0;                // product of every spatial factor (over rounds)
  double spatial_utilization = 0;            // used PEs / (rounds x PEs)
  double utilization = 0;                    // MACs / (cycles x PEs x MACs per PE per cycle)
  bool ok() const { return status.ok(); }
};

// Resource checks only: the shape of the mapping, each level's fan-out and capacity. Coverage is
// not checked, so a partial mapping (dims not yet chosen left at 1) gives a lower bound: tiles
// and spatial products only grow as factors grow. The map space prunes with it.
MappingStatus check_resources(const LoopNestProblem& problem, const Mapping& mapping,
                              const Hierarchy& hierarchy);

MappingCost evaluate(const LoopNestProblem& problem, const Mapping& mapping,
                     const Hierarchy& hierarchy);
// Compiles the op on the stack and evaluates: for one-off calls. A search should compile once.
MappingCost evaluate(const workload::Einsum& einsum, const Mapping& mapping,
                     const Hierarchy& hierarchy);

}  // namespace coda::mapper
