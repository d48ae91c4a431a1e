#pragma once
// `coda sweep` under mpirun: the same command, its points split over the ranks of
// MPI_COMM_WORLD and gathered into one store (docs/sweeps.md, "MPI").
//
//   rank 0  reads the spec, opens (or resumes) DIR/sweep.db and plans the missing points; hands
//           them out from the front of the list as the ranks get free: one at a time to its
//           own worker threads, and shares that shrink as the list does to the other ranks
//           when they ask; writes its points and every point the other ranks send into the
//           store as they arrive (group commit, dse::SweepWriter); writes the exports and
//           prints the summary.
//   rank r  reads the spec and the workloads itself, asks rank 0 for a share of points before
//           its workers run out, runs them on its worker threads, and sends them to rank 0 as
//           they finish.
// So a rank that is slower (rank 0 also writes the store) simply runs fewer points.
// A killed run resumes like any other (`--resume`, with or without mpirun): rank 0 writes each
// point as it arrives. Only the main thread of a rank calls MPI (MPI_THREAD_FUNNELED); rank 0
// polls for messages (MPI_Iprobe, then a sleep of 1 ms) rather than spinning in MPI_Recv, so
// it leaves its core to its workers.
//
// Built when CMake finds MPI (CODA_WITH_MPI, on by default then). Without mpirun, or with one
// rank, coda sweep runs as a plain process and never initialises MPI.

#include <iosfwd>

#include "cli/sweep_command.h"

namespace coda::cli {

// The number of ranks mpirun started, from its environment (OMPI_COMM_WORLD_SIZE, PMI_SIZE or
// PMIX_SIZE); 1 when not started by mpirun.
int mpi_world_size();

// run_sweep_command across the ranks. A coda built without MPI says so and returns 1.
int run_sweep_mpi(const SweepArgs& args, std::ostream& out, std::ostream& err);

}  // namespace coda::cli
