// Every file in tests/broken_inputs/ (the presets/ folder holds only what they extend) is read the
// way `coda check-config` reads it, and its diagnostics must be exactly those in NAME.expected,
// one format()ted diagnostic per line, with paths relative to the repository top. Each file must
// produce at least one error: bad input is never accepted silently.
//
// After a deliberate change to a message, refresh the expectations and review the diff:
//   CODA_UPDATE_EXPECTED=1 build/tests/broken_inputs_tests

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cli/check_config.h"
#include "core/diagnostics.h"
#include "validation/measurement.h"

namespace coda {
namespace {

namespace fs = std::filesystem;

// Relative to the repository top, where CTest runs the tests.
const fs::path kFolder = "tests/broken_inputs";

std::vector<std::string> broken_inputs() {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(fs::path(CODA_SOURCE_DIR) / kFolder)) {
    if (!entry.is_regular_file() || entry.path().extension() == ".expected") continue;
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string read_text(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

class BrokenInput : public ::testing::TestWithParam<std::string> {};

TEST_P(BrokenInput, GivesExactlyTheExpectedDiagnostics) {
  const fs::path input = kFolder / GetParam();
  ASSERT_TRUE(fs::exists(input)) << "run from the repository top: " << input;
  Diagnostics diags;
  const auto summary = cli::check_config_file(input, diags);
  std::string actual;
  for (const Diagnostic& d : diags.all()) actual += format(d) + "\n";

  const fs::path expected_file = fs::path(input.string() + ".expected");
  if (std::getenv("CODA_UPDATE_EXPECTED") != nullptr)
    std::ofstream(expected_file, std::ios::binary) << actual;
  EXPECT_FALSE(summary.has_value()) << "accepted as " << summary.value_or("");
  EXPECT_GE(diags.error_count(), 1U);
  ASSERT_TRUE(fs::exists(expected_file)) << "write " << expected_file << " with:\n" << actual;
  EXPECT_EQ(actual, read_text(expected_file)) << "input: " << input;
}

std::string test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  std::replace_if(name.begin(), name.end(), [](char c) { return !std::isalnum(
      static_cast<unsigned char>(c)); }, '_');
  return name;
}

INSTANTIATE_TEST_SUITE_P(Files, BrokenInput, ::testing::ValuesIn(broken_inputs()), test_name);

// Measurement CSVs (coda validate's input, docs/validation.md) live in measurements/ and are read
// with validation::read_measurements, the reader `coda validate` uses; the same rules apply:
// exactly the expected diagnostics, at least one error each.
const fs::path kMeasurements = kFolder / "measurements";

std::vector<std::string> broken_measurements() {
  std::vector<std::string> names;
  for (const auto& entry :
       fs::directory_iterator(fs::path(CODA_SOURCE_DIR) / kMeasurements)) {
    if (!entry.is_regular_file() || entry.path().extension() == ".expected") continue;
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

class BrokenMeasurements : public ::testing::TestWithParam<std::string> {};

TEST_P(BrokenMeasurements, GivesExactlyTheExpectedDiagnostics) {
  const fs::path input = kMeasurements / GetParam();
  ASSERT_TRUE(fs::exists(input)) << "run from the repository top: " << input;
  Diagnostics diags;
  const auto rows = validation::read_measurements(read_text(input), input.string(), diags);
  std::string actual;
  for (const Diagnostic& d : diags.all()) actual += format(d) + "\n";

  const fs::path expected_file = fs::path(input.string() + ".expected");
  if (std::getenv("CODA_UPDATE_EXPECTED") != nullptr)
    std::ofstream(expected_file, std::ios::binary) << actual;
  EXPECT_FALSE(rows.has_value()) << "accepted " << rows.value_or(decltype(rows)::value_type{}).size()
                                 << " rows";
  EXPECT_GE(diags.error_count(), 1U);
  ASSERT_TRUE(fs::exists(expected_file)) << "write " << expected_file << " with:\n" << actual;
  EXPECT_EQ(actual, read_text(expected_file)) << "input: " << input;
}

INSTANTIATE_TEST_SUITE_P(Files, BrokenMeasurements, ::testing::ValuesIn(broken_measurements()),
                         test_name);

TEST(BrokenInputs, CorpusHasAtLeastFiftyFiles) { EXPECT_GE(broken_inputs().size(), 50U); }

}  // namespace
}  // namespace coda
