#include "reports/gnuplot.h"

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "core/subprocess.h"

namespace coda::reports {
namespace {

GnuplotOutput failure(std::string message) { return {false, {}, std::move(message)}; }

}  // namespace

GnuplotOutput run_gnuplot(std::string_view script, std::chrono::milliseconds timeout,
                          const std::string& program) {
  ProgramRun run = run_program(program, script, {.timeout = timeout});
  switch (run.end) {
    case ProgramRun::End::NotStarted:
      if (run.start_error == ENOENT)
        return failure(fmt::format(
            "'{}' is not installed (not found on PATH); install the Debian package gnuplot-nox "
            "(apt-get install gnuplot-nox)",
            program));
      return failure(fmt::format("cannot start '{}': {}", program, std::strerror(run.start_error)));
    case ProgramRun::End::TimedOut:
      return failure(fmt::format("'{}' ran past its {} ms limit and was stopped", program,
                                 timeout.count()));
    case ProgramRun::End::Exited:
    case ProgramRun::End::Signalled: break;
  }
  if (!run.exited_ok() || run.out.empty())
    return failure(fmt::format("'{}' failed ({}): {}", program,
                               run.end == ProgramRun::End::Exited
                                   ? fmt::format("exit status {}", run.exit_status)
                                   : std::string("killed by a signal"),
                               run.err.empty() ? "no output" : run.err));
  return {true, std::move(run.out), {}};
}

}  // namespace coda::reports
