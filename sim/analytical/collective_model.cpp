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
  }
  return "?";
}

std::string_view to_string(CollectiveAlgorithm algorithm) {
  switch (algorithm) {
    case CollectiveAlgorithm::Ring: return "ring";
    case CollectiveAlgorithm::Tree: return "tree";
    case CollectiveAlgorithm::Direct: return "direct";
  }
  return "?";
}

double bus_bandwidth_factor(CollectiveKind kind, std::uint32_t ranks) {
  const double p = ranks;
  switch (kind) {
    case CollectiveKind::AllReduce: return 2.0 * (p - 1.0) / p;
    case CollectiveKind::ReduceScatter:
    case CollectiveKind::AllGather: return (p - 1.0) / p;
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
    case CollectiveKind::AllReduce:
      out.bytes_sent_per_rank = 2.0 * share;
      switch (algorithm) {
        case CollectiveAlgorithm::Ring:
          shape = {2 * p1, 2.0 * (p - 1.0) * a + 2.0 * share / b};
          break;
        case CollectiveAlgorithm::Tree:
          shape = {2 * lg, 2.0 * static_cast<double>(lg) * (a + s / b)};
          break;
        case CollectiveAlgorithm::Direct: shape = {2, 2.0 * a + 2.0 * share / b}; break;
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
        case CollectiveAlgorithm::Direct: shape = {1, a + share / b}; break;
      }
      break;
    case CollectiveKind::Broadcast:
      out.bytes_sent_per_rank = share;  // p - 1 receivers get S each, over p ranks
      switch (algorithm) {
        case CollectiveAlgorithm::Ring: shape = pipelined_chain(s, bytes, ranks, a, b); break;
        case CollectiveAlgorithm::Tree:
          shape = {lg, static_cast<double>(lg) * (a + s / b)};
          break;
        case CollectiveAlgorithm::Direct: shape = {1, a + (p - 1.0) * s / b}; break;
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

}  // namespace coda::sim::analytical
