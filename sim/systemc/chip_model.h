#pragma once
// The SystemC/TLM-2.0 model of a chip at tile granularity, built from plain ChipParams and the
// ops' tile programs (sim/timing/chip_plan.h), and run to completion. This header is plain C++:
// the SystemC modules live in chip_model.cpp and modules.h, so nothing outside sim/systemc/
// sees a SystemC header.
//
// Modules (loosely timed, blocking transport, one quantum keeper per core):
//   Core          one per engine core: an SC_THREAD that runs its share of every op's steps
//                 (timing::execute_share), each tile transfer a b_transport through its socket;
//                 between ops it waits for every core (the op barrier).
//   Interconnect  the on-chip network or the SM-to-L2 path: one timing::LinkModel per core (or
//                 one shared), forwarding every transfer to DRAM.
//   DramTarget    timing::DramModel: channels, bandwidth, banks and rows, latency.
// The timing lives in those plain classes; the modules pass requests and advance time. A
// process can elaborate one simulation only: call simulate_chip once per process (the engine
// runs it in a worker process).

#include <vector>

#include "sim/timing/chip_plan.h"
#include "sim/timing/chip_run.h"

namespace coda::sim::systemc {

// Quantum: how far a core may run ahead of SystemC time before it yields, in cycles.
inline constexpr double kDefaultQuantumCycles = 10000;

// The outcome's stats count the transactions, steps and synchronisations.
timing::ChipOutcome simulate_chip(const timing::ChipParams& chip,
                                  const std::vector<timing::OpWork>& works,
                                  double quantum_cycles = kDefaultQuantumCycles);

}  // namespace coda::sim::systemc
