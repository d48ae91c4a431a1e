#pragma once
// `coda sweep SPEC.yaml --out DIR [--threads N] [--resume] [--limit N]`: run a design-space
// sweep (docs/sweeps.md). Every finished point goes into DIR/sweep.db at once, so an interrupted
// sweep resumes with --resume; at the end DIR/results.csv and DIR/results.json are written from
// the store. Progress: a bar rewritten in place on a terminal, a plain line every few seconds
// otherwise.

#include <cstdint>
#include <iosfwd>
#include <string>

namespace CLI {
class App;
}

namespace coda::cli {

struct SweepArgs {
  std::string spec;
  std::string out_dir;
  unsigned threads = 0;  // 0: every hardware thread
  bool resume = false;
  std::uint64_t limit = 0;  // 0: no limit
};

CLI::App* add_sweep_command(CLI::App& app, SweepArgs& args);
int run_sweep_command(const SweepArgs& args, std::ostream& out, std::ostream& err);

}  // namespace coda::cli
