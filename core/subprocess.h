#pragma once
// Runs a program as a child process: `input` goes in on its standard input, its standard output
// and error come back, within an optional time limit. posix_spawnp, so a multithreaded caller
// runs no code of its own in the child; every pipe is close-on-exec, so a child started meanwhile
// by another thread holds none of this one's. Input and output are moved together (poll), so a
// child that writes before it has read everything cannot deadlock the caller. SIGPIPE is blocked
// on the calling thread while it writes: a child that exits early is an outcome, not a signal.
// Used by the report's charts (gnuplot) and the SystemC engine's worker.

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace coda {

struct ProgramRun {
  enum class End {
    NotStarted,  // posix_spawnp failed: start_error says why (ENOENT: not found)
    Exited,      // exit_status holds its status
    Signalled,   // signal holds the signal that ended it
    TimedOut,    // ran past the limit and was killed
  };
  End end = End::NotStarted;
  int start_error = 0;  // errno of a failed start
  int exit_status = 0;
  int signal = 0;
  std::string out;  // standard output
  std::string err;  // standard error
  bool exited_ok() const { return end == End::Exited && exit_status == 0; }
};

struct ProgramOptions {
  std::optional<std::chrono::milliseconds> timeout;  // nullopt: no limit
  // "NAME=value" entries set in the child's environment (this process's otherwise).
  std::vector<std::string> environment;
};

// Runs `program` (a path, or a name looked up on PATH) with no arguments.
ProgramRun run_program(const std::string& program, std::string_view input,
                       const ProgramOptions& options = {});

}  // namespace coda
