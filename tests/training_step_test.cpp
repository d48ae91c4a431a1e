// The training step model (sim/training_step.h; issue 18, items 4, 5 and 7): the 1F1B schedule,
// the bucketed overlap of the gradients' reduction, memory per chip under each ZeRO stage, the
// FLOPs of recomputation, the bytes of a TP=8 layer's collectives, and the layout search, each
// against values derived by hand in the comments.

#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "arch/arch_spec.h"
#include "arch/cluster_spec.h"
#include "arch/hardware_model.h"
#include "cli/commands.h"
#include "core/diagnostics.h"
#include "sim/analytical/cluster_collective.h"
#include "sim/driver.h"
#include "sim/training_step.h"
#include "testing/temp_dir.h"
#include "workloads/llm/llm_builder.h"
#include "workloads/llm/llm_config.h"
#include "workloads/op.h"
#include "workloads/source.h"
#include "workloads/tensor.h"

namespace coda::sim::training {
namespace {

namespace llm = workload::llm;

llm::LlmConfig model(const std::string& name) {
  Diagnostics diags;
  auto config = llm::load_llm_config("configs/workloads/llm/" + name + ".yaml", diags);
  EXPECT_TRUE(config.has_value()) << diags.format_all();
  return config.value_or(llm::LlmConfig{});
}

arch::HardwareModel h100() {
  Diagnostics diags;
  auto loaded = arch::load_arch("configs/arch/nvidia_h100_sxm.yaml", diags);
  EXPECT_TRUE(loaded.has_value()) << diags.format_all();
  return arch::HardwareModel(loaded.value().spec);
}

// ---- 1F1B -------------------------------------------------------------------------------------

// Uniform stages, free transfers: 1F1B takes (m + p - 1)(F + B) (Narayanan et al. 2021, Sec.
// 2.2: the bubble is (p - 1)(F + B) of every stage's time). p = 4, m = 8, F = 1, B = 2: 33; the
// first stage computes m (F + B) = 24 of it and waits 9.
TEST(TrainingStep, OneFOneBTakesMPlusPMinusOneSlots) {
  const std::vector<PipelineStageTimes> stages(4, {.forward = 1, .backward = 2, .send = 0});
  const PipelineTimeline t = simulate_1f1b(stages, 8);
  EXPECT_DOUBLE_EQ(t.makespan, 33.0);
  EXPECT_DOUBLE_EQ(t.end[0], 33.0);
  EXPECT_DOUBLE_EQ(t.busy[0], 24.0);
  // The last stage runs F B F B ... from its first forward at 3 (after three forwards upstream),
  // with no gap: it ends at 3 + 24 = 27.
  EXPECT_DOUBLE_EQ(t.end[3], 27.0);
}

// Two stages, one micro-batch, a transfer of 0.5 each way: stage 0's forward 0-1; stage 1's
// forward 1.5-2.5 and backward 2.5-4.5; stage 0's backward from 4.5 + 0.5 = 5 to 7.
TEST(TrainingStep, OneFOneBWaitsForTheTransfers) {
  const std::vector<PipelineStageTimes> stages(2, {.forward = 1, .backward = 2, .send = 0.5});
  const PipelineTimeline t = simulate_1f1b(stages, 1);
  EXPECT_DOUBLE_EQ(t.makespan, 7.0);
  EXPECT_DOUBLE_EQ(t.end[1], 4.5);
}

// One stage: no bubble, m (F + B).
TEST(TrainingStep, OneStageHasNoBubble) {
  const std::vector<PipelineStageTimes> stages(1, {.forward = 1.5, .backward = 3, .send = 9});
  EXPECT_DOUBLE_EQ(simulate_1f1b(stages, 5).makespan, 22.5);
}

// Interleaved 1F1B (Narayanan et al. 2021, Sec. 2.2.2): v model chunks per device shrink the
// bubble to (p - 1)(F + B) / v. p = 4, m = 8, v = 2, a device's F = 1 and B = 2 split into two
// chunks of 0.5 and 1: m (F + B) + (p - 1)(F + B) / v = 24 + 4.5 = 28.5.
TEST(TrainingStep, InterleavingShrinksTheBubbleByTheChunks) {
  const std::vector<PipelineStageTimes> chunks(8, {.forward = 0.5, .backward = 1, .send = 0});
  const PipelineTimeline t = simulate_pipeline(chunks, 4, 8);
  EXPECT_DOUBLE_EQ(t.makespan, 28.5);
  EXPECT_DOUBLE_EQ(t.busy[0], 24.0);
  // v = 1 is 1F1B.
  const std::vector<PipelineStageTimes> stages(4, {.forward = 1, .backward = 2, .send = 0});
  EXPECT_DOUBLE_EQ(simulate_pipeline(stages, 4, 8).makespan, 33.0);
}

// ---- bucketed overlap ---------------------------------------------------------------------------

// A window of 10 s, four buckets ready at 2.5, 5, 7.5 and 10:
//   buckets of 1 s end at 3.5, 6, 8.5, 11: 1 s exposed (the last bucket's);
//   buckets of 4 s end at 6.5, 10.5, 14.5, 18.5: 8.5 s exposed.
TEST(TrainingStep, BucketsOverlapTheBackward) {
  EXPECT_DOUBLE_EQ(exposed_bucketed(10.0, std::vector<double>(4, 1.0)), 1.0);
  EXPECT_DOUBLE_EQ(exposed_bucketed(10.0, std::vector<double>(4, 4.0)), 8.5);
  EXPECT_DOUBLE_EQ(exposed_bucketed(10.0, {}), 0.0);
}

// ---- memory per chip by ZeRO stage ----------------------------------------------------------

// GPT-2 small on 8 H100s, data parallel: P = the preset's parameters (llm_headline; tied
// embeddings counted once, the learned position table's 1024 rows), bf16 (2 bytes), fp32 AdamW
// moments (8 bytes) and fp32 master weights (4 bytes) a parameter:
//   ZeRO 0  weights 2P, gradients 2P, optimizer 12P
//   ZeRO 1  optimizer 12 ceil(P/8)
//   ZeRO 2  and gradients 2 ceil(P/8)
//   ZeRO 3  and weights 2 ceil(P/8)
TEST(TrainingStep, ZeroShardsWhatItsStageSays) {
  const llm::LlmConfig c = model("gpt2_small");
  const std::uint64_t p = llm::llm_headline(c, 0).parameters;
  const std::uint64_t shard = (p + 7) / 8;
  const arch::HardwareModel hw = h100();
  for (std::uint32_t zero = 0; zero <= 3; ++zero) {
    SCOPED_TRACE(zero);
    Diagnostics diags;
    const Layout layout{.dp = 8, .micro_batch_size = 2, .micro_batches = 2, .zero = zero};
    const auto r = price_training_step(c, 512, layout, {}, hw, {}, diags);
    ASSERT_TRUE(r.has_value()) << diags.format_all();
    const StageMemory& m = r->stages.at(0).memory;
    EXPECT_EQ(m.weights.value, 2 * (zero >= 3 ? shard : p));
    EXPECT_EQ(m.gradients.value, 2 * (zero >= 2 ? shard : p));
    EXPECT_EQ(m.optimizer_state.value, 12 * (zero >= 1 ? shard : p));
    EXPECT_EQ(m.total, m.weights + m.gradients + m.optimizer_state + m.activations);
    EXPECT_TRUE(r->fits);
    EXPECT_GT(r->stages[0].dp_comm_s, 0.0);
  }
}

// Bytes a parameter takes by precision (workload/llm/llm_builder.h, parameter_bytes): pure bf16
// 2 + 2 + 8, autocast's fp32 parameters 4 + 4 + 8; ZeRO 0 keeps them whole. Autocast's
// gradients are fp32, so DDP's all-reduce moves twice mixed precision's bf16 bytes: more time.
TEST(TrainingStep, PrecisionSetsTheBytesOfAParameter) {
  const llm::LlmConfig c = model("gpt2_small");
  const std::uint64_t p = llm::llm_headline(c, 0).parameters;
  const arch::HardwareModel hw = h100();
  const Layout layout{.dp = 8, .micro_batch_size = 2, .micro_batches = 1};
  const auto price = [&](llm::Precision precision) {
    Diagnostics diags;
    Framework framework;
    framework.precision = precision;
    auto r = price_training_step(c, 512, layout, framework, hw, {}, diags);
    EXPECT_TRUE(r.has_value()) << diags.format_all();
    return r;
  };
  const auto pure = price(llm::Precision::Pure);
  const auto mixed = price(llm::Precision::Mixed);
  const auto autocast = price(llm::Precision::Autocast);
  ASSERT_TRUE(pure && mixed && autocast);
  const StageMemory& pm = pure->stages.at(0).memory;
  EXPECT_EQ(pm.weights.value, 2 * p);
  EXPECT_EQ(pm.gradients.value, 2 * p);
  EXPECT_EQ(pm.optimizer_state.value, 8 * p);
  const StageMemory& am = autocast->stages.at(0).memory;
  EXPECT_EQ(am.weights.value, 4 * p);
  EXPECT_EQ(am.gradients.value, 4 * p);
  EXPECT_EQ(am.optimizer_state.value, 8 * p);
  EXPECT_GT(autocast->stages[0].dp_comm_s, mixed->stages[0].dp_comm_s);
  EXPECT_EQ(pure->stages[0].dp_comm_s, mixed->stages[0].dp_comm_s);
  // Mixed precision's AdamW also reads and writes the master weights: a longer optimizer.
  EXPECT_GT(mixed->stages[0].optimizer_s, pure->stages[0].optimizer_s);
  EXPECT_GT(autocast->step_s, mixed->step_s);
}

// FP8 (Transformer Engine's recipe): the linear layers' GEMMs at H100's E4M3/E5M2 rate, twice
// the bf16 one, so a step of LLaMA-2-7B is faster than under mixed precision and slower than
// half of it (attention, norms and the casts stay). The weights' casts run once a step, however
// many micro-batches: the optimizer part's excess over mixed precision's is the same at 1 and at
// 4 micro-batches, and positive; ZeRO 1 shards AdamW, not them. An arch without FP8 tensor
// cores (A100) is an error naming framework.precision.
TEST(TrainingStep, Fp8CastsTheWeightsOnceAStep) {
  const llm::LlmConfig c = model("llama2_7b");
  const arch::HardwareModel hw = h100();
  const auto price = [&](llm::Precision precision, std::uint64_t m, const arch::HardwareModel& on) {
    Diagnostics diags;
    Framework framework;
    framework.precision = precision;
    auto r = price_training_step(c, 1024, {.dp = 8, .micro_batches = m, .zero = 1}, framework, on,
                                 {}, diags);
    return std::pair{r, diags.all().empty() ? std::string() : diags.all().front().path};
  };
  const auto mixed1 = price(llm::Precision::Mixed, 1, hw).first;
  const auto fp81 = price(llm::Precision::Fp8, 1, hw).first;
  const auto mixed4 = price(llm::Precision::Mixed, 4, hw).first;
  const auto fp84 = price(llm::Precision::Fp8, 4, hw).first;
  ASSERT_TRUE(mixed1 && fp81 && mixed4 && fp84);
  const double cast1 = fp81->stages[0].optimizer_s - mixed1->stages[0].optimizer_s;
  const double cast4 = fp84->stages[0].optimizer_s - mixed4->stages[0].optimizer_s;
  EXPECT_GT(cast1, 0.0);
  EXPECT_NEAR(cast4, cast1, 1e-12);
  EXPECT_LT(fp84->stages[0].compute_s, mixed4->stages[0].compute_s);
  EXPECT_GT(fp84->stages[0].compute_s, 0.5 * mixed4->stages[0].compute_s);
  Diagnostics diags;
  auto a100 = arch::load_arch("configs/arch/nvidia_a100_sxm_80gb.yaml", diags);
  ASSERT_TRUE(a100.has_value()) << diags.format_all();
  const auto refused = price(llm::Precision::Fp8, 1, arch::HardwareModel(a100->spec));
  EXPECT_FALSE(refused.first.has_value());
  EXPECT_EQ(refused.second, "framework.precision");
}

// Context parallelism: LLaMA-2-7B, 8 sequences of 4096 tokens a step on 8 H100s, as dp 8 (one
// micro-batch each) or as cp 2 x dp 4 (two micro-batches of half-sequences each). The same work:
// each cp rank runs half of every GEMM's rows and half of the attention's causal pairs twice as
// often, so the model FLOPs are equal; the weights' gradients are reduced and ZeRO 1 shards over
// dp x cp = 8 ranks either way, so the data-parallel communication and AdamW are equal too; a
// rank holds half a sequence's activations. tp 2 x cp 3 does not divide a node of 8 (an error).
TEST(TrainingStep, ContextParallelismSharesTheSequenceAndTheGradients) {
  const llm::LlmConfig c = model("llama2_7b");
  const arch::HardwareModel hw = h100();
  const auto price = [&](const Layout& layout) {
    Diagnostics diags;
    auto r = price_training_step(c, 4096, layout, {}, hw, {}, diags);
    EXPECT_TRUE(r.has_value()) << diags.format_all();
    return r;
  };
  const auto dp8 = price({.dp = 8, .micro_batches = 1, .zero = 1});
  const auto cp2 = price({.dp = 4, .micro_batches = 2, .zero = 1, .cp = 2});
  ASSERT_TRUE(dp8 && cp2);
  EXPECT_EQ(cp2->layout.chips(), 8u);
  EXPECT_EQ(cp2->tokens, dp8->tokens);
  EXPECT_NEAR(cp2->model_flops, dp8->model_flops, 1e-9 * dp8->model_flops);
  EXPECT_NEAR(cp2->stages[0].dp_comm_s, dp8->stages[0].dp_comm_s, 1e-15);
  EXPECT_NEAR(cp2->stages[0].optimizer_s, dp8->stages[0].optimizer_s, 1e-15);
  EXPECT_LT(cp2->stages[0].memory.activations, dp8->stages[0].memory.activations);
  EXPECT_GT(cp2->stages[0].tp_comm_s, 0.0);  // the K and V all-gathers
  Diagnostics diags;
  EXPECT_FALSE(price_training_step(c, 4096, {.tp = 2, .cp = 3}, {}, hw, {}, diags).has_value());
  ASSERT_FALSE(diags.all().empty());
  EXPECT_EQ(diags.all().front().path, "layout.cp");
}

// ---- FLOPs ------------------------------------------------------------------------------------

// GPT-2 small, one sequence of s = 256 tokens (T = 256), h = 768, 12 layers, 12 heads of 64,
// FFN 4h, vocabulary 50257. A layer's forward matrix FLOPs: QKV 2 T h 3h + output 2 T h h + FFN
// 2 x 2 T h 4h = 24 T h^2, plus causal attention 2 x 2 heads d pairs with pairs = s (s + 1) / 2
// (Q K^T and P V over the kept pairs). The LM head: 2 T h V.
//   model FLOPs = 3 x (12 layers + LM head)
//   full recomputation executes each layer's forward once more (not the LM head's):
//   hardware FLOPs = model FLOPs + 12 layers' forward.
TEST(TrainingStep, FlopsCountTheModelAndTheRecomputation) {
  const llm::LlmConfig c = model("gpt2_small");
  const double t = 256, h = 768, v = 50257, pairs = 256.0 * 257.0 / 2.0;
  const double layer = 24 * t * h * h + 4 * 12 * 64 * pairs;
  const double forward = 12 * layer + 2 * t * h * v;
  const arch::HardwareModel hw = h100();
  for (const bool recompute : {false, true}) {
    SCOPED_TRACE(recompute);
    Diagnostics diags;
    const auto r = price_training_step(c, 256, {.recompute = recompute}, {}, hw, {}, diags);
    ASSERT_TRUE(r.has_value()) << diags.format_all();
    EXPECT_DOUBLE_EQ(r->model_flops, 3 * forward);
    EXPECT_DOUBLE_EQ(r->hardware_flops, 3 * forward + (recompute ? 12 * layer : 0.0));
    // MFU: the model FLOPs over the step at H100's dense bf16 peak (989.4 TFLOP/s in the preset).
    EXPECT_DOUBLE_EQ(r->mfu, r->model_flops / (r->step_s * hw.peak_ops_per_second(c.dtype)));
    EXPECT_GT(r->mfu, 0.0);
    EXPECT_LT(r->mfu, 1.0);
  }
  // Recomputing only the first 5 of the 12 layers (Megatron-LM's block method) executes those
  // 5 layers' forward once more; the model FLOPs do not change.
  Diagnostics diags;
  const auto partial =
      price_training_step(c, 256, {.recompute = true, .recompute_layers = 5}, {}, hw, {}, diags);
  ASSERT_TRUE(partial.has_value()) << diags.format_all();
  EXPECT_DOUBLE_EQ(partial->model_flops, 3 * forward);
  EXPECT_DOUBLE_EQ(partial->hardware_flops, 3 * forward + 5 * layer);
}

// ---- a TP=8 layer's collectives ------------------------------------------------------------

// LLaMA-2-7B at TP 8, one sequence of 2048 tokens: Megatron's g after the attention's output
// GEMM and after the FFN's down GEMM all-reduce [T x h] = 2048 x 4096 bf16 = 16 MiB each in the
// forward; the backward all-reduces the gradient of each column-parallel GEMM's input (f's
// backward: QKV's and the FFN's up/gate input), two more of 16 MiB. Per layer: 4 x 16 MiB.
TEST(TrainingStep, ATpEightLayerAllReducesFourTimesSixteenMiB) {
  const llm::LlmConfig c = model("llama2_7b");
  Diagnostics diags;
  const auto built = llm::try_build_llm_parts(
      c, {.kind = llm::PhaseKind::Training, .batch = 1, .seq_len = 2048},
      {.tp = 8, .pp = 1, .dp = 1, .stage = 0, .micro_batches = 1}, diags);
  ASSERT_TRUE(built.has_value()) << diags.format_all();
  std::uint64_t in_layers = 0, bytes = 0;
  for (const workload::Op& op : built->graph.ops) {
    if (op.function != workload::Function::AllReduce || !op.name.starts_with("L")) continue;
    ++in_layers;
    bytes = workload::tensor_bytes(op).value;
  }
  EXPECT_EQ(in_layers, 4u * 32u);
  // tensor_bytes counts the input and the output once each: 2 x 16 MiB.
  EXPECT_EQ(bytes, 2u * 2048u * 4096u * 2u);
  // The spans cover every op once, forward before backward before the optimizer.
  ASSERT_EQ(built->spans.size(), 3u);
  EXPECT_EQ(built->spans[0].part, llm::StepPart::Forward);
  EXPECT_EQ(built->spans[1].part, llm::StepPart::Backward);
  EXPECT_EQ(built->spans[2].part, llm::StepPart::Optimizer);
  EXPECT_EQ(built->spans[0].first, 0u);
  EXPECT_EQ(built->spans[0].end, built->spans[1].first);
  EXPECT_EQ(built->spans[1].end, built->spans[2].first);
  EXPECT_EQ(built->spans[2].end, built->graph.ops.size());
}

// Sequence parallelism (Korthikanti et al. 2022) at TP 8 on the same step: each layer's two
// all-reduces become an all-gather before the column-parallel GEMM (QKV, FFN up/gate: [2048/8 x
// 4096] -> [2048 x 4096]) and a reduce-scatter after the row-parallel one (out, FFN down), and the
// backward runs the conjugates (reduce-scatter, all-gather): per layer 4 all-gathers and 4
// reduce-scatters, each touching 2 MiB + 16 MiB (tensor_bytes: input and output), no all-reduce.
// Splitting the norms' and residuals' activations 8 ways can only shrink the step's activations.
TEST(TrainingStep, SequenceParallelismGathersAndScattersInsteadOfAllReducing) {
  const llm::LlmConfig c = model("llama2_7b");
  Diagnostics diags;
  const auto built = llm::try_build_llm_parts(
      c, {.kind = llm::PhaseKind::Training, .batch = 1, .seq_len = 2048},
      {.tp = 8, .pp = 1, .dp = 1, .stage = 0, .micro_batches = 1, .sequence_parallel = true},
      diags);
  ASSERT_TRUE(built.has_value()) << diags.format_all();
  std::uint64_t gathers = 0, scatters = 0, all_reduces = 0;
  for (const workload::Op& op : built->graph.ops) {
    if (!op.name.starts_with("L")) continue;
    if (op.function == workload::Function::AllReduce) ++all_reduces;
    if (op.function != workload::Function::AllGather &&
        op.function != workload::Function::ReduceScatter)
      continue;
    ++(op.function == workload::Function::AllGather ? gathers : scatters);
    EXPECT_EQ(workload::tensor_bytes(op).value, (2u << 20) + (16u << 20)) << op.name;
  }
  EXPECT_EQ(gathers, 4u * 32u);
  EXPECT_EQ(scatters, 4u * 32u);
  EXPECT_EQ(all_reduces, 0u);
  const arch::HardwareModel hw = h100();
  const auto plain = price_training_step(c, 2048, {.tp = 8}, {}, hw, {}, diags);
  const auto sp = price_training_step(c, 2048, {.tp = 8, .sequence_parallel = true}, {}, hw, {},
                                      diags);
  ASSERT_TRUE(plain && sp) << diags.format_all();
  EXPECT_LT(sp->stages[0].memory.activations, plain->stages[0].memory.activations);
  EXPECT_DOUBLE_EQ(sp->model_flops, plain->model_flops);
  // Modelled for training only, over tokens that split evenly.
  EXPECT_FALSE(llm::try_build_llm(c, {.kind = llm::PhaseKind::Prefill, .batch = 1, .seq_len = 64},
                                  {.tp = 8, .sequence_parallel = true}, diags));
  Diagnostics odd;
  EXPECT_FALSE(price_training_step(c, 2047, {.tp = 8, .sequence_parallel = true}, {}, hw, {}, odd));
  ASSERT_FALSE(odd.all().empty());
  EXPECT_EQ(odd.all().front().path, "layout.sequence_parallel");
}

// ---- a pipeline of stages -------------------------------------------------------------------

// LLaMA-2-7B, pp 4, 8 micro-batches: the middle stages are priced alike; the first stage waits
// for (p - 1) slots of the pipeline at the least, and the step ends with stage 0 (1F1B's last
// backward is stage 0's). Activations: stage s keeps min(p - s, m) micro-batches in flight.
TEST(TrainingStep, APipelinedStepHasItsBubble) {
  const llm::LlmConfig c = model("llama2_7b");
  const arch::HardwareModel hw = h100();
  Diagnostics diags;
  const auto r = price_training_step(c, 2048, {.tp = 2, .pp = 4, .micro_batches = 8}, {}, hw, {},
                                     diags);
  ASSERT_TRUE(r.has_value()) << diags.format_all();
  ASSERT_EQ(r->stages.size(), 4u);
  EXPECT_EQ(r->critical_stage, 0u);
  EXPECT_DOUBLE_EQ(r->stages[1].forward_s, r->stages[2].forward_s);
  const StageReport& s0 = r->stages[0];
  const double slot = s0.forward_s + s0.backward_s;
  EXPECT_GE(s0.bubble_s, 3 * std::min(slot, r->stages[1].forward_s + r->stages[1].backward_s));
  EXPECT_EQ(s0.in_flight, 4u);
  EXPECT_EQ(r->stages[3].in_flight, 1u);
  EXPECT_GT(s0.memory.activations, r->stages[3].memory.activations);
  EXPECT_GT(s0.tp_comm_s, 0.0);
  EXPECT_EQ(r->stages[0].first_layer, 0u);
  EXPECT_EQ(r->stages[3].first_layer, 24u);
}

// ---- bad layouts ------------------------------------------------------------------------------

TEST(TrainingStep, BadLayoutsAreLocatedErrors) {
  const llm::LlmConfig c = model("llama2_7b");
  const arch::HardwareModel hw = h100();
  const auto first_path = [&](const Layout& layout) {
    Diagnostics diags;
    EXPECT_FALSE(price_training_step(c, 2048, layout, {}, hw, {}, diags).has_value());
    return diags.all().empty() ? std::string() : diags.all().front().path;
  };
  EXPECT_EQ(first_path({.zero = 4}), "layout.zero");
  EXPECT_EQ(first_path({.micro_batches = 0}), "layout.micro_batches");
  EXPECT_EQ(first_path({.tp = 3, .dp = 2}), "layout.tp");  // 32 heads
  EXPECT_EQ(first_path({.pp = 3, .dp = 2}), "layout.pp");  // 32 layers
  EXPECT_EQ(first_path({.dp = 16}), "layout");             // HGX H100 joins 8
}

// ---- across nodes ---------------------------------------------------------------------------

arch::LoadedCluster dgx_h100() {
  Diagnostics diags;
  auto loaded = arch::load_cluster("configs/cluster/dgx_h100_superpod.yaml", diags);
  EXPECT_TRUE(loaded.has_value()) << diags.format_all();
  return loaded.value();
}

// LLaMA-2-7B at tp 8, pp 2 on two DGX H100 nodes: each stage fills a node, so the boundary
// crosses the network with Megatron-LM's scatter/gather: each TP rank sends 1/8 of the
// activation (1 x 2048 x 4096 bf16 = 16 MiB) on its NIC, then the 8 ranks all-gather it over
// NVLink; each a collective kernel (its fixed cost):
//   send = SendRecv(2 MiB, 2 ranks, 1 a node) + AllGather(16 MiB, 8 in the node) + 2 fixed.
// Data parallelism over 2 nodes at tp 1 (dp 16): the reduce-scatter's group has 8 ranks a node.
TEST(TrainingStep, StagesAndReplicasAcrossNodesUseTheNetwork) {
  namespace an = analytical;
  const arch::LoadedCluster cluster = dgx_h100();
  const arch::HardwareModel hw(cluster.chip.spec);
  const llm::LlmConfig c = model("llama2_7b");
  StepOptions options;
  options.cluster = &cluster.spec;
  Diagnostics diags;
  const auto r = price_training_step(c, 2048, {.tp = 8, .pp = 2, .micro_batches = 4}, {}, hw,
                                     options, diags);
  ASSERT_TRUE(r.has_value()) << diags.format_all();
  std::string why;
  const auto send = an::price_cluster_collective(an::CollectiveKind::SendRecv, 2u << 20, 2, 1, hw,
                                                 &cluster.spec, why);
  const auto gather = an::price_cluster_collective(an::CollectiveKind::AllGather, 16u << 20, 8, 8,
                                                   hw, &cluster.spec, why);
  ASSERT_TRUE(send && gather) << why;
  const double fixed = hw.kernel_fixed_seconds(arch::KernelKind::Collective);
  EXPECT_DOUBLE_EQ(r->stages[0].send_s, send->cost.seconds + gather->cost.seconds + 2 * fixed);

  const std::uint64_t grad_bytes = 2 * llm::llm_headline(c, 0).parameters;
  const auto dp = price_training_step(c, 2048, {.dp = 16, .zero = 1}, {.bucket = Bytes{grad_bytes}},
                                      hw, options, diags);
  ASSERT_TRUE(dp.has_value()) << diags.format_all();
  const auto scatter = an::price_cluster_collective(an::CollectiveKind::ReduceScatter, grad_bytes,
                                                    16, 8, hw, &cluster.spec, why);
  const auto weights = an::price_cluster_collective(an::CollectiveKind::AllGather, grad_bytes, 16,
                                                    8, hw, &cluster.spec, why);
  ASSERT_TRUE(scatter && weights) << why;
  EXPECT_DOUBLE_EQ(dp->stages[0].dp_comm_s,
                   scatter->cost.seconds + weights->cost.seconds + 2 * fixed);
  // What the placement cannot hold is an error naming the field.
  const auto first_path = [&](const Layout& layout) {
    Diagnostics d;
    EXPECT_FALSE(price_training_step(c, 2048, layout, {}, hw, options, d).has_value());
    return d.all().empty() ? std::string() : d.all().front().path;
  };
  EXPECT_EQ(first_path({.tp = 16, .dp = 2}), "layout.tp");            // TP across nodes
  EXPECT_EQ(first_path({.tp = 2, .pp = 2, .dp = 6}), "layout.dp");    // 4 a node, 6 in all
  EXPECT_EQ(first_path({.dp = 1024 + 8}), "layout");                  // beyond 127 nodes
}

// ---- the layout search ------------------------------------------------------------------------

// GPT-2 small on 8 H100s at a global batch of 16: tp in {1, 2, 4} (12 heads, 8 chips), pp in
// the divisors of 12 and of 8 / tp, micro-batch sizes dividing 16 / dp. Every layout is ranked,
// those that fit first, each group by step time.
TEST(TrainingStep, TheLayoutSearchRanksEveryLayout) {
  const llm::LlmConfig c = model("gpt2_small");
  const arch::HardwareModel hw = h100();
  const LayoutSearchResult found =
      search_layouts(c, 1024, {.chips = 8, .global_batch = 16}, {}, hw, {});
  EXPECT_EQ(found.refused, 0u) << found.first_refusal;
  ASSERT_FALSE(found.ranked.empty());
  EXPECT_EQ(found.tried, found.ranked.size());
  for (std::size_t i = 1; i < found.ranked.size(); ++i) {
    const StepReport& a = found.ranked[i - 1];
    const StepReport& b = found.ranked[i];
    EXPECT_TRUE(a.fits >= b.fits);
    if (a.fits == b.fits) {
      EXPECT_LE(a.step_s, b.step_s);
    }
    EXPECT_EQ(b.layout.chips(), 8u);
    EXPECT_EQ(b.layout.global_batch(), 16u);
  }
}

// Under Hugging Face transformers' runtime (one GPU's code, data-parallel replicas) the search
// lays out data parallelism only: GPT-2 small on 8 H100s at a global batch of 16 is dp 8 with
// micro-batches of 1 or 2 (16 / 8 = 2 sequences a replica; 4 and 8 do not divide it), each with
// and without recompute and at ZeRO 0, 1 and 3: 2 x 2 x 3 = 12 layouts, none refused (the
// default runtime's search tries tp and pp too and refuses none either).
TEST(TrainingStep, TheLayoutSearchUnderTransformersIsDataParallel) {
  const llm::LlmConfig c = model("gpt2_small");
  const Framework hf{.precision = llm::Precision::Autocast,
                     .runtime = llm::Runtime::HfTransformers};
  const LayoutSearchResult found =
      search_layouts(c, 1024, {.chips = 8, .global_batch = 16}, hf, h100(), {});
  EXPECT_EQ(found.refused, 0u) << found.first_refusal;
  EXPECT_EQ(found.tried, 12u);
  for (const StepReport& r : found.ranked) {
    EXPECT_EQ(r.layout.tp, 1u);
    EXPECT_EQ(r.layout.pp, 1u);
    EXPECT_EQ(r.layout.dp, 8u);
  }
}

// With --search-cp 1,2 the search also lays out context parallelism: every cp = 1 layout again,
// plus one for each (tp, pp) that leaves an even number of chips (dp = 8 / tp / pp / 2), each
// with the same micro-batch, recompute, ZeRO and SP choices; every layout still has 8 chips and
// a global batch of 16.
TEST(TrainingStep, TheLayoutSearchTriesContextParallelism) {
  const llm::LlmConfig c = model("gpt2_small");
  const arch::HardwareModel hw = h100();
  const LayoutSearchResult plain =
      search_layouts(c, 1024, {.chips = 8, .global_batch = 16}, {}, hw, {});
  LayoutSearch with_cp{.chips = 8, .global_batch = 16};
  with_cp.context_parallel = {1, 2};
  const LayoutSearchResult found = search_layouts(c, 1024, with_cp, {}, hw, {});
  EXPECT_EQ(found.refused, 0u) << found.first_refusal;
  std::size_t cp2 = 0;
  for (const StepReport& r : found.ranked) {
    EXPECT_EQ(r.layout.chips(), 8u);
    EXPECT_EQ(r.layout.global_batch(), 16u);
    EXPECT_TRUE(r.layout.cp == 1 || r.layout.cp == 2);
    if (r.layout.cp == 2) ++cp2;
  }
  EXPECT_GT(cp2, 0u);
  EXPECT_EQ(found.tried, plain.tried + cp2);
}

// Qwen3-30B-A3B on 8 chips with ep 1 and 8: ep 8 fits where 8 divides a stage's tp x dp x cp,
// that is at pp 1 only (8 chips); at tp > 1 only with sequence parallelism (MoE parallel folding
// requires it: those without are refused).
TEST(TrainingStep, TheLayoutSearchTriesExpertParallelism) {
  const llm::LlmConfig c = model("qwen3_30b_a3b");
  LayoutSearch search{.chips = 8, .global_batch = 8};
  search.micro_batch_sizes = {1};
  search.recompute = {false};
  search.zero_stages = {1};
  search.expert_parallel = {1, 8};
  const LayoutSearchResult found = search_layouts(c, 256, search, {}, h100(), {});
  std::size_t ep8 = 0;
  for (const StepReport& r : found.ranked) {
    EXPECT_TRUE(r.layout.ep == 1 || r.layout.ep == 8);
    if (r.layout.ep != 8) continue;
    ++ep8;
    EXPECT_EQ(r.layout.pp, 1u);
    EXPECT_TRUE(r.layout.tp == 1 || r.layout.sequence_parallel);
  }
  EXPECT_GT(ep8, 0u);
  EXPECT_GT(found.refused, 0u);
}

// ---- the command --------------------------------------------------------------------------------

int coda(const std::vector<std::string>& args, std::string& out, std::string& err) {
  std::vector<const char*> argv{"coda"};
  for (const std::string& a : args) argv.push_back(a.c_str());
  std::ostringstream o, e;
  const int rc = cli::run_main(argv, o, e);
  out = o.str();
  err = e.str();
  return rc;
}

TEST(TrainCommand, PrintsTheStepAndWritesJson) {
  const testing::TempDir dir;
  const std::string json = (dir.path() / "train.json").string();
  std::string out, err;
  ASSERT_EQ(coda({"train", "--arch", "configs/arch/nvidia_h100_sxm.yaml", "--llm",
                  "configs/workloads/llm/gpt2_small.yaml", "--seq", "1024", "--pp", "2", "--dp",
                  "4", "--global-batch", "32", "--zero", "1", "--json", json},
                 out, err),
            0)
      << err;
  EXPECT_NE(out.find("tp 1 pp 2 dp 4, micro-batch 1 x 8"), std::string::npos) << out;
  EXPECT_NE(out.find("precision mixed"), std::string::npos) << out;
  EXPECT_NE(out.find("MFU"), std::string::npos);
  EXPECT_NE(out.find("pipeline bubble"), std::string::npos);
  EXPECT_TRUE(std::filesystem::exists(json));
  ASSERT_EQ(coda({"train", "--arch", "configs/arch/nvidia_h100_sxm.yaml", "--llm",
                  "configs/workloads/llm/gpt2_small.yaml", "--tp", "5"},
                 out, err),
            1);
  EXPECT_NE(err.find("layout.tp"), std::string::npos) << err;
  ASSERT_EQ(coda({"train", "--arch", "configs/arch/nvidia_h100_sxm.yaml", "--llm",
                  "configs/workloads/llm/gpt2_small.yaml", "--seq", "1024", "--train-precision",
                  "autocast"},
                 out, err),
            0)
      << err;
  EXPECT_NE(out.find("precision autocast"), std::string::npos) << out;
  EXPECT_EQ(coda({"train", "--arch", "configs/arch/nvidia_h100_sxm.yaml", "--llm",
                  "configs/workloads/llm/gpt2_small.yaml", "--train-precision", "amp"},
                 out, err),
            2);
  // A tf32 model (fp32 storage) has no narrower type to autocast to: an error naming the field.
  ASSERT_EQ(coda({"train", "--arch", "configs/arch/nvidia_h100_sxm.yaml", "--llm",
                  "configs/workloads/llm/gpt2_small.yaml", "--dtype", "tf32", "--train-precision",
                  "autocast"},
                 out, err),
            1);
  EXPECT_NE(err.find("framework.precision"), std::string::npos) << err;
  EXPECT_EQ(coda({"train", "--arch", "configs/arch/nvidia_h100_sxm.yaml", "--llm",
                  "configs/workloads/llm/gpt2_small.yaml", "--search-layouts"},
                 out, err),
            2);
  // Across two nodes of a cluster; a chip named twice is a usage error.
  ASSERT_EQ(coda({"train", "--cluster", "configs/cluster/dgx_a100_superpod.yaml", "--llm",
                  "configs/workloads/llm/gpt2_small.yaml", "--seq", "1024", "--dp", "16"},
                 out, err),
            0)
      << err;
  EXPECT_NE(out.find("on 16 x 'nvidia-a100-sxm-80gb'"), std::string::npos) << out;
  EXPECT_EQ(coda({"train", "--llm", "configs/workloads/llm/gpt2_small.yaml"}, out, err), 2);
}

// ---- expert parallelism -----------------------------------------------------------------------

// Qwen3-30B-A3B (30,532,122,624 parameters by hand, configs/workloads/llm/qwen3_30b_a3b.yaml;
// its routed experts 48 layers x 128 x 3 x 2048 x 768 = 28,991,029,248, the rest 1,541,093,376)
// on 8 H100s, dp 8, ZeRO 1, one sequence of 256 tokens each. With ep 8 a rank holds 1/8 of the
// experts: 1,541,093,376 + 3,623,878,656 = 5,164,972,032 parameters, 10,329,944,064 bytes of
// bf16 weights (61,064,245,248 without). ZeRO 1 shards the rest over the 8 ranks and the experts
// over the dp / ep = 1 rank that holds them: 192,636,672 + 3,623,878,656 = 3,816,515,328 of
// optimizer state at 12 B each, as many as 30,532,122,624 / 8 without expert parallelism. The
// model FLOPs do not change; the experts' gradients are not reduced at all (one rank holds each).
TEST(TrainingStep, ExpertParallelismShardsTheExperts) {
  const llm::LlmConfig c = model("qwen3_30b_a3b");
  const arch::HardwareModel hw = h100();
  const auto price = [&](const Layout& layout) {
    Diagnostics diags;
    auto r = price_training_step(c, 256, layout, {}, hw, {}, diags);
    EXPECT_TRUE(r.has_value()) << diags.format_all();
    return r;
  };
  const auto dense = price({.dp = 8, .zero = 1});
  const auto ep8 = price({.dp = 8, .zero = 1, .ep = 8});
  ASSERT_TRUE(dense && ep8);
  EXPECT_EQ(dense->stages[0].memory.weights, Bytes{61'064'245'248});
  EXPECT_EQ(ep8->stages[0].memory.weights, Bytes{10'329'944'064});
  EXPECT_EQ(ep8->stages[0].memory.optimizer_state, Bytes{3'816'515'328ull * 12});
  EXPECT_EQ(dense->stages[0].memory.optimizer_state, Bytes{3'816'515'328ull * 12});
  EXPECT_NEAR(ep8->model_flops, dense->model_flops, 1e-9 * dense->model_flops);
  EXPECT_LT(ep8->stages[0].dp_comm_s, dense->stages[0].dp_comm_s);
  EXPECT_GT(ep8->stages[0].dp_comm_s, 0.0);
  EXPECT_EQ(dense->stages[0].tp_comm_s, 0.0);
  EXPECT_GT(ep8->stages[0].tp_comm_s, 0.0);  // the all-to-alls
  // With tp 2 and sequence parallelism (MoE parallel folding) on the same 8 chips, dp 4, ep 8:
  // the rest is split over tp (embeddings and LM head 2 x 75,968 x 2048 = 311,164,928; a layer's
  // attention 18,874,368 / 2 = 9,437,184, its QK norms 256, norms 4,096 and router 262,144 whole:
  // 9,703,680 x 48 = 465,776,640; the final norm 2,048: 776,943,616), the experts not (16 whole:
  // 3,623,878,656): 4,400,822,272 parameters, 8,801,644,544 bytes. ZeRO 1 shards the rest over
  // dp 4 (194,235,904) and the experts over tp 2 x dp 4 / ep 8 = 1 rank: 3,818,114,560 x 12 B.
  // (Two micro-batches each: the same 8 sequences.)
  const auto folded =
      price({.tp = 2, .dp = 4, .micro_batches = 2, .zero = 1, .sequence_parallel = true, .ep = 8});
  ASSERT_TRUE(folded);
  EXPECT_EQ(folded->stages[0].memory.weights, Bytes{8'801'644'544});
  EXPECT_EQ(folded->stages[0].memory.optimizer_state, Bytes{3'818'114'560ull * 12});
  EXPECT_NEAR(folded->model_flops, dense->model_flops, 1e-9 * dense->model_flops);
  // At tp 4 (SP), dp 1, ep 2 no dense gradient is reduced, but each expert's still is: the 4 / 2
  // = 2 ranks that hold it saw different tokens.
  const auto lone = price({.tp = 4, .zero = 1, .sequence_parallel = true, .ep = 2});
  ASSERT_TRUE(lone);
  EXPECT_GT(lone->stages[0].dp_comm_s, 0.0);
  // The expert-parallel ranks are a stage's ranks: ep divides tp x dp x cp.
  for (const std::uint64_t ep : {3u, 16u}) {
    Diagnostics diags;
    EXPECT_FALSE(price_training_step(c, 256, {.dp = 8, .ep = ep}, {}, hw, {}, diags));
    ASSERT_FALSE(diags.all().empty());
    EXPECT_EQ(diags.all().front().path, "layout.ep");
  }
}

// The same model on two DGX H100 nodes, dp 16, ep 16: every all-to-all sends half of a rank's
// rows to the other node on its NIC (sim/analytical/cluster_collective.h). Each moves the
// rank's 256 tokens x 8 experts x 2048 x 2 B = 8 MiB; a layer has 2 in its forward and 2 in its
// backward, 48 layers: 192 collective kernels, each the network's price plus its fixed cost,
// and nothing else is TP's or EP's communication at tp 1.
TEST(TrainingStep, ExpertParallelismAcrossNodesUsesTheNetwork) {
  namespace an = analytical;
  const arch::LoadedCluster cluster = dgx_h100();
  const arch::HardwareModel hw(cluster.chip.spec);
  StepOptions options;
  options.cluster = &cluster.spec;
  Diagnostics diags;
  const auto r = price_training_step(model("qwen3_30b_a3b"), 256, {.dp = 16, .zero = 1, .ep = 16},
                                     {}, hw, options, diags);
  ASSERT_TRUE(r.has_value()) << diags.format_all();
  std::string why;
  const auto exchange = an::price_cluster_collective(an::CollectiveKind::AllToAll, 8u << 20, 16, 8,
                                                     hw, &cluster.spec, why);
  ASSERT_TRUE(exchange) << why;
  const double each =
      exchange->cost.seconds + hw.kernel_fixed_seconds(arch::KernelKind::Collective);
  EXPECT_NEAR(r->stages[0].tp_comm_s, 192 * each, 1e-9 * 192 * each);
}

// Qwen3-30B-A3B's 48 layers with the embedding and the loss counted, 50 = 10 x 5 over pp 2 x
// virtual 5: virtual stage k holds 5k - 1 .. 5k + 3, the first 0-3 and the last 44-47; device 0
// runs stages 0, 2, 4, 6, 8 and device 1 stages 1, 3, 5, 7, 9.
TEST(TrainingStep, ThePipelineSplitCanCountTheEmbeddingAndTheLoss) {
  Diagnostics diags;
  const auto r = price_training_step(model("qwen3_30b_a3b"), 256,
                                     {.pp = 2,
                                      .micro_batches = 2,
                                      .virtual_stages = 5,
                                      .pipeline_counts_embedding = true,
                                      .pipeline_counts_loss = true},
                                     {}, h100(), {}, diags);
  ASSERT_TRUE(r.has_value()) << diags.format_all();
  EXPECT_EQ(r->stages[0].layer_ranges, "0-3,9-13,19-23,29-33,39-43");
  EXPECT_EQ(r->stages[1].layer_ranges, "4-8,14-18,24-28,34-38,44-47");
  EXPECT_EQ(r->stages[0].layers, 24u);
  EXPECT_EQ(r->stages[1].layers, 24u);
}

// calibration.training_clock: a training step's tensor cores run at it, nothing else does. On
// H100 with the training clock at half of `clock` (915 MHz) and no sustained clock, the wgmma
// bf16 rate of a step's arch is half the arch's own: 2048 MACs x tensor_issue 0.846 / 2 = 866.3
// a cycle per SM. A LLaMA-2-7B step then takes longer, but less than twice as long (its norms,
// element-wise ops and collectives are not tensor work), and its MFU denominator, the datasheet
// peak, does not move. `coda run` of the same model's training phase slows down too; of its
// prefill, not at all.
TEST(TrainingStep, TheTrainingClockSlowsOnlyTheStepsTensorWork) {
  Diagnostics diags;
  auto loaded = arch::load_arch("configs/arch/nvidia_h100_sxm.yaml", diags);
  ASSERT_TRUE(loaded.has_value()) << diags.format_all();
  arch::LoadedArch base = *loaded;
  base.spec.calibration.sustained_clock.reset();
  base.spec.calibration.training_clock.reset();
  arch::LoadedArch slow = base;
  slow.spec.calibration.training_clock = Hertz{base.spec.clock.value / 2};
  const arch::HardwareModel fast_hw(base.spec), slow_hw(slow.spec);
  EXPECT_DOUBLE_EQ(slow_hw.achievable_macs_per_cycle(DataType::Bf16, arch::TensorPath::Wgmma),
                   fast_hw.achievable_macs_per_cycle(DataType::Bf16, arch::TensorPath::Wgmma));
  const arch::HardwareModel stepping(arch::training_step_view(slow.spec));
  EXPECT_NEAR(stepping.achievable_macs_per_cycle(DataType::Bf16, arch::TensorPath::Wgmma),
              2048 * 0.846 / 2, 1e-9);

  const llm::LlmConfig c = model("llama2_7b");
  const Layout layout{.dp = 8, .micro_batch_size = 1, .micro_batches = 1};
  Diagnostics d1, d2;
  const auto fast = price_training_step(c, 2048, layout, {}, fast_hw, {}, d1);
  const auto slowed = price_training_step(c, 2048, layout, {}, slow_hw, {}, d2);
  ASSERT_TRUE(fast && slowed) << d1.format_all() << d2.format_all();
  EXPECT_GT(slowed->step_s, fast->step_s);
  EXPECT_LT(slowed->step_s, 2 * fast->step_s);
  EXPECT_EQ(slowed->peak_flops_per_chip, fast->peak_flops_per_chip);

  const auto run_cycles = [&](const arch::LoadedArch& a, llm::PhaseKind kind) {
    RunFiles files{.arch = "configs/arch/nvidia_h100_sxm.yaml", .arch_spec = a};
    files.source = workload::LlmSource{.config = "configs/workloads/llm/gpt2_small.yaml",
                                       .phase = {.kind = kind, .batch = 1, .seq_len = 128}};
    Diagnostics d;
    const auto r = run_files(files, d);
    EXPECT_TRUE(r.has_value()) << d.format_all();
    return r ? static_cast<double>(r->total.cycles.value) : 0.0;  // cycles of the one `clock`
  };
  EXPECT_GT(run_cycles(slow, llm::PhaseKind::Training), run_cycles(base, llm::PhaseKind::Training));
  EXPECT_EQ(run_cycles(slow, llm::PhaseKind::Prefill), run_cycles(base, llm::PhaseKind::Prefill));
}

}  // namespace
}  // namespace coda::sim::training
