#pragma once
// An on-chip link at tile granularity: a FIFO server with a bandwidth and a fixed latency (a
// NoC path of average_hops hops, or a GPU's SM-to-L2 crossbar). Plain C++; the SystemC
// interconnect is a shell around it.
//
// A transfer of `bytes` entering at `now` starts when the link is free, holds it for
// bytes / bytes_per_cycle, and leaves `latency_cycles` later. Transfers cut through: a DRAM burst
// crossing the link streams through it while the DRAM serves it, so its data arrives at
// max(the DRAM's arrival, the link's end of transfer) + the link's latency.

#include <cstdint>

namespace coda::sim::timing {

struct LinkParams {
  double bytes_per_cycle = 0;  // 0: unlimited
  double latency_cycles = 0;
  friend bool operator==(const LinkParams&, const LinkParams&) = default;
};

class LinkModel {
 public:
  explicit LinkModel(const LinkParams& params) : params_(params) {}

  // The cycle a transfer entering at `now` has been moved (latency not included).
  double transfer(std::uint64_t bytes, double now);
  double latency_cycles() const { return params_.latency_cycles; }
  double busy_cycles() const { return busy_cycles_; }
  std::uint64_t bytes() const { return bytes_; }

 private:
  LinkParams params_;
  double free_at_ = 0;
  double busy_cycles_ = 0;
  std::uint64_t bytes_ = 0;
};

}  // namespace coda::sim::timing
