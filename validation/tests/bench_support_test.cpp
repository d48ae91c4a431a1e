#include "validation/harness/bench_support.h"

#include <algorithm>

#include <gtest/gtest.h>

namespace coda::validation {
namespace {

TEST(BenchSupport, MedianMinMaxInMicroseconds) {
  const std::vector<float> odd{0.003F, 0.001F, 0.002F};  // ms
  const TimingSummary t = summarize(odd);
  EXPECT_NEAR(t.median_us, 2.0, 1e-6);
  EXPECT_NEAR(t.min_us, 1.0, 1e-6);
  EXPECT_NEAR(t.max_us, 3.0, 1e-6);
  const std::vector<float> even{4.0F, 1.0F, 2.0F, 3.0F};
  EXPECT_DOUBLE_EQ(summarize(even).median_us, 2500.0);  // mean of 2 and 3 ms
  // 100 launches per repetition: 1 ms per repetition is 10 us per launch.
  EXPECT_DOUBLE_EQ(summarize(std::vector<float>{1.0F}, 100.0).median_us, 10.0);
}

TEST(BenchSupport, BufferSetsReachTwiceTheL2) {
  constexpr std::uint64_t kMiB = 1ULL << 20U;
  EXPECT_EQ(buffer_sets(128 * kMiB, 50 * kMiB), 1u);  // one set already exceeds 2 x L2
  EXPECT_EQ(buffer_sets(10 * kMiB, 50 * kMiB), 10u);  // 100 MiB / 10 MiB
  EXPECT_EQ(buffer_sets(30 * kMiB, 50 * kMiB), 4u);   // ceil(100 / 30)
  EXPECT_EQ(buffer_sets(1024, 50 * kMiB), 64u);       // capped
  EXPECT_EQ(buffer_sets(0, 50 * kMiB), 1u);
}

TEST(BenchSupport, SamplesIncludeBothEndsAndAreDeterministic) {
  EXPECT_EQ(sample_indices(3, 10, 1), (std::vector<std::size_t>{0, 1, 2}));
  const auto s = sample_indices(1000000, 64, 7);
  ASSERT_EQ(s.size(), 64u);
  EXPECT_EQ(s.front(), 0u);
  EXPECT_EQ(s.back(), 999999u);
  EXPECT_TRUE(std::is_sorted(s.begin(), s.end()));
  EXPECT_EQ(std::adjacent_find(s.begin(), s.end()), s.end());
  EXPECT_EQ(s, sample_indices(1000000, 64, 7));
  EXPECT_TRUE(sample_indices(0, 8, 1).empty());
}

TEST(BenchSupport, UniformValuesAreDeterministicAndInRange) {
  const auto a = uniform_values(1000, -1.0F, 1.0F, 1, 1);
  EXPECT_EQ(a, uniform_values(1000, -1.0F, 1.0F, 1, 1));
  EXPECT_NE(a, uniform_values(1000, -1.0F, 1.0F, 1, 2));  // another stream
  EXPECT_NE(a, uniform_values(1000, -1.0F, 1.0F, 2, 1));  // another seed
  for (float v : a) {
    EXPECT_GE(v, -1.0F);
    EXPECT_LT(v, 1.0F);
  }
  double mean = 0;
  for (float v : a) mean += v;
  EXPECT_NEAR(mean / 1000, 0.0, 0.1);  // 1000 uniform(-1, 1): standard error 0.018
}

TEST(BenchSupport, OutlierChannels) {
  EXPECT_EQ(outlier_channels(4096), (std::vector<std::size_t>{1, 1365, 2049, 4094}));
  EXPECT_EQ(outlier_channels(64), (std::vector<std::size_t>{1, 21, 33, 62}));
}

TEST(BenchSupport, Tolerances) {
  EXPECT_EQ(tolerance(Kernel::GemmInt8, DType::Int8), 0.0);        // integer GEMM is exact
  EXPECT_EQ(tolerance(Kernel::GemmCublasLt, DType::Int8), 0.0);
  EXPECT_EQ(tolerance(Kernel::CopyBandwidth, DType::Fp32), 0.0);   // a copy is exact
  EXPECT_GT(tolerance(Kernel::AttentionUnfused, DType::Fp16),
            tolerance(Kernel::AttentionFlash, DType::Fp16));       // P rounded to fp16
}

TEST(BenchSupport, DriverVersionFromProc) {
  EXPECT_EQ(driver_version_from_proc(
                "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.65.06  Sun Jul 27 06:54:38 "
                "UTC 2025\nGCC version:  gcc version 12.2.0\n"),
            "580.65.06");
  // The open kernel module's format ("... Open Kernel Module for x86_64  <version>  Release Build
  // ..."): on the H200 device machine of 2026-12-04 coda-bench wrote "for" as the driver before
  // this fix, where nvidia-smi reported 580.159.04. The build tail here is illustrative.
  EXPECT_EQ(driver_version_from_proc("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  "
                                     "580.159.04  Release Build  (dvs-builder@U22)  Thu Oct 9 "
                                     "2025\n"),
            "580.159.04");
  EXPECT_EQ(driver_version_from_proc("NVRM version: NVIDIA UNIX Kernel Module\n580.1\n"), "");
  EXPECT_EQ(driver_version_from_proc(""), "");
}

TEST(BenchSupport, IsoUtc) {
  EXPECT_EQ(iso_utc(std::chrono::system_clock::time_point{}), "1970-01-01T00:00:00Z");
  EXPECT_EQ(iso_utc(std::chrono::system_clock::time_point{std::chrono::seconds{86400 + 61}}),
            "1970-01-02T00:01:01Z");
}

}  // namespace
}  // namespace coda::validation
