// `coda workload`, driven through run_main as a user would.

#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli/tests/run_coda.h"
#include "testing/temp_dir.h"

namespace coda::cli {
namespace {

using test::coda;
using test::Outcome;

std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// A count of 0 on the command line says what is valid (issue 23: CLI11's PositiveNumber printed
// its range with a 309-digit upper bound).
TEST(WorkloadCommand, AZeroCountSaysWhatIsValid) {
  const Outcome r = coda({"workload", "--llm", "configs/workloads/llm/llama2_7b.yaml", "--seq", "0"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--seq: 0 is not allowed: give a number above 0 (e.g. 1)"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("1797693134862315708"), std::string::npos) << r.err;
}

TEST(WorkloadCommand, ListsPasses) {
  const Outcome r = coda({"workload", "--list-passes"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("decompose-attention"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("dead-op-elimination"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("RMSNorm, LayerNorm, GELU and SiLU"), std::string::npos) << r.out;
}

TEST(WorkloadCommand, PrintsTheSummaryByDefault) {
  const Outcome r = coda({"workload", "configs/workloads/resnet18.yaml"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("workload 'resnet18'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("arithmetic intensity"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("contraction"), std::string::npos) << r.out;
}

TEST(WorkloadCommand, ExportedTraceReloadsToTheSameSummaryAndRuns) {
  const testing::TempDir tmp;
  const auto trace = tmp.path() / "resnet18.json";
  const auto json = tmp.path() / "summary.json";
  const Outcome exported = coda({"workload", "configs/workloads/resnet18.yaml", "--passes",
                                 "verify,dead-op-elimination", "--export-trace", trace.c_str(),
                                 "--json", json.c_str(), "--summary"});
  ASSERT_EQ(exported.code, 0) << exported.err;
  const auto j = nlohmann::ordered_json::parse(slurp(json));
  EXPECT_EQ(j["passes"], "verify,dead-op-elimination");
  EXPECT_EQ(j["pass_reports"].size(), 2u);
  EXPECT_EQ(j["summary"]["name"], "resnet18");

  const Outcome reloaded = coda({"workload", trace.c_str()});
  ASSERT_EQ(reloaded.code, 0) << reloaded.err;
  // The same graph gives the same table; the pass notes come before it in the first run.
  EXPECT_NE(exported.out.find(reloaded.out), std::string::npos) << reloaded.out;

  // `coda run` reads traces too.
  const Outcome run = coda({"run", "--arch", "configs/arch/scalesim_32x32_os.yaml",
                            "--workload", trace.c_str(), "-q"});
  EXPECT_EQ(run.code, 0) << run.err;
}

TEST(WorkloadCommand, BadPassNamesAreUsageErrors) {
  const Outcome r =
      coda({"workload", "configs/workloads/resnet18.yaml", "--passes", "fold-batchnorm"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("error: --passes: unknown pass 'fold-batchnorm' (did you mean "
                       "'fold-batch-norm'?)"),
            std::string::npos)
      << r.err;
}

TEST(WorkloadCommand, BadTraceIsReportedWithItsPath) {
  const testing::TempDir tmp;
  const auto bad = tmp.write("bad.json", R"({"schema_version": 1, "name": "x", "tensors": [],
    "ops": [], "outptus": []})");
  const Outcome r = coda({"workload", bad.c_str()});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find(bad.string() +
                       ": error: outptus: unknown key (did you mean 'outputs'?)"),
            std::string::npos)
      << r.err;
}

TEST(WorkloadCommand, NeedsAWorkload) {
  const Outcome r = coda({"workload"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("name a workload file"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace coda::cli
