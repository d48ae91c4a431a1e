#include "sim/serving/deployment_search.h"

#include <gtest/gtest.h>

#include "arch/arch_spec.h"

namespace coda::sim::serving {
namespace {

TEST(DeploymentSearch, RanksTheLayoutsOfTheChipsAndRejectsThoseThatCannotRun) {
  Diagnostics diags;
  auto spec = arch::load_arch(std::filesystem::path("configs/arch/nvidia_h100_sxm.yaml"), diags);
  auto model = workload::llm::load_llm_config("configs/workloads/llm/llama2_7b.yaml", diags);
  ASSERT_TRUE(spec && model) << diags.format_all();
  const arch::HardwareModel hw(spec->spec);
  RequestSpec requests;
  requests.arrivals = {.kind = ArrivalKind::Poisson, .rate = 1};
  requests.count = 200;
  requests.input = {.kind = LengthKind::Fixed, .value = 256};
  requests.output = {.kind = LengthKind::Fixed, .value = 32};
  const Slo slo{.ttft = 0.5, .tpot = 0.05};
  // 3 chips: TP 1 x 3 replicas (prefill-first, chunked, disaggregated 1:2 and 2:1), or TP 3,
  // which does not divide LLaMA-2-7B's 32 heads (prefill-first and chunked, both rejected).
  const auto ranked =
      search_deployments(*model, hw, {}, {}, requests, slo,
                         {.chips = 3, .chip_cost_per_hour = 2.0, .steps = 6}, diags);
  ASSERT_TRUE(ranked) << diags.format_all();
  ASSERT_EQ(ranked->size(), 6u);
  std::size_t disaggregated = 0;
  for (std::size_t i = 0; i < 4; ++i) {
    const DeploymentResult& r = (*ranked)[i];
    EXPECT_TRUE(r.rejected.empty()) << r.rejected;
    EXPECT_EQ(r.candidate.tp, 1u);
    EXPECT_EQ(r.candidate.replicas, 3u);
    if (r.candidate.disaggregated) {
      ++disaggregated;
      EXPECT_EQ(r.candidate.disaggregated->prefill + r.candidate.disaggregated->decode, 3u);
    }
    EXPECT_GT(r.rate, 0);
    ASSERT_TRUE(r.at_rate);
    EXPECT_LE(r.at_rate->ttft.p99, 0.5);
    // Cost of a million output tokens: 3 chips x 2.0 an hour over the tokens an hour.
    ASSERT_TRUE(r.cost_per_million_tokens);
    EXPECT_NEAR(*r.cost_per_million_tokens, 3 * 2.0 / (r.at_rate->output_tokens_per_s * 3600) * 1e6,
                1e-9);
  }
  EXPECT_EQ(disaggregated, 2u);
  for (std::size_t i = 0; i + 1 < 4; ++i) EXPECT_GE((*ranked)[i].rate, (*ranked)[i + 1].rate);
  for (std::size_t i = 4; i < 6; ++i) {
    EXPECT_EQ((*ranked)[i].candidate.tp, 3u);
    EXPECT_NE((*ranked)[i].rejected.find("divide"), std::string::npos) << (*ranked)[i].rejected;
  }
  // 2 chips: TP 1 x 2 replicas (prefill-first, chunked, disaggregated 1:1), TP 1 x PP 2 (32
  // layers in two stages: prefill-first and chunked, no disaggregation), TP 2 (both): 7 layouts.
  const auto two =
      search_deployments(*model, hw, {}, {}, requests, slo, {.chips = 2, .steps = 4}, diags);
  ASSERT_TRUE(two) << diags.format_all();
  ASSERT_EQ(two->size(), 7u);
  std::size_t piped = 0;
  for (const DeploymentResult& r : *two) {
    EXPECT_TRUE(r.rejected.empty()) << r.rejected;
    EXPECT_EQ(r.candidate.tp * r.candidate.pp * r.candidate.replicas, 2u);
    if (r.candidate.pp == 2) {
      ++piped;
      EXPECT_FALSE(r.candidate.disaggregated);
      EXPECT_GT(r.rate, 0);
    }
  }
  EXPECT_EQ(piped, 2u);
  Diagnostics none;
  EXPECT_FALSE(search_deployments(*model, hw, {}, {}, requests, {}, {.chips = 1}, none));
  EXPECT_EQ(none.all().at(0).path, "slo");
}

}  // namespace
}  // namespace coda::sim::serving
