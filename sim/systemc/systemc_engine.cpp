#include "sim/systemc/systemc_engine.h"

#include <cstring>
#include <stdexcept>
#include <string>
#include <system_error>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/subprocess.h"
#include "core/text.h"
#include "sim/analytical/analytical_engine.h"
#include "sim/timing/chip_plan.h"
#include "sim/timing/chip_run.h"
#include "sim/trace_events.h"

namespace coda::sim::systemc {
namespace {

// Runs the worker program on the plan (core/subprocess.h: posix_spawnp, so no fork of this
// possibly multithreaded process runs any code of ours) and reads its answer. SystemC's banner
// is off in its environment (it would be printed before sc_main redirects SystemC's output).
timing::ChipOutcome run_in_worker(const std::filesystem::path& program,
                                  const timing::ChipPlan& plan) {
  const std::string path = program.string();
  const ProgramRun run =
      run_program(path, dump_json(nlohmann::ordered_json(plan)),
                  {.environment = {"SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1"}});
  if (run.end == ProgramRun::End::NotStarted)
    throw std::runtime_error(fmt::format("systemc engine: cannot start its worker program {}: {}",
                                         path, std::strerror(run.start_error)));
  if (run.out.rfind("error\n", 0) == 0)
    throw std::runtime_error("systemc engine: the simulation failed: " + run.out.substr(6));
  if (!run.exited_ok() || run.out.rfind("ok\n", 0) != 0)
    throw std::runtime_error(fmt::format(
        "systemc engine: its worker program {} {}{}", path,
        run.end == ProgramRun::End::Signalled
            ? fmt::format("was killed by signal {}", run.signal)
        : !run.exited_ok() ? fmt::format("exited with status {}", run.exit_status)
                           : std::string("did not answer \"ok\" or \"error\""),
        run.err.empty() ? "" : ": " + run.err));
  return nlohmann::ordered_json::parse(run.out.substr(3)).get<timing::ChipOutcome>();
}

// The running program's directory (/proc/self/exe's), empty when it cannot be read.
std::filesystem::path own_directory() {
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  return error ? std::filesystem::path{} : self.parent_path();
}

}  // namespace

results::RunResult SystemCEngine::run(const mapper::Schedule& schedule,
                                      const arch::HardwareModel& hw,
                                      const RunOptions& options) const {
  return run_with_stats(schedule, hw, options).result;
}

SystemCRun SystemCEngine::run_with_stats(const mapper::Schedule& schedule,
                                         const arch::HardwareModel& hw,
                                         const RunOptions& options) const {
  // The closed forms price every op (traffic, MACs, energy, the ops it cannot run); the
  // simulation times the same ops, one work per priced op.
  const std::vector<analytical::PricedOp> priced = analytical::price_ops(schedule, hw);
  const timing::ChipPlan plan{timing::chip_params(hw), timing::plan_ops(schedule, priced, hw)};
  results::RunResult analytical = analytical::assemble_run(schedule, hw, priced);
  const timing::ChipOutcome outcome = run_in_worker(worker_program(), plan);
  results::RunResult run =
      timing::chip_result(std::move(analytical), plan.works, outcome, plan.chip, hw, name());
  if (!options.trace.empty())
    write_trace_file(options.trace, [&](std::ostream& out) {
      timing::write_chrome_trace(out, plan.works, outcome, run, plan.chip);
    });
  return {std::move(run), outcome.stats};
}

std::filesystem::path SystemCEngine::worker_program() const {
  if (!worker_.empty()) return worker_;
  std::filesystem::path beside = own_directory() / kWorkerName;
  std::error_code error;
  if (std::filesystem::is_regular_file(beside, error)) return beside;
  std::filesystem::path built = CODA_SYSTEMC_WORKER_BUILT_AT;
  if (std::filesystem::is_regular_file(built, error)) return built;
  throw std::runtime_error(fmt::format(
      "systemc engine: its worker program {} is neither beside this program ({}) nor where the "
      "build put it ({}); build it (cmake --build build --target {}) and keep it beside coda",
      kWorkerName, beside.string(), built.string(), kWorkerName));
}

void register_systemc_engine(EngineRegistry& registry) {
  registry.add("systemc", [] { return std::make_unique<SystemCEngine>(); });
}

}  // namespace coda::sim::systemc
