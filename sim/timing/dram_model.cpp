#include "sim/timing/dram_model.h"

#include <algorithm>

#include "core/check.h"

namespace coda::sim::timing {

DramModel::DramModel(const DramParams& params) : params_(params) {
  CODA_CHECK(params_.channels >= 1 && params_.interleave_bytes >= 1);
  channel_bytes_per_cycle_ = params_.bytes_per_cycle / params_.channels;
  channels_.resize(params_.channels);
  for (Channel& channel : channels_)
    channel.banks.assign(std::max<std::uint32_t>(params_.banks_per_channel, 1), Bank{});
}

AccessTiming DramModel::access_timed(std::uint64_t address, std::uint64_t bytes, double now) {
  stats_.bytes += bytes;
  double last = now;
  const Channel* finishing = nullptr;
  const std::uint64_t chunk = params_.interleave_bytes;
  const std::uint64_t channels = params_.channels;
  const std::uint64_t end = address + bytes;
  if (bytes > 0) {
    // Chunk i goes to channel i mod channels, at local chunk i / channels: a channel's chunks of
    // one burst are contiguous in its local space, so each channel serves one local range, row
    // segment by row segment (every chunk after a segment's first is a hit, back to back).
    const std::uint64_t first_chunk = address / chunk;
    const std::uint64_t last_chunk = (end - 1) / chunk;
    for (std::uint64_t c = 0; c < channels; ++c) {
      const std::uint64_t f = first_chunk + (c + channels - first_chunk % channels) % channels;
      if (f > last_chunk) continue;
      const std::uint64_t l = f + (last_chunk - f) / channels * channels;
      Channel& channel = channels_[c];
      channel.burst_bank_wait = 0;
      std::uint64_t at = (f / channels) * chunk + (f == first_chunk ? address % chunk : 0);
      const std::uint64_t local_end =
          (l / channels) * chunk + (l == last_chunk ? (end - 1) % chunk + 1 : chunk);
      while (at < local_end) {
        const std::uint64_t segment_end =
            params_.row_bytes > 0 ? std::min(local_end, (at / params_.row_bytes + 1) * params_.row_bytes)
                                  : local_end;
        const std::uint64_t pieces = (segment_end - 1) / chunk - at / chunk + 1;
        double row_open = now;  // when the segment's row is open
        Bank* bank = nullptr;
        if (params_.row_bytes > 0) {
          const std::uint64_t row_index = at / params_.row_bytes;
          bank = &channel.banks[row_index % channel.banks.size()];
          const auto row = static_cast<std::int64_t>(row_index / channel.banks.size());
          if (bank->open_row == row) {
            stats_.row_hits += pieces;
          } else {
            ++stats_.row_misses;
            stats_.row_hits += pieces - 1;
            bank->open_row = row;
            row_open = std::max(now, bank->ready_at) + params_.row_miss_cycles;
            stats_.row_miss_cycles += params_.row_miss_cycles;
          }
        }
        const double start = std::max(channel.free_at, row_open);
        channel.burst_bank_wait += std::max(0.0, row_open - std::max(channel.free_at, now));
        const double data = channel_bytes_per_cycle_ > 0
                                ? static_cast<double>(segment_end - at) / channel_bytes_per_cycle_
                                : 0.0;
        stats_.busy_cycles += data;
        channel.free_at = start + data;
        if (bank != nullptr) bank->ready_at = channel.free_at;
        at = segment_end;
      }
      if (channel.free_at >= last) {
        last = channel.free_at;
        finishing = &channel;
      }
    }
  }
  AccessTiming timing;
  timing.latency = params_.latency_cycles;
  timing.arrival = last + params_.latency_cycles;
  const double waited = last - now;
  timing.bank = finishing == nullptr ? 0.0 : std::min(waited, finishing->burst_bank_wait);
  timing.bandwidth = waited - timing.bank;
  return timing;
}

}  // namespace coda::sim::timing
