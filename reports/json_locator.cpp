#include "reports/json_locator.h"

#include <cstddef>
#include <vector>

namespace coda::reports {
namespace {

// "/ops/3/a~1b" -> {"ops", "3", "a/b"} (RFC 6901: ~1 is '/', ~0 is '~').
std::vector<std::string> pointer_tokens(std::string_view pointer) {
  std::vector<std::string> tokens;
  if (pointer.empty()) return tokens;
  std::size_t start = pointer.front() == '/' ? 1 : 0;
  while (true) {
    const std::size_t end = pointer.find('/', start);
    const std::string_view raw = pointer.substr(start, end == std::string_view::npos
                                                           ? std::string_view::npos
                                                           : end - start);
    std::string token;
    for (std::size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] == '~' && i + 1 < raw.size()) {
        token += raw[i + 1] == '1' ? '/' : '~';
        ++i;
      } else {
        token += raw[i];
      }
    }
    tokens.push_back(std::move(token));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return tokens;
}

// A forward scan over JSON text that skips values it does not need.
class Scanner {
 public:
  explicit Scanner(std::string_view text) : text_(text) {}

  // Descends along `tokens` from the value at the current position; returns the offset of the
  // deepest value reached.
  std::size_t find(const std::vector<std::string>& tokens) {
    skip_space();
    std::size_t found = pos_;
    for (const std::string& token : tokens) {
      if (!enter(token)) return found;
      skip_space();
      found = pos_;
    }
    return found;
  }

 private:
  bool at(char c) const { return pos_ < text_.size() && text_[pos_] == c; }

  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }

  // At a '"': reads the string (escapes other than \" and \\ kept as written) and moves past it.
  std::string read_string() {
    std::string out;
    for (++pos_; pos_ < text_.size() && text_[pos_] != '"'; ++pos_) {
      if (text_[pos_] == '\\' && pos_ + 1 < text_.size()) {
        ++pos_;
        if (text_[pos_] != '"' && text_[pos_] != '\\') out += '\\';
      }
      out += text_[pos_];
    }
    ++pos_;
    return out;
  }

  void skip_value() {
    skip_space();
    if (at('"')) {
      read_string();
      return;
    }
    int depth = 0;
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c == '"') {
        read_string();
        continue;
      }
      if (c == '{' || c == '[') ++depth;
      if (c == '}' || c == ']') {
        if (depth == 0) return;  // the end of the enclosing container
        --depth;
        if (depth == 0) {
          ++pos_;
          return;
        }
      }
      if (depth == 0 && c == ',') return;
      ++pos_;
    }
  }

  // Moves to the value under `token` of the object or array at the current position.
  bool enter(const std::string& token) {
    if (at('{')) {
      ++pos_;
      while (true) {
        skip_space();
        if (!at('"')) return false;
        const std::string key = read_string();
        skip_space();
        if (!at(':')) return false;
        ++pos_;
        skip_space();
        if (key == token) return true;
        skip_value();
        skip_space();
        if (!at(',')) return false;
        ++pos_;
      }
    }
    if (at('[')) {
      std::size_t wanted = 0;
      for (const char c : token) {
        if (c < '0' || c > '9') return false;
        wanted = wanted * 10 + static_cast<std::size_t>(c - '0');
      }
      ++pos_;
      for (std::size_t index = 0;; ++index) {
        skip_space();
        if (at(']')) return false;
        if (index == wanted) return true;
        skip_value();
        skip_space();
        if (!at(',')) return false;
        ++pos_;
      }
    }
    return false;
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

}  // namespace

SourceLocation locate_json(std::string_view text, std::string_view pointer,
                           const std::string& file) {
  Scanner scanner(text);
  return location_at(text, scanner.find(pointer_tokens(pointer)), file);
}

}  // namespace coda::reports
