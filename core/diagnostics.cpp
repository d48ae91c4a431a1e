#include "core/diagnostics.h"

#include <fmt/format.h>

namespace coda {

SourceLocation location_at(std::string_view text, std::size_t offset, std::string file) {
  int line = 1, column = 1;
  for (std::size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return {std::move(file), line, column};
}

std::string format(const Diagnostic& d) {
  std::string out;
  if (!d.where.file.empty()) {
    out += d.where.file;
    if (d.where.line > 0) {
      out += fmt::format(":{}", d.where.line);
      if (d.where.column > 0) out += fmt::format(":{}", d.where.column);
    }
    out += ": ";
  }
  out += d.severity == Severity::Error ? "error: " : "warning: ";
  if (!d.path.empty()) out += d.path + ": ";
  out += d.message;
  if (!d.hint.empty()) out += "; " + d.hint;
  return out;
}

void Diagnostics::error(SourceLocation where, std::string path, std::string message,
                        std::string hint) {
  diagnostics_.push_back(
      {Severity::Error, std::move(where), std::move(path), std::move(message), std::move(hint)});
  ++errors_;
}

void Diagnostics::warning(SourceLocation where, std::string path, std::string message,
                          std::string hint) {
  diagnostics_.push_back(
      {Severity::Warning, std::move(where), std::move(path), std::move(message), std::move(hint)});
}

void Diagnostics::append(const Diagnostics& other) {
  diagnostics_.insert(diagnostics_.end(), other.diagnostics_.begin(), other.diagnostics_.end());
  errors_ += other.errors_;
}

std::string Diagnostics::format_all() const {
  std::string out;
  for (const Diagnostic& d : diagnostics_) out += format(d) + "\n";
  const std::size_t warnings = diagnostics_.size() - errors_;
  if (errors_ > 0) out += fmt::format("{} error{}", errors_, errors_ == 1 ? "" : "s");
  if (warnings > 0)
    out += fmt::format("{}{} warning{}", errors_ > 0 ? ", " : "", warnings,
                       warnings == 1 ? "" : "s");
  if (!diagnostics_.empty()) out += "\n";
  return out;
}

ConfigError::ConfigError(Diagnostics diagnostics)
    : std::runtime_error(diagnostics.format_all()), diagnostics_(std::move(diagnostics)) {}

}  // namespace coda
