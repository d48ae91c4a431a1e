#pragma once
// The bytes a systolic array's folds move, per operand: between the array and its buffers
// ("sram") and between the buffers and DRAM. docs/systolic_model.md derives every rule; it is
// separate from the cycle model (systolic_model.h), whose stall-free cycles it does not touch.
// In short, for one group on one array, folds in the cycle model's order (column fold outer,
// row fold inner):
//
// Element sizes. Schema 1 counts words: every operand, partial sums too, is word_size bytes
// (SCALE-Sim's word). Schema 2 prices each operand at its own tensor's element type (the op's
// accesses, re-typed by a run-wide --precision); a partial sum is
// max(output bits, arch::kAccumulatorBits) wide.
//
// Input fetches from DRAM. An input tile is fetched when the fold needs a different tile than
// the previous fold, or every fold when it is larger than the working half of its buffer; if
// the operand's whole matrix fits the working half, each tile is fetched only the first time.
//
// Outputs. Each fold's outputs are written back to DRAM: partial sums of a row fold that is not
// the last at their width, finished outputs at the output's.

#include <array>
#include <cstdint>
#include <vector>

#include "arch/hardware_model.h"
#include "mapper/systolic_mapping.h"

namespace coda::sim::analytical {

// DRAM bytes of one fold.
struct FoldBytes {
  std::uint64_t ifmap = 0;   // fetched before the fold
  std::uint64_t filter = 0;  // fetched before the fold
  std::uint64_t ofmap = 0;   // written after it
  std::uint64_t in() const { return ifmap + filter; }
};

struct SystolicTraffic {
  std::vector<FoldBytes> folds;  // one group on one array, column fold outer, row fold inner
  // One group on one array, by operand (ifmap, filter, ofmap): SRAM bytes the array reads
  // (inputs) or writes (outputs), and DRAM bytes (the sum over `folds`).
  std::array<std::uint64_t, 3> sram{};
  std::array<std::uint64_t, 3> dram{};
  // Element bits of the ifmap, filter and ofmap, and of a partial sum.
  std::array<std::uint32_t, 3> element_bits{};
  std::uint32_t partial_sum_bits = 0;
};

// Precondition: `mapping` comes from mapper::map_onto_array on `hw` (its einsum is set).
// Pure; O(folds of one group) arithmetic.
SystolicTraffic systolic_traffic(const mapper::SystolicMapping& mapping,
                                 const arch::HardwareModel& hw);

}  // namespace coda::sim::analytical
