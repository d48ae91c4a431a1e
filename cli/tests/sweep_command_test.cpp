#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "cli/sweep_command.h"
#include "cli/tests/run_coda.h"
#include "core/subprocess.h"
#include "dse/sweep_spec.h"
#include "dse/sweep_store.h"
#include "testing/temp_dir.h"

namespace coda::cli {
namespace {

using test::coda;
using test::Outcome;

constexpr const char* kBundled = "configs/sweeps/quick_array_sram_bw.yaml";

std::string read_text(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::uint64_t spec_hash(const char* spec_file) {
  Diagnostics diags;
  const auto spec = dse::load_sweep_spec(spec_file, diags);
  EXPECT_TRUE(spec) << diags.format_all();
  return spec ? spec->hash : 0;
}

std::vector<dse::SweepRow> stored_rows(const std::filesystem::path& dir,
                                       const char* spec_file = kBundled) {
  std::string why;
  const auto store = dse::SweepStore::open(dir / "sweep.db", spec_hash(spec_file), why);
  EXPECT_TRUE(store) << why;
  return store ? store->rows() : std::vector<dse::SweepRow>{};
}

// Runs `argv` (argv[0] is the program's path) as a child process with stdout and stderr in
// `log`; its wait status.
int run_child(const std::vector<std::string>& argv, const std::filesystem::path& log) {
  const pid_t child = fork();
  if (child < 0) return -1;
  if (child == 0) {
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, STDOUT_FILENO);
    dup2(fd, STDERR_FILENO);
    std::vector<char*> args;
    args.reserve(argv.size() + 1);
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  waitpid(child, &status, 0);
  return status;
}

TEST(SweepCommand, RunsTheBundledSweepAndWritesTheExports) {
  const testing::TempDir tmp;
  const std::string dir = (tmp.path() / "whole").string();
  const Outcome r = coda({"sweep", kBundled, "--out", dir.c_str(), "--threads", "2"});
  ASSERT_EQ(r.code, 0) << r.err;
  // 3 rows x 3 cols x 3 SRAM sizes x 3 DRAM bandwidths = 81 points, one workload.
  EXPECT_NE(r.out.find("81 points x 1 workload; ran 81"), std::string::npos) << r.out;
  const std::string csv = read_text(tmp.path() / "whole" / "results.csv");
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "point,workload,array.rows,array.cols,sram.ifmap,dram.bandwidth,status,feasible,"
            "latency_s,energy_j,perf_per_watt_tops_per_w,area_mm2,power_w,memory,max_power_w,"
            "reason");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 82);  // header + 81 rows
  // Point 0 is the first value of every axis (grid order: the first axis varies slowest).
  EXPECT_EQ(csv.find("\n0,resnet50,64,64,1 MiB,17 GB/s,ok,"), csv.find('\n')) << csv;
  EXPECT_TRUE(std::filesystem::exists(tmp.path() / "whole" / "results.json"));

  // Running again into the same folder reuses the store (the README's first command may run
  // twice): nothing runs, the exports are written again, byte for byte, and it says so.
  const Outcome again = coda({"sweep", kBundled, "--out", dir.c_str()});
  EXPECT_EQ(again.code, 0) << again.err;
  EXPECT_NE(again.err.find("holds this sweep (the same spec, arch and workload files): reusing "
                           "it"),
            std::string::npos)
      << again.err;
  EXPECT_NE(again.out.find("ran 0 in"), std::string::npos) << again.out;
  EXPECT_NE(again.out.find("81 already stored"), std::string::npos) << again.out;
  EXPECT_EQ(read_text(tmp.path() / "whole" / "results.csv"), csv);

  // A store of another sweep in that folder is refused, and left as it was.
  const Outcome refused =
      coda({"sweep", "configs/sweeps/array_sram_bw_resnet50_bert.yaml", "--out", dir.c_str()});
  EXPECT_EQ(refused.code, 1);
  EXPECT_NE(refused.err.find("holds a sweep of another spec"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("choose another --out folder, or remove the store to start afresh"),
            std::string::npos)
      << refused.err;
  EXPECT_EQ(read_text(tmp.path() / "whole" / "results.csv"), csv);
}

TEST(SweepCommand, LimitThenResumeEqualsAnUninterruptedRun) {
  const testing::TempDir tmp;
  const std::string whole = (tmp.path() / "whole").string();
  const std::string parts = (tmp.path() / "parts").string();
  ASSERT_EQ(coda({"sweep", kBundled, "--out", whole.c_str()}).code, 0);
  const Outcome first = coda({"sweep", kBundled, "--out", parts.c_str(), "--limit", "30"});
  ASSERT_EQ(first.code, 0) << first.err;
  EXPECT_NE(first.out.find("ran 30"), std::string::npos) << first.out;
  EXPECT_NE(first.out.find("51 left (run again with --resume)"), std::string::npos) << first.out;
  const Outcome rest = coda({"sweep", kBundled, "--out", parts.c_str(), "--resume"});
  ASSERT_EQ(rest.code, 0) << rest.err;
  EXPECT_NE(rest.out.find("ran 51"), std::string::npos) << rest.out;
  EXPECT_EQ(stored_rows(parts), stored_rows(whole));
  EXPECT_EQ(read_text(tmp.path() / "parts" / "results.csv"),
            read_text(tmp.path() / "whole" / "results.csv"));
}

// A store damaged on disk (issue 23: 8 KiB zeroed inside a finished sweep.db, and --resume said
// success and rewrote results.csv with 4 of 7840 rows): resuming it is an error that says so.
TEST(SweepCommand, ADamagedStoreIsNotResumed) {
  const testing::TempDir tmp;
  const std::string dir = (tmp.path() / "out").string();
  ASSERT_EQ(coda({"sweep", kBundled, "--out", dir.c_str()}).code, 0);
  const auto db = tmp.path() / "out" / "sweep.db";
  const auto size = std::filesystem::file_size(db);
  ASSERT_GT(size, 3u * 8192) << "the store is smaller than the damage";
  {
    std::fstream file(db, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(8192);
    const std::string zeros(8192, '\0');
    file.write(zeros.data(), static_cast<std::streamsize>(zeros.size()));
  }
  const auto before = std::filesystem::last_write_time(tmp.path() / "out" / "results.csv");
  const Outcome r = coda({"sweep", kBundled, "--out", dir.c_str(), "--resume"});
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.err.find("sweep.db' is damaged (SQLite: quick_check: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("run the sweep again into a new --out folder"), std::string::npos) << r.err;
  // Its exports are left as they were.
  EXPECT_EQ(std::filesystem::last_write_time(tmp.path() / "out" / "results.csv"), before);
}

// A second sweep into a folder another process is sweeping into stops at once, naming it (it
// used to compute the same missing points, and one died on "UNIQUE constraint failed").
TEST(SweepCommand, AFolderInUseByAnotherSweepIsAnError) {
  const testing::TempDir tmp;
  const auto dir = tmp.path() / "out";
  std::filesystem::create_directories(dir);
  // This process holds the folder's lock, as a running sweep would.
  SweepFolderLock held;
  std::string why;
  ASSERT_TRUE(held.acquire(dir, why)) << why;
  const Outcome r = coda({"sweep", kBundled, "--out", dir.c_str()});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find(fmt::format("is in use by another coda sweep (process {}, which holds",
                                   getpid())),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "sweep.db"));
  // Released, the folder is free again.
  held = SweepFolderLock{};
  EXPECT_EQ(coda({"sweep", kBundled, "--out", dir.c_str()}).code, 0);
}

TEST(SweepCommand, ResumingWithAnotherSpecIsAnError) {
  const testing::TempDir tmp;
  const std::string dir = (tmp.path() / "out").string();
  ASSERT_EQ(coda({"sweep", kBundled, "--out", dir.c_str(), "--limit", "1"}).code, 0);
  // The same sweep with one value changed: another spec hash.
  // Written in the test's folder, so its relative paths become absolute ones.
  std::string text = read_text(kBundled);
  text.replace(text.find("[64, 128, 256]"), 14, "[64, 128, 512]");
  for (const std::string folder : {"arch", "workloads"}) {
    const std::string relative = "../" + folder + "/";
    text.replace(text.find(relative), relative.size(),
                 std::filesystem::absolute("configs/" + folder).string() + "/");
  }
  const auto other = tmp.write("other.yaml", text);
  const Outcome r = coda({"sweep", other.c_str(), "--out", dir.c_str(), "--resume"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("holds a sweep of another spec"), std::string::npos) << r.err;
}

TEST(SweepCommand, BadSpecPrintsLocatedErrors) {
  const testing::TempDir tmp;
  const auto spec = tmp.write("bad.yaml",
                              "schema_version: 1\nname: bad\narch: /nonexistent/arch.yaml\n"
                              "workloads: []\naxes: {}\n");
  const std::string dir = (tmp.path() / "out").string();
  const Outcome r = coda({"sweep", spec.c_str(), "--out", dir.c_str()});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find(spec.string() + ":3:7: error: arch: no such file '/nonexistent/arch.yaml'"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find(":4:12: error: workloads: the list of workloads is empty"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("no point was run."), std::string::npos) << r.err;
}

// The store survives SIGKILL: a child `coda sweep` on a bundled sweep (its first 200 points) is
// killed mid-sweep; resuming with the rest of the limit ends with the rows of an uninterrupted run
// of those 200 points. (With --limit N the run takes the first N missing points in index order, so
// after k of the first 200 are stored, --limit 200-k takes exactly the other 200-k of them.) The
// kill is deterministic: --test-pause-after 5 makes the child say how many points it has stored
// once at least 5 are and then wait to be killed, so the test races neither the machine's speed
// nor the child's writes (it polled the store before, and on a loaded machine never saw a point).
// A child `coda sweep SPEC --out DIR --threads 2 --limit 200 --test-pause-after 5`, with its stdout
// read until it says "paused: K points stored" (its writer then waits: for SIGKILL, or for a
// SIGINT / SIGTERM to stop the sweep); its stderr goes to `log`.
struct PausedSweep {
  pid_t pid = -1;
  int out_fd = -1;   // the read end of its stdout, left open so that it may write on (no SIGPIPE)
  std::string said;  // its stdout up to the pause
  std::size_t stored() const {
    const std::size_t at = said.find("paused: ");
    return at == std::string::npos ? 0 : std::stoul(said.substr(at + 8));
  }
};
PausedSweep start_paused_sweep(const char* spec, const std::filesystem::path& out,
                               const std::filesystem::path& log) {
  std::filesystem::create_directories(out);
  std::array<int, 2> pipe_fds{};
  PausedSweep child;
  if (pipe(pipe_fds.data()) != 0) return child;
  child.pid = fork();
  if (child.pid == 0) {
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    close(pipe_fds[0]);
    dup2(pipe_fds[1], STDOUT_FILENO);
    dup2(fd, STDERR_FILENO);
    execl(CODA_BINARY, "coda", "sweep", spec, "--out", out.c_str(), "--threads", "2", "--limit",
          "200", "--test-pause-after", "5", static_cast<char*>(nullptr));
    _exit(127);
  }
  close(pipe_fds[1]);
  std::array<char, 256> buffer{};
  while (child.pid > 0) {
    const ssize_t n = read(pipe_fds[0], buffer.data(), buffer.size());
    if (n <= 0) break;
    child.said.append(buffer.data(), static_cast<std::size_t>(n));
    if (child.said.find(" points stored\n") != std::string::npos) break;
  }
  child.out_fd = pipe_fds[0];
  return child;
}

TEST(SweepCommand, KillNineThenResumeEqualsAnUninterruptedRun) {
  constexpr const char* kSpec = "configs/sweeps/array_sram_bw_resnet50_bert.yaml";
  constexpr std::size_t kPoints = 200;
  const testing::TempDir tmp;
  const std::filesystem::path killed = tmp.path() / "killed";
  const std::filesystem::path whole = tmp.path() / "whole";
  const PausedSweep child = start_paused_sweep(kSpec, killed, tmp.path() / "child.log");
  ASSERT_GT(child.pid, 0);
  const std::string& said = child.said;
  kill(child.pid, SIGKILL);
  int status = 0;
  waitpid(child.pid, &status, 0);
  close(child.out_fd);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the child ended before it was killed: " << said;
  const std::size_t said_stored = child.stored();
  ASSERT_GT(said_stored, 0u) << said;
  std::size_t done = 0;
  {
    std::string why;
    const auto store = dse::SweepStore::open(killed / "sweep.db", spec_hash(kSpec), why);
    ASSERT_TRUE(store) << why;
    const auto points = store->done_points();
    done = points.size();
    EXPECT_EQ(done, said_stored);  // what it said it had committed, no more (its writer waited)
    EXPECT_GE(done, 5u);
    EXPECT_LT(done, kPoints);
    EXPECT_LT(*points.rbegin(), kPoints);  // only points of the first 200
  }
  const std::string rest = std::to_string(kPoints - done);
  const Outcome resumed = coda({"sweep", kSpec, "--out", killed.c_str(), "--resume", "--limit",
                                rest.c_str(), "--threads", "2"});
  ASSERT_EQ(resumed.code, 0) << resumed.err;
  ASSERT_EQ(coda({"sweep", kSpec, "--out", whole.c_str(), "--limit", "200"}).code, 0);
  const auto rows = stored_rows(killed, kSpec);
  EXPECT_EQ(rows.size(), 2 * kPoints);  // two workloads per point
  EXPECT_EQ(rows, stored_rows(whole, kSpec));
}

// SIGINT (Ctrl-C) and SIGTERM stop a sweep, not the process: the points in flight finish and
// are stored, the exports are written, and it says how many points are stored and how to go on
// (issue 23: it used to exit without a word). Exit status 128 + the signal, as a shell reports
// a process killed by it.
TEST(SweepCommand, SigintStoresThePointsInFlightAndSaysHowToResume) {
  // LLaMA-2-7B decode points (about 0.3 s each on two threads): while the writer holds at its
  // pause the workers finish a few more, which the interrupted run stores too.
  constexpr const char* kSpec = "configs/sweeps/edge_npu_llama_decode_5w.yaml";
  const testing::TempDir tmp;
  const std::filesystem::path dir = tmp.path() / "out";
  const PausedSweep child = start_paused_sweep(kSpec, dir, tmp.path() / "child.log");
  ASSERT_GT(child.pid, 0);
  ASSERT_GT(child.stored(), 0u) << child.said;
  kill(child.pid, SIGINT);
  int status = 0;
  waitpid(child.pid, &status, 0);
  close(child.out_fd);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGINT);
  std::size_t stored = 0;
  {
    std::string why;
    const auto store = dse::SweepStore::open(dir / "sweep.db", spec_hash(kSpec), why);
    ASSERT_TRUE(store) << why;
    stored = store->done_points().size();
  }
  // What it had said, and the points it finished while paused; not all 200 of its --limit.
  EXPECT_GE(stored, child.stored());
  EXPECT_LT(stored, 200u);
  const std::string log = read_text(tmp.path() / "child.log");
  EXPECT_NE(log.find(fmt::format("interrupted (SIGINT): {} of 540 points stored; continue with "
                                 "--resume",
                                 stored)),
            std::string::npos)
      << log;
  EXPECT_TRUE(std::filesystem::exists(dir / "results.csv"));
}

TEST(SweepCommand, PointsRunOnTheSystemCEngineWhenTheSpecSaysSo) {
  // Two DRAM bandwidths for GPT-2 small decode on the 3-core RK3588: every point runs in its
  // own SystemC worker process; a decode step is memory-bound, so twice the bandwidth is faster.
  const testing::TempDir tmp;
  const std::string top = std::filesystem::current_path().string();
  const auto spec = tmp.path() / "systemc.yaml";
  const auto write_spec = [&](const char* engine) {
    std::ofstream(spec) << fmt::format(R"(schema_version: 1
name: systemc-points
arch: {0}/configs/arch/rk3588_npu.yaml
engine: {1}
workloads:
  - {{name: gpt2, file: {0}/configs/workloads/gpt2_small_decode.yaml}}
axes:
  dram.bandwidth: [17 GB/s, 34 GB/s]
objectives: [latency]
)",
                                       top, engine);
  };
  write_spec("systemc");
  const std::string spec_arg = spec.string();
  const std::string out_arg = (tmp.path() / "out").string();
  const Outcome r = coda({"sweep", spec_arg.c_str(), "--out", out_arg.c_str()});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto rows = stored_rows(tmp.path() / "out", spec_arg.c_str());
  ASSERT_EQ(rows.size(), 2u);
  for (const dse::SweepRow& row : rows)
    EXPECT_NE(row.run_summary.find(R"("engine":"systemc")"), std::string::npos) << row.run_summary;
  EXPECT_GT(rows[0].latency_s, rows[1].latency_s);
  // An engine coda does not have is a located error.
  write_spec("systemd");
  const Outcome bad = coda({"sweep", spec_arg.c_str(), "--out", out_arg.c_str()});
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.err.find("systemc.yaml:4:9: error: engine: unknown engine 'systemd'"),
            std::string::npos)
      << bad.err;
}

TEST(SweepCommand, EveryBundledSweepPassesCheckConfig) {
  std::size_t specs = 0;
  for (const auto& entry : std::filesystem::directory_iterator("configs/sweeps")) {
    if (entry.path().extension() != ".yaml") continue;
    ++specs;
    const std::string file = entry.path().string();
    const Outcome r = coda({"check-config", file.c_str()});
    EXPECT_EQ(r.code, 0) << file << "\n" << r.out << r.err;
    EXPECT_NE(r.out.find(": ok (sweep '"), std::string::npos) << r.out;
  }
  // quick_array_sram_bw, array_sram_bw_resnet50_bert, edge_npu_llama_decode_5w,
  // datacenter_llama2_70b_serving.
  EXPECT_EQ(specs, 4u);
}

#ifdef CODA_MPIEXEC
struct MpirunRun {
  bool ok = false;  // exited with status 0
  std::string log;  // what every rank printed
};

// `mpirun -np RANKS coda sweep kBundled --out OUT --threads 1 EXTRA...`, its output in LOG.
// Under ASan (CI's sanitizer run sets detect_leaks=1) LeakSanitizer would report what Open MPI
// and the plugins it unloads keep until exit (their frames show as "<unknown module>", so no
// suppression can name them): the ranks run without leak checking; coda's own code is
// leak-checked by the other tests, the one-process runs below included.
MpirunRun mpirun_sweep(int ranks, const std::filesystem::path& out,
                       const std::vector<std::string>& extra, const std::filesystem::path& log) {
  std::vector<std::string> command{CODA_MPIEXEC, "--allow-run-as-root", "--oversubscribe", "-np",
                                   std::to_string(ranks), "-x", "ASAN_OPTIONS=detect_leaks=0",
                                   CODA_BINARY, "sweep", kBundled, "--out", out.string(),
                                   "--threads", "1"};
  command.insert(command.end(), extra.begin(), extra.end());
  const int status = run_child(command, log);
  return {WIFEXITED(status) && WEXITSTATUS(status) == 0, read_text(log)};
}

// The store the ranks wrote in `ranks` holds the bundled sweep's 81 points, and equals the store
// of a one-process run of it, made in `one`.
void expect_what_one_process_stores(const std::filesystem::path& ranks,
                                    const std::filesystem::path& one) {
  ASSERT_EQ(coda({"sweep", kBundled, "--out", one.c_str(), "--threads", "1"}).code, 0);
  const auto rows = stored_rows(ranks);
  EXPECT_EQ(rows.size(), 81u);
  EXPECT_EQ(rows, stored_rows(one));
}
#endif

// `mpirun -np 2 coda sweep` splits the points over two ranks; rank 0 stores them all, and the
// store equals a one-process run's.
TEST(SweepCommand, MpirunWithTwoRanksStoresWhatOneProcessStores) {
#ifndef CODA_MPIEXEC
  GTEST_SKIP() << "coda was built without MPI (CMake option CODA_WITH_MPI; Debian libopenmpi-dev)";
#else
  const testing::TempDir tmp;
  const std::filesystem::path ranks = tmp.path() / "ranks";
  const std::filesystem::path one = tmp.path() / "one";
  const MpirunRun run = mpirun_sweep(2, ranks, {}, tmp.path() / "mpirun.log");
  ASSERT_TRUE(run.ok) << run.log;
  EXPECT_NE(run.log.find("ran 81 in"), std::string::npos) << run.log;
  EXPECT_NE(run.log.find(", 2 ranks)"), std::string::npos) << run.log;
  expect_what_one_process_stores(ranks, one);
  EXPECT_EQ(read_text(ranks / "results.csv"), read_text(one / "results.csv"));
#endif
}

// Three ranks (two asking rank 0 for shares at once), first 40 points with --limit, then the
// rest with --resume: the store equals a one-process run's, so no point was lost or run twice
// while the ranks took their shares.
TEST(SweepCommand, MpirunWithThreeRanksLimitedThenResumedStoresWhatOneProcessStores) {
#ifndef CODA_MPIEXEC
  GTEST_SKIP() << "coda was built without MPI (CMake option CODA_WITH_MPI; Debian libopenmpi-dev)";
#else
  const testing::TempDir tmp;
  const std::filesystem::path ranks = tmp.path() / "ranks";
  const std::filesystem::path one = tmp.path() / "one";
  const MpirunRun first = mpirun_sweep(3, ranks, {"--limit", "40"}, tmp.path() / "first.log");
  EXPECT_TRUE(first.ok) << first.log;
  EXPECT_NE(first.log.find("ran 40 in"), std::string::npos) << first.log;
  EXPECT_NE(first.log.find("41 left"), std::string::npos) << first.log;
  EXPECT_EQ(stored_rows(ranks).size(), 40u);
  const MpirunRun second = mpirun_sweep(3, ranks, {"--resume"}, tmp.path() / "second.log");
  EXPECT_TRUE(second.ok) << second.log;
  EXPECT_NE(second.log.find("ran 41 in"), std::string::npos) << second.log;
  EXPECT_NE(second.log.find(", 3 ranks)"), std::string::npos) << second.log;
  expect_what_one_process_stores(ranks, one);
#endif
}

// Issue 22, item 4: the libraries of ONNX (libonnx, protobuf) and of MPI (Open MPI's) are loaded
// only by the command that needs them, from coda-onnx.so and coda-mpi.so (core/plugin.h); the
// coda binary itself does not load them at start. LD_TRACE_LOADED_OBJECTS makes the dynamic
// loader list what it would load and exit (what ldd prints), without running coda.
TEST(CodaBinary, LoadsNeitherOnnxNorMpiAtStart) {
  const ProgramRun run =
      run_program(CODA_BINARY, "", {.environment = {"LD_TRACE_LOADED_OBJECTS=1"}});
  ASSERT_TRUE(run.exited_ok()) << run.err;
  EXPECT_NE(run.out.find("libyaml-cpp"), std::string::npos) << run.out;  // the listing is there
  for (const char* library : {"libonnx", "libprotobuf", "libmpi", "libopen-pal", "libhwloc"})
    EXPECT_EQ(run.out.find(library), std::string::npos) << library << " in\n" << run.out;
}

}  // namespace
}  // namespace coda::cli
