#pragma once
// Sensitivity of an objective to a sweep axis: the elasticity d ln(objective) / d ln(axis value),
// fitted by least squares over the points that differ only in that axis.

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace coda::reports {

// One design point for the fit: its axis values as written (to group points) and as numbers,
// and the objective's value.
struct SensitivityPoint {
  std::vector<std::string> values;  // one per axis
  std::vector<double> numbers;      // one per axis; not finite or <= 0: not usable on a log scale
  double objective = 0;             // <= 0 or not finite: the point is left out
};

struct Elasticity {
  std::optional<double> slope;  // nullopt when no two usable points differ only in the axis
  std::size_t groups = 0;       // groups of points (equal on every other axis) that contributed
  std::size_t points = 0;       // points in those groups
};

// Points are grouped by their values on every axis but `axis`; within a group, x = ln(axis
// value) and y = ln(objective) are centred on the group's means, and the slope is the pooled
// least-squares fit through the origin: sum (x - mean_x)(y - mean_y) / sum (x - mean_x)^2 over
// every group with at least two distinct x. On a full grid this is the average effect of the
// axis with the others held fixed: +1 means the objective doubles when the axis value doubles.
Elasticity elasticity(std::span<const SensitivityPoint> points, std::size_t axis);

// The number an axis value stands for: a plain number, a size ("1 MiB" -> 1048576), a
// bandwidth per second or per cycle (bytes), or a frequency (Hz); nullopt for anything else.
std::optional<double> axis_number(std::string_view text);

}  // namespace coda::reports
