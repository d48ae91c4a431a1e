#pragma once
// The cycle-approximate engine: the schedule's ops as tile programs (sim/timing/chip_plan.h) run
// on a SystemC/TLM-2.0 model of the chip (chip_model.h), priced otherwise as the analytical
// engine prices them (traffic, MACs, energy), with the times, stalls by cause, memory-system
// activity and timeline of the simulation. docs/systemc.md describes the model.
//
// SystemC elaborates one simulation per process, so every run() starts the worker program
// coda-systemc-worker (worker_main.cpp) with posix_spawn, sends it the plan and reads back its
// outcome; the engine can run any number of times in one process, from any thread. Only the
// worker links SystemC: coda and the engine's library do not, and this header is plain C++.

#include <filesystem>
#include <utility>

#include "sim/engine.h"
#include "sim/timing/chip_run.h"

namespace coda::sim::systemc {

// A run with what the simulation did (requests, tile steps, context switches), for benchmarks.
struct SystemCRun {
  results::RunResult result;
  timing::SimulationStats stats;
};

inline constexpr const char* kWorkerName = "coda-systemc-worker";

class SystemCEngine final : public Engine {
 public:
  // The worker program: coda-systemc-worker beside the running program, else where the build
  // put it.
  SystemCEngine() = default;
  // The worker program at `worker` (tests, and programs that ship it elsewhere).
  explicit SystemCEngine(std::filesystem::path worker) : worker_(std::move(worker)) {}

  std::string_view name() const override { return "systemc"; }
  // Throws std::runtime_error when the worker program cannot be found or started or fails, and
  // when the trace file cannot be written.
  results::RunResult run(const mapper::Schedule& schedule, const arch::HardwareModel& hw,
                         const RunOptions& options) const override;
  SystemCRun run_with_stats(const mapper::Schedule& schedule, const arch::HardwareModel& hw,
                            const RunOptions& options) const;
  // The worker program this engine starts; throws std::runtime_error naming the places it looked
  // when there is none.
  std::filesystem::path worker_program() const;

 private:
  std::filesystem::path worker_;
};

// Adds "systemc" to a registry (next to register_builtin_engines in sim/driver.h).
void register_systemc_engine(EngineRegistry& registry);

}  // namespace coda::sim::systemc
