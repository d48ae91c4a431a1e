#include "cli/tests/run_coda.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include <gtest/gtest.h>

#include "testing/temp_dir.h"

namespace coda::cli {
namespace {

using test::coda;
using test::Outcome;

TEST(Cli, HelpOnEveryCommand) {
  for (const auto& args : std::vector<std::vector<const char*>>{
           {"--help"}, {"run", "--help"}, {"check-config", "--help"}}) {
    const Outcome r = coda(args);
    EXPECT_EQ(r.code, 0);
    EXPECT_NE(r.out.find("Usage"), std::string::npos) << r.out;
  }
}

TEST(Cli, RunPrintsTheTableAndWritesResults) {
  const testing::TempDir tmp;
  const auto& dir = tmp.path();
  const Outcome r = coda({"run", "--arch", "configs/arch/scalesim_32x32_os.yaml", "--workload",
                          "configs/workloads/resnet18.yaml", "--out", dir.c_str()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("conv1"), std::string::npos);
  EXPECT_NE(r.out.find("163856"), std::string::npos);  // conv1, see sim/tests/driver_test.cpp
  std::ifstream csv(dir / "layers.csv");
  std::string header;
  std::getline(csv, header);
  EXPECT_EQ(header.rfind("layer,Sr,Sc,T,row_folds,col_folds,groups,", 0), 0u) << header;
  std::size_t rows = 0;
  for (std::string line; std::getline(csv, line);) ++rows;
  EXPECT_EQ(rows, 21u);
  EXPECT_TRUE(std::filesystem::exists(dir / "run.json"));
}

TEST(Cli, CheckConfigPrintsEveryErrorInCompilerFormat) {
  const testing::TempDir tmp;
  const auto& dir = tmp.path();
  const auto bad = dir / "bad.yaml";
  std::ofstream(bad) << "schema_version: 1\nname: x\nclock: 1 GHz\n"
                        "array: {rows: 8, colz: 8, dataflow: output_stationary}\n"
                        "sram: {ifmap: 64, filter: 1 KiB, ofmap: 1 KiB}\n"
                        "dram: {bandwidth: unlimited}\n";
  const Outcome r = coda({"check-config", "configs/arch/scalesim_32x32_os.yaml", bad.c_str()});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("scalesim_32x32_os.yaml: ok (arch 'scalesim-32x32-os', 32x32 "
                       "output_stationary)"),
            std::string::npos)
      << r.out;
  const std::string b = bad.string();
  EXPECT_NE(r.err.find(b + ":4:8: error: array: missing required key 'cols'"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find(b + ":4:18: error: array.colz: unknown key (did you mean 'cols'?)"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find(b + ":5:15: error: sram.ifmap: \"64\" has no unit"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find(b + ": 3 errors"), std::string::npos) << r.err;
}

TEST(Cli, CheckConfigKnowsLlmConfigsAndTraces) {
  const Outcome r = coda({"check-config", "configs/workloads/llm/llama3_8b.yaml"});
  EXPECT_EQ(r.code, 0) << r.err;
  // LLaMA-3-8B: 32 layers, hidden 4096, 32 query heads sharing 8 KV heads (its config.json).
  EXPECT_NE(r.out.find("ok (llm 'llama3_8b', 32 layers, hidden 4096, 32 heads (8 kv))"),
            std::string::npos)
      << r.out;
}

TEST(Cli, RunWithBadInputExitsNonZeroWithDiagnostics) {
  const testing::TempDir tmp;
  const auto& dir = tmp.path();
  const auto bad = dir / "bad.csv";
  std::ofstream(bad) << "Layer, M, N, K,\nfc1, 10, -3, 4,\n";
  const Outcome r = coda({"run", "--arch", "configs/arch/systolic_8x8.yaml", "--workload",
                          bad.c_str()});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find(bad.string() + ":2:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("no simulation was run"), std::string::npos) << r.err;
}

TEST(Cli, MissingFileAndUnknownEngineAreUsageErrors) {
  EXPECT_EQ(coda({"run", "--arch", "nope.yaml", "--workload", "configs/workloads/resnet18.yaml"})
                .code,
            2);
  const Outcome r = coda({"run", "--arch", "configs/arch/systolic_8x8.yaml", "--workload",
                          "configs/workloads/resnet18.yaml", "--engine", "magic"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("unknown engine 'magic'"), std::string::npos);
}

}  // namespace
}  // namespace coda::cli
