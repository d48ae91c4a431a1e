#include "cli/sweep_command.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <ostream>
#include <stop_token>
#include <string_view>
#include <thread>
#include <utility>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/options.h"
#include "dse/mpi/sweep_mpi.h"
#include "dse/sweep.h"
#include "dse/sweep_spec.h"
#include "dse/sweep_store.h"

namespace coda::cli {
namespace {

std::string eta_text(double seconds) {
  if (seconds >= 3600) return fmt::format("{:.0f}h{:02.0f}m", seconds / 3600,
                                          std::fmod(seconds, 3600) / 60);
  if (seconds >= 60) return fmt::format("{:.0f}m{:02.0f}s", std::floor(seconds / 60),
                                        std::fmod(seconds, 60));
  return fmt::format("{:.0f}s", seconds);
}

// Prints progress (to stderr): on a terminal a bar rewritten with \r, else a line every few
// seconds and one at the end.
class ProgressPrinter {
 public:
  ProgressPrinter(std::ostream& out, bool terminal) : out_(out), terminal_(terminal) {}

  void operator()(const dse::SweepProgress& p) {
    const bool last = p.done == p.total;
    const double every = terminal_ ? 0.1 : 5.0;
    if (!last && p.elapsed_s - printed_at_ < every) return;
    printed_at_ = p.elapsed_s;
    const double rate = p.elapsed_s > 0 ? static_cast<double>(p.done) / p.elapsed_s : 0.0;
    const double eta = rate > 0 ? static_cast<double>(p.total - p.done) / rate : 0.0;
    const double share = p.total > 0 ? static_cast<double>(p.done) / static_cast<double>(p.total)
                                     : 1.0;
    if (terminal_) {
      constexpr int kWidth = 30;
      const auto filled = static_cast<int>(share * kWidth);
      out_ << fmt::format("\r[{}{}] {}/{} {:3.0f}% {:.1f} points/s ETA {}   ",
                          std::string(static_cast<std::size_t>(filled), '#'),
                          std::string(static_cast<std::size_t>(kWidth - filled), '.'), p.done,
                          p.total, 100 * share, rate, eta_text(eta));
      if (last) out_ << "\n";
    } else {
      out_ << fmt::format("sweep: {}/{} points ({:.0f}%), {} infeasible, {:.1f} points/s, "
                          "ETA {}\n",
                          p.done, p.total, 100 * share, p.infeasible, rate, eta_text(eta));
    }
    out_.flush();
  }

 private:
  std::ostream& out_;
  bool terminal_;
  double printed_at_ = -1e9;
};

// SIGINT and SIGTERM, while it lives, stop the sweep instead of the process: both are blocked in
// the thread that makes it (and so in every thread that thread starts afterwards, the sweep's
// workers and writer) and one thread waits for them with sigtimedwait, then sets `stop`. On
// destruction the old mask comes back (a signal that came after the watcher ended is then
// delivered as usual).
class SignalStop {
 public:
  SignalStop() {
    sigemptyset(&set_);
    sigaddset(&set_, SIGINT);
    sigaddset(&set_, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set_, &old_);
    watcher_ = std::jthread([this](const std::stop_token& token) {
      const timespec tick{0, 100'000'000};  // 100 ms: how soon the watcher sees it may end
      while (!token.stop_requested()) {
        const int caught = sigtimedwait(&set_, nullptr, &tick);
        if (caught > 0) {
          number_ = caught;
          stop_ = true;
          return;
        }
      }
    });
  }
  ~SignalStop() {
    watcher_.request_stop();
    watcher_.join();
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  SignalStop(const SignalStop&) = delete;
  SignalStop& operator=(const SignalStop&) = delete;
  const std::atomic<bool>& stop() const { return stop_; }
  int number() const { return number_; }
  std::string_view name() const { return number_ == SIGTERM ? "SIGTERM" : "SIGINT"; }

 private:
  sigset_t set_{};
  sigset_t old_{};
  std::atomic<bool> stop_{false};
  std::atomic<int> number_{0};
  std::jthread watcher_;
};

}  // namespace

CLI::App* add_sweep_command(CLI::App& app, SweepArgs& args) {
  CLI::App* cmd = app.add_subcommand(
      "sweep", "Run a design-space sweep (docs/sweeps.md): every point of SPEC on every "
               "workload, stored in DIR/sweep.db as it finishes, then DIR/results.csv and "
               "DIR/results.json");
  cmd->add_option("spec", args.spec, "Sweep spec (YAML), e.g. configs/sweeps/quick_array_sram_bw.yaml")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--out", args.out_dir, "Folder for sweep.db, results.csv and results.json")
      ->required();
  cmd->add_option("--threads", args.threads,
                  "Worker threads (default: every core this process may run on; under mpirun, "
                  "the cores of its rank)")
      ->check(kPositive);
  cmd->add_flag("--resume", args.resume,
                "Continue the sweep stored in DIR/sweep.db: run only the missing points (the "
                "spec, arch and workload files must be unchanged; without --resume a store of "
                "this same sweep is reused too, and --resume fails when there is none)");
  cmd->add_option("--limit", args.limit, "Stop after this many new points")
      ->check(kPositive);
  cmd->add_option("--export-design", args.export_designs,
                  "Run nothing: write these points' whole arch YAMLs (the base arch with the "
                  "point's values, loadable by coda run --arch) to DIR/designs/point-N.yaml; "
                  "comma-separated, e.g. 11,55 (the points the report names)")
      ->delimiter(',');
  // No group: left out of --help (see SweepArgs::test_pause_after).
  cmd->add_option("--test-pause-after", args.test_pause_after)
      ->check(kPositive)
      ->group("");
  return cmd;
}

SweepFolderLock::SweepFolderLock(SweepFolderLock&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)) {}

SweepFolderLock& SweepFolderLock::operator=(SweepFolderLock&& other) noexcept {
  std::swap(fd_, other.fd_);
  return *this;
}

SweepFolderLock::~SweepFolderLock() {
  if (fd_ >= 0) close(fd_);  // closing the descriptor releases the flock
}

bool SweepFolderLock::acquire(const std::filesystem::path& dir, std::string& why) {
  const std::filesystem::path file = dir / "sweep.lock";
  const int fd = open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    why = fmt::format("cannot open '{}': {}", file.string(), std::strerror(errno));
    return false;
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    std::array<char, 32> text{};
    const ssize_t n = pread(fd, text.data(), text.size() - 1, 0);
    const std::string pid = n > 0 ? std::string(text.data(), static_cast<std::size_t>(n)) : "?";
    close(fd);
    why = fmt::format("'{}' is in use by another coda sweep (process {}, which holds '{}'): wait "
                      "for it to finish, or choose another --out folder",
                      dir.string(), pid.substr(0, pid.find('\n')), file.string());
    return false;
  }
  const std::string pid = fmt::format("{}\n", getpid());
  if (ftruncate(fd, 0) != 0 ||
      pwrite(fd, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    why = fmt::format("cannot write '{}': {}", file.string(), std::strerror(errno));
    close(fd);
    return false;
  }
  if (fd_ >= 0) close(fd_);
  fd_ = fd;
  return true;
}

namespace {

// The pieces run_sweep_command and its MPI form share.
// DIR/sweep.db created, or opened (with --resume, or when it holds this sweep), with DIR's lock
// taken into `lock` (declare it before the store, so that it outlives it); nullptr after
// printing why to `err`.
std::unique_ptr<dse::SweepStore> open_sweep_store(const SweepArgs& args,
                                                  const dse::SweepSpec& spec,
                                                  SweepFolderLock& lock, std::ostream& err) {
  const std::filesystem::path dir(args.out_dir);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    err << fmt::format("error: cannot create '{}': {}\n", dir.string(), ec.message());
    return nullptr;
  }
  std::string why;
  if (!lock.acquire(dir, why)) {
    err << fmt::format("error: {}\n", why);
    return nullptr;
  }
  const std::filesystem::path db = dir / "sweep.db";
  // Without --resume, a store of this very sweep (the same spec, arch and workload files) is
  // reused: run again, a finished sweep runs nothing and rewrites its exports, an interrupted one
  // runs what it lacks. A store of another sweep is never touched.
  const bool reuse = !args.resume && std::filesystem::exists(db, ec);
  auto store = args.resume || reuse
                   ? dse::SweepStore::open(db, spec.hash, why)
                   : dse::SweepStore::create(db, spec.hash, spec.name, dse::store_axes(spec), why);
  if (!store)
    err << fmt::format("error: {}{}\n", why,
                       reuse ? "; choose another --out folder, or remove the store to start afresh"
                             : "");
  else if (reuse)
    err << fmt::format("note: '{}' holds this sweep (the same spec, arch and workload files): "
                       "reusing it, so only the points it lacks run; remove it to start afresh\n",
                       db.string());
  return store;
}

// The progress callback that renders to `err` (a bar on a terminal, else plain lines).
std::function<void(const dse::SweepProgress&)> sweep_progress(std::ostream& err) {
  const bool terminal = &err == &std::cerr && isatty(STDERR_FILENO) != 0;
  return [printer = std::make_shared<ProgressPrinter>(err, terminal)](
             const dse::SweepProgress& p) { (*printer)(p); };
}

// Writes DIR/results.csv and DIR/results.json from the store and prints the summary; `how` is
// added to the rate (", 2 ranks"). Returns the exit code.
int finish_sweep(const SweepArgs& args, const dse::SweepSpec& spec,
                 const dse::SweepStore& store, const dse::SweepOutcome& outcome,
                 std::string_view how, std::ostream& out, std::ostream& err) {
  const std::filesystem::path dir(args.out_dir);
  if (const auto damaged = store.damage()) {
    err << fmt::format("error: '{}' is damaged (SQLite's quick_check: {}); results.csv and "
                       "results.json were not written: run the sweep again into a new --out "
                       "folder\n",
                       (dir / "sweep.db").string(), *damaged);
    return 1;
  }
  // The exports are written as the rows are read, one at a time, so memory does not grow with
  // the points (a million-point sweep's rows held at once, run summaries included, took GBs).
  std::ofstream csv(dir / "results.csv", std::ios::binary);
  std::ofstream json(dir / "results.json", std::ios::binary);
  csv << dse::csv_header(spec);
  json << dse::json_head(spec);
  std::uint64_t read = 0, errors = 0;
  std::optional<dse::SweepRow> first_error;
  store.for_each_row(
      [&](const dse::SweepRow& r) {
        csv << dse::csv_line(spec, r);
        json << dse::json_separator(static_cast<std::size_t>(read++)) << dse::json_row(spec, r);
        if (r.status != dse::RowStatus::Error) return;
        if (errors++ == 0) first_error = r;
      },
      false);
  json << dse::json_tail(static_cast<std::size_t>(read));
  if (const auto count = store.row_count(); !count || *count != read) {
    err << fmt::format("error: '{}' holds {} result rows but {} could be read; results.csv and "
                       "results.json are incomplete: run the sweep again into a new --out "
                       "folder\n",
                       (dir / "sweep.db").string(),
                       count ? fmt::format("{}", *count) : std::string("an uncountable number of"),
                       read);
    return 1;
  }
  for (const auto& [file, stream] : {std::pair{"results.csv", &csv}, {"results.json", &json}}) {
    stream->close();
    if (!*stream) {
      err << fmt::format("error: cannot write '{}'\n", (dir / file).string());
      return 1;
    }
  }
  out << fmt::format("sweep {}: {} points x {} workload{}; ran {} in {:.2f} s ({:.1f} points/s{}), "
                     "{} infeasible; {} already stored; {} left{}\n",
                     spec.name, outcome.points, spec.workloads.size(),
                     spec.workloads.size() == 1 ? "" : "s", outcome.ran, outcome.seconds,
                     outcome.seconds > 0 ? static_cast<double>(outcome.ran) / outcome.seconds
                                         : 0.0,
                     how, outcome.infeasible, outcome.already_done, outcome.remaining,
                     outcome.remaining > 0 ? " (run again with --resume)" : "");
  out << fmt::format("wrote {}, {} and {}\n", (dir / "sweep.db").string(),
                     (dir / "results.csv").string(), (dir / "results.json").string());
  // Rows where coda itself failed (stored now or by an earlier run): a bug, not a design that
  // does not fit, so the sweep does not end as a success.
  if (!first_error) return 0;
  err << fmt::format("error: coda failed on {} point x workload row{} (status 'error' in the "
                     "results: an internal error, please report it with the spec); the first, "
                     "point {} on '{}': {}\n",
                     errors, errors == 1 ? "" : "s", first_error->point,
                     first_error->workload_name, first_error->reason);
  return 1;
}

#if CODA_WITH_MPI
// run_sweep_command across the ranks of mpirun (dse/mpi/sweep_mpi.h): every rank reads the spec
// and the workloads; only rank 0 opens the store, prints and writes the exports.
int run_sweep_mpi(const SweepArgs& args, std::ostream& out, std::ostream& err) {
  std::string why;
  const dse::mpi::TransportTable* transport = dse::mpi::load_transport(why);
  if (transport == nullptr) {  // every rank fails alike, before MPI starts: each says so
    err << "error: " << why << '\n';
    return 1;
  }
  const dse::mpi::Session mpi(*transport);
  // Timed from here, as a one-process sweep is (spec, store, workloads, points): MPI's start-up
  // is mpirun's, not the sweep's.
  const auto start = std::chrono::steady_clock::now();
  const bool root = mpi.rank() == 0;
  // Whether every rank is `ok`; the first rank that is not prints `failure` (the ranks read the
  // same files, so they usually fail alike: one copy is enough).
  const auto all_ok = [&](bool ok, const std::string& failure) {
    const int failed = mpi.first_failed(ok);
    if (failed == mpi.rank() && !failure.empty())
      err << (failed == 0 ? failure : fmt::format("rank {}: {}", failed, failure));
    return failed < 0;
  };
  Diagnostics diags;
  const auto spec = dse::load_sweep_spec(args.spec, diags);
  if (!all_ok(spec.has_value(), diags.format_all() + "no point was run.\n")) return 1;
  SweepFolderLock lock;  // before the store: it outlives it
  std::unique_ptr<dse::SweepStore> store;
  if (root) store = open_sweep_store(args, *spec, lock, err);  // prints its own errors
  if (!all_ok(!root || store != nullptr, "")) return 1;
  const sim::EngineRegistry engines = all_engines();
  const auto inputs = dse::load_sweep_inputs(*spec, diags, &engines);
  if (!all_ok(inputs.has_value(), diags.format_all() + "no point was run.\n")) return 1;
  dse::SweepPlan plan;
  if (root)
    plan = dse::plan_sweep(inputs->points.size(), store->stored_points(inputs->points.size()),
                           args.limit > 0 ? std::optional(args.limit) : std::nullopt);
  const auto count = static_cast<std::size_t>(mpi.broadcast(plan.to_run));
  if (!root) {
    const dse::mpi::RankOutcome mine = dse::mpi::run_other(mpi, *spec, *inputs, count,
                                                           args.threads);
    return mine.ok ? 0 : 1;  // rank 0 reports its failure
  }
  const dse::mpi::RankOutcome outcome =
      dse::mpi::run_root(mpi, *spec, *inputs, *store, plan, args.threads, sweep_progress(err));
  for (const std::string& error : outcome.errors) err << "error: " << error << "\n";
  if (!outcome.ok) {
    err << "the sweep stopped.\n";
    return 1;
  }
  dse::SweepOutcome done;
  done.points = plan.points;
  done.already_done = plan.already_done;
  done.remaining = plan.remaining;
  done.ran = outcome.ran;
  done.infeasible = outcome.infeasible;
  done.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return finish_sweep(args, *spec, *store, done, fmt::format(", {} ranks", mpi.size()), out, err);
}
#else
int run_sweep_mpi(const SweepArgs& /*args*/, std::ostream& /*out*/, std::ostream& err) {
  err << fmt::format("error: coda sweep was started by mpirun with {} ranks, but this coda was "
                     "built without MPI; run it without mpirun, or build coda with MPI "
                     "(install libopenmpi-dev; CMake option CODA_WITH_MPI)\n",
                     dse::mpi::world_size());
  return 1;
}
#endif

}  // namespace

bool write_designs(const dse::SweepSpec& spec, const std::vector<std::uint64_t>& points,
                   const std::filesystem::path& dir, std::ostream& out, std::ostream& err) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    err << fmt::format("error: cannot create '{}': {}\n", dir.string(), ec.message());
    return false;
  }
  for (const std::uint64_t point : points) {
    Diagnostics diags;
    const auto yaml = dse::point_arch_yaml(spec, point, diags);
    if (!yaml) {
      err << diags.format_all() << "no design was written for point " << point << ".\n";
      return false;
    }
    const std::filesystem::path file = dir / fmt::format("point-{}.yaml", point);
    std::ofstream f(file);
    if (!(f << *yaml) || !f.flush()) {
      err << fmt::format("error: cannot write '{}'\n", file.string());
      return false;
    }
    out << fmt::format("wrote {}\n", file.string());
  }
  return true;
}

int run_sweep_command(const SweepArgs& args, std::ostream& out, std::ostream& err) {
  const bool exporting = !args.export_designs.empty();
  if (!exporting && dse::mpi::world_size() > 1) return run_sweep_mpi(args, out, err);
  Diagnostics diags;
  const auto spec = dse::load_sweep_spec(args.spec, diags);
  if (!spec) {
    err << diags.format_all() << (exporting ? "no design was written.\n" : "no point was run.\n");
    return 1;
  }
  if (exporting)  // --export-design: the points' arch YAMLs into DIR/designs/point-N.yaml
    return write_designs(*spec, args.export_designs,
                         std::filesystem::path(args.out_dir) / "designs", out, err)
               ? 0
               : 1;
  SweepFolderLock lock;  // before the store: it outlives it
  const auto store = open_sweep_store(args, *spec, lock, err);
  if (!store) return 1;
  const sim::EngineRegistry engines = all_engines();
  dse::SweepOptions options;
  options.engines = &engines;
  options.threads = args.threads;
  if (args.limit > 0) options.limit = args.limit;
  options.progress = sweep_progress(err);
  SignalStop signals;
  options.stop = &signals.stop();
  if (args.test_pause_after > 0)
    options.progress = [shown = options.progress, after = args.test_pause_after, &signals,
                        &out](const dse::SweepProgress& p) {
      shown(p);
      if (p.done < after) return;
      out << fmt::format("paused: {} points stored\n", p.done) << std::flush;
      while (!signals.stop())  // until killed, or a SIGINT / SIGTERM
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    };
  const auto outcome = dse::run_sweep(*spec, *store, options, diags);
  if (!outcome) {
    err << diags.format_all() << "the sweep stopped.\n";
    return 1;
  }
  const int code = finish_sweep(args, *spec, *store, *outcome, "", out, err);
  if (!outcome->interrupted || code != 0) return code;
  err << fmt::format("interrupted ({}): {} of {} points stored; continue with --resume\n",
                     signals.name(), outcome->already_done + outcome->ran, outcome->points);
  return 128 + signals.number();
}

}  // namespace coda::cli
