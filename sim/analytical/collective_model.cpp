#include "sim/analytical/collective_model.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "core/check.h"

namespace coda::sim::analytical {
namespace {

struct Shape {
  std::uint64_t steps = 0;
  double seconds = 0.0;
};

// Ring broadcast: a chain of p - 1 hops pipelined in c chunks takes p - 2 + c steps of
// alpha + S / (c beta). The real optimum is c* = sqrt((p - 2) S alpha^-1 beta^-1); the integer
// optimum is floor(c*) or ceil(c*) (the time is convex in c), at least 1 and at most S chunks.
Shape pipelined_chain(double s, std::uint64_t bytes, std::uint32_t p, double a, double b) {
  const double hops_before_last = static_cast<double>(p - 2);
  const double max_chunks = std::max(1.0, static_cast<double>(bytes));
  const double ideal = a > 0.0 ? std::sqrt(hops_before_last * s / (a * b)) : max_chunks;
  const double lo = std::clamp(std::floor(ideal), 1.0, max_chunks);
  const double hi = std::min(lo + 1.0, max_chunks);
  auto time = [&](double c) { return (hops_before_last + c) * (a + s / (c * b)); };
  const double c = time(hi) < time(lo) ? hi : lo;
  return {p - 2 + static_cast<std::uint64_t>(c), time(c)};
}

}  // namespace

std::string_view to_string(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::AllReduce: return "all_reduce";
    case CollectiveKind::ReduceScatter: return "reduce_scatter";
    case CollectiveKind::AllGather: return "all_gather";
    case CollectiveKind::Broadcast: return "broadcast";
    case CollectiveKind::SendRecv: return "send_recv";
    case CollectiveKind::AllToAll:
      return "all_to_all";
  }
  return "?";
}

std::string_view to_string(CollectiveAlgorithm algorithm) {
  switch (algorithm) {
    case CollectiveAlgorithm::Ring: return "ring";
    case CollectiveAlgorithm::Tree: return "tree";
    case CollectiveAlgorithm::Direct: return "direct";
    case CollectiveAlgorithm::Nvls: return "nvls";
  }
  return "?";
}

std::string_view to_string(CollectiveProtocol protocol) {
  switch (protocol) {
    case CollectiveProtocol::Ll: return "ll";
    case CollectiveProtocol::Ll128: return "ll128";
    case CollectiveProtocol::Simple: return "simple";
  }
  return "?";
}

double bus_bandwidth_factor(CollectiveKind kind, std::uint32_t ranks) {
  const double p = ranks;
  switch (kind) {
    case CollectiveKind::AllReduce: return 2.0 * (p - 1.0) / p;
    case CollectiveKind::ReduceScatter:
    case CollectiveKind::AllGather:
    case CollectiveKind::AllToAll:
      return (p - 1.0) / p;
    case CollectiveKind::Broadcast:
    case CollectiveKind::SendRecv: return 1.0;
  }
  return 1.0;
}

CollectiveCost evaluate_collective(CollectiveKind kind, CollectiveAlgorithm algorithm,
                                   std::uint64_t bytes, std::uint32_t ranks,
                                   const LinkParams& link) {
  CODA_CHECK(ranks >= 1 && link.bytes_per_second > 0.0 && link.latency_s >= 0.0);
  CollectiveCost out;
  if (ranks == 1) return out;

  const double a = link.latency_s, b = link.bytes_per_second;
  const double s = static_cast<double>(bytes);
  const double p = ranks;
  const std::uint64_t p1 = ranks - 1;
  const std::uint64_t lg = static_cast<std::uint64_t>(std::bit_width(ranks - 1U));  // ceil(lg p)
  const double share = (p - 1.0) / p * s;  // (p-1)/p S

  Shape shape;
  switch (kind) {
    case CollectiveKind::SendRecv:
      shape = {1, a + s / b};
      out.bytes_sent_per_rank = s;
      break;
    case CollectiveKind::AllToAll:  // S/p to each of the p - 1 peers at once
      shape = {1, a + share / b};
      out.bytes_sent_per_rank = share;
      break;
    case CollectiveKind::AllReduce:
      out.bytes_sent_per_rank = 2.0 * share;
      switch (algorithm) {
        case CollectiveAlgorithm::Ring:
          shape = {2 * p1, 2.0 * (p - 1.0) * a + 2.0 * share / b};
          break;
        case CollectiveAlgorithm::Tree:
          shape = {2 * lg, 2.0 * static_cast<double>(lg) * (a + s / b)};
          break;
        case CollectiveAlgorithm::Direct:
        case CollectiveAlgorithm::Nvls: shape = {2, 2.0 * a + 2.0 * share / b}; break;
      }
      break;
    case CollectiveKind::ReduceScatter:
    case CollectiveKind::AllGather:
      out.bytes_sent_per_rank = share;
      switch (algorithm) {
        case CollectiveAlgorithm::Ring: shape = {p1, (p - 1.0) * a + share / b}; break;
        case CollectiveAlgorithm::Tree:
          shape = {lg, static_cast<double>(lg) * a + share / b};
          break;
        case CollectiveAlgorithm::Direct:
        case CollectiveAlgorithm::Nvls: shape = {1, a + share / b}; break;
      }
      break;
    case CollectiveKind::Broadcast:
      out.bytes_sent_per_rank = share;  // p - 1 receivers get S each, over p ranks
      switch (algorithm) {
        case CollectiveAlgorithm::Ring: shape = pipelined_chain(s, bytes, ranks, a, b); break;
        case CollectiveAlgorithm::Tree:
          shape = {lg, static_cast<double>(lg) * (a + s / b)};
          break;
        case CollectiveAlgorithm::Direct:
        case CollectiveAlgorithm::Nvls: shape = {1, a + (p - 1.0) * s / b}; break;
      }
      break;
  }
  out.steps = shape.steps;
  out.seconds = shape.seconds;
  if (out.seconds > 0.0) {
    out.algorithm_bytes_per_second = s / out.seconds;
    out.bus_bytes_per_second = out.algorithm_bytes_per_second * bus_bandwidth_factor(kind, ranks);
  }
  return out;
}

NcclTuning nccl_tuning(const arch::NcclSpec& spec, double bus_bytes_per_second) {
  NcclTuning out;
  out.bus_bytes_per_second = bus_bytes_per_second;
  const auto algorithm = [](arch::NcclAlgorithm a) {
    switch (a) {
      case arch::NcclAlgorithm::Ring: return CollectiveAlgorithm::Ring;
      case arch::NcclAlgorithm::Tree: return CollectiveAlgorithm::Tree;
      case arch::NcclAlgorithm::Nvls: return CollectiveAlgorithm::Nvls;
    }
    return CollectiveAlgorithm::Ring;
  };
  for (const auto& [a, protocols] : spec)
    for (const auto& [p, pair] : protocols) {
      NcclPair& to = out.pairs.at(static_cast<std::size_t>(algorithm(a)))
                         .at(static_cast<std::size_t>(p));
      to.available = true;
      to.base_s = pair.base.value;
      to.hop_s = pair.hop.value;
      to.bandwidth_fraction = pair.bandwidth;
      if (pair.max) to.max_bytes_per_second = pair.max->value;
      to.size_correction = pair.size_correction;
      to.channels = pair.channels;
      to.loop_s = pair.loop.value;
    }
  return out;
}

std::uint64_t nvls_loops(std::uint64_t bytes, std::uint32_t ranks, std::uint32_t channels) {
  CODA_CHECK(ranks >= 1 && channels >= 1);
  // comm->nvlsChunkSize (NCCL_NVLS_CHUNKSIZE, 128 KiB) and calcCollChunking's three halvings.
  const std::uint64_t ops = std::uint64_t{channels} * ranks;
  std::uint64_t chunk = std::uint64_t{128} * 1024;
  if (bytes < 64 * ops * chunk && chunk > 65536) chunk = 65536;
  if (bytes < 8 * ops * chunk && chunk > 32768) chunk = 32768;
  if (bytes < 2 * ops * chunk && chunk > 16384) chunk = 16384;
  const std::uint64_t loop = ops * chunk;
  return (bytes + loop - 1) / loop;
}

namespace {

// One pair's time (seconds, steps) for `kind`; nullopt when the algorithm does not run it.
std::optional<CollectiveCost> nccl_pair_cost(CollectiveKind kind, CollectiveAlgorithm a,
                                             const NcclPair& pair, double s, std::uint32_t ranks,
                                             double bus) {
  const double p = ranks;
  const bool all_reduce = kind == CollectiveKind::AllReduce;
  const bool gather_scatter =
      kind == CollectiveKind::ReduceScatter || kind == CollectiveKind::AllGather;
  if (!all_reduce && !gather_scatter) return std::nullopt;
  if (a == CollectiveAlgorithm::Tree && !all_reduce) return std::nullopt;
  const std::uint64_t nsteps = all_reduce ? 2ULL * (ranks - 1) : ranks - 1ULL;
  double bw = std::min(pair.bandwidth_fraction * bus, pair.max_bytes_per_second);
  double latency = pair.base_s;
  std::uint64_t steps = nsteps;
  switch (a) {
    case CollectiveAlgorithm::Ring:
      bw *= p / static_cast<double>(nsteps);
      latency += static_cast<double>(nsteps) * pair.hop_s;
      break;
    case CollectiveAlgorithm::Tree:
      bw *= 0.5;  // tuning.cc: every other algorithm's busbw -> algbw ratio is .5
      if (s >= 64.0) {  // ncclTopoGetAlgoTime: log2i(nBytes >> 6) in [0, 23)
        const auto index = static_cast<std::size_t>(
            std::bit_width(static_cast<std::uint64_t>(s) >> 6U) - 1);
        if (index < pair.size_correction.size()) bw *= pair.size_correction[index];
      }
      steps = 2ULL * (ranks - 1);
      latency += static_cast<double>(steps) * pair.hop_s;
      break;
    case CollectiveAlgorithm::Nvls:
      // All-reduce pipelines its reduce-scatter and all-gather (x 2, then p / nsteps); the
      // others scale by (p - 1) / p and are not converted (tuning.cc).
      bw *= all_reduce ? 2.0 * p / static_cast<double>(nsteps) : (p - 1.0) / p;
      latency += pair.hop_s;
      steps = 1;
      break;
    case CollectiveAlgorithm::Direct: return std::nullopt;
  }
  CollectiveCost out;
  out.steps = steps;
  out.seconds = latency + s / bw;
  const double share = (p - 1.0) / p * s;
  out.bytes_sent_per_rank = all_reduce ? 2.0 * share : share;
  return out;
}

}  // namespace

std::optional<NcclChoice> evaluate_nccl(CollectiveKind kind, std::uint64_t bytes,
                                        std::uint32_t ranks, const NcclTuning& tuning,
                                        std::optional<CollectiveAlgorithm> algorithm,
                                        std::optional<CollectiveProtocol> protocol) {
  CODA_CHECK(ranks >= 2 && tuning.bus_bytes_per_second > 0.0);
  const double s = static_cast<double>(bytes);
  std::optional<NcclChoice> best;
  for (const CollectiveAlgorithm a :
       {CollectiveAlgorithm::Tree, CollectiveAlgorithm::Ring, CollectiveAlgorithm::Nvls}) {
    if (algorithm && *algorithm != a) continue;
    // NCCL sets NVLS up only for more than two GPUs (src/transport/nvls.cc ncclNvlsInit:
    // gpuCount <= 2 returns without NVLS support).
    if (a == CollectiveAlgorithm::Nvls && ranks <= 2) continue;
    for (const CollectiveProtocol p :
         {CollectiveProtocol::Ll, CollectiveProtocol::Ll128, CollectiveProtocol::Simple}) {
      if (protocol && *protocol != p) continue;
      const NcclPair& pair = tuning.at(a, p);
      if (!pair.available) continue;
      const auto cost = nccl_pair_cost(kind, a, pair, s, ranks, tuning.bus_bytes_per_second);
      if (!cost || (best && cost->seconds >= best->cost.seconds)) continue;
      best = NcclChoice{a, p, *cost};
    }
  }
  if (best && best->algorithm == CollectiveAlgorithm::Nvls && kind == CollectiveKind::AllReduce) {
    const NcclPair& pair = tuning.at(best->algorithm, best->protocol);
    if (pair.channels > 0 && pair.loop_s > 0.0)
      best->cost.seconds +=
          static_cast<double>(nvls_loops(bytes, ranks, pair.channels)) * pair.loop_s;
  }
  if (best && best->cost.seconds > 0.0) {
    best->cost.algorithm_bytes_per_second = s / best->cost.seconds;
    best->cost.bus_bytes_per_second =
        best->cost.algorithm_bytes_per_second * bus_bandwidth_factor(kind, ranks);
  }
  return best;
}

}  // namespace coda::sim::analytical
