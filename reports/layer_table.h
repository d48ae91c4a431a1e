#pragma once
// Tables made from a stored RunResult: the per-layer text table the CLI prints and the
// layers.csv it writes. Reports read results only; they never run anything.

#include <string>

#include "core/results.h"

namespace coda::reports {

// A fixed-width table, one row per op and a total row, for a terminal.
std::string format_layer_table(const results::RunResult& run);

// One header line and one row per op. Columns: layer, the mapping entries (Sr, Sc, T, folds,
// groups), macs, compute/stall/total cycles, utilization, mapping efficiency, bound, arithmetic
// intensity, then <level>_<tensor>_read_bytes and _write_bytes for each traffic entry (named
// from the first op; every op of a run has the same entries).
std::string format_layers_csv(const results::RunResult& run);

}  // namespace coda::reports
