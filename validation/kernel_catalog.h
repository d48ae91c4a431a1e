#pragma once
// The bundled kernels coda-bench can run, and the published-only kernels of the measurement
// corpus (validation/published/README.md): their names in a case list or a measurement CSV,
// which shape fields, dtypes and implementation classes each takes, what each computes
// (floating-point operations and the minimum DRAM bytes, for the achieved TFLOP/s and GB/s
// columns) and how each is tiled. Plain C++: no CUDA here.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace coda::validation {

enum class Kernel : std::uint8_t {
  GemmNaive,
  GemmTiled,
  GemmWmma,
  GemmInt8,
  GemmCublas,
  GemmCublasLt,
  SoftmaxNaive,
  SoftmaxOnline,
  LayerNorm,
  RmsNorm,
  BiasGeluFused,
  BiasGeluUnfused,
  AttentionUnfused,
  AttentionFlash,
  DecodeAttention,
  ReduceSum,
  CopyBandwidth,
  L2Bandwidth,
  LaunchOverhead,
  Conv2dImplicitGemm,
  Conv2dCudnn,
  // Published-only (KernelInfo::published_only): what published tables measured; coda-bench
  // cannot run them. LayerNorm and RmsNorm above are coda-bench's own kernels.
  Gemm,
  AttentionFwd,
  AttentionBwd,
  AttentionFwdBwd,  // a forward and its backward, timed as one row (fwd + bwd)
  AttentionDecode,
  Softmax,
  PublishedLayerNorm,
  PublishedRmsNorm,
  Gelu,
  Silu,
  Copy,
  AllReduce,
  AllGather,
  ReduceScatter,
  LlmPrefill,
  LlmDecode,
  LlmGenerate,
  LlmTrain,
  Network,
};

// The input type. tf32 and fp8_e4m3 occur in published rows only.
enum class DType : std::uint8_t { Fp32, Fp16, Bf16, Int8, Tf32, Fp8E4M3 };

// The implementation class of a published row where it matters (validation/published/README.md):
// GEMMs wgmma (Hopper warpgroup MMA) or mma_sync (Ampere-style); attention fa2, fa3 or unfused;
// collectives ring, tree or nvls; decode attention grouped, per_head or fa2_forward; norms torch;
// softmax and norms cluster (a row spread over a thread-block cluster's SMs, QuACK). Default (an
// empty cell): the arch's default.
enum class Impl : std::uint8_t {
  Default,
  Wgmma,
  MmaSync,
  Fa2,
  Fa3,
  Unfused,
  Ring,
  Tree,
  Nvls,
  Grouped,
  PerHead,
  Triton,
  Torch,
  Fa2Forward,
  Cluster
};

// Which shape fields a kernel reads (the case-list keys, and the CSV columns it fills).
enum class ShapeKind : std::uint8_t {
  Gemm,       // m, n, k
  Rows,       // rows, cols
  Attention,  // batch, heads, seq, head_dim (decode: seq is the context length L)
  Elements,   // elements
  None,       // launch overhead
  Conv,       // batch, channels, height, width, filters, filter_size, stride, pad
  // Published-only kernels:
  BatchedGemm,    // m, n, k, batch (optional, 1)
  AttentionGqa,   // batch, heads, seq, head_dim, causal (0 or 1), kv_heads (optional, = heads)
  DecodeGqa,      // batch, heads, kv_heads, seq, head_dim, [value_dim] (seq: the context length)
  Buffer,         // bytes
  Collective,     // bytes, ranks (at least 2)
  LlmPrefill,     // batch, input_len, tp
  LlmGeneration,  // batch, input_len, output_len, tp
  LlmTraining,    // batch, seq, grad_accum, dp, recompute (0 or 1), tp, [pp], [vp], zero (0-3),
                  // grad_bits (16 or 32), [autocast], [fp8], [sp], [param_overlap] (0 or 1),
                  // [cp], [recompute_layers]
  Network,        // batch
};

// Every shape field; a kernel uses those of its ShapeKind and leaves the others 0.
struct Shape {
  std::uint64_t m = 0, n = 0, k = 0;
  std::uint64_t batch = 0, heads = 0, seq = 0, head_dim = 0;
  std::uint64_t rows = 0, cols = 0;
  std::uint64_t elements = 0;
  std::uint64_t channels = 0, height = 0, width = 0, filters = 0, filter_size = 0;
  std::uint64_t stride = 1, pad = 0;
  std::uint64_t causal = 0, kv_heads = 0;  // published attention: causal is 0 or 1
  // Decode attention's value head dim (head_dim when absent); below head_dim, the values are
  // the keys' first value_dim columns, read with them (MLA's latent cache: 576 and 512).
  std::uint64_t value_dim = 0;
  std::uint64_t bytes = 0, ranks = 0;      // copy and collectives
  std::uint64_t input_len = 0, output_len = 0, tp = 0;  // LLM serving rows
  std::uint64_t grad_accum = 0, dp = 0, recompute = 0;  // LLM training rows (and batch, seq, tp)
  // LLM training: pipeline stages and virtual stages per stage (1, 1 when absent), the ZeRO stage
  // (0 DDP .. 3 FSDP FULL_SHARD) and the bits gradients are reduced in (16 or 32); autocast 1
  // for PyTorch autocast over fp32 parameters, 0 (when absent) for mixed precision with fp32
  // master weights (workload/llm/llm_builder.h, Precision); fp8 1 for Transformer Engine's FP8
  // linear layers (Precision::Fp8); sp 1 for Megatron-LM's sequence parallelism; param_overlap 1
  // for ZeRO 1/2's weight all-gather under the next forward (--overlap-param-gather, NeMo's
  // overlap_param_sync). Each 0 when absent. cp: context-parallel ranks (1 when absent, and in
  // a Shape built in code, as stride); ep: expert-parallel ranks of a MoE model (1 likewise).
  std::uint64_t pp = 0, vp = 0, zero = 0, grad_bits = 0, autocast = 0;
  std::uint64_t fp8 = 0, sp = 0, param_overlap = 0, cp = 1, ep = 1;
  // 1 for Megatron-LM's --account-for-embedding-in-pipeline-split / -loss-in-: the pipeline split
  // counts the embedding / the loss as a layer (0 when absent).
  std::uint64_t split_embedding = 0, split_loss = 0;
  std::uint64_t recompute_layers = 0;  // with recompute=1, the first N layers a stage; 0: all
  friend bool operator==(const Shape&, const Shape&) = default;
};

struct KernelInfo {
  Kernel kernel;
  std::string_view name;  // as written in a case list and the CSV
  ShapeKind shape;
  std::span<const DType> dtypes;  // those it supports; the first is the default
  std::string_view summary;
  bool published_only = false;  // a kernel of published tables: coda-bench cannot run it
  std::span<const Impl> impls;  // the implementation classes a row may name (besides Default)
};

std::span<const KernelInfo> kernel_catalog();
const KernelInfo& info(Kernel kernel);
std::span<const DType> all_dtypes();
std::string_view dtype_name(DType dtype);
std::size_t dtype_bytes(DType dtype);
std::span<const Impl> all_impls();  // without Default
std::string_view impl_name(Impl impl);  // "" for Default
// Whether a kernel's rows name a model (`model` column): the llm_* and network rows.
bool takes_model(Kernel kernel);

// The shape keys a kind reads, in CSV order.
std::span<const std::string_view> shape_keys(ShapeKind kind);

// A shape field by its key in a case list or a CSV shape ("m", "head_dim", ...); nullptr for an
// unknown key.
std::uint64_t* shape_field(Shape& shape, std::string_view key);
std::uint64_t shape_value(const Shape& shape, std::string_view key);
// A decode row's value head dim: value_dim, or head_dim when it is 0 (not filled in).
std::uint64_t value_dim_of(const Shape& shape);

// Whether a key may be left out of a `kind` shape; fill_shape_defaults() then sets it: conv's
// stride 1 and pad 0, a batched GEMM's batch 1, attention's kv_heads = heads.
bool shape_key_optional(ShapeKind kind, std::string_view key);
void fill_shape_defaults(ShapeKind kind, Shape& shape, std::span<const std::string_view> given);
// Whether 0 is a valid value of a key (conv's pad, attention's causal); every other is >= 1.
bool shape_key_may_be_zero(std::string_view key);

// Conv output extent: (extent + 2 pad - filter) / stride + 1.
std::uint64_t conv_out_extent(const Shape& s, std::uint64_t extent);

// Floating-point (or integer) operations one run performs: 2 per multiply-add for GEMM, conv and
// attention; one per element and pass for the row-wise and elementwise kernels (an estimate, kept
// for completeness; those kernels are judged by GB/s). 0 for the bandwidth and launch probes.
// Published kernels: see each formula in kernel_catalog.cpp; 0 for collectives, and for llm_*
// and network rows, whose work depends on the model (not derivable from the shape).
double operation_count(Kernel kernel, DType dtype, const Shape& shape);
// The bytes one run must move to and from DRAM at the least: each input read once, each output
// written once (unfused kernels also their intermediates, since that is what fusion saves). For
// the L2 probe the bytes read from L2. Published kernels: see kernel_catalog.cpp; 0 for llm_*
// and network rows.
double minimum_bytes(Kernel kernel, DType dtype, const Shape& shape);
// "block 64x64x32, 128 threads, smem 9728 B; ...": the tiling the kernel ran with (empty for a
// published-only kernel: its tiling is the library's).
std::string tiling_summary(Kernel kernel, const Shape& shape);
// A canonical shape text for the CSV: every key of the kind in shape_keys() order,
// "m=4096 n=4096 k=4096".
std::string shape_text(ShapeKind kind, const Shape& shape);

}  // namespace coda::validation
