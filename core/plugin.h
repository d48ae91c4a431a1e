#pragma once
// Modules coda loads on demand (issue 22, item 4: start-up): code whose libraries most commands
// never use (ONNX with protobuf, MPI) is built into a module beside the coda binary and opened
// with dlopen only by the command that needs it, so the others do not pay the dynamic linker
// for those libraries at every start. A module exports one entry point, extern "C", returning
// the table of functions its user calls; the caller checks the table is of its own build.

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace coda {

// Where a module named `file` is looked for, in order: beside the running executable
// (/proc/self/exe's folder: build/coda's build/), then the build tree this coda was compiled in
// (for test binaries and the Python module, whose executables live elsewhere).
std::vector<std::filesystem::path> plugin_candidates(std::string_view file);

enum class PluginScope {
  local,   // RTLD_LOCAL: the module's symbols stay its own
  global,  // RTLD_GLOBAL: its libraries' symbols serve modules they load later (Open MPI's
           // components resolve libmpi's symbols from the global scope)
};

// Opens the first candidate that loads and has `entry`, and returns what `entry` (declared
// extern "C" const void* entry(), exactly: it is called through that type) returns; nullptr when
// none did, with a line per path tried in `why`. A module opened once stays loaded: opening it
// again returns it again, so nothing is kept here.
const void* load_plugin(std::string_view file, const char* entry, PluginScope scope,
                        std::vector<std::string>& why);

}  // namespace coda
