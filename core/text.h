#pragma once
// Text that crosses coda's edges: UTF-8 checks where text is read, and JSON written so that no
// byte a user gave can stop it. Every reader checks its text fields (YamlReader::read, a located
// error); JSON writers go through dump_json, which writes any invalid byte that still reaches
// it (a name inside an ONNX file, a CSV cell) as U+FFFD instead of throwing.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace coda {

// The offset of the first byte of `text` that does not start or continue a well-formed UTF-8
// sequence (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF); nullopt when the
// whole text is UTF-8. Hand-written rather than taken from Boost.Locale or ICU: 30 lines against
// a new link dependency for one check.
std::optional<std::size_t> first_invalid_utf8(std::string_view text);

// What makes `text` unfit for a text field (a name, a description, a CSV cell), with what would
// be valid: bytes that are not UTF-8 (first_invalid_utf8), or a control character other than tab,
// line feed and carriage return (U+0000 to U+001F, U+007F), which C strings, CSV and terminals
// mishandle. nullopt when the text is fine.
struct TextProblem {
  std::string message;  // "not UTF-8 text: byte 4 (0xE9) starts no UTF-8 character"
  std::string hint;     // "save the file as UTF-8 (...)"
};
std::optional<TextProblem> text_field_problem(std::string_view text);

// The largest text input coda reads (YAML, CSV, JSON traces): 512 MiB, far above any config or
// trace it writes (a LLaMA-2-70B training trace is tens of MB), and a clear error instead of
// reading /dev/zero until memory runs out.
inline constexpr std::uint64_t kMaxTextFileBytes = std::uint64_t{512} << 20;

// The whole of `file` when it is a regular file of at most `max_bytes` that can be read; else
// nullopt and `why`, a sentence that names the file and says what it is instead (a folder, a
// device, a pipe or socket, too large, unreadable with the system's reason: "Permission denied").
std::optional<std::string> read_text_file(const std::filesystem::path& file, std::string& why,
                                          std::uint64_t max_bytes = kMaxTextFileBytes);

// nlohmann::json or ordered_json as text (indent < 0: one line), invalid UTF-8 replaced by U+FFFD.
template <class Json>
std::string dump_json(const Json& json, int indent = -1) {
  return json.dump(indent, ' ', false, Json::error_handler_t::replace);
}

}  // namespace coda
