// SCALE-Sim v2 topology CSVs (see docs/workloads.md, "SCALE-Sim topology CSV").

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <utility>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "core/text.h"
#include "workloads/builders.h"
#include "workloads/importers.h"

namespace coda::workload {
namespace {

constexpr std::array<std::string_view, 8> kConvColumns = {
    "Layer name",   "IFMAP Height", "IFMAP Width", "Filter Height",
    "Filter Width", "Channels",     "Num Filter",  "Strides"};
constexpr std::array<std::string_view, 4> kGemmColumns = {"Layer", "M", "N", "K"};
constexpr std::string_view kValidHeaders =
    "expected the conv header 'Layer name, IFMAP Height, IFMAP Width, Filter Height, "
    "Filter Width, Channels, Num Filter, Strides,' or the GEMM header 'Layer, M, N, K,'";
// Larger sizes are surely a typo, and keeping each below 2^31 keeps products of a few of them
// (MAC counts) far from overflow.
constexpr std::uint64_t kMaxValue = (std::uint64_t{1} << 31) - 1;

enum class Format : std::uint8_t { Conv, Gemm };

struct Field {
  std::string_view text;  // trimmed
  int column = 1;         // 1-based column of the text (of the field's start when empty)
};

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

bool iequals(std::string_view a, std::string_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) ==
           std::tolower(static_cast<unsigned char>(y));
  });
}

// Splits on commas and trims each field; trailing empty fields are dropped, so a row that is all
// commas (or blank) has no fields.
std::vector<Field> split_fields(std::string_view line) {
  std::vector<Field> fields;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = line.find(',', start);
    const std::size_t end = comma == std::string_view::npos ? line.size() : comma;
    std::string_view raw = line.substr(start, end - start);
    std::size_t lead = 0;
    while (lead < raw.size() && is_space(raw[lead])) ++lead;
    fields.push_back({trim(raw), static_cast<int>(start + std::min(lead, raw.size())) + 1});
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  while (!fields.empty() && fields.back().text.empty()) fields.pop_back();
  return fields;
}

struct Line {
  int number = 0;
  std::string_view text;
};

std::vector<Line> split_lines(std::string_view text) {
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);  // UTF-8 BOM from spreadsheets
  std::vector<Line> lines;
  int number = 1;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t nl = text.find('\n', start);
    const std::size_t end = nl == std::string_view::npos ? text.size() : nl;
    std::string_view line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back({number++, line});
    if (nl == std::string_view::npos) break;
    start = nl + 1;
  }
  return lines;
}

// The header's leading columns decide the format; columns after them (SCALE-Sim v1 files carry
// derived values such as "Eh, Ew") are allowed and not read.
std::optional<Format> header_format(const std::vector<Field>& header) {
  if (header.size() >= kGemmColumns.size() && iequals(header[1].text, "M") &&
      iequals(header[2].text, "N") && iequals(header[3].text, "K"))
    return Format::Gemm;
  if (header.size() >= kConvColumns.size() &&
      std::equal(kConvColumns.begin(), kConvColumns.end(), header.begin(),
                 [](std::string_view name, const Field& f) { return iequals(f.text, name); }))
    return Format::Conv;
  return std::nullopt;
}

class CsvReader {
 public:
  CsvReader(const std::string& file, Diagnostics& diags) : file_(file), diags_(diags) {}

  std::optional<Graph> read(std::string_view text) {
    const std::size_t errors_before = diags_.error_count();
    const std::vector<Line> lines = split_lines(text);
    std::size_t i = 0;
    std::vector<Field> header;
    for (; i < lines.size(); ++i) {
      header = split_fields(lines[i].text);
      if (!header.empty()) break;
    }
    if (header.empty()) {
      diags_.error({file_, 1, 1}, "", "empty file: no header and no layers",
                   std::string(kValidHeaders));
      return std::nullopt;
    }
    const int header_line = lines[i].number;
    const auto format = header_format(header);
    if (!format) {
      diags_.error({file_, header_line, 1}, "header", "not a SCALE-Sim topology header",
                   std::string(kValidHeaders));
      return std::nullopt;
    }
    format_ = *format;
    header_width_ = header.size();
    if (header_width_ > columns().size()) {
      std::string extra;
      for (std::size_t c = columns().size(); c < header.size(); ++c)
        if (!header[c].text.empty())
          extra += (extra.empty() ? "'" : ", '") + std::string(header[c].text) + "'";
      diags_.warning({file_, header_line, header[columns().size()].column}, "header",
                     fmt::format("the columns after '{}'{} are not read", columns().back(),
                                 extra.empty() ? "" : " (" + extra + ")"),
                     "coda, like SCALE-Sim v2, reads only the leading columns");
    }

    Graph graph;
    graph.name = std::filesystem::path(file_).stem().string();
    graph.source = "SCALE-Sim topology " + file_;
    bool any_row = false;
    for (++i; i < lines.size(); ++i) {
      std::vector<Field> fields = split_fields(lines[i].text);
      if (fields.empty()) continue;  // blank, or all-empty like ",,,,"
      any_row = true;
      if (auto op = read_row(lines[i], fields)) graph.add(std::move(*op));
    }
    if (!any_row) {
      diags_.error({file_, header_line, 1}, "header", "no layer rows after the header",
                   format_ == Format::Conv
                       ? "add one row per layer, e.g. 'conv1, 229, 229, 7, 7, 3, 64, 2,'"
                       : "add one row per GEMM, e.g. 'fc, 1, 1000, 512,'");
    }
    if (diags_.error_count() != errors_before) return std::nullopt;
    return graph;
  }

 private:
  std::span<const std::string_view> columns() const {
    if (format_ == Format::Conv) return kConvColumns;
    return kGemmColumns;
  }

  std::string where(int line, std::size_t column) const {
    return fmt::format("row {}, column '{}'", line, columns()[column]);
  }

  std::string row_hint() const {
    std::string names;
    for (const auto name : columns()) names += std::string(name) + ", ";
    return fmt::format("a row is '{}' (a trailing #comment is allowed)", trim(names));
  }

  // A whole number of at least 1; reports and returns nullopt otherwise.
  std::optional<std::uint64_t> positive(const Line& line, const Field& field, std::size_t column) {
    const std::string_view t = field.text;
    std::uint64_t value = 0;
    const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), value);
    const bool whole = !t.empty() && ec == std::errc{} && end == t.data() + t.size();
    const bool negative_whole =
        t.size() > 1 && t.front() == '-' &&
        std::all_of(t.begin() + 1, t.end(), [](char c) { return c >= '0' && c <= '9'; });
    std::string message;
    if (whole && value == 0) message = "must be at least 1, not 0";
    else if (whole && value > kMaxValue)
      message = fmt::format("{} is out of range (at most {})", value, kMaxValue);
    else if (whole) return value;
    else if (negative_whole) message = fmt::format("\"{}\" is negative", t);
    else if (ec == std::errc::result_out_of_range)
      message = fmt::format("{} is out of range (at most {})", t, kMaxValue);
    else message = fmt::format("\"{}\" is not a whole number", t);
    diags_.error({file_, line.number, field.column}, where(line.number, column), message,
                 "write a whole number of at least 1, such as 3");
    return std::nullopt;
  }

  std::optional<Op> read_row(const Line& line, std::vector<Field>& fields) {
    const std::size_t required = columns().size();
    if (fields.size() > required && fields.back().text.starts_with('#')) fields.pop_back();
    if (fields.size() < required) {
      diags_.error({file_, line.number, static_cast<int>(line.text.size()) + 1},
                   where(line.number, fields.size()),
                   fmt::format("missing: the row has {} of the {} columns", fields.size(),
                               required),
                   row_hint());
      return std::nullopt;
    }
    bool ok = true;
    if (fields.size() > std::max(required, header_width_)) {
      diags_.error({file_, line.number, fields[std::max(required, header_width_)].column},
                   fmt::format("row {}", line.number),
                   fmt::format("unexpected extra column \"{}\"",
                               fields[std::max(required, header_width_)].text),
                   row_hint());
      ok = false;
    }
    const std::string name(fields[0].text);
    if (name.empty()) {
      diags_.error({file_, line.number, fields[0].column}, where(line.number, 0),
                   "empty layer name", "name every layer, e.g. 'conv1'");
      ok = false;
    } else if (const auto problem = text_field_problem(name)) {
      diags_.error({file_, line.number, fields[0].column}, where(line.number, 0),
                   problem->message, problem->hint);
      ok = false;
    }
    std::array<std::uint64_t, kConvColumns.size()> v{};
    for (std::size_t c = 1; c < required; ++c) {
      const auto value = positive(line, fields[c], c);
      if (value) v[c] = *value;
      else ok = false;
    }
    if (format_ == Format::Conv) {
      // Indices into the conv columns.
      enum : std::size_t { kH = 1, kW, kFh, kFw, kChannels, kFilters, kStride };
      for (const auto& [filter, ifmap] : {std::pair{kFh, kH}, std::pair{kFw, kW}}) {
        if (v[filter] == 0 || v[ifmap] == 0 || v[filter] <= v[ifmap]) continue;
        diags_.error({file_, line.number, fields[filter].column}, where(line.number, filter),
                     fmt::format("{} {} is larger than {} {}", kConvColumns[filter], v[filter],
                                 kConvColumns[ifmap], v[ifmap]),
                     fmt::format("SCALE-Sim expects padding already added to {}: write "
                                 "{} + 2 x padding",
                                 kConvColumns[ifmap], kConvColumns[ifmap]));
        ok = false;
      }
      if (!ok) return std::nullopt;
      Conv2dParams p;
      p.in_h = v[kH];
      p.in_w = v[kW];
      p.filter_h = v[kFh];
      p.filter_w = v[kFw];
      p.in_channels = v[kChannels];
      p.out_channels = v[kFilters];
      p.stride_h = p.stride_w = v[kStride];
      if (name.find("DP") != std::string::npos) {
        // SCALE-Sim runs a "DP" layer as Channels layers of 1 channel and Num Filter filters:
        // one grouped conv with a group per channel.
        p.groups = v[kChannels];
        p.out_channels = v[kChannels] * v[kFilters];
      }
      Op op = make_conv2d(name, p, scalesim_output_extent(p.in_h, p.filter_h, p.stride_h),
                          scalesim_output_extent(p.in_w, p.filter_w, p.stride_w));
      op.source = {file_, line.number, fields[0].column};
      return op;
    }
    if (!ok) return std::nullopt;
    Op op = make_gemm(name, v[1], v[2], v[3]);
    op.source = {file_, line.number, fields[0].column};
    return op;
  }

  const std::string& file_;
  Diagnostics& diags_;
  Format format_ = Format::Conv;
  std::size_t header_width_ = 0;  // columns the header names; rows may fill that many
};

}  // namespace

std::optional<Graph> read_scalesim_csv(std::string_view text, const std::string& file,
                                       Diagnostics& diags) {
  return CsvReader(file, diags).read(text);
}

}  // namespace coda::workload
