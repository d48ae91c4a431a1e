#include "core/csv.h"

#include <charconv>
#include <cmath>

namespace coda {

bool split_csv_record(std::string_view text, std::size_t& pos, int& line,
                      std::vector<CsvCell>& cells) {
  cells.clear();
  CsvCell cell{.text = {}, .column = 1};
  int column = 1;
  bool quoted = false;
  bool at_start = true;
  while (pos < text.size()) {
    const char c = text[pos];
    if (quoted) {
      if (c == '"' && pos + 1 < text.size() && text[pos + 1] == '"') {
        cell.text += '"';
        pos += 2;
        column += 2;
        continue;
      }
      if (c == '"') {
        quoted = false;
      } else {
        cell.text += c;
        if (c == '\n') {
          ++line;
          column = 0;
        }
      }
      ++pos;
      ++column;
      continue;
    }
    if (c == '"' && at_start) {
      quoted = true;
      at_start = false;
      ++pos;
      ++column;
      continue;
    }
    if (c == ',') {
      cells.push_back(std::move(cell));
      cell = CsvCell{.text = {}, .column = column + 1};
      at_start = true;
      ++pos;
      ++column;
      continue;
    }
    if (c == '\n' || c == '\r') {
      if (c == '\r' && pos + 1 < text.size() && text[pos + 1] == '\n') ++pos;
      ++pos;
      ++line;
      cells.push_back(std::move(cell));
      return true;
    }
    cell.text += c;
    at_start = false;
    ++pos;
    ++column;
  }
  cells.push_back(std::move(cell));
  return !quoted;
}

std::string csv_cell(std::string_view text) {
  if (text.find_first_of(",\"\n\r") == std::string_view::npos) return std::string(text);
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + '"';
}

std::optional<std::uint64_t> parse_whole_uint(std::string_view text) {
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  return v;
}

std::optional<double> parse_finite_double(std::string_view text) {
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || end != text.data() + text.size() || !std::isfinite(v))
    return std::nullopt;
  return v;
}

}  // namespace coda
