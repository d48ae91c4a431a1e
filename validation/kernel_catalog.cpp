#include "validation/kernel_catalog.h"

#include <algorithm>
#include <array>
#include <utility>

#include <fmt/format.h>

#include "core/check.h"
#include "validation/kernels/tiling.h"

namespace coda::validation {
namespace {

constexpr std::array kFp32{DType::Fp32};
constexpr std::array kFp16{DType::Fp16};
constexpr std::array kHalves{DType::Fp16, DType::Bf16};
constexpr std::array kInt8{DType::Int8};
constexpr std::array kCublas{DType::Fp16, DType::Bf16, DType::Fp32};
constexpr std::array kCublasLt{DType::Fp16, DType::Bf16, DType::Int8};
// Published-only kernels (validation/published/README.md).
constexpr std::array kGemmTypes{DType::Fp16, DType::Bf16, DType::Fp8E4M3,
                                DType::Int8, DType::Tf32, DType::Fp32};
constexpr std::array kAttentionTypes{DType::Fp16, DType::Bf16, DType::Fp8E4M3};
constexpr std::array kRowTypes{DType::Fp32, DType::Fp16, DType::Bf16};  // also collectives
constexpr std::array kCopyTypes{DType::Fp32, DType::Fp16, DType::Bf16, DType::Int8};
constexpr std::array kLlmTypes{DType::Fp16, DType::Bf16, DType::Fp8E4M3, DType::Int8};
constexpr std::array kNetworkTypes{DType::Int8, DType::Fp16, DType::Fp32};
constexpr std::array kGemmImpls{Impl::Wgmma, Impl::MmaSync};
constexpr std::array kAttentionImpls{Impl::Fa2, Impl::Fa3, Impl::Triton, Impl::Unfused};
constexpr std::array kCollectiveImpls{Impl::Ring, Impl::Tree, Impl::Nvls};
// attention_decode, llm_decode, llm_generate: the decode attention's class
// (arch::DecodeAttention).
constexpr std::array kDecodeImpls{Impl::Grouped, Impl::PerHead, Impl::Fa2Forward};
constexpr std::array kTrainImpls{Impl::Fa2, Impl::Fa3, Impl::Triton, Impl::Unfused};
// layer_norm, rms_norm: PyTorch's native kernel (arch::NormImpl::Torch); default a fused one.
// softmax and the norms: cluster, a fused kernel that spreads a row over a thread-block cluster
// (calibration.row_cluster: QuACK's kernels).
constexpr std::array kNormImpls{Impl::Torch, Impl::Cluster};
constexpr std::array kSoftmaxImpls{Impl::Cluster};
constexpr std::array kTrainTypes{DType::Fp16, DType::Bf16};

constexpr std::array<KernelInfo, 40> kCatalog{{
    {Kernel::GemmNaive, "gemm_naive", ShapeKind::Gemm, kFp32, "one thread per C element"},
    {Kernel::GemmTiled, "gemm_tiled", ShapeKind::Gemm, kFp32, "shared-memory tiled fp32 GEMM"},
    {Kernel::GemmWmma, "gemm_wmma", ShapeKind::Gemm, kHalves,
     "tensor-core GEMM via WMMA, fp32 accumulate"},
    {Kernel::GemmInt8, "gemm_int8", ShapeKind::Gemm, kInt8,
     "tensor-core int8 GEMM via WMMA, int32 accumulate; B stored [n][k]"},
    {Kernel::GemmCublas, "gemm_cublas", ShapeKind::Gemm, kCublas, "cublasGemmEx, fp32 output"},
    {Kernel::GemmCublasLt, "gemm_cublaslt", ShapeKind::Gemm, kCublasLt,
     "cublasLtMatmul (int8: TN, int32 output)"},
    {Kernel::SoftmaxNaive, "softmax_naive", ShapeKind::Rows, kFp32,
     "three kernels: row max, row sum of exp, normalise"},
    {Kernel::SoftmaxOnline, "softmax_online", ShapeKind::Rows, kFp32,
     "safe online softmax: one sweep for (max, sum), one for the output"},
    {Kernel::LayerNorm, "layernorm", ShapeKind::Rows, kFp32, "Welford mean and variance"},
    {Kernel::RmsNorm, "rmsnorm", ShapeKind::Rows, kFp32, "root mean square normalisation"},
    {Kernel::BiasGeluFused, "bias_gelu_fused", ShapeKind::Rows, kFp32,
     "y = gelu(x + b), one kernel"},
    {Kernel::BiasGeluUnfused, "bias_gelu_unfused", ShapeKind::Rows, kFp32,
     "t = x + b; y = gelu(t): two kernels"},
    {Kernel::AttentionUnfused, "attention_unfused", ShapeKind::Attention, kFp16,
     "QK^T, softmax, PV as three kernels"},
    {Kernel::AttentionFlash, "attention_flash", ShapeKind::Attention, kFp16,
     "FlashAttention-2 style, online softmax, tiles in shared memory"},
    {Kernel::DecodeAttention, "decode_attention", ShapeKind::Attention, kFp16,
     "one query token over a KV cache of seq tokens"},
    {Kernel::ReduceSum, "reduce_sum", ShapeKind::Elements, kFp32, "sum, two-stage, deterministic"},
    {Kernel::CopyBandwidth, "copy_bandwidth", ShapeKind::Elements, kFp32,
     "device-to-device copy kernel (float4)"},
    {Kernel::L2Bandwidth, "l2_bandwidth", ShapeKind::Elements, kFp32,
     "repeated reads of a buffer smaller than L2"},
    {Kernel::LaunchOverhead, "launch_overhead", ShapeKind::None, kFp32,
     "empty kernel, launched back to back"},
    {Kernel::Conv2dImplicitGemm, "conv2d_implicit_gemm", ShapeKind::Conv, kFp32,
     "NCHW conv as implicit GEMM"},
    {Kernel::Conv2dCudnn, "conv2d_cudnn", ShapeKind::Conv, kFp32,
     "cudnnConvolutionForward, FMA math (no TF32)"},
    {Kernel::Gemm, "gemm", ShapeKind::BatchedGemm, kGemmTypes,
     "published: C[m,n] = A[m,k] B[k,n], batch of them", true, kGemmImpls},
    {Kernel::AttentionFwd, "attention_fwd", ShapeKind::AttentionGqa, kAttentionTypes,
     "published: attention forward, q_len = kv_len = seq", true, kAttentionImpls},
    {Kernel::AttentionBwd, "attention_bwd", ShapeKind::AttentionGqa, kAttentionTypes,
     "published: attention backward (dQ, dK, dV)", true, kAttentionImpls},
    {Kernel::AttentionFwdBwd, "attention_fwd_bwd", ShapeKind::AttentionGqa, kAttentionTypes,
     "published: attention forward + backward, the sum of the two", true, kAttentionImpls},
    {Kernel::AttentionDecode, "attention_decode", ShapeKind::DecodeGqa, kAttentionTypes,
     "published: one query token over a KV cache of seq tokens", true, kDecodeImpls},
    {Kernel::Softmax, "softmax", ShapeKind::Rows, kRowTypes, "published: softmax over cols", true,
     kSoftmaxImpls},
    {Kernel::PublishedLayerNorm, "layer_norm", ShapeKind::Rows, kRowTypes,
     "published: layer norm over cols", true, kNormImpls},
    {Kernel::PublishedRmsNorm, "rms_norm", ShapeKind::Rows, kRowTypes,
     "published: RMS norm over cols", true, kNormImpls},
    {Kernel::Gelu, "gelu", ShapeKind::Elements, kRowTypes, "published: y = gelu(x)", true},
    {Kernel::Silu, "silu", ShapeKind::Elements, kRowTypes, "published: y = silu(x)", true},
    {Kernel::Copy, "copy", ShapeKind::Buffer, kCopyTypes, "published: device-to-device copy", true},
    {Kernel::AllReduce, "all_reduce", ShapeKind::Collective, kRowTypes,
     "published: all-reduce among ranks GPUs of one node", true, kCollectiveImpls},
    {Kernel::AllGather, "all_gather", ShapeKind::Collective, kRowTypes,
     "published: all-gather among ranks GPUs of one node", true, kCollectiveImpls},
    {Kernel::ReduceScatter, "reduce_scatter", ShapeKind::Collective, kRowTypes,
     "published: reduce-scatter among ranks GPUs of one node", true, kCollectiveImpls},
    {Kernel::LlmPrefill, "llm_prefill", ShapeKind::LlmPrefill, kLlmTypes,
     "published: time to first token of a model", true},
    {Kernel::LlmDecode, "llm_decode", ShapeKind::LlmGeneration, kLlmTypes,
     "published: time per output token of a model", true, kDecodeImpls},
    {Kernel::LlmGenerate, "llm_generate", ShapeKind::LlmGeneration, kLlmTypes,
     "published: whole static-batch generation of a model", true, kDecodeImpls},
    {Kernel::LlmTrain, "llm_train", ShapeKind::LlmTraining, kTrainTypes,
     "published: one optimizer step of a model's training on one GPU", true, kTrainImpls},
    {Kernel::Network, "network", ShapeKind::Network, kNetworkTypes,
     "published: one inference of a CNN", true},
}};

constexpr std::array kAllDTypes{DType::Fp32, DType::Tf32,    DType::Fp16,
                                DType::Bf16, DType::Fp8E4M3, DType::Int8};
constexpr std::array kAllImpls{Impl::Wgmma,      Impl::MmaSync, Impl::Fa2,    Impl::Fa3,
                               Impl::Unfused,    Impl::Ring,    Impl::Tree,   Impl::Nvls,
                               Impl::Grouped,    Impl::PerHead, Impl::Triton, Impl::Torch,
                               Impl::Fa2Forward, Impl::Cluster};

constexpr std::array<std::string_view, 3> kGemmKeys{"m", "n", "k"};
constexpr std::array<std::string_view, 2> kRowKeys{"rows", "cols"};
constexpr std::array<std::string_view, 4> kAttentionKeys{"batch", "heads", "seq", "head_dim"};
constexpr std::array<std::string_view, 1> kElementKeys{"elements"};
constexpr std::array<std::string_view, 8> kConvKeys{"batch",   "channels",    "height", "width",
                                                    "filters", "filter_size", "stride", "pad"};
constexpr std::array<std::string_view, 4> kBatchedGemmKeys{"m", "n", "k", "batch"};
constexpr std::array<std::string_view, 6> kAttentionGqaKeys{"batch",    "heads",  "seq",
                                                            "head_dim", "causal", "kv_heads"};
constexpr std::array<std::string_view, 6> kDecodeGqaKeys{"batch", "heads",    "kv_heads",
                                                         "seq",   "head_dim", "value_dim"};
constexpr std::array<std::string_view, 1> kBufferKeys{"bytes"};
constexpr std::array<std::string_view, 2> kCollectiveKeys{"bytes", "ranks"};
constexpr std::array<std::string_view, 3> kLlmPrefillKeys{"batch", "input_len", "tp"};
constexpr std::array<std::string_view, 4> kLlmGenerationKeys{"batch", "input_len", "output_len",
                                                             "tp"};
constexpr std::array<std::string_view, 19> kLlmTrainingKeys{"batch",      "seq",
                                                            "grad_accum", "dp",
                                                            "recompute",  "tp",
                                                            "pp",         "vp",
                                                            "zero",       "grad_bits",
                                                            "autocast",   "fp8",
                                                            "sp",         "param_overlap",
                                                            "cp",         "recompute_layers",
                                                            "ep",         "split_embedding",
                                                            "split_loss"};
constexpr std::array<std::string_view, 1> kNetworkKeys{"batch"};
// A training row's optional keys: the value an absent one takes, and whether the row's text
// names it at that value (the keys added after the first training rows are named only where
// set, so that those rows read as they did).
struct OptionalKey {
  std::string_view key;
  std::uint64_t absent = 0;
  bool named_when_absent = false;
};
constexpr std::array<OptionalKey, 11> kLlmTrainingOptional{{{"pp", 1, true},
                                                            {"vp", 1, true},
                                                            {"autocast", 0, true},
                                                            {"fp8", 0, false},
                                                            {"sp", 0, false},
                                                            {"param_overlap", 0, false},
                                                            {"cp", 1, false},
                                                            {"recompute_layers", 0, false},
                                                            {"ep", 1, false},
                                                            {"split_embedding", 0, false},
                                                            {"split_loss", 0, false}}};
const OptionalKey* training_optional(std::string_view key) {
  for (const OptionalKey& k : kLlmTrainingOptional)
    if (k.key == key) return &k;
  return nullptr;
}

double d(std::uint64_t v) { return static_cast<double>(v); }

}  // namespace

std::uint64_t value_dim_of(const Shape& s) { return s.value_dim > 0 ? s.value_dim : s.head_dim; }

std::span<const KernelInfo> kernel_catalog() { return kCatalog; }

const KernelInfo& info(Kernel kernel) {
  for (const KernelInfo& k : kCatalog) {
    if (k.kernel == kernel) return k;
  }
  CODA_CHECK(false);
  return kCatalog[0];
}

std::span<const DType> all_dtypes() { return kAllDTypes; }

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::Fp32: return "fp32";
    case DType::Fp16: return "fp16";
    case DType::Bf16: return "bf16";
    case DType::Int8: return "int8";
    case DType::Tf32: return "tf32";
    case DType::Fp8E4M3: return "fp8_e4m3";
  }
  return "?";
}

std::size_t dtype_bytes(DType dtype) {
  switch (dtype) {
    case DType::Fp32:
    case DType::Tf32: return 4;  // tf32 is stored as fp32; the tensor cores read 19 of its bits
    case DType::Fp16:
    case DType::Bf16: return 2;
    case DType::Int8:
    case DType::Fp8E4M3: return 1;
  }
  return 0;
}

std::span<const Impl> all_impls() { return kAllImpls; }

std::string_view impl_name(Impl impl) {
  switch (impl) {
    case Impl::Default: return "";
    case Impl::Wgmma: return "wgmma";
    case Impl::MmaSync: return "mma_sync";
    case Impl::Fa2: return "fa2";
    case Impl::Fa3: return "fa3";
    case Impl::Unfused: return "unfused";
    case Impl::Ring: return "ring";
    case Impl::Tree: return "tree";
    case Impl::Nvls: return "nvls";
    case Impl::Grouped: return "grouped";
    case Impl::PerHead: return "per_head";
    case Impl::Triton: return "triton";
    case Impl::Torch: return "torch";
    case Impl::Fa2Forward: return "fa2_forward";
    case Impl::Cluster:
      return "cluster";
  }
  return "?";
}

bool takes_model(Kernel kernel) {
  const ShapeKind kind = info(kernel).shape;
  return kind == ShapeKind::LlmPrefill || kind == ShapeKind::LlmGeneration ||
         kind == ShapeKind::LlmTraining || kind == ShapeKind::Network;
}

std::span<const std::string_view> shape_keys(ShapeKind kind) {
  switch (kind) {
    case ShapeKind::Gemm: return kGemmKeys;
    case ShapeKind::Rows: return kRowKeys;
    case ShapeKind::Attention: return kAttentionKeys;
    case ShapeKind::Elements: return kElementKeys;
    case ShapeKind::Conv: return kConvKeys;
    case ShapeKind::None: return {};
    case ShapeKind::BatchedGemm: return kBatchedGemmKeys;
    case ShapeKind::AttentionGqa: return kAttentionGqaKeys;
    case ShapeKind::DecodeGqa: return kDecodeGqaKeys;
    case ShapeKind::Buffer: return kBufferKeys;
    case ShapeKind::Collective: return kCollectiveKeys;
    case ShapeKind::LlmPrefill: return kLlmPrefillKeys;
    case ShapeKind::LlmGeneration: return kLlmGenerationKeys;
    case ShapeKind::LlmTraining: return kLlmTrainingKeys;
    case ShapeKind::Network: return kNetworkKeys;
  }
  return {};
}

bool shape_key_optional(ShapeKind kind, std::string_view key) {
  switch (kind) {
    case ShapeKind::Conv: return key == "stride" || key == "pad";
    case ShapeKind::BatchedGemm: return key == "batch";
    case ShapeKind::AttentionGqa: return key == "kv_heads";
    case ShapeKind::DecodeGqa:
      return key == "value_dim";
    case ShapeKind::LlmTraining:
      return training_optional(key) != nullptr;
    default: return false;
  }
}

void fill_shape_defaults(ShapeKind kind, Shape& s, std::span<const std::string_view> given) {
  const auto absent = [&](std::string_view key) {
    return std::find(given.begin(), given.end(), key) == given.end();
  };
  switch (kind) {
    case ShapeKind::Conv:
      if (absent("stride")) s.stride = 1;
      if (absent("pad")) s.pad = 0;
      break;
    case ShapeKind::BatchedGemm:
      if (absent("batch")) s.batch = 1;
      break;
    case ShapeKind::AttentionGqa:
      if (absent("kv_heads")) s.kv_heads = s.heads;  // multi-head attention: a KV head per head
      break;
    case ShapeKind::DecodeGqa:
      if (absent("value_dim")) s.value_dim = s.head_dim;  // values of their own, head_dim wide
      break;
    case ShapeKind::LlmTraining:  // no pipeline, no recipe or parallelism unless the row says so
      for (const OptionalKey& k : kLlmTrainingOptional)
        if (absent(k.key)) *shape_field(s, k.key) = k.absent;
      break;
    default: break;
  }
}

bool shape_key_may_be_zero(std::string_view key) {
  const OptionalKey* training = training_optional(key);
  return key == "pad" || key == "causal" || key == "recompute" || key == "zero" ||
         (training != nullptr && training->absent == 0);
}

std::uint64_t* shape_field(Shape& s, std::string_view key) {
  const std::pair<std::string_view, std::uint64_t*> fields[] = {
      {"m", &s.m},
      {"n", &s.n},
      {"k", &s.k},
      {"batch", &s.batch},
      {"heads", &s.heads},
      {"seq", &s.seq},
      {"head_dim", &s.head_dim},
      {"rows", &s.rows},
      {"cols", &s.cols},
      {"elements", &s.elements},
      {"channels", &s.channels},
      {"height", &s.height},
      {"width", &s.width},
      {"filters", &s.filters},
      {"filter_size", &s.filter_size},
      {"stride", &s.stride},
      {"pad", &s.pad},
      {"causal", &s.causal},
      {"kv_heads", &s.kv_heads},
      {"value_dim", &s.value_dim},
      {"bytes", &s.bytes},
      {"ranks", &s.ranks},
      {"input_len", &s.input_len},
      {"output_len", &s.output_len},
      {"tp", &s.tp},
      {"grad_accum", &s.grad_accum},
      {"dp", &s.dp},
      {"recompute", &s.recompute},
      {"pp", &s.pp},
      {"vp", &s.vp},
      {"zero", &s.zero},
      {"grad_bits", &s.grad_bits},
      {"autocast", &s.autocast},
      {"fp8", &s.fp8},
      {"sp", &s.sp},
      {"param_overlap", &s.param_overlap},
      {"cp", &s.cp},
      {"recompute_layers", &s.recompute_layers},
      {"ep", &s.ep},
      {"split_embedding", &s.split_embedding},
      {"split_loss", &s.split_loss},
  };
  for (const auto& [name, field] : fields) {
    if (name == key) return field;
  }
  return nullptr;
}

std::uint64_t shape_value(const Shape& shape, std::string_view key) {
  Shape copy = shape;
  const std::uint64_t* field = shape_field(copy, key);
  return field ? *field : 0;
}

std::uint64_t conv_out_extent(const Shape& s, std::uint64_t extent) {
  if (s.stride == 0 || extent + 2 * s.pad < s.filter_size) return 0;
  return (extent + 2 * s.pad - s.filter_size) / s.stride + 1;
}

double operation_count(Kernel kernel, DType /*dtype*/, const Shape& s) {
  switch (info(kernel).shape) {
    case ShapeKind::Gemm: return 2.0 * d(s.m) * d(s.n) * d(s.k);
    case ShapeKind::Attention: {
      const double bh = d(s.batch) * d(s.heads);
      const double queries = kernel == Kernel::DecodeAttention ? 1.0 : d(s.seq);
      return 4.0 * bh * queries * d(s.seq) * d(s.head_dim);  // QK^T and PV, 2 each per MAC
    }
    case ShapeKind::Conv: {
      const double pixels = d(s.batch) * d(conv_out_extent(s, s.height)) *
                            d(conv_out_extent(s, s.width));
      return 2.0 * pixels * d(s.filters) * d(s.channels) * d(s.filter_size) * d(s.filter_size);
    }
    case ShapeKind::BatchedGemm:
      // batch GEMMs of m*n*k multiply-adds, 2 operations each.
      return 2.0 * d(s.batch) * d(s.m) * d(s.n) * d(s.k);
    case ShapeKind::AttentionGqa: {
      // Forward: Q K^T and P V, s*s*d multiply-adds each per (batch, head), 2 operations each:
      // 4*b*h*s^2*d (kv_heads changes the bytes, not the arithmetic). Causal: halved, as the
      // FlashAttention papers and their benchmarks count it (the masked half is skipped), so
      // TFLOP/s read from their figures convert back with the same count. Backward: 2.5x the
      // forward, FlashAttention-2's convention (five matmuls to the forward's two). Forward +
      // backward: 3.5x (benchmark_flash_attention.py's flops(mode="fwd_bwd")).
      double ops = 4.0 * d(s.batch) * d(s.heads) * d(s.seq) * d(s.seq) * d(s.head_dim);
      if (s.causal != 0) ops /= 2.0;
      if (kernel == Kernel::AttentionBwd) return 2.5 * ops;
      if (kernel == Kernel::AttentionFwdBwd) return 3.5 * ops;
      return ops;
    }
    case ShapeKind::DecodeGqa:
      // One query per (batch, head): q K^T and p V over seq keys, seq*d and seq*e multiply-adds
      // (e the value dim: d but for MLA's), 2 operations each (FlashMLA's count with s_q 1).
      return 2.0 * d(s.batch) * d(s.heads) * d(s.seq) * (d(s.head_dim) + d(value_dim_of(s)));
    case ShapeKind::Rows:
    case ShapeKind::Elements:
    case ShapeKind::None:
    case ShapeKind::Buffer:
    case ShapeKind::Collective:  // the reduction's adds are not what a collective is judged by
    case ShapeKind::LlmPrefill:  // llm_* and network: the work is the model's, not the row's
    case ShapeKind::LlmGeneration:
    case ShapeKind::LlmTraining:
    case ShapeKind::Network: return 0.0;
  }
  return 0.0;
}

double minimum_bytes(Kernel kernel, DType dtype, const Shape& s) {
  const double e = d(dtype_bytes(dtype));
  const double rc = d(s.rows) * d(s.cols) * 4.0;
  switch (kernel) {
    case Kernel::GemmNaive:
    case Kernel::GemmTiled:
    case Kernel::GemmWmma:
    case Kernel::GemmInt8:
    case Kernel::GemmCublas:
    case Kernel::GemmCublasLt:  // C is fp32 (int32 for int8)
      return (d(s.m) * d(s.k) + d(s.k) * d(s.n)) * e + d(s.m) * d(s.n) * 4.0;
    case Kernel::SoftmaxNaive: return 4.0 * rc;  // three reads of x, one write of y
    case Kernel::SoftmaxOnline: return 2.0 * rc;
    case Kernel::LayerNorm: return 2.0 * rc + 2.0 * d(s.cols) * 4.0;  // + gamma, beta
    case Kernel::RmsNorm:        // + gamma
    case Kernel::BiasGeluFused:  // + bias
      return 2.0 * rc + d(s.cols) * 4.0;
    case Kernel::BiasGeluUnfused: return 4.0 * rc + d(s.cols) * 4.0;  // t written and read back
    case Kernel::AttentionUnfused:
    case Kernel::AttentionFlash: {
      const double bh = d(s.batch) * d(s.heads);
      const double qkv_o = bh * d(s.seq) * d(s.head_dim) * (3.0 * 2.0 + 4.0);  // fp16 in, fp32 out
      if (kernel == Kernel::AttentionFlash) return qkv_o;
      // S (fp32) written and read, P (fp16) written and read.
      return qkv_o + bh * d(s.seq) * d(s.seq) * (4.0 + 4.0 + 2.0 + 2.0);
    }
    case Kernel::DecodeAttention: {
      const double bh = d(s.batch) * d(s.heads);
      return bh * d(s.head_dim) * (2.0 + 4.0) + 2.0 * bh * d(s.seq) * d(s.head_dim) * 2.0;
    }
    case Kernel::ReduceSum: return d(s.elements) * 4.0;
    case Kernel::CopyBandwidth: return 2.0 * d(s.elements) * 4.0;
    case Kernel::L2Bandwidth: return tiling::kL2Passes * d(s.elements) * 4.0;
    case Kernel::LaunchOverhead: return 0.0;
    case Kernel::Conv2dImplicitGemm:
    case Kernel::Conv2dCudnn: {
      const double out = d(s.batch) * d(s.filters) * d(conv_out_extent(s, s.height)) *
                         d(conv_out_extent(s, s.width));
      const double in = d(s.batch) * d(s.channels) * d(s.height) * d(s.width);
      const double w = d(s.filters) * d(s.channels) * d(s.filter_size) * d(s.filter_size);
      return (in + w + out) * 4.0;
    }
    // Published-only kernels: everything in the row's dtype (e bytes per element).
    case Kernel::Gemm:  // A[m,k] and B[k,n] read, C[m,n] written in the input type, per GEMM
      return d(s.batch) * (d(s.m) * d(s.k) + d(s.k) * d(s.n) + d(s.m) * d(s.n)) * e;
    case Kernel::AttentionFwd:
    case Kernel::AttentionBwd:
    case Kernel::AttentionFwdBwd: {
      // Q and O are b*h*s*d elements each; K and V b*kv_heads*s*d each (shared by the heads of a
      // group). Forward: Q, K, V read, O written. Backward: Q, K, V, O, dO read, dQ, dK, dV
      // written; its softmax statistics (b*h*s fp32 values) are not counted. Forward + backward:
      // the two kernels' bytes (O is written by one and read back by the other).
      const double q = d(s.batch) * d(s.heads) * d(s.seq) * d(s.head_dim);
      const double kv = d(s.batch) * d(s.kv_heads) * d(s.seq) * d(s.head_dim);
      const double fwd = (2.0 * q + 2.0 * kv) * e;
      const double bwd = (4.0 * q + 4.0 * kv) * e;
      if (kernel == Kernel::AttentionFwd) return fwd;
      return kernel == Kernel::AttentionBwd ? bwd : fwd + bwd;
    }
    case Kernel::AttentionDecode: {
      // The K and V caches (b*kv_heads*seq*d each) read, q read (b*h*d) and o written (b*h*e);
      // with values inside the keys (value_dim below head_dim: MLA's latent), the cache once.
      const double caches = value_dim_of(s) < s.head_dim ? 1.0 : 2.0;
      return (caches * d(s.batch) * d(s.kv_heads) * d(s.seq) * d(s.head_dim) +
              d(s.batch) * d(s.heads) * (d(s.head_dim) + d(value_dim_of(s)))) *
             e;
    }
    case Kernel::Softmax:
    case Kernel::PublishedLayerNorm:
    case Kernel::PublishedRmsNorm:  // x read, y written; gamma and beta (cols each) not counted
      return 2.0 * d(s.rows) * d(s.cols) * e;
    case Kernel::Gelu:
    case Kernel::Silu: return 2.0 * d(s.elements) * e;  // x read, y written
    case Kernel::Copy: return 2.0 * d(s.bytes);         // bytes read, as many written
    case Kernel::AllReduce:
    case Kernel::AllGather:
    case Kernel::ReduceScatter:
      // The buffer size S (nccl-tests' size); what crosses the links depends on the algorithm
      // and the ranks, which is the predictor's to say.
      return d(s.bytes);
    case Kernel::LlmPrefill:
    case Kernel::LlmDecode:
    case Kernel::LlmGenerate:
    case Kernel::LlmTrain:
    case Kernel::Network:
      // Weights, activations and KV cache are the model's: not derivable from the row without
      // it (the predictor resolves `model`), so 0, "not stated".
      return 0.0;
  }
  return 0.0;
}

std::string tiling_summary(Kernel kernel, const Shape& shape) {
  using namespace tiling;
  switch (kernel) {
    case Kernel::GemmNaive:
      return fmt::format("block {}x{} threads, 1 C element per thread, smem 0 B", kNaiveBlock,
                         kNaiveBlock);
    case Kernel::GemmTiled:
      return fmt::format("block tile {0}x{0}x{0}, {1} threads, smem {2} B", kTiledTile,
                         kTiledTile * kTiledTile, kTiledSmemBytes);
    case Kernel::GemmWmma:
      return fmt::format("block tile {}x{}x{}, {} threads (2x2 warps of 32x32), wmma 16x16x16, "
                         "smem {} B",
                         kWmmaBlockM, kWmmaBlockN, kWmmaBlockK, kWmmaThreads, kWmmaSmemBytes);
    case Kernel::GemmInt8:
      return fmt::format("block tile {}x{}x{}, {} threads (2x2 warps of 32x32), wmma 16x16x16 "
                         "int8, smem {} B",
                         kInt8BlockM, kInt8BlockN, kInt8BlockK, kInt8Threads, kInt8SmemBytes);
    case Kernel::GemmCublas:
    case Kernel::GemmCublasLt: return "vendor library: chosen by its heuristics";
    case Kernel::SoftmaxNaive:
      return fmt::format("3 kernels, each 1 row per block, {} threads, smem {} B", kRowThreads,
                         kSoftmaxNaiveSmemBytes);
    case Kernel::SoftmaxOnline:
      return fmt::format("1 row per block, {} threads, smem {} B", kRowThreads,
                         kSoftmaxOnlineSmemBytes);
    case Kernel::LayerNorm:
      return fmt::format("1 row per block, {} threads, smem {} B", kRowThreads,
                         kLayerNormSmemBytes);
    case Kernel::RmsNorm:
      return fmt::format("1 row per block, {} threads, smem {} B", kRowThreads,
                         kRmsNormSmemBytes);
    case Kernel::BiasGeluFused:
    case Kernel::BiasGeluUnfused:
    case Kernel::CopyBandwidth:
      return fmt::format("grid-stride, {} threads per block, smem 0 B", kElementwiseThreads);
    case Kernel::ReduceSum:
      return fmt::format("grid-stride, up to {} blocks of {} threads, then 1 block; smem {} B",
                         kReduceMaxBlocks, kReduceThreads, kReduceThreads / 32 * 4);
    case Kernel::L2Bandwidth:
      return fmt::format("grid-stride float4 reads, {} passes, {} threads per block", kL2Passes,
                         kElementwiseThreads);
    case Kernel::LaunchOverhead:
      return fmt::format("1 block of 1 thread, {} launches per repetition",
                         kLaunchesPerRepetition);
    case Kernel::AttentionUnfused:
      return fmt::format("QK^T and PV: tile {0}x{0}x{0}, {1} threads, smem {2} B; softmax: 1 row "
                         "per block, {3} threads, smem {4} B",
                         kAttnMatmulTile, kAttnMatmulTile * kAttnMatmulTile, kAttnMatmulSmemBytes,
                         kRowThreads, kSoftmaxOnlineSmemBytes);
    case Kernel::AttentionFlash:
      return fmt::format("query tile {}, key/value tile {}, {} threads, smem {} B", kFlashBlockQ,
                         kFlashBlockKv, kFlashThreads,
                         flash_smem_bytes(static_cast<int>(shape.head_dim)));
    case Kernel::DecodeAttention:
      return fmt::format("1 block per (batch, head), {} warps, smem {} B", kDecodeWarps,
                         decode_smem_bytes(static_cast<int>(shape.head_dim)));
    case Kernel::Conv2dImplicitGemm:
      return fmt::format("implicit GEMM, block tile {0}x{0}x{0}, {1} threads, smem {2} B",
                         kConvTile, kConvTile * kConvTile, kConvSmemBytes);
    case Kernel::Conv2dCudnn: return "vendor library: algorithm from cudnnGetConvolutionForwardAlgorithm_v7";
    default: break;  // published-only kernels: not coda's, tiled as their library chose
  }
  CODA_CHECK(info(kernel).published_only);
  return {};
}

std::string shape_text(ShapeKind kind, const Shape& s) {
  std::string text;
  for (std::string_view key : shape_keys(kind)) {
    const OptionalKey* training = kind == ShapeKind::LlmTraining ? training_optional(key) : nullptr;
    if (training != nullptr && !training->named_when_absent &&
        shape_value(s, key) == training->absent)
      continue;
    text += fmt::format("{}{}={}", text.empty() ? "" : " ", key, shape_value(s, key));
  }
  return text;
}

}  // namespace coda::validation
