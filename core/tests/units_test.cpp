#include "core/units.h"

#include <gtest/gtest.h>

namespace coda {
namespace {

Bytes bytes(std::string_view text) {
  std::string why;
  const auto v = parse_bytes(text, why);
  EXPECT_TRUE(v) << text << ": " << why;
  return v.value_or(Bytes{});
}

std::string bytes_error(std::string_view text) {
  std::string why;
  EXPECT_FALSE(parse_bytes(text, why)) << text;
  return why;
}

TEST(Units, SiAndIecPrefixesAreDistinct) {
  EXPECT_EQ(bytes("1 kB"), Bytes{1000});
  EXPECT_EQ(bytes("1 KiB"), Bytes{1024});
  EXPECT_EQ(bytes("256 KiB"), Bytes{256 * 1024ULL});
  EXPECT_EQ(bytes("1.5 MB"), Bytes{1'500'000});
  EXPECT_EQ(bytes("1.5 MiB"), Bytes{1'572'864});  // 1.5 * 2^20
  EXPECT_EQ(bytes("24 MiB"), Bytes{24ULL << 20});
  EXPECT_EQ(bytes("2 GB"), Bytes{2'000'000'000});
  EXPECT_EQ(bytes("64 B"), Bytes{64});
  EXPECT_EQ(bytes("64B"), Bytes{64});
  EXPECT_EQ(bytes("  8 GiB "), Bytes{8ULL << 30});
}

TEST(Units, SizeErrorsSayWhatIsValid) {
  EXPECT_NE(bytes_error("256").find("has no unit"), std::string::npos);
  EXPECT_NE(bytes_error("256 KB").find("write kB (1000 bytes) or KiB (1024 bytes)"),
            std::string::npos);
  EXPECT_NE(bytes_error("256 KB/s").find("cannot read \"256 KB/s\" as a size"), std::string::npos);
  EXPECT_NE(bytes_error("8 Mb").find("not bits"), std::string::npos);
  EXPECT_NE(bytes_error("-4 KiB").find("negative"), std::string::npos);
  EXPECT_NE(bytes_error("1.5 B").find("whole number of bytes"), std::string::npos);
  EXPECT_NE(bytes_error("").find("empty"), std::string::npos);
  EXPECT_NE(bytes_error("lots").find("cannot read"), std::string::npos);
  EXPECT_NE(bytes_error("20000 PB").find("too large"), std::string::npos);  // 2e19 > 2^64
}

TEST(Units, Frequency) {
  std::string why;
  EXPECT_DOUBLE_EQ(parse_frequency("940 MHz", why)->value, 940e6);
  EXPECT_DOUBLE_EQ(parse_frequency("1.98 GHz", why)->value, 1.98e9);
  EXPECT_DOUBLE_EQ(parse_frequency("700MHz", why)->value, 700e6);
  EXPECT_FALSE(parse_frequency("940", why));
  EXPECT_NE(why.find("has no unit"), std::string::npos);
  EXPECT_FALSE(parse_frequency("940 MiHz", why));
  EXPECT_FALSE(parse_frequency("0 GHz", why));
  EXPECT_NE(why.find("above zero"), std::string::npos);
}

TEST(Units, Duration) {
  std::string why;
  EXPECT_DOUBLE_EQ(parse_duration("100 ns", why)->value, 100e-9);
  EXPECT_DOUBLE_EQ(parse_duration("2 us", why)->value, 2e-6);
  EXPECT_DOUBLE_EQ(parse_duration("3 ms", why)->value, 3e-3);
  EXPECT_FALSE(parse_duration("100", why));
  EXPECT_FALSE(parse_duration("100 cycles", why));
}

TEST(Units, BandwidthPerSecondAndPerCycle) {
  std::string why;
  const auto hbm = parse_bandwidth("4.8 TB/s", why);
  ASSERT_TRUE(hbm) << why;
  EXPECT_DOUBLE_EQ(std::get<BytesPerSecond>(*hbm).value, 4.8e12);
  const auto gib = parse_bandwidth("1 GiB/s", why);
  ASSERT_TRUE(gib) << why;
  EXPECT_DOUBLE_EQ(std::get<BytesPerSecond>(*gib).value, 1073741824.0);
  const auto per_cycle_bw = parse_bandwidth("64 B/cycle", why);
  ASSERT_TRUE(per_cycle_bw) << why;
  EXPECT_DOUBLE_EQ(std::get<BytesPerCycle>(*per_cycle_bw).value, 64.0);
  EXPECT_FALSE(parse_bandwidth("64 B/hour", why));
  EXPECT_NE(why.find("not a time base"), std::string::npos);
  EXPECT_FALSE(parse_bandwidth("64 B", why));
  EXPECT_FALSE(parse_bandwidth("34", why));
}

TEST(Units, PerSecondBecomesPerCycleThroughTheClock) {
  // TPU v1: 34 GB/s at 700 MHz = 34e9 / 700e6 = 48.571... bytes per cycle.
  EXPECT_DOUBLE_EQ(per_cycle(BytesPerSecond{34e9}, Hertz{700e6}).value, 34e9 / 700e6);
  EXPECT_DOUBLE_EQ(per_cycle(BytesPerCycle{16}, Hertz{1e9}).value, 16.0);
}

TEST(Units, ToString) {
  EXPECT_EQ(to_string(Bytes{64 * 1024ULL}), "64 KiB");
  EXPECT_EQ(to_string(Bytes{100}), "100 B");
  EXPECT_EQ(to_string(Hertz{940e6}), "940 MHz");
  EXPECT_EQ(to_string(Bandwidth{BytesPerSecond{34e9}}), "34 GB/s");
  EXPECT_EQ(to_string(Bandwidth{BytesPerCycle{8}}), "8 B/cycle");
}

}  // namespace
}  // namespace coda
