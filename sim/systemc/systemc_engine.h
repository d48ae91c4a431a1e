#pragma once
// The cycle-approximate engine: the schedule's ops as tile programs (sim/timing/chip_plan.h) run
// on a SystemC/TLM-2.0 model of the chip (chip_model.h), priced otherwise as the analytical
// engine prices them (traffic, MACs, energy), with the times, stalls by cause, memory-system
// activity and timeline of the simulation. docs/systemc.md describes the model.
//
// SystemC elaborates one simulation per process, so every run() forks a worker process that
// builds the model, simulates it and sends its outcome back through a pipe; the engine can run
// any number of times in one process, from any thread. Plain C++ header: SystemC stays inside
// sim/systemc/*.cpp.

#include "sim/engine.h"
#include "sim/timing/chip_run.h"

namespace coda::sim::systemc {

// A run with what the simulation did (requests, tile steps, context switches), for benchmarks.
struct SystemCRun {
  results::RunResult result;
  timing::SimulationStats stats;
};

class SystemCEngine final : public Engine {
 public:
  std::string_view name() const override { return "systemc"; }
  // Throws std::runtime_error when the worker process cannot be started or fails, and when the
  // trace file cannot be written.
  results::RunResult run(const mapper::Schedule& schedule, const arch::HardwareModel& hw,
                         const RunOptions& options) const override;
  SystemCRun run_with_stats(const mapper::Schedule& schedule, const arch::HardwareModel& hw,
                            const RunOptions& options) const;
};

// Adds "systemc" to a registry (next to register_builtin_engines in sim/driver.h).
void register_systemc_engine(EngineRegistry& registry);

}  // namespace coda::sim::systemc
