#include "reports/sensitivity.h"

#include <charconv>
#include <cmath>
#include <map>
#include <variant>

#include "core/units.h"

namespace coda::reports {

Elasticity elasticity(std::span<const SensitivityPoint> points, std::size_t axis) {
  // Group key: every value but the axis's, joined by a separator no value contains.
  std::map<std::string, std::vector<std::pair<double, double>>> groups;
  for (const SensitivityPoint& p : points) {
    if (axis >= p.numbers.size() || !std::isfinite(p.numbers[axis]) || p.numbers[axis] <= 0 ||
        !std::isfinite(p.objective) || p.objective <= 0)
      continue;
    std::string key;
    for (std::size_t a = 0; a < p.values.size(); ++a)
      if (a != axis) key += p.values[a] + '\x1f';
    groups[key].emplace_back(std::log(p.numbers[axis]), std::log(p.objective));
  }
  Elasticity out;
  double sxy = 0, sxx = 0;
  for (const auto& [key, xy] : groups) {
    double mean_x = 0, mean_y = 0;
    for (const auto& [x, y] : xy) {
      mean_x += x;
      mean_y += y;
    }
    mean_x /= static_cast<double>(xy.size());
    mean_y /= static_cast<double>(xy.size());
    double gxx = 0, gxy = 0;
    for (const auto& [x, y] : xy) {
      gxx += (x - mean_x) * (x - mean_x);
      gxy += (x - mean_x) * (y - mean_y);
    }
    if (gxx <= 0) continue;  // every point of the group has the same axis value
    sxx += gxx;
    sxy += gxy;
    ++out.groups;
    out.points += xy.size();
  }
  if (sxx > 0) out.slope = sxy / sxx;
  return out;
}

std::optional<double> axis_number(std::string_view text) {
  double number = 0;
  const char* end = text.data() + text.size();
  if (const auto [ptr, ec] = std::from_chars(text.data(), end, number);
      ec == std::errc() && ptr == end)
    return number;
  std::string why;
  if (const auto bytes = parse_bytes(text, why)) return static_cast<double>(bytes->value);
  if (const auto bandwidth = parse_bandwidth(text, why))
    return std::visit([](const auto& b) { return static_cast<double>(b.value); }, *bandwidth);
  if (const auto hertz = parse_frequency(text, why)) return hertz->value;
  return std::nullopt;
}

}  // namespace coda::reports
