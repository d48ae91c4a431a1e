#include "sim/systemc/systemc_engine.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/text.h"
#include "sim/analytical/analytical_engine.h"
#include "sim/systemc/chip_model.h"
#include "sim/timing/chip_plan.h"
#include "sim/timing/chip_run.h"
#include "sim/trace_events.h"

namespace coda::sim::systemc {
namespace {

bool write_all(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

// The worker: simulate, send "ok\n" + the outcome's JSON or "error\n" + why, exit. Its standard
// output goes to /dev/null (SystemC reports there); the parent reads only the pipe.
[[noreturn]] void worker(int out, const timing::ChipParams& chip,
                         const std::vector<timing::OpWork>& works) {
  const int null = ::open("/dev/null", O_WRONLY);
  if (null >= 0) {
    ::dup2(null, STDOUT_FILENO);
    ::close(null);
  }
  ::setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
  std::string message;
  try {
    nlohmann::ordered_json j = simulate_chip(chip, works);
    message = "ok\n" + dump_json(j);
  } catch (const std::exception& e) {
    message = std::string("error\n") + e.what();
  }
  ::_exit(write_all(out, message) ? 0 : 3);
}

timing::ChipOutcome run_in_worker(const timing::ChipParams& chip,
                                  const std::vector<timing::OpWork>& works) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    throw std::runtime_error(fmt::format("systemc engine: cannot make a pipe to its worker: {}",
                                         std::strerror(errno)));
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int error = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    throw std::runtime_error(fmt::format("systemc engine: cannot start its worker process: {}",
                                         std::strerror(error)));
  }
  if (pid == 0) {
    ::close(fds[0]);
    worker(fds[1], chip, works);
  }
  ::close(fds[1]);
  std::string text;
  char buffer[65536];
  for (;;) {
    const ssize_t n = ::read(fds[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (text.rfind("error\n", 0) == 0)
    throw std::runtime_error("systemc engine: the simulation failed: " + text.substr(6));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || text.rfind("ok\n", 0) != 0)
    throw std::runtime_error(
        WIFSIGNALED(status)
            ? fmt::format("systemc engine: its worker process was killed by signal {}",
                          WTERMSIG(status))
            : fmt::format("systemc engine: its worker process exited with status {}",
                          WIFEXITED(status) ? WEXITSTATUS(status) : -1));
  return nlohmann::ordered_json::parse(text.substr(3)).get<timing::ChipOutcome>();
}

}  // namespace

results::RunResult SystemCEngine::run(const mapper::Schedule& schedule,
                                      const arch::HardwareModel& hw,
                                      const RunOptions& options) const {
  return run_with_stats(schedule, hw, options).result;
}

SystemCRun SystemCEngine::run_with_stats(const mapper::Schedule& schedule,
                                         const arch::HardwareModel& hw,
                                         const RunOptions& options) const {
  const results::RunResult analytical = analytical::AnalyticalEngine{}.run(schedule, hw, {});
  const timing::ChipParams chip = timing::chip_params(hw);
  const std::vector<timing::OpWork> works = timing::plan_ops(schedule, analytical, hw);
  const timing::ChipOutcome outcome = run_in_worker(chip, works);
  results::RunResult run = timing::chip_result(analytical, works, outcome, chip, hw, name());
  if (!options.trace.empty())
    write_trace_file(options.trace, [&](std::ostream& out) {
      timing::write_chrome_trace(out, works, outcome, run, chip);
    });
  return {std::move(run), outcome.stats};
}

void register_systemc_engine(EngineRegistry& registry) {
  registry.add("systemc", [] { return std::make_unique<SystemCEngine>(); });
}

}  // namespace coda::sim::systemc
