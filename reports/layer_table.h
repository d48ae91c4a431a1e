#pragma once
// Tables made from a stored RunResult: the per-layer text table the CLI prints and the
// layers.csv it writes. Reports read results only; they never run anything.

#include <string>

#include "core/results.h"

namespace coda::reports {

// Whether every op ran on a systolic array (then the tables show SCALE-Sim's columns).
bool all_systolic(const results::RunResult& run);

// A fixed-width table, one row per op and a total row, for a terminal. A systolic run shows
// Sr, Sc, T and folds; any other run shows each op's unit, its mapping as name=value pairs, its
// time and its energy.
std::string format_layer_table(const results::RunResult& run);

// One header line and one row per op.
// Systolic runs: layer, the mapping entries (Sr, Sc, T, folds, groups), macs, compute/stall/total
// cycles, utilization, mapping efficiency, bound, arithmetic intensity, then
// <level>_<tensor>_read_bytes and _write_bytes for each traffic entry (named from the first op;
// every op of a systolic run has the same entries), then energy_joules.
// Other runs: layer, unit, mapping ("name=value;..."), macs, cycles, seconds, utilization,
// mapping efficiency, bound, arithmetic intensity, on-chip and DRAM bytes, energy_joules.
std::string format_layers_csv(const results::RunResult& run);

}  // namespace coda::reports
