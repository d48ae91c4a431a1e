#pragma once
// A loop-nest mapping of one einsum op onto a storage hierarchy, in Timeloop's form: every
// storage level has temporal loops (a tile factor per dim, in a loop order) and spatial loops
// (a factor per dim spread over the level's fan-out), and may bypass tensors. docs/mapping.md
// explains the model; mapper/loop_nest_model.h prices a mapping; mapper/map_space.h enumerates
// them.
//
// The hierarchy is plain numbers, built once from a HardwareModel (make_hierarchy) so the hot
// path reads no maps or strings. Its levels run innermost first and the last is DRAM. The loop
// nest a Mapping describes, outermost first, is
//
//   dram:      for <temporal loops of the DRAM level, in its order>
//                par-for <spatial loops of the DRAM level>        (over its fan-out)
//   level n-2:     for <temporal loops> ... par-for <spatial loops>
//   ...
//   level 0:         for <temporal loops> ... par-for <spatial loops> (over the PEs)
//                      one MAC
//
// and the tile a level holds (per instance) is what its own loops and everything inside them
// touch: dim d's tile extent at level i is the product of the temporal and spatial factors of d
// at levels 0..i.
//
// How each unit kind becomes a hierarchy (make_hierarchy):
//   systolic     the innermost level is "pe": one register set per PE (capacity: two operand
//                words and one accumulator of max(word, 4 bytes), not double-buffered, no
//                bandwidth limit, its energy folded into the MAC's). Its instances are every PE of
//                the chip (rows x cols x arrays per core x cores), its fan-out 1. The memory level
//                above it fans out to the PEs it feeds, rows x cols x arrays per instance: the PE
//                array is a spatial level of rows x cols. The PE registers are what lets a mapping
//                express a dataflow: weight stationary keeps a weight in a PE across the loop over
//                m, output stationary a partial sum across the loop over k.
//   tensor core  no PE storage: the innermost memory level of the core (registers on a GPU) fans
//                out to the SM's MAC lanes, one lane per dense MAC per cycle at the precision
//                (an H100 SM at fp16: 2048 lanes). Across the chip that is SMs x MACs per SM.
//                The lanes read their operands from that level (mma.sync takes A and B fragments
//                in registers, loaded by ldmatrix), so it keeps every role whatever its `holds`:
//                fragments are tiles reused across a warp tile and refilled every k step, beside
//                the accumulators. No level above it multicasts (every SM fetches its own lines
//                from the L2, every warp its own fragments from shared memory), and the first
//                chip-wide level above the per-SM ones deals its spatial loops out in waves (the
//                block scheduler: a grid may be larger than the SMs).
//   vector       not modelled: a vector unit runs no contraction (make_hierarchy sets
//                `unsupported` when the matrix unit is missing).
// Every memory level of the spec follows in spec order, one hierarchy level each, then DRAM.
// Memories that sit side by side in the hardware (a schema-1 array's ifmap, filter and ofmap
// SRAMs, each holding one role) become consecutive levels of the chain; each bypasses the roles it
// does not hold, so every tensor sees only its own SRAM. Fan-out of level i = chip instances of
// level i-1 (or PEs, for level 0) / chip instances of level i, at least 1.

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "arch/hardware_model.h"
#include "core/data_type.h"
#include "workloads/op.h"

namespace coda::mapper {

// Fixed capacities of the hot path (no allocation): a hierarchy or op beyond them is rejected
// as Infeasible::Limits, never truncated.
inline constexpr std::size_t kMaxLevels = 8;    // storage levels including DRAM
inline constexpr std::size_t kMaxDims = 12;     // dims of the iteration space
inline constexpr std::size_t kMaxTensors = 8;   // accesses of the op
inline constexpr std::size_t kMaxRanks = 8;     // ranks of one tensor
inline constexpr std::size_t kMaxTerms = 4;     // terms of one index expression

// ---- the hierarchy ----

struct StorageLevel {
  std::string name;                    // "pe", "smem", "l2", "dram"
  std::uint64_t capacity_bytes = 0;    // per instance; 0 = unlimited (DRAM)
  std::uint64_t instances = 1;         // on the chip
  std::uint64_t fan_out = 1;           // instances of the level below (or PEs) one instance feeds
  double read_bytes_per_cycle = 0;     // per instance; 0 = unlimited
  double write_bytes_per_cycle = 0;    // per instance; 0 = unlimited
  bool shared_port = false;            // reads and writes share the bandwidth (DRAM's bus)
  double energy_pj_per_byte = 0;       // per byte read or written
  std::uint8_t holds = 7;              // arch::Holds bits: 1 inputs, 2 weights, 4 outputs
  bool double_buffered = false;        // tiles take twice their size (fill overlaps compute)
  // One read of this level serves every child instance that needs the same data, and children
  // that differ only along reduction dims are summed on the way (a systolic array's operand
  // and partial-sum network, an MMA sharing its fragments across its lanes). False: every
  // child instance fetches its own copy and writes its own partial sums (a GPU's SMs reading
  // the L2, its warps reading shared memory).
  bool multicast = true;
  // Spatial factors may exceed the fan-out: the children then work through the spread in
  // ceil(spread / fan-out) rounds, as a GPU's thread-block scheduler deals a grid larger than
  // the SMs out in waves.
  bool waves = false;
  friend bool operator==(const StorageLevel&, const StorageLevel&) = default;
};

struct ComputeArray {
  std::string unit;                    // the spec's unit name, "mxu"
  arch::UnitKind kind = arch::UnitKind::Systolic;
  std::uint64_t pes = 1;               // MAC lanes on the chip
  double macs_per_pe_per_cycle = 1;    // at the hierarchy's precision; 0 = unsupported
  double mac_energy_pj = 0;            // per MAC
  // Systolic arrays: one array's rows and columns, which set the pipeline fill and drain of
  // every pass (loop_nest_model.h, "time"); 0 for tensor cores (no fill modelled).
  std::uint32_t array_rows = 0;
  std::uint32_t array_cols = 0;
  // weight_preload: overlapped (arch::WeightPreload): a pass loads the next stationary tile
  // while it streams, as the closed form's folds do (mapper::fold_cycles).
  bool overlapped_preload = false;
  friend bool operator==(const ComputeArray&, const ComputeArray&) = default;
};

// K elements of one main-loop step of calibration.tile_overhead.gemm: the tile_k of the closed
// form's library tiles (sim/analytical/gpu_model.cpp's candidates, which assert it).
inline constexpr double kTileOverheadStepK = 32;

struct Hierarchy {
  std::vector<StorageLevel> levels;    // innermost first; the last is DRAM (holds everything)
  ComputeArray compute;
  // Tensor cores: the K elements a thread block's prologue and epilogue cost, as MACs of its
  // output tile (calibration.tile_overhead.gemm x kTileOverheadStepK), as the closed form charges
  // each block (sim/analytical/gpu_model.h; loop_nest_model.h, "time"). 0: none.
  double block_overhead_k = 0;
  double clock_hz = 1e9;
  DataType precision = DataType::Int8;
  std::string unsupported;             // non-empty: why contractions cannot run here
  friend bool operator==(const Hierarchy&, const Hierarchy&) = default;
};

// The hierarchy a contraction at `precision` sees on `hw` (see the header comment). A schema-1
// array counts words, not precisions, and runs every precision at its rate. `aligned` false: a
// tensor-core GEMM whose operand rows are not whole 16-byte vectors (TensorCoreWork::aligned),
// which runs at calibration.unaligned_gemm of the datasheet rate when the arch states it
// (HardwareModel::unaligned_macs_per_cycle), as the closed form prices it.
Hierarchy make_hierarchy(const arch::HardwareModel& hw, DataType precision, bool aligned = true);

// The arch::Holds bit of a tensor role (Input 1, Weight 2, Output 4).
constexpr std::uint8_t role_bit(workload::TensorRole role) {
  return static_cast<std::uint8_t>(1u << static_cast<unsigned>(role));
}

// ---- the mapping ----

struct LevelMapping {
  std::array<std::uint64_t, kMaxDims> temporal{};  // tile factor per dim (1 = no loop)
  std::array<std::uint64_t, kMaxDims> spatial{};   // spatial factor per dim (1 = not spread)
  // The temporal loops, outermost first: a permutation of 0..dims-1. Only dims with a temporal
  // factor above 1 are real loops; where the others stand does not matter.
  std::array<std::uint8_t, kMaxDims> order{};
  // Bit t set: tensor t (index into Einsum::accesses) is not kept at this level. A level also
  // skips every tensor whose role it does not hold; DRAM keeps everything whatever the mask.
  std::uint8_t bypass = 0;
  friend bool operator==(const LevelMapping&, const LevelMapping&) = default;
};

// Factors need not divide extents: the product of dim d's factors over all levels must cover its
// extent (>=), and the last tile along d is then partial. How partial tiles are priced is in
// loop_nest_model.h.
struct Mapping {
  std::uint8_t level_count = 0;  // == hierarchy levels
  std::uint8_t dim_count = 0;    // == op dims
  std::array<LevelMapping, kMaxLevels> levels{};
  friend bool operator==(const Mapping&, const Mapping&) = default;
};

// Every factor 1, identity orders, nothing bypassed. Precondition: levels <= kMaxLevels,
// dims <= kMaxDims.
Mapping make_mapping(std::size_t levels, std::size_t dims);

// Sets level `level`'s loop order from dim indices, outermost first; dims not named go outermost
// in ascending order. Precondition: indices < dim_count, no repeats.
void set_order(Mapping& mapping, std::size_t level,
               std::initializer_list<std::size_t> outer_to_inner);

// ---- infeasibility as a value ----

enum class Infeasible : std::uint8_t {
  None,           // feasible
  Capacity,       // a level's tiles do not fit (level, needed bytes, available bytes)
  SpatialFanout,  // a level's spatial factors exceed its fan-out (level, used, fan-out)
  Coverage,       // a dim's factors do not cover its extent (dim, product, extent)
  Shape,          // the mapping's level or dim count does not match, a factor is 0, an order
                  // is not a permutation (level, dim)
  Limits,         // beyond kMaxLevels / kMaxDims / kMaxTensors / kMaxRanks / kMaxTerms
  Unsupported,    // no matrix unit at the precision, or an access without affine indices
  NotCanonical,   // a map-space index whose loop order duplicates another index's (map_space.h)
};
std::string_view to_string(Infeasible reason);  // "capacity", "spatial_fanout", ...

struct MappingStatus {
  Infeasible reason = Infeasible::None;
  std::uint8_t level = 0;  // the level concerned (Capacity, SpatialFanout, Shape)
  std::uint8_t dim = 0;    // the dim concerned (Coverage, Shape)
  double needed = 0;       // Capacity: bytes per instance; SpatialFanout: used; Coverage: product
  double available = 0;    // Capacity: bytes per instance; SpatialFanout: fan-out; Coverage: extent
  bool ok() const { return reason == Infeasible::None; }
  friend bool operator==(const MappingStatus&, const MappingStatus&) = default;
};

// "capacity: level 'smem' needs 300000 B per instance, has 233472 B". Not for the hot path.
std::string describe(const MappingStatus& status, const Hierarchy& hierarchy,
                     const workload::Einsum& einsum);

// The loop nest, outermost first, one line per level and loop, Timeloop style:
//   dram [A B C]
//   | for m in [0:2)
//   buffer [A B C]
//   |   for k in [0:4)
//   |     par-for n in [0:4)
std::string to_string(const Mapping& mapping, const workload::Einsum& einsum,
                      const Hierarchy& hierarchy);

}  // namespace coda::mapper
