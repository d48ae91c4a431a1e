#pragma once
// Strong unit types and the parsers that turn the strings users write in configs ("256 KiB",
// "940 MHz", "4.8 TB/s", "64 B/cycle", "100 ns") into them.
//
// SI prefixes (k, M, G, T, P: powers of 1000) and IEC prefixes (Ki, Mi, Gi, Ti, Pi: powers of 1024)
// are kept distinct on purpose: "1 kB" is 1000 bytes and "1 KiB" is 1024. An ambiguous "KB" is
// rejected with a hint. A bare number for a dimensioned value is an error: units are never guessed.

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace coda {

struct Bytes {
  std::uint64_t value = 0;
  friend constexpr auto operator<=>(Bytes, Bytes) = default;
  friend constexpr Bytes operator+(Bytes a, Bytes b) { return {a.value + b.value}; }
  constexpr Bytes& operator+=(Bytes b) {
    value += b.value;
    return *this;
  }
};

struct Cycles {
  std::uint64_t value = 0;
  friend constexpr auto operator<=>(Cycles, Cycles) = default;
  friend constexpr Cycles operator+(Cycles a, Cycles b) { return {a.value + b.value}; }
  constexpr Cycles& operator+=(Cycles b) {
    value += b.value;
    return *this;
  }
};

struct Hertz {
  double value = 0.0;
  friend constexpr auto operator<=>(Hertz, Hertz) = default;
};

struct Seconds {
  double value = 0.0;
  friend constexpr auto operator<=>(Seconds, Seconds) = default;
};

struct BytesPerSecond {
  double value = 0.0;
  friend constexpr auto operator<=>(BytesPerSecond, BytesPerSecond) = default;
};

struct BytesPerCycle {
  double value = 0.0;
  friend constexpr auto operator<=>(BytesPerCycle, BytesPerCycle) = default;
};

// Energy, power and area, for energy tables and power budgets ("0.2 pJ", "700 W", "814 mm2").
struct Joules {
  double value = 0.0;
  friend constexpr auto operator<=>(Joules, Joules) = default;
};

struct Watts {
  double value = 0.0;
  friend constexpr auto operator<=>(Watts, Watts) = default;
};

struct SquareMillimetres {
  double value = 0.0;
  friend constexpr auto operator<=>(SquareMillimetres, SquareMillimetres) = default;
};

// A latency as the user wrote it: a time ("100 ns") or a count of clock cycles ("30 cycles").
using Latency = std::variant<Seconds, Cycles>;

// A bandwidth as the user wrote it: per second (needs a clock to become per cycle) or per cycle.
using Bandwidth = std::variant<BytesPerSecond, BytesPerCycle>;

// The bandwidth in bytes per cycle of a clock running at `clock`.
BytesPerCycle per_cycle(const Bandwidth& bandwidth, Hertz clock);

// Each parser returns nullopt on failure and sets `why` to a sentence a user can act on, e.g.
// `cannot read "256 KB/s" as a size; expected a number and a unit such as "256 KiB" or "1.5 MB"`.
std::optional<Bytes> parse_bytes(std::string_view text, std::string& why);
std::optional<Hertz> parse_frequency(std::string_view text, std::string& why);
std::optional<Seconds> parse_duration(std::string_view text, std::string& why);
// "4.8 TB/s", "900 GiB/s", "64 B/cycle", "1 KiB/cycle".
std::optional<Bandwidth> parse_bandwidth(std::string_view text, std::string& why);

// "0.2 pJ", "1.3 nJ", "15 fJ" (fJ, pJ, nJ, uJ, mJ, J).
std::optional<Joules> parse_energy(std::string_view text, std::string& why);
// "700 W", "500 mW", "1.2 kW".
std::optional<Watts> parse_power(std::string_view text, std::string& why);
// "814 mm2", "0.25 mm^2", "1200 um2".
std::optional<SquareMillimetres> parse_area(std::string_view text, std::string& why);
// "100 ns" or "30 cycles" (also "1 cycle").
std::optional<Latency> parse_latency(std::string_view text, std::string& why);

// The latency in seconds at `clock`.
Seconds in_seconds(const Latency& latency, Hertz clock);

// The unit to_string writes a time or an energy of this size in, and the factor to it
// (to_string(Seconds{2e-4}) is "200 us": {1e6, "us"}); a column or an axis of values shares the
// scale of its largest.
struct UnitScale {
  double factor = 1;
  std::string_view unit;
};
UnitScale scale_of(Seconds seconds);
UnitScale scale_of(Joules joules);

// Human-readable forms, used in tables and messages ("64 KiB", "1.5 GHz", "34 GB/s").
std::string to_string(Bytes bytes);
std::string to_string(Hertz hertz);
std::string to_string(Seconds seconds);
std::string to_string(const Bandwidth& bandwidth);
std::string to_string(Joules joules);
std::string to_string(Watts watts);
std::string to_string(SquareMillimetres area);
std::string to_string(const Latency& latency);

}  // namespace coda
