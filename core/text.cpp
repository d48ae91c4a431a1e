#include "core/text.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

namespace coda {

std::optional<TextProblem> text_field_problem(std::string_view text) {
  if (const auto bad = first_invalid_utf8(text)) {
    return TextProblem{
        fmt::format("not UTF-8 text: byte {} (0x{:02X}) starts no UTF-8 character", *bad + 1,
                    static_cast<unsigned char>(text[*bad])),
        "save the file as UTF-8 (a Latin-1 'e with acute' is the byte 0xE9; in UTF-8 it is 0xC3 "
        "0xA9)"};
  }
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7F)
      return TextProblem{fmt::format("control character U+{:04X} at byte {}", c, i + 1),
                         "text holds printable characters, tabs and line breaks only"};
  }
  return std::nullopt;
}

std::optional<std::size_t> first_invalid_utf8(std::string_view text) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  std::size_t i = 0;
  while (i < text.size()) {
    const unsigned char lead = byte(i);
    std::size_t length = 0;
    unsigned char low = 0x80, high = 0xBF;  // the second byte's range
    if (lead < 0x80) length = 1;
    else if (lead >= 0xC2 && lead <= 0xDF) length = 2;
    else if (lead >= 0xE0 && lead <= 0xEF) {
      length = 3;
      if (lead == 0xE0) low = 0xA0;   // no overlong forms
      if (lead == 0xED) high = 0x9F;  // no surrogates
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      length = 4;
      if (lead == 0xF0) low = 0x90;   // no overlong forms
      if (lead == 0xF4) high = 0x8F;  // nothing above U+10FFFF
    } else {
      return i;
    }
    if (i + length > text.size()) return i;
    for (std::size_t k = 1; k < length; ++k) {
      const unsigned char c = byte(i + k);
      const unsigned char lo = k == 1 ? low : 0x80, hi = k == 1 ? high : 0xBF;
      if (c < lo || c > hi) return i;
    }
    i += length;
  }
  return std::nullopt;
}

std::optional<std::string> read_text_file(const std::filesystem::path& file, std::string& why,
                                          std::uint64_t max_bytes) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status status = fs::status(file, ec);
  const auto kind = [&]() -> std::string_view {
    switch (status.type()) {
      case fs::file_type::directory: return "a folder";
      case fs::file_type::character: return "a character device";
      case fs::file_type::block: return "a block device";
      case fs::file_type::fifo: return "a pipe (FIFO)";
      case fs::file_type::socket: return "a socket";
      default: return "";
    }
  }();
  if (!kind.empty()) {
    why = fmt::format("'{}' is {}, not a file", file.string(), kind);
    return std::nullopt;
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    const int error = errno;
    why = status.type() == fs::file_type::not_found
              ? fmt::format("cannot open '{}': no such file", file.string())
              : fmt::format("cannot open '{}': {}", file.string(), std::strerror(error));
    return std::nullopt;
  }
  const std::uintmax_t size = fs::file_size(file, ec);
  if (!ec && size > max_bytes) {
    why = fmt::format("'{}' is {} bytes; coda reads text inputs of at most {} MiB", file.string(),
                      size, max_bytes >> 20);
    return std::nullopt;
  }
  std::ostringstream text;
  text << in.rdbuf();
  return std::move(text).str();
}

}  // namespace coda
