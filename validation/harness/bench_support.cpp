#include "validation/harness/bench_support.h"

#include <algorithm>
#include <ctime>
#include <set>

#include <fmt/format.h>

#include "core/check.h"

namespace coda::validation {
namespace {

// SplitMix64 (Steele, Lea, Flood 2014): a good 64-bit mix of a counter.
std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30U)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27U)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31U);
}

}  // namespace

std::vector<float> uniform_values(std::size_t count, float lo, float hi, std::uint64_t seed,
                                  std::uint64_t stream) {
  std::vector<float> out(count);
  const std::uint64_t key = splitmix64(seed ^ splitmix64(stream));
  const double span = static_cast<double>(hi) - lo;
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint64_t bits = splitmix64(key + i) >> 11U;  // 53 random bits
    const double unit = static_cast<double>(bits) * 0x1.0p-53;
    out[i] = static_cast<float>(lo + span * unit);
  }
  return out;
}

TimingSummary summarize(std::span<const float> times_ms, double per_run_divisor) {
  CODA_CHECK(!times_ms.empty() && per_run_divisor > 0);
  std::vector<double> us;
  us.reserve(times_ms.size());
  for (float t : times_ms) us.push_back(static_cast<double>(t) * 1000.0 / per_run_divisor);
  std::sort(us.begin(), us.end());
  const std::size_t mid = us.size() / 2;
  const double median = us.size() % 2 == 1 ? us[mid] : (us[mid - 1] + us[mid]) / 2.0;
  return {.median_us = median, .min_us = us.front(), .max_us = us.back()};
}

std::uint32_t buffer_sets(std::uint64_t set_bytes, std::uint64_t l2_bytes) {
  if (set_bytes == 0) return 1;
  const std::uint64_t wanted = (2 * l2_bytes + set_bytes - 1) / set_bytes;
  return static_cast<std::uint32_t>(std::clamp<std::uint64_t>(wanted, 1, 64));
}

double tolerance(Kernel kernel, DType dtype) {
  switch (info(kernel).shape) {
    case ShapeKind::Gemm:
      // |gpu - ref| / sum |a b|: fp32 accumulation of pre-rounded inputs; int8 is exact.
      return dtype == DType::Int8 ? 0.0 : 5e-4;
    case ShapeKind::Conv: return 5e-4;
    case ShapeKind::Rows: return 1e-4;  // |gpu - ref| / max |ref| of the row
    case ShapeKind::Attention:
      // P rounded to fp16 between the unfused kernels: ~2^-11 relative per probability.
      return kernel == Kernel::AttentionUnfused ? 5e-3 : 1e-3;
    case ShapeKind::Elements:
      return kernel == Kernel::CopyBandwidth ? 0.0 : 1e-4;  // sums: |gpu - ref| / sum |x|
    case ShapeKind::None:         // the launch probe checks nothing
    case ShapeKind::BatchedGemm:  // published-only kernels: coda-bench runs none of them
    case ShapeKind::AttentionGqa:
    case ShapeKind::DecodeGqa:
    case ShapeKind::Buffer:
    case ShapeKind::Collective:
    case ShapeKind::LlmPrefill:
    case ShapeKind::LlmGeneration:
    case ShapeKind::LlmTraining:
    case ShapeKind::Network: return 0.0;
  }
  return 0.0;
}

std::vector<std::size_t> sample_indices(std::size_t total, std::size_t samples,
                                        std::uint64_t seed) {
  std::vector<std::size_t> out;
  if (total == 0 || samples == 0) return out;
  if (total <= samples) {
    out.resize(total);
    for (std::size_t i = 0; i < total; ++i) out[i] = i;
    return out;
  }
  std::set<std::size_t> picked{0, total - 1};
  std::uint64_t counter = seed;
  while (picked.size() < samples) picked.insert(splitmix64(counter++) % total);
  return {picked.begin(), picked.end()};
}

std::vector<std::size_t> outlier_channels(std::size_t n) {
  std::set<std::size_t> picked;
  for (std::size_t c : {std::size_t{1}, n / 3, n / 2 + 1, n - 2}) {
    if (c < n) picked.insert(c);
  }
  return {picked.begin(), picked.end()};
}

std::string driver_version_from_proc(std::string_view proc_text) {
  constexpr std::string_view kMarker = "Kernel Module";
  const auto at = proc_text.find(kMarker);
  if (at == std::string_view::npos) return {};
  // The version is the first word after the marker that starts with a digit: the proprietary
  // module writes "Kernel Module  580.65.06", the open one "Kernel Module for x86_64  580.159.04".
  std::string_view rest = proc_text.substr(at + kMarker.size());
  rest = rest.substr(0, rest.find('\n'));
  while (!rest.empty()) {
    const auto begin = rest.find_first_not_of(" \t");
    if (begin == std::string_view::npos) return {};
    rest = rest.substr(begin);
    const auto end = std::min(rest.find_first_of(" \t"), rest.size());
    if (rest.front() >= '0' && rest.front() <= '9') return std::string(rest.substr(0, end));
    rest = rest.substr(end);
  }
  return {};
}

std::string iso_utc(std::chrono::system_clock::time_point when) {
  const std::time_t t = std::chrono::system_clock::to_time_t(when);
  std::tm tm{};
  gmtime_r(&t, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

}  // namespace coda::validation
