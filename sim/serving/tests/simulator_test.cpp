#include "sim/serving/simulator.h"

#include <gtest/gtest.h>

#include "arch/arch_spec.h"
#include "workloads/llm/llm_config.h"

namespace coda::sim::serving {
namespace {

// The simulator's logic under test, on coda's real iteration prices: each expected time below is
// summed from IterationPricer's prices of the iterations the scheduler must run, derived by hand
// from the scheduling rules in simulator.h, each plus the host's time per iteration (the arch's
// calibration.llm_step_fixed_cost: the H100 preset's states 0 since 2026-12-05, so the fixture's
// copy states 152.5 us, the value it had before, for the host's time to show in every test).
class Serving : public ::testing::Test {
 protected:
  Serving() : hw_(load()) {
    Diagnostics diags;
    auto model = workload::llm::load_llm_config("configs/workloads/llm/llama2_7b.yaml", diags);
    EXPECT_TRUE(model) << diags.format_all();
    auto pricer = IterationPricer::make(*model, hw_, {}, diags);
    EXPECT_TRUE(pricer) << diags.format_all();
    pricer_.emplace(std::move(*pricer));
    host_ = hw_.spec().calibration.llm_step_fixed_cost->value;
  }
  static arch::HardwareModel load() {
    Diagnostics diags;
    auto spec = arch::load_arch(std::filesystem::path("configs/arch/nvidia_h100_sxm.yaml"), diags);
    EXPECT_TRUE(spec) << diags.format_all();
    spec->spec.calibration.llm_step_fixed_cost = Seconds{152.5e-6};
    return arch::HardwareModel(spec->spec);
  }
  double prefill(std::uint64_t tokens, std::uint64_t cached = 0, bool samples = true) {
    IterationBatch b;
    b.prefill.push_back({tokens, cached, samples});
    return pricer_->price(b).total() + host_;
  }
  double decode(std::uint64_t sequences, std::uint64_t keys_each) {
    IterationBatch b;
    b.decode_sequences = sequences;
    b.decode_context_sum = sequences * keys_each;
    return pricer_->price(b).total() + host_;
  }
  // A disaggregated 100-token prompt at TP 1: TTFT is its prefill; its cache, 100 tokens x 512
  // KiB (LLaMA-2-7B's 32 layers x 2 x 32 heads x 128 x 2 bytes), crosses one link at the arch's
  // achievable bandwidth. Returns the transfer's seconds.
  double prefill_then_transfer(const RequestRecord& q) {
    EXPECT_NEAR(q.ttft(), prefill(100), 1e-12);
    const double transfer = 100.0 * 512 * 1024 / hw_.achievable_link_bytes_per_second();
    EXPECT_NEAR(q.kv_transfer, transfer, 1e-15);
    return transfer;
  }
  ServeResult run(const std::vector<Request>& requests, const Deployment& d,
                  ArrivalSpec arrivals = {}, Slo slo = {}) {
    Diagnostics diags;
    auto r = simulate(*pricer_, d, requests, arrivals, slo, diags);
    EXPECT_TRUE(r) << diags.format_all();
    return r ? *r : ServeResult{};
  }
  // The 4-block cache of TheStepAtWhichAFullCacheMustPreempt (no watermark), preempting by swap,
  // and its two requests of 16 + 30 tokens.
  static Deployment swapping() {
    Deployment d;
    d.scheduler.kv_blocks = 4;
    d.scheduler.watermark = 0;
    d.scheduler.preemption = Preemption::Swap;
    return d;
  }
  static std::vector<Request> two_requests() {
    return {{.id = 0, .input = 16, .output = 30}, {.id = 1, .input = 16, .output = 30}};
  }
  arch::HardwareModel hw_;
  std::optional<IterationPricer> pricer_;
  double host_ = 0;
};

// One request alone: TTFT is its prefill (no queue); each later token one decode iteration over
// the prompt and the tokens so far.
TEST_F(Serving, TheHostsTimePerIterationIsTheArchsUnlessGiven) {
  EXPECT_DOUBLE_EQ(host_, 152.5e-6);
  Deployment d;
  d.scheduler.iteration_overhead = 0;
  const ServeResult r = run({{.id = 0, .input = 100, .output = 1}}, d);
  EXPECT_EQ(r.iteration_overhead, 0.0);
  EXPECT_NEAR(r.requests[0].ttft(), prefill(100) - host_, 1e-12);
}

TEST_F(Serving, ASingleRequestsTtftIsItsPrefill) {
  const ServeResult r = run({{.id = 0, .arrival = 1.5, .input = 100, .output = 5}}, {});
  ASSERT_EQ(r.requests.size(), 1u);
  const RequestRecord& q = r.requests[0];
  EXPECT_NEAR(q.ttft(), prefill(100), 1e-12);
  // Decode i (i = 1..4) appends token 100 + i - 1 and attends to 100 + i keys.
  double decodes = 0;
  for (std::uint64_t i = 1; i <= 4; ++i) decodes += decode(1, 100 + i);
  EXPECT_NEAR(q.finish, 1.5 + prefill(100) + decodes, 1e-9);
  EXPECT_NEAR(q.tpot(), decodes / 4, 1e-12);
  EXPECT_EQ(r.iterations.size(), 5u);
  EXPECT_EQ(r.itl.size(), 4u);
  EXPECT_EQ(r.summary.requests, 1u);
}

// A fixed batch: 4 requests at 0 prefill together (one iteration of four 64-token prompts, one
// op of batch 4), then decode in lockstep, so each one's TPOT is the mean decode iteration.
TEST_F(Serving, AFixedBatchsTpot) {
  std::vector<Request> reqs;
  for (std::uint64_t i = 0; i < 4; ++i) reqs.push_back({.id = i, .input = 64, .output = 9});
  const ServeResult r = run(reqs, {});
  IterationBatch four;
  for (int i = 0; i < 4; ++i) four.prefill.push_back({64, 0, true});
  const double p = pricer_->price(four).total() + host_;
  double decodes = 0;
  for (std::uint64_t i = 1; i <= 8; ++i) decodes += decode(4, 64 + i);
  for (const RequestRecord& q : r.requests) {
    EXPECT_NEAR(q.ttft(), p, 1e-12);
    EXPECT_NEAR(q.tpot(), decodes / 8, 1e-12);
    EXPECT_NEAR(q.e2e(), p + decodes, 1e-9);
  }
  EXPECT_EQ(r.summary.iterations, 9u);
  EXPECT_DOUBLE_EQ(r.summary.mean_batch, 4.0);
  EXPECT_NEAR(r.summary.output_tokens_per_s, 36 / (p + decodes), 1e-6);
}

// max_batch 1: the second request queues behind the whole first one.
TEST_F(Serving, QueueingAddsToTtft) {
  Deployment d;
  d.scheduler.max_batch = 1;
  const ServeResult r =
      run({{.id = 0, .input = 32, .output = 3}, {.id = 1, .input = 48, .output = 2}}, d);
  const double first = prefill(32) + decode(1, 33) + decode(1, 34);
  EXPECT_NEAR(r.requests[0].e2e(), first, 1e-12);
  EXPECT_NEAR(r.requests[1].ttft(), first + prefill(48), 1e-12);
}

// A KV cache of 4 blocks of 16 tokens, two requests of 16-token prompts: the prefill takes one
// block each; decode 1 appends token 17 and needs a second block each (4 in use); decode k
// attends to 16 + k keys, so decode 17 needs a third block: none is free, and the request
// admitted last is preempted. Iteration 0 is the prefill, so iteration 17 preempts.
TEST_F(Serving, TheStepAtWhichAFullCacheMustPreempt) {
  Deployment d;
  d.scheduler.kv_blocks = 4;
  d.scheduler.watermark = 0;
  const ServeResult r =
      run({{.id = 0, .input = 16, .output = 30}, {.id = 1, .input = 16, .output = 30}}, d);
  ASSERT_GT(r.iterations.size(), 18u);
  for (std::size_t i = 0; i < 17; ++i) EXPECT_EQ(r.iterations[i].preempted, 0u) << i;
  EXPECT_EQ(r.iterations[17].preempted, 1u);
  EXPECT_EQ(r.iterations[17].decode_sequences, 1u);
  EXPECT_EQ(r.iterations[16].kv_blocks_used, 4u);
  EXPECT_EQ(r.requests[1].preemptions, 1u);
  EXPECT_EQ(r.requests[0].preemptions, 0u);
  EXPECT_EQ(r.summary.preemptions, 1u);
  // Request 1 had generated 17 tokens (the prefill's and 16 decodes); it waits while request 0
  // holds 3 blocks (a prefill of 16 + 17 = 33 tokens needs 3, leaving 1), so it comes back when
  // request 0 ends, recomputing 33 tokens in one prefill.
  EXPECT_EQ(r.requests[1].finish > r.requests[0].finish, true);
  EXPECT_EQ(r.summary.requests, 2u);
}

// The same two requests under TensorRT-LLM's guaranteed_no_evict: each sequence of 16 + 30 = 46
// tokens takes ceil(46 / 16) = 3 blocks at admission, so only request 0 fits the 4 blocks.
// Request 0 makes its 30 tokens in 30 iterations (the prefill's and 29 decodes); request 1 waits
// for blocks until then and takes iterations 30-59. Nothing is preempted.
TEST_F(Serving, GuaranteedNoEvictReservesTheWholeSequence) {
  Deployment d;
  d.scheduler.kv_blocks = 4;
  d.scheduler.watermark = 0;
  d.scheduler.admission = KvAdmission::GuaranteedNoEvict;
  const ServeResult r =
      run({{.id = 0, .input = 16, .output = 30}, {.id = 1, .input = 16, .output = 30}}, d);
  EXPECT_EQ(r.summary.preemptions, 0u);
  ASSERT_EQ(r.iterations.size(), 60u);
  for (const IterationRecord& it : r.iterations) {
    EXPECT_EQ(it.decode_sequences + it.prefill_sequences, 1u);
    EXPECT_EQ(it.kv_blocks_used, 3u);
  }
  EXPECT_EQ(r.requests[1].first_token, r.iterations[30].end);
  EXPECT_EQ(r.requests[0].finish, r.iterations[29].end);
}

// The cache of TheStepAtWhichAFullCacheMustPreempt, preempting by swap: at iteration 17 request 1
// (kv 32 tokens, 2 blocks, 17 tokens made) is swapped out, the H100 preset's host link copying
// its 2 blocks x 2 tensors x 32 layers = 128 copies of 128 KiB (2.048 us at 64 GB/s) at 6 us
// each: 0.768 ms before the iteration's forward. Request 0 decodes alone to its 30th token
// (iteration 29) and frees its 3 blocks; iteration 30 swaps request 1 back in (its 2 blocks and
// a third for token 33: 3 <= 4 free) and it decodes on, not prefilling again: its 13 tokens left
// take iterations 30-42, 43 in all, and no iteration after the first prefills.
TEST_F(Serving, SwapPreemptionMovesTheBlocksToTheHostAndBack) {
  const Deployment d = swapping();
  const ServeResult r = run(two_requests(), d);
  EXPECT_EQ(r.kv.swap_blocks, (4ull << 30) / (16ull * 512 * 1024));  // vLLM's 4 GiB: 512 blocks
  const double swap = 128 * 6e-6;
  EXPECT_NEAR(pricer_->swap_seconds(2, 16), swap, 1e-15);
  ASSERT_EQ(r.iterations.size(), 43u);
  const IterationRecord& out = r.iterations[17];
  EXPECT_EQ(out.preempted, 1u);
  EXPECT_EQ(out.swapped_out, 1u);
  EXPECT_EQ(out.swap_blocks, 2u);
  EXPECT_EQ(out.swapped, 1u);
  EXPECT_EQ(out.decode_sequences, 1u);
  EXPECT_NEAR(out.swap, swap, 1e-15);
  EXPECT_NEAR(out.end - out.start, decode(1, 33) + swap, 1e-12);
  for (std::size_t i = 18; i < 30; ++i) {
    EXPECT_EQ(r.iterations[i].swapped, 1u) << i;
    EXPECT_EQ(r.iterations[i].swap_blocks, 0u) << i;
  }
  const IterationRecord& in = r.iterations[30];
  EXPECT_EQ(in.swapped_in, 1u);
  EXPECT_EQ(in.swap_blocks, 2u);
  EXPECT_EQ(in.swapped, 0u);
  EXPECT_EQ(in.kv_blocks_used, 3u);
  EXPECT_EQ(in.decode_sequences, 1u);
  EXPECT_NEAR(in.end - in.start, decode(1, 33) + swap, 1e-12);
  for (std::size_t i = 1; i < r.iterations.size(); ++i)
    EXPECT_EQ(r.iterations[i].prefill_sequences, 0u) << i;
  EXPECT_EQ(r.requests[0].finish, r.iterations[29].end);
  EXPECT_EQ(r.requests[1].finish, r.iterations[42].end);
  EXPECT_EQ(r.requests[1].preemptions, 1u);
  EXPECT_EQ(r.summary.preemptions, 1u);
  EXPECT_EQ(r.summary.swap_outs, 1u);
  EXPECT_NEAR(r.summary.swap_seconds, 2 * swap, 1e-15);
}

// vLLM V0 admits no prompt while a sequence is swapped out: request 2 (16 tokens, one block)
// arrives as iteration 17 ends, when request 1 has just been swapped out and 1 block is free, but
// waits until request 1 is back (iteration 30) and is prefilled in iteration 31.
TEST_F(Serving, NoPromptIsAdmittedWhileASequenceIsSwappedOut) {
  const Deployment d = swapping();
  std::vector<Request> reqs = two_requests();
  const double swapped_at = run(reqs, d).iterations[17].end;
  reqs.push_back({.id = 2, .arrival = swapped_at, .input = 16, .output = 1});
  const ServeResult r = run(reqs, d);
  ASSERT_GT(r.iterations.size(), 31u);
  EXPECT_EQ(r.iterations[18].waiting, 1u);
  for (std::size_t i = 18; i <= 30; ++i) EXPECT_EQ(r.iterations[i].prefill_sequences, 0u) << i;
  EXPECT_EQ(r.iterations[30].swapped_in, 1u);
  EXPECT_EQ(r.iterations[31].prefill_sequences, 1u);
  EXPECT_EQ(r.requests[2].first_token, r.iterations[31].end);
}

// With chunked prefill vLLM V0 schedules the running sequences, then the swapped ones, then new
// prompts (_schedule_chunked_prefill): in iteration 18 request 1 cannot come back (3 blocks, 1
// free), but request 2's one block fits, so its prompt runs beside request 0's decode.
TEST_F(Serving, ChunkedPrefillAdmitsAPromptThatFitsWhileASequenceIsSwappedOut) {
  Deployment d = swapping();
  d.scheduler.batching = Batching::Chunked;
  std::vector<Request> reqs = two_requests();
  const ServeResult two = run(reqs, d);
  ASSERT_GT(two.iterations.size(), 18u);
  EXPECT_EQ(two.iterations[17].swapped_out, 1u);
  reqs.push_back({.id = 2, .arrival = two.iterations[17].end, .input = 16, .output = 1});
  const ServeResult r = run(reqs, d);
  EXPECT_EQ(r.iterations[18].swapped, 1u);
  EXPECT_EQ(r.iterations[18].swapped_in, 0u);
  EXPECT_EQ(r.iterations[18].decode_sequences, 1u);
  EXPECT_EQ(r.iterations[18].prefill_sequences, 1u);
  EXPECT_EQ(r.requests[2].first_token, r.iterations[18].end);
}

// A swap-out the swap space cannot hold stops the run, as vLLM aborts: 8 MiB hold one of
// LLaMA-2-7B's 8 MiB blocks, and request 1 has 2. Less than a block is refused at once.
TEST_F(Serving, ASwapSpaceTooSmallIsAnError) {
  Deployment d = swapping();
  d.scheduler.swap_space = Bytes{8ull << 20};
  const std::vector<Request> reqs = two_requests();
  Diagnostics diags;
  EXPECT_FALSE(simulate(*pricer_, d, reqs, {}, {}, diags));
  ASSERT_EQ(diags.error_count(), 1u);
  EXPECT_EQ(diags.all()[0].path, "swap_space");
  EXPECT_NE(diags.all()[0].message.find("request 1 must be swapped out"), std::string::npos)
      << diags.all()[0].message;
  EXPECT_NE(diags.all()[0].message.find("its 2 KV blocks do not fit the 1"), std::string::npos)
      << diags.all()[0].message;
  Diagnostics tiny;
  d.scheduler.swap_space = Bytes{1ull << 20};
  EXPECT_FALSE(simulate(*pricer_, d, reqs, {}, {}, tiny));
  ASSERT_EQ(tiny.error_count(), 1u);
  EXPECT_NE(tiny.all()[0].message.find("holds no KV block"), std::string::npos)
      << tiny.all()[0].message;
}

// Swapping needs an engine that preempts, no prefix caching (not simulated) and a host link.
TEST_F(Serving, SwapPreemptionsPreconditions) {
  const std::vector<Request> reqs = {{.id = 0, .input = 16, .output = 2}};
  Deployment d;
  d.scheduler.preemption = Preemption::Swap;
  d.scheduler.admission = KvAdmission::GuaranteedNoEvict;
  Diagnostics evict;
  EXPECT_FALSE(simulate(*pricer_, d, reqs, {}, {}, evict));
  ASSERT_EQ(evict.error_count(), 1u);
  EXPECT_NE(evict.all()[0].message.find("never preempts"), std::string::npos);
  d.scheduler.admission = KvAdmission::OnDemand;
  d.scheduler.prefix_caching = true;
  Diagnostics prefix;
  EXPECT_FALSE(simulate(*pricer_, d, reqs, {}, {}, prefix));
  ASSERT_EQ(prefix.error_count(), 1u);
  EXPECT_EQ(prefix.all()[0].path, "preemption");
  d.scheduler.prefix_caching = false;
  arch::ArchSpec spec = hw_.spec();
  spec.host_link.reset();
  const arch::HardwareModel no_link(spec);
  Diagnostics diags;
  auto model = workload::llm::load_llm_config("configs/workloads/llm/llama2_7b.yaml", diags);
  ASSERT_TRUE(model);
  auto pricer = IterationPricer::make(*model, no_link, {}, diags);
  ASSERT_TRUE(pricer) << diags.format_all();
  EXPECT_FALSE(simulate(*pricer, d, reqs, {}, {}, diags));
  ASSERT_EQ(diags.error_count(), 1u);
  EXPECT_EQ(diags.all()[0].path, "arch");
  EXPECT_NE(diags.all()[0].message.find("states no host link"), std::string::npos);
}

// Chunked prefill with a 256-token budget: a 1000-token prompt takes ceil(1000 / 256) = 4
// iterations (256 at 0, 256 at 256, 256 at 512 and 232 at 768 cached tokens; only the last
// samples), so TTFT is their sum.
TEST_F(Serving, AChunkedPrefillsIterationCount) {
  Deployment d;
  d.scheduler.batching = Batching::Chunked;
  d.scheduler.max_batched_tokens = 256;
  const ServeResult r = run({{.id = 0, .input = 1000, .output = 2}}, d);
  const double ttft = prefill(256, 0, false) + prefill(256, 256, false) + prefill(256, 512, false) +
                      prefill(232, 768, true);
  EXPECT_NEAR(r.requests[0].ttft(), ttft, 1e-12);
  EXPECT_EQ(r.iterations.size(), 5u);  // four chunks and one decode
  EXPECT_EQ(r.iterations[3].prefill_tokens, 232u);
}

// TensorRT-LLM's in-flight batching (Batching::Mixed): a prompt that arrives while another
// sequence decodes joins that decode's iteration whole, where prefill-first would run it alone
// and hold the decode back. Request 1 arrives during request 0's prefill, so iteration 2 is
// request 0's first decode (one token over 101 keys) with request 1's 100-token prompt.
TEST_F(Serving, AMixedBatchRunsAPromptWithTheDecodes) {
  const std::vector<Request> reqs = {
      {.id = 0, .input = 100, .output = 3},
      {.id = 1, .arrival = prefill(100) / 2, .input = 100, .output = 3}};
  Deployment d;
  d.scheduler.batching = Batching::Mixed;
  const ServeResult r = run(reqs, d);
  ASSERT_GE(r.iterations.size(), 2u);
  EXPECT_EQ(r.iterations[1].decode_sequences, 1u);
  EXPECT_EQ(r.iterations[1].prefill_sequences, 1u);
  IterationBatch both;
  both.decode_sequences = 1;
  both.decode_context_sum = 101;
  both.prefill.push_back({100, 0, true});
  const double second = pricer_->price(both).total() + host_;
  EXPECT_NEAR(r.requests[1].first_token, prefill(100) + second, 1e-12);
  // Iteration 3 decodes both (request 0's last token, request 1's second), iteration 4 request
  // 1's last: request 0 ends with iteration 3. Prefill-first runs request 1's prompt alone in
  // iteration 2, so both decode in iterations 3 and 4 and request 0 ends with iteration 4.
  ASSERT_EQ(r.iterations.size(), 4u);
  EXPECT_EQ(r.requests[0].finish, r.iterations[2].end);
  const ServeResult first = run(reqs, {});
  ASSERT_EQ(first.iterations.size(), 4u);
  EXPECT_EQ(first.iterations[1].decode_sequences, 0u);
  EXPECT_EQ(first.requests[0].finish, first.iterations[3].end);
  // Mixed's default budget is TensorRT-LLM's max_num_tokens default, 8192.
  EXPECT_EQ(r.max_batched_tokens, 8192u);
}

// Whole prompts join while they fit in what the decodes leave of the budget; the first that
// does not fit waits (TensorRT-LLM's micro-batch scheduler stops there). Budget 205, three
// 100-token prompts at 0: iteration 1 takes two (200 tokens; a third would make 300), iteration
// 2 their two decodes and the third prompt (102 tokens).
TEST_F(Serving, AMixedBatchAdmitsWholePromptsWithinTheBudget) {
  std::vector<Request> reqs;
  for (std::uint64_t i = 0; i < 3; ++i) reqs.push_back({.id = i, .input = 100, .output = 3});
  Deployment d;
  d.scheduler.batching = Batching::Mixed;
  d.scheduler.max_batched_tokens = 205;
  const ServeResult r = run(reqs, d);
  ASSERT_GE(r.iterations.size(), 2u);
  EXPECT_EQ(r.iterations[0].prefill_sequences, 2u);
  EXPECT_EQ(r.iterations[0].prefill_tokens, 200u);
  EXPECT_EQ(r.iterations[1].decode_sequences, 2u);
  EXPECT_EQ(r.iterations[1].prefill_tokens, 100u);
  EXPECT_EQ(r.requests[2].first_token, r.iterations[1].end);
}

// A closed loop of one client: each request arrives when the previous one ends.
TEST_F(Serving, AClosedLoopSendsOnCompletion) {
  std::vector<Request> reqs;
  for (std::uint64_t i = 0; i < 3; ++i) reqs.push_back({.id = i, .input = 20, .output = 2});
  const ServeResult r = run(reqs, {}, {.kind = ArrivalKind::Closed, .concurrency = 1});
  const double one = prefill(20) + decode(1, 21);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_NEAR(r.requests[i].request.arrival, static_cast<double>(i) * one, 1e-9);
    EXPECT_NEAR(r.requests[i].ttft(), prefill(20), 1e-12);
  }
}

// A warm-up of one request in that loop: requests 1 and 2 are measured, from request 1's arrival
// (one request's time) to request 2's finish (three): 2 requests in 2 x one, one gap each.
TEST_F(Serving, AWarmUpIsLeftOutOfTheStatistics) {
  std::vector<Request> reqs;
  for (std::uint64_t i = 0; i < 3; ++i) reqs.push_back({.id = i, .input = 20, .output = 2});
  const ServeResult r = run(reqs, {}, {.kind = ArrivalKind::Closed, .concurrency = 1, .warmup = 1});
  const double one = prefill(20) + decode(1, 21);
  EXPECT_EQ(r.summary.requests, 2u);
  EXPECT_NEAR(r.summary.duration, 2 * one, 1e-9);
  EXPECT_NEAR(r.summary.requests_per_s, 1 / one, 1e-6);
  EXPECT_EQ(r.iterations.size(), 6u);  // the warm-up ran
  ASSERT_EQ(r.itl.size(), 3u);
  EXPECT_NEAR(r.summary.itl.mean, decode(1, 21), 1e-12);
  Diagnostics diags;
  EXPECT_FALSE(
      simulate(*pricer_, {}, reqs, {.kind = ArrivalKind::Offline, .warmup = 3}, {}, diags));
  EXPECT_EQ(diags.all().at(0).path, "warmup");
}

TEST_F(Serving, ReplicasShareTheStreamRoundRobin) {
  std::vector<Request> reqs;
  for (std::uint64_t i = 0; i < 4; ++i) reqs.push_back({.id = i, .input = 32, .output = 4});
  Deployment d;
  d.replicas = 2;
  const ServeResult r = run(reqs, d);
  EXPECT_EQ(r.requests[2].replica, 0u);
  EXPECT_EQ(r.requests[3].replica, 1u);
  IterationBatch two;
  two.prefill = {{32, 0, true}, {32, 0, true}};
  EXPECT_NEAR(r.requests[3].ttft(), pricer_->price(two).total() + host_, 1e-12);
}

TEST_F(Serving, SloAttainmentAndGoodput) {
  std::vector<Request> reqs;
  for (std::uint64_t i = 0; i < 2; ++i) reqs.push_back({.id = i, .input = 32, .output = 2});
  Deployment d;
  d.scheduler.max_batch = 1;
  const double first_ttft = prefill(32);
  // A TTFT limit between the first request's and the second's: one of two meets it.
  Slo slo{.ttft = first_ttft * 1.5};
  const ServeResult r = run(reqs, d, {}, slo);
  EXPECT_DOUBLE_EQ(r.summary.slo_attainment, 0.5);
  EXPECT_NEAR(r.summary.goodput_rps, 1 / r.summary.duration, 1e-9);
  EXPECT_FALSE(r.summary.meets_slo);  // its 99th percentile is the second request's
}

TEST_F(Serving, RequestsThatCanNeverRunAreErrors) {
  Diagnostics diags;
  Deployment d;
  d.scheduler.max_batched_tokens = 100;
  EXPECT_FALSE(simulate(*pricer_, d, {{.id = 0, .input = 90, .output = 20}}, {}, {}, diags));
  ASSERT_EQ(diags.error_count(), 1u);
  EXPECT_EQ(diags.all()[0].path, "max_batched_tokens");
  EXPECT_NE(diags.all()[0].hint.find("109"), std::string::npos);  // 90 + 20 - 1

  Diagnostics kv;
  Deployment small;
  small.scheduler.kv_blocks = 2;
  EXPECT_FALSE(simulate(*pricer_, small, {{.id = 0, .input = 40, .output = 1}}, {}, {}, kv));
  ASSERT_EQ(kv.error_count(), 1u);
  EXPECT_NE(kv.all()[0].message.find("needs 3 KV blocks"), std::string::npos);
}

TEST_F(Serving, DeterministicAndTheKvCacheFillsTheFreeMemory) {
  RequestSpec spec;
  spec.arrivals = {.kind = ArrivalKind::Poisson, .rate = 20};
  spec.count = 200;
  spec.input = {.kind = LengthKind::Uniform, .min = 64, .max = 512};
  spec.output = {.kind = LengthKind::Uniform, .min = 16, .max = 128};
  const ServeResult a = run(make_requests(spec), {}, spec.arrivals);
  const ServeResult b = run(make_requests(spec), {}, spec.arrivals);
  ASSERT_EQ(a.requests.size(), 200u);
  for (std::size_t i = 0; i < a.requests.size(); ++i) {
    EXPECT_EQ(a.requests[i].first_token, b.requests[i].first_token);
    EXPECT_EQ(a.requests[i].finish, b.requests[i].finish);
  }
  // H100 SXM 80 GB x 0.9 less the weights and activations, in blocks of 16 x 512 KiB.
  const KvBudget& kv = a.kv;
  EXPECT_EQ(kv.blocks, (kv.usable.value - kv.weights.value - kv.activations.value) /
                           (16 * kv.kv_bytes_per_token.value));
  EXPECT_GT(kv.blocks, 3000u);  // about 60 GiB of 8 MiB blocks: 7,500
  EXPECT_LT(kv.blocks, 8000u);
  for (const RequestRecord& q : a.requests) {
    EXPECT_GE(q.first_token, q.request.arrival);
    EXPECT_GE(q.finish, q.first_token);
  }
}

// Disaggregated, one prefill and one decode replica: TTFT is the prefill pool's prefill; the
// cache (100 tokens x 512 KiB a token, LLaMA-2-7B at TP 1) crosses the link at the arch's
// achievable bandwidth; the decode pool then makes tokens 2..5 attending to 101..104 keys.
TEST_F(Serving, DisaggregatedPrefillThenTheCachesTransferThenDecode) {
  Deployment d;
  d.disaggregated = Disaggregation{.prefill = 1, .decode = 1};
  const ServeResult r = run({{.id = 0, .arrival = 1.0, .input = 100, .output = 5}}, d);
  const RequestRecord& q = r.requests.at(0);
  const double transfer = prefill_then_transfer(q);
  double decodes = 0;
  for (std::uint64_t i = 1; i <= 4; ++i) decodes += decode(1, 100 + i);
  EXPECT_NEAR(q.finish, 1.0 + prefill(100) + transfer + decodes, 1e-9);
  EXPECT_EQ(q.replica, 1u);  // the decode pool's first replica
  ASSERT_EQ(r.itl.size(), 4u);
  EXPECT_NEAR(r.itl[0], transfer + decode(1, 101), 1e-12);  // the first gap waits for the cache
  ASSERT_EQ(r.iterations.size(), 5u);
  EXPECT_EQ(r.iterations[0].replica, 0u);
  EXPECT_EQ(r.iterations[0].prefill_tokens, 100u);
  EXPECT_EQ(r.iterations[1].replica, 1u);
  EXPECT_EQ(r.iterations[1].prefill_tokens, 0u);  // the cache arrived: no prefill again
  EXPECT_EQ(r.iterations[1].decode_sequences, 1u);

  Diagnostics diags;
  EXPECT_FALSE(simulate(*pricer_, d, {{.id = 0, .input = 10, .output = 2}},
                        {.kind = ArrivalKind::Closed, .concurrency = 1}, {}, diags));
  EXPECT_EQ(diags.all().at(0).path, "disaggregation");
}

// Two 100-token prompts at once on one prefill replica: one iteration prefills both, so both
// caches are ready together; the replica's link sends them one after the other, so the second
// waits for the first: its cache arrives after two transfers.
TEST_F(Serving, APrefillReplicasLinkSendsOneCacheAtATime) {
  Deployment d;
  d.disaggregated = Disaggregation{.prefill = 1, .decode = 1};
  const ServeResult r =
      run({{.id = 0, .input = 100, .output = 3}, {.id = 1, .input = 100, .output = 3}}, d);
  const double transfer = 100.0 * 512 * 1024 / hw_.achievable_link_bytes_per_second();
  ASSERT_EQ(r.requests.size(), 2u);
  EXPECT_EQ(r.requests[0].first_token, r.requests[1].first_token);
  EXPECT_NEAR(r.requests[0].kv_transfer, transfer, 1e-15);
  EXPECT_NEAR(r.requests[1].kv_transfer, 2 * transfer, 1e-15);
  // With two prefill replicas each sends its own: no wait.
  d.disaggregated->prefill = 2;
  const ServeResult apart =
      run({{.id = 0, .input = 100, .output = 3}, {.id = 1, .input = 100, .output = 3}}, d);
  EXPECT_NEAR(apart.requests[1].kv_transfer, transfer, 1e-15);
}

// The decode pool at TP 2 while the prefill pool runs at TP 1 (DistServe's different
// parallelism per pool): the prefill as above; the cache, 100 tokens x 512 KiB (all 32 heads),
// leaves the one prefill rank over one link (min(1, 2)) in the same time as before, and the decode
// iterations are the TP-2 pricer's. The decode pool's KV cache is its own: TP 2 halves a token's
// bytes per chip (256 KiB) and the weights per chip, so it holds more than twice the tokens.
TEST_F(Serving, ADecodePoolAtItsOwnTp) {
  Diagnostics diags;
  auto model = workload::llm::load_llm_config("configs/workloads/llm/llama2_7b.yaml", diags);
  ASSERT_TRUE(model) << diags.format_all();
  auto tp2 = IterationPricer::make(*model, hw_, {.tp = 2}, diags);
  ASSERT_TRUE(tp2) << diags.format_all();
  Deployment d;
  d.disaggregated = Disaggregation{.prefill = 1, .decode = 1, .decode_pricer = &*tp2};
  const ServeResult r = run({{.id = 0, .arrival = 1.0, .input = 100, .output = 5}}, d);
  const RequestRecord& q = r.requests.at(0);
  const double transfer = prefill_then_transfer(q);
  double decodes = 0;
  for (std::uint64_t i = 1; i <= 4; ++i) {
    IterationBatch b;
    b.decode_sequences = 1;
    b.decode_context_sum = 100 + i;
    decodes += tp2->price(b).total() + host_;
  }
  EXPECT_NEAR(q.finish, 1.0 + prefill(100) + transfer + decodes, 1e-9);
  EXPECT_LT(decodes, 4 * decode(1, 102));  // TP 2 decodes faster
  ASSERT_TRUE(r.decode_kv.has_value());
  EXPECT_EQ(r.decode_kv->kv_bytes_per_token.value, 256u * 1024);
  EXPECT_GT(r.decode_kv->blocks, 2 * r.kv.blocks);
  ASSERT_EQ(r.iterations.size(), 5u);
  EXPECT_EQ(r.iterations[0].kv_blocks, r.kv.blocks);
  EXPECT_EQ(r.iterations[1].kv_blocks, r.decode_kv->blocks);
}

// Prefix caching: two requests of 600 tokens sharing a 520-token system prompt, one at a time
// (max_batch 1). The first prefills all 600 and leaves the prefix's 32 whole blocks of 16 (512
// tokens) in the cache; the second prefills only its last 88 tokens, attending to the 512 cached
// ones. During its decode the cache holds the 32 shared blocks and its own ceil(601 / 16) - 32 = 6.
TEST_F(Serving, PrefixCachingPrefillsOnlyWhatIsNotCached) {
  Deployment d;
  d.scheduler.max_batch = 1;
  d.scheduler.prefix_caching = true;
  const std::vector<Request> reqs{{.id = 0, .input = 600, .output = 2, .shared_prefix = 520},
                                  {.id = 1, .input = 600, .output = 2, .shared_prefix = 520}};
  const ServeResult r = run(reqs, d);
  const double first = prefill(600) + decode(1, 601);
  EXPECT_NEAR(r.requests[0].e2e(), first, 1e-12);
  EXPECT_NEAR(r.requests[1].ttft(), first + prefill(88, 512), 1e-12);
  ASSERT_EQ(r.iterations.size(), 4u);
  EXPECT_EQ(r.iterations[2].prefill_tokens, 88u);
  EXPECT_EQ(r.iterations[3].kv_blocks_used, 32u + 6u);
  // Without it, the second prefills all 600 again.
  d.scheduler.prefix_caching = false;
  EXPECT_NEAR(run(reqs, d).requests[1].ttft(), first + prefill(600), 1e-12);

  Diagnostics diags;
  EXPECT_FALSE(simulate(*pricer_, d, {{.id = 0, .input = 10, .output = 2, .shared_prefix = 10}}, {},
                        {}, diags));
  EXPECT_EQ(diags.all().at(0).path, "shared_prefix");
}

// Two pipeline stages (LLaMA-2-7B, TP 1 x PP 2): two virtual engines, each with half the blocks.
class PipelinedServing : public Serving {
 protected:
  PipelinedServing() {
    Diagnostics diags;
    auto model = workload::llm::load_llm_config("configs/workloads/llm/llama2_7b.yaml", diags);
    auto pricer = IterationPricer::make(*model, hw_, {.pp = 2}, diags);
    EXPECT_TRUE(pricer) << diags.format_all();
    piped_.emplace(std::move(*pricer));
  }
  // A prefill of `tokens` on each stage, and the hop between them.
  std::vector<double> stages(std::uint64_t tokens) {
    IterationBatch b;
    b.prefill.push_back({tokens, 0, true});
    return piped_->stage_seconds(b, piped_->price(b));
  }
  std::optional<IterationPricer> piped_;
};

// One request: its prefill crosses stage 0, the hop and stage 1, then the host's time; with one
// engine busy the stages take turns and the iteration is as long as without the pipeline but
// for the hop.
TEST_F(PipelinedServing, OneRequestCrossesTheStagesInTurn) {
  Diagnostics diags;
  const auto r = simulate(*piped_, {}, {{.id = 0, .input = 100, .output = 1}}, {}, {}, diags);
  ASSERT_TRUE(r) << diags.format_all();
  const std::vector<double> s = stages(100);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_NEAR(r->requests[0].ttft(), s[0] + piped_->stage_transfer(100) + s[1] + host_, 1e-12);
  EXPECT_NEAR(s[0] + s[1] + host_, prefill(100), 1e-9 * prefill(100));
  // The replica's cache: half a token's bytes a chip, so about twice the blocks of one chip
  // holding every layer (less what the stage's weights leave), split over the two engines.
  EXPECT_EQ(r->kv.kv_bytes_per_token.value, 256u * 1024);
}

// Two requests at 0 go to the two virtual engines (the first to engine 0, the second to the one
// with fewer unfinished requests: engine 1). Engine 0's prefill takes stage 0 over [0, a0] and
// stage 1 from a0 + hop; engine 1's enters stage 0 when it frees, at a0, leaves it at 2 a0, and
// enters stage 1 at max(2 a0 + hop, a0 + hop + a1), when engine 0's has left it. Without the
// pipeline both prompts would prefill together in one iteration.
// Disaggregated pools of two-stage replicas: the prompt's prefill crosses the prefill replica's
// stages (TTFT as above); each stage's chip then sends its layers' half of the cache, 100 tokens x
// 256 KiB, to the decode replica's same stage, the two stages at once over one link each; the two
// decode iterations (101 and 102 keys) cross the decode replica's stages in turn.
TEST_F(PipelinedServing, DisaggregatedPoolsOfPipelinedReplicas) {
  Deployment d;
  d.disaggregated = Disaggregation{.prefill = 1, .decode = 1};
  Diagnostics diags;
  const auto r = simulate(*piped_, d, {{.id = 0, .input = 100, .output = 3}}, {}, {}, diags);
  ASSERT_TRUE(r) << diags.format_all();
  const RequestRecord& q = r->requests[0];
  const std::vector<double> s = stages(100);
  EXPECT_NEAR(q.ttft(), s[0] + piped_->stage_transfer(100) + s[1] + host_, 1e-12);
  const double transfer = 100.0 * 256 * 1024 / hw_.achievable_link_bytes_per_second();
  EXPECT_NEAR(q.kv_transfer, transfer, 1e-15);
  double decodes = 0;
  for (std::uint64_t keys = 101; keys <= 102; ++keys) {
    IterationBatch b;
    b.decode_sequences = 1;
    b.decode_context_sum = keys;
    const std::vector<double> ds = piped_->stage_seconds(b, piped_->price(b));
    decodes += ds[0] + piped_->stage_transfer(1) + ds[1] + host_;
  }
  EXPECT_NEAR(q.finish, q.first_token + transfer + decodes, 1e-12);
  EXPECT_EQ(q.replica, 1u);  // the decode replica
  // A decode pool of another PP: its stages would not match the prefill pool's, an error.
  Diagnostics made;
  auto model = workload::llm::load_llm_config("configs/workloads/llm/llama2_7b.yaml", made);
  ASSERT_TRUE(model);
  auto flat = IterationPricer::make(*model, hw_, {}, made);
  ASSERT_TRUE(flat) << made.format_all();
  d.disaggregated->decode_pricer = &*flat;
  Diagnostics refused;
  EXPECT_FALSE(simulate(*piped_, d, {{.id = 0, .input = 100, .output = 3}}, {}, {}, refused));
  ASSERT_EQ(refused.error_count(), 1u);
  EXPECT_EQ(refused.all()[0].path, "pp");
}

TEST_F(PipelinedServing, TwoVirtualEnginesOverlapInTheStages) {
  Diagnostics diags;
  const auto r = simulate(
      *piped_, {}, {{.id = 0, .input = 64, .output = 1}, {.id = 1, .input = 64, .output = 1}}, {},
      {}, diags);
  ASSERT_TRUE(r) << diags.format_all();
  const std::vector<double> s = stages(64);
  const double hop = piped_->stage_transfer(64);
  EXPECT_NEAR(r->requests[0].ttft(), s[0] + hop + s[1] + host_, 1e-12);
  const double second = std::max(2 * s[0] + hop, s[0] + hop + s[1]) + s[1] + host_;
  EXPECT_NEAR(r->requests[1].ttft(), second, 1e-12);
  ASSERT_EQ(r->iterations.size(), 2u);
  EXPECT_EQ(r->iterations[0].prefill_sequences, 1u);
  EXPECT_EQ(r->iterations[1].prefill_sequences, 1u);
  // Each engine has half the replica's blocks.
  EXPECT_EQ(r->iterations[0].kv_blocks, r->kv.blocks / 2);
}

// A request that fits the replica's cache but not one engine's half is an error naming both.
TEST_F(PipelinedServing, ARequestMustFitOneVirtualEnginesBlocks) {
  Deployment d;
  d.scheduler.kv_blocks = 10;  // 5 blocks of 16 tokens an engine
  Diagnostics diags;
  EXPECT_FALSE(simulate(*piped_, d, {{.id = 0, .input = 100, .output = 1}}, {}, {}, diags));
  ASSERT_TRUE(diags.has_errors());
  EXPECT_NE(diags.all()[0].message.find("more than the 5 the cache has for each of the 2 virtual "
                                        "engines of 2 pipeline stages"),
            std::string::npos)
      << diags.all()[0].message;
}

TEST(Stats, PercentilesAsNumpy) {
  // numpy.percentile([1, 2, 3, 4], [50, 90, 99]) = 2.5, 3.7, 3.97 (linear interpolation).
  const Stats s = stats_of({4, 1, 3, 2});
  EXPECT_DOUBLE_EQ(s.mean, 2.5);
  EXPECT_DOUBLE_EQ(s.p50, 2.5);
  EXPECT_NEAR(s.p90, 3.7, 1e-12);
  EXPECT_NEAR(s.p99, 3.97, 1e-12);
  EXPECT_DOUBLE_EQ(s.max, 4);
  EXPECT_DOUBLE_EQ(stats_of({}).p99, 0);
}

}  // namespace
}  // namespace coda::sim::serving
