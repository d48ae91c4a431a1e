#pragma once
// The Vidur-Search question on any arch coda models: of the ways to lay a model over `chips`
// chips (tensor-parallel ranks x pipeline stages per replica x replicas, whole or chunked
// prefills), which
// sustains the highest request rate within an SLO, and at what cost per million output tokens
// (docs/serving.md, "Search"). Each candidate is a rate search (search_rate) on its own pricer;
// disaggregated prefill and decode pools (DistServe's question) are candidates too.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "arch/hardware_model.h"
#include "core/diagnostics.h"
#include "sim/serving/iteration_cost.h"
#include "sim/serving/requests.h"
#include "sim/serving/simulator.h"
#include "workloads/llm/llm_config.h"

namespace coda::sim::serving {

struct DeploymentCandidate {
  std::uint64_t tp = 1;
  std::uint64_t pp = 1;        // pipeline stages per replica (never with disaggregation)
  std::uint64_t replicas = 1;  // all of them, prefill and decode when disaggregated
  Batching batching = Batching::PrefillFirst;
  std::optional<Disaggregation> disaggregated;
};

struct DeploymentResult {
  DeploymentCandidate candidate;
  std::string rejected;  // why the candidate cannot run (TP not dividing the heads, no KV room)
  double rate = 0;       // the highest rate within the SLO, requests/s; 0 when none or rejected
  double offline_rps = 0;
  std::optional<ServeSummary> at_rate;  // the simulation at `rate`
  // Output tokens per second per chip at `rate`, and, when a chip's hourly cost is given, the
  // cost of a million output tokens: chips x cost / (output tokens/s x 3600) x 1e6.
  double tokens_per_chip_s = 0;
  std::optional<double> cost_per_million_tokens;
};

struct DeploymentSearch {
  std::uint64_t chips = 1;
  // Per chip-hour, in any currency; nullopt: no cost column.
  std::optional<double> chip_cost_per_hour;
  int steps = 12;
};

// Every TP x PP that divides `search.chips` (TP 1, 2, 4, ...; PP only where it divides the
// model's layers), each with whole prompts (base's batching, prefill-first where base chunks)
// and chunked prefill and, without pipeline stages, where there are R >= 2 replicas, each
// disaggregated split P:D (P = 1 .. R-1, whole prompts), the rest of the deployment as `base`
// (its replicas, batching and disaggregation replaced; `pricing`'s pp replaced).
// Sorted by rate, highest first (rejected last). Errors only for the SLO (none given).
std::optional<std::vector<DeploymentResult>> search_deployments(
    const workload::llm::LlmConfig& model, const arch::HardwareModel& hw,
    const PricerOptions& pricing, const Deployment& base, const RequestSpec& spec, const Slo& slo,
    const DeploymentSearch& search, Diagnostics& diags);

}  // namespace coda::sim::serving
