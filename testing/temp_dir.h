#pragma once
// A fresh folder under the build tree for one test's files (tests never write into the repo):
// $CODA_BINARY_DIR/test_tmp/<test name> (CTest sets CODA_BINARY_DIR; run by hand, the system's
// temporary folder is used).

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

namespace coda::testing {

class TempDir {
 public:
  TempDir() {
    const char* bin = std::getenv("CODA_BINARY_DIR");
    dir_ = std::filesystem::path(bin ? bin : std::filesystem::temp_directory_path().string()) /
           "test_tmp" / ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  const std::filesystem::path& path() const { return dir_; }
  std::filesystem::path write(const std::string& name, const std::string& text) const {
    std::ofstream(dir_ / name) << text;
    return dir_ / name;
  }

 private:
  std::filesystem::path dir_;
};

}  // namespace coda::testing
