#include "cli/tests/run_coda.h"

#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "testing/temp_dir.h"

namespace coda::cli {
namespace {

using test::coda;
using test::Outcome;

TEST(Cli, HelpOnEveryCommand) {
  for (const auto& args : std::vector<std::vector<const char*>>{
           {"--help"}, {"run", "--help"}, {"check-config", "--help"}, {"arch", "--help"},
           {"map", "--help"}}) {
    const Outcome r = coda(args);
    EXPECT_EQ(r.code, 0);
    EXPECT_NE(r.out.find("Usage"), std::string::npos) << r.out;
  }
}

// Latin-1 bytes in an arch's name (issue 23): `coda run --out` aborted with nlohmann's
// type_error 316 (exit 134) writing run.json, while check-config called the file ok. Now every
// command that reads it stops at a located error (exit 1), and none reaches the last-resort
// handler (kInternalErrorExit).
TEST(Cli, AnArchNameThatIsNotUtf8IsALocatedErrorEverywhere) {
  const testing::TempDir tmp;
  const auto arch = tmp.path() / "latin1.yaml";
  std::ofstream(arch) << "schema_version: 2\nname: \"caf\xe9\"\nclock: 1 GHz\ncompute:\n"
                         "  - {name: mxu, kind: systolic, array: {rows: 8, cols: 8, dataflow: "
                         "weight_stationary}, macs_per_pe: {int8: 1}}\n"
                         "memory:\n  - {name: spad, capacity: 64 KiB, holds: [inputs, weights, "
                         "outputs]}\ndram: {bandwidth: 10 GB/s}\n";
  const std::string located = arch.string() + ":2:7: error: name: not UTF-8 text: byte 4 (0xE9)";
  const std::string out = (tmp.path() / "out").string();
  for (const auto& args : std::vector<std::vector<const char*>>{
           {"check-config", arch.c_str()},
           {"run", "--arch", arch.c_str(), "--workload", "configs/workloads/resnet18.yaml",
            "--out", out.c_str()},
           {"arch", arch.c_str()}}) {
    const Outcome r = coda(args);
    EXPECT_EQ(r.code, 1) << args[0] << ": " << r.err;
    EXPECT_NE(r.err.find(located), std::string::npos) << args[0] << ": " << r.err;
    EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err;
  }
}

// Inputs that are not files, or sizes whose work would be unbounded (issue 23): each a located
// error at once, never a hang, an allocation failure or a silent 0.
TEST(Cli, DevicesPipesAndOpsTooLargeToFoldAreErrors) {
  // --arch /dev/zero grew to 10 GB before it was killed; a pipe blocks whoever opens it.
  const Outcome zero = coda({"run", "--arch", "/dev/zero", "--workload",
                             "configs/workloads/resnet18.yaml"});
  EXPECT_EQ(zero.code, 1);
  EXPECT_NE(zero.err.find("/dev/zero: error: '/dev/zero' is a character device, not a file"),
            std::string::npos)
      << zero.err;
  const testing::TempDir tmp;
  const auto fifo = tmp.path() / "arch.yaml";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const Outcome pipe = coda({"check-config", fifo.c_str()});
  EXPECT_EQ(pipe.code, 1);
  EXPECT_NE(pipe.err.find("is a pipe (FIFO), not a file"), std::string::npos) << pipe.err;
  // 2^20 on every side on a 32 x 32 array: 32768 x 32768 folds, past kMaxSystolicFolds (2^24);
  // it used to walk (and allocate) every fold. The same GEMM on a GPU is priced (no folds).
  const auto big = tmp.path() / "big.yaml";
  std::ofstream(big) << "schema_version: 1\nname: big\nlayers:\n"
                        "  - {name: g, gemm: {m: 1048576, n: 1048576, k: 1048576}}\n";
  const Outcome folds = coda({"run", "--arch", "configs/arch/scalesim_32x32_os.yaml",
                              "--workload", big.c_str(), "-q"});
  EXPECT_EQ(folds.code, 1);
  EXPECT_NE(folds.err.find("in 32768 row x 32768 column folds x 1 packs, more than the 16777216 "
                           "(2^24) a systolic op may have"),
            std::string::npos)
      << folds.err;
  EXPECT_EQ(coda({"run", "--arch", "configs/arch/nvidia_h100_sxm.yaml", "--workload", big.c_str(),
                  "-q"})
                .code,
            0);
}

// --export-design writes a point's whole arch; run on its own, it prices the workload as the
// sweep's point did (the same latency, to the last bit: the same document, the same model).
TEST(Cli, AnExportedDesignRunsAsItsSweepPointRan) {
  const testing::TempDir tmp;
  const std::string dir = (tmp.path() / "sweep").string();
  const char* spec = "configs/sweeps/quick_array_sram_bw.yaml";
  ASSERT_EQ(coda({"sweep", spec, "--out", dir.c_str(), "--threads", "1"}).code, 0);
  const Outcome exported = coda({"sweep", spec, "--out", dir.c_str(), "--export-design", "11,55"});
  ASSERT_EQ(exported.code, 0) << exported.err;
  const auto design = tmp.path() / "sweep" / "designs" / "point-11.yaml";
  EXPECT_NE(exported.out.find("wrote " + design.string()), std::string::npos) << exported.out;
  const std::string run_dir = (tmp.path() / "run").string();
  ASSERT_EQ(coda({"run", "--arch", design.c_str(), "--workload", "configs/workloads/resnet50.yaml",
                  "--out", run_dir.c_str(), "-q"})
                .code,
            0);
  const auto results = nlohmann::json::parse(std::ifstream(tmp.path() / "sweep" / "results.json"));
  const auto run = nlohmann::json::parse(std::ifstream(tmp.path() / "run" / "run.json"));
  double swept = -1;
  for (const auto& row : results["results"])
    if (row["point"] == 11) swept = row["metrics"]["latency_s"].get<double>();
  EXPECT_EQ(run["seconds"].get<double>(), swept);
  // Point 11 of the grid (rows slowest, 3 values per axis): 11 = 1*9 + 0*3 + 2, so rows 64
  // (index 0 of 64, 128, 256: 11 / 27 = 0), cols 128 (11 / 9 % 3 = 1), ifmap 1 MiB (0),
  // bandwidth 68 GB/s (2).
  std::ifstream yaml(design);
  const std::string text((std::istreambuf_iterator<char>(yaml)), {});
  EXPECT_NE(text.find("array.rows=64 array.cols=128 sram.ifmap=1 MiB dram.bandwidth=68 GB/s"),
            std::string::npos)
      << text;
  const Outcome missing = coda({"sweep", spec, "--out", dir.c_str(), "--export-design", "81"});
  EXPECT_EQ(missing.code, 1);
  EXPECT_NE(missing.err.find("has no point 81; its points are 0 to 80"), std::string::npos)
      << missing.err;
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

TEST(Cli, RunWithFusionAllKeepsActivationsOnChipAndSaysWhy) {
  // The 3-layer chain of mapper/tests/residency_test.cpp as a layer list (each layer reads its
  // predecessor's output) on its 8x8 array with a 4 KiB scratchpad at 1 B per cycle: C1 is kept,
  // C2 does not fit beside it. Cycles (sim/tests/fusion_pricing_test.cpp): 542 + 2390 + 4438.
  const testing::TempDir tmp;
  const auto arch = tmp.path() / "res_npu.yaml";
  std::ofstream(arch) << "schema_version: 2\nname: res-npu\nclock: 1 GHz\ncompute:\n"
                         "  - {name: mxu, kind: systolic, array: {rows: 8, cols: 8, dataflow: "
                         "weight_stationary}, macs_per_pe: {int8: 1}}\n"
                         "memory:\n  - {name: spad, capacity: 4 KiB, holds: [inputs, weights]}\n"
                         "  - {name: acc, capacity: 4 KiB, holds: [outputs]}\n"
                         "dram: {bandwidth: 1 GB/s}\n";
  const auto list = tmp.path() / "chain.yaml";
  std::ofstream(list) << "schema_version: 1\nname: chain\nlayers:\n"
                         "  - {name: l1, gemm: {m: 256, n: 8, k: 1}}\n"
                         "  - {name: l2, gemm: {m: 256, n: 8, k: 8}}\n"
                         "  - {name: l3, gemm: {m: 256, n: 8, k: 8}}\n";
  const Outcome r = coda({"run", "--arch", arch.c_str(), "--workload", list.c_str(), "--fusion",
                          "all", "--out", tmp.path().c_str()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("7370 cycles"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("residency: 1 activation kept on chip between ops (2 KiB over their "
                       "lifetimes, in an on-chip pool of 4 KiB), 4 KiB less DRAM traffic "
                       "(planned); 1 went through DRAM (reasons in run.json), e.g. 'l2.C' (2 KiB) "
                       "does not fit the 4 KiB of on-chip memory holding inputs on 'res-npu' "
                       "while 'l2' runs: 2 KiB is held by other tensors and its own buffers need "
                       "64 B"),
            std::string::npos)
      << r.out;
  std::ifstream json(tmp.path() / "run.json");
  const auto run = nlohmann::json::parse(json);
  const auto& kept = run.at("residency").at("kept");
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept[0].at("tensor"), "l1.C");
  EXPECT_EQ(kept[0].at("last_reader"), "l2");
  EXPECT_EQ(kept[0].at("dram_bytes_saved"), 4096);
  EXPECT_EQ(run.at("residency").at("rejected").at(0).at("tensor"), "l2.C");
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
  EXPECT_NE(r.out.find("scalesim_32x32_os.yaml: ok (arch 'scalesim-32x32-os', 1 core: array "
                       "32x32 output_stationary)"),
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

// coda-bench's case lists and measurement tables are read by their own readers, not as an arch
// or a SCALE-Sim topology: the smoke list has 27 `- {kernel: ...}` entries, the hand-derived
// fixture table 6 rows under its header.
TEST(Cli, CheckConfigKnowsCaseListsAndMeasurementTables) {
  const Outcome r = coda({"check-config", "validation/cases/smoke.yaml",
                          "validation/tests/fixtures/h200_hand_derived.csv",
                          "configs/workloads/scalesim/alexnet.csv"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("smoke.yaml: ok (validation case list, 27 cases)"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("h200_hand_derived.csv: ok (measurements, 6 rows)"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("alexnet.csv: ok (workload 'alexnet', 8 ops)"), std::string::npos)
      << r.out;
}

// A corpus manifest (a YAML with a `sources:` list; an arch's `sources:` is text) is read with
// every CSV and arch it names: TOP/validation/published/corpus.yaml, its arch paths relative to
// TOP (the nearest folder above it with configs/). The rows are made up, not published.
TEST(Cli, CheckConfigReadsACorpusManifestAndEveryFileItNames) {
  const testing::TempDir tmp;
  const auto& top = tmp.path();
  const auto folder = top / "validation/published";
  std::filesystem::create_directories(top / "configs/arch");
  std::filesystem::create_directories(folder / "gpu");
  std::filesystem::copy_file("configs/arch/eyeriss.yaml", top / "configs/arch/eyeriss.yaml");
  std::ofstream(top / "configs/arch/broken.yaml") << "schema_version: 1\nname: broken\n";
  std::ofstream(folder / "gpu/a.csv")
      << "kernel,dtype,shape,model,median_us,source\n"
         "gemm,fp16,m=64 n=64 k=64,,10,FIXTURE: not a publication\n"
         "network,int8,batch=1,resnet18,900,FIXTURE: not a publication\n";
  const std::string entry =
      "  - {id: a, file: gpu/a.csv, arch: configs/arch/eyeriss.yaml, split: validation,\n"
      "     classes: [gemm, network], citation: FIXTURE}\n";
  std::ofstream(folder / "corpus.yaml") << "schema_version: 1\nsources:\n" << entry;
  std::ofstream(folder / "bad.yaml")
      << "schema_version: 1\nsources:\n"
      << "  - {id: b, file: gpu/a.csv, arch: configs/arch/broken.yaml, split: validation,\n"
         "     classes: [gemm], citation: FIXTURE}\n";
  const Outcome good = coda({"check-config", (folder / "corpus.yaml").c_str()});
  EXPECT_EQ(good.code, 0) << good.err;
  EXPECT_NE(good.out.find("corpus.yaml: ok (published corpus, 1 source, 2 rows)"),
            std::string::npos)
      << good.out;
  const Outcome bad = coda({"check-config", (folder / "bad.yaml").c_str()});
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.err.find((top / "configs/arch/broken.yaml").string() + ":"), std::string::npos)
      << bad.err;
}

// `coda run --llm` builds the model as `coda workload --llm` does: the same time as running the
// trace that command exports, and run.json names the source with every parameter.
TEST(Cli, RunBuildsAnLlmItselfAsTheWorkloadCommandExportsIt) {
  const testing::TempDir tmp;
  const auto trace = tmp.path() / "decode.json";
  const std::vector<const char*> llm = {"--llm", "configs/workloads/llm/gpt2_small.yaml",
                                        "--phase", "decode", "--batch", "2", "--seq", "511"};
  std::vector<const char*> exported = {"workload"};
  exported.insert(exported.end(), llm.begin(), llm.end());
  exported.insert(exported.end(), {"--export-trace", trace.c_str()});
  ASSERT_EQ(coda(exported).code, 0);
  const auto cycles_and_source = [&](const std::filesystem::path& out) {
    std::ifstream in(out / "run.json");
    const auto j = nlohmann::json::parse(in);
    return std::make_pair(j.at("total").at("cycles").get<std::uint64_t>(),
                          j.at("provenance").at("inputs").at(1).at("path").get<std::string>());
  };
  const auto from_trace = tmp.path() / "trace";
  ASSERT_EQ(coda({"run", "--arch", "configs/arch/nvidia_h100_sxm.yaml", "--workload",
                  trace.c_str(), "--out", from_trace.c_str(), "-q"})
                .code,
            0);
  const auto built = tmp.path() / "built";
  std::vector<const char*> run = {"run", "--arch", "configs/arch/nvidia_h100_sxm.yaml", "--out",
                                  built.c_str()};
  run.insert(run.end(), llm.begin(), llm.end());
  const Outcome r = coda(run);
  ASSERT_EQ(r.code, 0) << r.err;
  // The LLM's headline comes before the table.
  EXPECT_NE(r.out.find("decode phase, batch 2, sequence 511"), std::string::npos) << r.out;
  EXPECT_EQ(cycles_and_source(built).first, cycles_and_source(from_trace).first);
  EXPECT_EQ(cycles_and_source(from_trace).second, trace.string());
  EXPECT_EQ(cycles_and_source(built).second,
            "llm configs/workloads/llm/gpt2_small.yaml phase=decode batch=2 seq=511 dtype=own "
            "recompute=0 tp=1 pp=1 dp=1 stage=0 micro_batches=1 sequence_parallel=0");
  // No source at all, or two, is a usage error.
  const Outcome none = coda({"run", "--arch", "configs/arch/nvidia_h100_sxm.yaml"});
  EXPECT_EQ(none.code, 2);
  EXPECT_NE(none.err.find("name a workload: --workload FILE, --llm MODEL or --cnn NAME"),
            std::string::npos)
      << none.err;
  EXPECT_EQ(coda({"run", "--arch", "configs/arch/nvidia_h100_sxm.yaml", "--cnn", "resnet18",
                  "--workload", "configs/workloads/resnet18.yaml"})
                .code,
            2);
  // A CNN of the zoo runs on its own too.
  EXPECT_EQ(coda({"run", "--arch", "configs/arch/nvidia_h100_sxm.yaml", "--cnn", "resnet18", "-q"})
                .code,
            0);
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
  EXPECT_NE(r.err.find("systemc"), std::string::npos) << r.err;  // the known ones are listed
  // A timeline that cannot be written is a usage error, before anything runs.
  const Outcome t = coda({"run", "--arch", "configs/arch/systolic_8x8.yaml", "--workload",
                          "configs/workloads/resnet18.yaml", "--trace", "no/such/folder/t.json"});
  EXPECT_EQ(t.code, 2);
  EXPECT_NE(t.err.find("--trace: cannot write 'no/such/folder/t.json'"), std::string::npos)
      << t.err;
}

// The analytical engine's timeline: one complete event per op, back to back on its unit's track
// (each starts where the one before ended), ending at the run's total time; a DRAM-bandwidth
// counter per op and one back to 0 at the end.
TEST(Cli, AnalyticalEngineWritesItsTimeline) {
  const testing::TempDir tmp;
  const auto trace = tmp.path() / "t.json";
  const auto out = tmp.path() / "run";
  const Outcome r = coda({"run", "--arch", "configs/arch/nvidia_h100_sxm.yaml", "--cnn",
                          "resnet18", "--trace", trace.c_str(), "--out", out.c_str(), "-q"});
  ASSERT_EQ(r.code, 0) << r.err;
  std::ifstream in(trace);
  const auto j = nlohmann::json::parse(in);
  std::ifstream run_in(out / "run.json");
  const auto run = nlohmann::json::parse(run_in);
  const std::size_t ops = run.at("ops").size();
  std::size_t complete = 0, counters = 0;
  double end_us = 0;
  for (const auto& e : j.at("traceEvents")) {
    const std::string ph = e.at("ph");
    if (ph == "X") {
      EXPECT_NEAR(e.at("ts").get<double>(), end_us, 1e-6 * (1 + end_us)) << e.at("name");
      end_us = e.at("ts").get<double>() + e.at("dur").get<double>();
      ++complete;
    }
    if (ph == "C") ++counters;
  }
  EXPECT_EQ(complete, ops);
  EXPECT_EQ(counters, ops + 1);
  EXPECT_NEAR(end_us, run.at("seconds").get<double>() * 1e6, 1e-6 * end_us);
}

TEST(Cli, SystemCEngineRunsAndWritesItsTimeline) {
  // GPT-2 small decode on the RK3588 NPU (3 cores): the same table as the analytical engine,
  // plus the stalls by cause and the DRAM's activity; the trace file is trace-event JSON.
  const testing::TempDir tmp;
  const auto trace = tmp.path() / "decode.trace.json";
  const std::string trace_arg = trace.string();
  const std::string out_arg = tmp.path().string();
  const Outcome r = coda({"run", "--arch", "configs/arch/rk3588_npu.yaml", "--workload",
                          "configs/workloads/gpt2_small_decode.yaml", "--engine", "systemc",
                          "--trace", trace_arg.c_str(), "--out", out_arg.c_str()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("systemc engine"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("stalls: DRAM bandwidth"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("dram: "), std::string::npos) << r.out;
  std::ifstream in(trace);
  ASSERT_TRUE(in);
  const auto json = nlohmann::json::parse(in);
  EXPECT_FALSE(json.at("traceEvents").empty());
  std::ifstream run(tmp.path() / "run.json");
  const auto result = nlohmann::json::parse(run);
  EXPECT_EQ(result.at("provenance").at("engine"), "systemc");
  EXPECT_TRUE(result.contains("stalls"));
  EXPECT_TRUE(result.contains("engine_notes"));
}

TEST(Cli, ArchSummaryPrintsPeaksLevelsEnergyAndArea) {
  const Outcome r = coda({"arch", "configs/arch/nvidia_a100_sxm_80gb.yaml", "--summary"});
  ASSERT_EQ(r.code, 0) << r.err;
  // A100 SXM datasheet: 312 TFLOPS dense fp16, 624 TOPS int8, 2039 GB/s of HBM2e. The preset's
  // 108 SMs x 1024 fp16 MACs x 2 x 1.41 GHz = 311.87e12 (NVIDIA rounds to 312).
  EXPECT_NE(r.out.find("matrix fp16           311.9 TOP/s"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("matrix int8           623.7 TOP/s"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("2.039 TB/s"), std::string::npos) << r.out;
  for (const char* section : {"Peak (dense", "Memory (", "ridge", "Energy (", "Area: ",
                              "Power budget 400 W"})
    EXPECT_NE(r.out.find(section), std::string::npos) << section << "\n" << r.out;
  // The RK3588 preset's array keys (accumulation, weight_preload) and the DRAM timing model.
  const Outcome rk = coda({"arch", "configs/arch/rk3588_npu.yaml"});
  ASSERT_EQ(rk.code, 0) << rk.err;
  EXPECT_NE(rk.out.find("  cna: accumulation stripes, weight preload overlapped\n"),
            std::string::npos)
      << rk.out;
  EXPECT_NE(rk.out.find("  dram model coda\n"), std::string::npos) << rk.out;
  // A broken file is reported with its location; the others still print.
  const testing::TempDir tmp;
  const auto bad = (tmp.path() / "bad.yaml").string();
  std::ofstream(bad) << "schema_version: 2\nname: b\nclock: 1 GHz\ncompute: []\n"
                        "dram: {bandwidth: 1 TB/s}\n";
  const Outcome both = coda({"arch", bad.c_str(), "configs/arch/eyeriss.yaml"});
  EXPECT_EQ(both.code, 1);
  EXPECT_NE(both.err.find("bad.yaml:4:10: error: compute: a core needs at least one compute unit"),
            std::string::npos)
      << both.err;
  EXPECT_NE(both.out.find("eyeriss"), std::string::npos);
}

TEST(Cli, RunOnAGpuPresetAndPrecisionOverride) {
  // ResNet-18's layer list is int8; the A100 computes int8 on its tensor cores.
  const Outcome r = coda({"run", "--arch", "configs/arch/nvidia_a100_sxm_80gb.yaml", "--workload",
                          "configs/workloads/resnet18.yaml"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("tensor_core tile_m="), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("TOPS/W"), std::string::npos) << r.out;
  // Eyeriss computes 16-bit only (fp16 in coda): int8 layers fail with the reason, and
  // --precision fp16 runs them.
  const Outcome eyeriss = coda({"run", "--arch", "configs/arch/eyeriss.yaml", "--workload",
                                "configs/workloads/alexnet.yaml"});
  EXPECT_EQ(eyeriss.code, 1);
  EXPECT_NE(eyeriss.err.find("which 'eyeriss''s systolic unit"), std::string::npos)
      << eyeriss.err;
  const Outcome fp16 = coda({"run", "--arch", "configs/arch/eyeriss.yaml", "--workload",
                             "configs/workloads/alexnet.yaml", "--precision", "fp16", "-q"});
  EXPECT_EQ(fp16.code, 0) << fp16.err;
  const Outcome bad = coda({"run", "--arch", "configs/arch/eyeriss.yaml", "--workload",
                            "configs/workloads/alexnet.yaml", "--precision", "fp61"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--precision: unknown precision 'fp61'; expected one of: fp32, tf32"),
            std::string::npos)
      << bad.err;
}

TEST(Cli, MapPrintsALoopNestAndRejections) {
  const Outcome r = coda({"map", "--arch", "configs/arch/scalesim_32x32_os.yaml", "--workload",
                          "configs/workloads/resnet18.yaml", "--op", "fc", "--evaluations",
                          "2000", "--search", "random", "--seed", "3"});
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* part : {"fc: random search, 2000 points evaluated", "best mapping",
                           "dram [", "cost: ", "runners-up:", "rejected:"})
    EXPECT_NE(r.out.find(part), std::string::npos) << part << "\n" << r.out;
  // The same seed prints the same mapping.
  const Outcome again = coda({"map", "--arch", "configs/arch/scalesim_32x32_os.yaml",
                              "--workload", "configs/workloads/resnet18.yaml", "--op", "fc",
                              "--evaluations", "2000", "--search", "random", "--seed", "3"});
  EXPECT_EQ(again.out, r.out);
  // The whole graph: repeated layer shapes come from the cache.
  const Outcome all = coda({"map", "--arch", "configs/arch/scalesim_32x32_os.yaml", "--workload",
                            "configs/workloads/resnet18.yaml", "--evaluations", "200"});
  ASSERT_EQ(all.code, 0) << all.err;
  EXPECT_NE(all.out.find("21 contractions, 12 distinct shapes mapped, 9 from the cache"),
            std::string::npos)
      << all.out;
}

TEST(Cli, MapRejectsUnknownOpsObjectivesAndSearches) {
  const Outcome op = coda({"map", "--arch", "configs/arch/systolic_8x8.yaml", "--workload",
                           "configs/workloads/alexnet.yaml", "--op", "conv9"});
  EXPECT_EQ(op.code, 2);
  EXPECT_NE(op.err.find("'conv9' is not a contraction of configs/workloads/alexnet.yaml; its "
                        "contractions: conv1,"),
            std::string::npos)
      << op.err;
  const Outcome objective = coda({"map", "--arch", "configs/arch/systolic_8x8.yaml",
                                  "--workload", "configs/workloads/alexnet.yaml", "--objective",
                                  "speed"});
  EXPECT_EQ(objective.code, 2);
  EXPECT_NE(objective.err.find("unknown objective 'speed'"), std::string::npos);
  const Outcome search = coda({"map", "--arch", "configs/arch/systolic_8x8.yaml", "--workload",
                               "configs/workloads/alexnet.yaml", "--search", "genetic"});
  EXPECT_EQ(search.code, 2);
  EXPECT_NE(search.err.find("unknown search 'genetic'"), std::string::npos);
}

TEST(Cli, RunWithTheMappingSearchAndTheMemoryFootprint) {
  const testing::TempDir tmp;
  const Outcome r = coda({"run", "--arch", "configs/arch/scalesim_32x32_os.yaml", "--workload",
                          "configs/workloads/resnet18.yaml", "--mapper", "search",
                          "--evaluations", "500", "--out", tmp.path().c_str()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("mapper search: heuristic, latency: 21 of 21 contractions priced from "
                       "their searched loop nest"),
            std::string::npos)
      << r.out;
  // ResNet-18's int8 weights: 11.69 M parameters, 11.14 MiB; schema-1 arrays state no DRAM size.
  // The activations' arena is 1.48 MiB since each layer of the list reads its predecessor's
  // output (docs/workloads.md, "Dataflow"; 2.89 MiB when every layer had an input of its own).
  EXPECT_NE(r.out.find("memory: needs 12.62 MiB of DRAM (weights 11.14 MiB"), std::string::npos)
      << r.out;
  std::ifstream json(tmp.path() / "run.json");
  const std::string text((std::istreambuf_iterator<char>(json)), {});
  EXPECT_NE(text.find("\"mapper\": \"search: heuristic, latency\""), std::string::npos);
  EXPECT_NE(text.find("\"loop_nest\": \"dram ["), std::string::npos);

  // A DRAM too small for the weights: the run still prices every op and says it does not fit.
  const auto arch = tmp.path() / "small_dram.yaml";
  std::ofstream(arch) << "schema_version: 2\nname: small-dram\nclock: 1 GHz\ncompute:\n"
                         "  - {name: mxu, kind: systolic, array: {rows: 32, cols: 32, dataflow: "
                         "output_stationary}, macs_per_pe: {int8: 1}}\n"
                         "memory:\n  - {name: buf, capacity: 256 KiB}\n"
                         "dram: {bandwidth: 10 GB/s, capacity: 8 MiB}\n";
  const Outcome small = coda({"run", "--arch", arch.c_str(), "--workload",
                              "configs/workloads/resnet18.yaml"});
  ASSERT_EQ(small.code, 0) << small.err;
  EXPECT_NE(small.out.find("memory: DOES NOT FIT: needs 12.62 MiB of DRAM, 8 MiB available"),
            std::string::npos)
      << small.out;

  // Search options need --mapper search; an unknown mapper is a usage error.
  EXPECT_EQ(coda({"run", "--arch", "configs/arch/scalesim_32x32_os.yaml", "--workload",
                  "configs/workloads/resnet18.yaml", "--objective", "energy"})
                .code,
            2);
  EXPECT_EQ(coda({"run", "--arch", "configs/arch/scalesim_32x32_os.yaml", "--workload",
                  "configs/workloads/resnet18.yaml", "--mapper", "greedy"})
                .code,
            2);
}

// What bash completes from `coda completion bash`'s script, for the words typed so far (the last
// being completed): the script sourced in a bash of its own, COMPREPLY printed.
std::string complete(const std::filesystem::path& script, const std::string& words) {
  const std::string command = "bash -c 'source \"" + script.string() +
                              "\"; COMP_WORDS=(" + words +
                              "); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _coda; "
                              "echo \"${COMPREPLY[*]}\"' 2>&1";
  std::string out;
  if (FILE* pipe = popen(command.c_str(), "r")) {
    char buffer[4096];
    while (fgets(buffer, sizeof buffer, pipe) != nullptr) out += buffer;
    pclose(pipe);
  }
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

TEST(Cli, CompletionScriptCompletesSubcommandsOptionsAndValues) {
  const Outcome bash = coda({"completion", "bash"});
  ASSERT_EQ(bash.code, 0) << bash.err;
  const testing::TempDir tmp;
  const auto script = tmp.write("coda.bash", bash.out);
  // Subcommands by prefix; a subcommand's options; an option's set of values (from its
  // validator, as --help lists them); files where a path goes; hidden options left out.
  EXPECT_EQ(complete(script, "coda r"), "run report");
  EXPECT_EQ(complete(script, "coda run --fu"), "--fusion");
  EXPECT_EQ(complete(script, "coda run --fusion ep"), "epilogue");
  EXPECT_EQ(complete(script, "coda train --train-precision \"\""), "pure mixed autocast fp8");
  EXPECT_EQ(complete(script, "coda completion z"), "");  // a positional: files, none match
  EXPECT_EQ(complete(script, "coda run --arch configs/arch/nvidia_h10"),
            "configs/arch/nvidia_h100_sxm.yaml");
  EXPECT_EQ(bash.out.find("--test-pause-after"), std::string::npos);
  // zsh: the same script through bashcompinit.
  const Outcome zsh = coda({"completion", "zsh"});
  ASSERT_EQ(zsh.code, 0);
  EXPECT_EQ(zsh.out.rfind("# zsh completion", 0), 0u);
  EXPECT_NE(zsh.out.find("bashcompinit"), std::string::npos);
  EXPECT_EQ(coda({"completion", "fish"}).code, 2);
}

}  // namespace
}  // namespace coda::cli
