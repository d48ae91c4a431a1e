#include "core/plugin.h"

#include <dlfcn.h>

#include <algorithm>
#include <system_error>

#include <fmt/format.h>

namespace coda {
namespace {

// The folder of the running executable, or empty where /proc/self/exe cannot be read.
std::filesystem::path executable_dir() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path{} : exe.parent_path();
}

}  // namespace

std::vector<std::filesystem::path> plugin_candidates(std::string_view file) {
  std::vector<std::filesystem::path> out;
  for (const std::filesystem::path& dir :
       {executable_dir(), std::filesystem::path(CODA_PLUGIN_BUILD_DIR)}) {
    if (dir.empty()) continue;
    std::filesystem::path path = dir / file;
    if (std::find(out.begin(), out.end(), path) == out.end()) out.push_back(std::move(path));
  }
  return out;
}

const void* load_plugin(std::string_view file, const char* entry, PluginScope scope,
                        std::vector<std::string>& why) {
  for (const std::filesystem::path& candidate : plugin_candidates(file)) {
    std::error_code ec;
    if (!std::filesystem::exists(candidate, ec)) {
      why.push_back(fmt::format("{} (not there)", candidate.string()));
      continue;
    }
    const int flags = RTLD_NOW | (scope == PluginScope::global ? RTLD_GLOBAL : RTLD_LOCAL);
    void* handle = dlopen(candidate.c_str(), flags);
    if (handle == nullptr) {
      const char* error = dlerror();  // NOLINT(concurrency-mt-unsafe): modules load on one thread
      why.push_back(fmt::format("{} ({})", candidate.string(), error ? error : "dlopen failed"));
      continue;
    }
    using Entry = const void* (*)();
    // POSIX: a function's address from dlsym converts to a function pointer.
    auto function = reinterpret_cast<Entry>(dlsym(handle, entry));
    if (function == nullptr) {
      why.push_back(fmt::format("{} (no entry point {})", candidate.string(), entry));
      continue;
    }
    return function();
  }
  return nullptr;
}

}  // namespace coda
