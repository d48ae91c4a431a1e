#pragma once
// `coda sweep SPEC.yaml --out DIR [--threads N] [--resume] [--limit N]`: run a design-space
// sweep (docs/sweeps.md). Every finished point goes into DIR/sweep.db at once, so an interrupted
// sweep resumes with --resume; at the end DIR/results.csv and DIR/results.json are written from
// the store. Progress goes to stderr: a bar with the rate and ETA rewritten in place when stderr
// is a terminal, a plain line every few seconds otherwise. Under `mpirun -np N` (when coda was
// built with MPI) the points are split over the ranks and rank 0 writes the store
// (cli/sweep_mpi.h).

#include <cstdint>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dse/sweep.h"
#include "dse/sweep_spec.h"
#include "dse/sweep_store.h"

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
  // Write these points' arch YAMLs into DIR/designs/point-N.yaml instead of running the sweep.
  std::vector<std::uint64_t> export_designs;
  // Tests only (hidden --test-pause-after N): once N points of this run are committed, print
  // "paused: K points stored" (K >= N, the stored count) to stdout and hold the store's writer
  // until the process is killed or a SIGINT / SIGTERM stops the sweep, so a test signals it at a
  // known point (0: off).
  std::uint64_t test_pause_after = 0;
};

CLI::App* add_sweep_command(CLI::App& app, SweepArgs& args);
int run_sweep_command(const SweepArgs& args, std::ostream& out, std::ostream& err);

// Writes each point's whole arch YAML (dse::point_arch_yaml) to DIR/point-N.yaml, creating DIR;
// "wrote FILE" lines go to `out`. False with the error in `err` (a point out of range, a folder
// or file that cannot be written). For --export-design and `coda report`.
bool write_designs(const dse::SweepSpec& spec, const std::vector<std::uint64_t>& points,
                   const std::filesystem::path& dir, std::ostream& out, std::ostream& err);

// An exclusive lock (flock) on DIR/sweep.lock, which holds the owner's process id, for as long
// as it lives: two sweeps into one folder would both compute its missing points and one would die
// on the store's unique keys. The kernel drops it when the process ends, kill -9 included.
class SweepFolderLock {
 public:
  SweepFolderLock() = default;
  SweepFolderLock(const SweepFolderLock&) = delete;
  SweepFolderLock& operator=(const SweepFolderLock&) = delete;
  SweepFolderLock(SweepFolderLock&& other) noexcept;
  SweepFolderLock& operator=(SweepFolderLock&& other) noexcept;
  ~SweepFolderLock();
  // Takes DIR's lock; false with `why` (naming the process that holds it) when another has it.
  bool acquire(const std::filesystem::path& dir, std::string& why);

 private:
  int fd_ = -1;
};

}  // namespace coda::cli
