#include "core/plugin.h"

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace coda {
namespace {

// A module is looked for beside the running executable first (this test's build/core/), then in
// the build tree coda was compiled in (build/, which CTest passes as CODA_BINARY_DIR).
TEST(Plugin, LooksBesideTheExecutableThenInTheBuildTree) {
  const std::vector<std::filesystem::path> candidates = plugin_candidates("some-module.so");
  ASSERT_FALSE(candidates.empty());
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe");
  EXPECT_EQ(candidates.front(), exe.parent_path() / "some-module.so");
  const char* build = std::getenv("CODA_BINARY_DIR");
  if (build == nullptr) GTEST_SKIP() << "run through ctest, which sets CODA_BINARY_DIR";
  const std::filesystem::path in_build = std::filesystem::path(build) / "some-module.so";
  EXPECT_EQ(candidates.back(), in_build);
  // The two folders differ here (build/core/ and build/), so both are listed, once each.
  EXPECT_EQ(candidates.size(), 2u);
}

TEST(Plugin, AMissingModuleSaysWhereItWasLookedFor) {
  std::vector<std::string> why;
  EXPECT_EQ(load_plugin("no-such-module.so", "entry", PluginScope::local, why), nullptr);
  const std::vector<std::filesystem::path> candidates = plugin_candidates("no-such-module.so");
  ASSERT_EQ(why.size(), candidates.size());
  for (std::size_t i = 0; i < why.size(); ++i)
    EXPECT_EQ(why[i], candidates[i].string() + " (not there)");
}

// A file that is not a shared object is reported with the dynamic loader's reason.
TEST(Plugin, AFileThatIsNoModuleIsReportedWithTheLoadersReason) {
  std::vector<std::string> why;
  // This test's own executable, found beside itself: a position-independent executable, which
  // glibc's dlopen refuses.
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe");
  EXPECT_EQ(load_plugin(exe.filename().string(), "entry", PluginScope::local, why), nullptr);
  ASSERT_FALSE(why.empty());
  EXPECT_NE(why.front().find(exe.string() + " ("), std::string::npos) << why.front();
  EXPECT_EQ(why.front().find("(not there)"), std::string::npos) << why.front();
}

}  // namespace
}  // namespace coda
