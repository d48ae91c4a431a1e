#include "sim/serving/serve_output.h"

#include <fmt/format.h>

namespace coda::sim::serving {

using nlohmann::ordered_json;

ordered_json stats_json(const Stats& s) {
  return {{"mean", s.mean}, {"p50", s.p50}, {"p90", s.p90}, {"p99", s.p99}, {"max", s.max}};
}

ordered_json summary_json(const ServeSummary& s) {
  return {{"requests", s.requests},
          {"duration_s", s.duration},
          {"requests_per_s", s.requests_per_s},
          {"output_tokens_per_s", s.output_tokens_per_s},
          {"total_tokens_per_s", s.total_tokens_per_s},
          {"ttft_s", stats_json(s.ttft)},
          {"tpot_s", stats_json(s.tpot)},
          {"itl_s", stats_json(s.itl)},
          {"e2e_s", stats_json(s.e2e)},
          {"slo_attainment", s.slo_attainment},
          {"goodput_rps", s.goodput_rps},
          {"meets_slo", s.meets_slo},
          {"iterations", s.iterations},
          {"mean_batch", s.mean_batch},
          {"max_batch", s.max_batch},
          {"kv_utilisation_mean", s.kv_utilisation_mean},
          {"kv_utilisation_max", s.kv_utilisation_max},
          {"preemptions", s.preemptions},
          {"swap_outs", s.swap_outs},
          {"swap_s", s.swap_seconds},
          {"busy_fraction", s.busy_fraction}};
}

ordered_json kv_json(const KvBudget& kv) {
  return {{"capacity_bytes", kv.capacity.value},
          {"usable_bytes", kv.usable.value},
          {"weights_bytes", kv.weights.value},
          {"activations_bytes", kv.activations.value},
          {"kv_bytes_per_token", kv.kv_bytes_per_token.value},
          {"block_size", kv.block_size},
          {"blocks", kv.blocks},
          {"tokens", kv.tokens()},
          {"swap_blocks", kv.swap_blocks}};
}

ordered_json serve_json(const ServeResult& result, ordered_json config) {
  ordered_json out = {{"config", std::move(config)},
                      {"kv_cache", kv_json(result.kv)},
                      {"max_batched_tokens", result.max_batched_tokens},
                      {"summary", summary_json(result.summary)}};
  if (result.decode_kv) out["decode_kv_cache"] = kv_json(*result.decode_kv);
  return out;
}

std::string requests_csv(const ServeResult& result) {
  std::string out =
      "id,replica,arrival_s,input_tokens,output_tokens,first_token_s,finish_s,ttft_s,tpot_s,"
      "e2e_s,preemptions\n";
  for (const RequestRecord& r : result.requests)
    out += fmt::format("{},{},{:.9g},{},{},{:.9g},{:.9g},{:.9g},{:.9g},{:.9g},{}\n", r.request.id,
                       r.replica, r.request.arrival, r.request.input, r.request.output,
                       r.first_token, r.finish, r.ttft(), r.tpot(), r.e2e(), r.preemptions);
  return out;
}

std::string iterations_csv(const ServeResult& result) {
  std::string out =
      "replica,start_s,end_s,decode_sequences,prefill_sequences,prefill_tokens,kv_blocks_used,"
      "kv_utilisation,waiting,preempted,linear_s,attention_s,head_s,swapped_out,swapped_in,"
      "swapped,swap_blocks,swap_s\n";
  for (const IterationRecord& it : result.iterations)
    out += fmt::format(
        "{},{:.9g},{:.9g},{},{},{},{},{:.4f},{},{},{:.6g},{:.6g},{:.6g},{},{},{},{},{:.6g}\n",
        it.replica, it.start, it.end, it.decode_sequences, it.prefill_sequences, it.prefill_tokens,
        it.kv_blocks_used, it.kv_utilisation(), it.waiting, it.preempted, it.time.linear,
        it.time.attention, it.time.head, it.swapped_out, it.swapped_in, it.swapped, it.swap_blocks,
        it.swap);
  return out;
}

}  // namespace coda::sim::serving
