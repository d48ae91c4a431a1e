#include "sim/analytical/analytical_engine.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "core/version.h"
#include "sim/analytical/systolic_model.h"
#include "sim/analytical/timeline.h"
#include "sim/analytical/unit_costs.h"
#include "sim/trace_events.h"

namespace coda::sim::analytical {

namespace {

// A fused epilogue op on a vector unit that takes the matrix unit's outputs as they stream out
// (arch `pipelined_epilogue`): its cycles run under the group's contraction, up to the
// contraction's own cycles not yet used by earlier followers (`budget`); only the rest is added.
// Its bytes and energy stay as priced. Returns the cycles hidden.
std::uint64_t hide_under_contraction(results::OpResult& op, std::uint64_t budget) {
  const std::uint64_t hidden = std::min(op.cost.cycles.value, budget);
  if (hidden == 0) return 0;
  op.cost.cycles = Cycles{op.cost.cycles.value - hidden};
  op.cost.compute_cycles = Cycles{std::min(op.cost.compute_cycles.value, op.cost.cycles.value)};
  op.cost.stall_cycles = Cycles{op.cost.cycles.value - op.cost.compute_cycles.value};
  op.notes.emplace_back(
      "fused epilogue pipelined with its contraction (arch pipelined_epilogue): its cycles run "
      "under the contraction's, and only what exceeds them is added");
  return hidden;
}

}  // namespace

std::vector<PricedOp> price_ops(const mapper::Schedule& schedule, const arch::HardwareModel& hw) {
  std::vector<PricedOp> priced;
  priced.reserve(schedule.ops.size());
  SystolicMemo systolic(hw);  // each distinct shape walked once per run
  // A fused group's contraction: its group and the cycles a pipelined epilogue can still hide
  // under (see hide_under_contraction).
  std::optional<std::size_t> group;
  std::uint64_t hideable = 0;
  const arch::ComputeUnitSpec* vector = hw.vector_unit();
  const bool pipelined = vector != nullptr && vector->pipelined_epilogue;
  for (const mapper::ScheduledOp& op : schedule.ops) {
    PricedOp& out = priced.emplace_back();
    if (op.loop_nest) {
      out.result = evaluate_loop_nest(op, hw);
    } else if (op.placement == mapper::Placement::Systolic) {
      // Operands held on chip are priced inside the fold walk (op.on_chip), time included.
      out.result = systolic.evaluate(op);
      add_fixed_cost(*out.result, op_fixed_seconds(op, hw), hw);
      add_energy(*out.result, op, 0.0, hw);
    } else {
      out.result = evaluate_placed(op, hw, out.skipped, &systolic);
      if (!out.result) continue;
    }
    if (op.own_kernel) {  // a group's head, or an op on its own: only a contraction hides
      const bool contraction = op.placement == mapper::Placement::Systolic ||
                               op.placement == mapper::Placement::TensorCore;
      group = contraction ? op.fusion_group : std::nullopt;
      hideable = contraction ? out.result->cost.cycles.value : 0;
    } else if (pipelined && op.fusion_group && op.fusion_group == group &&
               op.placement == mapper::Placement::Vector) {
      hideable -= hide_under_contraction(*out.result, hideable);
    }
  }
  return priced;
}

results::RunResult assemble_run(const mapper::Schedule& schedule, const arch::HardwareModel& hw,
                                std::span<const PricedOp> priced) {
  results::RunResult run;
  run.provenance.coda_version = kVersion;
  run.provenance.engine = std::string(kAnalyticalEngineName);
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
  run.ops.reserve(priced.size());
  run.area = hw.area().total;
  for (std::size_t i = 0; i < priced.size() && i < schedule.ops.size(); ++i) {
    if (!priced[i].result) {
      run.skipped.push_back({schedule.ops[i].name, priced[i].skipped});
      continue;
    }
    results::OpResult& op = run.ops.emplace_back(*priced[i].result);
    op.precision = std::string(to_string(schedule.ops[i].precision));
    run.total = run.total + op.cost;
    for (const std::string& note : op.notes)
      if (std::find(run.notes.begin(), run.notes.end(), note) == run.notes.end())
        run.notes.push_back(note);
  }
  return run;
}

results::RunResult AnalyticalEngine::run(const mapper::Schedule& schedule,
                                         const arch::HardwareModel& hw,
                                         const RunOptions& options) const {
  results::RunResult run = assemble_run(schedule, hw, price_ops(schedule, hw));
  if (!options.trace.empty())
    write_trace_file(options.trace, [&](std::ostream& out) { write_sequential_trace(out, run); });
  return run;
}

}  // namespace coda::sim::analytical
