#pragma once
// Test helper: runs the `coda` command line in-process, as a user would, capturing its output.

#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.h"

namespace coda::cli::test {

struct Outcome {
  int code;
  std::string out;
  std::string err;
};

// `args` without the program name: {"run", "--arch", ...}.
inline Outcome coda(std::vector<const char*> args) {
  args.insert(args.begin(), "coda");
  std::ostringstream out, err;
  const int code = run_main(args, out, err);
  return {code, out.str(), err.str()};
}

}  // namespace coda::cli::test
