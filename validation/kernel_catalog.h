#pragma once
// The bundled kernels coda-bench can run: their names in a case list, which shape fields and
// dtypes each takes, what each computes (floating-point operations and the minimum DRAM bytes, for
// the achieved TFLOP/s and GB/s columns) and how each is tiled. Plain C++: no CUDA here.

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
};

enum class DType : std::uint8_t { Fp32, Fp16, Bf16, Int8 };

// Which shape fields a kernel reads (the case-list keys, and the CSV columns it fills).
enum class ShapeKind : std::uint8_t {
  Gemm,       // m, n, k
  Rows,       // rows, cols
  Attention,  // batch, heads, seq, head_dim (decode: seq is the context length L)
  Elements,   // elements
  None,       // launch overhead
  Conv,       // batch, channels, height, width, filters, filter_size, stride, pad
};

// Every shape field; a kernel uses those of its ShapeKind and leaves the others 0.
struct Shape {
  std::uint64_t m = 0, n = 0, k = 0;
  std::uint64_t batch = 0, heads = 0, seq = 0, head_dim = 0;
  std::uint64_t rows = 0, cols = 0;
  std::uint64_t elements = 0;
  std::uint64_t channels = 0, height = 0, width = 0, filters = 0, filter_size = 0;
  std::uint64_t stride = 1, pad = 0;
  friend bool operator==(const Shape&, const Shape&) = default;
};

struct KernelInfo {
  Kernel kernel;
  std::string_view name;  // as written in a case list and the CSV
  ShapeKind shape;
  std::span<const DType> dtypes;  // those it supports; the first is the default
  std::string_view summary;
};

std::span<const KernelInfo> kernel_catalog();
const KernelInfo& info(Kernel kernel);
std::string_view dtype_name(DType dtype);
std::size_t dtype_bytes(DType dtype);

// The shape keys a kind reads, in CSV order.
std::span<const std::string_view> shape_keys(ShapeKind kind);

// A shape field by its key in a case list or a CSV shape ("m", "head_dim", ...); nullptr for an
// unknown key.
std::uint64_t* shape_field(Shape& shape, std::string_view key);
std::uint64_t shape_value(const Shape& shape, std::string_view key);

// Conv output extent: (extent + 2 pad - filter) / stride + 1.
std::uint64_t conv_out_extent(const Shape& s, std::uint64_t extent);

// Floating-point (or integer) operations one run performs: 2 per multiply-add for GEMM, conv and
// attention; one per element and pass for the row-wise and elementwise kernels (an estimate, kept
// for completeness; those kernels are judged by GB/s). 0 for the bandwidth and launch probes.
double operation_count(Kernel kernel, DType dtype, const Shape& shape);
// The bytes one run must move to and from DRAM at the least: each input read once, each output
// written once (unfused kernels also their intermediates, since that is what fusion saves). For
// the L2 probe the bytes read from L2.
double minimum_bytes(Kernel kernel, DType dtype, const Shape& shape);
// "block 64x64x32, 128 threads, smem 9728 B; ...": the tiling the kernel ran with.
std::string tiling_summary(Kernel kernel, const Shape& shape);
// A canonical shape text for the CSV: every key of the kind in shape_keys() order,
// "m=4096 n=4096 k=4096".
std::string shape_text(ShapeKind kind, const Shape& shape);

}  // namespace coda::validation
