#pragma once
// The analytical engine: evaluates every op of a schedule with the closed forms (the systolic
// model, the GPU and vector models, collectives, loop-nest costs; unit_costs.h says which).
//
// Two steps, public so another engine can build on the first without re-joining results:
// price_ops prices each op of the schedule (priced[i] is schedule.ops[i]'s), and assemble_run
// makes the run of them (totals, notes, the ops no unit could price). The SystemC engine prices
// with price_ops and times the same ops itself.

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "sim/engine.h"

namespace coda::sim::analytical {

// One schedule op as the closed forms price it: its result, or why no unit can price it.
struct PricedOp {
  std::optional<results::OpResult> result;  // nullopt: skipped
  std::string skipped;                      // why, when skipped
};

// Every op of `schedule`, in its order: closed form, fixed cost, energy, and a pipelined
// epilogue's cycles hidden under its contraction (arch pipelined_epilogue).
std::vector<PricedOp> price_ops(const mapper::Schedule& schedule, const arch::HardwareModel& hw);

// The run of `priced` (price_ops of the same schedule and hardware): provenance, the ops priced
// in schedule order, their totals and notes, the skipped ops with their reasons.
results::RunResult assemble_run(const mapper::Schedule& schedule, const arch::HardwareModel& hw,
                                std::span<const PricedOp> priced);

inline constexpr std::string_view kAnalyticalEngineName = "analytical";

class AnalyticalEngine final : public Engine {
 public:
  std::string_view name() const override { return kAnalyticalEngineName; }
  results::RunResult run(const mapper::Schedule& schedule, const arch::HardwareModel& hw,
                         const RunOptions& options) const override;
};

}  // namespace coda::sim::analytical
