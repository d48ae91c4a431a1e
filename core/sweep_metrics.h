#pragma once
// The metrics a sweep row carries (docs/sweeps.md, "Metrics"), in export order: one table that the
// sweep's exports (dse/: results.csv's columns and results.json's "metrics"), the spec's objective
// names (dse/sweep_spec.cpp) and the report's reader (reports/stored_results.cpp) all follow, so a
// metric is named, united and ordered in one place. The first six are the objectives a spec may
// name, in dse::SweepObjective's order.

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>

#include "core/enum_table.h"

namespace coda::results {

// What became of one point x workload: ok (run; its verdicts say whether it is feasible),
// infeasible (the design cannot run the workload: an invalid arch, an op no unit runs; the
// diagnostics are the reason) or error (coda itself failed: an internal error, a bug to report,
// never counted as a design that does not fit). The sweep (dse/) writes it, the report reads it.
enum class RowStatus : std::uint8_t { Ok, Infeasible, Error };

inline constexpr std::array<std::pair<std::string_view, RowStatus>, 3> kRowStatuses{
    {{"ok", RowStatus::Ok}, {"infeasible", RowStatus::Infeasible}, {"error", RowStatus::Error}}};

// "ok", "infeasible", "error"
inline std::string_view to_string(RowStatus status) { return enum_name(kRowStatuses, status); }
inline std::optional<RowStatus> parse_row_status(std::string_view text) {
  return enum_value(kRowStatuses, text);
}

struct SweepMetricInfo {
  std::string_view key;        // results.csv's column and results.json's "metrics" key
  std::string_view objective;  // the spec's name for it as an objective; empty: not one
  std::string_view unit;       // for tables and charts
  bool minimised = true;       // smaller is better
  std::string_view label;      // what a chart's axis calls it, in words
};

inline constexpr std::array<SweepMetricInfo, 8> kSweepMetrics{{
    {"latency_s", "latency", "s", true, "latency"},
    {"throughput_per_s", "throughput", "1/s", false, "throughput"},
    {"energy_j", "energy", "J", true, "energy"},
    {"edp_js", "edp", "J s", true, "energy-delay product"},
    {"perf_per_watt_tops_per_w", "perf_per_watt", "TOPS/W", false, "performance per watt"},
    {"perf_per_mm2_tops_per_mm2", "perf_per_mm2", "TOPS/mm2", false, "performance per mm2"},
    {"area_mm2", "", "mm2", true, "area"},
    {"power_w", "", "W", true, "power"},
}};
inline constexpr std::size_t kSweepObjectiveCount = 6;  // the first six are objectives

}  // namespace coda::results
