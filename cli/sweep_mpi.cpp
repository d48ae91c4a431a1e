#include "cli/sweep_mpi.h"

#include <charconv>
#include <cstdlib>
#include <ostream>
#include <string_view>

#include <fmt/format.h>

#if CODA_WITH_MPI
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include <mpi.h>

#include "cli/options.h"
#include "mapper/search.h"
#endif

namespace coda::cli {
namespace {

int env_int(const char* name) {
  const char* text = std::getenv(name);  // NOLINT(concurrency-mt-unsafe): read before threads
  if (text == nullptr) return 0;
  const std::string_view view(text);
  int value = 0;
  const auto [end, ec] = std::from_chars(view.data(), view.data() + view.size(), value);
  return ec == std::errc() && end == view.data() + view.size() ? value : 0;
}

}  // namespace

int mpi_world_size() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"})
    if (const int size = env_int(name); size > 0) return size;
  return 1;
}

#if !CODA_WITH_MPI

int run_sweep_mpi(const SweepArgs& /*args*/, std::ostream& /*out*/, std::ostream& err) {
  err << fmt::format("error: coda sweep was started by mpirun with {} ranks, but this coda was "
                     "built without MPI; run it without mpirun, or build coda with MPI "
                     "(install libopenmpi-dev; CMake option CODA_WITH_MPI)\n",
                     mpi_world_size());
  return 1;
}

#else

namespace {

constexpr int kPointsTag = 1;  // finished points (sim::encode_records)
constexpr int kDoneTag = 2;    // a rank has sent all its points; payload: its error, or empty

// MPI_Init_thread / MPI_Finalize around one sweep. Only the main thread calls MPI.
class MpiSession {
 public:
  MpiSession() {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  ~MpiSession() { MPI_Finalize(); }
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  int rank() const { return rank_; }
  int size() const { return size_; }

 private:
  int rank_ = 0;
  int size_ = 1;
};

// Whether every rank is `ok`. The first rank that is not prints `failure` (the ranks read the
// same files, so they usually fail alike: one copy is enough).
bool all_ok(const MpiSession& mpi, bool ok, const std::string& failure, std::ostream& err) {
  std::vector<int> flags(static_cast<std::size_t>(mpi.size()));
  int mine = ok ? 1 : 0;
  MPI_Allgather(&mine, 1, MPI_INT, flags.data(), 1, MPI_INT, MPI_COMM_WORLD);
  for (int r = 0; r < mpi.size(); ++r) {
    if (flags[static_cast<std::size_t>(r)] != 0) continue;
    if (r == mpi.rank() && !failure.empty())
      err << (r == 0 ? failure : fmt::format("rank {}: {}", r, failure));
    return false;
  }
  return true;
}

// Rank 0's list of the points to run, on every rank.
std::vector<std::uint64_t> broadcast(std::vector<std::uint64_t> todo) {
  std::uint64_t count = todo.size();
  MPI_Bcast(&count, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  todo.resize(static_cast<std::size_t>(count));  // at most 10 million points (sweep_spec)
  MPI_Bcast(todo.data(), static_cast<int>(count), MPI_UINT64_T, 0, MPI_COMM_WORLD);
  return todo;
}

struct Message {
  int source = 0;
  int tag = 0;
  std::vector<std::uint8_t> bytes;
};

// A message from any rank, if one has arrived.
std::optional<Message> poll() {
  int arrived = 0;
  MPI_Status status;
  MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &arrived, &status);
  if (arrived == 0) return std::nullopt;
  int count = 0;
  MPI_Get_count(&status, MPI_BYTE, &count);
  Message message{status.MPI_SOURCE, status.MPI_TAG,
                  std::vector<std::uint8_t>(static_cast<std::size_t>(count))};
  MPI_Recv(message.bytes.data(), count, MPI_BYTE, status.MPI_SOURCE, status.MPI_TAG,
           MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  return message;
}

void send(std::span<const std::uint8_t> bytes, int tag) {
  MPI_Send(bytes.data(), static_cast<int>(bytes.size()), MPI_BYTE, 0, tag, MPI_COMM_WORLD);
}

struct Shared {
  const SweepArgs& args;
  const sim::SweepSpec& spec;
  const sim::SweepInputs& inputs;
  std::vector<std::uint64_t> mine;  // this rank's share of the list
};

// Rank 0: runs its share on worker threads and stores it, with every point the other ranks send,
// as they come; then the exports and the summary.
int run_root(const MpiSession& mpi, const Shared& s, sim::SweepStore& store,
             const sim::SweepPlan& plan, std::chrono::steady_clock::time_point start,
             std::ostream& out, std::ostream& err) {
  sim::SweepWriter writer(store, plan.todo.size(), sweep_progress(err));
  mapper::MappingCache cache;
  std::string work_why;
  bool work_ok = true;
  {
    const std::jthread workers([&] {
      work_ok = sim::run_points(
          s.spec, s.inputs, s.mine, s.args.threads,
          [&writer](sim::SweepPointRecord record, std::string& why) {
            return writer.put(std::move(record), why);
          },
          &cache, work_why);
    });
    std::vector<std::string> failures;
    for (int finished = 0; finished < mpi.size() - 1;) {
      auto message = poll();
      if (!message) {
        std::this_thread::sleep_for(std::chrono::microseconds(200));
        continue;
      }
      if (message->tag == kDoneTag) {
        ++finished;
        if (!message->bytes.empty())
          failures.push_back(fmt::format("rank {}: {}", message->source,
                                         std::string(message->bytes.begin(),
                                                     message->bytes.end())));
        continue;
      }
      auto records = sim::decode_records(message->bytes);
      if (!records) {
        failures.push_back(
            fmt::format("rank {} sent a message that is not a list of points", message->source));
        continue;
      }
      for (sim::SweepPointRecord& record : *records) {
        std::string why;
        if (!writer.put(std::move(record), why)) break;  // finish() reports it
      }
    }
    for (const std::string& failure : failures) err << "error: " << failure << "\n";
    if (!failures.empty()) work_ok = false;
  }
  std::string write_why;
  const bool written = writer.finish(write_why);
  if (!written) err << fmt::format("error: cannot write the sweep store: {}\n", write_why);
  if (!work_why.empty()) err << "error: " << work_why << "\n";
  if (!written || !work_ok) {
    err << "the sweep stopped.\n";
    return 1;
  }
  sim::SweepOutcome outcome;
  outcome.points = plan.points;
  outcome.already_done = plan.already_done;
  outcome.remaining = plan.remaining;
  outcome.ran = writer.written();
  outcome.infeasible = writer.infeasible();
  outcome.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return finish_sweep(s.args, s.spec, store, outcome, fmt::format(", {} ranks", mpi.size()), out,
                      err);
}

// Rank r > 0: runs its share on worker threads; the main thread sends the finished points to
// rank 0, all those queued in one message, then a done message.
int run_other(const Shared& s) {
  std::mutex mutex;  // guards `queue` and `finished`
  std::condition_variable ready;
  std::vector<sim::SweepPointRecord> queue;
  bool finished = false;
  mapper::MappingCache cache;
  std::string why;
  bool ok = true;
  const std::jthread workers([&] {
    ok = sim::run_points(
        s.spec, s.inputs, s.mine, s.args.threads,
        [&](sim::SweepPointRecord record, std::string& /*reason*/) {
          const std::scoped_lock lock(mutex);
          queue.push_back(std::move(record));
          ready.notify_one();
          return true;
        },
        &cache, why);
    const std::scoped_lock lock(mutex);
    finished = true;
    ready.notify_one();
  });
  for (;;) {
    std::vector<sim::SweepPointRecord> batch;
    bool last = false;
    {
      std::unique_lock lock(mutex);
      ready.wait(lock, [&] { return !queue.empty() || finished; });
      batch.swap(queue);
      last = finished;
    }
    if (!batch.empty()) send(sim::encode_records(batch), kPointsTag);
    if (last) break;
  }
  const std::string failure = ok ? std::string() : why;
  send(std::span(reinterpret_cast<const std::uint8_t*>(failure.data()), failure.size()),
       kDoneTag);
  return ok ? 0 : 1;
}

}  // namespace

int run_sweep_mpi(const SweepArgs& args, std::ostream& out, std::ostream& err) {
  const MpiSession mpi;
  // Timed from here, as a one-process sweep is (spec, store, workloads, points): MPI's start-up
  // is mpirun's, not the sweep's.
  const auto start = std::chrono::steady_clock::now();
  const bool root = mpi.rank() == 0;
  Diagnostics diags;
  const auto spec = sim::load_sweep_spec(args.spec, diags);
  if (!all_ok(mpi, spec.has_value(), diags.format_all() + "no point was run.\n", err)) return 1;
  // Only rank 0 touches the store (open_sweep_store prints its own errors).
  std::unique_ptr<sim::SweepStore> store;
  if (root) store = open_sweep_store(args, *spec, err);
  if (!all_ok(mpi, !root || store != nullptr, "", err)) return 1;
  const sim::EngineRegistry engines = all_engines();
  const auto inputs = sim::load_sweep_inputs(*spec, diags, &engines);
  if (!all_ok(mpi, inputs.has_value(), diags.format_all() + "no point was run.\n", err)) return 1;

  sim::SweepPlan plan;
  if (root)
    plan = sim::plan_sweep(inputs->points.size(), store->done_points(),
                           args.limit > 0 ? std::optional(args.limit) : std::nullopt);
  const std::vector<std::uint64_t> todo = broadcast(plan.todo);
  // Round robin: neighbouring points cost about the same, so each rank gets a like share.
  Shared shared{args, *spec, *inputs, {}};
  for (std::size_t i = static_cast<std::size_t>(mpi.rank()); i < todo.size();
       i += static_cast<std::size_t>(mpi.size()))
    shared.mine.push_back(todo[i]);
  return root ? run_root(mpi, shared, *store, plan, start, out, err) : run_other(shared);
}

#endif

}  // namespace coda::cli
