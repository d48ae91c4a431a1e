#pragma once
// An LLM serving engine over a request stream, iteration by iteration (docs/serving.md): the
// continuous (iteration-level) batching of Orca and vLLM, a paged KV cache, vLLM's scheduler
// with or without Sarathi-Serve's chunked prefill, preemption by recomputation or by swapping to
// the host, replicas fed round-robin. Each iteration's time is IterationPricer's (coda's own per-op
// pricing). Plain C++, deterministic: the same requests give the same result.
//
// The scheduler, as vLLM 0.6's default (V0) scheduler runs it:
//   without chunked prefill  an iteration is all prefills or all decodes. Waiting requests are
//       admitted first, in policy order, while the running sequences stay within max_batch,
//       their prompts within max_batched_tokens and their KV blocks within the free blocks less
//       the watermark; the first that does not fit stops admission (head-of-line). Only when
//       none is admitted do the running sequences decode, one token each.
//   with chunked prefill     every running sequence decodes first (one token of the budget
//       each), then prefills take the rest of the max_batched_tokens budget in chunks: the
//       sequences part-way through their prompt first, then new ones, within max_batch.
// and as TensorRT-LLM's in-flight batching runs it (Batching::Mixed; its MicroBatchScheduler
// with chunked context off, the default):
//   mixed                    every running sequence decodes first (one token of the budget
//       each), then waiting prompts join the same iteration whole while they fit in the rest of
//       the budget, within max_batch; the first that does not fit stops admission.
//   prefix caching  (optional) the first prefill to hold a stream's whole shared prefix gives
//       its whole blocks to the cache, where they stay; later prompts start past them.
//   preemption  a decode that needs a block when none is free takes one from the running
//       sequence admitted last (vLLM's recompute mode): its blocks are freed and it waits at the
//       front of the queue, to prefill its prompt and the tokens it had generated again. In swap
//       mode (Preemption::Swap) its blocks go to the host instead; see Preemption.
//   guaranteed_no_evict  (KvAdmission, TensorRT-LLM's default) admission takes the blocks of
//       the whole sequence, prompt and output, so decode never needs a block and nothing is
//       preempted; fewer sequences run at once when the cache is the limit.
//
// Pipeline parallelism (PricerOptions::pp = P): a replica runs P virtual engines, as vLLM's V0
// engine does, each with its own scheduler (max_batch each) and 1/P of the KV blocks; a request
// goes to the one with the fewest unfinished requests. A virtual engine schedules its next
// iteration when its last has left the last stage; iterations of different engines occupy
// different stages at once (IterationPricer::stage_seconds, stage_transfer).
//
// Not simulated (errors where asked for): swapping with prefix caching or with
// guaranteed_no_evict (which never preempts), speculative decoding, different hardware per
// disaggregated pool. Host-side
// scheduling and sampling time is `iteration_overhead` (default: the arch's
// calibration.llm_step_fixed_cost, the runtime's host work per generation step; else 0).

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "core/diagnostics.h"
#include "core/enum_table.h"
#include "core/units.h"
#include "sim/serving/iteration_cost.h"
#include "sim/serving/requests.h"

namespace coda::sim::serving {

enum class Policy : std::uint8_t { Fcfs, ShortestFirst };
std::string_view to_string(Policy policy);  // "fcfs", "shortest_first"
EnumTable<Policy> policy_names();

// What admission asks of the KV cache.
//   on_demand            blocks for the prompt; decode takes one more block when a sequence fills
//                        its last, preempting when none is free (vLLM)
//   guaranteed_no_evict  blocks for the whole sequence (prompt and every output token) at
//                        admission, so nothing is ever preempted (TensorRT-LLM's capacity
//                        scheduler default, CapacitySchedulerPolicy::GUARANTEED_NO_EVICT)
enum class KvAdmission : std::uint8_t { OnDemand, GuaranteedNoEvict };
std::string_view to_string(KvAdmission admission);  // "on_demand", "guaranteed_no_evict"
EnumTable<KvAdmission> kv_admission_names();

// How an iteration's tokens are chosen (see the top of this file).
//   prefill_first  vLLM 0.6's default: an iteration is all prefills or all decodes
//   mixed          TensorRT-LLM's in-flight batching: decodes, then whole prompts in the budget
//   chunked        Sarathi-Serve's chunked prefill (vLLM's enable_chunked_prefill): decodes,
//                  then prompts in chunks in the budget
enum class Batching : std::uint8_t { PrefillFirst, Mixed, Chunked };
std::string_view to_string(Batching batching);  // "prefill_first", "mixed", "chunked"
EnumTable<Batching> batching_names();

// What preemption does with a sequence's KV cache (vLLM's preemption_mode).
//   recompute  its blocks are freed; it waits at the front of the queue to prefill its prompt and
//              the tokens it had generated again (vLLM's default for one sequence a request)
//   swap       its blocks are copied to the host's memory (the swap space, per chip) and freed,
//              as vLLM V0's scheduler does (vllm/core/scheduler.py, 0.6): while any sequence is
//              swapped out, prefill_first admits no new prompt (_schedule_default); swapped
//              sequences come back first in, first out, in an iteration that preempted nothing,
//              when their blocks fit with the watermark free and the budget has their token
//              (_schedule_swapped; with chunked or mixed batching, after the running sequences and
//              before new prompts), and go on where they stopped. An iteration's swap copies run
//              before its forward (IterationPricer::swap_seconds). A swap-out the swap space cannot
//              hold is an error, as in vLLM ("Aborted due to the lack of CPU swap space").
enum class Preemption : std::uint8_t { Recompute, Swap };
std::string_view to_string(Preemption preemption);  // "recompute", "swap"
EnumTable<Preemption> preemption_names();

struct SchedulerConfig {
  // vLLM's max_num_seqs default (vllm/engine/arg_utils.py, 0.6).
  std::uint64_t max_batch = 256;
  // Tokens per iteration; 0: the engine's default: vLLM 0.6's 512 with chunked prefill, else
  // max(2048, the longest request); mixed, TensorRT-LLM's max_num_tokens default (8192,
  // trtllm-build) raised to the longest request, as an engine built for the stream would be.
  std::uint64_t max_batched_tokens = 0;
  Batching batching = Batching::PrefillFirst;
  // Admission order: fcfs (arrival order) or shortest_first (fewest prompt tokens first).
  Policy policy = Policy::Fcfs;
  KvAdmission admission = KvAdmission::OnDemand;
  Preemption preemption = Preemption::Recompute;
  // Host memory for swapped-out KV blocks, per chip: vLLM's swap_space default, 4 GiB.
  Bytes swap_space{4ull << 30};
  // Tokens per KV-cache block: vLLM's block_size default.
  std::uint64_t block_size = 16;
  // Share of each chip's memory the engine may use for weights, activations and the KV cache:
  // vLLM's gpu_memory_utilization default.
  double memory_utilization = 0.9;
  // Blocks kept free at admission, as a share of all blocks: vLLM's block-manager watermark.
  double watermark = 0.01;
  // Host time added to every iteration (scheduling, sampling, the step's sync), seconds; nullopt:
  // the arch's calibration.llm_step_fixed_cost (fitted on whole-model generation rows; see
  // docs/cost_models.md), else 0.
  std::optional<double> iteration_overhead;
  // Automatic prefix caching (vLLM's enable_prefix_caching; off by default in 0.6): the whole
  // blocks of the requests' shared prefix, once a prefill has made them, stay in the cache
  // (pinned) and later prompts compute only the rest, attending to the cached prefix.
  bool prefix_caching = false;
  // Where set, the KV cache has exactly this many blocks (for tests and what-ifs) instead of
  // what the memory leaves.
  std::optional<std::uint64_t> kv_blocks;
};

// The scheduler defaults of the engines coda models: vllm (0.6's V0 scheduler: prefill_first,
// on_demand KV blocks with preemption by recomputation) and tensorrt_llm (in-flight batching with
// chunked context off, the ExecutorConfig and trtllm-bench default: mixed; its capacity
// scheduler's default, guaranteed_no_evict). Sets `config`'s batching and admission.
enum class Runtime : std::uint8_t { Vllm, TensorRtLlm };
std::string_view to_string(Runtime runtime);  // "vllm", "tensorrt_llm"
EnumTable<Runtime> runtime_names();
void apply_runtime(SchedulerConfig& config, Runtime runtime);

// Disaggregated prefill and decode (DistServe, OSDI'24; Splitwise, ISCA'24): `prefill` replicas
// only prefill; each request's KV cache then goes over the chip links to one of `decode`
// replicas, which decodes it. The pools may run at different TP (DistServe's point: prefill
// wants more ranks than decode): `decode_pricer`, when set, is the decode pool's (its TP, its
// weights, its KV cache), else the pools share the deployment's. A transfer moves prompt tokens x
// the KV bytes of a token, each prefill rank sending its share of the heads and each decode rank
// receiving its own, so min(TP prefill, TP decode) links carry it in parallel at the arch's
// achievable link bandwidth. With pipeline stages (both pools at the deployment's PP, each
// replica its virtual engines) every stage's chips send their layers' share to the same stage of
// the decode replica at once. Both pools run the scheduler of the deployment; requests go
// round-robin to the prefill replicas in arrival order and to the decode replicas in the order
// their caches arrive. A prefill replica's links send one cache at a time, in the order its
// prefills end; receiving decode replicas do not contend, nor do transfers with TP's collectives.
struct Disaggregation {
  std::uint64_t prefill = 1;
  std::uint64_t decode = 1;
  // Not owned; null: the deployment's pricer. Its PP must be the deployment's (an error else).
  IterationPricer* decode_pricer = nullptr;
};

struct Deployment {
  std::uint64_t replicas = 1;  // ignored when disaggregated: prefill + decode replicas
  SchedulerConfig scheduler;
  std::optional<Disaggregation> disaggregated;
  std::uint64_t total_replicas() const {
    return disaggregated ? disaggregated->prefill + disaggregated->decode : replicas;
  }
};

// What a replica's memory holds (per chip).
struct KvBudget {
  Bytes capacity;  // the chip's DRAM
  Bytes usable;    // capacity x memory_utilization
  Bytes weights;
  Bytes activations;
  Bytes kv_bytes_per_token;  // per chip
  std::uint64_t blocks = 0;  // KV-cache blocks of block_size tokens
  std::uint64_t block_size = 16;
  // Blocks the swap space holds (swap preemption only; else 0): swap_space / a block's bytes.
  std::uint64_t swap_blocks = 0;
  std::uint64_t tokens() const { return blocks * block_size; }
};

struct RequestRecord {
  Request request;
  std::uint64_t replica = 0;  // disaggregated: the decode replica (prefill + its index)
  // Disaggregated: from the first token until the KV cache is at the decode pool, seconds (the
  // wait for the prefill replica's links, busy sending earlier caches, and the transfer).
  double kv_transfer = 0;
  double first_token = 0;  // when the prefill that produced the first token ended
  double finish = 0;       // when the last token was produced
  std::uint64_t preemptions = 0;
  double ttft() const { return first_token - request.arrival; }
  double e2e() const { return finish - request.arrival; }
  // Time per output token after the first: (finish - first_token) / (output - 1); 0 for one.
  double tpot() const;
};

struct IterationRecord {
  std::uint64_t replica = 0;
  double start = 0, end = 0;
  std::uint64_t decode_sequences = 0;
  std::uint64_t prefill_sequences = 0;
  std::uint64_t prefill_tokens = 0;
  std::uint64_t kv_blocks_used = 0;  // after the iteration's allocations
  std::uint64_t kv_blocks = 0;       // the replica's cache (a decode pool's may differ)
  double kv_utilisation() const;     // kv_blocks_used / kv_blocks; 0 without a cache
  std::uint64_t waiting = 0;         // requests arrived and not running when it started
  std::uint64_t preempted = 0;       // sequences preempted to make room for it
  std::uint64_t swapped_out = 0;     // of those, swapped out to the host (Preemption::Swap)
  std::uint64_t swapped_in = 0;      // sequences swapped back in to run in it
  std::uint64_t swapped = 0;         // sequences in the host's memory once it is scheduled
  std::uint64_t swap_blocks = 0;     // KV blocks its swaps copied, either way
  double swap = 0;                   // seconds of those copies, before its forward
  IterationTime time;
};

struct Stats {
  double mean = 0, p50 = 0, p90 = 0, p99 = 0, max = 0;
};
// Percentiles as numpy's default (linear interpolation between closest ranks); empty: zeros.
Stats stats_of(std::vector<double> values);

struct Slo {
  double ttft = 0;  // seconds; 0: no limit
  double tpot = 0;  // seconds; 0: no limit
  // The percentile of TTFT and TPOT that must be within the limits for a rate to be sustained
  // (the search's criterion; MLPerf Inference's LLM server scenario uses the 99th).
  double percentile = 99;
  bool any() const { return ttft > 0 || tpot > 0; }
};

struct ServeSummary {
  std::uint64_t requests = 0;
  double duration = 0;  // first arrival to last finish, seconds
  double requests_per_s = 0;
  double output_tokens_per_s = 0;
  double total_tokens_per_s = 0;  // prompt and output tokens
  Stats ttft, tpot, itl, e2e;     // seconds
  // Share of requests within both SLO limits, and those requests per second (goodput).
  double slo_attainment = 1;
  double goodput_rps = 0;
  std::uint64_t iterations = 0;
  double mean_batch = 0;  // sequences per iteration
  std::uint64_t max_batch = 0;
  double kv_utilisation_mean = 0;  // time-weighted blocks used / blocks, all replicas
  double kv_utilisation_max = 0;
  std::uint64_t preemptions = 0;
  std::uint64_t swap_outs = 0;  // preemptions by swapping
  double swap_seconds = 0;      // the iterations' swap copies, all replicas
  double busy_fraction = 0;  // iteration time / (duration x replicas)
  bool meets_slo = true;     // the SLO percentile of TTFT and TPOT within the limits
};

struct ServeResult {
  KvBudget kv;                           // a replica's; disaggregated, the prefill pool's
  std::optional<KvBudget> decode_kv;     // a disaggregated decode pool's, when its TP differs
  double iteration_overhead = 0;         // the host time each iteration paid, seconds
  std::uint64_t max_batched_tokens = 0;  // the budget used (the default resolved)
  std::vector<RequestRecord> requests;   // in id order
  std::vector<IterationRecord> iterations;
  std::vector<double> itl;  // every inter-token gap, seconds
  std::vector<std::uint64_t> itl_request;  // the request (id) of each gap
  ServeSummary summary;
};

// The KV budget of one replica (per chip); errors (path "serve") when the weights and
// activations leave no room, or the arch states no memory capacity and kv_blocks is not given.
std::optional<KvBudget> kv_budget(IterationPricer& pricer, const SchedulerConfig& config,
                                  std::uint64_t max_tokens, Diagnostics& diags);

// Replays `requests` (id order; open-loop arrivals non-decreasing) on the deployment. For closed
// arrivals, `concurrency` clients (not with disaggregation: an error). Disaggregated, iterations
// name replicas 0 .. prefill-1 for the prefill pool and prefill .. prefill+decode-1 for decode.
// Errors (nothing simulated) when a request can never run: its prompt beyond max_batched_tokens
// unless chunked, or prompt + output beyond the KV cache.
std::optional<ServeResult> simulate(IterationPricer& pricer, const Deployment& deployment,
                                    const std::vector<Request>& requests,
                                    const ArrivalSpec& arrivals, const Slo& slo,
                                    Diagnostics& diags);

// The highest arrival rate the deployment sustains within the SLO: `spec`'s arrivals (poisson or
// gamma) at rates found by bisection, every probe the same requests (the same seed: the same
// lengths, the same arrival draws scaled). The bracket starts at the offline throughput of the
// same requests and doubles while the SLO still holds there (a finite stream's offline
// throughput includes its drain, so a steady stream may be sustained above it; at most 4
// doublings); then `steps` bisections. A rate is sustained when the SLO percentile of TTFT and
// TPOT is within the limits (ServeSummary::meets_slo).
struct RateProbe {
  double rate = 0;
  ServeSummary summary;
};
struct RateSearch {
  double offline_rps = 0;           // the bracket's top: the offline run's requests per second
  double rate = 0;                  // the highest rate found within the SLO; 0: none
  std::optional<ServeResult> best;  // the simulation at `rate`
  std::vector<RateProbe> probes;    // every rate tried, in order
};
std::optional<RateSearch> search_rate(IterationPricer& pricer, const Deployment& deployment,
                                      const RequestSpec& spec, const Slo& slo, int steps,
                                      Diagnostics& diags);

// Latency against load: `spec`'s requests at each of `rates` (poisson or gamma; the same lengths
// and arrival draws scaled, as the search probes them), in the order given, and the whole result
// at the highest rate (for the files a curve run writes).
struct RateCurve {
  std::vector<RateProbe> points;
  std::optional<ServeResult> top;  // the simulation at the highest rate
  std::size_t top_index = 0;       // its point
};
std::optional<RateCurve> rate_curve(IterationPricer& pricer, const Deployment& deployment,
                                    const RequestSpec& spec, const std::vector<double>& rates,
                                    const Slo& slo, Diagnostics& diags);

// The summary of a result (simulate computes it; exposed for tests), over the requests from id
// `warmup` on (ArrivalSpec::warmup): their latencies, tokens and gaps, and the span from the first
// of their arrivals to the last of their finishes. Iterations and the KV cache count them all.
ServeSummary summarise(const ServeResult& result, std::uint64_t replicas, const Slo& slo,
                       std::uint64_t warmup = 0);

}  // namespace coda::sim::serving
