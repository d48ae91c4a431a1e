// The published-only kernels priced with coda's models (validation/published_pricing.h), each
// new term of the kernel rates checked against a value derived by hand. The arch is the H200
// preset with its calibration pinned (fixtures/h200_pinned.yaml: 132 SMs at 1.83 GHz, 2048
// 16-bit tensor MACs per SM per cycle, 128 fp32 and 16 special-function ops per SM per cycle,
// DRAM 4.8 TB/s, links 450 GB/s with no latency, every efficiency 1, every fixed cost 4 us but a
// copy's 0), with the parameters each test states on top.

#include <gtest/gtest.h>

#include "arch/arch_spec.h"
#include "arch/hardware_model.h"
#include "sim/analytical/cluster_collective.h"
#include "sim/analytical/gpu_model.h"
#include "sim/analytical/unit_costs.h"
#include "sim/training_step.h"
#include "validation/compare.h"
#include "workloads/llm/llm_builder.h"
#include "workloads/llm/llm_config.h"

namespace coda::validation {
namespace {

constexpr double kClock = 1.83e9;
constexpr double kSms = 132;
constexpr double kCycle = 1.0 / kClock;

arch::ArchSpec pinned() {
  Diagnostics diags;
  const auto arch = arch::load_arch("validation/tests/fixtures/h200_pinned.yaml", diags);
  EXPECT_TRUE(arch) << diags.format_all();
  return arch ? arch->spec : arch::ArchSpec{};
}

Measurement row(Kernel kernel, DType dtype, Shape shape, Impl impl = Impl::Default,
                std::string model = {}) {
  Measurement m;
  m.kernel = kernel;
  m.dtype = dtype;
  m.shape = shape;
  m.impl = impl;
  m.model = std::move(model);
  m.median_us = 1;
  m.checked = false;
  m.source = "FIXTURE: not a publication";
  return m;
}

double seconds(const Predictor& p, const Measurement& m) {
  std::string why;
  const auto prediction = p.predict(m, why);
  EXPECT_TRUE(prediction) << why;
  return prediction ? prediction->seconds : 0.0;
}

// A 128-token prefill of `config` (under `quant`) as the LLM builder builds it, priced directly
// with epilogue fusion: what an llm_prefill row of it must cost.
double direct_prefill(const Predictor& p, const workload::llm::LlmConfig& config,
                      const workload::llm::Quantization& quant = {}) {
  Diagnostics diags;
  const auto graph = workload::llm::try_build_llm(
      config,
      {.kind = workload::llm::PhaseKind::Prefill, .batch = 1, .seq_len = 128, .quant = quant}, {},
      diags);
  EXPECT_TRUE(graph) << diags.format_all();
  if (!graph) return 0.0;
  std::string why;
  const auto priced =
      price_graph(*graph, mapper::FusionMode::Epilogue, "", p.hardware(), true, why);
  EXPECT_TRUE(priced) << why;
  return priced ? priced->seconds : 0.0;
}

TEST(PublishedPricing, AGeluCostsItsFixedCostPlusItsBytesAtTheStreamingRate) {
  arch::ArchSpec spec = pinned();
  spec.calibration.fixed_cost[arch::KernelKind::Vector] = Seconds{3e-6};
  spec.calibration.dram_fraction = 0.9;
  const Predictor p(spec);
  // 1024 bf16 elements: 2048 B read + 2048 B written at 0.9 x 4.8 TB/s = 0.948 ns = 1.74 cycles,
  // rounded up to 2 (the arithmetic, 1024 x 12 ops over 256 x 132 per cycle, is under a cycle);
  // plus the vector kernel's fixed cost, 3 us = 5490 cycles: 5492 cycles.
  const double t = seconds(p, row(Kernel::Gelu, DType::Bf16, {.elements = 1024}));
  EXPECT_NEAR(t, 5492 * kCycle, 1e-15);
}

// A layer_norm row that names PyTorch's native kernel (impl torch: arch::NormImpl::Torch) reads
// its input twice once the rows resident on an SM outgrow its on-chip memory: 64 warps / 4 a
// block = 16 rows of one block each, against the H100/H200 preset's 228 KiB of shared memory.
//   fp32 x 8,192 columns: 16 x 32 KiB = 512 KiB: two reads. The second adds the reads, x
//     (4,096 x 8,192 x 4 = 134,217,728 B) and the scale (32,768 B), at 4.8 TB/s: 27.97 us.
//   fp32 x 2,048 columns: 16 x 8 KiB = 128 KiB: the second read stays on chip, as a fused
//     kernel's does: the same time.
TEST(PublishedPricing, PyTorchsNormKernelRereadsRowsThatOutgrowAnSm) {
  const Predictor p(pinned());
  const auto ln = [&](std::uint64_t cols, Impl impl) {
    return seconds(p, row(Kernel::PublishedLayerNorm, DType::Fp32,
                          {.rows = 4096, .cols = cols}, impl));
  };
  EXPECT_NEAR(ln(8192, Impl::Torch) - ln(8192, Impl::Default), 134'250'496 / 4.8e12,
              2 * kCycle);
  EXPECT_EQ(ln(2048, Impl::Torch), ln(2048, Impl::Default));
}

// A row of the cluster class (QuACK) spreads a row over up to 16 SMs' shared memory, so it reads
// the row once where a fused kernel in one SM reads it twice. RMSNorm, bf16, 8,192 rows of
// 262,144: a row is 524,288 B (with its share of the scale, 524,352 B), more than one SM's
// 228 KiB (233,472 B) and less than 16 of them: the default reads x and the scale
// (2,147,483,648 x 2 + 262,144 x 2 = 4,295,491,584 B) twice, the cluster class once, 894.89 us
// less at 4.8 TB/s. A row of 16,384 columns fits one SM: both read it once. An arch without
// thread-block clusters (no wgmma generation) cannot run the class: a clear reason.
TEST(PublishedPricing, AClusterRowKernelReadsARowOnceAcrossItsSms) {
  const Predictor p(pinned());
  const auto norm = [&](const Predictor& on, std::uint64_t rows, std::uint64_t cols, Impl impl) {
    return seconds(on,
                   row(Kernel::PublishedRmsNorm, DType::Bf16, {.rows = rows, .cols = cols}, impl));
  };
  EXPECT_NEAR(norm(p, 8192, 262144, Impl::Default) - norm(p, 8192, 262144, Impl::Cluster),
              4'295'491'584 / 4.8e12, 2 * kCycle);
  EXPECT_EQ(norm(p, 8192, 16384, Impl::Cluster), norm(p, 8192, 16384, Impl::Default));
  // Softmax takes the class too.
  const auto softmax = [&](Impl impl) {
    return seconds(p, row(Kernel::Softmax, DType::Bf16, {.rows = 8192, .cols = 262144}, impl));
  };
  EXPECT_LT(softmax(Impl::Cluster), softmax(Impl::Default));
  arch::ArchSpec ampere = pinned();
  for (arch::ComputeUnitSpec& unit : ampere.compute)
    if (unit.tensor_core) unit.tensor_core->paths = {arch::TensorPath::MmaSync};
  std::string why;
  EXPECT_FALSE(Predictor(ampere).predict(
      row(Kernel::PublishedRmsNorm, DType::Bf16, {.rows = 8192, .cols = 262144}, Impl::Cluster),
      why));
  EXPECT_NE(why.find("thread-block cluster"), std::string::npos) << why;
}

TEST(PublishedPricing, AGemmRunsAtItsPathsIssueEfficiencyAndTheSustainedClock) {
  arch::ArchSpec spec = pinned();
  spec.calibration.tensor_issue[arch::TensorPath::Wgmma][DataType::Bf16] = 0.8;
  spec.calibration.sustained_clock = Hertz{1.6e9};
  const Predictor p(spec);
  const double t = seconds(p, row(Kernel::Gemm, DType::Bf16,
                                  {.m = 4096, .n = 4096, .k = 4096, .batch = 1}, Impl::Wgmma));
  // The tensor rate: 2048 x 0.8 x 1.6 / 1.83 = 1432.35 MACs per SM per cycle of 1.83 GHz. The
  // GEMM model with these numbers filled in by hand (4 us fixed cost, the pinned DRAM, the L2
  // with no stated bandwidth) is the prediction.
  sim::analytical::GpuParams params;
  params.sms = 132;
  params.clock_hz = kClock;
  params.macs_per_cycle_per_sm = 2048.0 * 0.8 * 1.6 / 1.83;
  params.smem_bytes_per_sm = std::uint64_t{228} * 1024;
  params.registers_per_sm = 65536;
  params.max_blocks_per_sm = 32;
  params.max_warps_per_sm = 64;
  params.l2_bytes = std::uint64_t{50} * 1024 * 1024;
  params.dram_bytes_per_second = 4.8e12;
  params.launch_overhead_s = 4e-6;
  const auto expected = sim::analytical::choose_gpu_tile({1, 4096, 4096, 4096, 2, 2}, params);
  EXPECT_NEAR(t, expected.cost.seconds, 1e-12);
  // And it is the useful work at that rate, 4096^3 / (132 x 1432.35 x 1.83e9) = 198.6 us, plus
  // the launch, within what the tile grid's wave quantization adds (under 10% here).
  const double floor = 4096.0 * 4096 * 4096 / (kSms * params.macs_per_cycle_per_sm * kClock);
  EXPECT_GE(t, 4e-6 + floor);
  EXPECT_LE(t, 4e-6 + floor / 0.9);
}

// FlashAttention forward, b 2, h 16, s 8192, d 128, bf16, not causal. By hand:
//   pairs = 2 x 16 x 8192^2 = 2^31; MACs = pairs x 2 x 128 (Q K^T and P V)
//   blocks of 128 queries: 2 x 16 x 64 = 2048 over 132 SMs in 16 waves: efficiency 2048 / 2112
//   softmax: pairs x (5 + 128 / 128) fp32 ops on 128 x 132 lanes, and pairs exps on 16 x 132
//   special-function units: the exps take longer, 2^31 / (16 x 132 x 1.83e9) = 555.6 us
//   DRAM: Q, K, V, O = 4 x 2 x 16 x 8192 x 128 x 2 B = 2^28 B / 4.8 TB/s = 55.9 us, not binding
constexpr double kPairs = 2147483648.0;
constexpr double kWaveEfficiency = 2048.0 / 2112.0;
constexpr double kSoftmax = kPairs / (16 * kSms * kClock);

TEST(PublishedPricing, FlashAttention3OverlapsItsSoftmaxWithItsGemms) {
  arch::ArchSpec spec = pinned();
  spec.calibration.tensor_issue[arch::TensorPath::Wgmma][DataType::Bf16] = 0.75;
  const Predictor p(spec);
  const Shape shape{.batch = 2, .heads = 16, .seq = 8192, .head_dim = 128, .kv_heads = 16};
  // fa3: wgmma at 2048 x 0.75 MACs per SM per cycle; the softmax hides under the GEMMs
  // (attention_overlap pinned at 1): 4 us + max(matrix, softmax).
  const double matrix = kPairs * 256 / (2048 * 0.75 * kSms * kClock * kWaveEfficiency);
  EXPECT_NEAR(seconds(p, row(Kernel::AttentionFwd, DType::Bf16, shape, Impl::Fa3)),
              4e-6 + std::max(matrix, kSoftmax), 2 * kCycle);
  // Half the softmax unhidden: + 0.5 x min(matrix, softmax).
  spec.calibration.attention_overlap = 0.5;
  const Predictor half(spec);
  EXPECT_NEAR(seconds(half, row(Kernel::AttentionFwd, DType::Bf16, shape, Impl::Fa3)),
              4e-6 + std::max(matrix, kSoftmax) + 0.5 * std::min(matrix, kSoftmax), 2 * kCycle);
}

TEST(PublishedPricing, FlashAttention2AddsItsSoftmaxToItsGemms) {
  arch::ArchSpec spec = pinned();
  spec.calibration.tensor_issue[arch::TensorPath::MmaSync][DataType::Bf16] = 0.5;
  const Predictor p(spec);
  const Shape shape{.batch = 2, .heads = 16, .seq = 8192, .head_dim = 128, .kv_heads = 16};
  // fa2: mma.sync at 2048 x 0.5; the softmax runs between the GEMMs: 4 us + matrix + softmax.
  const double matrix = kPairs * 256 / (2048 * 0.5 * kSms * kClock * kWaveEfficiency);
  EXPECT_NEAR(seconds(p, row(Kernel::AttentionFwd, DType::Bf16, shape, Impl::Fa2)),
              4e-6 + matrix + kSoftmax, 2 * kCycle);
  // Its backward: 5 d MACs per pair at attention_backward (0.5) of the rate, the same softmax
  // work (recomputing P and dS, without the rescale: 5 ops + 1 exp per pair), then its two helper
  // kernels over the 2 x 16 x 8192 = 262144 query rows: the first reads dO and O (262144 x 2 x
  // 128 x 2 B) and writes the fp32 dQ accumulator's zeros and D (262144 x (128 x 4 + 4) B), the
  // last reads the accumulator (262144 x 128 x 4 B) and writes dQ (262144 x 128 x 2 B):
  // 470,810,624 B at 4.8 TB/s, and a vector kernel's fixed cost each (4 us).
  spec.calibration.attention_backward = 0.5;
  const Predictor backward(spec);
  const double bwd_matrix = kPairs * 640 / (2048 * 0.5 * 0.5 * kSms * kClock * kWaveEfficiency);
  const double helpers = 470810624.0 / 4.8e12 + 8e-6;
  EXPECT_NEAR(seconds(backward, row(Kernel::AttentionBwd, DType::Bf16, shape, Impl::Fa2)),
              4e-6 + bwd_matrix + kSoftmax + helpers, 2 * kCycle);
  // Forward + backward as one row: the two, each with its fixed cost (4 us):
  // 8 us + matrix + bwd_matrix + 2 softmax + the helpers.
  EXPECT_NEAR(seconds(backward, row(Kernel::AttentionFwdBwd, DType::Bf16, shape, Impl::Fa2)),
              8e-6 + matrix + bwd_matrix + 2 * kSoftmax + helpers, 4 * kCycle);
  // Unfused, its backward is not modelled, so neither is the pair; the reason says so.
  std::string why;
  EXPECT_FALSE(backward.predict(row(Kernel::AttentionFwdBwd, DType::Bf16, shape, Impl::Unfused),
                                why));
  EXPECT_NE(why.find("unfused attention backward is not modelled"), std::string::npos) << why;
}

TEST(PublishedPricing, AnAllReduceIsNcclsCheapestPairAtTheLinksAchievableBandwidth) {
  arch::ArchSpec spec = pinned();
  spec.calibration.link_fraction = 0.8;
  const Predictor p(spec);
  // 1 GiB over 8 ranks, the Simple ring's bus bandwidth B = 0.8 x 450 GB/s = 360 GB/s, and the
  // preset's interconnect.nccl (NCCL's tuning.cc constants). Ring forced (impl ring): NCCL's
  // cheapest ring protocol is Simple: base 8.4 us + 14 steps x 3.4 us = 56 us, plus
  // 2 x 7/8 x 2^30 / 360e9 (LL128: 40.6 us + 2^30 / (0.92 B x 8/14) is 0.45 ms slower); plus
  // the collective's fixed cost, 4 us (the fixture).
  const Shape gib{.bytes = std::uint64_t{1} << 30, .ranks = 8};
  const double ring = seconds(p, row(Kernel::AllReduce, DType::Bf16, gib, Impl::Ring));
  EXPECT_NEAR(ring, 4e-6 + 56e-6 + 2.0 * 7 / 8 * 1073741824.0 / 360e9, 1e-12);
  // Unforced, NCCL picks NVLS on an H200 (its tuner's 25 us + 2^30 / (f B x 2 x 8/14) with the
  // preset's fitted f < 0.875 beats the ring's 2^30 / (B x 8/14)); the kernel then loops over the
  // buffer: 16 channels x 8 ranks x 128 KiB chunks (1 GiB is not below 64 x 16 x 8 x 128 KiB,
  // so no halving) = 16 MiB a loop, 64 loops of the preset's loop time each.
  const double best = seconds(p, row(Kernel::AllReduce, DType::Bf16, gib));
  const arch::NcclProtocolSpec& nvls =
      spec.interconnect->nccl->at(arch::NcclAlgorithm::Nvls).at(arch::NcclProtocol::Simple);
  EXPECT_EQ(nvls.channels, 16u);
  EXPECT_NEAR(
      best,
      4e-6 + 25e-6 + 1073741824.0 / (nvls.bandwidth * 360e9 * 2 * 8 / 14) + 64 * nvls.loop.value,
      1e-12);
  EXPECT_LT(best, ring);
}

TEST(PublishedPricing, WholeModelRowsComposeTheirSteps) {
  const Predictor p(pinned(), {.llm_dir = "configs/workloads/llm"});
  const Shape shape{.batch = 1, .input_len = 128, .output_len = 3, .tp = 1};
  const double prefill = seconds(p, row(Kernel::LlmPrefill, DType::Bf16,
                                        {.batch = 1, .input_len = 128, .tp = 1}, Impl::Default,
                                        "llama2_7b"));
  const double decode = seconds(p, row(Kernel::LlmDecode, DType::Bf16, shape, Impl::Default,
                                       "llama2_7b"));
  const double generate = seconds(p, row(Kernel::LlmGenerate, DType::Bf16, shape, Impl::Default,
                                         "llama2_7b"));
  // Generation is the prefill (the first token) and output_len - 1 = 2 decode steps at the mean
  // step time.
  EXPECT_NEAR(generate, prefill + 2 * decode, 1e-12);
  // The mean step over contexts 128 .. 130 is the mean of the first and the last: between them.
  const double first = seconds(p, row(Kernel::LlmDecode, DType::Bf16,
                                      {.batch = 1, .input_len = 128, .output_len = 1, .tp = 1},
                                      Impl::Default, "llama2_7b"));
  const double last = seconds(p, row(Kernel::LlmDecode, DType::Bf16,
                                     {.batch = 1, .input_len = 130, .output_len = 1, .tp = 1},
                                     Impl::Default, "llama2_7b"));
  EXPECT_NEAR(decode, (first + last) / 2, 1e-12);
  // A prefill step is the LLM graph through the schedule and the engine: the same as pricing the
  // builder's graph.
  Diagnostics diags;
  const auto config = workload::llm::load_llm_config("configs/workloads/llm/llama2_7b.yaml", diags);
  ASSERT_TRUE(config) << diags.format_all();
  EXPECT_NEAR(prefill, direct_prefill(p, *config), 1e-12);
}

// An int8 llm_* row is a W8A8 deployment (RKLLM's w8a8, SmoothQuant): the model in fp16 with its
// linear layers' weights and inputs in int8 and its KV cache in fp16, as --quant w8a8 builds it,
// so the row's price is that graph's.
TEST(PublishedPricing, AnInt8LlmRowIsAW8A8Deployment) {
  const Predictor p(pinned(), {.llm_dir = "configs/workloads/llm"});
  const double prefill = seconds(p, row(Kernel::LlmPrefill, DType::Int8,
                                        {.batch = 1, .input_len = 128, .tp = 1}, Impl::Default,
                                        "tinyllama_1p1b"));
  Diagnostics diags;
  auto config = workload::llm::load_llm_config("configs/workloads/llm/tinyllama_1p1b.yaml", diags);
  ASSERT_TRUE(config) << diags.format_all();
  config->dtype = DataType::Fp16;
  workload::llm::Quantization w8a8;
  w8a8.weights = w8a8.activations = DataType::Int8;
  EXPECT_NEAR(prefill, direct_prefill(p, *config, w8a8), 1e-12);
  // Not the model wholly in int8 (which would also read an int8 KV cache and run int8 norms).
  auto all_int8 = *config;
  all_int8.dtype = DataType::Int8;
  EXPECT_NE(prefill, direct_prefill(p, all_int8));
}

// An llm_train row: one optimizer step per GPU, priced by the training step model
// (sim/training_step.h; its own arithmetic is derived by hand in tests/training_step_test.cpp).
// GPT-2 small (learned positions: the table sized by the row's seq, 128), 2 sequences of 128
// tokens. With the training graph's priced ops (at the arch's training clock) split into AdamW
// (`opt`) and the rest (`fb`, one micro-batch's forward and backward):
//   grad_accum g, dp 1:  g x fb + opt
//   dp 8, ZeRO 3:        the step model's price of that layout (FSDP's gathers can only add to
//                        fb + opt / 8)
TEST(PublishedPricing, TrainingRowsComposeMicroBatchesShardsAndExposedCommunication) {
  const Predictor p(pinned(), {.llm_dir = "configs/workloads/llm"});
  const auto train = [&](std::uint64_t grad_accum, std::uint64_t dp, std::uint64_t tp = 1) {
    return row(Kernel::LlmTrain, DType::Bf16,
               {.batch = 2, .seq = 128, .tp = tp, .grad_accum = grad_accum, .dp = dp, .pp = 1,
                .vp = 1, .zero = 3, .grad_bits = 32},
               Impl::Default, "gpt2_small");
  };
  Diagnostics diags;
  auto config = workload::llm::load_llm_config("configs/workloads/llm/gpt2_small.yaml", diags);
  ASSERT_TRUE(config) << diags.format_all();
  config->max_positions = 128;
  const auto graph = workload::llm::try_build_llm(
      *config, {.kind = workload::llm::PhaseKind::Training, .batch = 2, .seq_len = 128}, {},
      diags);
  ASSERT_TRUE(graph) << diags.format_all();
  std::string why;
  // As a training step prices it: at the arch's training clock (arch::training_step_view).
  const arch::HardwareModel stepping(arch::training_step_view(p.hardware().spec()));
  const auto ops = price_graph(*graph, mapper::FusionMode::Epilogue, "", stepping, false, why);
  ASSERT_TRUE(ops) << why;
  double opt = 0;
  for (const PredictedPart& part : ops->parts)
    if (part.name.ends_with(".adamw")) opt += part.seconds;
  const double fb = ops->seconds - opt;
  ASSERT_GT(opt, 0);
  EXPECT_NEAR(seconds(p, train(1, 1)), fb + opt, 1e-12);
  EXPECT_NEAR(seconds(p, train(3, 1)), 3 * fb + opt, 1e-12);
  const auto step = sim::training::price_training_step(
      *config, 128, {.dp = 8, .micro_batch_size = 2, .micro_batches = 1, .zero = 3},
      {.grad_reduce = DataType::Fp32}, p.hardware(), {.fusion = mapper::FusionMode::Epilogue},
      diags);
  ASSERT_TRUE(step) << diags.format_all();
  EXPECT_NEAR(seconds(p, train(1, 8)), step->step_s, 1e-12);
  EXPECT_GE(seconds(p, train(1, 8)), fb + opt / 8 - 1e-12);
  // Tensor parallelism inside the node is priced; what the hardware cannot hold is an error.
  EXPECT_TRUE(p.predict(train(1, 4, 2), why)) << why;
  why.clear();
  EXPECT_FALSE(p.predict(train(1, 16), why));
  EXPECT_EQ(why, "layout: tp 1 x pp 1 x dp 16 = 16 chips, but 'nvidia-h200-sxm' joins 8 "
                 "(interconnect.chips)");
  EXPECT_EQ(classes_of(Kernel::LlmTrain), std::vector{CaseClass::Training});
  // fp8=1, sp=1 and param_overlap=1 reach the step model as Transformer Engine's FP8 precision,
  // sequence parallelism and ZeRO 1's all-gather under the next forward.
  const Measurement te = row(Kernel::LlmTrain, DType::Bf16,
                             {.batch = 2,
                              .seq = 128,
                              .tp = 2,
                              .grad_accum = 1,
                              .dp = 4,
                              .pp = 1,
                              .vp = 1,
                              .zero = 1,
                              .grad_bits = 32,
                              .fp8 = 1,
                              .sp = 1,
                              .param_overlap = 1},
                             Impl::Default, "gpt2_small");
  sim::training::Framework framework{.grad_reduce = DataType::Fp32,
                                     .precision = workload::llm::Precision::Fp8,
                                     .overlap_param_gather = true};
  const auto te_step = sim::training::price_training_step(
      *config, 128,
      {.tp = 2,
       .dp = 4,
       .micro_batch_size = 2,
       .micro_batches = 1,
       .zero = 1,
       .sequence_parallel = true},
      framework, p.hardware(), {.fusion = mapper::FusionMode::Epilogue}, diags);
  ASSERT_TRUE(te_step) << diags.format_all();
  EXPECT_NEAR(seconds(p, te), te_step->step_s, 1e-12);
}

// Decode attention of the per_head class (TensorRT-LLM's masked MHA): b 8, 64 query heads over
// 8 KV heads (group 8), a KV cache of 4096 tokens, d 128, fp16. By hand:
//   pairs = 8 x 64 x 4096 = 2^21; MACs = 2^21 x 2 x 128 = 2^29 on the CUDA cores at 128 fp32
//   FMAs per SM per cycle; one block per query head: 512 blocks in 4 waves of 132, efficiency
//   512 / 528: matrix = 2^29 / (128 x 132 x 1.83e9 x 512 / 528) = 17.90 us
//   DRAM read once: Q and O 2 x 8 x 64 x 128 x 2 B = 262144 B, K and V 2 x 8 x 8 x 4096 x 128 x 2 B
//   = 2^27 B; per_head re-reads K and V 7 more times, decode_kv_reread of them from DRAM
TEST(PublishedPricing, PerHeadDecodeAttentionReReadsItsGroupsKvHead) {
  namespace an = sim::analytical;
  constexpr double kKv = 134217728.0;
  constexpr double kQo = 262144.0;
  const Shape shape{.batch = 8, .heads = 64, .seq = 4096, .head_dim = 128, .kv_heads = 8};
  const auto decode = row(Kernel::AttentionDecode, DType::Fp16, shape);
  // grouped (the default): K and V once, 4 us + (2^27 + 262144) B / 4.8 TB/s = 4 us + 28.02 us.
  EXPECT_NEAR(seconds(Predictor(pinned()), decode), 4e-6 + (kKv + kQo) / 4.8e12, 2 * kCycle);
  // per_head with half the re-reads from DRAM: + 7 x 0.5 x 2^27 B: 4 us + 125.88 us.
  arch::ArchSpec spec = pinned();
  spec.calibration.decode_attention = arch::DecodeAttention::PerHead;
  spec.calibration.decode_kv_reread = 0.5;
  EXPECT_NEAR(seconds(Predictor(spec), decode), 4e-6 + (kKv * 4.5 + kQo) / 4.8e12, 2 * kCycle);
  // Its arithmetic on the CUDA cores, and the softmax after it on the same warps (the exps, 2^21 on
  // 16 x 132 special-function units, 0.54 us, outlast the 6 ops a pair on 128 x 132 lanes).
  const arch::HardwareModel hw(spec);
  const an::AttentionShape work{.batch = 8, .heads = 64, .kv_heads = 8, .q_len = 1,
                                .kv_len = 4096, .head_dim = 128, .pairs = 2097152, .block = 128,
                                .precision = DataType::Fp16, .softmax_precision = DataType::Fp32,
                                .reads = kKv + kQo / 2, .writes = kQo / 2, .backward = false};
  std::string why;
  const an::FusedAttentionCost c =
      an::fused_attention_cost(work, arch::AttentionImpl::Fa3, hw, true, std::nullopt, why);
  EXPECT_TRUE(why.empty()) << why;
  EXPECT_TRUE(c.per_head);
  const double matrix = 536870912.0 / (128 * kSms * kClock * 512.0 / 528.0);
  EXPECT_NEAR(c.matrix_seconds, matrix, 1e-12);
  EXPECT_NEAR(c.compute_seconds, matrix + 2097152.0 / (16 * kSms * kClock), 2 * kCycle);
  EXPECT_NEAR(c.dram_bytes, kKv * 4.5 + kQo, 1.0);
  // Every re-read hitting L2 leaves the DRAM bytes of the grouped kernel.
  spec.calibration.decode_kv_reread = 0.0;
  EXPECT_NEAR(seconds(Predictor(spec), decode), 4e-6 + (kKv + kQo) / 4.8e12, 2 * kCycle);
}

// Decode attention of the fa2_forward class (PyTorch's SDPA flash backend: FlashAttention-2's
// forward kernel with one query), on the pinned H200 (mma.sync at 2048 fp16 MACs per SM per
// cycle, 132 SMs at 1.83 GHz, 4.8 TB/s, fixed costs 4 us, no tile overhead). By hand:
//   b 16, 32 heads (no GQA), 4096 keys, d 64, fp16. 16 x 32 = 512 blocks fill 80% of 132 SMs:
//   one split, the 128 x 128 tile. pairs = 16 x 32 x 4096 = 2^21; each query costs the tile's
//   128 rows: MACs = 2^21 x 128 x 128 = 2^35, in 4 waves of 132 (efficiency 512 / 528):
//     matrix  = 2^35 / (2048 x 132 x 1.83e9 x 512 / 528) = 71.62 us
//   the softmax over the padded rows, 2^28 elements: 2^28 exps on 16 x 132 special-function
//   units = 69.45 us (outlasting 5.5 ops an element, 5 + 64 / 128 keys, on 128 x 132 lanes:
//   47.75 us), after the matrix on the same warps: compute = 141.07 us. DRAM: K and V
//   2 x 16 x 32 x 4096 x 64 x 2 = 2^29 B, Q and O 2 x 65,536 B: 111.88 us. Compute-bound:
//   4 us + 141.07 us, where the grouped class (the query padded to wgmma's 64 rows: 35.8 us of
//   matrix) is memory-bound at 4 us + 111.88 us.
//   b 1, 32 heads, 1024 keys, d 128: 32 blocks take 4 splits (fa2_num_splits) of the split
//   kernel's 64 x 128 tile; the partial outputs, 4 x 32 x (128 + 1) fp32 values, are written and
//   read back (132,096 B): DRAM = 2^24 + 16,384 + 132,096 B = 3.526 us; the matrix, 32,768 pairs
//   x 64 x 256 MACs on 128 of 132 SMs, 1.12 us, and the softmax, 2^21 exps, 0.54 us, are shorter.
//   The combine kernel adds the vector fixed cost: 4 + 4 + 3.526 us.
TEST(PublishedPricing, Fa2ForwardDecodePadsItsQueryToTheKernelsTile) {
  const Predictor p(pinned());
  const Shape big{.batch = 16, .heads = 32, .seq = 4096, .head_dim = 64, .kv_heads = 32};
  const double matrix = 34359738368.0 / (2048 * kSms * kClock * 512.0 / 528.0);
  const double softmax = 268435456.0 / (16 * kSms * kClock);
  EXPECT_NEAR(seconds(p, row(Kernel::AttentionDecode, DType::Fp16, big, Impl::Fa2Forward)),
              4e-6 + matrix + softmax, 4 * kCycle);
  EXPECT_NEAR(seconds(p, row(Kernel::AttentionDecode, DType::Fp16, big, Impl::Grouped)),
              4e-6 + (536870912.0 + 131072.0) / 4.8e12, 2 * kCycle);
  const Shape one{.batch = 1, .heads = 32, .seq = 1024, .head_dim = 128, .kv_heads = 32};
  std::string why;
  const auto split =
      p.predict(row(Kernel::AttentionDecode, DType::Fp16, one, Impl::Fa2Forward), why);
  ASSERT_TRUE(split) << why;
  ASSERT_EQ(split->parts.size(), 1u);
  EXPECT_NEAR(split->parts[0].dram_bytes, 16777216.0 + 16384.0 + 132096.0, 1.0);
  EXPECT_NEAR(split->seconds, 8e-6 + (16777216.0 + 16384.0 + 132096.0) / 4.8e12, 2 * kCycle);
  EXPECT_NE(split->model.find("fa2_forward decode (4 splits)"), std::string::npos) << split->model;
}

// MLA's absorbed decode (FlashMLA's row: value_dim below head_dim): the values are the latent
// rows' first 512 columns, so the cache is read once. Batch 8, 16 heads over one KV head, 4096
// keys, d 576, bf16: the cache 8 x 4096 x 576 x 2 = 37,748,736 B, Q 8 x 16 x 576 x 2 = 147,456,
// O 8 x 16 x 512 x 2 = 131,072. The same shape with values of their own (value_dim = head_dim)
// reads K and V, 576 wide each, and writes O 576 wide (as Q).
TEST(PublishedPricing, MlaDecodeReadsItsLatentCacheOnce) {
  const Shape mla{
      .batch = 8, .heads = 16, .seq = 4096, .head_dim = 576, .kv_heads = 1, .value_dim = 512};
  const Predictor p(pinned());
  const auto latent = row(Kernel::AttentionDecode, DType::Bf16, mla);
  std::string why;
  const auto priced = p.predict(latent, why);
  ASSERT_TRUE(priced) << why;
  ASSERT_EQ(priced->parts.size(), 1u);
  EXPECT_NEAR(priced->parts[0].dram_bytes, 37'748'736.0 + 147'456.0 + 131'072.0, 1.0);
  Shape own = mla;
  own.value_dim = 576;
  const auto separate = p.predict(row(Kernel::AttentionDecode, DType::Bf16, own), why);
  ASSERT_TRUE(separate) << why;
  ASSERT_EQ(separate->parts.size(), 1u);
  EXPECT_NEAR(separate->parts[0].dram_bytes, 2 * 37'748'736.0 + 2 * 147'456.0, 1.0);
}

TEST(PublishedPricing, AnLlmRowNamesItsDecodeAttentionAndPaysTheRuntimesStepCost) {
  const Shape shape{.batch = 4, .input_len = 512, .output_len = 3, .tp = 1};
  const auto generate = [&](Impl impl, const std::string& model) {
    return row(Kernel::LlmGenerate, DType::Fp16, shape, impl, model);
  };
  arch::ArchSpec spec = pinned();
  const Predictor base(spec, {.llm_dir = "configs/workloads/llm"});
  // LLaMA-2-7B has no GQA (group 1): per_head reads nothing more from DRAM; its decode attention
  // is memory-bound either way (K and V of 4 x 32 heads x 512 tokens, fp16: 33.5 MB a layer,
  // 7 us, against 4 x 32 x 512 x 256 MACs on the CUDA cores, 0.5 us), so the row is unchanged.
  EXPECT_NEAR(seconds(base, generate(Impl::PerHead, "llama2_7b")),
              seconds(base, generate(Impl::Grouped, "llama2_7b")), 1e-12);
  // LLaMA-2-70B (group 8) with every re-read from DRAM (decode_kv_reread's default, 1): a decode
  // step of 64 sequences at 2048 tokens reads per layer its weights (1.71 GB fp16) and K and V
  // (64 x 8 x 2048 x 128 x 2 x 2 B = 0.54 GB), and per_head 7 x 0.54 GB more: 2.6x the bytes,
  // so the memory-bound step takes more than twice as long.
  const auto decode = [&](Impl impl) {
    return row(Kernel::LlmDecode, DType::Fp16,
               {.batch = 64, .input_len = 2048, .output_len = 1, .tp = 1}, impl, "llama2_70b");
  };
  EXPECT_GT(seconds(base, decode(Impl::PerHead)), 2 * seconds(base, decode(Impl::Grouped)));
  // The runtime's step cost: once for the prefill and once per decode step, output_len = 3 steps.
  spec.calibration.llm_step_fixed_cost = Seconds{100e-6};
  const Predictor stepped(spec, {.llm_dir = "configs/workloads/llm"});
  EXPECT_NEAR(seconds(stepped, generate(Impl::Default, "llama2_7b")),
              seconds(base, generate(Impl::Default, "llama2_7b")) + 3 * 100e-6, 1e-12);
}

// An eager row on an arch that states no calibration.eager_issue_time (the pinned fixture's 0 us
// removed): priced as if launched from a CUDA graph, the host left out, and the model text says so
// (kEagerUnpriced), for prefill and training rows alike; an arch that states 0 us is priced as it
// says. With an issue time the host's part is priced: the prefill's kernels cannot start faster
// than one per 1 ms, so it takes longer.
TEST(PublishedPricing, AnEagerRowWithNoHostIssueTimeIsALowerBoundThatSaysSo) {
  arch::ArchSpec spec = pinned();
  spec.calibration.eager_issue_time.reset();
  const Predictor p(spec, {.llm_dir = "configs/workloads/llm"});
  Measurement graph = row(Kernel::LlmPrefill, DType::Bf16, {.batch = 1, .input_len = 128, .tp = 1},
                          Impl::Default, "llama2_7b");
  Measurement eager = graph;
  eager.launch = Launch::Eager;
  std::string why;
  const auto g = p.predict(graph, why);
  const auto e = p.predict(eager, why);
  ASSERT_TRUE(g && e) << why;
  EXPECT_NEAR(e->seconds, g->seconds, 1e-12);
  EXPECT_EQ(g->model.find(kEagerUnpriced), std::string::npos);
  EXPECT_NE(e->model.find(kEagerUnpriced), std::string::npos);
  Measurement train = row(Kernel::LlmTrain, DType::Bf16,
                          {.batch = 2, .seq = 128, .tp = 1, .grad_accum = 1, .dp = 1, .pp = 1,
                           .vp = 1, .grad_bits = 32},
                          Impl::Default, "gpt2_small");
  train.launch = Launch::Eager;
  const auto t = p.predict(train, why);
  ASSERT_TRUE(t) << why;
  EXPECT_NE(t->model.find(kEagerUnpriced), std::string::npos);
  // An arch that states 0 us says the host takes no time: nothing is left out.
  spec.calibration.eager_issue_time = Seconds{0};
  const auto zero = Predictor(spec, {.llm_dir = "configs/workloads/llm"}).predict(eager, why);
  ASSERT_TRUE(zero) << why;
  EXPECT_EQ(zero->model.find(kEagerUnpriced), std::string::npos);
  spec.calibration.eager_issue_time = Seconds{1e-3};
  const auto issued = Predictor(spec, {.llm_dir = "configs/workloads/llm"}).predict(eager, why);
  ASSERT_TRUE(issued) << why;
  EXPECT_GT(issued->seconds, g->seconds);
  EXPECT_EQ(issued->model.find(kEagerUnpriced), std::string::npos);
}

// A row run by Hugging Face transformers prices LlamaForCausalLM's eager ops (the builder's
// Runtime::HfTransformers), unfused. With the host issuing a kernel every 1 ms, far longer than
// any kernel of a batch-1 decode step on the pinned H200 (the largest, the LM head's 262 MB of
// weights, takes 55 us), the step is host-bound: 1300 kernels (40 a layer x 32 + 20 a forward,
// derived in workloads/llm/tests/llm_builder_test.cpp) end 1299 issue times plus the last
// kernel (the argmax, its 4 us fixed cost and a few bytes) after the first is issued.
TEST(PublishedPricing, AnHfTransformersRowIsPricedAsItsEagerOps) {
  arch::ArchSpec spec = pinned();
  spec.calibration.eager_issue_time = Seconds{1e-3};
  const Predictor p(spec, {.llm_dir = "configs/workloads/llm"});
  Measurement hf =
      row(Kernel::LlmDecode, DType::Bf16, {.batch = 1, .input_len = 512, .output_len = 1, .tp = 1},
          Impl::Default, "llama2_7b");
  hf.launch = Launch::Eager;
  hf.runtime = RowRuntime::HfTransformers;
  std::string why;
  const auto priced = p.predict(hf, why);
  ASSERT_TRUE(priced) << why;
  EXPECT_NEAR(priced->seconds, 1299e-3 + 4e-6, 1e-6);
  EXPECT_NE(priced->model.find("as Hugging Face transformers' eager ops"), std::string::npos)
      << priced->model;
  // coda's own kernels for the same step are fewer: the host waits less.
  Measurement own = hf;
  own.runtime = RowRuntime::Default;
  EXPECT_LT(seconds(p, own), 1e-3 * 32 * 20);
  // A training row under the runtime is GPT2LMHeadModel's under autocast: a LLaMA step is refused,
  // GPT-2's priced with transformers' dropouts and written-out GELU, more work than coda's own
  // autocast step of the same model.
  Measurement train = row(Kernel::LlmTrain, DType::Bf16,
                          {.batch = 2,
                           .seq = 128,
                           .tp = 1,
                           .grad_accum = 1,
                           .dp = 1,
                           .pp = 1,
                           .vp = 1,
                           .grad_bits = 32},
                          Impl::Default, "llama2_7b");
  train.runtime = RowRuntime::HfTransformers;
  train.shape.autocast = 1;
  EXPECT_FALSE(p.predict(train, why));
  EXPECT_NE(why.find("modelled on GPT2LMHeadModel's code"), std::string::npos) << why;
  train.model = "gpt2_small";
  const auto gpt2 = p.predict(train, why);
  ASSERT_TRUE(gpt2) << why;
  Measurement coda_kernels = train;
  coda_kernels.runtime = RowRuntime::Default;
  EXPECT_GT(gpt2->seconds, seconds(p, coda_kernels));
}

TEST(PublishedPricing, RowsCodaCannotPriceSayWhy) {
  const Predictor h200(pinned(), {.llm_dir = "configs/workloads/llm"});
  std::string why;
  arch::ArchSpec no_nvls = pinned();
  no_nvls.interconnect->nccl->erase(arch::NcclAlgorithm::Nvls);  // as on an A100
  EXPECT_FALSE(Predictor(no_nvls).predict(
      row(Kernel::AllReduce, DType::Bf16, {.bytes = 1024, .ranks = 8}, Impl::Nvls), why));
  EXPECT_EQ(why, "'nvidia-h200-sxm' states no NVLS (NVLink SHARP) pair in interconnect.nccl");
  why.clear();
  EXPECT_FALSE(h200.predict(row(Kernel::AllReduce, DType::Bf16, {.bytes = 1024, .ranks = 16}),
                            why));
  EXPECT_EQ(why, "16 ranks, but the interconnect of 'nvidia-h200-sxm' joins 8 chips");
  why.clear();
  EXPECT_FALSE(h200.predict(row(Kernel::LlmPrefill, DType::Bf16,
                                {.batch = 1, .input_len = 8, .tp = 1}, Impl::Default, "llama9"),
                            why));
  EXPECT_NE(why.find("model 'llama9'"), std::string::npos) << why;
  Diagnostics diags;
  const auto a100 = arch::load_arch("configs/arch/nvidia_a100_sxm_80gb.yaml", diags);
  ASSERT_TRUE(a100) << diags.format_all();
  why.clear();
  EXPECT_FALSE(Predictor(a100->spec).predict(
      row(Kernel::AttentionFwd, DType::Fp16,
          {.batch = 1, .heads = 8, .seq = 128, .head_dim = 64, .kv_heads = 8}, Impl::Fa3),
      why));
  EXPECT_EQ(why, "FlashAttention-3's kind needs wgmma, which the tensor cores of "
                 "'nvidia-a100-sxm-80gb' lack");
  // The classes the report groups them in.
  EXPECT_EQ(classes_of(Kernel::Gemm), std::vector{CaseClass::Gemm});
  EXPECT_EQ(classes_of(Kernel::AttentionDecode), std::vector{CaseClass::Attention});
  EXPECT_EQ(classes_of(Kernel::Copy), std::vector{CaseClass::Memory});
  EXPECT_EQ(classes_of(Kernel::AllReduce), std::vector{CaseClass::Collective});
  EXPECT_EQ(classes_of(Kernel::LlmGenerate), std::vector{CaseClass::Llm});
  EXPECT_EQ(classes_of(Kernel::Network), std::vector{CaseClass::Network});
}

}  // namespace
}  // namespace coda::validation
