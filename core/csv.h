#pragma once
// CSV records as RFC 4180 writes them (quoted cells may hold commas, quotes doubled, newlines),
// split with the line and column each cell starts at, so readers can locate their errors. Shared
// by the measurement CSV (validation/measurement.h), the serving corpus and request traces.
// Hand-written rather than a library: Debian ships no C++ CSV parser, and this is 60 lines.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace coda {

struct CsvCell {
  std::string text;
  int column = 0;  // 1-based character column where the cell starts
};

// Splits the record starting at `pos` into `cells`. Advances `pos` past the record and `line` by
// the line breaks it spans. Returns false on an unterminated quote.
bool split_csv_record(std::string_view text, std::size_t& pos, int& line,
                      std::vector<CsvCell>& cells);

// `text` as one CSV cell: as it is, or quoted (quotes doubled) when it holds a comma, a quote or
// a line break.
std::string csv_cell(std::string_view text);

// A cell's whole text as a number: nullopt when anything else is in it (signs other than a
// double's leading minus, spaces, trailing text) or a double is not finite.
std::optional<std::uint64_t> parse_whole_uint(std::string_view text);
std::optional<double> parse_finite_double(std::string_view text);

}  // namespace coda
