#pragma once
// A serving simulation's results as files (docs/serving.md "Results"): serve.json (the summary,
// the KV budget and the configuration the caller describes), requests.csv (one row a request)
// and iterations.csv (one row an iteration: the batch, the KV cache's blocks, preemptions and
// swaps).

#include <string>

#include <nlohmann/json.hpp>

#include "sim/serving/simulator.h"

namespace coda::sim::serving {

nlohmann::ordered_json stats_json(const Stats& s);  // seconds: mean, p50, p90, p99, max
nlohmann::ordered_json summary_json(const ServeSummary& s);
nlohmann::ordered_json kv_json(const KvBudget& kv);
// {"config": config, "kv_cache": ..., "max_batched_tokens": ..., "summary": ...}
nlohmann::ordered_json serve_json(const ServeResult& result, nlohmann::ordered_json config);

// id,replica,arrival_s,input_tokens,output_tokens,first_token_s,finish_s,ttft_s,tpot_s,e2e_s,
// preemptions
std::string requests_csv(const ServeResult& result);
// replica,start_s,end_s,decode_sequences,prefill_sequences,prefill_tokens,kv_blocks_used,
// kv_utilisation,waiting,preempted,linear_s,attention_s,head_s,swapped_out,swapped_in,swapped,
// swap_blocks,swap_s
std::string iterations_csv(const ServeResult& result);

}  // namespace coda::sim::serving
