#include "sim/analytical/analytical_engine.h"

#include <algorithm>
#include <vector>

#include "core/version.h"
#include "sim/analytical/systolic_model.h"
#include "sim/analytical/unit_costs.h"

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
  // MAC units: a systolic chip's PEs; otherwise the matrix units' MACs per cycle at their
  // fastest precision.
  run.processing_elements = hw.processing_elements();
  if (run.processing_elements == 0)
    for (const DataType type : hw.matrix_precisions())
      run.processing_elements = std::max(
          run.processing_elements,
          static_cast<std::uint64_t>(hw.peak_ops_per_second(type) / 2.0 / hw.clock().value));
  run.ops.reserve(schedule.ops.size());
  run.area = hw.area().total;
  // evaluate_systolic is a pure function of the op's mapping, precision and MACs on this `hw`;
  // its fold walk is the costly part, and a network repeats shapes (LLaMA: every layer), so each
  // distinct shape is walked once per run and the result copied under the op's name.
  struct Walked {
    const mapper::ScheduledOp* op;
    results::OpResult result;
  };
  std::vector<Walked> walked;
  const auto systolic = [&](const mapper::ScheduledOp& op) {
    for (const Walked& w : walked) {
      if (w.op->mapping == op.mapping && w.op->precision == op.precision &&
          w.op->macs == op.macs && w.op->on_chip == op.on_chip) {
        results::OpResult copy = w.result;
        copy.name = op.name;
        return copy;
      }
    }
    walked.push_back({&op, evaluate_systolic(op, hw)});
    return walked.back().result;
  };
  for (const mapper::ScheduledOp& op : schedule.ops) {
    if (op.loop_nest) {
      run.ops.push_back(evaluate_loop_nest(op, hw));
    } else if (op.placement == mapper::Placement::Systolic) {
      // Operands held on chip are priced inside the fold walk (op.on_chip), time included.
      run.ops.push_back(systolic(op));
      add_fixed_cost(run.ops.back(), op_fixed_seconds(op, hw), hw);
      add_energy(run.ops.back(), op, 0.0, hw);
    } else {
      std::string why;
      auto result = evaluate_placed(op, hw, why);
      if (!result) {
        run.skipped.push_back({op.name, why});
        continue;
      }
      run.ops.push_back(std::move(*result));
    }
    run.total = run.total + run.ops.back().cost;
    for (const std::string& note : run.ops.back().notes)
      if (std::find(run.notes.begin(), run.notes.end(), note) == run.notes.end())
        run.notes.push_back(note);
  }
  return run;
}

}  // namespace coda::sim::analytical
