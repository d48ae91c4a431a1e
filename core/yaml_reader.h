#pragma once
// Reading YAML configs with locations, `extends:` and typo detection.
//
// YamlDocument::load reads a file, follows its `extends:` chain (paths relative to the file that
// names them; cycles and missing files are diagnostics) and deep-merges it: maps merge key by key,
// the extending file's keys win, sequences and scalars are replaced whole. Every node keeps the
// file, line and column it came from, so an error in an inherited value points at the preset.
//
// YamlReader is a view of one node with its YAML path ("arch.sram.ifmap"). It reads typed values
// (strings, numbers, booleans, unit strings such as "256 KiB"), remembers which keys were asked
// for, and reject_unknown_keys() reports every other key with a did-you-mean. Nothing here throws
// on bad input: every problem becomes a Diagnostic.

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "core/diagnostics.h"
#include "core/enum_table.h"
#include "core/units.h"

namespace coda {

// Which file each key of a merged map came from. Subtrees that were not merged have no entry and
// share their parent's file.
struct YamlOrigin {
  std::string file;
  YAML::Mark mark;      // where the map stands in `file`, for nodes the merge created
  YAML::Mark key_mark;  // where the key naming this value stands in `file`
  std::map<std::string, YamlOrigin, std::less<>> keys;
};

class YamlReader;

class YamlDocument {
 public:
  // Reads `file` and its `extends:` chain. nullopt when the file cannot be read or parsed; the
  // reason is in `diags`. `extends:` is removed from the merged result.
  static std::optional<YamlDocument> load(const std::filesystem::path& file, Diagnostics& diags);
  // Parses text that did not come from a file (tests, stdin). `name` is used in locations;
  // `extends:` paths resolve against the current directory.
  static std::optional<YamlDocument> parse(std::string_view text, std::string name,
                                           Diagnostics& diags);

  YamlReader root() const;
  const std::string& file() const { return origin_.file; }
  // The files read, the named one first and then each preset it extends.
  const std::vector<std::string>& files() const { return files_; }
  // FNV-1a 64 of the merged document in canonical YAML: equal for equal content, whatever the
  // formatting, comments or preset layout.
  std::uint64_t content_hash() const;
  // A deep copy: editing the copy's nodes leaves this document alone (YAML::Node is a handle).
  YamlDocument clone() const;
  // The merged document as YAML text (extends: resolved, comments gone).
  std::string text() const;

 private:
  YamlDocument(const YAML::Node& root, YamlOrigin origin, std::vector<std::string> files)
      : root_(root), origin_(std::move(origin)), files_(std::move(files)) {}
  YAML::Node root_;
  YamlOrigin origin_;
  std::vector<std::string> files_;
};

class YamlReader {
 public:
  YamlReader(const YAML::Node& node, std::string path, const YamlOrigin* origin, std::string file);

  const std::string& path() const { return path_; }
  SourceLocation location() const;
  bool is_map() const { return node_.IsMap(); }
  bool is_sequence() const { return node_.IsSequence(); }
  bool is_scalar() const { return node_.IsScalar(); }
  bool is_null() const { return !node_.IsDefined() || node_.IsNull(); }
  const YAML::Node& node() const { return node_; }

  // Reports an error unless this node is a map (or a sequence). Returns whether it is.
  bool expect_map(Diagnostics& diags) const;
  bool expect_sequence(Diagnostics& diags) const;

  // Whether a key is present. Records the key as known.
  bool has(std::string_view key) const;
  // The reader for a key's value; the key need not exist (then is_null()). Records it as known.
  YamlReader at(std::string_view key) const;
  // The readers for a sequence's items, "path[i]".
  std::vector<YamlReader> items() const;
  // The keys of a map, in file order.
  std::vector<std::string> keys() const;

  // Reads a key's value into `out`. required(): a missing key is an error. optional(): a missing
  // key leaves `out` as it was. Both return true when a value was read without error.
  template <class T>
  bool required(std::string_view key, T& out, Diagnostics& diags) const {
    if (!has(key)) {
      diags.error(location(), path_, fmt_missing(key));
      return false;
    }
    return at(key).read(out, diags);
  }
  template <class T>
  bool optional(std::string_view key, T& out, Diagnostics& diags) const {
    return has(key) ? at(key).read(out, diags) : false;
  }

  template <class E>
  bool required_enum(std::string_view key, E& out, EnumTable<E> table, Diagnostics& diags) const {
    if (!has(key)) {
      diags.error(location(), path_, fmt_missing(key));
      return false;
    }
    return at(key).read_enum(out, table, diags);
  }
  template <class E>
  bool optional_enum(std::string_view key, E& out, EnumTable<E> table, Diagnostics& diags) const {
    return has(key) ? at(key).read_enum(out, table, diags) : false;
  }

  // This node's own value.
  bool read(std::string& out, Diagnostics& diags) const;
  bool read(bool& out, Diagnostics& diags) const;
  bool read(std::uint32_t& out, Diagnostics& diags) const;
  bool read(std::uint64_t& out, Diagnostics& diags) const;
  bool read(std::int64_t& out, Diagnostics& diags) const;
  bool read(double& out, Diagnostics& diags) const;
  bool read(Bytes& out, Diagnostics& diags) const;
  bool read(Hertz& out, Diagnostics& diags) const;
  bool read(Seconds& out, Diagnostics& diags) const;
  bool read(Bandwidth& out, Diagnostics& diags) const;
  bool read(Joules& out, Diagnostics& diags) const;
  bool read(Watts& out, Diagnostics& diags) const;
  bool read(SquareMillimetres& out, Diagnostics& diags) const;
  bool read(Latency& out, Diagnostics& diags) const;
  template <class E>
  bool read_enum(E& out, EnumTable<E> table, Diagnostics& diags) const {
    std::string text;
    if (!read(text, diags)) return false;
    for (const auto& [name, value] : table) {
      if (name == text) {
        out = value;
        return true;
      }
    }
    std::vector<std::string_view> names;
    for (const auto& entry : table) names.push_back(entry.first);
    report_bad_choice(text, names, diags);
    return false;
  }

  // Every key of this map that was not asked for is an error, with a did-you-mean when a known
  // key is close. Call after reading all the keys a spec has.
  void reject_unknown_keys(Diagnostics& diags) const;

 private:
  std::string fmt_missing(std::string_view key) const;
  bool scalar_text(std::string& out, std::string_view what, std::string_view example,
                   Diagnostics& diags) const;
  void report_bad_choice(const std::string& text, std::span<const std::string_view> names,
                         Diagnostics& diags) const;
  std::string child_path(std::string_view key) const;

  YAML::Node node_;
  std::string path_;
  const YamlOrigin* origin_;  // null when this subtree was not merged
  std::string file_;
  std::shared_ptr<std::vector<std::string>> known_keys_;  // shared by copies of this reader
};

// The closest candidate to `word` by edit distance, if it is close enough to be a likely typo.
std::optional<std::string_view> did_you_mean(std::string_view word,
                                             std::span<const std::string_view> candidates);

}  // namespace coda
