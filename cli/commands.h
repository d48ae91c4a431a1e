#pragma once
// The `coda` command line. main() only forwards here, so tests drive the real command with their
// own output streams.

#include <iosfwd>
#include <span>

namespace coda::cli {

// Parses `args` (args[0] is the program name) and runs the subcommand. Returns the exit code:
// 0 success, 1 bad input (diagnostics printed to `err`), 2 bad usage.
int run_main(std::span<const char* const> args, std::ostream& out, std::ostream& err);

}  // namespace coda::cli
