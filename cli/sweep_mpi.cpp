#include "cli/sweep_mpi.h"

#include <charconv>
#include <cstdlib>
#include <ostream>
#include <string_view>

#include <fmt/format.h>

#if CODA_WITH_MPI
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <list>
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

constexpr int kPointsTag = 1;   // rank r to 0: finished points (dse::encode_records)
constexpr int kDoneTag = 2;     // rank r to 0: all its points sent; payload: its error, or empty
constexpr int kRequestTag = 3;  // rank r to 0: it wants more points (no payload)
constexpr int kShareTag = 4;    // rank 0 to r: points to run (indices); empty: none are left
// How often rank 0's main thread looks for messages while there are none (each look that finds
// none is a wake-up on the core that runs rank 0's worker; the other ranks ask for points far
// enough ahead to wait this long for them).
constexpr auto kRootPoll = std::chrono::milliseconds(5);

// MPI_Init_thread / MPI_Finalize around one sweep. Only the main thread calls MPI.
class MpiSession {
 public:
  MpiSession() {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  // MPI_Finalize synchronises the ranks, and Open MPI waits there by spinning: the ranks done
  // before rank 0 has written the exports (half a second for 8000 points) would keep their
  // cores busy for nothing. So they wait in a barrier first, checked every millisecond.
  ~MpiSession() {
    MPI_Request barrier = MPI_REQUEST_NULL;
    MPI_Ibarrier(MPI_COMM_WORLD, &barrier);
    for (int done = 0; MPI_Test(&barrier, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && done == 0;)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    MPI_Finalize();
  }
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

// The points still to run, handed out from the front of the list as the ranks get free:
// single points to rank 0's own workers, and shares of about remaining / (2 x ranks) points (at
// least kMinShare, at most kMaxShare) to the other ranks (guided self-scheduling: the shares
// shrink as the list does, so the ranks finish within a few points of each other, and a share
// is a run of neighbouring points, which reuse the same mappings). Thread-safe.
class Dispenser {
 public:
  static constexpr std::size_t kMinShare = 4;
  static constexpr std::size_t kMaxShare = 256;

  Dispenser(const std::vector<std::uint64_t>& todo, int ranks)
      : todo_(todo), ranks_(static_cast<std::size_t>(ranks)) {}

  std::optional<std::uint64_t> one() {
    const std::scoped_lock lock(mutex_);
    if (next_ == todo_.size()) return std::nullopt;
    return todo_[next_++];
  }

  std::vector<std::uint64_t> share() {
    const std::scoped_lock lock(mutex_);
    const std::size_t left = todo_.size() - next_;
    const std::size_t size =
        std::min(left, std::clamp(left / (2 * ranks_), kMinShare, kMaxShare));
    std::vector<std::uint64_t> points(todo_.begin() + static_cast<std::ptrdiff_t>(next_),
                                      todo_.begin() + static_cast<std::ptrdiff_t>(next_ + size));
    next_ += size;
    return points;
  }

 private:
  std::mutex mutex_;  // guards next_
  const std::vector<std::uint64_t>& todo_;
  const std::size_t ranks_;
  std::size_t next_ = 0;
};

struct Message {
  int source = 0;
  int tag = 0;
  std::vector<std::uint8_t> bytes;
};

// A message from any rank, if one has arrived.
std::optional<Message> poll(int source = MPI_ANY_SOURCE, int tag = MPI_ANY_TAG) {
  int arrived = 0;
  MPI_Status status;
  MPI_Iprobe(source, tag, MPI_COMM_WORLD, &arrived, &status);
  if (arrived == 0) return std::nullopt;
  int count = 0;
  MPI_Get_count(&status, MPI_BYTE, &count);
  Message message{status.MPI_SOURCE, status.MPI_TAG,
                  std::vector<std::uint8_t>(static_cast<std::size_t>(count))};
  MPI_Recv(message.bytes.data(), count, MPI_BYTE, status.MPI_SOURCE, status.MPI_TAG,
           MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  return message;
}

// Rank r's sends to rank 0, without blocking: MPI_Isend, each buffer kept until MPI_Test says
// its send completed. A blocking MPI_Send of a message above Open MPI's eager limit (4 KiB in
// shared memory) waits for rank 0 to receive it, and Open MPI waits by spinning: that took
// rank r's core from its workers (each of its points took 1.6x as long as in one process).
class Outbox {
 public:
  Outbox() = default;
  Outbox(const Outbox&) = delete;
  Outbox& operator=(const Outbox&) = delete;
  ~Outbox() { drain(); }

  void post(std::vector<std::uint8_t> bytes, int tag) {
    Pending& p = pending_.emplace_back(Pending{std::move(bytes), MPI_REQUEST_NULL});
    MPI_Isend(p.bytes.data(), static_cast<int>(p.bytes.size()), MPI_BYTE, 0, tag,
              MPI_COMM_WORLD, &p.request);
    progress();
  }

  // Forgets the sends that completed.
  void progress() {
    pending_.remove_if([](Pending& p) {
      int done = 0;
      MPI_Test(&p.request, &done, MPI_STATUS_IGNORE);
      return done != 0;
    });
  }

  // Waits for every send, checking every 0.2 ms rather than spinning.
  void drain() {
    for (progress(); !pending_.empty(); progress())
      std::this_thread::sleep_for(std::chrono::microseconds(200));
  }

 private:
  struct Pending {
    std::vector<std::uint8_t> bytes;
    MPI_Request request;
  };
  std::list<Pending> pending_;  // a list: MPI holds the address of each request
};

// Rank 0's answer to a request: small (at most kMaxShare indices, 2 KiB), so MPI_Send returns
// at once (Open MPI's eager protocol).
void send_share(const std::vector<std::uint64_t>& points, int to) {
  // As bytes, because poll() receives every message as bytes (MPI matches types exactly).
  MPI_Send(points.data(), static_cast<int>(points.size() * sizeof(std::uint64_t)), MPI_BYTE, to,
           kShareTag, MPI_COMM_WORLD);
}

std::vector<std::uint64_t> read_share(const std::vector<std::uint8_t>& bytes) {
  std::vector<std::uint64_t> points(bytes.size() / sizeof(std::uint64_t));
  if (!points.empty())  // an empty vector's data() may be null, which memcpy must not get
    std::memcpy(points.data(), bytes.data(), points.size() * sizeof(std::uint64_t));
  return points;
}

struct Shared {
  const SweepArgs& args;
  const dse::SweepSpec& spec;
  const dse::SweepInputs& inputs;
  std::size_t points = 0;  // in the whole list: bounds each rank's threads
};

// Rank 0: runs points from the dispenser on its worker threads and answers the other ranks'
// requests for shares from it; stores its points, with every point the other ranks send, as
// they come; then the exports and the summary.
int run_root(const MpiSession& mpi, const Shared& s, dse::SweepStore& store,
             const dse::SweepPlan& plan, std::chrono::steady_clock::time_point start,
             std::ostream& out, std::ostream& err) {
  dse::SweepWriter writer(store, plan.todo.size(), sweep_progress(err));
  Dispenser dispenser(plan.todo, mpi.size());
  mapper::MappingCache cache;
  std::string work_why;
  bool work_ok = true;
  {
    const std::jthread workers([&] {
      work_ok = dse::run_points(
          s.spec, s.inputs, [&dispenser] { return dispenser.one(); }, s.points, s.args.threads,
          [&writer](dse::SweepPointRecord record, std::string& why) {
            return writer.put(std::move(record), why);
          },
          &cache, work_why);
    });
    std::vector<std::string> failures;
    for (int finished = 0; finished < mpi.size() - 1;) {
      auto message = poll();
      if (!message) {
        std::this_thread::sleep_for(kRootPoll);
        continue;
      }
      if (message->tag == kRequestTag) {
        send_share(dispenser.share(), message->source);
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
      auto records = dse::decode_records(message->bytes);
      if (!records) {
        failures.push_back(
            fmt::format("rank {} sent a message that is not a list of points", message->source));
        continue;
      }
      for (dse::SweepPointRecord& record : *records) {
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
  dse::SweepOutcome outcome;
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

// Rank r > 0: its workers run the points of the shares rank 0 sends. The main thread does the
// MPI, and sleeps on a condition variable between its chores, so that it takes little from the
// workers' core (woken every 0.5 ms, it took a tenth of it: each wake-up is two context
// switches): it asks for the next share while the points still queued would last the workers
// kAhead (at the rank's rate so far) or while kLowWater points per thread are left, whichever
// is more, so that they never wait for one; it sends the finished points to rank 0 (those
// queued, in one message, once kBatch have finished or kBatchAge has passed since the last
// message); and once rank 0 has no points left and the workers are done, a done message.
int run_other(const Shared& s) {
  constexpr std::size_t kLowWater = 4;
  constexpr auto kAhead = 8 * kRootPoll;
  constexpr std::size_t kBatch = 64;
  constexpr auto kBatchAge = std::chrono::milliseconds(50);
  constexpr auto kShareTick = std::chrono::milliseconds(1);  // while a share is on its way
  const std::size_t threads = dse::worker_threads(s.args.threads, s.points);
  const auto begun = std::chrono::steady_clock::now();
  std::mutex mutex;  // guards everything below
  std::condition_variable changed;  // for the workers: points arrived, or none are left
  std::condition_variable ready;    // for the main thread: one of its chores is due
  std::deque<std::uint64_t> points;
  bool exhausted = false;  // rank 0 has no points left
  bool asking = false;     // a request is out and its share has not come yet
  std::size_t ran = 0;     // points finished on this rank
  std::vector<dse::SweepPointRecord> queue;
  bool finished = false;
  mapper::MappingCache cache;
  std::string why;
  bool ok = true;
  // Whether the queued points run out soon (the caller holds the mutex).
  const auto running_low = [&] {
    if (asking || exhausted || finished) return false;
    if (points.size() < kLowWater * threads) return true;
    if (ran == 0) return false;
    const auto per_point = (std::chrono::steady_clock::now() - begun) / ran;
    return per_point * points.size() < kAhead;
  };
  const auto next = [&]() -> std::optional<std::uint64_t> {
    std::unique_lock lock(mutex);
    changed.wait(lock, [&] { return !points.empty() || exhausted; });
    if (points.empty()) return std::nullopt;
    const std::uint64_t point = points.front();
    points.pop_front();
    if (running_low()) ready.notify_one();
    return point;
  };
  const std::jthread workers([&] {
    ok = dse::run_points(
        s.spec, s.inputs, next, s.points, s.args.threads,
        [&](dse::SweepPointRecord record, std::string& /*reason*/) {
          const std::scoped_lock lock(mutex);
          queue.push_back(std::move(record));
          ++ran;
          if (queue.size() >= kBatch) ready.notify_one();
          return true;
        },
        &cache, why);
    const std::scoped_lock lock(mutex);
    finished = true;
    ready.notify_one();
  });
  Outbox outbox;
  auto last_sent = std::chrono::steady_clock::now();
  for (;;) {
    if (asking) {
      if (auto share = poll(0, kShareTag)) {
        const std::vector<std::uint64_t> arrived = read_share(share->bytes);
        const std::scoped_lock lock(mutex);
        asking = false;
        points.insert(points.end(), arrived.begin(), arrived.end());
        if (arrived.empty()) exhausted = true;
        changed.notify_all();
      }
    }
    outbox.progress();
    std::vector<dse::SweepPointRecord> batch;
    bool want = false;
    bool last = false;
    {
      std::unique_lock lock(mutex);
      const auto due = [&] {
        return queue.size() >= kBatch || running_low() ||
               (finished && (!queue.empty() || !asking));
      };
      const auto wait = asking ? std::chrono::steady_clock::duration(kShareTick)
                               : kBatchAge - (std::chrono::steady_clock::now() - last_sent);
      ready.wait_for(lock, wait, due);
      const auto now = std::chrono::steady_clock::now();
      if (queue.size() >= kBatch || finished || now - last_sent >= kBatchAge) {
        batch.swap(queue);
        last_sent = now;
      }
      want = running_low();
      if (want) asking = true;
      last = finished && queue.empty() && !asking;
    }
    if (!batch.empty()) outbox.post(dse::encode_records(batch), kPointsTag);
    if (want) outbox.post({}, kRequestTag);
    if (last) break;  // rank 0 sends nothing after the done message
  }
  const std::string failure = ok ? std::string() : why;
  outbox.post(std::vector<std::uint8_t>(failure.begin(), failure.end()), kDoneTag);
  outbox.drain();
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
  const auto spec = dse::load_sweep_spec(args.spec, diags);
  if (!all_ok(mpi, spec.has_value(), diags.format_all() + "no point was run.\n", err)) return 1;
  // Only rank 0 touches the store (open_sweep_store prints its own errors).
  SweepFolderLock lock;  // before the store: it outlives it
  std::unique_ptr<dse::SweepStore> store;
  if (root) store = open_sweep_store(args, *spec, lock, err);
  if (!all_ok(mpi, !root || store != nullptr, "", err)) return 1;
  const sim::EngineRegistry engines = all_engines();
  const auto inputs = dse::load_sweep_inputs(*spec, diags, &engines);
  if (!all_ok(mpi, inputs.has_value(), diags.format_all() + "no point was run.\n", err)) return 1;

  dse::SweepPlan plan;
  if (root)
    plan = dse::plan_sweep(inputs->points.size(), store->done_points(),
                           args.limit > 0 ? std::optional(args.limit) : std::nullopt);
  std::uint64_t count = plan.todo.size();
  MPI_Bcast(&count, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  const Shared shared{args, *spec, *inputs, static_cast<std::size_t>(count)};
  return root ? run_root(mpi, shared, *store, plan, start, out, err) : run_other(shared);
}

#endif

}  // namespace coda::cli
