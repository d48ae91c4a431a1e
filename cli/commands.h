#pragma once
// The `coda` command line. main() only forwards here, so tests drive the real command with their
// own output streams.

#include <iosfwd>
#include <span>

namespace coda::cli {

// The exit code of an exception that reached run_main: a bug, never bad input (BSD's EX_SOFTWARE).
inline constexpr int kInternalErrorExit = 70;

// Parses `args` (args[0] is the program name) and runs the subcommand. Returns the exit code:
// 0 success, 1 bad input (diagnostics printed to `err`), 2 bad usage, kInternalErrorExit when an
// exception escaped (a bug: "internal error: ..." on `err`).
int run_main(std::span<const char* const> args, std::ostream& out, std::ostream& err);

}  // namespace coda::cli
