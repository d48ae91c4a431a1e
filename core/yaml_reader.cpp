#include "core/yaml_reader.h"

#include "core/hash.h"
#include "core/text.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include <fmt/format.h>

namespace coda {
namespace {

// A node without a mark (the root of an empty document, which yaml-cpp gives no position) is
// reported at the start of its file: every diagnostic about a file's text has a line.
SourceLocation location_of(const std::string& file, const YAML::Mark& mark) {
  if (mark.is_null()) return {file, 1, 1};
  return {file, mark.line + 1, mark.column + 1};
}

// Deep merge: maps merge key by key with `over` winning; anything else is replaced whole.
YAML::Node merge(const YAML::Node& base, const YamlOrigin& base_origin, const YAML::Node& over,
                 const YamlOrigin& over_origin, YamlOrigin& merged_origin) {
  if (!base.IsMap() || !over.IsMap()) {
    merged_origin = over_origin;
    return over;
  }
  YAML::Node merged(YAML::NodeType::Map);
  merged_origin = YamlOrigin{over_origin.file, over.Mark(), over_origin.key_mark, {}};
  auto origin_for = [](const YamlOrigin& parent, const YAML::Node& key_node) {
    const auto it = parent.keys.find(key_node.Scalar());
    YamlOrigin o = it != parent.keys.end() ? it->second : YamlOrigin{parent.file, {}, {}, {}};
    if (!key_node.Mark().is_null()) o.key_mark = key_node.Mark();
    return o;
  };
  for (const auto& entry : base) {
    const std::string key = entry.first.Scalar();  // keys are scalars (parse_text)
    merged[key] = entry.second;
    merged_origin.keys[key] = origin_for(base_origin, entry.first);
  }
  for (const auto& entry : over) {
    const std::string key = entry.first.Scalar();  // keys are scalars (parse_text)
    YamlOrigin child;
    if (base[key] && base[key].IsMap() && entry.second.IsMap()) {
      merged[key] = merge(base[key], merged_origin.keys[key], entry.second,
                          origin_for(over_origin, entry.first), child);
      child.key_mark = entry.first.Mark();
    } else {
      merged[key] = entry.second;
      child = origin_for(over_origin, entry.first);
    }
    merged_origin.keys[key] = std::move(child);
  }
  return merged;
}

// The 1-based number of the first line indented with a tab, or 0. YAML forbids tabs in
// indentation, and yaml-cpp's message for them ("illegal map value") does not say so.
int first_tab_indented_line(std::string_view text) {
  int line = 1;
  bool at_indent = true;
  for (const char c : text) {
    if (c == '\n') {
      ++line;
      at_indent = true;
    } else if (at_indent && c == '\t') {
      return line;
    } else if (c != ' ') {
      at_indent = false;
    }
  }
  return 0;
}

// yaml-cpp keeps both entries of a duplicated key and reads the first, so the second would be
// ignored silently: report every duplicate, and every key that is a list or a map (`? [a, b]`),
// which no coda file has. `budget` bounds the walk, since aliases can make a
// small document a huge tree (nothing beyond it is checked; readers never walk that far either).
void report_duplicate_keys(const YAML::Node& node, const std::string& name, std::string path,
                           int depth, std::size_t& budget, Diagnostics& diags) {
  if (budget == 0 || depth > 64) return;
  --budget;
  if (node.IsSequence()) {
    for (std::size_t i = 0; i < node.size(); ++i)
      report_duplicate_keys(node[i], name, fmt::format("{}[{}]", path, i), depth + 1, budget,
                            diags);
    return;
  }
  if (!node.IsMap()) return;
  std::map<std::string, int, std::less<>> first_line;
  for (const auto& entry : node) {
    const std::string key = entry.first.IsScalar() ? entry.first.Scalar() : std::string();
    const std::string child = path.empty() ? key : fmt::format("{}.{}", path, key);
    const int line = entry.first.Mark().line + 1;
    if (!entry.first.IsScalar()) {
      diags.error(location_of(name, entry.first.Mark()), path,
                  fmt::format("a key must be a name, found {}",
                              entry.first.IsSequence() ? "a list" : "a map"),
                  "write keys as plain words, e.g. rows: 32");
    } else {
      const auto [it, inserted] = first_line.emplace(key, line);
      if (!inserted)
        diags.error(location_of(name, entry.first.Mark()), child,
                    fmt::format("duplicate key (first at line {})", it->second),
                    "each key may appear once in a map");
    }
    report_duplicate_keys(entry.second, name, child, depth + 1, budget, diags);
  }
}

std::optional<YAML::Node> parse_text(const std::string& text, const std::string& name,
                                     Diagnostics& diags) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    const int tab_line = first_tab_indented_line(text);
    const bool tab_before = tab_line > 0 && (e.mark.is_null() || tab_line <= e.mark.line + 1);
    diags.error(location_of(name, e.mark), "", fmt::format("invalid YAML: {}", e.msg),
                tab_before ? fmt::format("line {} is indented with a tab; YAML indents with "
                                         "spaces only",
                                         tab_line)
                           : std::string());
    return std::nullopt;
  }
  const std::size_t errors_before = diags.error_count();
  std::size_t budget = 100000;
  report_duplicate_keys(root, name, "", 0, budget, diags);
  if (diags.error_count() != errors_before) return std::nullopt;
  return root;
}

struct Loader {
  Diagnostics& diags;
  std::vector<std::string> files;
  std::vector<std::filesystem::path> stack;  // the extends chain being read, for cycles

  // Resolves the `extends:` of `root` (read from `name`, relative paths against `dir`).
  std::optional<std::pair<YAML::Node, YamlOrigin>> resolve(YAML::Node root,
                                                           const std::string& name,
                                                           const std::filesystem::path& dir) {
    YamlOrigin origin{name, root.Mark(), {}, {}};
    if (!root.IsMap() || !root["extends"]) return std::pair{root, origin};
    const YAML::Node ext = root["extends"];
    if (!ext.IsScalar()) {
      diags.error(location_of(name, ext.Mark()), "extends",
                  "must be one file path, relative to this file",
                  "write e.g. \"extends: systolic_32x32_os.yaml\"");
      return std::nullopt;
    }
    root.remove("extends");
    const auto parent = read_file((dir / ext.Scalar()).lexically_normal(),
                                  location_of(name, ext.Mark()));
    if (!parent) return std::nullopt;
    YamlOrigin merged_origin;
    YAML::Node merged = merge(parent->first, parent->second, root, origin, merged_origin);
    return std::pair{merged, merged_origin};
  }

  std::optional<std::pair<YAML::Node, YamlOrigin>> read_file(const std::filesystem::path& file,
                                                             const SourceLocation& named_at) {
    std::error_code ec;
    const auto canonical = std::filesystem::weakly_canonical(file, ec);
    if (std::find(stack.begin(), stack.end(), canonical) != stack.end()) {
      std::string chain;
      for (const auto& f : stack) chain += f.filename().string() + " -> ";
      diags.error(named_at, "extends",
                  fmt::format("cycle in extends: {}{}", chain, file.filename().string()),
                  "a preset cannot extend itself, directly or through others");
      return std::nullopt;
    }
    if (stack.size() >= 16) {
      diags.error(named_at, "extends", "extends chain deeper than 16 files");
      return std::nullopt;
    }
    const bool extended = !stack.empty();  // named by another file's extends:
    std::string why;
    const auto text = read_text_file(file, why);
    if (!text) {  // a folder, a device or pipe, too large, missing or unreadable (and why)
      const bool missing = !std::filesystem::exists(file, ec);
      diags.error(named_at, extended ? "extends" : "", why,
                  !extended                                         ? ""
                  : std::filesystem::is_directory(file, ec)         ? "name a preset file, e.g. base.yaml"
                  : missing ? "the path is relative to the file that names it"
                            : "");
      return std::nullopt;
    }
    const std::string name = file.string();
    auto root = parse_text(*text, name, diags);
    if (!root) return std::nullopt;
    files.push_back(name);
    stack.push_back(canonical);
    auto result = resolve(*root, name, file.parent_path());
    stack.pop_back();
    return result;
  }
};

std::string scalar_preview(const YAML::Node& node) {
  if (node.IsScalar()) return fmt::format("\"{}\"", node.Scalar());
  if (node.IsSequence()) return "a list";
  if (node.IsMap()) return "a map";
  return "nothing";
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

template <class Int>
bool parse_integer(const std::string& text, Int& out) {
  const char* first = text.data();
  const char* last = text.data() + text.size();
  const auto [end, ec] = std::from_chars(first, last, out);
  return ec == std::errc{} && end == last;
}

}  // namespace

std::optional<YamlDocument> YamlDocument::load(const std::filesystem::path& file,
                                               Diagnostics& diags) {
  Loader loader{diags, {}, {}};
  auto result = loader.read_file(file, SourceLocation{file.string(), 0, 0});
  if (!result) return std::nullopt;
  return YamlDocument(result->first, std::move(result->second),
                      std::move(loader.files));
}

std::optional<YamlDocument> YamlDocument::parse(std::string_view text, std::string name,
                                                Diagnostics& diags) {
  Loader loader{diags, {name}, {}};
  auto root = parse_text(std::string(text), name, diags);
  if (!root) return std::nullopt;
  auto result = loader.resolve(*root, name, std::filesystem::current_path());
  if (!result) return std::nullopt;
  return YamlDocument(result->first, std::move(result->second),
                      std::move(loader.files));
}

YamlReader YamlDocument::root() const { return YamlReader(root_, "", &origin_, origin_.file); }

YamlDocument YamlDocument::clone() const {
  return YamlDocument(YAML::Clone(root_), origin_, files_);
}

std::string YamlDocument::text() const {
  YAML::Emitter out;
  out << root_;
  return std::string(out.c_str(), out.size()) + "\n";
}

std::uint64_t YamlDocument::content_hash() const {
  YAML::Emitter out;
  out << root_;
  return fnv1a64(std::string_view(out.c_str(), out.size()));
}

YamlReader::YamlReader(const YAML::Node& node, std::string path, const YamlOrigin* origin,
                       std::string file)
    : node_(node),
      path_(std::move(path)),
      origin_(origin),
      file_(std::move(file)),
      known_keys_(std::make_shared<std::vector<std::string>>()) {}

SourceLocation YamlReader::location() const {
  if (node_.IsDefined() && !node_.Mark().is_null()) return location_of(file_, node_.Mark());
  if (origin_ != nullptr) return location_of(origin_->file, origin_->mark);
  return location_of(file_, YAML::Mark::null_mark());
}

std::string YamlReader::child_path(std::string_view key) const {
  return path_.empty() ? std::string(key) : fmt::format("{}.{}", path_, key);
}

bool YamlReader::expect_map(Diagnostics& diags) const {
  if (node_.IsMap()) return true;
  if (path_.empty() && is_null()) {
    diags.error(location(), path_, "the document is empty: expected a map of keys",
                "write at least schema_version: 1 and name:");
    return false;
  }
  diags.error(location(), path_, fmt::format("expected a map of keys, found {}",
                                             scalar_preview(node_)));
  return false;
}

bool YamlReader::expect_sequence(Diagnostics& diags) const {
  if (node_.IsSequence()) return true;
  diags.error(location(), path_, fmt::format("expected a list, found {}", scalar_preview(node_)),
              "write the items one per line, each starting with \"- \"");
  return false;
}

bool YamlReader::has(std::string_view key) const {
  std::string k(key);
  if (std::find(known_keys_->begin(), known_keys_->end(), k) == known_keys_->end())
    known_keys_->push_back(k);
  const YAML::Node& node = node_;
  return node.IsMap() && node[k].IsDefined();
}

YamlReader YamlReader::at(std::string_view key) const {
  has(key);
  const std::string k(key);
  const YAML::Node& node = node_;
  YAML::Node child = node.IsMap() ? node[k] : YAML::Node(YAML::NodeType::Undefined);
  const YamlOrigin* child_origin = nullptr;
  std::string file = file_;
  if (origin_ != nullptr) {
    const auto it = origin_->keys.find(k);
    if (it != origin_->keys.end()) {
      child_origin = &it->second;
      file = it->second.file;
    }
  }
  return YamlReader(child, child_path(key), child_origin, file);
}

std::vector<YamlReader> YamlReader::items() const {
  std::vector<YamlReader> out;
  if (!node_.IsSequence()) return out;
  out.reserve(node_.size());
  for (std::size_t i = 0; i < node_.size(); ++i)
    out.emplace_back(node_[i], fmt::format("{}[{}]", path_, i), nullptr, file_);
  return out;
}

std::vector<std::string> YamlReader::keys() const {
  std::vector<std::string> out;
  if (!node_.IsMap()) return out;
  for (const auto& entry : node_) out.push_back(entry.first.Scalar());
  return out;
}

std::string YamlReader::fmt_missing(std::string_view key) const {
  return fmt::format("missing required key '{}'", key);
}

bool YamlReader::scalar_text(std::string& out, std::string_view what, std::string_view example,
                             Diagnostics& diags) const {
  if (!node_.IsScalar()) {
    diags.error(location(), path_, fmt::format("expected {}, found {}", what,
                                               scalar_preview(node_)),
                example.empty() ? "" : fmt::format("write e.g. {}", example));
    return false;
  }
  out = node_.Scalar();
  return true;
}

bool YamlReader::read(std::string& out, Diagnostics& diags) const {
  if (!scalar_text(out, "a string", "", diags)) return false;
  if (const auto problem = text_field_problem(out)) {
    diags.error(location(), path_, problem->message, problem->hint);
    return false;
  }
  return true;
}

bool YamlReader::read(bool& out, Diagnostics& diags) const {
  std::string text;
  if (!scalar_text(text, "true or false", "true", diags)) return false;
  if (text == "true") out = true;
  else if (text == "false") out = false;
  else {
    diags.error(location(), path_, fmt::format("\"{}\" is not a boolean", text),
                "write true or false");
    return false;
  }
  return true;
}

namespace {
template <class Int>
bool read_int(const YamlReader& r, const std::string& text, Int& out, Diagnostics& diags) {
  if (parse_integer(text, out)) return true;
  double as_double = 0;
  const char* last = text.data() + text.size();
  const auto [end, ec] = std::from_chars(text.data(), last, as_double);
  // Readers check their own, tighter limits, so the type's range is not quoted here.
  const bool numeric = ec == std::errc{} && end == last;
  std::string why;
  if (numeric && std::is_unsigned_v<Int> && as_double < 0) why = "must not be negative";
  // std::trunc, not a cast to an integer: a cast of 1e20 is undefined behaviour.
  else if (numeric && std::trunc(as_double) != as_double) why = "must be a whole number";
  else if (numeric && as_double > static_cast<double>(std::numeric_limits<Int>::max()))
    why = "is too large";
  else if (numeric && as_double < static_cast<double>(std::numeric_limits<Int>::min()))
    why = "is too small";
  else if (numeric) why = "must be written in plain digits";  // "1e3", "8.0"
  else why = "is not a whole number";
  diags.error(r, fmt::format("\"{}\" {}", text, why),
              "write an integer such as 32");
  return false;
}
}  // namespace

bool YamlReader::read(std::uint32_t& out, Diagnostics& diags) const {
  std::string text;
  return scalar_text(text, "an integer", "32", diags) && read_int(*this, text, out, diags);
}
bool YamlReader::read(std::uint64_t& out, Diagnostics& diags) const {
  std::string text;
  return scalar_text(text, "an integer", "32", diags) && read_int(*this, text, out, diags);
}
bool YamlReader::read(std::int64_t& out, Diagnostics& diags) const {
  std::string text;
  return scalar_text(text, "an integer", "32", diags) && read_int(*this, text, out, diags);
}

bool YamlReader::read(double& out, Diagnostics& diags) const {
  std::string text;
  if (!scalar_text(text, "a number", "0.5", diags)) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  if (ec == std::errc{} && end == text.data() + text.size()) return true;
  diags.error(location(), path_, fmt::format("\"{}\" is not a number", text), "write e.g. 0.5");
  return false;
}

namespace {
template <class T, class Parse>
bool read_unit(const YamlReader& r, T& out, Parse parse, std::string_view example,
               Diagnostics& diags) {
  if (!r.node().IsScalar()) {
    diags.error(r,
                fmt::format("expected a value with a unit, found {}", scalar_preview(r.node())),
                fmt::format("write e.g. \"{}\"", example));
    return false;
  }
  std::string why;
  const auto value = parse(r.node().Scalar(), why);
  if (!value) {
    diags.error(r, why);
    return false;
  }
  out = *value;
  return true;
}
}  // namespace

bool YamlReader::read(Bytes& out, Diagnostics& diags) const {
  return read_unit(*this, out, parse_bytes, "256 KiB", diags);
}
bool YamlReader::read(Hertz& out, Diagnostics& diags) const {
  return read_unit(*this, out, parse_frequency, "940 MHz", diags);
}
bool YamlReader::read(Seconds& out, Diagnostics& diags) const {
  return read_unit(*this, out, parse_duration, "100 ns", diags);
}
bool YamlReader::read(Bandwidth& out, Diagnostics& diags) const {
  return read_unit(*this, out, parse_bandwidth, "4.8 TB/s", diags);
}
bool YamlReader::read(Joules& out, Diagnostics& diags) const {
  return read_unit(*this, out, parse_energy, "0.2 pJ", diags);
}
bool YamlReader::read(Watts& out, Diagnostics& diags) const {
  return read_unit(*this, out, parse_power, "700 W", diags);
}
bool YamlReader::read(SquareMillimetres& out, Diagnostics& diags) const {
  return read_unit(*this, out, parse_area, "814 mm2", diags);
}
bool YamlReader::read(Latency& out, Diagnostics& diags) const {
  return read_unit(*this, out, parse_latency, "100 ns", diags);
}

void YamlReader::report_bad_choice(const std::string& text,
                                   std::span<const std::string_view> names,
                                   Diagnostics& diags) const {
  std::string valid;
  for (const auto name : names) valid += (valid.empty() ? "" : ", ") + std::string(name);
  const auto close = did_you_mean(text, names);
  diags.error(location(), path_,
              close ? fmt::format("\"{}\" is not valid (did you mean '{}'?)", text, *close)
                    : fmt::format("\"{}\" is not valid", text),
              fmt::format("expected one of: {}", valid));
}

void YamlReader::reject_unknown_keys(Diagnostics& diags) const {
  if (!node_.IsMap()) return;
  std::vector<std::string_view> known(known_keys_->begin(), known_keys_->end());
  for (const auto& entry : node_) {
    const std::string key = entry.first.Scalar();
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    const auto close = did_you_mean(key, known);
    const YamlOrigin* key_origin =
        origin_ != nullptr && origin_->keys.contains(key) ? &origin_->keys.at(key) : nullptr;
    const std::string file = key_origin != nullptr ? key_origin->file : file_;
    const YAML::Mark mark = entry.first.Mark().is_null() && key_origin != nullptr
                                ? key_origin->key_mark
                                : entry.first.Mark();
    std::string valid;
    for (const auto k : known) valid += (valid.empty() ? "" : ", ") + std::string(k);
    diags.error(location_of(file, mark), child_path(key),
                close ? fmt::format("unknown key (did you mean '{}'?)", *close)
                      : std::string("unknown key"),
                close ? std::string() : fmt::format("valid keys here: {}", valid));
  }
}

std::optional<std::string_view> did_you_mean(std::string_view word,
                                             std::span<const std::string_view> candidates) {
  std::optional<std::string_view> best;
  std::size_t best_distance = std::max<std::size_t>(2, word.size() / 3) + 1;
  for (const auto candidate : candidates) {
    const std::size_t d = edit_distance(word, candidate);
    if (d < best_distance) {
      best = candidate;
      best_distance = d;
    }
  }
  return best;
}

}  // namespace coda
