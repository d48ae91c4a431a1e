#pragma once
// MPI as a module (issue 22, item 4): Open MPI's seven libraries cost every coda command ~1 ms
// of dynamic linking at start-up though only `coda sweep` under mpirun calls MPI. So the MPI
// calls of sweep_mpi.cpp go through this table, which coda-mpi.so (mpi_plugin_module.cpp, the
// only code that sees <mpi.h>) fills; sweep_mpi.cpp loads it (core/plugin.h) when a sweep starts
// under mpirun. Plain C types only: the table does not depend on how either side was compiled.
// Every call is on MPI_COMM_WORLD, by the main thread (MPI_THREAD_FUNNELED).

#include <cstdint>

namespace coda::dse::mpi {

struct TransportTable {
  static constexpr unsigned kAbi = 1;
  unsigned abi = kAbi;
  // MPI_Init_thread (MPI_THREAD_FUNNELED), then this rank and the number of ranks.
  void (*init)(int* rank, int* size) = nullptr;
  // Waits for every rank in a barrier checked every millisecond (Open MPI waits in a blocking
  // barrier by spinning), then MPI_Finalize.
  void (*finalize)() = nullptr;
  // MPI_Allgather of one int a rank into `all` (one entry per rank).
  void (*allgather_int)(int mine, int* all) = nullptr;
  // MPI_Bcast of one uint64 from rank 0.
  void (*broadcast_u64)(std::uint64_t* value) = nullptr;
  // MPI_Iprobe from `source` with `tag` (-1: any); 1 when a message has arrived, with its
  // source, tag and size in bytes, else 0.
  int (*probe)(int source, int tag, int* from, int* with_tag, int* bytes) = nullptr;
  // MPI_Recv of `bytes` bytes from `source` with `tag` (a message probe() found).
  void (*recv)(void* data, int bytes, int source, int tag) = nullptr;
  // MPI_Send of bytes (blocking; for small messages, which Open MPI sends eagerly).
  void (*send)(const void* data, int bytes, int to, int tag) = nullptr;
  // MPI_Isend of bytes, which must stay alive until test() says the send completed; returns
  // the request's handle.
  void* (*isend)(const void* data, int bytes, int to, int tag) = nullptr;
  // MPI_Test of an isend's handle: 1 (and the handle freed) when the send completed, else 0.
  int (*test)(void* request) = nullptr;
};

// The module's file name (core/plugin.h says where it is looked for) and its one exported
// symbol: extern "C" const void* NAME(), which returns a `const TransportTable*`.
inline constexpr const char* kMpiPluginFile = "coda-mpi.so";
inline constexpr const char* kMpiPluginEntry = "coda_mpi_plugin_v1";

}  // namespace coda::dse::mpi
