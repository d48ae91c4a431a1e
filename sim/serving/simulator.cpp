#include "sim/serving/simulator.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <string>
#include <map>
#include <optional>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "core/check.h"

namespace coda::sim::serving {
namespace {

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const double rank = p / 100.0 * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(rank));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = rank - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

// Stats of values sorted ascending.
Stats sorted_stats(const std::vector<double>& sorted) {
  Stats s;
  if (sorted.empty()) return s;
  double sum = 0;
  for (const double v : sorted) sum += v;
  s.mean = sum / static_cast<double>(sorted.size());
  s.p50 = percentile(sorted, 50);
  s.p90 = percentile(sorted, 90);
  s.p99 = percentile(sorted, 99);
  s.max = sorted.back();
  return s;
}

// A sequence in the engine: a request's progress.
struct Seq {
  std::size_t record = 0;       // index into ServeResult::requests
  std::uint64_t prompt = 0;     // tokens to prefill: the input, plus what it had generated
                                // when it was last preempted
  std::uint64_t prefilled = 0;  // of prompt, in the KV cache
  std::uint64_t kv = 0;         // tokens in the KV cache
  std::uint64_t blocks = 0;     // its own blocks
  std::uint64_t shared = 0;     // blocks of the cached shared prefix its first tokens are in
  std::uint64_t generated = 0;
  double last_token = 0;
  bool prefilling() const { return prefilled < prompt; }
  // Tokens its next iteration runs within `budget`: one to decode, or its prompt's next chunk (a
  // sequence part-way through its prompt runs only with chunked prefill).
  std::uint64_t next_tokens(std::uint64_t budget) const {
    return prefilling() ? std::min(budget, prompt - prefilled) : 1;
  }
};

// A prefill chunk of a running sequence: its index in running_, its tokens.
using Chunk = std::pair<std::size_t, std::uint64_t>;

// running_[i] runs `tokens` in the iteration: a chunk of its prompt, or a decode.
void schedule_tokens(std::size_t i, std::uint64_t tokens, bool prefilling,
                     std::vector<Chunk>& chunks, std::vector<std::size_t>& decodes) {
  if (prefilling)
    chunks.emplace_back(i, tokens);
  else
    decodes.push_back(i);
}

// One virtual engine: a scheduler with its own waiting queue, running sequences and share of the
// replica's KV cache. A replica without pipeline parallelism is one; with P stages it runs P, as
// vLLM's V0 engine does (each virtual engine has max_batch and 1/P of the blocks; a request goes
// to the one with the fewest unfinished requests; docs/serving.md "Pipeline parallelism").
class VirtualEngine {
 public:
  // `prefix_blocks`: blocks of the prompts' shared prefix that prefix caching keeps (0: none).
  // `swap_blocks`: blocks its share of the swap space holds (swap preemption).
  VirtualEngine(IterationPricer& pricer, const SchedulerConfig& config, std::uint64_t replica,
                std::uint64_t blocks, std::uint64_t swap_blocks, std::uint64_t budget,
                ServeResult& out, std::uint64_t prefix_blocks)
      : pricer_(pricer),
        config_(config),
        replica_(replica),
        blocks_(blocks),
        swap_blocks_(swap_blocks),
        watermark_(static_cast<std::uint64_t>(config.watermark * static_cast<double>(blocks))),
        budget_(budget),
        out_(out),
        prefix_blocks_(prefix_blocks) {}

  // An iteration as scheduled: its record (start, waiting, preempted, blocks), its batch, and the
  // running sequences it advances.
  struct Step {
    IterationRecord it;
    IterationBatch batch;
    std::vector<Chunk> chunks;
    std::vector<std::size_t> decodes;  // running indices
  };

  // Request `r` arrives. `prefilled`: with its prompt in the KV cache and its first token made
  // (RequestRecord::first_token), as a disaggregated decode pool receives it.
  void arrive(std::size_t r, bool prefilled) {
    const Request& q = out_.requests[r].request;
    Seq s;
    s.record = r;
    s.prompt = q.input;
    if (prefilled) {
      s.prefilled = s.kv = q.input;
      s.generated = 1;
      s.last_token = out_.requests[r].first_token;
    }
    enqueue(s, false);
  }

  bool idle() const { return waiting_.empty() && running_.empty() && swapped_.empty(); }
  std::size_t unfinished() const { return waiting_.size() + running_.size() + swapped_.size(); }
  // Why the engine stopped (a swap-out its swap space could not hold); empty while it runs.
  const std::string& failure() const { return failure_; }

  // Schedules an iteration starting at `now` (the engine has work). Nothing else may touch the
  // engine's running sequences until complete() (arrivals only join the waiting queue). After a
  // failure() the step is not to be run.
  Step plan(double now) {
    Step step;
    step.it.replica = replica_;
    step.it.start = now;
    step.it.waiting = waiting_.size();
    schedule(step.batch, step.chunks, step.decodes, step.it);
    if (!failure_.empty()) return step;
    CODA_CHECK(!step.chunks.empty() || !step.decodes.empty());  // kv_budget and simulate's checks
    step.it.swapped = swapped_.size();
    if (step.it.swap_blocks > 0)
      step.it.swap = pricer_.swap_seconds(step.it.swap_blocks, config_.block_size);
    step.it.decode_sequences = step.batch.decode_sequences;
    step.it.prefill_sequences = step.chunks.size();
    step.it.prefill_tokens = step.batch.tokens() - step.batch.decode_sequences;
    step.it.kv_blocks_used = used_;
    step.it.kv_blocks = blocks_;
    return step;
  }

  // The step's tokens, produced at `end`: first tokens, gaps and finishes recorded; the step's
  // record appended to the results. Returns how many requests finished.
  std::size_t complete(Step& step, double end) {
    step.it.end = end;
    std::vector<std::size_t> produced;
    for (const std::size_t i : step.decodes) {
      Seq& s = running_[i];
      s.kv += 1;
      produced.push_back(i);
    }
    for (const auto& [i, tokens] : step.chunks) {
      Seq& s = running_[i];
      s.prefilled += tokens;
      s.kv += tokens;
      if (!s.prefilling()) produced.push_back(i);
      // The first sequence to hold the whole shared prefix gives its blocks to the cache.
      if (prefix_blocks_ > 0 && !prefix_cached_ && s.shared == 0 &&
          s.kv >= prefix_blocks_ * config_.block_size) {
        prefix_cached_ = true;
        s.blocks -= prefix_blocks_;
        s.shared = prefix_blocks_;
      }
    }
    std::size_t done = 0;
    std::vector<bool> finished(running_.size(), false);
    for (const std::size_t i : produced) {
      Seq& s = running_[i];
      RequestRecord& rec = out_.requests[s.record];
      if (s.generated == 0)
        rec.first_token = end;
      else {
        out_.itl.push_back(end - s.last_token);
        out_.itl_request.push_back(rec.request.id);
      }
      s.generated += 1;
      s.last_token = end;
      if (s.generated == rec.request.output) {
        rec.finish = end;
        finished[i] = true;
        used_ -= s.blocks;
        ++done;
      }
    }
    std::vector<Seq> kept;
    kept.reserve(running_.size());
    for (std::size_t i = 0; i < running_.size(); ++i)
      if (!finished[i]) kept.push_back(running_[i]);
    running_ = std::move(kept);
    out_.iterations.push_back(step.it);
    return done;
  }

 private:
  // Waiting order: preempted sequences first (in the order they were preempted), then new ones
  // by the policy's key (arrival order, or prompt length then arrival).
  using Key = std::tuple<int, std::uint64_t, std::uint64_t>;

  void enqueue(const Seq& s, bool preempted) {
    const Request& q = out_.requests[s.record].request;
    const Key key = preempted                                 ? Key{0, preempt_order_++, q.id}
                    : config_.policy == Policy::ShortestFirst ? Key{1, s.prompt, q.id}
                                                              : Key{1, q.id, 0};
    waiting_.emplace(key, s);
  }

  std::uint64_t free_blocks() const { return blocks_ - used_; }

  // Preempts running_[victim]: frees its blocks and requeues it (recompute), or moves its blocks
  // to the swap space (swap); false, with failure_ set, when the swap space cannot take them.
  bool preempt(std::size_t victim, IterationRecord& it) {
    Seq s = running_[victim];
    const bool swap = config_.preemption == Preemption::Swap;
    if (swap && s.blocks > swap_blocks_ - swap_used_) {
      failure_ = fmt::format(
          "request {} must be swapped out at {:.6g} s, but its {} KV blocks do not fit the {} of "
          "the swap space's {} still free: vLLM stops here ('Aborted due to the lack of CPU swap "
          "space')",
          out_.requests[s.record].request.id, it.start, s.blocks, swap_blocks_ - swap_used_,
          swap_blocks_);
      return false;
    }
    running_.erase(running_.begin() + static_cast<std::ptrdiff_t>(victim));
    used_ -= s.blocks;
    ++out_.requests[s.record].preemptions;
    ++it.preempted;
    if (swap) {
      swap_used_ += s.blocks;
      it.swap_blocks += s.blocks;
      ++it.swapped_out;
      swapped_.push_back(s);
      return true;
    }
    s.blocks = 0;
    s.shared = 0;
    s.kv = 0;
    s.prefilled = 0;
    s.prompt = out_.requests[s.record].request.input + s.generated;
    enqueue(s, true);
    return true;
  }

  // Gives running_[i] `need` more blocks, preempting from the back of running_ while none are
  // free; false when running_[i] itself had to go (it was the last) or a swap-out failed.
  bool reserve(std::size_t i, std::uint64_t need, IterationRecord& it) {
    while (need > free_blocks()) {
      const std::size_t victim = running_.size() - 1;
      if (!preempt(victim, it) || victim == i) return false;
    }
    running_[i].blocks += need;
    used_ += need;
    return true;
  }

  // The running sequences in admission order, within `budget` tokens: a decoding sequence takes
  // one token, a sequence part-way through its prompt (chunked prefill) the next chunk of it;
  // each is given the blocks its tokens need first, preempting from the back (sequences not yet
  // scheduled). Returns the budget left.
  std::uint64_t schedule_running(std::uint64_t budget, std::vector<Chunk>& chunks,
                                 std::vector<std::size_t>& decodes, IterationRecord& it) {
    for (std::size_t i = 0; i < running_.size() && budget > 0; ++i) {
      const Seq& s = running_[i];
      const std::uint64_t tokens = s.next_tokens(budget);
      // Blocks beyond those it holds (none under guaranteed_no_evict, which took them all).
      const std::uint64_t want = ceil_div(s.kv + tokens, config_.block_size);
      const std::uint64_t need = want > s.blocks + s.shared ? want - s.blocks - s.shared : 0;
      const bool prefilling = s.prefilling();
      if (!reserve(i, need, it)) break;  // i was the last running sequence
      schedule_tokens(i, tokens, prefilling, chunks, decodes);
      budget -= tokens;
    }
    return budget;
  }

  // Swapped-out sequences back in, first out first, while each one's blocks (and the block its
  // next token needs) fit with the watermark free, its tokens fit the budget and the batch has
  // room (vLLM's _schedule_swapped); each runs its next token or chunk in this iteration.
  // Returns the budget left.
  std::uint64_t swap_in(std::uint64_t budget, std::vector<Chunk>& chunks,
                        std::vector<std::size_t>& decodes, IterationRecord& it) {
    while (!swapped_.empty() && running_.size() < config_.max_batch && budget > 0) {
      Seq& s = swapped_.front();
      const bool prefilling = s.prefilling();
      const std::uint64_t tokens = s.next_tokens(budget);
      const std::uint64_t want = ceil_div(s.kv + tokens, config_.block_size);
      const std::uint64_t need = std::max(want, s.blocks);
      if (need > free_blocks() || free_blocks() - need < watermark_) break;
      swap_used_ -= s.blocks;
      it.swap_blocks += s.blocks;
      ++it.swapped_in;
      s.blocks = need;
      used_ += need;
      running_.push_back(s);
      swapped_.pop_front();
      schedule_tokens(running_.size() - 1, tokens, prefilling, chunks, decodes);
      budget -= tokens;
    }
    return budget;
  }

  void schedule(IterationBatch& batch, std::vector<Chunk>& chunks,
                std::vector<std::size_t>& decodes, IterationRecord& it) {
    if (config_.batching != Batching::PrefillFirst) {
      std::uint64_t left = schedule_running(budget_, chunks, decodes, it);
      if (!failure_.empty()) return;
      if (it.preempted == 0) left = swap_in(left, chunks, decodes, it);
      admit(left, chunks);
    } else {
      // While a sequence is swapped out no prompt is admitted (vLLM V0's _schedule_default).
      if (swapped_.empty()) admit(budget_, chunks);
      if (chunks.empty()) {
        const std::uint64_t left = schedule_running(budget_, chunks, decodes, it);
        if (!failure_.empty()) return;
        if (it.preempted == 0) swap_in(left, chunks, decodes, it);
      }
    }
    const std::uint64_t window = pricer_.model().sliding_window;
    for (const std::size_t i : decodes) {
      const std::uint64_t keys = running_[i].kv + 1;
      batch.decode_sequences += 1;
      batch.decode_context_sum += keys;
      batch.decode_window_context_sum += window > 0 ? std::min(keys, window) : keys;
    }
    for (const auto& [i, tokens] : chunks) {
      const Seq& s = running_[i];
      batch.prefill.push_back({tokens, s.prefilled, s.prefilled + tokens == s.prompt});
    }
  }

  // New prefills from the waiting queue, within the token budget, max_batch and the free blocks
  // less the watermark; the first that does not fit stops admission.
  void admit(std::uint64_t budget, std::vector<Chunk>& chunks) {
    while (!waiting_.empty() && running_.size() < config_.max_batch) {
      Seq& s = waiting_.begin()->second;
      // A prompt that starts with the cached prefix computes only the rest (vLLM's automatic
      // prefix caching: whole blocks of the prefix are reused).
      if (prefix_cached_ && s.kv == 0 && s.prompt > prefix_blocks_ * config_.block_size) {
        s.prefilled = s.kv = prefix_blocks_ * config_.block_size;
        s.shared = prefix_blocks_;
      }
      const std::uint64_t left = s.prompt - s.prefilled;
      if (left > 0 && budget == 0) break;
      const std::uint64_t tokens =
          config_.batching == Batching::Chunked ? std::min(budget, left) : left;
      if (tokens > budget) break;
      // A prefilled arrival (disaggregated decode) needs blocks for its cache and no compute;
      // guaranteed_no_evict takes the whole sequence's at once.
      const Request& q = out_.requests[s.record].request;
      const std::uint64_t held = config_.admission == KvAdmission::GuaranteedNoEvict
                                     ? q.input + q.output
                                     : s.prefilled + tokens;
      const std::uint64_t need = ceil_div(held, config_.block_size) - s.shared;
      if (need > free_blocks() || free_blocks() - need < watermark_) break;
      s.blocks = need;
      used_ += need;
      running_.push_back(s);
      waiting_.erase(waiting_.begin());
      if (tokens > 0) chunks.emplace_back(running_.size() - 1, tokens);
      budget -= tokens;
    }
  }

  IterationPricer& pricer_;
  const SchedulerConfig& config_;
  std::uint64_t replica_;
  std::uint64_t blocks_;
  std::uint64_t swap_blocks_;
  std::uint64_t watermark_;
  std::uint64_t budget_;
  ServeResult& out_;
  std::uint64_t prefix_blocks_;
  bool prefix_cached_ = false;  // the shared prefix's blocks are in the cache (pinned)
  std::uint64_t used_ = 0;
  std::uint64_t swap_used_ = 0;  // blocks of swapped-out sequences in the swap space
  std::uint64_t preempt_order_ = 0;
  std::vector<Seq> running_;  // admission order
  std::map<Key, Seq> waiting_;
  std::deque<Seq> swapped_;  // swapped out, in the order they were
  std::string failure_;
};

// One replica: its virtual engines (one per pipeline stage; one without pipeline parallelism)
// over its stages. Events in time order: a step's end, then an arrival, then a step's start. A
// virtual engine schedules its next step when its last one has ended (and the host's
// iteration_overhead has passed); the step enters stage 0 when stage 0 is free, and each later
// stage when the one before has finished it and passed the activations on (IterationPricer::
// stage_transfer) and the stage is free. With one stage an iteration takes the priced time and
// the overhead, back to back.
class Replica {
 public:
  // `kv`: the replica's cache and swap space, shared by its virtual engines (as vLLM's V0
  // scheduler divides both by the pipeline's stages).
  Replica(IterationPricer& pricer, const SchedulerConfig& config, std::uint64_t replica,
          const KvBudget& kv, std::uint64_t budget, ServeResult& out, bool prefilled = false,
          std::uint64_t prefix_blocks = 0)
      : pricer_(pricer), out_(out), prefilled_(prefilled), overhead_(out.iteration_overhead) {
    const std::uint64_t stages = pricer.pp();
    for (std::uint64_t v = 0; v < stages; ++v)
      engines_.emplace_back(pricer, config, replica, kv.blocks / stages, kv.swap_blocks / stages,
                            budget, out, prefix_blocks);
  }

  // `ids`: this replica's requests (indices into out_.requests) in arrival order; `clients`:
  // closed-loop clients (0: open loop, the requests' own arrivals). False, with the error in
  // `diags`, when a virtual engine had to stop (VirtualEngine::failure).
  bool run(const std::vector<std::size_t>& ids, std::uint64_t clients, Diagnostics& diags) {
    constexpr double kNever = std::numeric_limits<double>::infinity();
    std::size_t next = 0;  // the next request not yet arrived
    std::size_t released = ids.size();
    if (clients > 0) {
      released = std::min<std::size_t>(clients, ids.size());
      for (std::size_t i = 0; i < released; ++i) out_.requests[ids[i]].request.arrival = 0;
    }
    const std::size_t n = engines_.size();
    std::vector<double> ready(n, 0.0);  // when each engine may schedule its next step
    std::vector<std::optional<VirtualEngine::Step>> flight(n);
    std::vector<double> stage_free(n, 0.0);
    std::size_t done = 0;
    while (done < ids.size()) {
      std::size_t ending = n, stepping = n;
      double t_end = kNever, t_step = kNever;
      for (std::size_t v = 0; v < n; ++v) {
        if (flight[v] && flight[v]->it.end < t_end) {
          t_end = flight[v]->it.end;
          ending = v;
        }
        if (!flight[v] && !engines_[v].idle() && ready[v] < t_step) {
          t_step = ready[v];
          stepping = v;
        }
      }
      const double t_arrive = next < released ? out_.requests[ids[next]].request.arrival : kNever;
      CODA_CHECK(t_end < kNever || t_arrive < kNever || t_step < kNever);  // requests remain
      if (t_end <= t_arrive && t_end <= t_step) {
        const std::size_t finished = engines_[ending].complete(*flight[ending], t_end);
        flight[ending].reset();
        ready[ending] = t_end;
        done += finished;
        for (std::size_t k = 0; k < finished && released < ids.size(); ++k)
          out_.requests[ids[released++]].request.arrival = t_end;
      } else if (t_arrive <= t_step) {
        // To the engine with the fewest unfinished requests (the first on a tie), as vLLM's
        // LLMEngine.add_request picks a virtual engine's scheduler.
        std::size_t to = 0;
        for (std::size_t v = 1; v < n; ++v)
          if (engines_[v].unfinished() < engines_[to].unfinished()) to = v;
        if (!flight[to] && engines_[to].idle()) ready[to] = std::max(ready[to], t_arrive);
        engines_[to].arrive(ids[next++], prefilled_);
      } else {
        VirtualEngine::Step step = engines_[stepping].plan(t_step);
        if (const std::string& why = engines_[stepping].failure(); !why.empty()) {
          diags.error({}, "swap_space", why,
                      "give the engine more swap space (--swap-space), or preempt by "
                      "recomputation (--preemption recompute)");
          return false;
        }
        step.it.time = pricer_.price(step.batch);
        const std::vector<double> stage = pricer_.stage_seconds(step.batch, step.it.time);
        const double hop = pricer_.stage_transfer(step.batch.tokens());
        // Each stage's workers copy their layers' share of the swapped blocks before their part
        // of the forward (vLLM's execute_worker, then the model).
        double end = t_step;
        for (std::size_t s = 0; s < n; ++s) {
          end = std::max(s == 0 ? end : end + hop, stage_free[s]) + step.it.swap + stage[s];
          stage_free[s] = end;
        }
        step.it.end = end + overhead_;
        flight[stepping] = std::move(step);
      }
    }
    return true;
  }

 private:
  IterationPricer& pricer_;
  ServeResult& out_;
  bool prefilled_;
  double overhead_;
  std::vector<VirtualEngine> engines_;
};

}  // namespace

constexpr std::pair<std::string_view, Policy> kPolicies[] = {
    {"fcfs", Policy::Fcfs}, {"shortest_first", Policy::ShortestFirst}};

EnumTable<Policy> policy_names() { return kPolicies; }

constexpr std::pair<std::string_view, Batching> kBatchings[] = {
    {"prefill_first", Batching::PrefillFirst},
    {"mixed", Batching::Mixed},
    {"chunked", Batching::Chunked}};

EnumTable<Batching> batching_names() { return kBatchings; }
std::string_view to_string(Batching batching) { return enum_name(kBatchings, batching); }

constexpr std::pair<std::string_view, Runtime> kRuntimes[] = {
    {"vllm", Runtime::Vllm}, {"tensorrt_llm", Runtime::TensorRtLlm}};

EnumTable<Runtime> runtime_names() { return kRuntimes; }
std::string_view to_string(Runtime runtime) { return enum_name(kRuntimes, runtime); }

void apply_runtime(SchedulerConfig& config, Runtime runtime) {
  const bool trt = runtime == Runtime::TensorRtLlm;
  config.batching = trt ? Batching::Mixed : Batching::PrefillFirst;
  config.admission = trt ? KvAdmission::GuaranteedNoEvict : KvAdmission::OnDemand;
}

constexpr std::pair<std::string_view, KvAdmission> kAdmissions[] = {
    {"on_demand", KvAdmission::OnDemand}, {"guaranteed_no_evict", KvAdmission::GuaranteedNoEvict}};

EnumTable<KvAdmission> kv_admission_names() { return kAdmissions; }

constexpr std::pair<std::string_view, Preemption> kPreemptions[] = {
    {"recompute", Preemption::Recompute}, {"swap", Preemption::Swap}};

EnumTable<Preemption> preemption_names() { return kPreemptions; }
std::string_view to_string(Preemption preemption) { return enum_name(kPreemptions, preemption); }
std::string_view to_string(KvAdmission admission) { return enum_name(kAdmissions, admission); }
std::string_view to_string(Policy policy) { return enum_name(kPolicies, policy); }

double RequestRecord::tpot() const {
  if (request.output <= 1) return 0;
  return (finish - first_token) / static_cast<double>(request.output - 1);
}

Stats stats_of(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return sorted_stats(values);
}

std::optional<KvBudget> kv_budget(IterationPricer& pricer, const SchedulerConfig& config,
                                  std::uint64_t max_tokens, Diagnostics& diags) {
  const ReplicaMemory m = pricer.memory(max_tokens);
  KvBudget kv;
  kv.block_size = config.block_size;
  kv.weights = m.weights;
  kv.activations = m.activations;
  kv.kv_bytes_per_token = m.kv_bytes_per_token;
  const std::string& arch = pricer.hardware().name();
  if (config.preemption == Preemption::Swap)
    kv.swap_blocks = config.swap_space.value / (m.kv_bytes_per_token.value * config.block_size);
  if (config.kv_blocks) {
    kv.blocks = *config.kv_blocks;
    return kv;
  }
  const std::optional<Bytes>& capacity = pricer.hardware().spec().dram.capacity;
  if (!capacity) {
    diags.error({}, "arch",
                fmt::format("'{}' states no DRAM capacity, so coda cannot size its "
                            "KV cache",
                            arch),
                "state dram.capacity in the arch, or give the KV cache's size in blocks "
                "(--kv-blocks)");
    return std::nullopt;
  }
  kv.capacity = *capacity;
  kv.usable = Bytes{
      static_cast<std::uint64_t>(static_cast<double>(capacity->value) * config.memory_utilization)};
  const std::uint64_t taken = m.weights.value + m.activations.value;
  const std::uint64_t block_bytes = m.kv_bytes_per_token.value * config.block_size;
  if (taken >= kv.usable.value || (kv.usable.value - taken) < block_bytes) {
    diags.error({}, "serve",
                fmt::format("the weights ({:.2f} GiB a chip) and the activations of a "
                            "{}-token iteration ({:.2f} GiB) leave no room for a KV cache in "
                            "{:.2f} GiB ({} x {} of '{}')",
                            static_cast<double>(m.weights.value) / (1ull << 30), max_tokens,
                            static_cast<double>(m.activations.value) / (1ull << 30),
                            static_cast<double>(kv.usable.value) / (1ull << 30),
                            config.memory_utilization, "the DRAM", arch),
                "use more tensor-parallel ranks (--tp), a narrower --dtype, fewer tokens per "
                "iteration (--max-batched-tokens) or a larger --memory-utilization");
    return std::nullopt;
  }
  kv.blocks = (kv.usable.value - taken) / block_bytes;
  return kv;
}

namespace {

// A replica's KV cache (kv_budget), checked to hold the longest request (prompt and output) with
// the watermark left free; `remedy` is the hint when it does not.
std::optional<KvBudget> cache_holding(IterationPricer& pricer, const SchedulerConfig& config,
                                      std::uint64_t budget, std::uint64_t longest_total,
                                      std::string_view remedy, Diagnostics& diags) {
  std::optional<KvBudget> kv = kv_budget(pricer, config, budget, diags);
  if (!kv) return std::nullopt;
  // With pipeline stages each virtual engine has its share of the blocks (Replica).
  const std::uint64_t blocks = kv->blocks / pricer.pp();
  const std::uint64_t watermark =
      static_cast<std::uint64_t>(config.watermark * static_cast<double>(blocks));
  const std::uint64_t need = ceil_div(longest_total, config.block_size);
  if (need + watermark > blocks) {
    diags.error({}, "serve",
                fmt::format("a request of {} tokens needs {} KV blocks of {} tokens, more than "
                            "the {} the cache has{} (less the {}-block watermark)",
                            longest_total, need, config.block_size, blocks,
                            pricer.pp() > 1 ? fmt::format(" for each of the {} virtual engines "
                                                          "of {} pipeline stages",
                                                          pricer.pp(), pricer.pp())
                                            : std::string(),
                            watermark),
                std::string(remedy));
    return std::nullopt;
  }
  return kv;
}

// Swap preemption's preconditions: an engine that preempts, no prefix caching, a host link.
bool swap_is_simulated(const IterationPricer& pricer, const SchedulerConfig& config,
                       Diagnostics& diags) {
  if (config.admission == KvAdmission::GuaranteedNoEvict) {
    diags.error({}, "preemption",
                "guaranteed_no_evict admission never preempts, so there is nothing to swap",
                "use --kv-admission on_demand (vLLM's) with --preemption swap");
    return false;
  }
  if (config.prefix_caching) {
    diags.error({}, "preemption",
                "swapping out sequences that share the cached prefix's blocks is not simulated",
                "serve without --prefix-caching, or preempt by recomputation");
    return false;
  }
  if (!pricer.hardware().spec().host_link) {
    diags.error(
        {}, "arch",
        fmt::format("'{}' states no host link to swap KV blocks over", pricer.hardware().name()),
        "add host_link: {bandwidth, copy_overhead} to the arch (docs/arch.md), or "
        "preempt by recomputation");
    return false;
  }
  return true;
}

}  // namespace

double IterationRecord::kv_utilisation() const {
  return kv_blocks > 0 ? static_cast<double>(kv_blocks_used) / static_cast<double>(kv_blocks) : 0;
}

ServeSummary summarise(const ServeResult& result, std::uint64_t replicas, const Slo& slo,
                       std::uint64_t warmup) {
  ServeSummary s;
  for (const RequestRecord& r : result.requests) s.requests += r.request.id >= warmup ? 1 : 0;
  if (s.requests == 0) return s;
  double first = std::numeric_limits<double>::infinity(), last = 0;
  std::uint64_t out_tokens = 0, all_tokens = 0, good = 0;
  std::vector<double> ttft, tpot, e2e;
  for (const RequestRecord& r : result.requests) {
    if (r.request.id < warmup) continue;
    first = std::min(first, r.request.arrival);
    last = std::max(last, r.finish);
    out_tokens += r.request.output;
    all_tokens += r.request.input + r.request.output;
    s.preemptions += r.preemptions;
    ttft.push_back(r.ttft());
    e2e.push_back(r.e2e());
    if (r.request.output > 1) tpot.push_back(r.tpot());
    const bool ok = (slo.ttft <= 0 || r.ttft() <= slo.ttft) &&
                    (slo.tpot <= 0 || r.request.output <= 1 || r.tpot() <= slo.tpot);
    good += ok ? 1 : 0;
  }
  s.duration = last - first;
  const double d = s.duration > 0 ? s.duration : 1;
  s.requests_per_s = static_cast<double>(s.requests) / d;
  s.output_tokens_per_s = static_cast<double>(out_tokens) / d;
  s.total_tokens_per_s = static_cast<double>(all_tokens) / d;
  std::sort(ttft.begin(), ttft.end());
  std::sort(tpot.begin(), tpot.end());
  s.meets_slo = (slo.ttft <= 0 || percentile(ttft, slo.percentile) <= slo.ttft) &&
                (slo.tpot <= 0 || percentile(tpot, slo.percentile) <= slo.tpot);
  s.ttft = sorted_stats(ttft);
  s.tpot = sorted_stats(tpot);
  s.e2e = stats_of(std::move(e2e));
  std::vector<double> itl;
  for (std::size_t i = 0; i < result.itl.size(); ++i)
    if (result.itl_request[i] >= warmup) itl.push_back(result.itl[i]);
  s.itl = stats_of(std::move(itl));
  s.slo_attainment = static_cast<double>(good) / static_cast<double>(s.requests);
  s.goodput_rps = static_cast<double>(good) / d;
  s.iterations = result.iterations.size();
  double batch_sum = 0, busy = 0, kv_area = 0;
  for (const IterationRecord& it : result.iterations) {
    s.swap_outs += it.swapped_out;
    s.swap_seconds += it.swap;
    const std::uint64_t b = it.decode_sequences + it.prefill_sequences;
    batch_sum += static_cast<double>(b);
    s.max_batch = std::max(s.max_batch, b);
    const double dt = it.end - it.start;
    busy += dt;
    const double u = it.kv_utilisation();
    kv_area += u * dt;
    s.kv_utilisation_max = std::max(s.kv_utilisation_max, u);
  }
  if (s.iterations > 0) s.mean_batch = batch_sum / static_cast<double>(s.iterations);
  const double span = d * static_cast<double>(replicas);
  s.kv_utilisation_mean = kv_area / span;
  s.busy_fraction = busy / span;
  return s;
}

namespace {

// The two pools of a disaggregated deployment (Disaggregation): the prefill pool on requests cut
// to their first token, then the decode pool on the requests with more to generate, each
// arriving when its cache has crossed the link. Fills `result`'s records, iterations and ITL.
bool simulate_disaggregated(IterationPricer& pricer, const Deployment& deployment,
                            const ArrivalSpec& arrivals, const KvBudget& kv, std::uint64_t budget,
                            std::uint64_t longest_total, ServeResult& result, Diagnostics& diags) {
  const Disaggregation& pools = *deployment.disaggregated;
  if (arrivals.kind == ArrivalKind::Closed) {
    diags.error({}, "disaggregation",
                "a closed loop with disaggregated prefill and decode is not simulated",
                "use open-loop arrivals (--rate, --offline or --trace)");
    return false;
  }
  IterationPricer& decoder = pools.decode_pricer != nullptr ? *pools.decode_pricer : pricer;
  if (decoder.pp() != pricer.pp()) {
    diags.error({}, "pp",
                fmt::format("the decode pool's replicas have {} pipeline stages, the prefill "
                            "pool's {}: a cache goes stage to stage",
                            decoder.pp(), pricer.pp()),
                "give both pools the same PP (the decode pool may differ in TP only)");
    return false;
  }
  const double link = pricer.hardware().achievable_link_bytes_per_second();
  if (link <= 0) {
    diags.error({}, "arch",
                fmt::format("'{}' has no chip links to move KV caches from prefill to decode "
                            "replicas over",
                            pricer.hardware().name()),
                "state the arch's interconnect, or serve without disaggregation");
    return false;
  }
  const SchedulerConfig& config = deployment.scheduler;
  // The decode pool's own KV cache when its TP differs: every request must fit it too.
  KvBudget decode_kv = kv;
  if (&decoder != &pricer) {
    const std::optional<KvBudget> own =
        cache_holding(decoder, config, budget, longest_total,
                      "more decode ranks (--decode-tp), shorter requests, or a larger "
                      "--memory-utilization",
                      diags);
    if (!own) return false;
    decode_kv = *own;
  }
  // Bytes a prompt token's KV cache moves: all ranks' share, carried by min(TP, TP) links. With
  // pipeline stages (the pools' PP alike) each stage's chips send their layers' share (a chip's
  // bytes are its stage's) to the decode pool's same stage, every stage at once.
  const double token_bytes =
      static_cast<double>(kv.kv_bytes_per_token.value) * static_cast<double>(pricer.tp());
  const double links = static_cast<double>(std::min(pricer.tp(), decoder.tp()));
  const std::uint64_t prefix_blocks =
      config.prefix_caching && !result.requests.empty()
          ? result.requests.front().request.shared_prefix / config.block_size
          : 0;
  // The prefill pool: every request, cut to the token its prefill makes.
  ServeResult prefill;
  prefill.kv = kv;
  prefill.iteration_overhead = result.iteration_overhead;
  for (const RequestRecord& r : result.requests) {
    RequestRecord cut = r;
    cut.request.output = 1;
    prefill.requests.push_back(cut);
  }
  for (std::uint64_t rep = 0; rep < pools.prefill; ++rep) {
    std::vector<std::size_t> ids;
    for (std::size_t i = rep; i < prefill.requests.size(); i += pools.prefill) ids.push_back(i);
    Replica engine(pricer, config, rep, kv, budget, prefill, false, prefix_blocks);
    if (!engine.run(ids, 0, diags)) return false;
  }
  // The decode pool: each request with more to generate, when its cache arrives.
  ServeResult decode;
  decode.kv = decode_kv;
  decode.iteration_overhead = result.iteration_overhead;
  std::vector<std::size_t> back;  // decode record -> result record
  // Each prefill replica's links send one cache at a time, in the order its prefills end (request
  // i was prefilled by replica i mod P): a cache waits for the one before it.
  std::vector<std::size_t> sending;
  for (std::size_t i = 0; i < result.requests.size(); ++i)
    if (result.requests[i].request.output > 1) sending.push_back(i);
  std::stable_sort(sending.begin(), sending.end(), [&](std::size_t a, std::size_t b) {
    const std::size_t ra = a % pools.prefill, rb = b % pools.prefill;
    return ra != rb ? ra < rb : prefill.requests[a].first_token < prefill.requests[b].first_token;
  });
  std::vector<double> link_free(pools.prefill, 0.0);
  for (const std::size_t i : sending) {
    const double ready = prefill.requests[i].first_token;
    const double start = std::max(ready, link_free[i % pools.prefill]);
    const double sent = start + static_cast<double>(result.requests[i].request.input) *
                                    token_bytes / (links * link);
    link_free[i % pools.prefill] = sent;
    result.requests[i].kv_transfer = sent - ready;
  }
  for (std::size_t i = 0; i < result.requests.size(); ++i) {
    RequestRecord& r = result.requests[i];
    r.first_token = prefill.requests[i].first_token;
    r.preemptions = prefill.requests[i].preemptions;
    r.finish = r.first_token;
    r.replica = 0;
    if (r.request.output <= 1) continue;
    RequestRecord d = r;
    d.request.arrival = r.first_token + r.kv_transfer;
    d.preemptions = 0;  // the decode pool's own
    decode.requests.push_back(d);
    back.push_back(i);
  }
  std::vector<std::size_t> order(decode.requests.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return decode.requests[a].request.arrival < decode.requests[b].request.arrival;
  });
  for (std::uint64_t rep = 0; rep < pools.decode; ++rep) {
    std::vector<std::size_t> ids;
    for (std::size_t k = rep; k < order.size(); k += pools.decode) ids.push_back(order[k]);
    Replica engine(decoder, config, pools.prefill + rep, decode_kv, budget, decode, true);
    if (!engine.run(ids, 0, diags)) return false;
    for (const std::size_t i : ids) decode.requests[i].replica = pools.prefill + rep;
  }
  for (std::size_t k = 0; k < back.size(); ++k) {
    RequestRecord& r = result.requests[back[k]];
    r.finish = decode.requests[k].finish;
    r.replica = decode.requests[k].replica;
    r.preemptions += decode.requests[k].preemptions;
  }
  if (&decoder != &pricer) result.decode_kv = decode_kv;
  result.iterations = std::move(prefill.iterations);
  result.iterations.insert(result.iterations.end(), decode.iterations.begin(),
                           decode.iterations.end());
  result.itl = std::move(decode.itl);
  result.itl_request = std::move(decode.itl_request);
  return true;
}

}  // namespace

std::optional<ServeResult> simulate(IterationPricer& pricer, const Deployment& deployment,
                                    const std::vector<Request>& requests,
                                    const ArrivalSpec& arrivals, const Slo& slo,
                                    Diagnostics& diags) {
  const SchedulerConfig& config = deployment.scheduler;
  CODA_CHECK(deployment.replicas >= 1 && config.block_size >= 1 && config.max_batch >= 1);
  std::uint64_t longest_input = 0, longest_total = 0;
  const std::uint64_t prefix = requests.empty() ? 0 : requests.front().shared_prefix;
  for (const Request& r : requests) {
    longest_input = std::max(longest_input, r.input);
    longest_total = std::max(longest_total, r.input + r.output - 1);
    if (r.shared_prefix != prefix || r.shared_prefix >= r.input) {
      diags.error({}, "shared_prefix",
                  fmt::format("request {}: a shared prefix of {} tokens in a {}-token prompt, "
                              "where the stream's first request shares {}",
                              r.id, r.shared_prefix, r.input, prefix),
                  "one prefix for the whole stream, shorter than every prompt");
      return std::nullopt;
    }
  }
  if (arrivals.warmup > 0 && arrivals.warmup >= requests.size()) {
    diags.error({}, "warmup",
                fmt::format("a warm-up of {} requests leaves none of the {} to measure",
                            arrivals.warmup, requests.size()),
                "fewer warm-up requests (--warmup) or more requests (--requests)");
    return std::nullopt;
  }
  std::uint64_t budget = config.max_batched_tokens;
  if (budget == 0) {
    switch (config.batching) {
      case Batching::Chunked:
        budget = 512;
        break;
      case Batching::Mixed:
        budget = std::max<std::uint64_t>(8192, longest_total);
        break;
      case Batching::PrefillFirst:
        budget = std::max<std::uint64_t>(2048, longest_total);
        break;
    }
  }
  if (config.batching != Batching::Chunked && longest_total > budget) {
    diags.error({}, "max_batched_tokens",
                fmt::format("{} tokens per iteration cannot prefill a request of {} tokens (its "
                            "prompt and, after a preemption, the tokens it generated)",
                            budget, longest_total),
                fmt::format("raise --max-batched-tokens to at least {}, or use --batching "
                            "chunked (--chunked-prefill)",
                            longest_total));
    return std::nullopt;
  }
  if (config.preemption == Preemption::Swap && !swap_is_simulated(pricer, config, diags))
    return std::nullopt;
  const std::optional<KvBudget> kv =
      cache_holding(pricer, config, budget, longest_total,
                    "shorter requests, more tensor-parallel ranks (--tp), or a larger "
                    "--memory-utilization",
                    diags);
  if (!kv) return std::nullopt;
  if (config.preemption == Preemption::Swap && kv->swap_blocks / pricer.pp() == 0) {
    diags.error({}, "swap_space",
                fmt::format("{} of swap space a chip holds no KV block of {} tokens ({} a chip){}",
                            to_string(config.swap_space), config.block_size,
                            to_string(Bytes{kv->kv_bytes_per_token.value * config.block_size}),
                            pricer.pp() > 1
                                ? fmt::format(" for each of the {} virtual engines", pricer.pp())
                                : std::string()),
                "give more swap space (--swap-space, GiB)");
    return std::nullopt;
  }
  ServeResult result;
  result.kv = *kv;
  result.max_batched_tokens = budget;
  const std::optional<Seconds>& step = pricer.hardware().spec().calibration.llm_step_fixed_cost;
  result.iteration_overhead = config.iteration_overhead.value_or(step ? step->value : 0.0);
  result.requests.reserve(requests.size());
  for (const Request& r : requests) result.requests.push_back({.request = r});
  if (deployment.disaggregated) {
    if (!simulate_disaggregated(pricer, deployment, arrivals, *kv, budget, longest_total, result,
                                diags))
      return std::nullopt;
    result.summary = summarise(result, deployment.total_replicas(), slo, arrivals.warmup);
    return result;
  }
  // Round-robin: request i to replica i mod R (closed loop: client c to replica c mod R, and
  // its requests with it).
  const std::uint64_t replicas = deployment.replicas;
  for (std::uint64_t rep = 0; rep < replicas; ++rep) {
    std::vector<std::size_t> ids;
    for (std::size_t i = rep; i < result.requests.size(); i += replicas) {
      ids.push_back(i);
      result.requests[i].replica = rep;
    }
    std::uint64_t clients = 0;
    if (arrivals.kind == ArrivalKind::Closed)
      clients = arrivals.concurrency / replicas + (rep < arrivals.concurrency % replicas ? 1 : 0);
    if (arrivals.kind == ArrivalKind::Closed && clients == 0) {
      diags.error({}, "concurrency",
                  fmt::format("{} clients leave replica {} of {} without any", arrivals.concurrency,
                              rep, replicas),
                  "at least one client per replica");
      return std::nullopt;
    }
    Replica engine(pricer, config, rep, *kv, budget, result, false,
                   config.prefix_caching ? prefix / config.block_size : 0);
    if (!engine.run(ids, clients, diags)) return std::nullopt;
  }
  // With pipeline stages a replica's virtual engines each have steps in flight.
  result.summary = summarise(result, replicas * pricer.pp(), slo, arrivals.warmup);
  return result;
}

namespace {

// `spec`'s requests with their arrivals at `rate` (poisson or gamma).
std::optional<ServeResult> simulate_at(IterationPricer& pricer, const Deployment& deployment,
                                       const RequestSpec& spec, double rate, const Slo& slo,
                                       Diagnostics& diags) {
  CODA_CHECK(spec.arrivals.kind == ArrivalKind::Poisson ||
             spec.arrivals.kind == ArrivalKind::Gamma);
  RequestSpec at = spec;
  at.arrivals.rate = rate;
  return simulate(pricer, deployment, make_requests(at), at.arrivals, slo, diags);
}

}  // namespace

std::optional<RateCurve> rate_curve(IterationPricer& pricer, const Deployment& deployment,
                                    const RequestSpec& spec, const std::vector<double>& rates,
                                    const Slo& slo, Diagnostics& diags) {
  RateCurve out;
  for (const double rate : rates) {
    std::optional<ServeResult> r = simulate_at(pricer, deployment, spec, rate, slo, diags);
    if (!r) return std::nullopt;
    out.points.push_back({rate, r->summary});
    if (!out.top || rate > out.points[out.top_index].rate) {
      out.top_index = out.points.size() - 1;
      out.top = std::move(r);
    }
  }
  return out;
}

// Doublings of the bracket's top beyond the offline throughput before the search gives up
// looking higher.
constexpr int kMaxDoublings = 4;

std::optional<RateSearch> search_rate(IterationPricer& pricer, const Deployment& deployment,
                                      const RequestSpec& spec, const Slo& slo, int steps,
                                      Diagnostics& diags) {
  if (!slo.any()) {
    diags.error({}, "slo", "a rate search needs a limit to stay within",
                "give --slo-ttft and/or --slo-tpot (milliseconds)");
    return std::nullopt;
  }
  RateSearch out;
  RequestSpec offline = spec;
  offline.arrivals = {.kind = ArrivalKind::Offline};
  const std::optional<ServeResult> top =
      simulate(pricer, deployment, make_requests(offline), offline.arrivals, slo, diags);
  if (!top) return std::nullopt;
  out.offline_rps = top->summary.requests_per_s;
  const auto probe = [&](double rate) -> std::optional<ServeResult> {
    std::optional<ServeResult> r = simulate_at(pricer, deployment, spec, rate, slo, diags);
    if (r) out.probes.push_back({rate, r->summary});
    return r;
  };
  // The bracket: the offline throughput, doubled while it is still within the SLO (a finite
  // stream's offline throughput includes its drain, so the steady state can sustain more).
  double lo = 0, hi = out.offline_rps;
  for (int i = 0; i <= kMaxDoublings; ++i) {
    std::optional<ServeResult> r = probe(hi);
    if (!r) return std::nullopt;
    if (!r->summary.meets_slo) break;
    lo = hi;
    out.rate = hi;
    out.best = std::move(r);
    if (i == kMaxDoublings) return out;  // within the SLO at 2^kMaxDoublings x offline
    hi *= 2;
  }
  for (int i = 0; i < steps; ++i) {
    const double rate = (lo + hi) / 2;
    std::optional<ServeResult> r = probe(rate);
    if (!r) return std::nullopt;
    if (r->summary.meets_slo) {
      lo = rate;
      out.rate = rate;
      out.best = std::move(r);
    } else {
      hi = rate;
    }
  }
  return out;
}

}  // namespace coda::sim::serving
