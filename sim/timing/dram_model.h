#pragma once
// A DRAM channel model at burst granularity, for tile-level engines: bandwidth, a fixed access
// latency, and a bank/row-buffer model. Plain C++ (no SystemC): the SystemC engine's DRAM target
// is a shell around it (DESIGN.md: timing behaviour lives in plain classes).
//
// Addresses interleave over channels in `interleave_bytes` chunks; within a channel, consecutive
// rows go to consecutive banks. A burst of `bytes` at `address` is cut at chunk boundaries; each
// chunk goes to its channel, whose data bus serves chunks in the order they come (a FIFO server).
// Banks work in parallel: a chunk whose bank has another row open (or none) opens its row
// (`row_miss_cycles`: precharge + activate, tRP + tRCD) as soon as the request has arrived and
// the bank has finished its previous transfer, possibly while other banks' data is on the bus;
// its data then moves at the channel's bandwidth once the row is open and the bus is free. So
// streams spread over banks hide their activations behind each other's transfers, and accesses
// that keep switching rows in one bank pay every opening (the row-buffer effect). The burst
// completes `latency_cycles` after its last byte has moved (CAS latency and the way back). With
// row_bytes 0 there is no row model; with bytes_per_cycle 0 bandwidth is unlimited. Not modelled:
// tRRD / tFAW (activation rate limits), refresh, read/write turnaround.

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
  friend bool operator==(const DramParams&, const DramParams&) = default;
};

struct DramStats {
  std::uint64_t bytes = 0;
  std::uint64_t row_hits = 0;     // chunks whose row was open
  std::uint64_t row_misses = 0;   // chunks that opened a row
  double busy_cycles = 0;         // summed over channels: data on the bus
  double row_miss_cycles = 0;     // summed over banks: spent opening rows
};

// Where a request's time went, from the cycle it was issued to the cycle its data arrived:
// arrival - issue = network + bank + bandwidth + latency.
struct AccessTiming {
  double arrival = 0;
  double network = 0;    // crossing on-chip links (link_model.h): queueing, transfer, hops
  double bank = 0;       // opening rows (row-buffer misses) on the channel that finished last
  double bandwidth = 0;  // moving bytes at channel bandwidth, and queueing behind other bursts
  double latency = 0;    // the fixed access latency
};

class DramModel {
 public:
  explicit DramModel(const DramParams& params);

  // Serves a burst requested at cycle `now`; returns the cycle its data has fully arrived.
  double access(std::uint64_t address, std::uint64_t bytes, double now) {
    return access_timed(address, bytes, now).arrival;
  }
  // The same, with where the time went. The channel that finishes the burst sets it: the time
  // its bus waited for the burst's rows to open is `bank`, the rest of the wait before the
  // latency `bandwidth` (the bytes, and the queue before them).
  AccessTiming access_timed(std::uint64_t address, std::uint64_t bytes, double now);

  const DramStats& stats() const { return stats_; }
  const DramParams& params() const { return params_; }

 private:
  struct Bank {
    std::int64_t open_row = -1;  // -1: closed
    double ready_at = 0;         // end of its last transfer
  };
  struct Channel {
    double free_at = 0;  // the data bus
    std::vector<Bank> banks;
    double burst_bank_wait = 0;  // the bus waiting for rows to open, in the burst being served
  };
  DramParams params_;
  double channel_bytes_per_cycle_ = 0;
  std::vector<Channel> channels_;
  DramStats stats_;
};

}  // namespace coda::sim::timing
