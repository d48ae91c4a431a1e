#include "validation/case_list.h"

#include <gtest/gtest.h>

#include "validation/kernels/tiling.h"

namespace coda::validation {
namespace {

std::optional<CaseList> parse(const std::string& text, Diagnostics& diags) {
  auto doc = YamlDocument::parse(text, "cases.yaml", diags);
  if (!doc) return std::nullopt;
  return read_case_list(doc->root(), diags);
}

// The single error a bad list gives, formatted as the user sees it.
std::string only_error(const std::string& text) {
  Diagnostics diags;
  const auto list = parse(text, diags);
  EXPECT_FALSE(list);
  EXPECT_EQ(diags.error_count(), 1u) << diags.format_all();
  return diags.all().empty() ? std::string{} : format(diags.all()[0]);
}

TEST(CaseList, ReadsAGoodList) {
  Diagnostics diags;
  const auto list = parse(
      "schema_version: 1\n"
      "repetitions: 7\n"
      "warmup: 2\n"
      "seed: 42\n"
      "check_samples: 16\n"
      "cases:\n"
      "  - {kernel: gemm_wmma, dtype: bf16, m: 128, n: 64, k: 32}\n"
      "  - {kernel: softmax_online, rows: 4, cols: 4096, repetitions: 50, warmup: 0}\n"
      "  - {kernel: attention_flash, batch: 1, heads: 32, seq: 2048, head_dim: 128}\n"
      "  - {kernel: conv2d_cudnn, batch: 8, channels: 64, height: 56, width: 56, filters: 64,\n"
      "     filter_size: 3, pad: 1}\n"
      "  - {kernel: launch_overhead}\n",
      diags);
  ASSERT_TRUE(list) << diags.format_all();
  EXPECT_EQ(list->seed, 42u);
  EXPECT_EQ(list->check_samples, 16u);
  ASSERT_EQ(list->cases.size(), 5u);

  const Case& gemm = list->cases[0];
  EXPECT_EQ(gemm.kernel, Kernel::GemmWmma);
  EXPECT_EQ(gemm.dtype, DType::Bf16);
  EXPECT_EQ(gemm.shape, (Shape{.m = 128, .n = 64, .k = 32}));
  EXPECT_EQ(gemm.repetitions, 7u);  // the list's default
  EXPECT_EQ(gemm.warmup, 2u);
  EXPECT_EQ(gemm.where.line, 7);

  const Case& softmax = list->cases[1];
  EXPECT_EQ(softmax.dtype, DType::Fp32);  // the kernel's only dtype, by default
  EXPECT_EQ(softmax.shape.rows, 4u);
  EXPECT_EQ(softmax.repetitions, 50u);  // the case's own
  EXPECT_EQ(softmax.warmup, 0u);

  EXPECT_EQ(list->cases[2].dtype, DType::Fp16);
  EXPECT_EQ(list->cases[2].shape.head_dim, 128u);

  const Shape& conv = list->cases[3].shape;
  EXPECT_EQ(conv.stride, 1u);  // default
  EXPECT_EQ(conv.pad, 1u);
  EXPECT_EQ(conv_out_extent(conv, conv.height), 56u);  // (56 + 2 - 3) / 1 + 1

  EXPECT_EQ(list->cases[4].kernel, Kernel::LaunchOverhead);
}

TEST(CaseList, BundledListsAreValid) {
  for (const char* file : {"validation/cases/default.yaml", "validation/cases/smoke.yaml",
                           "validation/cases/ncu.yaml"}) {
    Diagnostics diags;
    const auto list = load_case_list(file, diags);
    ASSERT_TRUE(list) << file << "\n" << diags.format_all();
    EXPECT_FALSE(list->cases.empty()) << file;
  }
}

TEST(CaseList, SmokeListCoversEveryKernel) {
  Diagnostics diags;
  const auto list = load_case_list("validation/cases/smoke.yaml", diags);
  ASSERT_TRUE(list) << diags.format_all();
  for (const KernelInfo& k : kernel_catalog()) {
    if (k.published_only) continue;  // coda-bench cannot run those
    bool found = false;
    for (const Case& c : list->cases) found = found || c.kernel == k.kernel;
    EXPECT_TRUE(found) << k.name << " has no smoke case";
  }
}

TEST(CaseList, UnknownKernelSuggestsTheClosest) {
  EXPECT_EQ(only_error("schema_version: 1\ncases:\n  - {kernel: gemm_wmm, m: 64, n: 64, k: 64}\n"),
            "cases.yaml:3:14: error: cases[0].kernel: \"gemm_wmm\" is not valid (did you mean "
            "'gemm_wmma'?); expected one of: gemm_naive, gemm_tiled, gemm_wmma, gemm_int8, "
            "gemm_cublas, gemm_cublaslt, softmax_naive, softmax_online, layernorm, rmsnorm, "
            "bias_gelu_fused, bias_gelu_unfused, attention_unfused, attention_flash, "
            "decode_attention, reduce_sum, copy_bandwidth, l2_bandwidth, launch_overhead, "
            "conv2d_implicit_gemm, conv2d_cudnn");
}

// Published-only kernels are refused as such, and a typo is matched among runnable kernels
// only: "softmx" is one edit from softmax, which coda-bench cannot run, and more than two from
// every runnable name, so nothing is suggested.
TEST(CaseList, PublishedKernelIsRefusedAndNeverSuggested) {
  const std::string runnable =
      "gemm_naive, gemm_tiled, gemm_wmma, gemm_int8, gemm_cublas, gemm_cublaslt, softmax_naive, "
      "softmax_online, layernorm, rmsnorm, bias_gelu_fused, bias_gelu_unfused, "
      "attention_unfused, attention_flash, decode_attention, reduce_sum, copy_bandwidth, "
      "l2_bandwidth, launch_overhead, conv2d_implicit_gemm, conv2d_cudnn";
  EXPECT_EQ(only_error("schema_version: 1\ncases:\n  - {kernel: gemm, m: 64, n: 64, k: 64}\n"),
            "cases.yaml:3:14: error: cases[0].kernel: \"gemm\" is a kernel of published tables: "
            "coda-bench cannot run it (it exists for rows of validation/published/); coda-bench "
            "runs: " + runnable);
  EXPECT_EQ(only_error("schema_version: 1\ncases:\n  - {kernel: softmx, rows: 4, cols: 4}\n"),
            "cases.yaml:3:14: error: cases[0].kernel: \"softmx\" is not valid; expected one of: " +
                runnable);
}

TEST(CaseList, DtypeTheKernelDoesNotHaveListsTheValidOnes) {
  EXPECT_EQ(
      only_error("schema_version: 1\ncases:\n  - {kernel: gemm_wmma, dtype: int8, m: 64, n: 64, "
                 "k: 64}\n"),
      "cases.yaml:3:32: error: cases[0].dtype: \"int8\" is not valid; expected one of: fp16, bf16");
}

TEST(CaseList, MissingShapeFieldIsNamed) {
  EXPECT_EQ(only_error("schema_version: 1\ncases:\n  - {kernel: rmsnorm, rows: 8}\n"),
            "cases.yaml:3:5: error: cases[0]: missing required key 'cols'");
}

TEST(CaseList, KeyOfAnotherKernelIsUnknown) {
  EXPECT_EQ(only_error("schema_version: 1\ncases:\n"
                       "  - {kernel: reduce_sum, elements: 1024, rows: 8}\n"),
            "cases.yaml:3:42: error: cases[0].rows: unknown key; valid keys here: kernel, dtype, "
            "elements, repetitions, warmup");
}

TEST(CaseList, ShapeOffTheBlockTileSaysWhyAndWhatWouldDo) {
  EXPECT_EQ(only_error("schema_version: 1\ncases:\n"
                       "  - {kernel: gemm_wmma, m: 100, n: 64, k: 64}\n"),
            "cases.yaml:3:28: error: cases[0].m: 100 is not a multiple of 64, which gemm_wmma "
            "needs (its 64x64x32 block tile has no edge handling); use e.g. 128");
}

TEST(CaseList, HeadDimTheKernelsAreNotBuiltFor) {
  EXPECT_EQ(only_error("schema_version: 1\ncases:\n  - {kernel: attention_flash, batch: 1, "
                       "heads: 1, seq: 64, head_dim: 96}\n"),
            "cases.yaml:3:70: error: cases[0].head_dim: 96 is not a head size attention_flash is "
            "built for; valid: 64, 128");
}

TEST(CaseList, ZeroSizesAndRepetitionsAreErrors) {
  Diagnostics diags;
  const auto list = parse("schema_version: 1\ncases:\n"
                          "  - {kernel: gemm_tiled, m: 0, n: 8, k: 8, repetitions: 0}\n",
                          diags);
  EXPECT_FALSE(list);
  ASSERT_EQ(diags.error_count(), 2u) << diags.format_all();
  EXPECT_EQ(format(diags.all()[0]), "cases.yaml:3:29: error: cases[0].m: must be at least 1");
  EXPECT_EQ(format(diags.all()[1]),
            "cases.yaml:3:57: error: cases[0].repetitions: must be at least 1; the median of the "
            "timed runs is reported");
}

TEST(CaseList, FilterLargerThanThePaddedInput) {
  EXPECT_EQ(only_error("schema_version: 1\ncases:\n  - {kernel: conv2d_implicit_gemm, batch: 1, "
                       "channels: 1, height: 2, width: 2, filters: 1, filter_size: 5}\n"),
            "cases.yaml:3:105: error: cases[0].filter_size: a 5x5 filter does not fit a 2x2 "
            "input padded by 0; use a smaller filter_size or a larger pad");
}

TEST(CaseList, WrongSchemaVersionAndMissingCases) {
  Diagnostics diags;
  EXPECT_FALSE(parse("schema_version: 2\n", diags));
  ASSERT_EQ(diags.error_count(), 2u) << diags.format_all();
  EXPECT_EQ(format(diags.all()[0]),
            "cases.yaml:1:17: error: schema_version: unsupported version 2; this coda-bench reads "
            "version 1");
  EXPECT_EQ(format(diags.all()[1]),
            "cases.yaml:1:1: error: missing required key 'cases'; list the cases to run, e.g. "
            "cases: [{kernel: gemm_tiled, m: 64, n: 64, k: 64}]");
}

TEST(CaseList, EveryBadCaseIsReportedInOneRound) {
  Diagnostics diags;
  EXPECT_FALSE(parse("schema_version: 1\ncases:\n"
                     "  - {kernel: nope}\n"
                     "  - {kernel: gemm_naive, m: 8, n: 8}\n"
                     "  - {kernel: copy_bandwidth, elements: 1023}\n",
                     diags));
  EXPECT_EQ(diags.error_count(), 3u) << diags.format_all();
}

// --- the catalog: what each kernel computes and moves ------------------------------------------

TEST(KernelCatalog, OperationsAndBytes) {
  const Shape gemm{.m = 4096, .n = 4096, .k = 4096};
  // 2 m n k
  EXPECT_DOUBLE_EQ(operation_count(Kernel::GemmWmma, DType::Fp16, gemm), 2.0 * 4096 * 4096 * 4096);
  // A and B in fp16 (2 B), C in fp32 (4 B): (2 * 4096^2) * 2 + 4096^2 * 4
  EXPECT_DOUBLE_EQ(minimum_bytes(Kernel::GemmWmma, DType::Fp16, gemm), 8.0 * 4096 * 4096);
  const Shape rows{.rows = 4, .cols = 8};
  // naive softmax reads x three times and writes y once: 4 * 32 elements * 4 B
  EXPECT_DOUBLE_EQ(minimum_bytes(Kernel::SoftmaxNaive, DType::Fp32, rows), 4.0 * 32 * 4);
  EXPECT_DOUBLE_EQ(minimum_bytes(Kernel::SoftmaxOnline, DType::Fp32, rows), 2.0 * 32 * 4);
  const Shape attn{.batch = 1, .heads = 2, .seq = 8, .head_dim = 64};
  // 4 b h s^2 d (QK^T and PV)
  EXPECT_DOUBLE_EQ(operation_count(Kernel::AttentionFlash, DType::Fp16, attn), 4.0 * 2 * 64 * 64);
  // decode: one query: 4 b h L d
  EXPECT_DOUBLE_EQ(operation_count(Kernel::DecodeAttention, DType::Fp16, attn), 4.0 * 2 * 8 * 64);
  // flash: Q, K, V fp16 + O fp32 = 2*8*64 * (6 + 4); unfused adds S (fp32 w+r) and P (fp16 w+r)
  EXPECT_DOUBLE_EQ(minimum_bytes(Kernel::AttentionFlash, DType::Fp16, attn), 1024.0 * 10);
  EXPECT_DOUBLE_EQ(minimum_bytes(Kernel::AttentionUnfused, DType::Fp16, attn),
                   1024.0 * 10 + 2 * 64 * 12.0);
  EXPECT_DOUBLE_EQ(minimum_bytes(Kernel::L2Bandwidth, DType::Fp32, Shape{.elements = 1024}),
                   tiling::kL2Passes * 4096.0);
}

TEST(KernelCatalog, TilingIsReportedWithSharedMemoryBytes) {
  EXPECT_EQ(tiling_summary(Kernel::GemmWmma, {}),
            "block tile 64x64x32, 128 threads (2x2 warps of 32x32), wmma 16x16x16, smem 9728 B");
  EXPECT_EQ(tiling_summary(Kernel::AttentionFlash, Shape{.head_dim = 128}),
            "query tile 64, key/value tile 64, 128 threads, smem 99072 B");
  // Q, K, V 3*64*64*2 + S 64*64*4 + O 64*64*4 + m, l, rescale 3*64*4
  EXPECT_EQ(tiling::flash_smem_bytes(64), 24576 + 16384 + 16384 + 768);
}

}  // namespace
}  // namespace coda::validation
