#include "dse/mpi/sweep_mpi.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <list>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/plugin.h"
#include "dse/mpi/mpi_plugin.h"
#include "dse/sweep_store.h"
#include "mapper/search.h"

namespace coda::dse::mpi {
namespace {

constexpr int kPointsTag = 1;   // rank r to 0: finished points (encode_records)
constexpr int kDoneTag = 2;     // rank r to 0: all its points sent; payload: its error, or empty
constexpr int kRequestTag = 3;  // rank r to 0: it wants more points (no payload)
constexpr int kShareTag = 4;    // rank 0 to r: points to run (indices); empty: none are left
// How often rank 0's main thread looks for messages while there are none (each look that finds
// none is a wake-up on the core that runs rank 0's worker; the other ranks ask for points far
// enough ahead to wait this long for them).
constexpr auto kRootPoll = std::chrono::milliseconds(5);

// The points still to run, handed out from the front of the list as the ranks get free:
// single points to rank 0's own workers, and shares of about remaining / (2 x ranks) points (at
// least kMinShare, at most kMaxShare) to the other ranks (guided self-scheduling: the shares
// shrink as the list does, so the ranks finish within a few points of each other, and a share
// is a run of neighbouring points, which reuse the same mappings). Thread-safe.
class Dispenser {
 public:
  static constexpr std::size_t kMinShare = 4;
  static constexpr std::size_t kMaxShare = 256;

  Dispenser(const SweepPlan& plan, int ranks)
      : todo_(plan), total_(plan.to_run), ranks_(static_cast<std::uint64_t>(ranks)) {}

  std::optional<std::uint64_t> one() {
    const std::scoped_lock lock(mutex_);
    return todo_.next();
  }

  std::vector<std::uint64_t> share() {
    const std::scoped_lock lock(mutex_);
    const std::uint64_t left = total_ - todo_.handed();
    const std::uint64_t size = std::min<std::uint64_t>(
        left, std::clamp<std::uint64_t>(left / (2 * ranks_), kMinShare, kMaxShare));
    std::vector<std::uint64_t> points;
    for (std::uint64_t i = 0; i < size; ++i) points.push_back(*todo_.next());
    return points;
  }

 private:
  std::mutex mutex_;  // guards todo_
  TodoCursor todo_;
  const std::uint64_t total_;
  const std::uint64_t ranks_;
};

struct Message {
  int source = 0;
  int tag = 0;
  std::vector<std::uint8_t> bytes;
};

// A message from `source` with `tag` (-1: any), if one has arrived.
std::optional<Message> poll(const TransportTable& mpi, int source = -1, int tag = -1) {
  Message message;
  int count = 0;
  if (mpi.probe(source, tag, &message.source, &message.tag, &count) == 0) return std::nullopt;
  message.bytes.resize(static_cast<std::size_t>(count));
  mpi.recv(message.bytes.data(), count, message.source, message.tag);
  return message;
}

// Rank r's sends to rank 0, without blocking: MPI_Isend, each buffer kept until MPI_Test says
// its send completed. A blocking MPI_Send of a message above Open MPI's eager limit (4 KiB in
// shared memory) waits for rank 0 to receive it, and Open MPI waits by spinning: that took
// rank r's core from its workers (each of its points took 1.6x as long as in one process).
class Outbox {
 public:
  explicit Outbox(const TransportTable& mpi) : mpi_(mpi) {}
  Outbox(const Outbox&) = delete;
  Outbox& operator=(const Outbox&) = delete;
  ~Outbox() { drain(); }

  void post(std::vector<std::uint8_t> bytes, int tag) {
    Pending& p = pending_.emplace_back(Pending{std::move(bytes), nullptr});
    p.request = mpi_.isend(p.bytes.data(), static_cast<int>(p.bytes.size()), 0, tag);
    progress();
  }

  // Forgets the sends that completed.
  void progress() {
    pending_.remove_if([this](const Pending& p) { return mpi_.test(p.request) != 0; });
  }

  // Waits for every send, checking every 0.2 ms rather than spinning.
  void drain() {
    for (progress(); !pending_.empty(); progress())
      std::this_thread::sleep_for(std::chrono::microseconds(200));
  }

 private:
  struct Pending {
    std::vector<std::uint8_t> bytes;
    void* request;  // the isend's handle
  };
  const TransportTable& mpi_;
  std::list<Pending> pending_;  // a list: MPI holds the address of each buffer
};

// Rank 0's answer to a request: small (at most kMaxShare indices, 2 KiB), so MPI_Send returns
// at once (Open MPI's eager protocol).
void send_share(const TransportTable& mpi, const std::vector<std::uint64_t>& points, int to) {
  // As bytes, because poll() receives every message as bytes (MPI matches types exactly).
  mpi.send(points.data(), static_cast<int>(points.size() * sizeof(std::uint64_t)), to, kShareTag);
}

std::vector<std::uint64_t> read_share(const std::vector<std::uint8_t>& bytes) {
  std::vector<std::uint64_t> points(bytes.size() / sizeof(std::uint64_t));
  if (!points.empty())  // an empty vector's data() may be null, which memcpy must not get
    std::memcpy(points.data(), bytes.data(), points.size() * sizeof(std::uint64_t));
  return points;
}

struct Shared {
  const SweepSpec& spec;
  const SweepInputs& inputs;
  std::size_t points = 0;  // in the whole list: bounds each rank's threads
  unsigned threads = 0;
};

// Rank 0: runs points from the dispenser on its worker threads and answers the other ranks'
// requests for shares from it; stores its points, with every point the other ranks send, as
// they come.
RankOutcome root(const Session& session, const Shared& s, SweepStore& store, const SweepPlan& plan,
                 const std::function<void(const SweepProgress&)>& progress) {
  RankOutcome result;
  SweepWriter writer(store, plan.to_run, progress);
  Dispenser dispenser(plan, session.size());
  mapper::MappingCache cache;
  std::string work_why;
  bool work_ok = true;
  {
    const std::jthread workers([&] {
      work_ok = run_points(
          s.spec, s.inputs, [&dispenser] { return dispenser.one(); }, s.points, s.threads,
          [&writer](SweepPointRecord record, std::string& why) {
            return writer.put(std::move(record), why);
          },
          &cache, work_why);
    });
    std::vector<std::string> failures;
    for (int finished = 0; finished < session.size() - 1;) {
      auto message = poll(session.mpi());
      if (!message) {
        std::this_thread::sleep_for(kRootPoll);
        continue;
      }
      if (message->tag == kRequestTag) {
        send_share(session.mpi(), dispenser.share(), message->source);
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
      auto records = decode_records(message->bytes);
      if (!records) {
        failures.push_back(
            fmt::format("rank {} sent a message that is not a list of points", message->source));
        continue;
      }
      for (SweepPointRecord& record : *records) {
        std::string why;
        if (!writer.put(std::move(record), why)) break;  // finish() reports it
      }
    }
    result.errors = std::move(failures);
  }
  std::string write_why;
  if (!writer.finish(write_why))
    result.errors.push_back(fmt::format("cannot write the sweep store: {}", write_why));
  if (!work_why.empty()) result.errors.push_back(work_why);
  result.ok = work_ok && result.errors.empty();
  result.ran = writer.written();
  result.infeasible = writer.infeasible();
  return result;
}

// Rank r > 0: its workers run the points of the shares rank 0 sends. The main thread does the
// MPI, and sleeps on a condition variable between its chores, so that it takes little from the
// workers' core (woken every 0.5 ms, it took a tenth of it: each wake-up is two context
// switches): it asks for the next share while the points still queued would last the workers
// kAhead (at the rank's rate so far) or while kLowWater points per thread are left, whichever
// is more, so that they never wait for one; it sends the finished points to rank 0 (those
// queued, in one message, once kBatch have finished or kBatchAge has passed since the last
// message); and once rank 0 has no points left and the workers are done, a done message.
RankOutcome other(const Session& session, const Shared& s) {
  constexpr std::size_t kLowWater = 4;
  constexpr auto kAhead = 8 * kRootPoll;
  constexpr std::size_t kBatch = 64;
  constexpr auto kBatchAge = std::chrono::milliseconds(50);
  constexpr auto kShareTick = std::chrono::milliseconds(1);  // while a share is on its way
  const std::size_t threads = worker_threads(s.threads, s.points);
  const auto begun = std::chrono::steady_clock::now();
  std::mutex mutex;  // guards everything below
  std::condition_variable changed;  // for the workers: points arrived, or none are left
  std::condition_variable ready;    // for the main thread: one of its chores is due
  std::deque<std::uint64_t> points;
  bool exhausted = false;  // rank 0 has no points left
  bool asking = false;     // a request is out and its share has not come yet
  std::size_t ran = 0;     // points finished on this rank
  std::vector<SweepPointRecord> queue;
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
    ok = run_points(
        s.spec, s.inputs, next, s.points, s.threads,
        [&](SweepPointRecord record, std::string& /*reason*/) {
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
  Outbox outbox(session.mpi());
  auto last_sent = std::chrono::steady_clock::now();
  for (;;) {
    if (asking) {
      if (auto share = poll(session.mpi(), 0, kShareTag)) {
        const std::vector<std::uint64_t> arrived = read_share(share->bytes);
        const std::scoped_lock lock(mutex);
        asking = false;
        points.insert(points.end(), arrived.begin(), arrived.end());
        if (arrived.empty()) exhausted = true;
        changed.notify_all();
      }
    }
    outbox.progress();
    std::vector<SweepPointRecord> batch;
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
    if (!batch.empty()) outbox.post(encode_records(batch), kPointsTag);
    if (want) outbox.post({}, kRequestTag);
    if (last) break;  // rank 0 sends nothing after the done message
  }
  const std::string failure = ok ? std::string() : why;
  outbox.post(std::vector<std::uint8_t>(failure.begin(), failure.end()), kDoneTag);
  outbox.drain();
  RankOutcome result;
  result.ok = ok;
  if (!ok) result.errors.push_back(why);
  return result;
}

}  // namespace

const TransportTable* load_transport(std::string& why) {
  std::vector<std::string> tried;
  // RTLD_GLOBAL: Open MPI's components, which libmpi loads itself, resolve libmpi's symbols
  // from the global scope.
  const auto* table = static_cast<const TransportTable*>(
      load_plugin(kMpiPluginFile, kMpiPluginEntry, PluginScope::global, tried));
  if (table != nullptr && table->abi != TransportTable::kAbi) {
    tried.push_back(fmt::format("the module found is not of this build (ABI {}, this coda's {})",
                                table->abi, TransportTable::kAbi));
    table = nullptr;
  }
  if (table == nullptr)
    why = fmt::format(
        "this coda runs MPI through its module {}, which could not be loaded: {} "
        "(build it: cmake --build build --target coda_mpi_plugin, and keep it "
        "beside the coda binary)",
        kMpiPluginFile, fmt::join(tried, "; "));
  return table;
}

Session::Session(const TransportTable& mpi) : mpi_(mpi) { mpi_.init(&rank_, &size_); }

Session::~Session() { mpi_.finalize(); }

int Session::first_failed(bool ok) const {
  std::vector<int> flags(static_cast<std::size_t>(size_));
  mpi_.allgather_int(ok ? 1 : 0, flags.data());
  for (int r = 0; r < size_; ++r)
    if (flags[static_cast<std::size_t>(r)] == 0) return r;
  return -1;
}

std::uint64_t Session::broadcast(std::uint64_t value) const {
  mpi_.broadcast_u64(&value);
  return value;
}

RankOutcome run_root(const Session& session, const SweepSpec& spec, const SweepInputs& inputs,
                     SweepStore& store, const SweepPlan& plan, unsigned threads,
                     const std::function<void(const SweepProgress&)>& progress) {
  return root(session, Shared{spec, inputs, static_cast<std::size_t>(plan.to_run), threads}, store,
              plan, progress);
}

RankOutcome run_other(const Session& session, const SweepSpec& spec, const SweepInputs& inputs,
                      std::size_t points, unsigned threads) {
  return other(session, Shared{spec, inputs, points, threads});
}

}  // namespace coda::dse::mpi
