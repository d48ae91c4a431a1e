// `coda run` twice on the same inputs writes byte-identical run.json and layers.csv: results
// depend only on the inputs (DESIGN.md, "results are deterministic for the same inputs").

#include <array>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "cli/commands.h"
#include "testing/temp_dir.h"

namespace coda {
namespace {

std::string read_text(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void run_into(const std::string& arch, const std::string& workload,
              const std::filesystem::path& out_dir) {
  const std::string out_arg = out_dir.string();
  const std::array<const char*, 9> args = {"coda",  "run",         "--arch",
                                           arch.c_str(), "--workload", workload.c_str(),
                                           "--out", out_arg.c_str(), "-q"};
  std::ostringstream out, err;
  ASSERT_EQ(cli::run_main(args, out, err), 0) << err.str();
}

void expect_identical_runs(const std::string& arch, const std::string& workload) {
  const testing::TempDir tmp;
  run_into(arch, workload, tmp.path() / "first");
  run_into(arch, workload, tmp.path() / "second");
  for (const char* file : {"run.json", "layers.csv"}) {
    const std::string first = read_text(tmp.path() / "first" / file);
    EXPECT_FALSE(first.empty()) << file;
    EXPECT_EQ(first, read_text(tmp.path() / "second" / file)) << file;
  }
}

TEST(Determinism, YamlWorkloadRunsTwiceIdentically) {
  expect_identical_runs("configs/arch/scalesim_32x32_os.yaml", "configs/workloads/resnet18.yaml");
}

TEST(Determinism, CsvWorkloadWithFiniteBandwidthRunsTwiceIdentically) {
  expect_identical_runs("configs/arch/tpu_like_128x128_ws.yaml",
                        "configs/workloads/scalesim/gemm_transformer.csv");
}

}  // namespace
}  // namespace coda
