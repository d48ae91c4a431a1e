// `coda validate` as a user runs it: exit codes, bad flags, missing and broken files, and what
// --out and --calibrate-on write. The fixtures (validation/tests/fixtures/) are hand-written
// tables of made-up times, each labelled "FIXTURE: not a measurement".

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "cli/tests/run_coda.h"

namespace coda::cli {
namespace {

namespace fs = std::filesystem;
using test::coda;

constexpr const char* kArch = "validation/tests/fixtures/h200_pinned.yaml";
constexpr const char* kFixture = "validation/tests/fixtures/h200_hand_derived.csv";

fs::path scratch(const std::string& name) {
  const char* build = std::getenv("CODA_BINARY_DIR");
  fs::path dir = fs::path(build ? build : fs::temp_directory_path().string()) /
                 "validate_command_test" / name;
  fs::remove_all(dir);
  return dir;
}

std::string read_text(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(ValidateCommand, PrintsTheTableSkippedRowsAndClasses) {
  const auto r = coda({"validate", "--measurements", kFixture, "--arch", kArch});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  // The GEMM row: measured 0.9 x coda's 910.24 us, so +11.1% (compare_test.cpp derives it).
  EXPECT_NE(r.out.find("819.22      910.24   +11.1%  memory"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("skipped (2 rows, not compared):"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("not measured: FIXTURE: this case did not run"), std::string::npos);
  EXPECT_NE(r.out.find("FIXTURE: not a measurement (table B)"), std::string::npos);
}

TEST(ValidateCommand, OutWritesJsonCsvAndMarkdown) {
  const fs::path dir = scratch("out");
  const auto r = coda({"validate", "--measurements", kFixture, "--arch", kArch, "--out",
                       dir.c_str()});
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* name : {"validation.json", "validation.csv", "validation.md"})
    EXPECT_TRUE(fs::exists(dir / name)) << name;
  EXPECT_FALSE(fs::exists(dir / "calibration.yaml"));  // no --calibrate-on: no fitting
  EXPECT_NE(read_text(dir / "validation.md").find("## By source"), std::string::npos);
}

TEST(ValidateCommand, CalibrateOnWritesAnArchThatExtendsTheGivenOne) {
  const fs::path dir = scratch("calibrate");
  const auto r = coda({"validate", "--measurements", kFixture, "--arch", kArch, "--out",
                       dir.c_str(), "--calibrate-on", "launch"});
  ASSERT_EQ(r.code, 0) << r.err;
  // The fixture's launch row is 5 us: the fit on it alone sets a vector kernel's fixed cost (the
  // empty kernel's) to 5 us.
  EXPECT_NE(r.out.find("fixed_cost.vector                  4 us ->         5 us"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("held out"), std::string::npos);
  // The written arch reads back as a valid arch with the fitted knob.
  const auto check = coda({"check-config", (dir / "calibration.yaml").c_str()});
  EXPECT_EQ(check.code, 0) << check.err << read_text(dir / "calibration.yaml");
  const auto again = coda({"validate", "--measurements", kFixture, "--arch",
                           (dir / "calibration.yaml").c_str()});
  ASSERT_EQ(again.code, 0) << again.err;
  // With 5 us the launch row is exact.
  EXPECT_NE(again.out.find("5.00        5.00    "), std::string::npos) << again.out;
  EXPECT_NE(again.out.find("0.0%  launch"), std::string::npos) << again.out;
}

TEST(ValidateCommand, CorpusReportsBothSplitsAndFitsOnTheCalibrationSplit) {
  const fs::path dir = scratch("corpus");
  const char* corpus = "validation/published/corpus.yaml";
  const auto r = coda({"validate", "--corpus", corpus, "--out", dir.c_str()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\nvalidation split\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\ncalibration split\n"), std::string::npos);
  EXPECT_NE(r.out.find(" by source\n"), std::string::npos);
  const std::string json = read_text(dir / "corpus.json");
  // NVLink SHARP rows (impl nvls) are priced by NCCL's NVLS pair of the H100/H200 presets.
  EXPECT_NE(json.find("NCCL tuner nvls/simple"), std::string::npos);
  EXPECT_NE(json.find("\"split\": \"validation\""), std::string::npos);
  EXPECT_NE(json.find("\"predicted_us\""), std::string::npos);
  // --fit refits on the calibration split and writes one calibration per family of archs;
  // --fit-knobs fits only the knobs it names (two kernel knobs here: a whole --fit of the corpus
  // prices its training steps at every Gauss-Newton step, about a minute in a Release build and
  // far longer under the sanitizers, and fit_calibration's own tests cover every stage); a name
  // that selects none is an error listing them.
  const fs::path fitted = scratch("corpus_fit");
  const auto f = coda({"validate", "--corpus", corpus, "--fit", "--fit-knobs",
                       "fixed_cost.gemm,tensor_issue.wgmma", "--out", fitted.c_str()});
  ASSERT_EQ(f.code, 0) << f.err;
  EXPECT_NE(f.out.find("fitted on the calibration split, family nvidia-h100-sxm + nvidia-h200-sxm"),
            std::string::npos) << f.out;
  EXPECT_NE(f.out.find("  fixed_cost.gemm "), std::string::npos) << f.out;
  EXPECT_EQ(f.out.find("  dram_fraction "), std::string::npos) << f.out;
  const std::string yaml = read_text(fitted / "calibration_nvidia-h100-sxm.yaml");
  EXPECT_NE(yaml.find("\ncalibration:\n  fixed_cost:\n"), std::string::npos) << yaml;
  EXPECT_NE(
      yaml.find("  source: \"fitted by coda validate --corpus --fit on the calibration split"),
      std::string::npos)
      << yaml;
  const auto bogus =
      coda({"validate", "--corpus", corpus, "--fit", "--fit-knobs", "fixed_cost.gem"});
  EXPECT_EQ(bogus.code, 1);
  EXPECT_NE(
      bogus.err.find("error: --fit-knobs: 'fixed_cost.gem' names no knob of the corpus's "
                     "archs; the knobs (a name, or its prefix up to a '.'): fixed_cost.gemm, "),
      std::string::npos)
      << bogus.err;
  EXPECT_EQ(coda({"validate", "--corpus", corpus, "--fit-knobs", "dram_fraction"}).code, 2);
  // --corpus takes neither --arch nor --calibrate-on.
  EXPECT_EQ(coda({"validate", "--corpus", corpus, "--arch", kArch}).code, 2);
  const auto both = coda({"validate", "--corpus", corpus, "--calibrate-on", "gemm"});
  EXPECT_EQ(both.code, 2);
  EXPECT_NE(both.err.find("with --corpus use --fit"), std::string::npos) << both.err;
}

TEST(ValidateCommand, BadUsageExitsTwo) {
  EXPECT_EQ(coda({"validate", "--arch", kArch}).code, 2);  // --measurements is required
  EXPECT_EQ(coda({"validate", "--measurements", kFixture, "--arch", kArch, "--bogus"}).code, 2);
  const auto missing = coda({"validate", "--measurements", "no/such.csv", "--arch", kArch});
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.err.find("no/such.csv"), std::string::npos) << missing.err;
  const auto subset = coda({"validate", "--measurements", kFixture, "--arch", kArch,
                            "--calibrate-on", "gemm,atention"});
  EXPECT_EQ(subset.code, 2);
  EXPECT_EQ(subset.err, "error: --calibrate-on: 'atention' is neither a class (gemm, memory, "
                        "attention, fusion, launch) nor a kernel name (did you mean "
                        "'attention'?)\n");
}

TEST(ValidateCommand, BadRowIsALocatedDiagnosticAndExitsOne) {
  const auto r = coda({"validate", "--measurements", "validation/tests/fixtures/bad_row.csv",
                       "--arch", kArch});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.out, "");
  // The shape cell of row 3 starts at column 16 of line 3.
  EXPECT_EQ(r.err, "validation/tests/fixtures/bad_row.csv:3:16: error: row 3, column 'shape': "
                   "'rows' is not a shape field of gemm_wmma; gemm_wmma takes: m=N n=N k=N\n"
                   "1 error\nnothing was compared.\n");
}

TEST(ValidateCommand, SubsetWithoutComparedRowsExitsOne) {
  const auto r = coda({"validate", "--measurements", kFixture, "--arch", kArch,
                       "--calibrate-on", "attention"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "error: --calibrate-on attention selects no compared row (skipped rows are "
                   "not fitted)\n");
}

}  // namespace
}  // namespace coda::cli
