#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include "arch/arch_spec.h"
#include "cli/tests/run_coda.h"
#include "reports/tests/report_fixtures.h"

namespace coda::cli {
namespace {

namespace fs = std::filesystem;

#define SKIP_WITHOUT_GNUPLOT()                                                         \
  if (!reports::test::on_path("gnuplot"))                                               \
  GTEST_SKIP() << "'gnuplot' is not installed; install the Debian package gnuplot-nox " \
                  "(scripts/packages.sh lists it)"

std::string read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

void write_run(const fs::path& path, const results::RunResult& run) {
  write(path, nlohmann::ordered_json(run).dump(2) + "\n");
}

// The fixture sweep as `coda sweep` exports it (docs/sweeps.md).
std::string sweep_json(const reports::SweepResults& s) {
  nlohmann::ordered_json j;
  j["sweep"] = s.name;
  j["spec_hash"] = s.spec_hash;
  j["sampling"] = s.sampling;
  j["axes"] = nlohmann::ordered_json::array();
  for (const auto& a : s.axes) j["axes"].push_back({{"path", a.path}, {"values", a.values}});
  j["objectives"] = s.objectives;
  j["constraints"] = nlohmann::ordered_json::object();
  j["results"] = nlohmann::ordered_json::array();
  for (const auto& r : s.rows) {
    nlohmann::ordered_json values;
    for (std::size_t a = 0; a < s.axes.size(); ++a) values[s.axes[a].path] = r.values[a];
    nlohmann::ordered_json metrics;
    for (const auto& [name, value] : r.metrics) metrics[name] = value;
    j["results"].push_back({{"point", r.point}, {"workload", r.workload}, {"values", values},
                            {"arch_hash", "h"}, {"status", results::to_string(r.status)},
                            {"feasible", r.feasible},
                            {"metrics", metrics}, {"memory", "fits"},
                            {"constraints", nlohmann::ordered_json::object()}});
  }
  return j.dump(2) + "\n";
}

TEST(ReportCommand, SweepAndTwoRuns) {
  SKIP_WITHOUT_GNUPLOT();
  const fs::path dir = reports::test::scratch_dir("report_command_test", "sweep_and_runs");
  const reports::ReportInput input = reports::test::full_input();
  write(dir / "sweep" / "results.json", sweep_json(input.sweep->results));
  write_run(dir / "a" / "run.json", input.runs[0].run);
  write_run(dir / "b" / "run.json", input.runs[1].run);
  const std::string out = (dir / "out").string();
  const auto r = test::coda({"report", (dir / "sweep").c_str(), (dir / "a" / "run.json").c_str(),
                             (dir / "b").c_str(), "--out", out.c_str(), "--label", "dc"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, fmt::format("wrote {0}/report.html and {0}/report.md (10 charts in {0}/charts)\n",
                               out));
  // The fixture's arch files do not exist: the runs are classified by their recorded bounds.
  EXPECT_NE(r.err.find("note: run dc: no level bandwidths (its arch file "
                       "'configs/arch/datacenter.yaml' is not found)"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("note: run b: "), std::string::npos) << r.err;  // the folder's name
  const std::string md = read(dir / "out" / "report.md");
  EXPECT_NE(md.find("| 3 | 128 | 34 GB/s | 1 | 2 | knee |\n"), std::string::npos) << md;  // ms, mJ
  EXPECT_NE(md.find("| b | edge | w | none | 0.00022 | 8e-06 | 0.5 | 2 |\n"), std::string::npos);
  // Ten charts, each as an SVG and a Vega-Lite spec.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir / "out" / "charts"), fs::directory_iterator()),
            20);
  EXPECT_TRUE(fs::exists(dir / "out" / "charts" / "pareto_0.vl.json"));
  const std::string html = read(dir / "out" / "report.html");
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0U);
  EXPECT_EQ(html.find("<?xml"), std::string::npos);
}

TEST(ReportCommand, LevelBandwidthsComeFromTheRecordedArchFile) {
  SKIP_WITHOUT_GNUPLOT();
  // The run names the bundled TPU-like preset with its current hash, so its DRAM bandwidth
  // (34 GB/s, no limit on the SRAMs) becomes the dram roof; balance = 1e11 / 3.4e10 = 2.941.
  const std::string arch_file = "configs/arch/tpu_like_128x128_ws.yaml";
  Diagnostics diags;
  const auto arch = arch::load_arch(arch_file, diags);
  ASSERT_TRUE(arch) << diags.format_all();
  reports::RunInput in = reports::test::four_op_run("tpu", "tpu", 1);
  in.run.provenance.inputs = {{"arch", arch_file, results::hex_hash(arch->content_hash)}};
  const fs::path dir = reports::test::scratch_dir("report_command_test", "arch_roofs");
  write_run(dir / "tpu" / "run.json", in.run);
  const std::string out = (dir / "out").string();
  const auto r = test::coda({"report", (dir / "tpu").c_str(), "--out", out.c_str()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const std::string md = read(dir / "out" / "report.md");
  EXPECT_NE(md.find("level bandwidths: dram 34 GB/s"), std::string::npos) << md;
  // fc: 5 MACs per DRAM byte against a balance of 2.941: compute-bound on this machine.
  EXPECT_NE(md.find("| layer1.fc | 30 | 1000000 | compute | roofline | sram: 5; dram: 5 "
                    "(2.941) |"),
            std::string::npos)
      << md;
}

// A run whose ops computed in bf16 is held to the arch's bf16 peak, not to its matrix units'
// fastest (the run's processing_elements x clock): the H100 preset's dense bf16 989.4 TFLOP/s is
// 494.7 TMAC/s; its int8 peak is drawn beside it.
TEST(ReportCommand, TheRooflinePeakIsAtTheRunsType) {
  SKIP_WITHOUT_GNUPLOT();
  const std::string arch_file = "configs/arch/nvidia_h100_sxm.yaml";
  Diagnostics diags;
  const auto arch = arch::load_arch(arch_file, diags);
  ASSERT_TRUE(arch) << diags.format_all();
  reports::RunInput in = reports::test::four_op_run("gpu", "gpu", 1);
  in.run.provenance.inputs = {{"arch", arch_file, results::hex_hash(arch->content_hash)}};
  for (results::OpResult& op : in.run.ops) op.precision = "bf16";
  const fs::path dir = reports::test::scratch_dir("report_command_test", "precision_peak");
  write_run(dir / "gpu" / "run.json", in.run);
  const auto r = test::coda({"report", (dir / "gpu").c_str(), "--out", (dir / "out").c_str()});
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string md = read(dir / "out" / "report.md");
  EXPECT_NE(md.find("Roofline: peak 494.7 TMAC/s (from the arch's bf16 peak (the type of most "
                    "of the run's MACs)"),
            std::string::npos)
      << md;
  const std::string chart = read(dir / "out" / "charts" / "roofline_1.svg");
  EXPECT_NE(chart.find("bf16 peak (the run's)"), std::string::npos);
  EXPECT_NE(chart.find("int8 peak"), std::string::npos);
  // The same chart as Vega-Lite, written beside the SVG: the same peaks, as lines.
  const std::string spec = read(dir / "out" / "charts" / "roofline_1.vl.json");
  EXPECT_NE(spec.find("\"line\":\"bf16 peak (the run's)\""), std::string::npos) << spec;
  EXPECT_NE(spec.find("\"line\":\"int8 peak\""), std::string::npos) << spec;
}

TEST(ReportCommand, ABrokenRunJsonIsLocated) {
  const fs::path dir = reports::test::scratch_dir("report_command_test", "broken");
  write(dir / "run.json", "{\n  \"arch\": 3\n}\n");
  const auto r = test::coda({"report", (dir / "run.json").c_str(), "--out",
                             (dir / "out").c_str()});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find(fmt::format("{}:2:11: error: arch: expected a string, found a whole number",
                                   (dir / "run.json").string())),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("no report was written.\n"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir / "out"));
}

TEST(ReportCommand, AFolderWithoutResults) {
  const fs::path dir = reports::test::scratch_dir("report_command_test", "empty");
  const auto r = test::coda({"report", dir.c_str(), "--out", (dir / "out").c_str()});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, fmt::format("error: '{}' holds neither results.json (coda sweep --out), "
                               "run.json (coda run --out) nor serve.json (coda serve --out)\n",
                               dir.string()));
}

TEST(ReportCommand, MoreLabelsThanRuns) {
  const fs::path dir = reports::test::scratch_dir("report_command_test", "labels");
  write_run(dir / "run.json", reports::test::four_op_run("x", "x", 1).run);
  const auto r = test::coda({"report", (dir / "run.json").c_str(), "--out",
                             (dir / "out").c_str(), "--label", "a", "--label", "b"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "error: --label given 2 times for 1 run\n");
}

// The designs the Recommendation names are written whole next to the report, from the spec
// results.json names, byte for byte what --export-design writes; a results.json whose spec has
// changed since (here: its recorded hash edited) gets a note and no designs.
TEST(ReportCommand, TheRecommendedDesignsAreWrittenNextToTheReport) {
  SKIP_WITHOUT_GNUPLOT();
  const fs::path dir = reports::test::scratch_dir("report_command_test", "designs");
  const char* spec = "configs/sweeps/quick_array_sram_bw.yaml";
  const std::string sweep = (dir / "sweep").string();
  ASSERT_EQ(test::coda({"sweep", spec, "--out", sweep.c_str(), "--threads", "1"}).code, 0);
  const std::string out = (dir / "report").string();
  const auto r = test::coda({"report", sweep.c_str(), "--out", out.c_str()});
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string md = read(dir / "report" / "report.md");
  std::vector<fs::path> designs;
  for (const auto& entry : fs::directory_iterator(dir / "report" / "designs"))
    designs.push_back(entry.path());
  ASSERT_FALSE(designs.empty());
  for (const fs::path& design : designs) {
    EXPECT_NE(r.out.find("wrote " + design.string()), std::string::npos) << r.out;
    // point-N.yaml: N is a point the Recommendation names, and the file is --export-design's.
    const std::string stem = design.stem().string();  // "point-N"
    const std::string point = stem.substr(stem.find('-') + 1);
    EXPECT_NE(md.find("point " + point), std::string::npos) << point << "\n" << md;
    ASSERT_EQ(
        test::coda({"sweep", spec, "--out", sweep.c_str(), "--export-design", point.c_str()}).code,
        0);
    EXPECT_EQ(read(design), read(dir / "sweep" / "designs" / design.filename())) << design;
  }

  std::string results = read(dir / "sweep" / "results.json");
  const std::string key = "\"spec_hash\": \"";
  const std::size_t at = results.find(key) + key.size();
  results.replace(at, 16, "0123456789abcdef");
  write(dir / "edited" / "results.json", results);
  const std::string out2 = (dir / "report2").string();
  const auto edited = test::coda({"report", (dir / "edited").c_str(), "--out", out2.c_str()});
  ASSERT_EQ(edited.code, 0) << edited.err;
  EXPECT_NE(edited.err.find(fmt::format("note: no designs written: '{}' has changed since the "
                                        "sweep",
                                        spec)),
            std::string::npos)
      << edited.err;
  EXPECT_FALSE(fs::exists(dir / "report2" / "designs"));
}

}  // namespace
}  // namespace coda::cli
