#pragma once
// Diagnostics: every problem found in user input, with where it is (file:line:col and the YAML or
// CSV path) and what would be valid. Readers collect all of them before stopping, so a user fixes
// every mistake in one round; callers then throw ConfigError or print them in compiler format:
//
//   configs/arch/npu.yaml:14:5: error: arch.sram.ifmap.size: unknown key (did you mean 'sizes'?)

#include <concepts>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace coda {

// 1-based line and column; 0 means unknown (the whole file, or input that is not from a file).
struct SourceLocation {
  std::string file;
  int line = 0;
  int column = 0;
  friend bool operator==(const SourceLocation&, const SourceLocation&) = default;
};

// The 1-based line and column of the byte at 0-based `offset` in `text` (clamped to its end):
// for readers that get byte offsets, such as JSON parsers.
SourceLocation location_at(std::string_view text, std::size_t offset, std::string file);

enum class Severity { Error, Warning };

struct Diagnostic {
  Severity severity = Severity::Error;
  SourceLocation where;
  std::string path;     // "arch.sram.ifmap.size", "layers[3].stride", "row 7, column 'Strides'"
  std::string message;  // what is wrong
  std::string hint;     // what would be valid; may be empty
};

// "file:line:col: error: path: message; hint"
std::string format(const Diagnostic& diagnostic);

// A config node a diagnostic can point at: where it is and its dotted path (a YamlReader).
template <class Node>
concept ConfigNode = requires(const Node& n) {
  { n.location() } -> std::convertible_to<SourceLocation>;
  { n.path() } -> std::convertible_to<std::string>;
};

class Diagnostics {
 public:
  void error(SourceLocation where, std::string path, std::string message, std::string hint = {});
  void warning(SourceLocation where, std::string path, std::string message,
               std::string hint = {});
  // The same at a config node (a YamlReader, or anything with location() and path()), named
  // once: diags.error(item.at("stride"), "must be at least 1", "e.g. 1").
  template <ConfigNode Node>
  void error(const Node& node, std::string message, std::string hint = {}) {
    error(node.location(), node.path(), std::move(message), std::move(hint));
  }
  template <ConfigNode Node>
  void warning(const Node& node, std::string message, std::string hint = {}) {
    warning(node.location(), node.path(), std::move(message), std::move(hint));
  }

  std::size_t error_count() const { return errors_; }
  bool has_errors() const { return errors_ > 0; }
  const std::vector<Diagnostic>& all() const { return diagnostics_; }
  void append(const Diagnostics& other);

  // Every diagnostic, one per line, then a summary line such as "2 errors".
  std::string format_all() const;

 private:
  std::vector<Diagnostic> diagnostics_;
  std::size_t errors_ = 0;
};

// Thrown by the convenience loaders when input had errors; carries every diagnostic.
class ConfigError : public std::runtime_error {
 public:
  explicit ConfigError(Diagnostics diagnostics);
  const Diagnostics& diagnostics() const { return diagnostics_; }

 private:
  Diagnostics diagnostics_;
};

}  // namespace coda
