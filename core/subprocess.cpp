#include "core/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

extern char** environ;  // NOLINT(readability-redundant-declaration): POSIX, for posix_spawnp

namespace coda {
namespace {

// A pipe's two ends, closed when it goes out of scope.
class Pipe {
 public:
  Pipe() {
    std::array<int, 2> fds{-1, -1};
    if (::pipe2(fds.data(), O_CLOEXEC) == 0) {
      read_ = fds[0];
      write_ = fds[1];
    }
  }
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;
  ~Pipe() {
    close_read();
    close_write();
  }
  bool ok() const { return read_ >= 0 && write_ >= 0; }
  int read_end() const { return read_; }
  int write_end() const { return write_; }
  void close_read() {
    if (read_ >= 0) ::close(read_);
    read_ = -1;
  }
  void close_write() {
    if (write_ >= 0) ::close(write_);
    write_ = -1;
  }

 private:
  int read_ = -1;
  int write_ = -1;
};

// Blocks SIGPIPE on this thread while it lives, so a write to a child that has exited fails
// with EPIPE instead of ending the process; a SIGPIPE raised meanwhile is discarded.
class SigpipeGuard {
 public:
  SigpipeGuard() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
  }
  SigpipeGuard(const SigpipeGuard&) = delete;
  SigpipeGuard& operator=(const SigpipeGuard&) = delete;
  ~SigpipeGuard() {
    sigset_t pending;
    sigpending(&pending);
    if (sigismember(&pending, SIGPIPE) == 1) {
      const timespec zero{0, 0};
      sigtimedwait(&pipe_, nullptr, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }

 private:
  sigset_t pipe_{};
  sigset_t old_{};
};

// This process's environment with `set`'s entries replacing those of the same name.
std::vector<std::string> child_environment(const std::vector<std::string>& set) {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const std::string_view name = entry.substr(0, entry.find('=') + 1);
    bool replaced = false;
    for (const std::string& s : set) replaced = replaced || s.starts_with(name);
    if (!replaced) env.emplace_back(entry);
  }
  env.insert(env.end(), set.begin(), set.end());
  return env;
}

}  // namespace

ProgramRun run_program(const std::string& program, std::string_view input,
                       const ProgramOptions& options) {
  ProgramRun run;
  const SigpipeGuard guard;
  Pipe in, out, err;
  if (!in.ok() || !out.ok() || !err.ok()) {
    run.start_error = errno;
    return run;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in.read_end(), STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out.write_end(), STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err.write_end(), STDERR_FILENO);
  std::string name = program;
  std::array<char*, 2> argv{name.data(), nullptr};
  std::vector<std::string> env = child_environment(options.environment);
  std::vector<char*> envp;
  envp.reserve(env.size() + 1);
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid = -1;
  const int spawned =
      posix_spawnp(&pid, program.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) {
    run.start_error = spawned;
    return run;
  }
  in.close_read();
  out.close_write();
  err.close_write();
  ::fcntl(in.write_end(), F_SETFL, O_NONBLOCK);

  std::size_t written = 0;
  if (input.empty()) in.close_write();
  const bool limited = options.timeout.has_value();
  const auto deadline = limited ? std::chrono::steady_clock::now() + *options.timeout
                                : std::chrono::steady_clock::time_point::max();
  const auto left_ms = [&]() -> int {  // poll's timeout: -1 without a limit
    if (!limited) return -1;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    return static_cast<int>(std::max<std::chrono::milliseconds::rep>(left.count(), 0));
  };
  bool timed_out = false;
  std::array<char, 65536> buffer{};
  while (out.read_end() >= 0 || err.read_end() >= 0) {
    const int wait = left_ms();
    if (wait == 0) {
      timed_out = true;
      break;
    }
    std::vector<pollfd> fds;
    if (in.write_end() >= 0) fds.push_back({in.write_end(), POLLOUT, 0});
    if (out.read_end() >= 0) fds.push_back({out.read_end(), POLLIN, 0});
    if (err.read_end() >= 0) fds.push_back({err.read_end(), POLLIN, 0});
    if (::poll(fds.data(), fds.size(), wait) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (const pollfd& p : fds) {
      if (p.revents == 0) continue;
      if (p.fd == in.write_end()) {
        const ssize_t n = ::write(p.fd, input.data() + written, input.size() - written);
        if (n > 0) written += static_cast<std::size_t>(n);
        if ((n < 0 && errno != EAGAIN) || written == input.size()) in.close_write();
        continue;
      }
      const ssize_t n = ::read(p.fd, buffer.data(), buffer.size());
      if (n > 0) {
        (p.fd == out.read_end() ? run.out : run.err)
            .append(buffer.data(), static_cast<std::size_t>(n));
      } else if (n == 0 || errno != EAGAIN) {
        if (p.fd == out.read_end())
          out.close_read();
        else
          err.close_read();
      }
    }
  }
  in.close_write();
  // The child may still run after closing its output: wait for it up to the deadline too.
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (true) {
    const pid_t done = ::waitpid(pid, &status, timed_out || !limited ? 0 : WNOHANG);
    if (done == pid || (done < 0 && errno != EINTR)) break;
    if (done != 0) continue;
    if (std::chrono::steady_clock::now() >= deadline) {
      timed_out = true;
      ::kill(pid, SIGKILL);
    } else {
      ::usleep(1000);
    }
  }
  if (timed_out) {
    run.end = ProgramRun::End::TimedOut;
  } else if (WIFSIGNALED(status)) {
    run.end = ProgramRun::End::Signalled;
    run.signal = WTERMSIG(status);
  } else {
    run.end = ProgramRun::End::Exited;
    run.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  return run;
}

}  // namespace coda
