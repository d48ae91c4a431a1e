#include "reports/gnuplot.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <vector>

#include <fmt/format.h>

extern char** environ;  // NOLINT(readability-redundant-declaration): POSIX, for posix_spawnp

namespace coda::reports {
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

GnuplotOutput failure(std::string message) { return {false, {}, std::move(message)}; }

}  // namespace

GnuplotOutput run_gnuplot(std::string_view script, std::chrono::milliseconds timeout,
                          const std::string& program) {
  const SigpipeGuard guard;
  Pipe in, out, err;
  if (!in.ok() || !out.ok() || !err.ok())
    return failure(fmt::format("cannot create pipes for {}: {}", program, std::strerror(errno)));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in.read_end(), STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out.write_end(), STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err.write_end(), STDERR_FILENO);
  std::string name = program;
  std::array<char*, 2> argv{name.data(), nullptr};
  pid_t pid = -1;
  const int spawned = posix_spawnp(&pid, program.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) {
    if (spawned == ENOENT)
      return failure(fmt::format(
          "'{}' is not installed (not found on PATH); install the Debian package gnuplot-nox "
          "(apt-get install gnuplot-nox)",
          program));
    return failure(fmt::format("cannot start '{}': {}", program, std::strerror(spawned)));
  }
  in.close_read();
  out.close_write();
  err.close_write();
  ::fcntl(in.write_end(), F_SETFL, O_NONBLOCK);

  std::string svg, messages;
  std::size_t written = 0;
  if (script.empty()) in.close_write();
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  bool timed_out = false;
  std::array<char, 65536> buffer{};
  while (out.read_end() >= 0 || err.read_end() >= 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    std::vector<pollfd> fds;
    if (in.write_end() >= 0) fds.push_back({in.write_end(), POLLOUT, 0});
    if (out.read_end() >= 0) fds.push_back({out.read_end(), POLLIN, 0});
    if (err.read_end() >= 0) fds.push_back({err.read_end(), POLLIN, 0});
    if (::poll(fds.data(), fds.size(), static_cast<int>(left.count())) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (const pollfd& p : fds) {
      if (p.revents == 0) continue;
      if (p.fd == in.write_end()) {
        const ssize_t n = ::write(p.fd, script.data() + written, script.size() - written);
        if (n > 0) written += static_cast<std::size_t>(n);
        if ((n < 0 && errno != EAGAIN) || written == script.size()) in.close_write();
        continue;
      }
      const ssize_t n = ::read(p.fd, buffer.data(), buffer.size());
      if (n > 0) {
        (p.fd == out.read_end() ? svg : messages).append(buffer.data(), static_cast<std::size_t>(n));
      } else if (n == 0 || errno != EAGAIN) {
        if (p.fd == out.read_end())
          out.close_read();
        else
          err.close_read();
      }
    }
  }
  // The child may still run after closing its output: wait for it up to the deadline too.
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (true) {
    const pid_t done = ::waitpid(pid, &status, timed_out ? 0 : WNOHANG);
    if (done == pid || (done < 0 && errno != EINTR)) break;
    if (done != 0) continue;
    if (std::chrono::steady_clock::now() >= deadline) {
      timed_out = true;
      ::kill(pid, SIGKILL);
    } else {
      ::usleep(1000);
    }
  }
  if (timed_out)
    return failure(fmt::format("'{}' ran past its {} ms limit and was stopped", program,
                               timeout.count()));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || svg.empty())
    return failure(fmt::format("'{}' failed ({}): {}", program,
                               WIFEXITED(status) ? fmt::format("exit status {}", WEXITSTATUS(status))
                                                 : std::string("killed by a signal"),
                               messages.empty() ? "no output" : messages));
  return {true, std::move(svg), {}};
}

}  // namespace coda::reports
