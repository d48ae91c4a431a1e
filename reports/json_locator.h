#pragma once
// Locating a value of a JSON document in its text, for diagnostics: nlohmann's parsed values
// carry no positions, so a reader that finds a bad field asks here where that field is written.

#include <string>
#include <string_view>

#include "core/diagnostics.h"

namespace coda::reports {

// Where the value at JSON pointer `pointer` ("/ops/3/cost", "" for the whole document) starts in
// `text`, as file:line:col. When the pointer names a key or index that is not there, the
// location of its nearest ancestor that is. `text` is expected to be valid JSON (the reader
// parsed it first); on text that is not, the location is where the scan stopped.
SourceLocation locate_json(std::string_view text, std::string_view pointer,
                           const std::string& file);

}  // namespace coda::reports
