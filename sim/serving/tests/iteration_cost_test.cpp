#include "sim/serving/iteration_cost.h"

#include <gtest/gtest.h>

#include "arch/arch_spec.h"
#include "core/results.h"
#include "sim/analytical/cluster_collective.h"
#include "sim/driver.h"
#include "workloads/llm/llm_config.h"

namespace coda::sim::serving {
namespace {

namespace llm = workload::llm;

const char* kArch = "configs/arch/nvidia_h100_sxm.yaml";
const char* kModel = "configs/workloads/llm/llama2_7b.yaml";

arch::HardwareModel load_hw(const char* file) {
  Diagnostics diags;
  auto spec = arch::load_arch(std::filesystem::path(file), diags);
  EXPECT_TRUE(spec) << diags.format_all();
  return arch::HardwareModel(spec->spec);
}

llm::LlmConfig load_model(const char* file) {
  Diagnostics diags;
  auto model = llm::load_llm_config(file, diags);
  EXPECT_TRUE(model) << diags.format_all();
  return *model;
}

// `coda run --llm` of one phase, fused as `fusion`.
double coda_run_seconds(llm::PhaseKind kind, std::uint64_t batch, std::uint64_t seq,
                        std::uint64_t tp, mapper::FusionMode fusion, const llm::Quantization& quant,
                        const char* model = kModel) {
  RunFiles files;
  files.arch = kArch;
  files.fusion = fusion;
  files.source =
      workload::LlmSource{.config = model,
                          .phase = {.kind = kind, .batch = batch, .seq_len = seq, .quant = quant},
                          .parallelism = {.tp = tp}};
  Diagnostics diags;
  const auto run = run_files(files, diags);
  EXPECT_TRUE(run) << diags.format_all();
  return run ? results::run_time(*run).value : 0;
}

// TP and a quantization scheme (with an fp8 KV cache when quantized).
class IterationCost : public ::testing::TestWithParam<std::tuple<std::uint64_t, const char*>> {};

// The pieces sum to coda run's time for a uniform batch: a decode of 8 sequences with 511 tokens
// cached (each attends to 512 keys) is `coda run --phase decode --batch 8 --seq 511`, and a
// prefill of one 512-token prompt is `--phase prefill --batch 1 --seq 512`. The pricer splits
// each graph into a layer and the rest and prices the attention on its own; the sum differs from
// the whole only where pricing one op depends on its neighbours. The kv_write copies of the
// token graph stand in for the decode graph's kv_append: the same bytes. Quantized models the
// same (the quantized GEMMs, inputs and KV cache in the pieces as in coda run).
TEST_P(IterationCost, PiecesSumToCodaRunForUniformBatches) {
  const auto [tp, scheme] = GetParam();
  std::string error;
  llm::Quantization quant = llm::parse_quantization(scheme, error).value();
  if (quant.any()) quant.kv_cache = DataType::Fp8E4M3;
  const arch::HardwareModel hw = load_hw(kArch);
  Diagnostics diags;
  auto pricer = IterationPricer::make(
      load_model(kModel), hw, {.tp = tp, .fusion = mapper::FusionMode::Epilogue, .quant = quant},
      diags);
  ASSERT_TRUE(pricer) << diags.format_all();

  IterationBatch decode;
  decode.decode_sequences = 8;
  decode.decode_context_sum = std::uint64_t{8} * 512;
  decode.decode_window_context_sum = decode.decode_context_sum;  // below the 4096 window
  const double decode_run =
      coda_run_seconds(llm::PhaseKind::Decode, 8, 511, tp, mapper::FusionMode::Epilogue, quant);
  EXPECT_NEAR(pricer->price(decode).total(), decode_run, 1e-3 * decode_run);

  IterationBatch prefill;
  prefill.prefill.push_back({.tokens = 512, .cached = 0, .samples = true});
  const double prefill_run =
      coda_run_seconds(llm::PhaseKind::Prefill, 1, 512, tp, mapper::FusionMode::Epilogue, quant);
  EXPECT_NEAR(pricer->price(prefill).total(), prefill_run, 1e-3 * prefill_run);
}
INSTANTIATE_TEST_SUITE_P(TpAndScheme, IterationCost,
                         ::testing::Values(std::tuple{1, "none"}, std::tuple{2, "none"},
                                           std::tuple{1, "fp8"}, std::tuple{2, "w4a16"}));

// Gemma 2 27B the same way: its soft-capped attention priced on its own with the cap, and the
// final cap over the logits with the head (once per sampled sequence), so the pieces still sum
// to coda run's decode and prefill. (27B: head_dim 128, as LLaMA's. The 2B and 9B, head_dim
// 256, differ by 6 us in a 4.7 ms prefill with or without the caps and post norms.)
TEST(IterationCost, Gemma2PiecesSumToCodaRun) {
  const char* model = "configs/workloads/llm/gemma2_27b.yaml";
  const arch::HardwareModel hw = load_hw(kArch);
  Diagnostics diags;
  auto pricer =
      IterationPricer::make(load_model(model), hw, {.fusion = mapper::FusionMode::Epilogue}, diags);
  ASSERT_TRUE(pricer) << diags.format_all();
  IterationBatch decode;
  decode.decode_sequences = 8;
  decode.decode_context_sum = std::uint64_t{8} * 512;
  decode.decode_window_context_sum = decode.decode_context_sum;  // below the 4096 window
  const double decode_run =
      coda_run_seconds(llm::PhaseKind::Decode, 8, 511, 1, mapper::FusionMode::Epilogue, {}, model);
  EXPECT_NEAR(pricer->price(decode).total(), decode_run, 1e-3 * decode_run);
  IterationBatch prefill;
  prefill.prefill.push_back({.tokens = 512, .cached = 0, .samples = true});
  const double prefill_run =
      coda_run_seconds(llm::PhaseKind::Prefill, 1, 512, 1, mapper::FusionMode::Epilogue, {}, model);
  EXPECT_NEAR(pricer->price(prefill).total(), prefill_run, 1e-3 * prefill_run);
}

// Beyond the sliding window the pieces still sum to `coda run`: Mistral 7B (a 4096 window on
// every layer) and Gemma 2 27B (on every other layer), decoding 8 sequences over 8191 cached
// tokens (each windowed layer reads 4096 of the 8192 keys) and prefilling 8192 tokens. The
// test fails if the windowed layers are priced at the full context or the global ones at the
// window (checked by pricing every layer either way).
TEST(IterationCost, SlidingWindowPiecesSumToCodaRun) {
  const arch::HardwareModel hw = load_hw(kArch);
  for (const char* model :
       {"configs/workloads/llm/mistral_7b.yaml", "configs/workloads/llm/gemma2_27b.yaml"}) {
    Diagnostics diags;
    auto pricer = IterationPricer::make(load_model(model), hw,
                                        {.fusion = mapper::FusionMode::Epilogue}, diags);
    ASSERT_TRUE(pricer) << diags.format_all();
    IterationBatch decode;
    decode.decode_sequences = 8;
    decode.decode_context_sum = std::uint64_t{8} * 8192;
    decode.decode_window_context_sum = std::uint64_t{8} * 4096;
    const double decode_run = coda_run_seconds(llm::PhaseKind::Decode, 8, 8191, 1,
                                               mapper::FusionMode::Epilogue, {}, model);
    EXPECT_NEAR(pricer->price(decode).total(), decode_run, 1e-3 * decode_run) << model;
    IterationBatch prefill;
    prefill.prefill.push_back({.tokens = 8192, .cached = 0, .samples = true});
    const double prefill_run = coda_run_seconds(llm::PhaseKind::Prefill, 1, 8192, 1,
                                                mapper::FusionMode::Epilogue, {}, model);
    EXPECT_NEAR(pricer->price(prefill).total(), prefill_run, 1e-3 * prefill_run) << model;
  }
}

// DeepSeek-V2-Lite (MLA; layer 0 dense, layers 1-26 with experts) on H100 at TP 2: a prefill's
// pieces sum to coda run's prefill (the dense layer priced apart: pricing every layer as an
// expert layer would miss by the dense FFN's difference); a decode's attention piece is every
// layer's absorbed attention as coda run prices it (27 x its L*.attention op, over the latent
// rows). A replica's KV cache per token is the whole latent on each rank: 27 x 576 x 2 bytes.
TEST(IterationCost, MlaAndDenseLayersSumToCodaRun) {
  const char* model = "configs/workloads/llm/deepseek_v2_lite.yaml";
  const arch::HardwareModel hw = load_hw(kArch);
  Diagnostics diags;
  auto pricer = IterationPricer::make(load_model(model), hw,
                                      {.tp = 2, .fusion = mapper::FusionMode::Epilogue}, diags);
  ASSERT_TRUE(pricer) << diags.format_all();
  IterationBatch prefill;
  prefill.prefill.push_back({.tokens = 512, .cached = 0, .samples = true});
  const double prefill_run =
      coda_run_seconds(llm::PhaseKind::Prefill, 1, 512, 2, mapper::FusionMode::Epilogue, {}, model);
  EXPECT_NEAR(pricer->price(prefill).total(), prefill_run, 1e-3 * prefill_run);
  EXPECT_GT(pricer->dense_layer(512), 0.0);
  EXPECT_NE(pricer->dense_layer(512), pricer->layer_tokens(512));

  RunFiles files;
  files.arch = kArch;
  files.fusion = mapper::FusionMode::Epilogue;
  files.source =
      workload::LlmSource{.config = model,
                          .phase = {.kind = llm::PhaseKind::Decode, .batch = 8, .seq_len = 511},
                          .parallelism = {.tp = 2}};
  const auto run = run_files(files, diags);
  ASSERT_TRUE(run) << diags.format_all();
  double attention = 0;
  for (const results::OpResult& op : run->ops)
    if (op.name.ends_with(".attention"))
      attention += static_cast<double>(op.cost.cycles.value) / hw.clock().value;
  IterationBatch decode;
  decode.decode_sequences = 8;
  decode.decode_context_sum = std::uint64_t{8} * 512;
  EXPECT_NEAR(pricer->price(decode).attention, attention, 1e-6 * attention);
  EXPECT_EQ(pricer->memory(512).kv_bytes_per_token, Bytes{27ULL * 576 * 2});
}

// An encoder (BERT) has no decode to serve: the pricer refuses it, naming the phase to price.
TEST(IterationCostParts, RefusesAnEncoder) {
  const arch::HardwareModel hw = load_hw(kArch);
  Diagnostics diags;
  EXPECT_FALSE(
      IterationPricer::make(load_model("configs/workloads/llm/bert_base.yaml"), hw, {}, diags));
  ASSERT_EQ(diags.error_count(), 1u) << diags.format_all();
  EXPECT_EQ(diags.all()[0].path, "model");
  EXPECT_NE(diags.all()[0].message.find("is an encoder"), std::string::npos);
}

TEST(IterationCostParts, AreMemoisedAndAddUp) {
  const arch::HardwareModel hw = load_hw(kArch);
  Diagnostics diags;
  auto pricer = IterationPricer::make(load_model(kModel), hw, {}, diags);
  ASSERT_TRUE(pricer) << diags.format_all();
  IterationBatch mixed;
  mixed.decode_sequences = 3;
  mixed.decode_context_sum = 100 + 200 + 301;  // mean 200.33, priced at 201 keys
  mixed.prefill = {{.tokens = 64, .cached = 128, .samples = false},
                   {.tokens = 64, .cached = 128, .samples = false},
                   {.tokens = 32, .cached = 0, .samples = true}};
  EXPECT_EQ(mixed.tokens(), 3u + 64 + 64 + 32);
  EXPECT_EQ(mixed.sampling(), 4u);
  const IterationTime t = pricer->price(mixed);
  const std::size_t priced = pricer->graphs_priced();
  const double layers = 32;  // LLaMA-2-7B
  EXPECT_DOUBLE_EQ(t.linear, pricer->model_tokens(163) + layers * pricer->layer_tokens(163));
  EXPECT_DOUBLE_EQ(t.head, pricer->head(4));
  // The two 64-token chunks of one shape run as one op of batch 2.
  EXPECT_DOUBLE_EQ(t.attention, layers * (pricer->attention(3, 1, 201, false) +
                                          pricer->attention(2, 64, 192, true) +
                                          pricer->attention(1, 32, 32, true)));
  EXPECT_EQ(pricer->graphs_priced(), priced);  // every part was kept
  EXPECT_DOUBLE_EQ(pricer->price(mixed).total(), t.total());
  EXPECT_EQ(pricer->graphs_priced(), priced);
  // Longer contexts cost more; no sequences cost nothing.
  EXPECT_GT(pricer->attention(3, 1, 4001, false), pricer->attention(3, 1, 201, false));
  EXPECT_EQ(pricer->head(0), 0.0);
  EXPECT_EQ(pricer->price({}).total(), 0.0);
}

TEST(IterationCostParts, MemoryOfAReplica) {
  const arch::HardwareModel hw = load_hw(kArch);
  Diagnostics diags;
  auto pricer = IterationPricer::make(load_model(kModel), hw, {.tp = 2}, diags);
  ASSERT_TRUE(pricer);
  const ReplicaMemory m = pricer->memory(2048);
  // KV bytes per token: 2 (K, V) x 32 layers x 32 kv heads x 128 x 2 bytes = 512 KiB, half a rank.
  EXPECT_EQ(m.kv_bytes_per_token.value, 256u * 1024);
  // Weights: 6,738,415,616 bf16 parameters; TP 2 splits all but the norms (65 x 4096 each).
  const std::uint64_t norms = 65ull * 4096;
  EXPECT_EQ(m.weights.value, ((6738415616ull - norms) / 2 + norms) * 2);
  EXPECT_GT(m.activations.value, 0u);
  // FP8 weights and KV cache: a byte a linear weight (6,476,005,376 of them, halved by TP 2),
  // the embedding and LM head (2 x 32000 x 4096, halved) and the norms in bf16; the cache's
  // 128 KiB a token on a rank.
  std::string error;
  llm::Quantization fp8 = llm::parse_quantization("fp8", error).value();
  fp8.kv_cache = DataType::Fp8E4M3;
  auto quantized = IterationPricer::make(load_model(kModel), hw, {.tp = 2, .quant = fp8}, diags);
  ASSERT_TRUE(quantized) << diags.format_all();
  const ReplicaMemory q = quantized->memory(2048);
  EXPECT_EQ(q.kv_bytes_per_token.value, 128u * 1024);
  EXPECT_EQ(q.weights.value, 6476005376ull / 2 + 262144000ull / 2 * 2 + norms * 2);
}

// Two pipeline stages of LLaMA-2-7B at TP 1: 16 layers a stage. Weights: a layer is 4 x 4096^2
// (attention) + 3 x 4096 x 11008 (MLP) + 2 x 4096 (norms) = 202,383,360 parameters; the first
// stage adds the embedding (32000 x 4096 = 131,072,000), the last the final norm (4096) and the
// LM head (131,072,000): the last holds the most, 16 x 202,383,360 + 131,076,096 = 3,369,209,856
// bf16 parameters. Its chips hold half of every token's cache: 256 KiB.
TEST(IterationCostParts, PipelineStagesHoldTheirLayers) {
  const arch::HardwareModel hw = load_hw(kArch);
  Diagnostics diags;
  auto pricer = IterationPricer::make(load_model(kModel), hw, {.pp = 2}, diags);
  ASSERT_TRUE(pricer) << diags.format_all();
  EXPECT_EQ(pricer->pp(), 2u);
  const ReplicaMemory m = pricer->memory(2048);
  EXPECT_EQ(m.kv_bytes_per_token.value, 256u * 1024);
  EXPECT_EQ(m.weights.value, (16ull * 202383360 + 131076096) * 2);

  // An iteration's stages: each its 16 layers, the first with model(T), the last with head(S);
  // their layers' parts are equal (every layer is alike), and they add up to the iteration.
  IterationBatch b;
  b.decode_sequences = 8;
  b.decode_context_sum = 8ull * 512;
  b.prefill.push_back({256, 0, true});
  const IterationTime t = pricer->price(b);
  const std::vector<double> stages = pricer->stage_seconds(b, t);
  ASSERT_EQ(stages.size(), 2u);
  EXPECT_NEAR(stages[0] + stages[1], t.total(), 1e-12 * t.total());
  EXPECT_NEAR(stages[0] - pricer->model_tokens(b.tokens()), stages[1] - t.head, 1e-12);
  // The hop: the hidden states and the residual of 264 tokens, 2 x 264 x 4096 x 2 B, one send
  // between two chips of the node (TP 1: no all-gather) on the H100's links, priced as any
  // send/recv of that many bytes with a collective's fixed cost.
  std::string why;
  const auto send = analytical::price_cluster_collective(
      analytical::CollectiveKind::SendRecv, 2ull * 264 * 4096 * 2, 2, 2, hw, nullptr, why);
  ASSERT_TRUE(send) << why;
  EXPECT_DOUBLE_EQ(pricer->stage_transfer(264),
                   send->cost.seconds + hw.kernel_fixed_seconds(arch::KernelKind::Collective));
  EXPECT_GT(pricer->stage_transfer(264), 4325376.0 / 450e9);  // at most the link's rate
  // One stage: the whole iteration, nothing to pass on.
  auto one = IterationPricer::make(load_model(kModel), hw, {}, diags);
  ASSERT_TRUE(one);
  EXPECT_EQ(one->stage_seconds(b, t), std::vector<double>{t.total()});
  EXPECT_EQ(one->stage_transfer(264), 0.0);
}

// Swapping KV blocks to the host, as vLLM's V0 worker copies them: one cudaMemcpyAsync a block a
// layer a cache tensor, each the H100 preset's host_link copy_overhead (6 us) or its bytes at
// 64 GB/s, whichever is longer. LLaMA-2-7B at TP 1: a block of 16 tokens is 16 x 32 kv heads x
// 128 x 2 B = 128 KiB a layer a tensor, 131072 / 64e9 = 2.048 us < 6 us; 10 blocks are
// 10 x 2 x 32 = 640 copies: 640 x 6 us = 3.84 ms.
TEST(IterationCostParts, SwappingCopiesEachBlockOfEachLayerAndTensor) {
  arch::HardwareModel hw = load_hw(kArch);
  ASSERT_TRUE(hw.spec().host_link);
  EXPECT_EQ(hw.spec().host_link->bandwidth.value, 64e9);
  EXPECT_EQ(hw.spec().host_link->copy_overhead.value, 6e-6);
  Diagnostics diags;
  auto tp1 = IterationPricer::make(load_model(kModel), hw, {}, diags);
  ASSERT_TRUE(tp1) << diags.format_all();
  EXPECT_NEAR(tp1->swap_seconds(10, 16), 640 * 6e-6, 1e-15);
  // TP 2: each rank copies its 16 heads (64 KiB a copy) over its own link at once: the same
  // 640 copies a rank, the same time.
  auto tp2 = IterationPricer::make(load_model(kModel), hw, {.tp = 2}, diags);
  ASSERT_TRUE(tp2) << diags.format_all();
  EXPECT_NEAR(tp2->swap_seconds(10, 16), 640 * 6e-6, 1e-15);
  // Two pipeline stages: a stage's chips copy its 16 layers, 10 x 2 x 16 = 320 copies: 1.92 ms.
  auto pp2 = IterationPricer::make(load_model(kModel), hw, {.pp = 2}, diags);
  ASSERT_TRUE(pp2) << diags.format_all();
  EXPECT_NEAR(pp2->swap_seconds(10, 16), 320 * 6e-6, 1e-15);
  // MLA (DeepSeek-V2-Lite, 27 layers): one latent a layer, (512 + 64) x 2 B = 1152 B a token,
  // 18,432 B a block: 10 x 27 = 270 copies of 6 us: 1.62 ms.
  auto mla = IterationPricer::make(load_model("configs/workloads/llm/deepseek_v2_lite.yaml"), hw,
                                   {}, diags);
  ASSERT_TRUE(mla) << diags.format_all();
  EXPECT_NEAR(mla->swap_seconds(10, 16), 270 * 6e-6, 1e-15);
  // A link whose bytes take longer than the overhead: 1 us a copy, so each 128 KiB copy takes
  // 2.048 us: 640 x 2.048 us = 1.31072 ms.
  arch::ArchSpec spec = hw.spec();
  spec.host_link->copy_overhead = Seconds{1e-6};
  const arch::HardwareModel fast(spec);
  auto bytes = IterationPricer::make(load_model(kModel), fast, {}, diags);
  ASSERT_TRUE(bytes) << diags.format_all();
  EXPECT_NEAR(bytes->swap_seconds(10, 16), 640 * 2.048e-6, 1e-15);
}

TEST(IterationCostParts, RefusesPipelinesThatDoNotFit) {
  const arch::HardwareModel hw = load_hw(kArch);
  Diagnostics diags;
  EXPECT_FALSE(IterationPricer::make(load_model(kModel), hw, {.pp = 3}, diags));
  ASSERT_TRUE(diags.has_errors());
  EXPECT_EQ(diags.all()[0].path, "pp");
  EXPECT_NE(diags.all()[0].message.find("pp 3 does not divide the 32 layers"), std::string::npos)
      << diags.all()[0].message;
  // 8 x 2 = 16 chips: more than an HGX H100 board's 8.
  Diagnostics wide;
  EXPECT_FALSE(IterationPricer::make(load_model(kModel), hw, {.tp = 8, .pp = 2}, wide));
  ASSERT_TRUE(wide.has_errors());
  EXPECT_EQ(wide.all()[0].path, "pp");
  EXPECT_NE(wide.all()[0].message.find("tp 8 x pp 2 = 16 chips spans more than the 8"),
            std::string::npos)
      << wide.all()[0].message;
}

TEST(IterationCostParts, RefusesATpThatDoesNotDivideTheHeads) {
  const arch::HardwareModel hw = load_hw(kArch);
  Diagnostics diags;
  EXPECT_FALSE(IterationPricer::make(load_model(kModel), hw, {.tp = 3}, diags));
  ASSERT_TRUE(diags.has_errors());
  EXPECT_EQ(diags.all()[0].path, "tp");
}

}  // namespace
}  // namespace coda::sim::serving
