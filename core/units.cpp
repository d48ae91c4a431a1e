#include "core/units.h"

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <span>
#include <string_view>

#include <fmt/format.h>

namespace coda {
namespace {

struct Prefix {
  std::string_view symbol;
  double factor;
};

// Longest symbols first so "Ki" is tried before "K" would be (there is no bare "K").
constexpr std::array<Prefix, 10> kBytePrefixes{{{"Ki", 1024.0},
                                                 {"Mi", 1048576.0},
                                                 {"Gi", 1073741824.0},
                                                 {"Ti", 1099511627776.0},
                                                 {"Pi", 1125899906842624.0},
                                                 {"k", 1e3},
                                                 {"M", 1e6},
                                                 {"G", 1e9},
                                                 {"T", 1e12},
                                                 {"P", 1e15}}};

constexpr std::array<Prefix, 5> kSiPrefixes{
    {{"k", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}, {"", 1.0}}};

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Splits "1.5 MB" into 1.5 and "MB". Fails on a missing number, a negative or non-finite number.
bool split_number(std::string_view text, double& number, std::string_view& unit, std::string& why,
                  std::string_view what, std::string_view example) {
  const std::string_view s = trim(text);
  if (s.empty()) {
    why = fmt::format("empty value; expected {} such as \"{}\"", what, example);
    return false;
  }
  const char* first = s.data();
  const char* last = s.data() + s.size();
  const auto [end, ec] = std::from_chars(first, last, number, std::chars_format::general);
  if (ec != std::errc{} || end == first) {
    why = fmt::format("cannot read \"{}\" as {}; expected a number and a unit such as \"{}\"", s,
                      what, example);
    return false;
  }
  if (!std::isfinite(number)) {
    why = fmt::format("\"{}\" is not a finite number; expected {} such as \"{}\"", s, what, example);
    return false;
  }
  if (number < 0) {
    why = fmt::format("\"{}\" is negative; expected {} such as \"{}\"", s, what, example);
    return false;
  }
  unit = trim(std::string_view(end, static_cast<std::size_t>(last - end)));
  if (unit.empty()) {
    why = fmt::format("\"{}\" has no unit; write {} with its unit, such as \"{}\"", s, what,
                      example);
    return false;
  }
  return true;
}

// Parses "<prefix><base>" with a byte prefix table; returns the factor or nullopt.
std::optional<double> byte_factor(std::string_view unit, std::string_view base) {
  if (unit.size() < base.size() || unit.substr(unit.size() - base.size()) != base)
    return std::nullopt;
  const std::string_view prefix = unit.substr(0, unit.size() - base.size());
  if (prefix.empty()) return 1.0;
  for (const Prefix& p : kBytePrefixes)
    if (p.symbol == prefix) return p.factor;
  return std::nullopt;
}

std::string byte_unit_hint(std::string_view unit) {
  // Bits first: "64 Kib" is a bit count, whatever its prefix.
  if (unit.find('b') != std::string_view::npos && unit.find('B') == std::string_view::npos)
    return "; sizes are in bytes (B), not bits (b)";
  if (!unit.empty() && (unit.front() == 'K'))
    return "; \"K\" is ambiguous: write kB (1000 bytes) or KiB (1024 bytes)";
  return "";
}

}  // namespace

BytesPerCycle per_cycle(const Bandwidth& bandwidth, Hertz clock) {
  if (const auto* per_s = std::get_if<BytesPerSecond>(&bandwidth))
    return BytesPerCycle{per_s->value / clock.value};
  return std::get<BytesPerCycle>(bandwidth);
}

std::optional<Bytes> parse_bytes(std::string_view text, std::string& why) {
  constexpr std::string_view kWhat = "a size";
  constexpr std::string_view kExample = "256 KiB";
  double number = 0;
  std::string_view unit;
  if (!split_number(text, number, unit, why, kWhat, kExample)) return std::nullopt;
  const auto factor = byte_factor(unit, "B");
  if (!factor) {
    why = fmt::format("cannot read \"{}\" as a size; expected a number and a unit such as "
                      "\"256 KiB\" or \"1.5 MB\"{}",
                      trim(text), byte_unit_hint(unit));
    return std::nullopt;
  }
  const double bytes = number * *factor;
  if (bytes >= 18446744073709551616.0) {
    why = fmt::format("\"{}\" is too large; sizes must be below 16 EiB", trim(text));
    return std::nullopt;
  }
  if (bytes != std::floor(bytes)) {
    why = fmt::format("\"{}\" is not a whole number of bytes", trim(text));
    return std::nullopt;
  }
  return Bytes{static_cast<std::uint64_t>(bytes)};
}

std::optional<Hertz> parse_frequency(std::string_view text, std::string& why) {
  double number = 0;
  std::string_view unit;
  if (!split_number(text, number, unit, why, "a frequency", "940 MHz")) return std::nullopt;
  for (const Prefix& p : kSiPrefixes) {
    if (unit.size() == p.symbol.size() + 2 && unit.substr(0, p.symbol.size()) == p.symbol &&
        unit.substr(p.symbol.size()) == "Hz") {
      if (number == 0) {
        why = fmt::format("\"{}\": a clock must be above zero", trim(text));
        return std::nullopt;
      }
      return Hertz{number * p.factor};
    }
  }
  why = fmt::format("cannot read \"{}\" as a frequency; expected a number and a unit such as "
                    "\"940 MHz\" or \"1.5 GHz\" (Hz, kHz, MHz, GHz, THz)",
                    trim(text));
  return std::nullopt;
}

std::optional<Seconds> parse_duration(std::string_view text, std::string& why) {
  double number = 0;
  std::string_view unit;
  if (!split_number(text, number, unit, why, "a duration", "100 ns")) return std::nullopt;
  constexpr std::array<Prefix, 6> kTime{
      {{"s", 1.0}, {"ms", 1e-3}, {"us", 1e-6}, {"\u00b5s", 1e-6}, {"ns", 1e-9}, {"ps", 1e-12}}};
  for (const Prefix& p : kTime)
    if (unit == p.symbol) return Seconds{number * p.factor};
  why = fmt::format("cannot read \"{}\" as a duration; expected a number and a unit such as "
                    "\"100 ns\" (s, ms, us, ns, ps)",
                    trim(text));
  return std::nullopt;
}

namespace {
// A number followed by one of `units` (symbol, factor); `what`/`example` phrase the errors.
template <class T, std::size_t N>
std::optional<T> parse_scaled(std::string_view text, std::string& why,
                              const std::array<Prefix, N>& units, std::string_view what,
                              std::string_view example, std::string_view listing) {
  double number = 0;
  std::string_view unit;
  if (!split_number(text, number, unit, why, what, example)) return std::nullopt;
  for (const Prefix& p : units)
    if (unit == p.symbol) return T{number * p.factor};
  why = fmt::format("cannot read \"{}\" as {}; expected a number and a unit such as \"{}\" ({})",
                    trim(text), what, example, listing);
  return std::nullopt;
}
}  // namespace

std::optional<Joules> parse_energy(std::string_view text, std::string& why) {
  constexpr std::array<Prefix, 7> kUnits{{{"fJ", 1e-15},
                                          {"pJ", 1e-12},
                                          {"nJ", 1e-9},
                                          {"uJ", 1e-6},
                                          {"\u00b5J", 1e-6},
                                          {"mJ", 1e-3},
                                          {"J", 1.0}}};
  return parse_scaled<Joules>(text, why, kUnits, "an energy", "0.2 pJ", "fJ, pJ, nJ, uJ, mJ, J");
}

std::optional<Watts> parse_power(std::string_view text, std::string& why) {
  constexpr std::array<Prefix, 4> kUnits{{{"mW", 1e-3}, {"W", 1.0}, {"kW", 1e3}, {"MW", 1e6}}};
  return parse_scaled<Watts>(text, why, kUnits, "a power", "700 W", "mW, W, kW");
}

std::optional<SquareMillimetres> parse_area(std::string_view text, std::string& why) {
  constexpr std::array<Prefix, 6> kUnits{{{"mm2", 1.0},
                                          {"mm^2", 1.0},
                                          {"um2", 1e-6},
                                          {"um^2", 1e-6},
                                          {"cm2", 100.0},
                                          {"cm^2", 100.0}}};
  return parse_scaled<SquareMillimetres>(text, why, kUnits, "an area", "814 mm2",
                                         "um2, mm2, cm2");
}

std::optional<Latency> parse_latency(std::string_view text, std::string& why) {
  double number = 0;
  std::string_view unit;
  if (!split_number(text, number, unit, why, "a latency", "100 ns")) return std::nullopt;
  if (unit == "cycles" || unit == "cycle") {
    if (number != std::floor(number) || number >= 1.8e19) {
      why = fmt::format("\"{}\" is not a whole number of cycles", trim(text));
      return std::nullopt;
    }
    return Latency{Cycles{static_cast<std::uint64_t>(number)}};
  }
  std::string duration_why;
  if (auto seconds = parse_duration(text, duration_why)) return Latency{*seconds};
  why = fmt::format("cannot read \"{}\" as a latency; expected a time such as \"100 ns\" or a "
                    "cycle count such as \"30 cycles\"",
                    trim(text));
  return std::nullopt;
}

Seconds in_seconds(const Latency& latency, Hertz clock) {
  if (const auto* cycles = std::get_if<Cycles>(&latency))
    return Seconds{static_cast<double>(cycles->value) / clock.value};
  return std::get<Seconds>(latency);
}

std::optional<Bandwidth> parse_bandwidth(std::string_view text, std::string& why) {
  double number = 0;
  std::string_view unit;
  if (!split_number(text, number, unit, why, "a bandwidth", "4.8 TB/s")) return std::nullopt;
  const auto slash = unit.find('/');
  if (slash != std::string_view::npos) {
    const std::string_view size_unit = trim(unit.substr(0, slash));
    const std::string_view per = trim(unit.substr(slash + 1));
    const auto factor = byte_factor(size_unit, "B");
    if (factor && per == "s") return Bandwidth{BytesPerSecond{number * *factor}};
    if (factor && per == "cycle") return Bandwidth{BytesPerCycle{number * *factor}};
    if (factor) {
      why = fmt::format("cannot read \"{}\" as a bandwidth: \"/{}\" is not a time base; use "
                        "\"/s\" (e.g. \"4.8 TB/s\") or \"/cycle\" (e.g. \"64 B/cycle\")",
                        trim(text), per);
      return std::nullopt;
    }
    why = fmt::format("cannot read \"{}\" as a bandwidth; expected e.g. \"4.8 TB/s\" or "
                      "\"64 B/cycle\"{}",
                      trim(text), byte_unit_hint(size_unit));
    return std::nullopt;
  }
  why = fmt::format("cannot read \"{}\" as a bandwidth; expected a size per second or per "
                    "cycle, such as \"4.8 TB/s\" or \"64 B/cycle\"",
                    trim(text));
  return std::nullopt;
}

std::string to_string(Bytes bytes) {
  constexpr std::array<std::string_view, 5> kNames{"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes.value);
  std::size_t i = 0;
  while (v >= 1024.0 && i + 1 < kNames.size()) {
    v /= 1024.0;
    ++i;
  }
  return i == 0 ? fmt::format("{} B", bytes.value) : fmt::format("{:.4g} {}", v, kNames[i]);
}

std::string to_string(Hertz hertz) {
  if (hertz.value >= 1e9) return fmt::format("{:.4g} GHz", hertz.value / 1e9);
  if (hertz.value >= 1e6) return fmt::format("{:.4g} MHz", hertz.value / 1e6);
  if (hertz.value >= 1e3) return fmt::format("{:.4g} kHz", hertz.value / 1e3);
  return fmt::format("{:.4g} Hz", hertz.value);
}

namespace {

// The unit of `units` (the base unit, then its milli-, micro-, ... submultiples, each 1000 times
// smaller) in which `value` reads at least 1: the base unit for 0 and for values of 1 or more,
// the last unit for values below its size.
UnitScale submultiple_scale(double value, std::span<const std::string_view> units) {
  double factor = 1;
  std::size_t i = 0;
  if (value != 0.0)
    while (value * factor < 1.0 && i + 1 < units.size()) {
      factor *= 1e3;
      ++i;
    }
  return {factor, units[i]};
}

std::string scaled(double value, UnitScale scale) {
  return fmt::format("{:.4g} {}", value * scale.factor, scale.unit);
}

constexpr std::array<std::string_view, 4> kSecondUnits{"s", "ms", "us", "ns"};
constexpr std::array<std::string_view, 6> kJouleUnits{"J", "mJ", "uJ", "nJ", "pJ", "fJ"};

}  // namespace

UnitScale scale_of(Seconds seconds) { return submultiple_scale(seconds.value, kSecondUnits); }

std::string to_string(Seconds seconds) { return scaled(seconds.value, scale_of(seconds)); }

std::string to_string(const Bandwidth& bandwidth) {
  if (const auto* per_c = std::get_if<BytesPerCycle>(&bandwidth))
    return fmt::format("{:.4g} B/cycle", per_c->value);
  const double v = std::get<BytesPerSecond>(bandwidth).value;
  if (v >= 1e12) return fmt::format("{:.4g} TB/s", v / 1e12);
  if (v >= 1e9) return fmt::format("{:.4g} GB/s", v / 1e9);
  if (v >= 1e6) return fmt::format("{:.4g} MB/s", v / 1e6);
  return fmt::format("{:.4g} B/s", v);
}

UnitScale scale_of(Joules joules) { return submultiple_scale(joules.value, kJouleUnits); }

std::string to_string(Joules joules) { return scaled(joules.value, scale_of(joules)); }

std::string to_string(Watts watts) {
  if (watts.value >= 1e3) return fmt::format("{:.4g} kW", watts.value / 1e3);
  if (watts.value >= 1.0 || watts.value == 0.0) return fmt::format("{:.4g} W", watts.value);
  return fmt::format("{:.4g} mW", watts.value * 1e3);
}

std::string to_string(SquareMillimetres area) { return fmt::format("{:.4g} mm2", area.value); }

std::string to_string(const Latency& latency) {
  if (const auto* cycles = std::get_if<Cycles>(&latency))
    return fmt::format("{} cycles", cycles->value);
  return to_string(std::get<Seconds>(latency));
}

}  // namespace coda
