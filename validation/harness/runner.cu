// coda-bench's device side: buffers, timing with CUDA events, vendor-library plans, and the
// correctness check of every case against the CPU reference (reference/cpu_reference.h).
// No fmt or yaml-cpp here: this file is compiled by nvcc.

#include "validation/harness/runner.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <fstream>
#include <functional>
#include <iterator>
#include <new>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <cublasLt.h>
#include <cublas_v2.h>
#if CODA_WITH_CUDNN
#include <cudnn.h>
#endif

#include "validation/harness/bench_support.h"
#include "validation/kernels/kernels.h"
#include "validation/kernels/tiling.h"
#include "validation/reference/cpu_reference.h"

namespace coda::validation {
namespace {

namespace ref = reference;

// A case that cannot run; the message becomes the row's note.
class CaseFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

void cuda_try(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw CaseFailure(std::string(what) + ": " + cudaGetErrorString(e));
}
void cublas_try(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw CaseFailure(std::string(what) + ": " + cublasGetStatusString(s));
}
#if CODA_WITH_CUDNN
void cudnn_try(cudnnStatus_t s, const char* what) {
  if (s != CUDNN_STATUS_SUCCESS) throw CaseFailure(std::string(what) + ": " + cudnnGetErrorString(s));
}
#define CODA_CUDNN(expr) cudnn_try((expr), #expr)
#endif
#define CODA_CUDA(expr) cuda_try((expr), #expr)
#define CODA_CUBLAS(expr) cublas_try((expr), #expr)

std::string fmt_sci(double v) {
  std::ostringstream out;
  out.precision(3);
  out << std::scientific << v;
  return out.str();
}

template <class T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t count) : count_(count) {
    if (count == 0) return;
    void* p = nullptr;
    const cudaError_t e = cudaMalloc(&p, count * sizeof(T));
    if (e != cudaSuccess) {
      (void)cudaGetLastError();  // out of memory is not sticky; clear it
      throw CaseFailure("cudaMalloc of " + std::to_string(count * sizeof(T)) +
                        " bytes: " + cudaGetErrorString(e));
    }
    ptr_ = static_cast<T*>(p);
  }
  ~DeviceBuffer() {
    if (ptr_) (void)cudaFree(ptr_);
  }
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : ptr_(std::exchange(other.ptr_, nullptr)), count_(other.count_) {}
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(DeviceBuffer&&) = delete;

  T* get() const { return ptr_; }
  std::size_t size() const { return count_; }

 private:
  T* ptr_ = nullptr;
  std::size_t count_ = 0;
};

// `sets` copies of a buffer, the first filled from the host and the others copied from it: the
// rotated copies hold the same data at other addresses.
template <class T>
std::vector<DeviceBuffer<T>> replicated(const std::vector<T>& host, std::uint32_t sets) {
  std::vector<DeviceBuffer<T>> out;
  out.reserve(sets);
  for (std::uint32_t s = 0; s < sets; ++s) out.emplace_back(host.size());
  if (host.empty()) return out;
  CODA_CUDA(cudaMemcpy(out[0].get(), host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  for (std::uint32_t s = 1; s < sets; ++s)
    CODA_CUDA(cudaMemcpy(out[s].get(), out[0].get(), host.size() * sizeof(T),
                         cudaMemcpyDeviceToDevice));
  return out;
}

template <class T>
std::vector<DeviceBuffer<T>> allocated(std::size_t count, std::uint32_t sets) {
  std::vector<DeviceBuffer<T>> out;
  out.reserve(sets);
  for (std::uint32_t s = 0; s < sets; ++s) out.emplace_back(count);
  return out;
}

template <class T>
std::vector<T> download(const DeviceBuffer<T>& d) {
  std::vector<T> out(d.size());
  if (!out.empty())
    CODA_CUDA(cudaMemcpy(out.data(), d.get(), out.size() * sizeof(T), cudaMemcpyDeviceToHost));
  return out;
}

// Device element types: conversion from float (round to nearest even), and back.
template <class T>
T to_device(float v) {
  if constexpr (std::is_same_v<T, __half>) {
    return __float2half_rn(v);
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __float2bfloat16_rn(v);
  } else {
    return v;
  }
}
template <class T>
float to_float(T v) {
  if constexpr (std::is_same_v<T, __half>) {
    return __half2float(v);
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __bfloat162float(v);
  } else {
    return v;
  }
}
// Converts to the device type and rounds `values` in place to what that type holds, so the CPU
// reference sees exactly the GPU's inputs.
template <class T>
std::vector<T> to_device_values(std::vector<float>& values) {
  std::vector<T> out(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    out[i] = to_device<T>(values[i]);
    values[i] = to_float(out[i]);
  }
  return out;
}

template <class T>
constexpr cudaDataType_t cuda_type() {
  if constexpr (std::is_same_v<T, __half>) {
    return CUDA_R_16F;
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return CUDA_R_16BF;
  } else {
    return CUDA_R_32F;
  }
}

int as_int(std::uint64_t v, const char* what) {
  if (v > static_cast<std::uint64_t>(INT_MAX))
    throw CaseFailure(std::string(what) + " = " + std::to_string(v) + " exceeds the kernels' int range");
  return static_cast<int>(v);
}

struct Events {
  cudaEvent_t start = nullptr;
  cudaEvent_t stop = nullptr;
  Events() {
    CODA_CUDA(cudaEventCreate(&start));
    CODA_CUDA(cudaEventCreate(&stop));
  }
  ~Events() {
    if (start) (void)cudaEventDestroy(start);
    if (stop) (void)cudaEventDestroy(stop);
  }
  Events(const Events&) = delete;
  Events& operator=(const Events&) = delete;
};

// Warm-up runs, then one CUDA-event pair around each timed run. Run i (warm-up or timed) uses
// buffer set i % sets, so consecutive runs touch different memory.
std::vector<float> time_runs(cudaStream_t stream, const Case& c, std::uint32_t sets,
                             const std::function<void(std::uint32_t)>& launch) {
  for (std::uint32_t w = 0; w < c.warmup; ++w) launch(w % sets);
  CODA_CUDA(cudaGetLastError());
  CODA_CUDA(cudaStreamSynchronize(stream));
  Events events;
  std::vector<float> times;
  times.reserve(c.repetitions);
  for (std::uint32_t r = 0; r < c.repetitions; ++r) {
    CODA_CUDA(cudaEventRecord(events.start, stream));
    launch((c.warmup + r) % sets);
    CODA_CUDA(cudaEventRecord(events.stop, stream));
    CODA_CUDA(cudaEventSynchronize(events.stop));
    CODA_CUDA(cudaGetLastError());
    float ms = 0.0F;
    CODA_CUDA(cudaEventElapsedTime(&ms, events.start, events.stop));
    times.push_back(ms);
  }
  return times;
}

void finish(Measurement& m, const std::vector<float>& times, double max_error,
            double per_run_divisor = 1.0) {
  const TimingSummary t = summarize(times, per_run_divisor);
  m.median_us = t.median_us;
  m.min_us = t.min_us;
  m.max_us = t.max_us;
  m.max_error = max_error;
  m.passed = std::isfinite(max_error) && max_error <= m.tolerance;
  if (!m.passed)
    m.note = "max_error " + fmt_sci(max_error) + " exceeds the tolerance " + fmt_sci(m.tolerance);
}

double normalised(double diff, double scale) {
  if (std::isnan(diff)) return diff;
  return scale > 0 ? diff / scale : diff;
}

// worst = max(worst, err), where a NaN (a GPU output that is not a number) wins.
void take_worst(double& worst, double err) {
  worst = std::isnan(worst) || std::isnan(err) ? std::nan("") : std::max(worst, err);
}

// The largest |out[i] - expect[i]| over a row, divided by the row's largest |expect|.
double row_error(const float* out, const std::vector<double>& expect) {
  double scale = 0, diff = 0;
  for (std::size_t j = 0; j < expect.size(); ++j) {
    scale = std::max(scale, std::abs(expect[j]));
    take_worst(diff, std::abs(out[j] - expect[j]));
  }
  return normalised(diff, scale);
}

// A cuBLASLt matmul, described and its algorithm chosen once, outside the timed runs.
class LtPlan {
 public:
  // Row-major C[m][n] = A[m][k] B via column-major C^T = op(X) A^T. fp16/bf16: B is [k][n] and X
  // its column-major [n][k] view (no transpose). int8: B is [n][k], X = its column-major [k][n]
  // view, transposed ("TN", as cuBLASLt's int8 kernels want).
  LtPlan(cublasLtHandle_t lt, cudaDataType_t in, bool int8, int m, int n, int k,
         std::size_t workspace_bytes)
      : workspace_(workspace_bytes) {
    const cublasComputeType_t compute = int8 ? CUBLAS_COMPUTE_32I : CUBLAS_COMPUTE_32F;
    const cudaDataType_t scale = int8 ? CUDA_R_32I : CUDA_R_32F;
    const cudaDataType_t out = int8 ? CUDA_R_32I : CUDA_R_32F;
    CODA_CUBLAS(cublasLtMatmulDescCreate(&op_, compute, scale));
    if (int8) {
      const cublasOperation_t t = CUBLAS_OP_T;
      CODA_CUBLAS(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof(t)));
      CODA_CUBLAS(cublasLtMatrixLayoutCreate(&x_, in, k, n, k));
    } else {
      CODA_CUBLAS(cublasLtMatrixLayoutCreate(&x_, in, n, k, n));
    }
    CODA_CUBLAS(cublasLtMatrixLayoutCreate(&a_, in, k, m, k));
    CODA_CUBLAS(cublasLtMatrixLayoutCreate(&c_, out, n, m, n));
    cublasLtMatmulPreference_t pref = nullptr;
    CODA_CUBLAS(cublasLtMatmulPreferenceCreate(&pref));
    const std::uint64_t ws = workspace_bytes;
    cublasLtMatmulHeuristicResult_t result{};
    int returned = 0;
    cublasStatus_t s = cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
    if (s == CUBLAS_STATUS_SUCCESS)
      s = cublasLtMatmulAlgoGetHeuristic(lt, op_, x_, a_, c_, c_, pref, 1, &result, &returned);
    (void)cublasLtMatmulPreferenceDestroy(pref);
    CODA_CUBLAS(s);
    if (returned == 0) throw CaseFailure("cuBLASLt offers no algorithm for this shape and type");
    algo_ = result.algo;
  }
  ~LtPlan() {
    if (c_) (void)cublasLtMatrixLayoutDestroy(c_);
    if (a_) (void)cublasLtMatrixLayoutDestroy(a_);
    if (x_) (void)cublasLtMatrixLayoutDestroy(x_);
    if (op_) (void)cublasLtMatmulDescDestroy(op_);
  }
  LtPlan(const LtPlan&) = delete;
  LtPlan& operator=(const LtPlan&) = delete;

  void run(cublasLtHandle_t lt, const void* alpha, const void* beta, const void* a, const void* b,
           void* c, cudaStream_t stream) const {
    CODA_CUBLAS(cublasLtMatmul(lt, op_, alpha, b, x_, a, a_, beta, c, c_, c, c_, &algo_,
                               workspace_.get(), workspace_.size(), stream));
  }

 private:
  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t x_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr;
  cublasLtMatrixLayout_t c_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
  DeviceBuffer<unsigned char> workspace_;
};

constexpr std::size_t kLtWorkspaceBytes = 32U << 20U;

#if CODA_WITH_CUDNN
// A cuDNN forward convolution, NCHW fp32 with FMA math (no TF32), its algorithm chosen once by
// cuDNN's heuristics (cudnnGetConvolutionForwardAlgorithm_v7), outside the timed runs.
class CudnnConvPlan {
 public:
  CudnnConvPlan(cudnnHandle_t handle, const kernels::ConvDims& d) {
    CODA_CUDNN(cudnnCreateTensorDescriptor(&x_));
    CODA_CUDNN(cudnnCreateTensorDescriptor(&y_));
    CODA_CUDNN(cudnnCreateFilterDescriptor(&w_));
    CODA_CUDNN(cudnnCreateConvolutionDescriptor(&conv_));
    CODA_CUDNN(cudnnSetTensor4dDescriptor(x_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, d.batch,
                                          d.channels, d.height, d.width));
    CODA_CUDNN(cudnnSetFilter4dDescriptor(w_, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, d.filters,
                                          d.channels, d.filter_size, d.filter_size));
    CODA_CUDNN(cudnnSetConvolution2dDescriptor(conv_, d.pad, d.pad, d.stride, d.stride, 1, 1,
                                               CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    CODA_CUDNN(cudnnSetConvolutionMathType(conv_, CUDNN_FMA_MATH));
    int n = 0, c = 0, h = 0, w = 0;
    CODA_CUDNN(cudnnGetConvolution2dForwardOutputDim(conv_, x_, w_, &n, &c, &h, &w));
    if (n != d.batch || c != d.filters || h != d.out_h || w != d.out_w)
      throw CaseFailure("cuDNN's output shape differs from coda's conv_out_extent");
    CODA_CUDNN(cudnnSetTensor4dDescriptor(y_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, h, w));
    constexpr int kWanted = 8;
    cudnnConvolutionFwdAlgoPerf_t perf[kWanted];
    int returned = 0;
    CODA_CUDNN(cudnnGetConvolutionForwardAlgorithm_v7(handle, x_, w_, conv_, y_, kWanted,
                                                      &returned, perf));
    bool found = false;
    for (int i = 0; i < returned && !found; ++i) {
      if (perf[i].status != CUDNN_STATUS_SUCCESS) continue;
      std::size_t bytes = 0;
      if (cudnnGetConvolutionForwardWorkspaceSize(handle, x_, w_, conv_, y_, perf[i].algo,
                                                  &bytes) != CUDNN_STATUS_SUCCESS ||
          bytes > (1ULL << 30U))
        continue;
      algo_ = perf[i].algo;
      workspace_bytes_ = bytes;
      found = true;
    }
    if (!found) throw CaseFailure("cuDNN offers no forward algorithm for this convolution");
  }
  ~CudnnConvPlan() {
    if (conv_) (void)cudnnDestroyConvolutionDescriptor(conv_);
    if (w_) (void)cudnnDestroyFilterDescriptor(w_);
    if (y_) (void)cudnnDestroyTensorDescriptor(y_);
    if (x_) (void)cudnnDestroyTensorDescriptor(x_);
  }
  CudnnConvPlan(const CudnnConvPlan&) = delete;
  CudnnConvPlan& operator=(const CudnnConvPlan&) = delete;

  std::size_t workspace_bytes() const { return workspace_bytes_; }
  // The algorithm cuDNN's heuristics chose, as cudnn_cnn.h names it (without the common prefix),
  // so a row says which kernel family it timed.
  std::string_view algo_name() const {
    switch (algo_) {
      case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM: return "IMPLICIT_GEMM";
      case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM: return "IMPLICIT_PRECOMP_GEMM";
      case CUDNN_CONVOLUTION_FWD_ALGO_GEMM: return "GEMM";
      case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT: return "DIRECT";
      case CUDNN_CONVOLUTION_FWD_ALGO_FFT: return "FFT";
      case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING: return "FFT_TILING";
      case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD: return "WINOGRAD";
      case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED: return "WINOGRAD_NONFUSED";
      default: return "unknown";
    }
  }
  void run(cudnnHandle_t handle, const float* x, const float* w, float* y, void* workspace) const {
    const float alpha = 1.0F, beta = 0.0F;
    CODA_CUDNN(cudnnConvolutionForward(handle, &alpha, x_, x, w_, w, conv_, algo_, workspace,
                                       workspace_bytes_, &beta, y_, y));
  }

 private:
  cudnnTensorDescriptor_t x_ = nullptr;
  cudnnTensorDescriptor_t y_ = nullptr;
  cudnnFilterDescriptor_t w_ = nullptr;
  cudnnConvolutionDescriptor_t conv_ = nullptr;
  cudnnConvolutionFwdAlgo_t algo_{};
  std::size_t workspace_bytes_ = 0;
};
#endif

std::string version_text(int v) {  // 13000 -> "13.0"
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

}  // namespace

int cuda_device_count(std::string& why) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    why = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(e);
    (void)cudaGetLastError();
    return 0;
  }
  if (count == 0) why = "cudaGetDeviceCount found 0 devices";
  return count;
}

struct Runner::Impl {
  DeviceInfo device;
  cudaStream_t stream = nullptr;
  cublasHandle_t cublas = nullptr;
  cublasLtHandle_t lt = nullptr;
#if CODA_WITH_CUDNN
  cudnnHandle_t cudnn = nullptr;
#endif

  Impl() = default;
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  ~Impl() {
#if CODA_WITH_CUDNN
    if (cudnn) (void)cudnnDestroy(cudnn);
#endif
    if (lt) (void)cublasLtDestroy(lt);
    if (cublas) (void)cublasDestroy(cublas);
    if (stream) (void)cudaStreamDestroy(stream);
  }

  cublasHandle_t get_cublas() {
    if (!cublas) {
      CODA_CUBLAS(cublasCreate(&cublas));
      CODA_CUBLAS(cublasSetStream(cublas, stream));
    }
    return cublas;
  }
  cublasLtHandle_t get_lt() {
    if (!lt) CODA_CUBLAS(cublasLtCreate(&lt));
    return lt;
  }

  int blocks() const { return static_cast<int>(std::max<std::uint32_t>(device.sm_count, 1) * 8); }

  void gemm_float(const Case& c, const RunSettings& rs, Measurement& m);
  template <class T>
  void gemm_typed(const Case& c, const RunSettings& rs, Measurement& m);
  void gemm_int8(const Case& c, const RunSettings& rs, Measurement& m);
  void rows(const Case& c, const RunSettings& rs, Measurement& m);
  void attention(const Case& c, const RunSettings& rs, Measurement& m);
  void decode(const Case& c, const RunSettings& rs, Measurement& m);
  void elements(const Case& c, const RunSettings& rs, Measurement& m);
  void launch_overhead(const Case& c, Measurement& m);
  void conv(const Case& c, const RunSettings& rs, Measurement& m);
};

void Runner::Impl::gemm_float(const Case& c, const RunSettings& rs, Measurement& m) {
  switch (c.dtype) {
    case DType::Fp32: return gemm_typed<float>(c, rs, m);
    case DType::Fp16: return gemm_typed<__half>(c, rs, m);
    case DType::Bf16: return gemm_typed<__nv_bfloat16>(c, rs, m);
    case DType::Int8: return gemm_int8(c, rs, m);
    case DType::Tf32:
    case DType::Fp8E4M3:  // published rows only; a case list never names them for these kernels
      throw CaseFailure(std::string("not runnable: coda-bench's GEMMs do not run ") +
                        std::string(dtype_name(c.dtype)));
  }
}

template <class T>
void Runner::Impl::gemm_typed(const Case& c, const RunSettings& rs, Measurement& m) {
  const int mi = as_int(c.shape.m, "m"), ni = as_int(c.shape.n, "n"), ki = as_int(c.shape.k, "k");
  const std::size_t M = c.shape.m, N = c.shape.n, K = c.shape.k;
  std::vector<float> a = uniform_values(M * K, -1.0F, 1.0F, rs.seed, 1);
  std::vector<float> b = uniform_values(K * N, -1.0F, 1.0F, rs.seed, 2);
  const std::vector<T> a_dev = to_device_values<T>(a);
  const std::vector<T> b_dev = to_device_values<T>(b);
  const std::uint64_t set_bytes = (M * K + K * N) * sizeof(T) + M * N * sizeof(float);
  const std::uint32_t sets = buffer_sets(set_bytes, device.l2_bytes);
  m.buffer_sets = sets;
  m.working_set_bytes = sets * set_bytes;
  const auto da = replicated(a_dev, sets);
  const auto db = replicated(b_dev, sets);
  const auto dc = allocated<float>(M * N, sets);

  std::function<void(std::uint32_t)> launch;
  std::unique_ptr<LtPlan> plan;
  const float alpha = 1.0F, beta = 0.0F;
  if (c.kernel == Kernel::GemmCublas) {
    cublasHandle_t h = get_cublas();
    launch = [&, h](std::uint32_t s) {
      CODA_CUBLAS(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, ni, mi, ki, &alpha, db[s].get(),
                               cuda_type<T>(), ni, da[s].get(), cuda_type<T>(), ki, &beta,
                               dc[s].get(), CUDA_R_32F, ni, CUBLAS_COMPUTE_32F,
                               CUBLAS_GEMM_DEFAULT));
    };
  } else if (c.kernel == Kernel::GemmCublasLt) {
    plan = std::make_unique<LtPlan>(get_lt(), cuda_type<T>(), false, mi, ni, ki,
                                    kLtWorkspaceBytes);
    cublasLtHandle_t h = lt;
    launch = [&, h](std::uint32_t s) {
      plan->run(h, &alpha, &beta, da[s].get(), db[s].get(), dc[s].get(), stream);
    };
  } else if constexpr (std::is_same_v<T, float>) {
    const bool naive = c.kernel == Kernel::GemmNaive;
    launch = [&, naive](std::uint32_t s) {
      if (naive)
        kernels::gemm_naive(da[s].get(), db[s].get(), dc[s].get(), mi, ni, ki, stream);
      else
        kernels::gemm_tiled(da[s].get(), db[s].get(), dc[s].get(), mi, ni, ki, stream);
    };
  } else {
    launch = [&](std::uint32_t s) {
      kernels::gemm_wmma(da[s].get(), db[s].get(), dc[s].get(), mi, ni, ki, stream);
    };
  }
  const std::vector<float> times = time_runs(stream, c, sets, launch);
  const std::vector<float> out = download(dc[0]);
  double worst = 0;
  for (std::size_t idx : sample_indices(M * N, rs.check_samples, rs.seed)) {
    const ref::Dot d = ref::gemm_entry(a, b, N, K, idx / N, idx % N);
    take_worst(worst, normalised(std::abs(out[idx] - d.value), d.abs_sum));
  }
  finish(m, times, worst);
}

void Runner::Impl::gemm_int8(const Case& c, const RunSettings& rs, Measurement& m) {
  const int mi = as_int(c.shape.m, "m"), ni = as_int(c.shape.n, "n"), ki = as_int(c.shape.k, "k");
  const std::size_t M = c.shape.m, N = c.shape.n, K = c.shape.k;
  const std::vector<float> a = uniform_values(M * K, -1.0F, 1.0F, rs.seed, 1);
  std::vector<float> b = uniform_values(N * K, -1.0F, 1.0F, rs.seed, 2);  // [n][k]
  for (std::size_t ch : outlier_channels(N)) {
    for (std::size_t p = 0; p < K; ++p) b[ch * K + p] *= kOutlierScale;
  }
  // The GPU runs the per-channel variant; both have the same speed, only the scales differ.
  const ref::Quantized qa = ref::quantize_per_tensor(a);
  const ref::Quantized qb = ref::quantize_per_row(b, N, K);
  const std::uint64_t set_bytes = M * K + N * K + M * N * sizeof(std::int32_t);
  const std::uint32_t sets = buffer_sets(set_bytes, device.l2_bytes);
  m.buffer_sets = sets;
  m.working_set_bytes = sets * set_bytes;
  const auto da = replicated(qa.values, sets);
  const auto db = replicated(qb.values, sets);
  const auto dc = allocated<std::int32_t>(M * N, sets);

  std::function<void(std::uint32_t)> launch;
  std::unique_ptr<LtPlan> plan;
  const std::int32_t alpha = 1, beta = 0;
  if (c.kernel == Kernel::GemmCublasLt) {
    plan = std::make_unique<LtPlan>(get_lt(), CUDA_R_8I, true, mi, ni, ki, kLtWorkspaceBytes);
    cublasLtHandle_t h = lt;
    launch = [&, h](std::uint32_t s) {
      plan->run(h, &alpha, &beta, da[s].get(), db[s].get(), dc[s].get(), stream);
    };
  } else {
    launch = [&](std::uint32_t s) {
      kernels::gemm_int8(da[s].get(), db[s].get(), dc[s].get(), mi, ni, ki, stream);
    };
  }
  const std::vector<float> times = time_runs(stream, c, sets, launch);
  const std::vector<std::int32_t> out = download(dc[0]);
  double worst = 0;
  std::vector<std::pair<std::size_t, std::size_t>> entries;
  for (std::size_t idx : sample_indices(M * N, rs.check_samples, rs.seed)) {
    const std::size_t i = idx / N, j = idx % N;
    entries.emplace_back(i, j);
    const std::int64_t exact = ref::int8_dot(qa.values, qb.values, K, i, j);
    double abs_sum = 0;
    for (std::size_t p = 0; p < K; ++p)
      abs_sum += std::abs(static_cast<double>(qa.values[i * K + p]) * qb.values[j * K + p]);
    take_worst(worst, normalised(std::abs(static_cast<double>(out[idx] - exact)), abs_sum));
  }
  const ref::QuantizationError q = ref::quantization_error(a, b, M, N, K, entries);
  m.quant_error_per_tensor = q.per_tensor;
  m.quant_error_per_channel = q.per_channel;
  finish(m, times, worst);
}

void Runner::Impl::rows(const Case& c, const RunSettings& rs, Measurement& m) {
  const int ri = as_int(c.shape.rows, "rows"), ci = as_int(c.shape.cols, "cols");
  const std::size_t R = c.shape.rows, C = c.shape.cols;
  const std::vector<float> x = uniform_values(R * C, -1.5F, 2.5F, rs.seed, 1);
  const std::vector<float> gamma = uniform_values(C, 0.5F, 1.5F, rs.seed, 2);
  const std::vector<float> beta = uniform_values(C, -0.5F, 0.5F, rs.seed, 3);
  const std::vector<float> bias = uniform_values(C, -1.0F, 1.0F, rs.seed, 4);
  const bool unfused = c.kernel == Kernel::BiasGeluUnfused;
  const bool naive = c.kernel == Kernel::SoftmaxNaive;
  const std::uint64_t set_bytes =
      R * C * sizeof(float) * (unfused ? 3 : 2) + (naive ? 2 * R * sizeof(float) : 0);
  const std::uint32_t sets = buffer_sets(set_bytes, device.l2_bytes);
  m.buffer_sets = sets;
  m.working_set_bytes = sets * set_bytes;
  const auto dx = replicated(x, sets);
  const auto dy = allocated<float>(R * C, sets);
  const auto dt = allocated<float>(unfused ? R * C : 0, sets);
  const auto dmax = allocated<float>(naive ? R : 0, sets);
  const auto dsum = allocated<float>(naive ? R : 0, sets);
  const auto dgamma = replicated(gamma, 1);
  const auto dbeta = replicated(beta, 1);
  const auto dbias = replicated(bias, 1);
  constexpr float kEps = 1e-5F;
  const int blocks = this->blocks();

  const std::function<void(std::uint32_t)> launch = [&](std::uint32_t s) {
    switch (c.kernel) {
      case Kernel::SoftmaxNaive:
        kernels::softmax_naive(dx[s].get(), dy[s].get(), dmax[s].get(), dsum[s].get(), ri, ci,
                               stream);
        break;
      case Kernel::SoftmaxOnline:
        kernels::softmax_online(dx[s].get(), dy[s].get(), ri, ci, stream);
        break;
      case Kernel::LayerNorm:
        kernels::layernorm(dx[s].get(), dgamma[0].get(), dbeta[0].get(), dy[s].get(), ri, ci,
                           kEps, stream);
        break;
      case Kernel::RmsNorm:
        kernels::rmsnorm(dx[s].get(), dgamma[0].get(), dy[s].get(), ri, ci, kEps, stream);
        break;
      case Kernel::BiasGeluFused:
        kernels::bias_gelu_fused(dx[s].get(), dbias[0].get(), dy[s].get(), ri, ci, blocks, stream);
        break;
      default:
        kernels::bias_gelu_unfused(dx[s].get(), dbias[0].get(), dt[s].get(), dy[s].get(), ri, ci,
                                   blocks, stream);
        break;
    }
  };
  const std::vector<float> times = time_runs(stream, c, sets, launch);
  const std::vector<float> out = download(dy[0]);
  double worst = 0;
  for (std::size_t r : sample_indices(R, rs.check_samples, rs.seed)) {
    const std::span<const float> row(x.data() + r * C, C);
    std::vector<double> expect;
    switch (c.kernel) {
      case Kernel::SoftmaxNaive:
      case Kernel::SoftmaxOnline: expect = ref::softmax(row); break;
      case Kernel::LayerNorm: expect = ref::layernorm(row, gamma, beta, kEps); break;
      case Kernel::RmsNorm: expect = ref::rmsnorm(row, gamma, kEps); break;
      default: expect = ref::bias_gelu(row, bias); break;
    }
    take_worst(worst, row_error(out.data() + r * C, expect));
  }
  finish(m, times, worst);
}

void Runner::Impl::attention(const Case& c, const RunSettings& rs, Measurement& m) {
  const std::size_t BH = c.shape.batch * c.shape.heads, S = c.shape.seq, D = c.shape.head_dim;
  const int bhi = as_int(BH, "batch*heads"), si = as_int(S, "seq"), di = as_int(D, "head_dim");
  as_int(BH * S, "batch*heads*seq");
  const float scale = 1.0F / std::sqrt(static_cast<float>(D));
  std::vector<float> q = uniform_values(BH * S * D, -1.0F, 1.0F, rs.seed, 1);
  std::vector<float> k = uniform_values(BH * S * D, -1.0F, 1.0F, rs.seed, 2);
  std::vector<float> v = uniform_values(BH * S * D, -1.0F, 1.0F, rs.seed, 3);
  const auto qh = to_device_values<__half>(q);
  const auto kh = to_device_values<__half>(k);
  const auto vh = to_device_values<__half>(v);
  const bool unfused = c.kernel == Kernel::AttentionUnfused;
  const std::uint64_t set_bytes = BH * S * D * (3 * 2 + 4) + (unfused ? BH * S * S * (4 + 2) : 0);
  const std::uint32_t sets = buffer_sets(set_bytes, device.l2_bytes);
  m.buffer_sets = sets;
  m.working_set_bytes = sets * set_bytes;
  const auto dq = replicated(qh, sets);
  const auto dk = replicated(kh, sets);
  const auto dv = replicated(vh, sets);
  const auto dout = allocated<float>(BH * S * D, sets);
  const auto dscores = allocated<float>(unfused ? BH * S * S : 0, sets);
  const auto dprobs = allocated<__half>(unfused ? BH * S * S : 0, sets);
  if (!unfused) CODA_CUDA(kernels::attention_flash_prepare(di));

  const std::function<void(std::uint32_t)> launch = [&](std::uint32_t s) {
    if (unfused) {
      kernels::attention_scores(dq[s].get(), dk[s].get(), dscores[s].get(), bhi, si, di, scale,
                                stream);
      kernels::softmax_online(dscores[s].get(), dprobs[s].get(), bhi * si, si, stream);
      kernels::attention_pv(dprobs[s].get(), dv[s].get(), dout[s].get(), bhi, si, di, stream);
    } else {
      kernels::attention_flash(dq[s].get(), dk[s].get(), dv[s].get(), dout[s].get(), bhi, si, di,
                               scale, stream);
    }
  };
  const std::vector<float> times = time_runs(stream, c, sets, launch);
  const std::vector<float> out = download(dout[0]);
  double worst = 0;
  for (std::size_t idx : sample_indices(BH * S, rs.check_samples, rs.seed)) {
    const std::size_t h = idx / S;
    const std::span<const float> kh_span(k.data() + h * S * D, S * D);
    const std::span<const float> vh_span(v.data() + h * S * D, S * D);
    const std::vector<double> expect =
        ref::attention_row(std::span<const float>(q.data() + idx * D, D), kh_span, vh_span, S,
                           scale);
    take_worst(worst, row_error(out.data() + idx * D, expect));
  }
  finish(m, times, worst);
}

void Runner::Impl::decode(const Case& c, const RunSettings& rs, Measurement& m) {
  const std::size_t BH = c.shape.batch * c.shape.heads, L = c.shape.seq, D = c.shape.head_dim;
  const int bhi = as_int(BH, "batch*heads"), li = as_int(L, "seq"), di = as_int(D, "head_dim");
  const float scale = 1.0F / std::sqrt(static_cast<float>(D));
  std::vector<float> q = uniform_values(BH * D, -1.0F, 1.0F, rs.seed, 1);
  std::vector<float> k = uniform_values(BH * L * D, -1.0F, 1.0F, rs.seed, 2);
  std::vector<float> v = uniform_values(BH * L * D, -1.0F, 1.0F, rs.seed, 3);
  const auto qh = to_device_values<__half>(q);
  const auto kh = to_device_values<__half>(k);
  const auto vh = to_device_values<__half>(v);
  const std::uint64_t set_bytes = BH * D * (2 + 4) + 2 * BH * L * D * 2;
  const std::uint32_t sets = buffer_sets(set_bytes, device.l2_bytes);
  m.buffer_sets = sets;
  m.working_set_bytes = sets * set_bytes;
  const auto dq = replicated(qh, sets);
  const auto dk = replicated(kh, sets);
  const auto dv = replicated(vh, sets);
  const auto dout = allocated<float>(BH * D, sets);
  const std::function<void(std::uint32_t)> launch = [&](std::uint32_t s) {
    kernels::decode_attention(dq[s].get(), dk[s].get(), dv[s].get(), dout[s].get(), bhi, li, di,
                              scale, stream);
  };
  const std::vector<float> times = time_runs(stream, c, sets, launch);
  const std::vector<float> out = download(dout[0]);
  double worst = 0;
  for (std::size_t h : sample_indices(BH, rs.check_samples, rs.seed)) {
    const std::vector<double> expect = ref::attention_row(
        std::span<const float>(q.data() + h * D, D),
        std::span<const float>(k.data() + h * L * D, L * D),
        std::span<const float>(v.data() + h * L * D, L * D), L, scale);
    take_worst(worst, row_error(out.data() + h * D, expect));
  }
  finish(m, times, worst);
}

void Runner::Impl::elements(const Case& c, const RunSettings& rs, Measurement& m) {
  const std::size_t n = c.shape.elements;
  const std::vector<float> x = uniform_values(n, -1.0F, 1.0F, rs.seed, 1);
  const int blocks = this->blocks();
  if (c.kernel == Kernel::L2Bandwidth) {
    const std::uint64_t bytes = n * sizeof(float);
    if (bytes > device.l2_bytes)
      throw CaseFailure("a buffer of " + std::to_string(bytes) + " bytes does not fit the L2 (" +
                        std::to_string(device.l2_bytes) + " bytes) the probe must stay in");
    // Deliberately one set: this probe measures the L2, so its buffer is meant to stay there.
    const auto dx = replicated(x, 1);
    const auto dout = allocated<float>(static_cast<std::size_t>(blocks) *
                                           tiling::kElementwiseThreads, 1);
    m.buffer_sets = 1;
    m.working_set_bytes = bytes;
    const std::function<void(std::uint32_t)> launch = [&](std::uint32_t) {
      kernels::l2_read(reinterpret_cast<const float4*>(dx[0].get()), n / 4, dout[0].get(), blocks,
                       stream);
    };
    const std::vector<float> times = time_runs(stream, c, 1, launch);
    const std::vector<float> out = download(dout[0]);
    const ref::Dot expect = ref::sum(x);
    double got = 0;
    for (float v : out) got += v;
    finish(m, times,
           normalised(std::abs(got - tiling::kL2Passes * expect.value),
                      tiling::kL2Passes * expect.abs_sum));
    return;
  }
  if (c.kernel == Kernel::ReduceSum) {
    const std::uint64_t set_bytes = n * sizeof(float);
    const std::uint32_t sets = buffer_sets(set_bytes, device.l2_bytes);
    m.buffer_sets = sets;
    m.working_set_bytes = sets * set_bytes;
    const auto dx = replicated(x, sets);
    const auto dpartial = allocated<float>(tiling::kReduceMaxBlocks, sets);
    const auto dout = allocated<float>(1, sets);
    const std::function<void(std::uint32_t)> launch = [&](std::uint32_t s) {
      kernels::reduce_sum(dx[s].get(), n, dpartial[s].get(), dout[s].get(), stream);
    };
    const std::vector<float> times = time_runs(stream, c, sets, launch);
    const std::vector<float> out = download(dout[0]);
    const ref::Dot expect = ref::sum(x);
    finish(m, times, normalised(std::abs(out[0] - expect.value), expect.abs_sum));
    return;
  }
  // Copy probe.
  const std::uint64_t set_bytes = 2 * n * sizeof(float);
  const std::uint32_t sets = buffer_sets(set_bytes, device.l2_bytes);
  m.buffer_sets = sets;
  m.working_set_bytes = sets * set_bytes;
  const auto dsrc = replicated(x, sets);
  const auto ddst = allocated<float>(n, sets);
  const std::function<void(std::uint32_t)> launch = [&](std::uint32_t s) {
    kernels::copy(reinterpret_cast<const float4*>(dsrc[s].get()),
                  reinterpret_cast<float4*>(ddst[s].get()), n / 4, blocks, stream);
  };
  const std::vector<float> times = time_runs(stream, c, sets, launch);
  const std::vector<float> out = download(ddst[0]);
  double worst = 0;
  for (std::size_t i : sample_indices(n, std::size_t{rs.check_samples} * 64, rs.seed))
    take_worst(worst, static_cast<double>(std::abs(out[i] - x[i])));
  finish(m, times, worst);
}

void Runner::Impl::launch_overhead(const Case& c, Measurement& m) {
  m.buffer_sets = 1;
  m.working_set_bytes = 0;
  const std::function<void(std::uint32_t)> launch = [&](std::uint32_t) {
    for (int i = 0; i < tiling::kLaunchesPerRepetition; ++i) kernels::empty(stream);
  };
  const std::vector<float> times = time_runs(stream, c, 1, launch);
  finish(m, times, 0.0, tiling::kLaunchesPerRepetition);
}

void Runner::Impl::conv(const Case& c, const RunSettings& rs, Measurement& m) {
  const Shape& s = c.shape;
  kernels::ConvDims d{};
  d.batch = as_int(s.batch, "batch");
  d.channels = as_int(s.channels, "channels");
  d.height = as_int(s.height, "height");
  d.width = as_int(s.width, "width");
  d.filters = as_int(s.filters, "filters");
  d.filter_size = as_int(s.filter_size, "filter_size");
  d.stride = as_int(s.stride, "stride");
  d.pad = as_int(s.pad, "pad");
  d.out_h = as_int(conv_out_extent(s, s.height), "output height");
  d.out_w = as_int(conv_out_extent(s, s.width), "output width");
  const std::size_t in_count = s.batch * s.channels * s.height * s.width;
  const std::size_t w_count = s.filters * s.channels * s.filter_size * s.filter_size;
  const std::size_t out_count = s.batch * s.filters * static_cast<std::size_t>(d.out_h) *
                                static_cast<std::size_t>(d.out_w);
  as_int(s.batch * static_cast<std::size_t>(d.out_h) * static_cast<std::size_t>(d.out_w),
         "output pixels");
  const std::vector<float> x = uniform_values(in_count, -1.0F, 1.0F, rs.seed, 1);
  const std::vector<float> w = uniform_values(w_count, -1.0F, 1.0F, rs.seed, 2);
  const std::uint64_t set_bytes = (in_count + w_count + out_count) * sizeof(float);
  const std::uint32_t sets = buffer_sets(set_bytes, device.l2_bytes);
  m.buffer_sets = sets;
  m.working_set_bytes = sets * set_bytes;
  const auto dx = replicated(x, sets);
  const auto dw = replicated(w, sets);
  const auto dy = allocated<float>(out_count, sets);

  std::function<void(std::uint32_t)> launch;
#if CODA_WITH_CUDNN
  std::unique_ptr<CudnnConvPlan> plan;
  std::unique_ptr<DeviceBuffer<unsigned char>> workspace;
#endif
  if (c.kernel == Kernel::Conv2dCudnn) {
#if CODA_WITH_CUDNN
    if (!cudnn) {
      CODA_CUDNN(cudnnCreate(&cudnn));
      CODA_CUDNN(cudnnSetStream(cudnn, stream));
    }
    plan = std::make_unique<CudnnConvPlan>(cudnn, d);
    m.tiling += ": CUDNN_CONVOLUTION_FWD_ALGO_" + std::string(plan->algo_name()) + ", workspace " +
                std::to_string(plan->workspace_bytes()) + " B";
    workspace = std::make_unique<DeviceBuffer<unsigned char>>(plan->workspace_bytes());
    launch = [&](std::uint32_t set) {
      plan->run(cudnn, dx[set].get(), dw[set].get(), dy[set].get(), workspace->get());
    };
#else
    throw CaseFailure("coda-bench was built without cuDNN (cudnn.h not found)");
#endif
  } else {
    launch = [&](std::uint32_t set) {
      kernels::conv2d_implicit_gemm(dx[set].get(), dw[set].get(), dy[set].get(), d, stream);
    };
  }
  const std::vector<float> times = time_runs(stream, c, sets, launch);
  const std::vector<float> out = download(dy[0]);
  const std::size_t pq = static_cast<std::size_t>(d.out_h) * static_cast<std::size_t>(d.out_w);
  double worst = 0;
  for (std::size_t idx : sample_indices(out_count, rs.check_samples, rs.seed)) {
    const std::size_t n = idx / (s.filters * pq);
    const std::size_t kf = (idx / pq) % s.filters;
    const std::size_t p = (idx % pq) / static_cast<std::size_t>(d.out_w);
    const std::size_t q = idx % static_cast<std::size_t>(d.out_w);
    const ref::Dot expect = ref::conv_entry(x, w, s, n, kf, p, q);
    take_worst(worst, normalised(std::abs(out[idx] - expect.value), expect.abs_sum));
  }
  finish(m, times, worst);
}

Runner::Runner(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Runner::~Runner() = default;

std::unique_ptr<Runner> Runner::open(std::string& why) {
  if (cuda_device_count(why) == 0) return nullptr;
  auto impl = std::make_unique<Impl>();
  try {
    CODA_CUDA(cudaSetDevice(0));
    cudaDeviceProp prop{};
    CODA_CUDA(cudaGetDeviceProperties(&prop, 0));
    DeviceInfo& dev = impl->device;
    dev.name = prop.name;
    dev.compute_capability = std::to_string(prop.major) + "." + std::to_string(prop.minor);
    dev.sm_count = static_cast<std::uint32_t>(prop.multiProcessorCount);
    dev.l2_bytes = static_cast<std::uint64_t>(prop.l2CacheSize);
    int value = 0;
    CODA_CUDA(cudaDeviceGetAttribute(&value, cudaDevAttrClockRate, 0));
    dev.sm_clock_mhz = static_cast<std::uint32_t>(value / 1000);
    CODA_CUDA(cudaDeviceGetAttribute(&value, cudaDevAttrMemoryClockRate, 0));
    dev.mem_clock_mhz = static_cast<std::uint32_t>(value / 1000);
    CODA_CUDA(cudaDeviceGetAttribute(&value, cudaDevAttrEccEnabled, 0));
    dev.ecc = value != 0 ? "on" : "off";
    CODA_CUDA(cudaDriverGetVersion(&value));
    const std::string driver_api = version_text(value);
    std::ifstream proc("/proc/driver/nvidia/version");
    const std::string proc_text{std::istreambuf_iterator<char>(proc),
                                std::istreambuf_iterator<char>()};
    const std::string kernel_driver = driver_version_from_proc(proc_text);
    dev.driver = kernel_driver.empty() ? "CUDA " + driver_api
                                        : kernel_driver + " (CUDA " + driver_api + ")";
    CODA_CUDA(cudaRuntimeGetVersion(&value));
    dev.cuda_runtime = version_text(value);
    CODA_CUDA(cudaStreamCreateWithFlags(&impl->stream, cudaStreamNonBlocking));
  } catch (const CaseFailure& e) {
    why = e.what();
    return nullptr;
  }
  return std::unique_ptr<Runner>(new Runner(std::move(impl)));
}

const DeviceInfo& Runner::device() const { return impl_->device; }

Measurement Runner::run(const Case& c, const RunSettings& settings) {
  Measurement m;
  m.kernel = c.kernel;
  m.dtype = c.dtype;
  m.shape = c.shape;
  m.repetitions = c.repetitions;
  m.warmup = c.warmup;
  m.operations = operation_count(c.kernel, c.dtype, c.shape);
  m.bytes = minimum_bytes(c.kernel, c.dtype, c.shape);
  m.tolerance = tolerance(c.kernel, c.dtype);
  m.tiling = tiling_summary(c.kernel, c.shape);
  m.device = impl_->device;
  m.date = settings.date;
  m.source = settings.source;
  try {
    switch (info(c.kernel).shape) {
      case ShapeKind::Gemm: impl_->gemm_float(c, settings, m); break;
      case ShapeKind::Rows: impl_->rows(c, settings, m); break;
      case ShapeKind::Attention:
        if (c.kernel == Kernel::DecodeAttention)
          impl_->decode(c, settings, m);
        else
          impl_->attention(c, settings, m);
        break;
      case ShapeKind::Elements: impl_->elements(c, settings, m); break;
      case ShapeKind::None: impl_->launch_overhead(c, m); break;
      case ShapeKind::Conv: impl_->conv(c, settings, m); break;
      case ShapeKind::BatchedGemm:
      case ShapeKind::AttentionGqa:
      case ShapeKind::DecodeGqa:
      case ShapeKind::Buffer:
      case ShapeKind::Collective:
      case ShapeKind::LlmPrefill:
      case ShapeKind::LlmGeneration:
      case ShapeKind::LlmTraining:
      case ShapeKind::Network:
        throw CaseFailure(std::string("not runnable: ") + std::string(info(c.kernel).name) +
                          " is a kernel of published tables, not one coda-bench ships");
    }
  } catch (const CaseFailure& e) {
    m.passed = false;
    m.note = e.what();
    (void)cudaGetLastError();
    (void)cudaStreamSynchronize(impl_->stream);
    (void)cudaGetLastError();
  } catch (const std::bad_alloc&) {
    m.passed = false;
    m.note = "host out of memory for the inputs or the reference";
  }
  return m;
}

}  // namespace coda::validation
