#pragma once
// The analytical engine: evaluates every op of a schedule with the closed-form systolic model.

#include "sim/engine.h"

namespace coda::sim::analytical {

class AnalyticalEngine final : public Engine {
 public:
  std::string_view name() const override { return "analytical"; }
  results::RunResult run(const mapper::Schedule& schedule, const arch::HardwareModel& hw,
                         const RunOptions& options) const override;
};

}  // namespace coda::sim::analytical
