#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli/tests/run_coda.h"
#include "testing/temp_dir.h"

namespace coda::cli {
namespace {

using test::coda;
using test::Outcome;

constexpr const char* kArch = "configs/arch/nvidia_h100_sxm.yaml";
constexpr const char* kModel = "configs/workloads/llm/llama2_7b.yaml";

std::size_t lines(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::size_t n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

TEST(Serve, OfflineRunWritesItsFiles) {
  const testing::TempDir tmp;
  const Outcome r = coda({"serve", "--arch", kArch, "--llm", kModel, "--offline", "--requests", "8",
                          "--input-len", "64", "--output-len", "4", "--out", tmp.path().c_str()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("TTFT"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("KV cache"), std::string::npos);
  std::ifstream json(tmp.path() / "serve.json");
  const auto doc = nlohmann::json::parse(json);
  const auto& s = doc["summary"];
  EXPECT_EQ(s["requests"], 8);
  // 8 prompts of 64 tokens fit one 2048-token iteration; then 3 decode iterations of 8.
  EXPECT_EQ(s["iterations"], 4);
  EXPECT_DOUBLE_EQ(s["mean_batch"].get<double>(), 8.0);
  EXPECT_NEAR(s["output_tokens_per_s"].get<double>(), 32 / s["duration_s"].get<double>(), 1e-6);
  EXPECT_EQ(doc["config"]["arrivals"], "offline");
  EXPECT_EQ(lines(tmp.path() / "requests.csv"), 9u);
  EXPECT_EQ(lines(tmp.path() / "iterations.csv"), 5u);
}

// --batching mixed: 8 prompts of 64 tokens at 0 fit one iteration either way (512 of the
// 8192-token budget), so the run is as prefill-first's above, 4 iterations; the headline and
// serve.json name the mode. --chunked-prefill is --batching chunked, so both is an error.
TEST(Serve, TheBatchingModeIsNamed) {
  const testing::TempDir tmp;
  const Outcome r = coda({"serve", "--arch", kArch, "--llm", kModel, "--offline", "--requests", "8",
                          "--input-len", "64", "--output-len", "4", "--batching", "mixed", "--out",
                          tmp.path().c_str()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("8192 tokens per iteration, mixed batches"), std::string::npos) << r.out;
  std::ifstream json(tmp.path() / "serve.json");
  const auto doc = nlohmann::json::parse(json);
  EXPECT_EQ(doc["config"]["scheduler"]["batching"], "mixed");
  EXPECT_EQ(doc["summary"]["iterations"], 4);
  // --runtime tensorrt_llm is mixed batches with guaranteed_no_evict admission unless told.
  const Outcome trt =
      coda({"serve", "--arch", kArch, "--llm", kModel, "--offline", "--requests", "8",
            "--input-len", "64", "--output-len", "4", "--runtime", "tensorrt_llm"});
  ASSERT_EQ(trt.code, 0) << trt.err;
  EXPECT_NE(trt.out.find("mixed batches, fcfs, guaranteed_no_evict"), std::string::npos) << trt.out;
  const Outcome told = coda({"serve", "--arch", kArch, "--llm", kModel, "--offline", "--requests",
                             "8", "--input-len", "64", "--output-len", "4", "--runtime",
                             "tensorrt_llm", "--kv-admission", "on_demand"});
  ASSERT_EQ(told.code, 0) << told.err;
  EXPECT_NE(told.out.find("mixed batches, fcfs, on_demand"), std::string::npos) << told.out;
  const Outcome both = coda({"serve", "--arch", kArch, "--llm", kModel, "--offline",
                             "--chunked-prefill", "--batching", "mixed"});
  EXPECT_EQ(both.code, 2);
  EXPECT_NE(both.err.find("--batching"), std::string::npos) << both.err;
}

// --preemption swap: the two 16-token requests of the simulator's swap test in a 4-block cache
// (--kv-blocks 4, --watermark 0): request 1 is swapped out once and back; vLLM's 4 GiB of swap
// space holds 512 of LLaMA-2-7B's 8 MiB blocks. The headline, serve.json and iterations.csv say
// so; --swap-space without --preemption swap is an error, and so is an arch with no host link.
TEST(Serve, SwapPreemptionIsReported) {
  const testing::TempDir tmp;
  const Outcome r = coda({"serve",        "--arch",    kArch,          "--llm",
                          kModel,         "--offline", "--requests",   "2",
                          "--input-len",  "16",        "--output-len", "30",
                          "--kv-blocks",  "4",         "--watermark",  "0",
                          "--preemption", "swap",      "--out",        tmp.path().c_str()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("preemption by swap to 4.00 GiB of host memory a chip (512 blocks)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("preemptions 1 (1 swapped out; 1.536 ms of swap copies)"), std::string::npos)
      << r.out;
  std::ifstream json(tmp.path() / "serve.json");
  const auto doc = nlohmann::json::parse(json);
  EXPECT_EQ(doc["config"]["scheduler"]["preemption"], "swap");
  EXPECT_EQ(doc["kv_cache"]["swap_blocks"], 512);
  EXPECT_EQ(doc["summary"]["swap_outs"], 1);
  std::ifstream csv(tmp.path() / "iterations.csv");
  std::string header;
  std::getline(csv, header);
  EXPECT_NE(header.find(",swapped_out,swapped_in,swapped,swap_blocks,swap_s"), std::string::npos)
      << header;
  const Outcome stray =
      coda({"serve", "--arch", kArch, "--llm", kModel, "--offline", "--swap-space", "8"});
  EXPECT_EQ(stray.code, 2);
  EXPECT_NE(stray.err.find("only with --preemption swap"), std::string::npos) << stray.err;
  const Outcome edge =
      coda({"serve", "--arch", "configs/arch/jetson_agx_orin_gpu.yaml", "--llm", kModel, "--dtype",
            "fp16", "--offline", "--requests", "2", "--preemption", "swap"});
  EXPECT_EQ(edge.code, 1);
  EXPECT_NE(edge.err.find("states no host link"), std::string::npos) << edge.err;
}

TEST(Serve, DisaggregatedPoolsAreRecorded) {
  const testing::TempDir tmp;
  const Outcome r = coda({"serve", "--arch", kArch, "--llm", kModel, "--offline", "--requests", "4",
                          "--input-len", "64", "--output-len", "3", "--disaggregate", "1:2",
                          "--out", tmp.path().c_str()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("1 prefill replica(s) at TP 1 + 2 decode at TP 1"), std::string::npos)
      << r.out;
  std::ifstream json(tmp.path() / "serve.json");
  const auto doc = nlohmann::json::parse(json);
  EXPECT_EQ(doc["config"]["replicas"], 3);
  EXPECT_EQ(doc["config"]["disaggregated"]["decode_replicas"], 2);
  EXPECT_EQ(doc["summary"]["requests"], 4);
}

// --decode-tp runs the decode pool at its own TP: the headline names both, serve.json records
// it with the decode pool's KV cache (LLaMA-2-7B's token is 512 KiB over all 32 heads: 256 KiB a
// chip at TP 2); without --disaggregate it is an error.
TEST(Serve, ADecodePoolAtItsOwnTpIsRecorded) {
  const testing::TempDir tmp;
  const Outcome r = coda({"serve", "--arch", kArch, "--llm", kModel, "--offline", "--requests", "4",
                          "--input-len", "64", "--output-len", "3", "--disaggregate", "1:1",
                          "--decode-tp", "2", "--out", tmp.path().c_str()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("1 prefill replica(s) at TP 1 + 1 decode at TP 2"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("decode pool at TP 2"), std::string::npos) << r.out;
  std::ifstream json(tmp.path() / "serve.json");
  const auto doc = nlohmann::json::parse(json);
  EXPECT_EQ(doc["config"]["disaggregated"]["decode_tp"], 2);
  EXPECT_EQ(doc["decode_kv_cache"]["kv_bytes_per_token"], 256 * 1024);
  EXPECT_EQ(doc["summary"]["requests"], 4);
  const Outcome alone =
      coda({"serve", "--arch", kArch, "--llm", kModel, "--offline", "--decode-tp", "2"});
  EXPECT_EQ(alone.code, 2);
  EXPECT_NE(alone.err.find("--disaggregate"), std::string::npos) << alone.err;
}

TEST(Serve, PipelineStagesAreRecorded) {
  const testing::TempDir tmp;
  const Outcome r =
      coda({"serve", "--arch", kArch, "--llm", kModel, "--offline", "--requests", "4",
            "--input-len", "64", "--output-len", "3", "--pp", "2", "--out", tmp.path().c_str()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("TP 1 x PP 2 x 1 replica(s)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("over 2 virtual engines"), std::string::npos) << r.out;
  std::ifstream json(tmp.path() / "serve.json");
  const auto doc = nlohmann::json::parse(json);
  EXPECT_EQ(doc["config"]["pp"], 2);
  EXPECT_EQ(doc["summary"]["requests"], 4);
  // 32 layers in 3 stages, and pipelines with the deployment search (which lays out its own).
  const Outcome three = coda({"serve", "--arch", kArch, "--llm", kModel, "--offline", "--pp", "3"});
  EXPECT_EQ(three.code, 1);
  EXPECT_NE(three.err.find("pp 3 does not divide the 32 layers"), std::string::npos) << three.err;
  EXPECT_EQ(coda({"serve", "--arch", kArch, "--llm", kModel, "--search-deployments", "--chips", "4",
                  "--pp", "2", "--slo-ttft", "1000"})
                .code,
            2);
  // Disaggregated pools, each replica two stages.
  const Outcome pools =
      coda({"serve", "--arch", kArch, "--llm", kModel, "--offline", "--requests", "4",
            "--input-len", "64", "--output-len", "3", "--pp", "2", "--disaggregate", "1:1"});
  ASSERT_EQ(pools.code, 0) << pools.err;
  EXPECT_NE(pools.out.find("1 prefill replica(s) at TP 1 + 1 decode at TP 1, each x PP 2"),
            std::string::npos)
      << pools.out;
}

TEST(Serve, ATraceDrivesTheArrivals) {
  const testing::TempDir tmp;
  const auto trace = tmp.write("trace.csv",
                               "arrival_s,input_tokens,output_tokens\n0,100,3\n"
                               "0.5,200,2\n");
  const Outcome r = coda({"serve", "--arch", kArch, "--llm", kModel, "--trace", trace.c_str(),
                          "--out", tmp.path().c_str()});
  ASSERT_EQ(r.code, 0) << r.err;
  std::ifstream csv(tmp.path() / "requests.csv");
  std::string header, first, second;
  std::getline(csv, header);
  std::getline(csv, first);
  std::getline(csv, second);
  EXPECT_EQ(second.rfind("1,0,0.5,200,2,", 0), 0u) << second;
}

TEST(Serve, BadInputIsAClearError) {
  Outcome r = coda({"serve", "--arch", kArch, "--llm", kModel});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--rate R"), std::string::npos) << r.err;

  r = coda({"serve", "--arch", kArch, "--llm", kModel, "--offline", "--input-len", "uniform:9:3"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("--input-len"), std::string::npos) << r.err;

  r = coda({"serve", "--arch", kArch, "--llm", kModel, "--search-rate"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("--slo-ttft"), std::string::npos) << r.err;

  r = coda({"serve", "--arch", kArch, "--llm", kModel, "--rate", "2", "--offline"});
  EXPECT_EQ(r.code, 2);  // CLI11: --rate excludes --offline

  r = coda({"serve", "--arch", kArch, "--llm", kModel, "--offline", "--tp", "3"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("tp"), std::string::npos) << r.err;

  r = coda({"serve", "--arch", kArch, "--llm", kModel, "--offline", "--disaggregate", "0:2"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("P:D"), std::string::npos) << r.err;
  r = coda({"serve", "--arch", kArch, "--llm", kModel, "--offline", "--disaggregate", "1:1",
            "--replicas", "2"});
  EXPECT_EQ(r.code, 2);  // CLI11: --disaggregate excludes --replicas

  // A prompt the iteration's token budget cannot hold, without chunked prefill.
  r = coda({"serve", "--arch", kArch, "--llm", kModel, "--offline", "--input-len", "4000",
            "--max-batched-tokens", "1024"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("--chunked-prefill"), std::string::npos) << r.err;
}

TEST(Serve, TheRateSearchStaysWithinTheSlo) {
  const testing::TempDir tmp;
  const Outcome r = coda({"serve",
                          "--arch",
                          kArch,
                          "--llm",
                          kModel,
                          "--search-rate",
                          "--requests",
                          "300",
                          "--input-len",
                          "256",
                          "--output-len",
                          "64",
                          "--slo-ttft",
                          "100",
                          "--slo-tpot",
                          "30",
                          "--search-steps",
                          "8",
                          "--out",
                          tmp.path().c_str()});
  ASSERT_EQ(r.code, 0) << r.err;
  std::ifstream json(tmp.path() / "serve.json");
  const auto doc = nlohmann::json::parse(json);
  const auto& search = doc["rate_search"];
  const double rate = search["rate"];
  EXPECT_GT(rate, 0);
  EXPECT_LE(rate, search["offline_requests_per_s"].get<double>());
  // The bracket's probes (the offline throughput, doubled while within the SLO), then 8
  // bisections.
  EXPECT_GE(search["probes"].size(), 9u);
  // Every probe above the answer failed the SLO; the answer met it.
  for (const auto& p : search["probes"]) {
    if (p["rate"].get<double>() > rate) {
      EXPECT_FALSE(p["meets_slo"].get<bool>()) << p["rate"];
    }
  }
  EXPECT_TRUE(doc["summary"]["meets_slo"].get<bool>());
  EXPECT_LE(doc["summary"]["ttft_s"]["p99"].get<double>(), 0.1);
}

TEST(Serve, ARateCurveGoesIntoTheReport) {
  const testing::TempDir tmp;
  const auto serve = tmp.path() / "serve";
  const Outcome r =
      coda({"serve", "--arch", kArch, "--llm", kModel, "--rates", "6,2", "--requests", "100",
            "--input-len", "128", "--output-len", "16", "--out", serve.c_str()});
  ASSERT_EQ(r.code, 0) << r.err;
  std::ifstream json(serve / "serve.json");
  const auto doc = nlohmann::json::parse(json);
  ASSERT_EQ(doc["rate_curve"].size(), 2u);
  EXPECT_EQ(doc["rate_curve"][0]["rate"], 2.0);  // by rate
  EXPECT_EQ(doc["config"]["rate"], 6.0);         // the files hold the highest rate's run
  const auto report = tmp.path() / "report";
  const Outcome rep = coda({"report", serve.c_str(), "--out", report.c_str()});
  ASSERT_EQ(rep.code, 0) << rep.err;
  std::ifstream md(report / "report.md");
  const std::string text((std::istreambuf_iterator<char>(md)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("## Serving serve"), std::string::npos) << text;
  EXPECT_TRUE(std::filesystem::exists(report / "charts" / "serving_ttft_1.svg"));
}

}  // namespace
}  // namespace coda::cli
