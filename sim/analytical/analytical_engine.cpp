#include "sim/analytical/analytical_engine.h"

#include "core/version.h"
#include "sim/analytical/systolic_model.h"

namespace coda::sim::analytical {

results::RunResult AnalyticalEngine::run(const mapper::Schedule& schedule,
                                         const arch::HardwareModel& hw,
                                         const RunOptions& /*options*/) const {
  results::RunResult run;
  run.provenance.coda_version = kVersion;
  run.provenance.engine = std::string(name());
  run.arch = hw.name();
  run.workload = schedule.workload;
  run.clock = hw.clock();
  run.processing_elements = hw.processing_elements();
  run.ops.reserve(schedule.ops.size());
  for (const mapper::ScheduledOp& op : schedule.ops) {
    run.ops.push_back(evaluate_systolic(op, hw));
    run.total = run.total + run.ops.back().cost;
  }
  return run;
}

}  // namespace coda::sim::analytical
