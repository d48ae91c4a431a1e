#pragma once
// A sweep across the ranks of MPI_COMM_WORLD (`coda sweep` under mpirun; docs/sweeps.md, "MPI"):
// the same points as one process runs, split over the ranks and gathered into one store.
//
//   rank 0  plans the missing points (the caller opened the store); hands them out from the
//           front of the list as the ranks get free: one at a time to its own worker threads,
//           and shares that shrink as the list does to the other ranks when they ask; writes its
//           points and every point the other ranks send into the store as they arrive (group
//           commit, SweepWriter).
//   rank r  asks rank 0 for a share of points before its workers run out, runs them on its
//           worker threads, and sends them to rank 0 as they finish.
// So a rank that is slower (rank 0 also writes the store) simply runs fewer points.
// A killed run resumes like any other: rank 0 writes each point as it arrives. Only the main
// thread of a rank calls MPI (MPI_THREAD_FUNNELED); rank 0 polls for messages (MPI_Iprobe, then
// a sleep of a few ms) rather than spinning in MPI_Recv, so it leaves its core to its workers.
//
// Its own target, coda::dse_mpi, built when CMake finds MPI (CODA_WITH_MPI). It calls MPI through
// coda-mpi.so (mpi_plugin.h), which it loads when a sweep starts under mpirun, so that coda does
// not load Open MPI's libraries at every start. world_size() is here for every build (it reads
// mpirun's environment). The library does not print: failures come back as messages for the
// caller to show.

#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "dse/mpi/mpi_plugin.h"
#include "dse/sweep.h"

namespace coda::dse::mpi {

// The number of ranks mpirun started, from its environment (OMPI_COMM_WORLD_SIZE, PMI_SIZE or
// PMIX_SIZE); 1 when not started by mpirun.
inline int world_size() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"}) {
    const char* text = std::getenv(name);  // NOLINT(concurrency-mt-unsafe): read before threads
    if (text == nullptr) continue;
    const std::string_view view(text);
    int value = 0;
    const auto [end, ec] = std::from_chars(view.data(), view.data() + view.size(), value);
    if (ec == std::errc() && end == view.data() + view.size() && value > 0) return value;
  }
  return 1;
}

// coda-mpi.so's table (core/plugin.h finds it), or nullptr with `why` saying what was tried.
const TransportTable* load_transport(std::string& why);

// MPI_Init_thread / MPI_Finalize around one sweep, through `mpi` (which outlives the session:
// a loaded module stays loaded). Only the main thread calls MPI.
class Session {
 public:
  explicit Session(const TransportTable& mpi);
  // Waits for every rank in a barrier checked every millisecond, then MPI_Finalize (Open MPI
  // waits there by spinning, which would keep the ranks done first busy for nothing).
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  const TransportTable& mpi() const { return mpi_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  // Collective (every rank calls it): the first rank whose `ok` is false, or -1 when none is.
  int first_failed(bool ok) const;
  // Collective: rank 0's `value`, on every rank.
  std::uint64_t broadcast(std::uint64_t value) const;

 private:
  const TransportTable& mpi_;
  int rank_ = 0;
  int size_ = 1;
};

// What a rank's part of the sweep did.
struct RankOutcome {
  bool ok = true;
  std::vector<std::string> errors;  // one message per failure (a rank's, the store's)
  std::uint64_t ran = 0;            // rank 0: points written to the store in this run
  std::uint64_t infeasible = 0;     // rank 0: of `ran`
};

// Rank 0: runs the plan's points with every other rank (which call run_other), writing each
// into `store` as it arrives. `points` is plan.to_run (broadcast to the others first); it
// bounds the worker threads, as `threads` asks (worker_threads). `progress` may be empty.
RankOutcome run_root(const Session& session, const SweepSpec& spec, const SweepInputs& inputs,
                     SweepStore& store, const SweepPlan& plan, unsigned threads,
                     const std::function<void(const SweepProgress&)>& progress);

// Rank r > 0: runs the shares rank 0 hands out and sends their points back.
RankOutcome run_other(const Session& session, const SweepSpec& spec, const SweepInputs& inputs,
                      std::size_t points, unsigned threads);

}  // namespace coda::dse::mpi
