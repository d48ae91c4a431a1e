#pragma once
// Renders a ValidationReport (validation/compare.h) as text: the terminal table, validation.json
// (every number with what it came from: the row, its inputs, the prediction's parts), a flat
// validation.csv, validation.md, and the fitted knobs as an arch YAML that extends the arch given.
// Pure: returns strings, writes nothing.

#include <string>

#include "validation/compare.h"

namespace coda::validation {

// What the report was made from, for its provenance.
struct ReportInputs {
  std::string measurements;  // the CSV's path as given
  std::string arch;          // the arch YAML's path as given
  std::string arch_hash;     // 16 hex digits of its merged content
};

std::string report_text(const ValidationReport& report, const ReportInputs& inputs);
std::string report_json(const ValidationReport& report, const ReportInputs& inputs);
std::string report_csv(const ValidationReport& report);
std::string report_markdown(const ValidationReport& report, const ReportInputs& inputs);

// An arch YAML that extends `extends_path` (written as given: make it relative to where the
// file will be) and sets `calibration:` to the fitted knobs, with where they came from.
// Precondition: report.calibration is set.
std::string calibration_yaml(const ValidationReport& report, const ReportInputs& inputs,
                             const std::string& extends_path);

}  // namespace coda::validation
