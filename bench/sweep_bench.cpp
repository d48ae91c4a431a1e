// Sweep executor speed (docs/sweeps.md, "Speed"): design points per minute for ResNet-50 on the
// analytical engine, each point stored in SQLite as `coda sweep` stores it. Timed program, not
// Google Benchmark: a sweep is seconds long and its rate is the figure. Run from the repository
// top (it reads configs/):
//   build/bench/bench_sweep [points-per-axis-scale]
// Reports, in the same run:
//   1 thread vs 2 threads (the executor as coda sweep runs it: the base arch read once per
//   thread, a compact run summary per row, group commit);
//   shared vs unshared on 2 threads (unshared: the arch files read again for every point and one
//   transaction, one sync, per point, as the executor did before);
//   with MPI: `mpirun -np 2 coda sweep --threads 1` vs `mpirun -np 1` (one rank, which mpirun
//   binds to one core) and vs `coda sweep --threads 1` (one process, whose store writer thread
//   may use the second core) on the same spec, five times larger; and the most two ranks could
//   gain on this machine: the one-rank sweep twice at once, on both cores, vs once.

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "core/yaml_reader.h"
#include "dse/sweep.h"
#include "dse/sweep_spec.h"
#include "dse/sweep_store.h"

namespace {

using coda::Diagnostics;
namespace dse = coda::dse;

// ResNet-50 on the TPU-like 128x128 WS preset: 4 x 4 x 5 x 4 x 5 = 1600 points. Parsed under a name
// in configs/sweeps/ so its relative paths resolve as a bundled spec's.
constexpr const char* kSpecName = "configs/sweeps/bench_resnet50.yaml";
constexpr const char* kSpecText = R"(schema_version: 1
name: bench-resnet50
arch: ../arch/tpu_like_128x128_ws.yaml
workloads:
  - {name: resnet50, file: ../workloads/resnet50.yaml}
axes:
  array.rows: [32, 64, 128, 256]
  array.cols: [32, 64, 128, 256]
  sram.ifmap: {from: 512 KiB, to: 8 MiB, factor: 2}
  sram.filter: [32 KiB, 64 KiB, 128 KiB, 256 KiB]
  dram.bandwidth: [8 GB/s, 17 GB/s, 34 GB/s, 68 GB/s, 136 GB/s]
sampling: {method: grid}
constraints: {max_power_w: 5}
objectives: [latency, energy, perf_per_watt]
)";

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::unique_ptr<dse::SweepStore> fresh_store(const std::filesystem::path& file,
                                             const dse::SweepSpec& spec) {
  std::filesystem::remove(file);
  std::filesystem::remove(file.string() + "-wal");
  std::filesystem::remove(file.string() + "-shm");
  std::string why;
  auto store = dse::SweepStore::create(file, spec.hash, spec.name, dse::store_axes(spec), why);
  if (!store) fmt::print(stderr, "bench_sweep: {}\n", why);
  return store;
}

// The executor as coda sweep runs it; seconds for every point.
double shared_run(const dse::SweepSpec& spec, const std::filesystem::path& db, unsigned threads,
                  std::vector<dse::SweepRow>& rows) {
  auto store = fresh_store(db, spec);
  Diagnostics diags;
  const auto outcome = dse::run_sweep(spec, *store, {.threads = threads}, diags);
  if (!outcome) fmt::print(stderr, "bench_sweep: {}\n", diags.format_all());
  rows = store->rows();
  return outcome ? outcome->seconds : 0.0;
}

// Without sharing: every point reads the arch files again (a fresh PointArchBuilder) and is
// stored in its own transaction (one sync per point).
double unshared_run(const dse::SweepSpec& spec, const std::filesystem::path& db,
                    unsigned threads, std::vector<dse::SweepRow>& rows) {
  auto store = fresh_store(db, spec);
  const auto start = std::chrono::steady_clock::now();
  Diagnostics diags;
  const auto inputs = dse::load_sweep_inputs(spec, diags);
  if (!inputs) return 0.0;
  const std::vector<std::uint64_t> todo =
      dse::todo_list(dse::plan_sweep(inputs->points.size(), {}, std::nullopt));
  std::mutex mutex;
  std::vector<std::jthread> pool;
  std::atomic<std::size_t> next{0};
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      dse::PointSequence points = inputs->points;
      for (std::size_t slot = next++; slot < todo.size(); slot = next++) {
        Diagnostics point_diags;
        auto archs = dse::PointArchBuilder::create(spec, point_diags);
        if (!archs) return;
        const auto record =
            dse::evaluate_point(spec, *inputs, *archs, todo[slot], points.at(todo[slot]));
        const std::scoped_lock lock(mutex);
        std::string why;
        store->write_point(record, why);
      }
    });
  pool.clear();
  const double seconds = seconds_since(start);
  rows = store->rows();
  return seconds;
}

#ifdef CODA_MPIEXEC
// The seconds each `coda sweep` reports for its points ("ran N in S s"), run as `commands`, all
// at once.
std::vector<double> coda_seconds(const std::vector<std::string>& commands) {
  std::vector<FILE*> pipes;
  pipes.reserve(commands.size());
  for (const std::string& command : commands) pipes.push_back(popen(command.c_str(), "r"));
  std::vector<double> seconds;
  for (FILE* pipe : pipes) {
    if (pipe == nullptr) {
      seconds.push_back(0.0);
      continue;
    }
    std::string text;
    std::array<char, 512> buffer{};
    while (fgets(buffer.data(), static_cast<int>(buffer.size()), pipe) != nullptr)
      text += buffer.data();
    pclose(pipe);
    const auto at = text.find(" in ");
    if (at == std::string::npos) fmt::print(stderr, "bench_sweep: no rate in: {}\n", text);
    seconds.push_back(at == std::string::npos ? 0.0 : std::stod(text.substr(at + 4)));
  }
  return seconds;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values.empty() ? 0.0 : values[values.size() / 2];
}
#endif

void report(std::string_view what, std::size_t points, double seconds) {
  fmt::print("{:<52} {:>6} points {:>8.3f} s {:>10.0f} points/min\n", what, points, seconds,
             seconds > 0 ? 60.0 * static_cast<double>(points) / seconds : 0.0);
}

}  // namespace

int main() {
  Diagnostics diags;
  const auto doc = coda::YamlDocument::parse(kSpecText, kSpecName, diags);
  const auto spec = doc ? dse::read_sweep_spec(doc->root(), diags) : std::nullopt;
  if (!spec) {
    fmt::print(stderr, "bench_sweep: {}\n", diags.format_all());
    return 1;
  }
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "coda_bench_sweep";
  std::filesystem::create_directories(dir);
  const std::size_t points = dse::enumerate_points(*spec).size();
  fmt::print("ResNet-50 (54 convs) on tpu_like_128x128_ws, {} design points, analytical engine, "
             "stored in SQLite (WAL, synchronous=FULL) in {}\n",
             points, dir.string());

  std::vector<dse::SweepRow> one, two, unshared;
  const double t1 = shared_run(*spec, dir / "one.db", 1, one);
  const double t2 = shared_run(*spec, dir / "two.db", 2, two);
  const double tu = unshared_run(*spec, dir / "unshared.db", 2, unshared);
  report("shared inputs, group commit, 1 thread", points, t1);
  report("shared inputs, group commit, 2 threads", points, t2);
  report("arch re-read + 1 transaction per point, 2 threads", points, tu);
  fmt::print("2 threads / 1 thread: {:.2f}x; shared / unshared (2 threads): {:.2f}x\n", t1 / t2,
             tu / t2);
  // Same stored values whichever way they were run.
  fmt::print("rows equal: 1 vs 2 threads {}, shared vs unshared {}\n", one == two ? "yes" : "NO",
             two == unshared ? "yes" : "NO");

#ifdef CODA_MPIEXEC
  // Five times the points (an sram.ofmap axis more: 8000), so that each run lasts seconds; each
  // command kRepeats times, interleaved, and the medians taken: this VM's wall times (and the
  // CPU time of the same run) vary by a third from run to run.
  const std::filesystem::path spec_file = dir / "bench_resnet50.yaml";
  {
    std::string text = kSpecText;
    for (const std::string folder : {"arch", "workloads"}) {
      const std::string relative = "../" + folder + "/";
      text.replace(text.find(relative), relative.size(),
                   std::filesystem::absolute("configs/" + folder).string() + "/");
    }
    const std::string filter_axis = "  sram.filter: [32 KiB, 64 KiB, 128 KiB, 256 KiB]\n";
    text.insert(text.find(filter_axis) + filter_axis.size(),
                "  sram.ofmap: [256 KiB, 512 KiB, 1 MiB, 2 MiB, 4 MiB]\n");
    std::ofstream(spec_file) << text;
  }
  const std::size_t mpi_points = 5 * points;
  const auto sweep = [&](const std::string& out) {
    return fmt::format("{} sweep {} --threads 1 --out {} 2>/dev/null", CODA_BINARY,
                       spec_file.string(), (dir / out).string());
  };
  const std::string mpirun = fmt::format("{} --allow-run-as-root --oversubscribe", CODA_MPIEXEC);
  // Each repeat: one process (unbound); one rank (mpirun binds it to one core); two ranks; and
  // the ceiling: the one-rank sweep twice at once, each bound to its own core. On this VM two
  // busy cores are each up to a sixth slower than one busy core (the same two processes alone
  // and at once; a pure arithmetic loop shows the same), so two ranks can be at most
  // 2 x (one alone / one of the two at once) faster than one rank here, and the ratio of the
  // two is what the MPI code costs.
  struct Runs {
    std::vector<double> process, rank, ranks, pair;
  } runs;
  constexpr int kRepeats = 9;
  for (int repeat = 0; repeat < kRepeats; ++repeat) {
    for (const char* out : {"process", "rank", "ranks", "pair0", "pair1"})
      std::filesystem::remove_all(dir / out);
    runs.process.push_back(coda_seconds({sweep("process")})[0]);
    runs.rank.push_back(coda_seconds({mpirun + " -np 1 " + sweep("rank")})[0]);
    runs.ranks.push_back(coda_seconds({mpirun + " -np 2 " + sweep("ranks")})[0]);
    const auto pair =
        coda_seconds({"taskset -c 0 " + sweep("pair0"), "taskset -c 1 " + sweep("pair1")});
    runs.pair.push_back((pair[0] + pair[1]) / 2);
  }
  const double r1 = median(runs.process), rn1 = median(runs.rank), r2 = median(runs.ranks),
               rp = median(runs.pair);
  report(fmt::format("coda sweep, 1 process x 1 thread (median of {})", kRepeats), mpi_points,
         r1);
  report("mpirun -np 1 coda sweep, 1 rank x 1 thread", mpi_points, rn1);
  report("mpirun -np 2 coda sweep, 2 ranks x 1 thread", mpi_points, r2);
  report("1 rank's sweep, 2 at once on their own cores (each)", mpi_points, rp);
  const auto ratio = [](double a, double b) { return b > 0 ? a / b : 0.0; };
  const double ceiling = 2 * ratio(rn1, rp);
  fmt::print("medians: 2 ranks / 1 rank {:.2f}x; 2 ranks / 1 process {:.2f}x; this VM's ceiling "
             "for 2 ranks (2 x 1 rank / 1 of 2 at once) {:.2f}x, so the MPI code's efficiency "
             "{:.0f}%\n",
             ratio(rn1, r2), ratio(r1, r2), ceiling, 100 * ratio(ratio(rn1, r2), ceiling));
  const auto [lo, hi] = std::minmax_element(runs.ranks.begin(), runs.ranks.end());
  const auto [lo1, hi1] = std::minmax_element(runs.rank.begin(), runs.rank.end());
  fmt::print("runs: 2 ranks {:.2f}-{:.2f} s, 1 rank {:.2f}-{:.2f} s\n", *lo, *hi, *lo1, *hi1);
#else
  fmt::print("MPI: not built (CODA_WITH_MPI off)\n");
#endif
  return 0;
}
