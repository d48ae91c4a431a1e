#include "sim/serving/deployment_search.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

namespace coda::sim::serving {
namespace {

// The messages of `diags` on one line.
std::string one_line(const Diagnostics& diags) {
  std::string out;
  for (const Diagnostic& d : diags.all()) {
    if (d.severity != Severity::Error) continue;
    if (!out.empty()) out += "; ";
    out += d.message;
  }
  return out;
}

// One candidate's rate search on its pricer, with its tokens a chip and cost.
DeploymentResult evaluate(IterationPricer& pricer, const Deployment& base,
                          const DeploymentCandidate& candidate, const RequestSpec& spec,
                          const Slo& slo, const DeploymentSearch& search) {
  DeploymentResult r;
  r.candidate = candidate;
  Deployment d = base;
  d.replicas = candidate.replicas;
  d.scheduler.batching = candidate.batching;
  d.disaggregated = candidate.disaggregated;
  Diagnostics ran;
  const std::optional<RateSearch> found = search_rate(pricer, d, spec, slo, search.steps, ran);
  if (!found) {
    r.rejected = one_line(ran);
    return r;
  }
  r.offline_rps = found->offline_rps;
  r.rate = found->rate;
  if (found->best) {
    r.at_rate = found->best->summary;
    r.tokens_per_chip_s = r.at_rate->output_tokens_per_s / static_cast<double>(search.chips);
    if (search.chip_cost_per_hour && r.tokens_per_chip_s > 0)
      r.cost_per_million_tokens = *search.chip_cost_per_hour / (r.tokens_per_chip_s * 3600.0) * 1e6;
  }
  return r;
}

}  // namespace

std::optional<std::vector<DeploymentResult>> search_deployments(
    const workload::llm::LlmConfig& model, const arch::HardwareModel& hw,
    const PricerOptions& pricing, const Deployment& base, const RequestSpec& spec, const Slo& slo,
    const DeploymentSearch& search, Diagnostics& diags) {
  if (!slo.any()) {
    diags.error({}, "slo", "a deployment search ranks by the rate each sustains within an SLO",
                "give --slo-ttft and/or --slo-tpot (milliseconds)");
    return std::nullopt;
  }
  std::vector<DeploymentResult> out;
  const Batching whole = base.scheduler.batching == Batching::Chunked ? Batching::PrefillFirst
                                                                      : base.scheduler.batching;
  // The layouts: every TP x PP dividing the chips, PP only where it divides the layers.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> layouts;
  for (std::uint64_t tp = 1; tp <= search.chips; ++tp)
    for (std::uint64_t pp = 1; search.chips % tp == 0 && pp <= search.chips / tp; ++pp)
      if ((search.chips / tp) % pp == 0 && (pp == 1 || model.layers % pp == 0))
        layouts.emplace_back(tp, pp);
  for (const auto& [tp, pp] : layouts) {
    PricerOptions options = pricing;
    options.tp = tp;
    options.pp = pp;
    Diagnostics made;
    std::optional<IterationPricer> pricer = IterationPricer::make(model, hw, options, made);
    const std::uint64_t replicas = search.chips / (tp * pp);
    std::vector<DeploymentCandidate> candidates = {
        {.tp = tp, .pp = pp, .replicas = replicas, .batching = whole},
        {.tp = tp, .pp = pp, .replicas = replicas, .batching = Batching::Chunked}};
    for (std::uint64_t p = 1; p < replicas; ++p)
      candidates.push_back({.tp = tp,
                            .pp = pp,
                            .replicas = replicas,
                            .batching = whole,
                            .disaggregated = Disaggregation{p, replicas - p}});
    for (const DeploymentCandidate& candidate : candidates) {
      if (pricer) {
        out.push_back(evaluate(*pricer, base, candidate, spec, slo, search));
      } else {
        out.push_back({.candidate = candidate, .rejected = one_line(made)});
      }
    }
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const DeploymentResult& a, const DeploymentResult& b) {
                     if (a.rejected.empty() != b.rejected.empty()) return a.rejected.empty();
                     return a.rate > b.rate;
                   });
  return out;
}

}  // namespace coda::sim::serving
