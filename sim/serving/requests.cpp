#include "sim/serving/requests.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

#include <boost/random/exponential_distribution.hpp>
#include <boost/random/gamma_distribution.hpp>
#include <boost/random/mersenne_twister.hpp>
#include <boost/random/normal_distribution.hpp>
#include <boost/random/uniform_int_distribution.hpp>
#include <fmt/format.h>

#include "core/csv.h"
#include "core/enum_table.h"
#include "core/text.h"

namespace coda::sim::serving {
namespace {

// The longest prompt or answer coda takes: 2^24 tokens, far beyond any model's context, and
// small enough that token counts times bytes per token stay far from overflow.
constexpr std::uint64_t kMaxTokens = std::uint64_t{1} << 24;

std::vector<std::string_view> split(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = text.find(sep, start);
    parts.push_back(text.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

constexpr std::string_view kLengthHint =
    "N (a fixed length), uniform:MIN:MAX or lognormal:MEDIAN:SIGMA:MIN:MAX, lengths in tokens "
    "from 1 to 16777216, e.g. 512 or lognormal:180:1.0:4:2048";

std::uint64_t sample_length(const LengthDist& d, boost::random::mt19937_64& rng) {
  switch (d.kind) {
    case LengthKind::Fixed:
      return d.value;
    case LengthKind::Uniform:
      return boost::random::uniform_int_distribution<std::uint64_t>(d.min, d.max)(rng);
    case LengthKind::LogNormal: {
      // exp(N(ln median, sigma)) through Boost's normal distribution, which is specified to the
      // bit (boost::random::lognormal_distribution is the same transform).
      const double z = boost::random::normal_distribution<double>(0.0, 1.0)(rng);
      const double x = std::round(d.median * std::exp(d.sigma * z));
      const double clamped = std::clamp(x, static_cast<double>(d.min), static_cast<double>(d.max));
      return static_cast<std::uint64_t>(clamped);
    }
  }
  return d.value;
}

}  // namespace

std::uint64_t LengthDist::largest() const { return kind == LengthKind::Fixed ? value : max; }

double LengthDist::mean_hint() const {
  switch (kind) {
    case LengthKind::Fixed:
      return static_cast<double>(value);
    case LengthKind::Uniform:
      return (static_cast<double>(min) + static_cast<double>(max)) / 2;
    case LengthKind::LogNormal:
      return median * std::exp(sigma * sigma / 2);
  }
  return static_cast<double>(value);
}

std::string to_string(const LengthDist& d) {
  switch (d.kind) {
    case LengthKind::Fixed:
      return std::to_string(d.value);
    case LengthKind::Uniform:
      return fmt::format("uniform:{}:{}", d.min, d.max);
    case LengthKind::LogNormal:
      return fmt::format("lognormal:{}:{}:{}:{}", d.median, d.sigma, d.min, d.max);
  }
  return {};
}

std::string_view to_string(ArrivalKind kind) {
  static constexpr std::pair<std::string_view, ArrivalKind> kKinds[] = {
      {"offline", ArrivalKind::Offline},
      {"poisson", ArrivalKind::Poisson},
      {"gamma", ArrivalKind::Gamma},
      {"closed", ArrivalKind::Closed}};
  return enum_name(kKinds, kind);
}

std::optional<LengthDist> parse_length(std::string_view text, std::string_view option,
                                       Diagnostics& diags) {
  const std::vector<std::string_view> parts = split(trim(text), ':');
  const auto fail = [&](const std::string& why) -> std::optional<LengthDist> {
    diags.error({}, std::string(option), fmt::format("'{}': {}", text, why),
                std::string(kLengthHint));
    return std::nullopt;
  };
  const auto length = [&](std::string_view s) -> std::optional<std::uint64_t> {
    const std::optional<std::uint64_t> v = parse_whole_uint(s);
    if (!v || *v < 1 || *v > kMaxTokens) return std::nullopt;
    return v;
  };
  LengthDist d;
  if (parts.size() == 1) {
    const auto v = length(parts[0]);
    if (!v) return fail("not a length from 1 to 16777216 tokens");
    d.kind = LengthKind::Fixed;
    d.value = *v;
    d.min = d.max = *v;
    return d;
  }
  if (parts[0] == "uniform") {
    if (parts.size() != 3) return fail("uniform takes MIN and MAX");
    const auto lo = length(parts[1]), hi = length(parts[2]);
    if (!lo || !hi) return fail("MIN and MAX must be lengths from 1 to 16777216 tokens");
    if (*lo > *hi) return fail("MIN is larger than MAX");
    d.kind = LengthKind::Uniform;
    d.min = *lo;
    d.max = *hi;
    return d;
  }
  if (parts[0] == "lognormal") {
    if (parts.size() != 5) return fail("lognormal takes MEDIAN, SIGMA, MIN and MAX");
    const auto median = parse_finite_double(parts[1]), sigma = parse_finite_double(parts[2]);
    const auto lo = length(parts[3]), hi = length(parts[4]);
    if (!median || *median < 1) return fail("MEDIAN must be a number of tokens, at least 1");
    if (!sigma || *sigma < 0 || *sigma > 10) return fail("SIGMA must be a number from 0 to 10");
    if (!lo || !hi) return fail("MIN and MAX must be lengths from 1 to 16777216 tokens");
    if (*lo > *hi) return fail("MIN is larger than MAX");
    d.kind = LengthKind::LogNormal;
    d.median = *median;
    d.sigma = *sigma;
    d.min = *lo;
    d.max = *hi;
    return d;
  }
  return fail(fmt::format("unknown distribution '{}'", parts[0]));
}

std::vector<Request> make_requests(const RequestSpec& spec) {
  // Two streams, so that a request's lengths do not depend on the arrival process: the same
  // seed gives the same prompts and answers offline, closed or at any rate.
  boost::random::mt19937_64 lengths(spec.seed);
  boost::random::mt19937_64 gaps(spec.seed ^ 0x9e3779b97f4a7c15ULL);
  std::vector<Request> out;
  out.reserve(spec.count);
  double t = 0;
  for (std::uint64_t i = 0; i < spec.count; ++i) {
    Request r;
    r.id = i;
    switch (spec.arrivals.kind) {
      case ArrivalKind::Offline:
      case ArrivalKind::Closed:
        r.arrival = 0;
        break;
      case ArrivalKind::Poisson:
        t += boost::random::exponential_distribution<double>(spec.arrivals.rate)(gaps);
        r.arrival = t;
        break;
      case ArrivalKind::Gamma: {
        // Gaps of mean 1 / rate and coefficient of variation cv: shape 1 / cv^2, scale
        // cv^2 / rate.
        const double shape = 1.0 / (spec.arrivals.cv * spec.arrivals.cv);
        const double scale = 1.0 / (spec.arrivals.rate * shape);
        t += boost::random::gamma_distribution<double>(shape, scale)(gaps);
        r.arrival = t;
        break;
      }
    }
    r.input = spec.shared_prefix + sample_length(spec.input, lengths);
    r.output = sample_length(spec.output, lengths);
    r.shared_prefix = spec.shared_prefix;
    out.push_back(r);
  }
  return out;
}

std::optional<std::vector<Request>> read_request_trace(const std::filesystem::path& file,
                                                       Diagnostics& diags) {
  std::string why;
  const std::optional<std::string> text = read_text_file(file, why);
  if (!text) {
    diags.error({file.string(), 0, 0}, "trace", why);
    return std::nullopt;
  }
  return parse_request_trace(*text, file.string(), diags);
}

std::optional<std::vector<Request>> parse_request_trace(std::string_view text,
                                                        const std::string& name,
                                                        Diagnostics& diags) {
  if (const auto problem = text_field_problem(text)) {
    // Where the offending byte is: the first that is not UTF-8, else the first control
    // character text_field_problem refuses.
    std::size_t offset = first_invalid_utf8(text).value_or(text.size());
    for (std::size_t i = 0; i < offset; ++i) {
      const auto c = static_cast<unsigned char>(text[i]);
      if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7F) {
        offset = i;
        break;
      }
    }
    const SourceLocation at = location_at(text, offset, name);
    diags.error(at, "trace", problem->message, problem->hint);
    return std::nullopt;
  }
  const std::size_t errors_before = diags.error_count();
  constexpr std::string_view kColumns[] = {"arrival_s", "input_tokens", "output_tokens"};
  std::size_t column[3] = {0, 0, 0};
  std::size_t pos = 0;
  int line = 1;
  std::vector<CsvCell> cells;
  const auto unterminated = [&](int at) {
    diags.error({name, at, 1}, "trace", "a quoted cell is not closed",
                "close the quote, or write the cell without quotes");
  };
  if (!split_csv_record(text, pos, line, cells)) {
    unterminated(1);
    return std::nullopt;
  }
  const std::size_t header_cells = cells.size();
  for (std::size_t k = 0; k < 3; ++k) {
    const auto it = std::find_if(cells.begin(), cells.end(),
                                 [&](const CsvCell& h) { return trim(h.text) == kColumns[k]; });
    if (it == cells.end()) {
      diags.error({name, 1, 1}, "header", fmt::format("no column '{}'", kColumns[k]),
                  "the first line names the columns: arrival_s,input_tokens,output_tokens "
                  "(seconds from the start, prompt tokens, tokens to generate)");
      continue;
    }
    column[k] = static_cast<std::size_t>(it - cells.begin());
  }
  if (diags.error_count() > errors_before) return std::nullopt;
  std::vector<Request> out;
  double last = 0;
  while (pos < text.size()) {
    const int line_no = line;
    if (!split_csv_record(text, pos, line, cells)) {
      unterminated(line_no);
      break;
    }
    if (cells.size() == 1 && trim(cells[0].text).empty()) continue;  // a blank line
    if (cells.size() != header_cells) {
      diags.error({name, line_no, 1}, fmt::format("row {}", line_no),
                  fmt::format("{} cells where the header has {}", cells.size(), header_cells),
                  "one value per column, separated by commas");
      continue;
    }
    const auto where = [&](std::size_t k) {
      return SourceLocation{name, line_no, cells[column[k]].column};
    };
    const auto path = [&](std::size_t k) {
      return fmt::format("row {}, column '{}'", line_no, kColumns[k]);
    };
    Request r;
    r.id = out.size();
    const std::string_view at = trim(cells[column[0]].text);
    const std::optional<double> arrival = parse_finite_double(at);
    if (!arrival || *arrival < 0) {
      diags.error(where(0), path(0), fmt::format("'{}' is not a time in seconds", at),
                  "a number of seconds from the start, at least 0, e.g. 0.25");
    } else if (*arrival < last) {
      diags.error(where(0), path(0),
                  fmt::format("{} comes before the previous row's {}", *arrival, last),
                  "sort the trace by arrival time");
    } else {
      r.arrival = last = *arrival;
    }
    for (std::size_t k = 1; k < 3; ++k) {
      const std::string_view cell = trim(cells[column[k]].text);
      const std::optional<std::uint64_t> v = parse_whole_uint(cell);
      if (!v || *v < 1 || *v > kMaxTokens) {
        diags.error(where(k), path(k), fmt::format("'{}' is not a token count", cell),
                    "a whole number of tokens from 1 to 16777216");
        continue;
      }
      (k == 1 ? r.input : r.output) = *v;
    }
    out.push_back(r);
  }
  if (diags.error_count() > errors_before) return std::nullopt;
  if (out.empty()) {
    diags.error({name, 1, 1}, "trace", "the trace has no requests",
                "one row per request after the header");
    return std::nullopt;
  }
  return out;
}

}  // namespace coda::sim::serving
