#include "sim/timing/dram_model.h"

#include <algorithm>

#include "core/check.h"

namespace coda::sim::timing {

DramModel::DramModel(const DramParams& params) : params_(params) {
  CODA_CHECK(params_.channels >= 1 && params_.interleave_bytes >= 1);
  channel_bytes_per_cycle_ = params_.bytes_per_cycle / params_.channels;
  channels_.resize(params_.channels);
  for (Channel& channel : channels_)
    channel.open_row.assign(std::max<std::uint32_t>(params_.banks_per_channel, 1), -1);
}

double DramModel::access(std::uint64_t address, std::uint64_t bytes, double now) {
  stats_.bytes += bytes;
  double last = now;
  const std::uint64_t chunk = params_.interleave_bytes;
  std::uint64_t at = address;
  const std::uint64_t end = address + bytes;
  while (at < end) {
    const std::uint64_t chunk_end = std::min(end, (at / chunk + 1) * chunk);
    const std::uint64_t size = chunk_end - at;
    // Channel of the chunk, and the address within that channel.
    const std::uint64_t chunk_index = at / chunk;
    Channel& channel = channels_[chunk_index % params_.channels];
    const std::uint64_t local = (chunk_index / params_.channels) * chunk + at % chunk;
    double start = std::max(channel.free_at, now);
    if (params_.row_bytes > 0) {
      const std::uint64_t row_index = local / params_.row_bytes;
      std::int64_t& open = channel.open_row[row_index % channel.open_row.size()];
      const auto row = static_cast<std::int64_t>(row_index / channel.open_row.size());
      if (open == row) {
        ++stats_.row_hits;
      } else {
        ++stats_.row_misses;
        open = row;
        start += params_.row_miss_cycles;
        stats_.row_miss_cycles += params_.row_miss_cycles;
        stats_.busy_cycles += params_.row_miss_cycles;
      }
    }
    const double data = channel_bytes_per_cycle_ > 0
                            ? static_cast<double>(size) / channel_bytes_per_cycle_
                            : 0.0;
    stats_.busy_cycles += data;
    channel.free_at = start + data;
    last = std::max(last, channel.free_at);
    at = chunk_end;
  }
  return last + params_.latency_cycles;
}

}  // namespace coda::sim::timing
