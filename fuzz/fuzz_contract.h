#pragma once
// The contract every reader keeps, checked by the fuzz targets: a reader returns either a value
// (and then reported no error) or at least one error; every error has a non-empty message and,
// for input that came from a file, a line >= 1. A violation stops the fuzzer with
// __builtin_trap(), so libFuzzer saves the input that caused it.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/diagnostics.h"

namespace coda::fuzz {

inline void require(bool ok) {
  if (!ok) __builtin_trap();
}

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// `has_value`: whether the reader returned a value.
inline void check_contract(bool has_value, const Diagnostics& diags) {
  require(has_value == !diags.has_errors());
  for (const Diagnostic& d : diags.all()) {
    require(!d.message.empty());
    if (d.severity == Severity::Error) require(d.where.line >= 1 && d.where.column >= 1);
    require(!format(d).empty());
  }
}

}  // namespace coda::fuzz
