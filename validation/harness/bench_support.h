#pragma once
// The parts of coda-bench that need no GPU: deterministic inputs, the statistics of the timed
// runs, how many buffer sets to rotate, which outputs to check and against what tolerance.
// Plain C++, unit-tested without a device.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "validation/kernel_catalog.h"

namespace coda::validation {

// `count` values uniform in [lo, hi), a pure function of (seed, stream, index): the same inputs
// on every run and machine.
std::vector<float> uniform_values(std::size_t count, float lo, float hi, std::uint64_t seed,
                                  std::uint64_t stream);

struct TimingSummary {
  double median_us = 0;
  double min_us = 0;
  double max_us = 0;
};
// Of per-repetition times in milliseconds (as cudaEventElapsedTime gives them). The median of an
// even count is the mean of the two middle values. `per_run_divisor` divides every time (the
// launch probe times several launches per repetition).
TimingSummary summarize(std::span<const float> times_ms, double per_run_divisor = 1.0);

// How many copies of a case's buffers to rotate through so consecutive runs do not find their
// inputs in L2: the fewest copies whose bytes reach twice the L2 size, at most 64, at least 1.
std::uint32_t buffer_sets(std::uint64_t set_bytes, std::uint64_t l2_bytes);

// The normalised error a kernel's outputs may have against the CPU reference (docs/validation.md
// defines the normalisation per kernel family).
double tolerance(Kernel kernel, DType dtype);

// Up to `samples` indices into [0, total): all of them when total <= samples, else the first, the
// last and pseudo-random others (from `seed`), ascending and distinct.
std::vector<std::size_t> sample_indices(std::size_t total, std::size_t samples, std::uint64_t seed);

// The output channels the int8 GEMM case scales by kOutlierScale: a few spread over [0, n).
inline constexpr float kOutlierScale = 50.0F;
std::vector<std::size_t> outlier_channels(std::size_t n);

// The kernel driver's version from the text of /proc/driver/nvidia/version ("NVRM version: NVIDIA
// UNIX x86_64 Kernel Module  580.65.06  Sun Jul 27 ..." -> "580.65.06"); empty if not found.
std::string driver_version_from_proc(std::string_view proc_text);

// "2026-11-30T06:12:52Z"
std::string iso_utc(std::chrono::system_clock::time_point when);

}  // namespace coda::validation
