#pragma once
// Alpha-beta (latency-bandwidth) costs of collectives among p ranks: a step that sends s bytes
// over a link costs alpha + s / beta, where alpha = latency_s and beta = bytes_per_second per
// direction per rank. S is the whole buffer as nccl-tests defines it (for reduce-scatter and
// all-gather the full array, p x the per-rank part). docs/cost_models.md derives each line:
//
//                  Ring                           Tree (binomial)           Direct
//   AllReduce      2(p-1) a + 2(p-1)/p S/b        2 lg p (a + S/b)          2a + 2(p-1)/p S/b
//   ReduceScatter  (p-1) a + (p-1)/p S/b          lg p a + (p-1)/p S/b      a + (p-1)/p S/b
//   AllGather      (p-1) a + (p-1)/p S/b          lg p a + (p-1)/p S/b      a + (p-1)/p S/b
//   Broadcast      (p-2+c)(a + S/(c b)), best c   lg p (a + S/b)            a + (p-1) S/b
//   SendRecv       a + S/b (every algorithm)
//   AllToAll       a + (p-1)/p S/b (every algorithm)
//
// with a = alpha, b = beta, lg p = ceil(log2 p).
//
// Ring all-reduce is reduce-scatter then all-gather around the ring. Tree all-reduce is a
// binomial reduce then a binomial broadcast, whole messages, not pipelined (NCCL's pipelined
// double-binary tree is out of scope). Tree reduce-scatter and all-gather are recursive halving
// and doubling (exact for power-of-two p; other p use the same formula). Ring broadcast is a
// chain pipelined in c chunks, c the integer that minimizes the time (c = 1 for p = 2). Direct
// means every rank reaches every other at once through a switch, its beta shared by its p - 1
// concurrent messages: all-reduce is a direct reduce-scatter then a direct all-gather ("two
// shot"), broadcast is the root sending S to each peer. All-to-all (S a rank's buffer, S/p of it
// for each rank) is that direct exchange whatever the algorithm: NCCL runs it as one group of
// p - 1 sends and p - 1 receives at once (ncclGroupStart, ncclSend/ncclRecv to every peer, as
// nccl-tests' alltoall and PyTorch's all_to_all_single do). p = 1 costs nothing.
//
// Bus bandwidth is nccl-tests' (doc/PERFORMANCE.md): algbw = S / t times 2(p-1)/p for
// all-reduce, (p-1)/p for reduce-scatter, all-gather and all-to-all, 1 for broadcast and
// send/recv. It is
// comparable to beta: a ring all-reduce's bus bandwidth tends to beta as S grows.

#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>
#include <vector>

#include "arch/arch_spec.h"

namespace coda::sim::analytical {

struct LinkParams {
  double bytes_per_second = 0.0;  // per direction per rank
  double latency_s = 0.0;         // per step
};

enum class CollectiveKind : std::uint8_t {
  AllReduce,
  ReduceScatter,
  AllGather,
  Broadcast,
  SendRecv,
  AllToAll,
};
enum class CollectiveAlgorithm : std::uint8_t { Ring, Tree, Direct, Nvls };
// NCCL's protocols: LL (8-byte stores of 4 data + 4 flag bytes), LL128 (128-byte lines of 120
// data bytes) and Simple (bulk copies behind a fence): the arch's interconnect.nccl names them.
using CollectiveProtocol = arch::NcclProtocol;
std::string_view to_string(CollectiveKind kind);
std::string_view to_string(CollectiveAlgorithm algorithm);
std::string_view to_string(CollectiveProtocol protocol);

struct CollectiveCost {
  double seconds = 0.0;
  std::uint64_t steps = 0;            // latency terms on the critical path
  // Mean over ranks of the bytes each sends: every rank sends the same on a ring, in direct
  // reduce-scatter/all-gather/all-reduce and in send/recv; for the tree and broadcast it is
  // the total moved / p (the busiest rank sends more). For all-reduce it is 2(p-1)/p S on
  // every algorithm: the n-1 additions and n assignments per element of nccl-tests' argument.
  double bytes_sent_per_rank = 0.0;
  double algorithm_bytes_per_second = 0.0;  // S / seconds; 0 when seconds is 0
  double bus_bytes_per_second = 0.0;        // nccl-tests' busbw
  friend bool operator==(const CollectiveCost&, const CollectiveCost&) = default;
};

// Pure, thread-safe, O(1). Preconditions (CODA_CHECK): ranks >= 1, bytes_per_second > 0,
// latency_s >= 0.
CollectiveCost evaluate_collective(CollectiveKind kind, CollectiveAlgorithm algorithm,
                                   std::uint64_t bytes, std::uint32_t ranks,
                                   const LinkParams& link);

// nccl-tests' correction factor from algbw to busbw (above).
double bus_bandwidth_factor(CollectiveKind kind, std::uint32_t ranks);

// ---- NCCL's tuner (NVIDIA/nccl src/graph/tuning.cc, ncclTopoTuneModel and ncclTopoGetAlgoTime)
//
// NCCL prices every (algorithm, protocol) pair of a collective as latency + S / algbw and runs
// the cheapest; coda does the same for one node of p ranks (docs/cost_models.md derives it). With
// B the Simple ring's bus bandwidth (interconnect.bandwidth x link_fraction) and a pair's
// (base, hop, f, max) from the arch's interconnect.nccl:
//
//   bus bandwidth   min(f B, max); NVLS: x 2 for all-reduce, x (p-1)/p otherwise
//   algbw           ring and NVLS all-reduce: bus x p / nsteps; tree all-reduce: bus / 2;
//                   NVLS reduce-scatter and all-gather: bus
//                   the tree's x size_correction[floor(log2(S / 64))] (treeCorrectionFactor)
//   latency         ring: base + nsteps hop; tree all-reduce: base + 2 (p-1) hop; NVLS: base + hop
//   nsteps          all-reduce 2(p-1), reduce-scatter and all-gather p-1
//
// Tree runs all-reduce only; NVLS and ring run all-reduce, reduce-scatter and all-gather; NVLS
// needs more than two ranks (NCCL sets it up only for more than two GPUs).
// Broadcast and send/recv have no pair here (NCCL's p2p is not tuned this way): nullopt.
//
// What the tuner leaves out and the kernel pays: an NVLS all-reduce loops over its buffer
// (enqueue.cc calcCollChunking), each loop `channels` x p chunks of c bytes, c NCCL's 128 KiB
// halved while S < 64 x channels x p x c (to 64 KiB), then while S < 8 x ... (32 KiB) and S < 2 x
// ... (16 KiB); each of its ceil(S / (channels x p x c)) loops adds the pair's `loop` seconds
// (nvls_loops). NCCL's choice stays its tuner's; the time returned includes the loops.
std::uint64_t nvls_loops(std::uint64_t bytes, std::uint32_t ranks, std::uint32_t channels);
// Left out, and why: the per-channel caps (perChMax*Bws: NCCL's channel count is not an arch
// fact; on HGX boards a channel's bandwidth is one link's, under the caps), NCCL's multi-node
// terms, and the aggregation of several operations into one launch (numPipeOps = 1).
struct NcclPair {
  bool available = false;
  double base_s = 0.0;
  double hop_s = 0.0;
  double bandwidth_fraction = 1.0;
  double max_bytes_per_second = std::numeric_limits<double>::infinity();
  std::vector<double> size_correction;  // tree all-reduce: x [floor(log2(S / 64))]; absent x 1
  std::uint32_t channels = 0;           // NVLS: its channels (0: loops not priced)
  double loop_s = 0.0;                  // NVLS all-reduce: each loop's time beyond its bytes
};
struct NcclTuning {
  double bus_bytes_per_second = 0.0;  // B above
  // [algorithm][protocol], indexed by the enums' values; Direct is never available.
  std::array<std::array<NcclPair, 3>, 4> pairs{};
  const NcclPair& at(CollectiveAlgorithm a, CollectiveProtocol p) const {
    return pairs.at(static_cast<std::size_t>(a)).at(static_cast<std::size_t>(p));
  }
};
// The tuning an arch states (interconnect.nccl) on a Simple ring bus bandwidth of `bus`.
NcclTuning nccl_tuning(const arch::NcclSpec& spec, double bus_bytes_per_second);

struct NcclChoice {
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::Ring;
  CollectiveProtocol protocol = CollectiveProtocol::Simple;
  CollectiveCost cost;
};
// The cheapest available pair (NCCL's order on ties: tree, ring, NVLS; LL, LL128, Simple),
// among those of `algorithm` / `protocol` when given. nullopt when none runs `kind`.
// Preconditions (CODA_CHECK): ranks >= 2, bus_bytes_per_second > 0.
std::optional<NcclChoice> evaluate_nccl(CollectiveKind kind, std::uint64_t bytes,
                                        std::uint32_t ranks, const NcclTuning& tuning,
                                        std::optional<CollectiveAlgorithm> algorithm,
                                        std::optional<CollectiveProtocol> protocol);

}  // namespace coda::sim::analytical
