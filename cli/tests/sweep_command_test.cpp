#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "cli/tests/run_coda.h"
#include "sim/sweep_spec.h"
#include "sim/sweep_store.h"
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

std::uint64_t bundled_hash() {
  Diagnostics diags;
  const auto spec = sim::load_sweep_spec(kBundled, diags);
  EXPECT_TRUE(spec) << diags.format_all();
  return spec ? spec->hash : 0;
}

std::vector<sim::SweepRow> stored_rows(const std::filesystem::path& dir) {
  std::string why;
  const auto store = sim::SweepStore::open(dir / "sweep.db", bundled_hash(), why);
  EXPECT_TRUE(store) << why;
  return store ? store->rows() : std::vector<sim::SweepRow>{};
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

  // Running again into the same folder without --resume is refused.
  const Outcome again = coda({"sweep", kBundled, "--out", dir.c_str()});
  EXPECT_EQ(again.code, 1);
  EXPECT_NE(again.err.find("pass --resume to continue it"), std::string::npos) << again.err;
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

// The store survives SIGKILL: a child `coda sweep` is killed once some points are stored; the
// resumed sweep's rows equal an uninterrupted run's.
TEST(SweepCommand, KillNineThenResumeEqualsAnUninterruptedRun) {
  const testing::TempDir tmp;
  const std::filesystem::path killed = tmp.path() / "killed";
  const std::filesystem::path whole = tmp.path() / "whole";
  std::filesystem::create_directories(killed);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const int null = open("/dev/null", O_WRONLY);
    dup2(null, STDOUT_FILENO);
    dup2(null, STDERR_FILENO);
    execl(CODA_BINARY, "coda", "sweep", kBundled, "--out", killed.c_str(), "--threads", "1",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  // Wait until a few points are stored, then kill it mid-sweep.
  std::size_t stored = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (stored < 3 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    std::string why;
    if (const auto store = sim::SweepStore::open(killed / "sweep.db", bundled_hash(), why))
      stored = store->done_points().size();
  }
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the child finished before it was killed";
  std::string why;
  {
    const auto store = sim::SweepStore::open(killed / "sweep.db", bundled_hash(), why);
    ASSERT_TRUE(store) << why;
    const std::size_t done = store->done_points().size();
    EXPECT_GE(done, 3u);
    EXPECT_LT(done, 81u);
  }
  const Outcome resumed =
      coda({"sweep", kBundled, "--out", killed.c_str(), "--resume", "--threads", "2"});
  ASSERT_EQ(resumed.code, 0) << resumed.err;
  ASSERT_EQ(coda({"sweep", kBundled, "--out", whole.c_str()}).code, 0);
  const auto rows = stored_rows(killed);
  EXPECT_EQ(rows.size(), 81u);
  EXPECT_EQ(rows, stored_rows(whole));
}

}  // namespace
}  // namespace coda::cli
