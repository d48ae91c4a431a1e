#pragma once
// The analytical engine's timeline: its ops back to back in schedule order (the engine prices a
// run as their sum), one track per unit, with the DRAM bandwidth each op draws as a counter, in
// the Chrome trace-event format (the JSON object form, which Perfetto and chrome://tracing open).
// `coda run --trace FILE` with the analytical engine; the SystemC engine writes its own (cores,
// overlap, stalls: sim/timing/chip_run.h).

#include <iosfwd>

#include "core/results.h"

namespace coda::sim::analytical {

// One complete event ("ph": "X") per op on its unit's track, timestamps in microseconds at the
// run's clock, args with the op's MACs, compute and stall cycles, DRAM bytes and bound; a counter
// ("ph": "C") "dram bandwidth (GB/s)" of each op's mean DRAM traffic over its time.
void write_sequential_trace(std::ostream& out, const results::RunResult& run);

}  // namespace coda::sim::analytical
