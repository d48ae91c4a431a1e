#pragma once
// SCALE-Sim v2's USER-mode (bandwidth-limited) memory system, reproduced for one GEMM on one
// array: `dram: {model: scalesim}` in a schema-1 arch (docs/systolic_model.md, "SCALE-Sim's USER
// mode"). Reference: scalesim-project/scale-sim-v2, branch dev at 9b3f10a5 (the commit whose
// test/general/golden_trace_user_{os,ws,is} CI checks); scalesim/memory/read_buffer.py,
// write_buffer.py, read_port.py, write_port.py and double_buffered_scratchpad_mem.py.
//
// What SCALE-Sim does, and so what this does:
//  * The array's demand is one row of addresses per stall-free cycle per operand (its demand
//    matrices: each fold skewed, with its fill and drain rows), folds column-fold outer.
//  * Each of ifmap and filter has its own read buffer and DRAM port of `bandwidth_words` words per
//    cycle. The operand's prefetch order (its fetch matrix) is cut into 100-ish "sets" of
//    ceil(capacity / 100) elements; half the SRAM (active fraction 0.5) holds a window of sets, the
//    other half the next ones. A demanded element outside the active window makes the window
//    advance by the prefetch half, and that prefetch completes ceil(prefetch half / bandwidth) + 1
//    cycles after the previous one (prefetches run back to back, whatever the demand is doing).
//    The row waits for it; SCALE-Sim counts a positive wait twice and a negative one (the
//    prefetch was already done) as a credit to the rest of the row. Reproduced as is.
//  * The ofmap write buffer drains half its capacity (in lines of `bandwidth_words`) once more
//    than half is occupied, one line per cycle; a write into a full buffer waits for the drain.
//  * A row's stall is the largest of the three; later rows shift by the stalls so far. Total
//    cycles are the last row's ofmap write cycle (the final drain is not counted), a 0-based index.
// Pure and thread-safe. O(demand rows x (R + C)) plus O(operand elements) memory: it walks the
// demand at SCALE-Sim's granularity, element by element, because the set logic has no closed form.

#include <cstdint>
#include <span>

#include "arch/arch_spec.h"
#include "arch/hardware_model.h"
#include "mapper/systolic_mapping.h"

namespace coda::sim::analytical {

struct ScaleSimMemorySpec {
  std::uint64_t rows = 0;  // array rows (ArrayHeight)
  std::uint64_t cols = 0;  // array columns (ArrayWidth)
  arch::Dataflow dataflow = arch::Dataflow::OutputStationary;
  std::uint64_t ifmap_words = 0;   // SRAM capacities in words (IfmapSramSzkB * 1024 / word)
  std::uint64_t filter_words = 0;
  std::uint64_t ofmap_words = 0;
  std::uint64_t bandwidth_words = 0;  // each port's words per cycle (Bandwidth)
};

// ifmap M x K, filter K x N, ofmap M x N (SCALE-Sim's operand matrices).
struct ScaleSimGemm {
  std::uint64_t m = 0, n = 0, k = 0;
};

struct ScaleSimCycles {
  std::uint64_t demand_rows = 0;   // stall-free cycles (SCALE-Sim prints demand_rows - 1)
  std::uint64_t total_cycles = 0;  // SCALE-Sim's "Total Cycles" (0-based last write cycle)
  std::uint64_t stall_cycles = 0;  // SCALE-Sim's "Stall Cycles"
};

// `ifmap_ids`: which element of the input each (m, k) of the ifmap operand matrix reads, row-major
// M x K, -1 for none (a window past the feature map's edge); a convolution's overlapping windows
// read the same element from several (m, k). Empty: every (m, k) its own element (a GEMM).
ScaleSimCycles simulate_scalesim_memory(const ScaleSimMemorySpec& spec, const ScaleSimGemm& gemm,
                                        std::span<const std::int64_t> ifmap_ids = {});

// One op as SCALE-Sim runs it on `hw`, a schema-1 arch (three SRAMs, word_size words, a port
// of dram.bandwidth / word_size words per cycle): the mapping's GEMM M x K x N, its ifmap elements
// from the op's input access, and K ordered as SCALE-Sim's im2col (the dims that slide with an
// output dim, the filter's rows and columns, before the channel; M and N in the op's order).
// The mapping must be one group on one array, unpacked (mapper::scalesim_unsupported).
ScaleSimCycles simulate_scalesim_op(const mapper::SystolicMapping& mapping,
                                    const arch::HardwareModel& hw);

}  // namespace coda::sim::analytical
