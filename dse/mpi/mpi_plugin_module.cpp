// coda-mpi.so (mpi_plugin.h): MPI_COMM_WORLD's calls behind the table sweep_mpi.cpp uses. The
// only code that sees <mpi.h>, and the module's only exported symbol is its entry point.

#include <mpi.h>

#include <chrono>
#include <thread>

#include "dse/mpi/mpi_plugin.h"

namespace {

void init(int* rank, int* size) {
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, rank);
  MPI_Comm_size(MPI_COMM_WORLD, size);
}

void finalize() {
  MPI_Request barrier = MPI_REQUEST_NULL;
  MPI_Ibarrier(MPI_COMM_WORLD, &barrier);
  for (int done = 0; MPI_Test(&barrier, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && done == 0;)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  MPI_Finalize();
}

void allgather_int(int mine, int* all) {
  MPI_Allgather(&mine, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
}

void broadcast_u64(std::uint64_t* value) { MPI_Bcast(value, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD); }

int probe(int source, int tag, int* from, int* with_tag, int* bytes) {
  int arrived = 0;
  MPI_Status status;
  MPI_Iprobe(source < 0 ? MPI_ANY_SOURCE : source, tag < 0 ? MPI_ANY_TAG : tag, MPI_COMM_WORLD,
             &arrived, &status);
  if (arrived == 0) return 0;
  MPI_Get_count(&status, MPI_BYTE, bytes);
  *from = status.MPI_SOURCE;
  *with_tag = status.MPI_TAG;
  return 1;
}

void recv(void* data, int bytes, int source, int tag) {
  MPI_Recv(data, bytes, MPI_BYTE, source, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

void send(const void* data, int bytes, int to, int tag) {
  MPI_Send(data, bytes, MPI_BYTE, to, tag, MPI_COMM_WORLD);
}

void* isend(const void* data, int bytes, int to, int tag) {
  auto* request = new MPI_Request(MPI_REQUEST_NULL);  // NOLINT(cppcoreguidelines-owning-memory):
  // a C handle across the table; test() deletes it when the send completes
  MPI_Isend(data, bytes, MPI_BYTE, to, tag, MPI_COMM_WORLD, request);
  return request;
}

int test(void* handle) {
  auto* request = static_cast<MPI_Request*>(handle);
  int done = 0;
  MPI_Test(request, &done, MPI_STATUS_IGNORE);
  if (done == 0) return 0;
  delete request;  // NOLINT(cppcoreguidelines-owning-memory): isend's handle
  return 1;
}

}  // namespace

// Returns `const void*`, the type core/plugin.h calls every entry point through (a call through
// a pointer of another function type is undefined); the loader casts it back.
extern "C" __attribute__((visibility("default"))) const void* coda_mpi_plugin_v1() {
  static constexpr coda::dse::mpi::TransportTable kTable{.init = &init,
                                                         .finalize = &finalize,
                                                         .allgather_int = &allgather_int,
                                                         .broadcast_u64 = &broadcast_u64,
                                                         .probe = &probe,
                                                         .recv = &recv,
                                                         .send = &send,
                                                         .isend = &isend,
                                                         .test = &test};
  return &kTable;
}
