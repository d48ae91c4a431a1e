#include "sim/timing/link_model.h"

#include <algorithm>

namespace coda::sim::timing {

double LinkModel::transfer(std::uint64_t bytes, double now) {
  bytes_ += bytes;
  if (params_.bytes_per_cycle <= 0) return now;
  const double start = std::max(free_at_, now);
  const double moving = static_cast<double>(bytes) / params_.bytes_per_cycle;
  busy_cycles_ += moving;
  free_at_ = start + moving;
  return free_at_;
}

}  // namespace coda::sim::timing
