#include "sim/systemc/systemc_engine.h"

#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/text.h"
#include "sim/analytical/analytical_engine.h"
#include "sim/timing/chip_plan.h"
#include "sim/timing/chip_run.h"
#include "sim/trace_events.h"

extern char** environ;

namespace coda::sim::systemc {
namespace {

// A file descriptor closed when it goes out of scope.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  int get() const { return fd_; }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

std::runtime_error system_error(const std::string& what, int error) {
  return std::runtime_error(fmt::format("systemc engine: {}: {}", what, std::strerror(error)));
}

// The plan to the worker: send() with MSG_NOSIGNAL, so a worker that died early is an error here
// (EPIPE), not a SIGPIPE that kills the process.
void send_all(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::send(fd, text.data() + done, text.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw system_error("cannot send the plan to its worker process", errno);
    done += static_cast<std::size_t>(n);
  }
}

std::string receive_all(int fd) {
  std::string text;
  char buffer[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw system_error("cannot read its worker process's answer", errno);
    if (n == 0) return text;
    text.append(buffer, static_cast<std::size_t>(n));
  }
}

// The worker's environment: this process's, with SystemC's banner off (it would otherwise be
// printed before sc_main redirects SystemC's output).
std::vector<std::string> worker_environment() {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e)
    if (std::strncmp(*e, "SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=", 34) != 0) env.emplace_back(*e);
  env.emplace_back("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1");
  return env;
}

// Starts the worker program (posix_spawn: no fork of this possibly multithreaded process runs
// any code of ours), sends it the plan over a socket that is its standard input and output, and
// reads its answer. Every descriptor is close-on-exec, so a worker started meanwhile by another
// thread holds none of this one's, and this one's answer ends when its worker exits.
timing::ChipOutcome run_in_worker(const std::filesystem::path& program,
                                  const timing::ChipPlan& plan) {
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0)
    throw system_error("cannot make a socket to its worker process", errno);
  Fd ours(pair[0]);
  Fd theirs(pair[1]);

  posix_spawn_file_actions_t actions;
  if (const int error = ::posix_spawn_file_actions_init(&actions); error != 0)
    throw system_error("cannot start its worker process", error);
  ::posix_spawn_file_actions_adddup2(&actions, theirs.get(), STDIN_FILENO);
  ::posix_spawn_file_actions_adddup2(&actions, theirs.get(), STDOUT_FILENO);
  const std::string path = program.string();
  std::vector<std::string> env = worker_environment();
  std::vector<char*> envp;
  envp.reserve(env.size() + 1);
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string arg0 = path;
  char* argv[] = {arg0.data(), nullptr};
  pid_t pid = 0;
  const int spawned = ::posix_spawn(&pid, path.c_str(), &actions, nullptr, argv, envp.data());
  ::posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0)
    throw system_error(fmt::format("cannot start its worker program {}", path), spawned);
  theirs.reset();

  std::string text;
  std::string failure;
  try {
    send_all(ours.get(), dump_json(nlohmann::ordered_json(plan)));
    ::shutdown(ours.get(), SHUT_WR);
    text = receive_all(ours.get());
  } catch (const std::exception& e) {
    failure = e.what();
  }
  ours.reset();
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (text.rfind("error\n", 0) == 0)
    throw std::runtime_error("systemc engine: the simulation failed: " + text.substr(6));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || text.rfind("ok\n", 0) != 0)
    throw std::runtime_error(fmt::format(
        "systemc engine: its worker program {} {}{}", path,
        WIFSIGNALED(status) ? fmt::format("was killed by signal {}", WTERMSIG(status))
        : WIFEXITED(status) && WEXITSTATUS(status) != 0
            ? fmt::format("exited with status {}", WEXITSTATUS(status))
            : std::string("did not answer \"ok\" or \"error\""),
        failure.empty() ? "" : " (" + failure + ")"));
  return nlohmann::ordered_json::parse(text.substr(3)).get<timing::ChipOutcome>();
}

// The running program's directory (/proc/self/exe's), empty when it cannot be read.
std::filesystem::path own_directory() {
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  return error ? std::filesystem::path{} : self.parent_path();
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
  // The closed forms price every op (traffic, MACs, energy, the ops it cannot run); the
  // simulation times the same ops, one work per priced op.
  const std::vector<analytical::PricedOp> priced = analytical::price_ops(schedule, hw);
  const timing::ChipPlan plan{timing::chip_params(hw), timing::plan_ops(schedule, priced, hw)};
  results::RunResult analytical = analytical::assemble_run(schedule, hw, priced);
  const timing::ChipOutcome outcome = run_in_worker(worker_program(), plan);
  const timing::ChipParams& chip = plan.chip;
  const std::vector<timing::OpWork>& works = plan.works;
  results::RunResult run =
      timing::chip_result(std::move(analytical), works, outcome, chip, hw, name());
  if (!options.trace.empty())
    write_trace_file(options.trace, [&](std::ostream& out) {
      timing::write_chrome_trace(out, works, outcome, run, chip);
    });
  return {std::move(run), outcome.stats};
}

std::filesystem::path SystemCEngine::worker_program() const {
  if (!worker_.empty()) return worker_;
  std::filesystem::path beside = own_directory() / kWorkerName;
  std::error_code error;
  if (std::filesystem::is_regular_file(beside, error)) return beside;
  std::filesystem::path built = CODA_SYSTEMC_WORKER_BUILT_AT;
  if (std::filesystem::is_regular_file(built, error)) return built;
  throw std::runtime_error(fmt::format(
      "systemc engine: its worker program {} is neither beside this program ({}) nor where the "
      "build put it ({}); build it (cmake --build build --target {}) and keep it beside coda",
      kWorkerName, beside.string(), built.string(), kWorkerName));
}

void register_systemc_engine(EngineRegistry& registry) {
  registry.add("systemc", [] { return std::make_unique<SystemCEngine>(); });
}

}  // namespace coda::sim::systemc
