#pragma once
// Engines turn a mapper::Schedule on a HardwareModel into a RunResult. Every engine returns the
// same result types, so comparing two engines is one call. Engines are registered explicitly
// (register_builtin_engines in sim/driver.h); nothing registers itself at static-init time.

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "arch/hardware_model.h"
#include "core/results.h"
#include "mapper/schedule.h"

namespace coda::sim {

struct RunOptions {
  // Where the engine writes its timeline as Chrome trace-event JSON; empty: none. The analytical
  // engine's is its ops back to back (sim/analytical/timeline.h), systemc's the cores' tiles.
  std::filesystem::path trace;
};

// Contract: run() is deterministic for the same inputs; it does not print; a schedule that the
// hardware cannot run is reported in the result, not thrown.
class Engine {
 public:
  virtual ~Engine() = default;
  virtual std::string_view name() const = 0;
  virtual results::RunResult run(const mapper::Schedule& schedule, const arch::HardwareModel& hw,
                                 const RunOptions& options) const = 0;
};

class EngineRegistry {
 public:
  using Factory = std::function<std::unique_ptr<Engine>()>;
  void add(std::string name, Factory make);  // a duplicate name is a logic_error
  // An unknown name throws std::invalid_argument listing the known ones.
  std::unique_ptr<Engine> create(std::string_view name) const;
  std::vector<std::string> names() const;

 private:
  std::map<std::string, Factory, std::less<>> factories_;
};

}  // namespace coda::sim
