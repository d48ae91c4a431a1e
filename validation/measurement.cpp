#include "validation/measurement.h"

#include <array>
#include <charconv>
#include <cmath>
#include <ostream>

#include <fmt/format.h>

#include "core/yaml_reader.h"  // did_you_mean
#include "validation/case_list.h"

namespace coda::validation {
namespace {

std::string num(double v) { return std::isnan(v) ? std::string{} : fmt::format("{}", v); }
std::string opt(const std::optional<double>& v) { return v ? num(*v) : std::string{}; }
std::string gemm_dim(const Measurement& m, std::uint64_t Shape::*field) {
  return info(m.kernel).shape == ShapeKind::Gemm ? fmt::format("{}", m.shape.*field)
                                                 : std::string{};
}
// Implicit-GEMM dimensions of a conv: M = N*P*Q, N = K, K = C*R*S.
std::uint64_t conv_gemm(const Shape& s, char dim) {
  if (dim == 'm') return s.batch * conv_out_extent(s, s.height) * conv_out_extent(s, s.width);
  if (dim == 'n') return s.filters;
  return s.channels * s.filter_size * s.filter_size;
}
std::string mnk(const Measurement& m, char dim, std::uint64_t Shape::*field) {
  if (info(m.kernel).shape == ShapeKind::Conv) return fmt::format("{}", conv_gemm(m.shape, dim));
  return gemm_dim(m, field);
}
std::string field_of(const Measurement& m, std::string_view key) {
  for (std::string_view k : shape_keys(info(m.kernel).shape)) {
    if (k == key) return fmt::format("{}", shape_value(m.shape, key));
  }
  return {};
}

bool parse_u64(std::string_view text, std::uint64_t& out) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc{} && end == text.data() + text.size();
}
bool parse_u32(std::string_view text, std::uint32_t& out) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc{} && end == text.data() + text.size();
}
bool parse_double(std::string_view text, double& out) {
  if (text.empty()) {
    out = kNotMeasured;
    return true;
  }
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc{} && end == text.data() + text.size();
}
bool parse_opt(std::string_view text, std::optional<double>& out) {
  if (text.empty()) {
    out.reset();
    return true;
  }
  double v = 0;
  if (!parse_double(text, v)) return false;
  out = v;
  return true;
}

using Writer = std::string (*)(const Measurement&);
// Returns an empty string on success, else what was expected.
using Reader = std::string (*)(Measurement&, std::string_view);

struct Column {
  std::string_view name;
  Writer write;
  Reader read;  // nullptr: derived from other columns, not read back
};

std::string read_kernel(Measurement& m, std::string_view t) {
  for (const KernelInfo& k : kernel_catalog()) {
    if (k.name == t) {
      m.kernel = k.kernel;
      return {};
    }
  }
  return "a kernel name such as gemm_wmma";
}
std::string read_dtype(Measurement& m, std::string_view t) {
  for (DType d : {DType::Fp32, DType::Fp16, DType::Bf16, DType::Int8}) {
    if (dtype_name(d) == t) {
      m.dtype = d;
      return {};
    }
  }
  return "one of fp32, fp16, bf16, int8";
}
// "m=4096 n=4096 k=4096" -> the shape fields.
std::string read_shape(Measurement& m, std::string_view t) {
  m.shape = Shape{};
  while (!t.empty()) {
    const auto space = t.find(' ');
    const std::string_view item = t.substr(0, space);
    t = space == std::string_view::npos ? std::string_view{} : t.substr(space + 1);
    const auto eq = item.find('=');
    std::uint64_t* field = eq == std::string_view::npos ? nullptr
                                                        : shape_field(m.shape, item.substr(0, eq));
    if (!field || !parse_u64(item.substr(eq + 1), *field))
      return "space-separated key=value shape fields such as \"m=64 n=64 k=64\"";
  }
  return {};
}

#define CODA_U32(member)                                                        \
  [](Measurement& m, std::string_view t) -> std::string {                       \
    return parse_u32(t, m.member) ? std::string{} : "a non-negative integer";   \
  }
#define CODA_U64(member)                                                        \
  [](Measurement& m, std::string_view t) -> std::string {                       \
    return parse_u64(t, m.member) ? std::string{} : "a non-negative integer";   \
  }
#define CODA_DOUBLE(member)                                                     \
  [](Measurement& m, std::string_view t) -> std::string {                       \
    return parse_double(t, m.member) ? std::string{} : "a number or nothing";   \
  }
#define CODA_TEXT(member)                                                       \
  [](Measurement& m, std::string_view t) -> std::string {                       \
    m.member = std::string(t);                                                  \
    return {};                                                                  \
  }

const std::array<Column, 42> kColumns{{
    {"kernel", [](const Measurement& m) { return std::string(info(m.kernel).name); }, read_kernel},
    {"dtype", [](const Measurement& m) { return std::string(dtype_name(m.dtype)); }, read_dtype},
    {"shape", [](const Measurement& m) { return shape_text(info(m.kernel).shape, m.shape); },
     read_shape},
    {"m", [](const Measurement& m) { return mnk(m, 'm', &Shape::m); }, nullptr},
    {"n", [](const Measurement& m) { return mnk(m, 'n', &Shape::n); }, nullptr},
    {"k", [](const Measurement& m) { return mnk(m, 'k', &Shape::k); }, nullptr},
    {"batch", [](const Measurement& m) { return field_of(m, "batch"); }, nullptr},
    {"heads", [](const Measurement& m) { return field_of(m, "heads"); }, nullptr},
    {"seq", [](const Measurement& m) { return field_of(m, "seq"); }, nullptr},
    {"head_dim", [](const Measurement& m) { return field_of(m, "head_dim"); }, nullptr},
    {"rows", [](const Measurement& m) { return field_of(m, "rows"); }, nullptr},
    {"cols", [](const Measurement& m) { return field_of(m, "cols"); }, nullptr},
    {"elements", [](const Measurement& m) { return field_of(m, "elements"); }, nullptr},
    {"repetitions", [](const Measurement& m) { return fmt::format("{}", m.repetitions); },
     CODA_U32(repetitions)},
    {"warmup", [](const Measurement& m) { return fmt::format("{}", m.warmup); }, CODA_U32(warmup)},
    {"median_us", [](const Measurement& m) { return num(m.median_us); }, CODA_DOUBLE(median_us)},
    {"min_us", [](const Measurement& m) { return num(m.min_us); }, CODA_DOUBLE(min_us)},
    {"max_us", [](const Measurement& m) { return num(m.max_us); }, CODA_DOUBLE(max_us)},
    {"operations", [](const Measurement& m) { return num(m.operations); },
     CODA_DOUBLE(operations)},
    {"bytes", [](const Measurement& m) { return num(m.bytes); }, CODA_DOUBLE(bytes)},
    {"tflops", [](const Measurement& m) { return num(achieved_tflops(m)); }, nullptr},
    {"gbps", [](const Measurement& m) { return num(achieved_gbps(m)); }, nullptr},
    {"max_error", [](const Measurement& m) { return num(m.max_error); }, CODA_DOUBLE(max_error)},
    {"tolerance", [](const Measurement& m) { return num(m.tolerance); }, CODA_DOUBLE(tolerance)},
    {"passed", [](const Measurement& m) { return std::string(m.passed ? "true" : "false"); },
     [](Measurement& m, std::string_view t) -> std::string {
       if (t != "true" && t != "false") return "true or false";
       m.passed = t == "true";
       return {};
     }},
    {"quant_error_per_tensor", [](const Measurement& m) { return opt(m.quant_error_per_tensor); },
     [](Measurement& m, std::string_view t) -> std::string {
       return parse_opt(t, m.quant_error_per_tensor) ? std::string{} : "a number or nothing";
     }},
    {"quant_error_per_channel",
     [](const Measurement& m) { return opt(m.quant_error_per_channel); },
     [](Measurement& m, std::string_view t) -> std::string {
       return parse_opt(t, m.quant_error_per_channel) ? std::string{} : "a number or nothing";
     }},
    {"buffer_sets", [](const Measurement& m) { return fmt::format("{}", m.buffer_sets); },
     CODA_U32(buffer_sets)},
    {"working_set_bytes",
     [](const Measurement& m) { return fmt::format("{}", m.working_set_bytes); },
     CODA_U64(working_set_bytes)},
    {"tiling", [](const Measurement& m) { return m.tiling; }, CODA_TEXT(tiling)},
    {"device", [](const Measurement& m) { return m.device.name; }, CODA_TEXT(device.name)},
    {"compute_capability", [](const Measurement& m) { return m.device.compute_capability; },
     CODA_TEXT(device.compute_capability)},
    {"sm_count", [](const Measurement& m) { return fmt::format("{}", m.device.sm_count); },
     CODA_U32(device.sm_count)},
    {"sm_clock_mhz", [](const Measurement& m) { return fmt::format("{}", m.device.sm_clock_mhz); },
     CODA_U32(device.sm_clock_mhz)},
    {"mem_clock_mhz",
     [](const Measurement& m) { return fmt::format("{}", m.device.mem_clock_mhz); },
     CODA_U32(device.mem_clock_mhz)},
    {"l2_bytes", [](const Measurement& m) { return fmt::format("{}", m.device.l2_bytes); },
     CODA_U64(device.l2_bytes)},
    {"driver", [](const Measurement& m) { return m.device.driver; }, CODA_TEXT(device.driver)},
    {"cuda_runtime", [](const Measurement& m) { return m.device.cuda_runtime; },
     CODA_TEXT(device.cuda_runtime)},
    {"ecc", [](const Measurement& m) { return m.device.ecc; }, CODA_TEXT(device.ecc)},
    {"date", [](const Measurement& m) { return m.date; }, CODA_TEXT(date)},
    {"source", [](const Measurement& m) { return m.source; }, CODA_TEXT(source)},
    {"note", [](const Measurement& m) { return m.note; }, CODA_TEXT(note)},
}};

#undef CODA_U32
#undef CODA_U64
#undef CODA_DOUBLE
#undef CODA_TEXT

std::vector<std::string_view> column_names() {
  std::vector<std::string_view> names;
  names.reserve(kColumns.size());
  for (const Column& c : kColumns) names.push_back(c.name);
  return names;
}

void write_cell(std::ostream& out, std::string_view cell) {
  if (cell.find_first_of(",\"\n\r") == std::string_view::npos) {
    out << cell;
    return;
  }
  out << '"';
  for (char c : cell) {
    if (c == '"') out << '"';
    out << c;
  }
  out << '"';
}

struct Cell {
  std::string text;
  int column = 0;  // 1-based character column where the cell starts
};

// Splits one CSV record starting at `pos` (RFC 4180 quoting; quoted cells may hold newlines).
// Advances `pos` and `line` past the record. Returns false on an unterminated quote.
bool split_record(std::string_view text, std::size_t& pos, int& line, std::vector<Cell>& cells) {
  cells.clear();
  Cell cell{.text = {}, .column = 1};
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
      cell = Cell{.text = {}, .column = column + 1};
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

}  // namespace

double achieved_tflops(const Measurement& m) {
  if (m.operations <= 0 || std::isnan(m.median_us) || m.median_us <= 0) return kNotMeasured;
  return m.operations / (m.median_us * 1e-6) / 1e12;
}

double achieved_gbps(const Measurement& m) {
  if (m.bytes <= 0 || std::isnan(m.median_us) || m.median_us <= 0) return kNotMeasured;
  return m.bytes / (m.median_us * 1e-6) / 1e9;
}

std::vector<std::string_view> measurement_columns() { return column_names(); }

void write_measurement_header(std::ostream& out) {
  for (std::size_t i = 0; i < kColumns.size(); ++i) {
    if (i > 0) out << ',';
    out << kColumns[i].name;
  }
  out << '\n';
}

void write_measurement_row(std::ostream& out, const Measurement& m) {
  for (std::size_t i = 0; i < kColumns.size(); ++i) {
    if (i > 0) out << ',';
    write_cell(out, kColumns[i].write(m));
  }
  out << '\n';
}

std::optional<std::vector<Measurement>> read_measurements(std::string_view text,
                                                          const std::string& file,
                                                          Diagnostics& diags) {
  const auto errors_before = diags.error_count();
  std::size_t pos = 0;
  int line = 1;
  std::vector<Cell> cells;
  if (!split_record(text, pos, line, cells) || (cells.size() == 1 && cells[0].text.empty())) {
    diags.error({file, 1, 1}, "header", "no header line",
                fmt::format("the first line names the columns: {}", kColumns[0].name));
    return std::nullopt;
  }
  const std::vector<std::string_view> names = column_names();
  // Which column of the file each schema column is in.
  std::vector<int> index(kColumns.size(), -1);
  for (std::size_t i = 0; i < cells.size(); ++i) {
    bool known = false;
    for (std::size_t c = 0; c < kColumns.size(); ++c) {
      if (kColumns[c].name == cells[i].text) {
        index[c] = static_cast<int>(i);
        known = true;
      }
    }
    if (!known) {
      const auto close = did_you_mean(cells[i].text, names);
      diags.error({file, 1, cells[i].column}, fmt::format("column '{}'", cells[i].text),
                  "unknown column",
                  close ? fmt::format("did you mean '{}'?", *close) : std::string{});
    }
  }
  for (std::size_t c = 0; c < kColumns.size(); ++c) {
    if (index[c] < 0)
      diags.error({file, 1, 1}, "header", fmt::format("missing column '{}'", kColumns[c].name),
                  "see docs/validation.md for the schema");
  }
  if (diags.error_count() != errors_before) return std::nullopt;

  std::vector<Measurement> rows;
  int row = 1;
  while (pos < text.size()) {
    const int row_line = line;
    ++row;
    if (!split_record(text, pos, line, cells)) {
      diags.error({file, row_line, 1}, fmt::format("row {}", row), "unterminated quoted cell");
      break;
    }
    if (cells.size() == 1 && cells[0].text.empty()) continue;  // blank line
    Measurement m;
    bool ok = true;
    for (std::size_t c = 0; c < kColumns.size(); ++c) {
      const auto at = static_cast<std::size_t>(index[c]);
      if (at >= cells.size()) {
        diags.error({file, row_line, 1}, fmt::format("row {}", row),
                    fmt::format("{} cells; the header has more", cells.size()));
        ok = false;
        break;
      }
      if (!kColumns[c].read) continue;
      const std::string expected = kColumns[c].read(m, cells[at].text);
      if (!expected.empty()) {
        diags.error({file, row_line, cells[at].column},
                    fmt::format("row {}, column '{}'", row, kColumns[c].name),
                    fmt::format("cannot read \"{}\"", cells[at].text),
                    fmt::format("expected {}", expected));
        ok = false;
      }
    }
    if (ok) rows.push_back(std::move(m));
  }
  if (diags.error_count() != errors_before) return std::nullopt;
  return rows;
}

}  // namespace coda::validation
