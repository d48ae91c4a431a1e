// Fuzzes the unit parsers (core/units.h) with the same text: each returns a value or says why not.

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/units.h"
#include "fuzz/fuzz_contract.h"

namespace {

template <class Parse>
void check(Parse parse, std::string_view text) {
  std::string why;
  const auto value = parse(text, why);
  coda::fuzz::require(value.has_value() == why.empty());
  if (value) coda::fuzz::require(!coda::to_string(*value).empty());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = coda::fuzz::as_text(data, size);
  check(coda::parse_bytes, text);
  check(coda::parse_frequency, text);
  check(coda::parse_duration, text);
  check(coda::parse_bandwidth, text);
  check(coda::parse_energy, text);
  check(coda::parse_power, text);
  check(coda::parse_area, text);
  check(coda::parse_latency, text);
  return 0;
}
