#pragma once
// The bytes a systolic array's folds move, per operand: between the array and its buffers
// ("sram") and between the buffers and DRAM. docs/systolic_model.md ("Traffic") derives every
// rule; it is separate from the cycle model (systolic_model.h), whose stall-free cycles it does
// not touch. In short, for one pack of groups (mapping.packed side by side; 1: one group)
// on one array, folds in the cycle model's order (column fold outer, row fold inner):
//
// Element sizes. Schema 1 counts words: every operand, partial sums too, is word_size bytes
// (SCALE-Sim's word). Schema 2 prices each operand at its own tensor's element type (the op's
// accesses, re-typed by a run-wide --precision); a partial sum is
// max(output bits, arch::kAccumulatorBits) wide.
//
// The footprint of a tile. A fold's tile of an operand is a box of the GEMM view: a range of
// the dim on the array's rows, a range of the dim on its columns, all of the streamed dim. The
// GEMM dims flatten the op's dims in the op's order, so a range of one is a range of a
// mixed-radix index, whose bounding box per op dim is exact outside the first dim where its
// ends differ. In the operand's tensor the tile touches at most its own elements (words) and at
// most the bounding box of its index ranges clipped to the tensor; coda counts the smaller. A
// GEMM operand's tile is its words; a convolution's ifmap tile is the feature-map window it
// reads, halo included, not the im2col-unrolled matrix (the buffer holds the feature map and
// unrolls it into the array; SRAM traffic still counts the unrolled stream the array is fed).
//
// Packed groups (mapper/systolic_mapping.h): the packed K' and N' flatten the groups (outermost)
// with one group's dims, so a tile covers the groups its range does; the block-diagonal filter is
// stored dense, zeros included, and a tile of it is its words.
//
// Input fetches from DRAM. If an operand's whole footprint (one pack of one array's slice)
// fits the working part of its buffer, each element is fetched once, by the first fold whose
// tile touches it: fold i fetches U(i) - max(U(j), j < i), where U(i) is the footprint of the
// union of the tiles of folds 0..i. Otherwise a fold fetches its tile's footprint, unless the
// previous fold used the same tile and it fits the working part (a column-indexed tile while
// the row fold advances; a row-indexed tile when there is a single row fold).
//
// Outputs. When the dim on the rows indexes the outputs (output stationary) a fold's outputs
// are finished and written once. Otherwise (weight and input stationary: K' on the rows) the
// row folds of one column fold add partial sums to the same output tile. The accumulator level
// is the core-level memory holding outputs (HardwareModel::operand_level; schema 1: the ofmap
// SRAM): when the working part of its share holds the column fold's tile of partial sums, they
// add up there and only the last row fold writes the finished outputs to DRAM. Otherwise, or
// when the arch has no accumulator level, every row fold writes its tile to DRAM, partial sums
// at their width and the last fold's finished outputs at the output's (reading partial sums
// back is not counted, as in SCALE-Sim), and `note` says why.
//
// Stripes. An array with accumulation: stripes (NVDLA's stripe and channel operations) does not
// send partial sums to DRAM when a column fold's tile of them is too big for the accumulator:
// it cuts T into the largest stripes S with S x cols used x partial-sum bits <= the working part,
// and runs each stripe through every row fold before the next (column fold, stripe, row fold),
// so the last row fold of a stripe writes its finished outputs and no partial sum reaches DRAM.
// The stationary tile is loaded into the array again for every stripe (SRAM traffic); from DRAM
// it is fetched once per column fold when the column fold's tiles of it fit the working part of
// its buffer, else again for every stripe. The streamed input follows the rules above with the
// stripe's range of T in its tile. Every (stripe, row fold) is a fold of S steps of T (the
// cycle model times it so: fold_steps).
//
// Accumulators. An op that adds into its output (C += A B, workload::is_accumulator: every
// weight gradient of a training step) reads the output's earlier values once per output tile,
// before the first fold that adds to it (the first row fold of its column fold and stripe; every
// fold when the outputs are finished in one), at the accumulator's own element size: they start
// the tile's sums. The accumulator is no operand of the array's loops, so it is not part of the
// streamed input's tiles. Held on chip with the output, it is read from the buffer, not DRAM.
//
// Operands held on chip for the whole op (`on_chip`: an activation the residency plan keeps, a
// cached weight, a fused intermediate; mapper/residency.h) are already in the buffers: an input
// held on chip is fetched by no fold, and an output held on chip has its finished outputs
// written to the buffer, not DRAM (partial sums that overflow the accumulator still go to DRAM).
// SRAM traffic is the same either way: the array reads and writes them through the buffers.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "arch/hardware_model.h"
#include "mapper/systolic_mapping.h"

namespace coda::sim::analytical {

// DRAM bytes of one fold.
struct FoldBytes {
  std::uint64_t ifmap = 0;   // fetched before the fold
  std::uint64_t filter = 0;  // fetched before the fold
  std::uint64_t ofmap = 0;   // written after it
  std::uint64_t accumulated = 0;  // the output's earlier values (C += A B), read before it
  std::uint64_t in() const { return ifmap + filter + accumulated; }
};

enum class PartialSums : std::uint8_t {
  None,         // every fold's outputs are finished (output stationary, or a single row fold)
  Accumulated,  // they add up in the accumulator level; DRAM sees the finished outputs once
  ToDram,       // every row fold's tile goes to DRAM (no accumulator level, or it is too small)
};

struct SystolicTraffic {
  std::vector<FoldBytes> folds;  // one pack on one array, column fold outer, row fold inner
  // One pack on one array, by operand (ifmap, filter, ofmap): SRAM bytes the array reads
  // (inputs) or writes (outputs), and DRAM bytes (the sum over `folds`).
  std::array<std::uint64_t, 3> sram{};
  std::array<std::uint64_t, 3> dram{};
  // The output's earlier values read into the accumulator (C += A B; 0 otherwise): from the
  // buffer, and from DRAM (the sum of the folds' `accumulated`).
  std::uint64_t sram_accumulated = 0;
  std::uint64_t dram_accumulated = 0;
  // Element bits of the ifmap, filter and ofmap, and of a partial sum.
  std::array<std::uint32_t, 3> element_bits{};
  std::uint32_t partial_sum_bits = 0;
  PartialSums partial_sums = PartialSums::None;
  // Stripes (accumulation: stripes, see above): T in stripes of `stripe` steps (the last has the
  // rest), `stripes` per column fold. Not cut: stripe = T, stripes = 1.
  std::uint64_t stripe = 0;
  std::uint64_t stripes = 1;
  std::string note;  // why partial sums go to DRAM when they do; empty otherwise
};

// The T steps fold `fold` streams (its stripe's; all of T when there is one stripe).
std::uint64_t fold_steps(const SystolicTraffic& traffic, const mapper::SystolicMapping& mapping,
                         std::uint64_t fold);

// Precondition: `mapping` comes from mapper::map_onto_array on `hw` (its einsum is set).
// `on_chip`: by operand (ifmap, filter, ofmap), whether it is held on chip (see above).
// Pure; O(folds of one pack) arithmetic.
SystolicTraffic systolic_traffic(const mapper::SystolicMapping& mapping,
                                 const arch::HardwareModel& hw,
                                 std::array<bool, 3> on_chip = {});

}  // namespace coda::sim::analytical
