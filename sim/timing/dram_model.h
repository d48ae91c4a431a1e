#pragma once
// A DRAM channel model at burst granularity, for tile-level engines: bandwidth, a fixed access
// latency, and a bank/row-buffer model. Plain C++ (no SystemC): the SystemC engine's DRAM target
// is a shell around it (DESIGN.md: timing behaviour lives in plain classes).
//
// Addresses interleave over channels in `interleave_bytes` chunks; within a channel, consecutive
// rows go to consecutive banks. A burst of `bytes` at `address` is cut at chunk boundaries; each
// chunk goes to its channel, which serves chunks in the order they come (a FIFO server): a chunk
// starts when the channel is free and the request has arrived, waits `row_miss_cycles` (precharge
// + activate: tRP + tRCD) if its bank has another row open (or none), then moves its bytes at
// the channel's bandwidth. Activations do not overlap another bank's transfer on the same channel
// (a conservative simplification: real controllers hide some behind other banks' bursts). The
// burst completes `latency_cycles` after its last byte has moved (CAS latency and the way back).
// With row_bytes 0 there is no row model; with bytes_per_cycle 0 bandwidth is unlimited.

#include <cstdint>
#include <vector>

namespace coda::sim::timing {

struct DramParams {
  double bytes_per_cycle = 0;   // all channels together; 0: unlimited
  std::uint32_t channels = 1;
  double latency_cycles = 0;    // added to every burst's completion
  std::uint32_t banks_per_channel = 0;
  std::uint64_t row_bytes = 0;  // 0: no row-buffer model
  double row_miss_cycles = 0;   // tRP + tRCD
  std::uint64_t interleave_bytes = 256;
};

struct DramStats {
  std::uint64_t bytes = 0;
  std::uint64_t row_hits = 0;     // chunks whose row was open
  std::uint64_t row_misses = 0;   // chunks that opened a row
  double busy_cycles = 0;         // summed over channels: data and activation time
  double row_miss_cycles = 0;     // of busy_cycles, spent opening rows
};

class DramModel {
 public:
  explicit DramModel(const DramParams& params);

  // Serves a burst requested at cycle `now`; returns the cycle its data has fully arrived.
  double access(std::uint64_t address, std::uint64_t bytes, double now);

  const DramStats& stats() const { return stats_; }
  const DramParams& params() const { return params_; }

 private:
  struct Channel {
    double free_at = 0;
    std::vector<std::int64_t> open_row;  // per bank; -1: closed
  };
  DramParams params_;
  double channel_bytes_per_cycle_ = 0;
  std::vector<Channel> channels_;
  DramStats stats_;
};

}  // namespace coda::sim::timing
