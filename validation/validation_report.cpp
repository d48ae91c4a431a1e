#include "validation/validation_report.h"

#include <algorithm>
#include <cmath>
#include <string_view>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/text.h"
#include "core/version.h"

namespace coda::validation {
namespace {

using Json = nlohmann::ordered_json;

std::string us(double seconds) { return fmt::format("{:.2f}", seconds * 1e6); }
std::string pct(double fraction) {
  return std::isnan(fraction) ? std::string("-") : fmt::format("{:+.1f}%", fraction * 100);
}
std::string plain_pct(double fraction) {
  return std::isnan(fraction) ? std::string("-") : fmt::format("{:.1f}%", fraction * 100);
}
std::string rho(double v) { return std::isnan(v) ? std::string("-") : fmt::format("{:.3f}", v); }

std::string shape_of(const Measurement& m) {
  const std::string s = shape_text(info(m.kernel).shape, m.shape);
  return s.empty() ? std::string("-") : s;
}

std::string classes_text(const ComparedRow& r) {
  std::string out;
  for (const CaseClass c : r.classes) out += (out.empty() ? "" : "+") + std::string(to_string(c));
  return out;
}

// JSON number or null (NaN is not JSON).
Json number(double v) { return std::isnan(v) ? Json(nullptr) : Json(v); }

Json stats_json(const ErrorStats& s, const ValidationReport& report) {
  Json j;
  j["count"] = s.count;
  j["mape"] = number(s.mape);
  j["spearman"] = number(s.spearman);
  if (s.count > 0) {
    j["worst_row"] = report.rows[s.worst].row;
    j["worst_kernel"] = std::string(info(report.rows[s.worst].measurement.kernel).name);
    j["worst_error"] = number(s.worst_error);
  }
  return j;
}

Json prediction_json(const Prediction& p) {
  Json j;
  j["seconds"] = p.seconds;
  j["us"] = p.seconds * 1e6;
  j["bound"] = std::string(to_string(p.bound));
  j["model"] = p.model;
  j["parts"] = Json::array();
  for (const PredictedPart& part : p.parts) {
    Json pj;
    pj["name"] = part.name;
    pj["unit"] = part.unit;
    pj["seconds"] = part.seconds;
    pj["compute_seconds"] = part.compute_seconds;
    pj["dram_bytes"] = part.dram_bytes;
    pj["bound"] = std::string(to_string(part.bound));
    Json mapping = Json::object();
    for (const auto& [key, value] : part.mapping) mapping[key] = value;
    pj["mapping"] = std::move(mapping);
    j["parts"].push_back(std::move(pj));
  }
  return j;
}

std::string worst_text(const ErrorStats& s, const ValidationReport& report) {
  if (s.count == 0) return "-";
  const ComparedRow& r = report.rows[s.worst];
  return fmt::format("row {} {} ({})", r.row, info(r.measurement.kernel).name, pct(s.worst_error));
}

// One summary line per group: "gemm  3 rows  MAPE 12.3%  Spearman 0.900  worst row 2 ...".
std::string group_line(std::string_view name, const ErrorStats& s, const ValidationReport& report,
                       std::size_t width) {
  return fmt::format("  {:<{}}  {:>3} compared  MAPE {:>7}  Spearman {:>6}  worst {}\n", name,
                     width, s.count, plain_pct(s.mape), rho(s.spearman), worst_text(s, report));
}

std::string groups_text(const std::vector<GroupStats>& groups, const ValidationReport& report,
                        bool calibrated) {
  std::size_t width = 8;
  for (const GroupStats& g : groups) width = std::max(width, g.name.size());
  std::string out;
  for (const GroupStats& g : groups) {
    out += group_line(g.name, g.stats, report, width);
    if (calibrated) out += group_line("  fitted", g.calibrated, report, width);
  }
  return out;
}

std::string knob_value(const FittedKnob& k, double v) {
  return k.seconds ? fmt::format("{:.4g} us", v * 1e6) : fmt::format("{:.4g}", v);
}

}  // namespace

std::string report_text(const ValidationReport& report, const ReportInputs& inputs) {
  const bool calibrated = report.calibration.has_value();
  std::string out = fmt::format("coda validate: {} on {} ({})\n\n", inputs.measurements,
                                report.arch_name, inputs.arch);
  out += fmt::format("{:>4}  {:<20} {:<5} {:<44} {:>11} {:>11} {:>8}  {:<7}", "row", "kernel",
                     "dtype", "shape", "measured us", "coda us", "error", "bound");
  if (calibrated) out += fmt::format(" {:>11} {:>8}", "fitted us", "error");
  out += "\n";
  std::size_t skipped = 0;
  for (const ComparedRow& r : report.rows) {
    if (!r.prediction) {
      ++skipped;
      continue;
    }
    const Measurement& m = r.measurement;
    out += fmt::format("{:>4}  {:<20} {:<5} {:<44} {:>11} {:>11} {:>8}  {:<7}", r.row,
                       info(m.kernel).name, dtype_name(m.dtype), shape_of(m),
                       fmt::format("{:.2f}", m.median_us), us(r.prediction->seconds),
                       pct(r.error), to_string(r.prediction->bound));
    if (calibrated && r.calibrated)
      out += fmt::format(" {:>11} {:>8}", us(r.calibrated->seconds), pct(r.calibrated_error));
    out += r.in_subset ? "  (fit)\n" : "\n";
  }
  if (skipped > 0) {
    out += fmt::format("\nskipped ({} row{}, not compared):\n", skipped, skipped == 1 ? "" : "s");
    for (const ComparedRow& r : report.rows)
      if (!r.prediction)
        out += fmt::format("{:>4}  {:<20} {:<5} {}\n", r.row, info(r.measurement.kernel).name,
                           dtype_name(r.measurement.dtype), r.skipped);
  }
  out += "\nerror (coda - measured) / measured, by class";
  out += calibrated ? " (\"fitted\": with the fitted knobs):\n" : ":\n";
  out += group_line("all", report.overall, report, 8);
  out += groups_text(report.by_class, report, calibrated);
  out += "\nby source:\n";
  out += groups_text(report.by_source, report, calibrated);
  if (calibrated) {
    const CalibrationResult& c = *report.calibration;
    std::string subset;
    for (const std::string& s : c.subset) subset += (subset.empty() ? "" : ",") + s;
    out += fmt::format("\ncalibration on {} ({} Gauss-Newton step{}):\n", subset, c.iterations,
                       c.iterations == 1 ? "" : "s");
    for (const FittedKnob& k : c.knobs)
      out += fmt::format("  {:<26} {:>12} -> {:>12}{}\n", k.name, knob_value(k, k.before),
                         knob_value(k, k.fitted), k.at_limit ? "  (held at its limit)" : "");
    const auto line = [&](std::string_view what, const ErrorStats& before,
                          const ErrorStats& after) {
      return fmt::format("  {:<9} {:>3} rows  MAPE {:>7} -> {:>7}  Spearman {:>6} -> {:>6}\n",
                         what, after.count, plain_pct(before.mape), plain_pct(after.mape),
                         rho(before.spearman), rho(after.spearman));
    };
    out += line("subset", c.subset_before, c.subset_after);
    out += line("held out", c.held_out_before, c.held_out_after);
    for (const std::string& note : c.notes) out += fmt::format("  note: {}\n", note);
  }
  return out;
}

std::string report_json(const ValidationReport& report, const ReportInputs& inputs) {
  Json j;
  j["coda_version"] = std::string(kVersion);
  j["measurements"] = inputs.measurements;
  j["arch"] = {{"name", report.arch_name}, {"path", inputs.arch}, {"hash", inputs.arch_hash}};
  j["error_definition"] = "(predicted - measured) / measured";
  j["rows"] = Json::array();
  for (const ComparedRow& r : report.rows) {
    const Measurement& m = r.measurement;
    Json row;
    row["row"] = r.row;
    row["kernel"] = std::string(info(m.kernel).name);
    row["dtype"] = std::string(dtype_name(m.dtype));
    row["shape"] = shape_text(info(m.kernel).shape, m.shape);
    row["source"] = m.source;
    row["classes"] = Json::array();
    for (const CaseClass c : r.classes) row["classes"].push_back(std::string(to_string(c)));
    row["status"] = r.prediction ? "compared" : "skipped";
    if (!r.skipped.empty()) row["skipped"] = r.skipped;
    row["inputs"] = {{"median_us", number(m.median_us)},
                     {"min_us", number(m.min_us)},
                     {"max_us", number(m.max_us)},
                     {"repetitions", m.repetitions},
                     {"operations", m.operations},
                     {"bytes", m.bytes},
                     {"passed", m.checked ? Json(m.passed) : Json(nullptr)},
                     {"tiling", m.tiling},
                     {"device", m.device.name},
                     {"date", m.date},
                     {"note", m.note}};
    if (r.prediction) {
      row["prediction"] = prediction_json(*r.prediction);
      row["error"] = number(r.error);
    }
    if (r.calibrated) {
      row["calibrated"] = prediction_json(*r.calibrated);
      row["calibrated_error"] = number(r.calibrated_error);
    }
    row["in_calibration_subset"] = r.in_subset;
    j["rows"].push_back(std::move(row));
  }
  Json summary;
  summary["overall"] = stats_json(report.overall, report);
  const auto groups = [&](const std::vector<GroupStats>& list) {
    Json out = Json::array();
    for (const GroupStats& g : list) {
      Json gj;
      gj["name"] = g.name;
      if (!g.description.empty()) gj["description"] = g.description;
      gj["rows"] = Json::array();
      for (const std::size_t i : g.rows) gj["rows"].push_back(report.rows[i].row);
      gj["stats"] = stats_json(g.stats, report);
      if (report.calibration) gj["calibrated"] = stats_json(g.calibrated, report);
      out.push_back(std::move(gj));
    }
    return out;
  };
  summary["by_class"] = groups(report.by_class);
  summary["by_source"] = groups(report.by_source);
  j["summary"] = std::move(summary);
  if (report.calibration) {
    const CalibrationResult& c = *report.calibration;
    Json cj;
    cj["subset"] = c.subset;
    cj["method"] = "least squares on relative errors (Gauss-Newton, finite differences) over "
                   "launch overhead, 1 / compute fraction, 1 / DRAM fraction";
    cj["iterations"] = c.iterations;
    cj["knobs"] = Json::array();
    for (const FittedKnob& k : c.knobs)
      cj["knobs"].push_back({{"name", k.name},
                             {"unit", k.seconds ? "s" : "fraction"},
                             {"before", k.before},
                             {"fitted", k.fitted},
                             {"at_limit", k.at_limit}});
    cj["subset_before"] = stats_json(c.subset_before, report);
    cj["subset_after"] = stats_json(c.subset_after, report);
    cj["held_out_before"] = stats_json(c.held_out_before, report);
    cj["held_out_after"] = stats_json(c.held_out_after, report);
    cj["notes"] = c.notes;
    j["calibration"] = std::move(cj);
  }
  return dump_json(j, 2) + "\n";
}

std::string report_csv(const ValidationReport& report) {
  const auto cell = [](const std::string& text) {
    if (text.find_first_of(",\"\n") == std::string::npos) return text;
    std::string quoted = "\"";
    for (const char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
    return quoted + "\"";
  };
  const auto num = [](double v) { return std::isnan(v) ? std::string{} : fmt::format("{}", v); };
  std::string out =
      "row,kernel,dtype,shape,source,classes,status,measured_us,predicted_us,error,bound,"
      "in_calibration_subset,calibrated_us,calibrated_error,skipped\n";
  for (const ComparedRow& r : report.rows) {
    const Measurement& m = r.measurement;
    out += fmt::format(
        "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", r.row, info(m.kernel).name,
        dtype_name(m.dtype), cell(shape_text(info(m.kernel).shape, m.shape)), cell(m.source),
        classes_text(r), r.prediction ? "compared" : "skipped", num(m.median_us),
        r.prediction ? num(r.prediction->seconds * 1e6) : std::string{}, num(r.error),
        r.prediction ? std::string(to_string(r.prediction->bound)) : std::string{},
        r.in_subset ? "true" : "false",
        r.calibrated ? num(r.calibrated->seconds * 1e6) : std::string{}, num(r.calibrated_error),
        cell(r.skipped));
  }
  return out;
}

std::string report_markdown(const ValidationReport& report, const ReportInputs& inputs) {
  const bool calibrated = report.calibration.has_value();
  std::string out = fmt::format("# coda validate: {} on {}\n\n", inputs.measurements,
                                report.arch_name);
  out += fmt::format("Arch `{}` (content hash {}), coda {}. Error = (coda - measured) / measured."
                     "\n\n",
                     inputs.arch, inputs.arch_hash, kVersion);
  out += "| row | kernel | dtype | shape | source | measured us | coda us | error | bound |";
  out += calibrated ? " fitted us | error |\n" : "\n";
  out += calibrated ? "|---|---|---|---|---|---|---|---|---|---|---|\n"
                    : "|---|---|---|---|---|---|---|---|---|\n";
  for (const ComparedRow& r : report.rows) {
    if (!r.prediction) continue;
    const Measurement& m = r.measurement;
    out += fmt::format("| {} | {} | {} | {} | {} | {:.2f} | {} | {} | {} |", r.row,
                       info(m.kernel).name, dtype_name(m.dtype), shape_of(m), m.source,
                       m.median_us, us(r.prediction->seconds), pct(r.error),
                       to_string(r.prediction->bound));
    if (calibrated && r.calibrated)
      out += fmt::format(" {} | {} |", us(r.calibrated->seconds), pct(r.calibrated_error));
    out += "\n";
  }
  out += "\n## Skipped rows\n\n";
  bool any = false;
  for (const ComparedRow& r : report.rows) {
    if (r.prediction) continue;
    any = true;
    out += fmt::format("- row {} `{}` {}: {}\n", r.row, info(r.measurement.kernel).name,
                       dtype_name(r.measurement.dtype), r.skipped);
  }
  if (!any) out += "None.\n";
  const auto table = [&](const std::vector<GroupStats>& groups, std::string_view title) {
    std::string t = fmt::format("\n## By {}\n\n| {} | compared | MAPE | Spearman | worst |{}\n",
                                title, title, calibrated ? " fitted MAPE | fitted Spearman |" : "");
    t += calibrated ? "|---|---|---|---|---|---|---|\n" : "|---|---|---|---|---|\n";
    for (const GroupStats& g : groups) {
      t += fmt::format("| {} | {} | {} | {} | {} |", g.name, g.stats.count,
                       plain_pct(g.stats.mape), rho(g.stats.spearman),
                       worst_text(g.stats, report));
      if (calibrated)
        t += fmt::format(" {} | {} |", plain_pct(g.calibrated.mape), rho(g.calibrated.spearman));
      t += "\n";
    }
    return t;
  };
  out += fmt::format("\nAll compared rows: {} , MAPE {}, Spearman {}, worst {}.\n",
                     report.overall.count, plain_pct(report.overall.mape),
                     rho(report.overall.spearman), worst_text(report.overall, report));
  out += table(report.by_class, "class");
  out += table(report.by_source, "source");
  if (calibrated) {
    const CalibrationResult& c = *report.calibration;
    out += "\n## Calibration\n\n| knob | before | fitted |\n|---|---|---|\n";
    for (const FittedKnob& k : c.knobs)
      out += fmt::format("| {} | {} | {}{} |\n", k.name, knob_value(k, k.before),
                         knob_value(k, k.fitted), k.at_limit ? " (held at its limit)" : "");
    out += fmt::format("\nSubset: {} rows, MAPE {} -> {}. Held out: {} rows, MAPE {} -> {}.\n",
                       c.subset_after.count, plain_pct(c.subset_before.mape),
                       plain_pct(c.subset_after.mape), c.held_out_after.count,
                       plain_pct(c.held_out_before.mape), plain_pct(c.held_out_after.mape));
    for (const std::string& note : c.notes) out += fmt::format("\nNote: {}\n", note);
  }
  return out;
}

std::string calibration_yaml(const ValidationReport& report, const ReportInputs& inputs,
                             const std::string& extends_path) {
  const CalibrationResult& c = report.calibration.value();
  std::string subset;
  for (const std::string& s : c.subset) subset += (subset.empty() ? "" : ",") + s;
  std::string out = fmt::format(
      "# Written by coda {}: coda validate --measurements {} --arch {} --calibrate-on {}\n"
      "# Fitted on {} rows (MAPE {} -> {}); held out {} rows (MAPE {} -> {}).\n"
      "# Use it as the arch (--arch this file) or name it in another arch's extends:.\n",
      kVersion, inputs.measurements, inputs.arch, subset, c.subset_after.count,
      plain_pct(c.subset_before.mape), plain_pct(c.subset_after.mape), c.held_out_after.count,
      plain_pct(c.held_out_before.mape), plain_pct(c.held_out_after.mape));
  arch::CalibrationSpec fitted = c.fitted;
  fitted.source = fmt::format("coda validate --calibrate-on {} on {}", subset, inputs.measurements);
  out += fmt::format("extends: {}\n{}", extends_path, arch::calibration_yaml(fitted));
  return out;
}

}  // namespace coda::validation
