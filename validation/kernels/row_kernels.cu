// Row-wise, elementwise and probe kernels: softmax (naive three-pass and safe online), LayerNorm
// (Welford), RMSNorm, bias + GELU (fused and unfused), sum reduction, copy and L2 bandwidth
// probes, and the empty kernel of the launch-overhead probe.

#include <cmath>

#include "validation/kernels/kernels.h"
#include "validation/kernels/tiling.h"

namespace coda::validation::kernels {
namespace {

using namespace tiling;
constexpr unsigned kFullMask = 0xffffffffU;
constexpr int kWarps = kRowWarps;

struct Sum {
  __device__ float operator()(float a, float b) const { return a + b; }
};
struct Max {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

template <class Op>
__device__ float warp_reduce(float v, Op op) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v = op(v, __shfl_xor_sync(kFullMask, v, offset));
  return v;
}

// Block reduction for blocks of kRowThreads threads: warp shuffles, then one partial per warp in
// `scratch` (kWarps floats), reduced by warp 0 and broadcast. Every thread gets the result.
template <class Op>
__device__ float block_reduce(float v, float* scratch, Op op, float identity) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int warp = static_cast<int>(threadIdx.x) / 32;
  v = warp_reduce(v, op);
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  if (warp == 0) {
    float r = lane < kWarps ? scratch[lane] : identity;
    r = warp_reduce(r, op);
    if (lane == 0) scratch[0] = r;
  }
  __syncthreads();
  const float result = scratch[0];
  __syncthreads();  // scratch may be reused by the caller's next reduction
  return result;
}

__device__ void store(float* p, float v) { *p = v; }
__device__ void store(__half* p, float v) { *p = __float2half_rn(v); }

// --- softmax, naive: three kernels, each one block of 256 threads per row; shared memory
// 8 floats (32 B) for the block reduction. Reads the row three times, writes it once.
__global__ void __launch_bounds__(kRowThreads)
    row_max_kernel(const float* __restrict__ x, float* __restrict__ row_max, int cols) {
  __shared__ float scratch[kWarps];
  const float* row = x + static_cast<std::size_t>(blockIdx.x) * cols;
  float m = -INFINITY;
  for (int c = static_cast<int>(threadIdx.x); c < cols; c += kRowThreads) m = fmaxf(m, row[c]);
  m = block_reduce(m, scratch, Max{}, -INFINITY);
  if (threadIdx.x == 0) row_max[blockIdx.x] = m;
}

__global__ void __launch_bounds__(kRowThreads)
    row_sum_exp_kernel(const float* __restrict__ x, const float* __restrict__ row_max,
                       float* __restrict__ row_sum, int cols) {
  __shared__ float scratch[kWarps];
  const float* row = x + static_cast<std::size_t>(blockIdx.x) * cols;
  const float m = row_max[blockIdx.x];
  float s = 0.0F;
  for (int c = static_cast<int>(threadIdx.x); c < cols; c += kRowThreads) s += expf(row[c] - m);
  s = block_reduce(s, scratch, Sum{}, 0.0F);
  if (threadIdx.x == 0) row_sum[blockIdx.x] = s;
}

__global__ void __launch_bounds__(kRowThreads)
    softmax_normalize_kernel(const float* __restrict__ x, const float* __restrict__ row_max,
                             const float* __restrict__ row_sum, float* __restrict__ y, int cols) {
  const std::size_t base = static_cast<std::size_t>(blockIdx.x) * cols;
  const float m = row_max[blockIdx.x];
  const float inv = 1.0F / row_sum[blockIdx.x];
  for (int c = static_cast<int>(threadIdx.x); c < cols; c += kRowThreads)
    y[base + c] = expf(x[base + c] - m) * inv;
}

// --- softmax, safe online (Milakov & Gimelshein 2018): one sweep keeps a running (max, sum) per
// thread, merged across the warp by shuffles and across the block through shared memory
// (2 x 8 floats = 64 B); a second sweep writes exp(x - max) / sum (the row, 16 KiB for 4096
// fp32 columns, is then served from cache). One block of 256 threads per row.
__device__ void merge_max_sum(float& m, float& d, float m2, float d2) {
  const float mx = fmaxf(m, m2);
  if (mx == -INFINITY) return;  // both empty
  d = d * expf(m - mx) + d2 * expf(m2 - mx);
  m = mx;
}

template <class Out>
__global__ void __launch_bounds__(kRowThreads)
    softmax_online_kernel(const float* __restrict__ x, Out* __restrict__ y, int cols) {
  __shared__ float sm[kWarps];
  __shared__ float sd[kWarps];
  const std::size_t base = static_cast<std::size_t>(blockIdx.x) * cols;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int warp = static_cast<int>(threadIdx.x) / 32;
  float m = -INFINITY, d = 0.0F;
  for (int c = static_cast<int>(threadIdx.x); c < cols; c += kRowThreads) {
    const float v = x[base + c];
    if (v > m) {
      d = d * expf(m - v) + 1.0F;
      m = v;
    } else {
      d += expf(v - m);
    }
  }
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    const float m2 = __shfl_xor_sync(kFullMask, m, offset);
    const float d2 = __shfl_xor_sync(kFullMask, d, offset);
    merge_max_sum(m, d, m2, d2);
  }
  if (lane == 0) {
    sm[warp] = m;
    sd[warp] = d;
  }
  __syncthreads();
  if (warp == 0) {
    m = lane < kWarps ? sm[lane] : -INFINITY;
    d = lane < kWarps ? sd[lane] : 0.0F;
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
      const float m2 = __shfl_xor_sync(kFullMask, m, offset);
      const float d2 = __shfl_xor_sync(kFullMask, d, offset);
      merge_max_sum(m, d, m2, d2);
    }
    if (lane == 0) {
      sm[0] = m;
      sd[0] = d;
    }
  }
  __syncthreads();
  const float row_m = sm[0];
  const float inv = 1.0F / sd[0];
  for (int c = static_cast<int>(threadIdx.x); c < cols; c += kRowThreads)
    store(&y[base + c], expf(x[base + c] - row_m) * inv);
}

// --- LayerNorm with Welford's mean and variance: one block of 256 threads per row; each thread
// keeps (count, mean, M2) over its strided elements; warp shuffles and then shared memory
// (3 x 8 floats = 96 B) merge them (Chan et al.'s pairwise update); a second sweep writes
// (x - mean) * rsqrt(var + eps) * gamma + beta.
__device__ void welford_merge(float& n, float& mean, float& m2, float n2, float mean2, float m22) {
  const float total = n + n2;
  if (total == 0.0F) return;
  const float delta = mean2 - mean;
  mean += delta * n2 / total;
  m2 += m22 + delta * delta * n * n2 / total;
  n = total;
}

__global__ void __launch_bounds__(kRowThreads)
    layernorm_kernel(const float* __restrict__ x, const float* __restrict__ gamma,
                     const float* __restrict__ beta, float* __restrict__ y, int cols, float eps) {
  __shared__ float sn[kWarps];
  __shared__ float smean[kWarps];
  __shared__ float sm2[kWarps];
  const std::size_t base = static_cast<std::size_t>(blockIdx.x) * cols;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int warp = static_cast<int>(threadIdx.x) / 32;
  float n = 0.0F, mean = 0.0F, m2 = 0.0F;
  for (int c = static_cast<int>(threadIdx.x); c < cols; c += kRowThreads) {
    const float v = x[base + c];
    n += 1.0F;
    const float delta = v - mean;
    mean += delta / n;
    m2 += delta * (v - mean);
  }
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    const float n2 = __shfl_xor_sync(kFullMask, n, offset);
    const float mean2 = __shfl_xor_sync(kFullMask, mean, offset);
    const float m22 = __shfl_xor_sync(kFullMask, m2, offset);
    welford_merge(n, mean, m2, n2, mean2, m22);
  }
  if (lane == 0) {
    sn[warp] = n;
    smean[warp] = mean;
    sm2[warp] = m2;
  }
  __syncthreads();
  if (warp == 0) {
    n = lane < kWarps ? sn[lane] : 0.0F;
    mean = lane < kWarps ? smean[lane] : 0.0F;
    m2 = lane < kWarps ? sm2[lane] : 0.0F;
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
      const float n2 = __shfl_xor_sync(kFullMask, n, offset);
      const float mean2 = __shfl_xor_sync(kFullMask, mean, offset);
      const float m22 = __shfl_xor_sync(kFullMask, m2, offset);
      welford_merge(n, mean, m2, n2, mean2, m22);
    }
    if (lane == 0) {
      smean[0] = mean;
      sm2[0] = m2;
    }
  }
  __syncthreads();
  const float row_mean = smean[0];
  const float inv = rsqrtf(sm2[0] / static_cast<float>(cols) + eps);
  for (int c = static_cast<int>(threadIdx.x); c < cols; c += kRowThreads)
    y[base + c] = (x[base + c] - row_mean) * inv * gamma[c] + beta[c];
}

// --- RMSNorm: one block of 256 threads per row; block sum of squares (8 floats, 32 B of shared
// memory), then x * rsqrt(mean(x^2) + eps) * gamma.
__global__ void __launch_bounds__(kRowThreads)
    rmsnorm_kernel(const float* __restrict__ x, const float* __restrict__ gamma,
                   float* __restrict__ y, int cols, float eps) {
  __shared__ float scratch[kWarps];
  const std::size_t base = static_cast<std::size_t>(blockIdx.x) * cols;
  float ss = 0.0F;
  for (int c = static_cast<int>(threadIdx.x); c < cols; c += kRowThreads) {
    const float v = x[base + c];
    ss += v * v;
  }
  ss = block_reduce(ss, scratch, Sum{}, 0.0F);
  const float inv = rsqrtf(ss / static_cast<float>(cols) + eps);
  for (int c = static_cast<int>(threadIdx.x); c < cols; c += kRowThreads)
    y[base + c] = x[base + c] * inv * gamma[c];
}

// --- bias + GELU (erf form). Grid-stride, 256 threads per block, no shared memory. Fused: one
// read of x, one write of y. Unfused: t = x + b written to memory, then y = gelu(t) reads it back.
__device__ float gelu(float v) { return 0.5F * v * (1.0F + erff(v * 0.70710678118654752F)); }

__global__ void bias_gelu_kernel(const float* __restrict__ x, const float* __restrict__ bias,
                                 float* __restrict__ y, std::size_t total, int cols) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += stride)
    y[i] = gelu(x[i] + bias[i % static_cast<std::size_t>(cols)]);
}

__global__ void bias_add_kernel(const float* __restrict__ x, const float* __restrict__ bias,
                                float* __restrict__ t, std::size_t total, int cols) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += stride)
    t[i] = x[i] + bias[i % static_cast<std::size_t>(cols)];
}

__global__ void gelu_kernel(const float* __restrict__ t, float* __restrict__ y, std::size_t total) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += stride)
    y[i] = gelu(t[i]);
}

// --- sum: up to 1024 blocks of 256 threads sum grid-strided elements and reduce in the block
// (8 floats of shared memory) to one partial each; one more block of 256 threads sums the
// partials. Deterministic: no atomics.
__global__ void __launch_bounds__(kReduceThreads)
    reduce_partial_kernel(const float* __restrict__ x, std::size_t n, float* __restrict__ partials) {
  __shared__ float scratch[kWarps];
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  float s = 0.0F;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride)
    s += x[i];
  s = block_reduce(s, scratch, Sum{}, 0.0F);
  if (threadIdx.x == 0) partials[blockIdx.x] = s;
}

__global__ void __launch_bounds__(kReduceThreads)
    reduce_final_kernel(const float* __restrict__ partials, int count, float* __restrict__ out) {
  __shared__ float scratch[kWarps];
  float s = 0.0F;
  for (int i = static_cast<int>(threadIdx.x); i < count; i += kReduceThreads) s += partials[i];
  s = block_reduce(s, scratch, Sum{}, 0.0F);
  if (threadIdx.x == 0) out[0] = s;
}

// --- copy probe: grid-stride float4 copy, 256 threads per block.
__global__ void copy_kernel(const float4* __restrict__ src, float4* __restrict__ dst,
                            std::size_t n4) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n4;
       i += stride)
    dst[i] = src[i];
}

// --- L2 probe: every thread reads its grid-strided float4s kL2Passes times with ld.global.cg
// (cached in L2, not L1), so after the first pass the reads are L2 hits when the buffer fits L2.
// The sums are written out so the reads cannot be optimised away (and are checked).
__global__ void l2_read_kernel(const float4* __restrict__ src, std::size_t n4,
                               float* __restrict__ out) {
  const std::size_t tid = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  float acc = 0.0F;
  for (int pass = 0; pass < kL2Passes; ++pass) {
    for (std::size_t i = tid; i < n4; i += stride) {
      const float4 v = __ldcg(&src[i]);
      acc += (v.x + v.y) + (v.z + v.w);
    }
  }
  out[tid] = acc;
}

__global__ void empty_kernel() {}

}  // namespace

void softmax_naive(const float* x, float* y, float* row_max, float* row_sum, int rows, int cols,
                   cudaStream_t s) {
  row_max_kernel<<<rows, kRowThreads, 0, s>>>(x, row_max, cols);
  row_sum_exp_kernel<<<rows, kRowThreads, 0, s>>>(x, row_max, row_sum, cols);
  softmax_normalize_kernel<<<rows, kRowThreads, 0, s>>>(x, row_max, row_sum, y, cols);
}

void softmax_online(const float* x, float* y, int rows, int cols, cudaStream_t s) {
  softmax_online_kernel<float><<<rows, kRowThreads, 0, s>>>(x, y, cols);
}

void softmax_online(const float* x, __half* y, int rows, int cols, cudaStream_t s) {
  softmax_online_kernel<__half><<<rows, kRowThreads, 0, s>>>(x, y, cols);
}

void layernorm(const float* x, const float* gamma, const float* beta, float* y, int rows, int cols,
               float eps, cudaStream_t s) {
  layernorm_kernel<<<rows, kRowThreads, 0, s>>>(x, gamma, beta, y, cols, eps);
}

void rmsnorm(const float* x, const float* gamma, float* y, int rows, int cols, float eps,
             cudaStream_t s) {
  rmsnorm_kernel<<<rows, kRowThreads, 0, s>>>(x, gamma, y, cols, eps);
}

void bias_gelu_fused(const float* x, const float* bias, float* y, int rows, int cols, int blocks,
                     cudaStream_t s) {
  const std::size_t total = static_cast<std::size_t>(rows) * cols;
  bias_gelu_kernel<<<blocks, kElementwiseThreads, 0, s>>>(x, bias, y, total, cols);
}

void bias_gelu_unfused(const float* x, const float* bias, float* t, float* y, int rows, int cols,
                       int blocks, cudaStream_t s) {
  const std::size_t total = static_cast<std::size_t>(rows) * cols;
  bias_add_kernel<<<blocks, kElementwiseThreads, 0, s>>>(x, bias, t, total, cols);
  gelu_kernel<<<blocks, kElementwiseThreads, 0, s>>>(t, y, total);
}

void reduce_sum(const float* x, std::size_t n, float* partials, float* out, cudaStream_t s) {
  const std::size_t wanted = (n + kReduceThreads - 1) / kReduceThreads;
  const int blocks = static_cast<int>(wanted < kReduceMaxBlocks ? (wanted > 0 ? wanted : 1)
                                                                : kReduceMaxBlocks);
  reduce_partial_kernel<<<blocks, kReduceThreads, 0, s>>>(x, n, partials);
  reduce_final_kernel<<<1, kReduceThreads, 0, s>>>(partials, blocks, out);
}

void copy(const float4* src, float4* dst, std::size_t n4, int blocks, cudaStream_t s) {
  copy_kernel<<<blocks, kElementwiseThreads, 0, s>>>(src, dst, n4);
}

void l2_read(const float4* src, std::size_t n4, float* out, int blocks, cudaStream_t s) {
  l2_read_kernel<<<blocks, kElementwiseThreads, 0, s>>>(src, n4, out);
}

void empty(cudaStream_t s) { empty_kernel<<<1, 1, 0, s>>>(); }

}  // namespace coda::validation::kernels
