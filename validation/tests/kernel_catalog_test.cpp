#include "validation/kernel_catalog.h"

#include <algorithm>
#include <vector>

#include <gtest/gtest.h>

namespace coda::validation {
namespace {

std::vector<DType> dtypes_of(Kernel k) {
  const auto d = info(k).dtypes;
  return {d.begin(), d.end()};
}

TEST(KernelCatalog, NewDtypesHaveNamesAndSizes) {
  EXPECT_EQ(dtype_name(DType::Tf32), "tf32");
  EXPECT_EQ(dtype_name(DType::Fp8E4M3), "fp8_e4m3");
  EXPECT_EQ(dtype_bytes(DType::Tf32), 4u);  // stored as fp32
  EXPECT_EQ(dtype_bytes(DType::Fp8E4M3), 1u);
  EXPECT_EQ(all_dtypes().size(), 6u);
}

TEST(KernelCatalog, CodaBenchKernelsKeepTheirDtypesAndTakeNoImpl) {
  EXPECT_EQ(dtypes_of(Kernel::GemmCublas), (std::vector{DType::Fp16, DType::Bf16, DType::Fp32}));
  EXPECT_EQ(dtypes_of(Kernel::GemmCublasLt), (std::vector{DType::Fp16, DType::Bf16, DType::Int8}));
  EXPECT_EQ(dtypes_of(Kernel::AttentionFlash), (std::vector{DType::Fp16}));
  for (const KernelInfo& k : kernel_catalog()) {
    if (k.published_only) continue;
    EXPECT_TRUE(k.impls.empty()) << k.name;
    EXPECT_FALSE(takes_model(k.kernel)) << k.name;
    for (DType d : k.dtypes)
      EXPECT_TRUE(d != DType::Tf32 && d != DType::Fp8E4M3) << k.name;
  }
}

TEST(KernelCatalog, PublishedKernelsAsTheReadmeLists) {
  EXPECT_TRUE(info(Kernel::Gemm).published_only);
  EXPECT_EQ(info(Kernel::Gemm).name, "gemm");
  EXPECT_EQ(dtypes_of(Kernel::Gemm), (std::vector{DType::Fp16, DType::Bf16, DType::Fp8E4M3,
                                                  DType::Int8, DType::Tf32, DType::Fp32}));
  EXPECT_EQ(dtypes_of(Kernel::AttentionDecode),
            (std::vector{DType::Fp16, DType::Bf16, DType::Fp8E4M3}));
  EXPECT_EQ(dtypes_of(Kernel::Network), (std::vector{DType::Int8, DType::Fp16, DType::Fp32}));
  EXPECT_EQ(info(Kernel::PublishedLayerNorm).name, "layer_norm");
  EXPECT_EQ(info(Kernel::AttentionBwd).impls.size(), 4u);  // fa2, fa3, triton, unfused
  EXPECT_EQ(info(Kernel::AttentionFwdBwd).name, "attention_fwd_bwd");
  EXPECT_EQ(info(Kernel::AttentionFwdBwd).impls.size(), 4u);
  EXPECT_EQ(info(Kernel::AttentionDecode).impls.size(), 3u);  // grouped, per_head, fa2_forward
  EXPECT_EQ(info(Kernel::ReduceScatter).impls.front(), Impl::Ring);
  EXPECT_TRUE(takes_model(Kernel::LlmPrefill));
  EXPECT_TRUE(takes_model(Kernel::Network));
  EXPECT_FALSE(takes_model(Kernel::Gemm));
  std::size_t published = 0;
  for (const KernelInfo& k : kernel_catalog()) published += k.published_only ? 1 : 0;
  EXPECT_EQ(published, 19u);
  EXPECT_TRUE(takes_model(Kernel::LlmTrain));
  EXPECT_EQ(info(Kernel::LlmTrain).impls.size(), 4u);  // fa2, fa3, triton, unfused
}

TEST(KernelCatalog, OptionalKeysTakeTheirDefaults) {
  Shape gemm{.m = 8, .n = 8, .k = 8};
  const std::vector<std::string_view> mnk{"m", "n", "k"};
  fill_shape_defaults(ShapeKind::BatchedGemm, gemm, mnk);
  EXPECT_EQ(gemm.batch, 1u);
  Shape attention{.batch = 1, .heads = 32, .seq = 128, .head_dim = 64};
  const std::vector<std::string_view> given{"batch", "heads", "seq", "head_dim", "causal"};
  fill_shape_defaults(ShapeKind::AttentionGqa, attention, given);
  EXPECT_EQ(attention.kv_heads, 32u);  // = heads
  EXPECT_TRUE(shape_key_optional(ShapeKind::Conv, "pad"));
  EXPECT_FALSE(shape_key_optional(ShapeKind::DecodeGqa, "kv_heads"));  // decode names it
  EXPECT_TRUE(shape_key_may_be_zero("causal"));
  EXPECT_EQ(shape_text(ShapeKind::AttentionGqa, attention),
            "batch=1 heads=32 seq=128 head_dim=64 causal=0 kv_heads=32");
}

// Each expected value is worked out by hand beside it.
TEST(KernelCatalog, GemmOperationsAndBytes) {
  const Shape s{.m = 2, .n = 3, .k = 4, .batch = 5};
  // 2 * batch * m * n * k = 2 * 5 * 2 * 3 * 4 = 240.
  EXPECT_DOUBLE_EQ(operation_count(Kernel::Gemm, DType::Fp16, s), 240.0);
  // batch * (m k + k n + m n) * 2 B = 5 * (8 + 12 + 6) * 2 = 260 (C in fp16, the input type).
  EXPECT_DOUBLE_EQ(minimum_bytes(Kernel::Gemm, DType::Fp16, s), 260.0);
  // tf32 stores 4 B per element: 5 * 26 * 4 = 520.
  EXPECT_DOUBLE_EQ(minimum_bytes(Kernel::Gemm, DType::Tf32, s), 520.0);
  // fp8: 1 B per element: 130.
  EXPECT_DOUBLE_EQ(minimum_bytes(Kernel::Gemm, DType::Fp8E4M3, s), 130.0);
}

TEST(KernelCatalog, AttentionOperationsAndBytes) {
  // b = 2, h = 4, s = 8, d = 16: Q (and O) hold b h s d = 1024 elements.
  Shape mha{.batch = 2, .heads = 4, .seq = 8, .head_dim = 16};
  mha.kv_heads = 4;
  // 4 b h s^2 d = 4 * 2 * 4 * 64 * 16 = 32768.
  EXPECT_DOUBLE_EQ(operation_count(Kernel::AttentionFwd, DType::Fp16, mha), 32768.0);
  // Q, K, V, O of 1024 fp16 each: 4 * 1024 * 2 = 8192.
  EXPECT_DOUBLE_EQ(minimum_bytes(Kernel::AttentionFwd, DType::Fp16, mha), 8192.0);

  Shape gqa = mha;
  gqa.causal = 1;
  gqa.kv_heads = 1;
  // Causal halves it: 16384.
  EXPECT_DOUBLE_EQ(operation_count(Kernel::AttentionFwd, DType::Fp16, gqa), 16384.0);
  // K, V with one KV head: b * 1 * s * d = 256 each; (2 * 1024 + 2 * 256) * 2 B = 5120.
  EXPECT_DOUBLE_EQ(minimum_bytes(Kernel::AttentionFwd, DType::Fp16, gqa), 5120.0);
  // Backward: 2.5 x the causal forward = 40960.
  EXPECT_DOUBLE_EQ(operation_count(Kernel::AttentionBwd, DType::Bf16, gqa), 40960.0);
  // Q, O, dO, dQ (1024 each) and K, V, dK, dV (256 each): (4096 + 1024) * 2 B = 10240.
  EXPECT_DOUBLE_EQ(minimum_bytes(Kernel::AttentionBwd, DType::Bf16, gqa), 10240.0);
  // Forward + backward: 3.5 x the causal forward = 57344 (benchmark_flash_attention.py's
  // fwd_bwd count); the two kernels' bytes, 5120 + 10240 = 15360.
  EXPECT_DOUBLE_EQ(operation_count(Kernel::AttentionFwdBwd, DType::Bf16, gqa), 57344.0);
  EXPECT_DOUBLE_EQ(minimum_bytes(Kernel::AttentionFwdBwd, DType::Bf16, gqa), 15360.0);

  Shape decode{.batch = 2, .heads = 8, .seq = 100, .head_dim = 64};
  decode.kv_heads = 2;
  // 4 b h seq d = 4 * 2 * 8 * 100 * 64 = 409600.
  EXPECT_DOUBLE_EQ(operation_count(Kernel::AttentionDecode, DType::Bf16, decode), 409600.0);
  // K and V caches 2 * (2 * 2 * 100 * 64) = 51200, q and o 2 * (2 * 8 * 64) = 2048;
  // (51200 + 2048) * 2 B = 106496.
  EXPECT_DOUBLE_EQ(minimum_bytes(Kernel::AttentionDecode, DType::Bf16, decode), 106496.0);
}

TEST(KernelCatalog, MemoryCollectiveAndModelRows) {
  // rows * cols read and written: 2 * 3 * 5 * 2 B = 60; no operations counted.
  const Shape rows{.rows = 3, .cols = 5};
  EXPECT_DOUBLE_EQ(minimum_bytes(Kernel::Softmax, DType::Fp16, rows), 60.0);
  EXPECT_DOUBLE_EQ(minimum_bytes(Kernel::PublishedRmsNorm, DType::Fp16, rows), 60.0);
  EXPECT_DOUBLE_EQ(operation_count(Kernel::PublishedLayerNorm, DType::Fp16, rows), 0.0);
  // 10 fp32 elements in and out: 80.
  EXPECT_DOUBLE_EQ(minimum_bytes(Kernel::Silu, DType::Fp32, Shape{.elements = 10}), 80.0);

  Shape copy;
  copy.bytes = 1000;
  EXPECT_DOUBLE_EQ(minimum_bytes(Kernel::Copy, DType::Int8, copy), 2000.0);  // read + write

  Shape collective;
  collective.bytes = 1048576;
  collective.ranks = 8;
  EXPECT_DOUBLE_EQ(minimum_bytes(Kernel::AllReduce, DType::Bf16, collective), 1048576.0);
  EXPECT_DOUBLE_EQ(operation_count(Kernel::AllReduce, DType::Bf16, collective), 0.0);

  Shape llm{.batch = 8};
  llm.input_len = 128;
  llm.output_len = 128;
  llm.tp = 1;
  // Not derivable without the model.
  EXPECT_DOUBLE_EQ(operation_count(Kernel::LlmGenerate, DType::Fp16, llm), 0.0);
  EXPECT_DOUBLE_EQ(minimum_bytes(Kernel::LlmGenerate, DType::Fp16, llm), 0.0);
  EXPECT_DOUBLE_EQ(minimum_bytes(Kernel::Network, DType::Int8, Shape{.batch = 1}), 0.0);
  EXPECT_TRUE(tiling_summary(Kernel::Gemm, Shape{}).empty());
}

}  // namespace
}  // namespace coda::validation
