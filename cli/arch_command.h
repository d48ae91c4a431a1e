#pragma once
// `coda arch A.yaml [B.yaml ...] [--summary] [--json OUT]`: load architectures and print what
// coda derives from them: peaks per precision, the memory hierarchy with chip-wide bandwidths
// and ridge points, the links, the energy table and the area.

#include <iosfwd>
#include <string>
#include <vector>

#include "arch/hardware_model.h"

namespace CLI {
class App;
}

namespace coda::cli {

struct ArchArgs {
  std::vector<std::string> files;
  bool summary = false;  // the default output; the flag is accepted for clarity
};

CLI::App* add_arch_command(CLI::App& app, ArchArgs& args);
int run_arch_command(const ArchArgs& args, std::ostream& out, std::ostream& err);

// The summary text of one model (also used by tests).
std::string format_arch_summary(const arch::HardwareModel& hw);

}  // namespace coda::cli
