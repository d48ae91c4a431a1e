// GEMM and conv kernels: naive, shared-memory tiled, tensor-core (WMMA) fp16/bf16 and int8, and
// conv2d as implicit GEMM. Row-major throughout; see kernels.h for layouts and tiling.h for the
// tile constants each comment below derives.

#include <mma.h>

#include "validation/kernels/kernels.h"
#include "validation/kernels/tiling.h"

namespace coda::validation::kernels {
namespace {

using namespace nvcuda;
using namespace tiling;

__host__ __device__ constexpr int ceil_div(int a, int b) { return (a + b - 1) / b; }

// Naive GEMM. Tiling: none. Block 16x16 threads (256), one C element per thread, grid
// ceil(n/16) x ceil(m/16); every thread reads a row of A and a column of B from global memory
// (2k loads per 2k flops). Shared memory: 0 B.
__global__ void gemm_naive_kernel(const float* __restrict__ a, const float* __restrict__ b,
                                  float* __restrict__ c, int m, int n, int k) {
  const int row = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  const int col = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (row >= m || col >= n) return;
  float acc = 0.0F;
  for (int p = 0; p < k; ++p)
    acc += a[static_cast<std::size_t>(row) * k + p] * b[static_cast<std::size_t>(p) * n + col];
  c[static_cast<std::size_t>(row) * n + col] = acc;
}

// Tiled GEMM (fp32, CUDA cores). Block tile 32x32 of C, k step 32; 32x32 threads (1024), one C
// element each. Shared memory: A and B tiles of 32x33 floats (one padding column against bank
// conflicts) = 2 * 32 * 33 * 4 = 8448 B. Each element loaded from global memory is reused 32
// times. Edges are zero-filled, so any m, n, k works.
__global__ void gemm_tiled_kernel(const float* __restrict__ a, const float* __restrict__ b,
                                  float* __restrict__ c, int m, int n, int k) {
  constexpr int T = kTiledTile;
  __shared__ float as[T][T + 1];
  __shared__ float bs[T][T + 1];
  const int tx = static_cast<int>(threadIdx.x);
  const int ty = static_cast<int>(threadIdx.y);
  const int row = static_cast<int>(blockIdx.y) * T + ty;
  const int col = static_cast<int>(blockIdx.x) * T + tx;
  float acc = 0.0F;
  for (int k0 = 0; k0 < k; k0 += T) {
    as[ty][tx] = (row < m && k0 + tx < k) ? a[static_cast<std::size_t>(row) * k + k0 + tx] : 0.0F;
    bs[ty][tx] =
        (k0 + ty < k && col < n) ? b[static_cast<std::size_t>(k0 + ty) * n + col] : 0.0F;
    __syncthreads();
#pragma unroll
    for (int p = 0; p < T; ++p) acc += as[ty][p] * bs[p][tx];
    __syncthreads();
  }
  if (row < m && col < n) c[static_cast<std::size_t>(row) * n + col] = acc;
}

// Tensor-core GEMM via WMMA, fp16 or bf16 in, fp32 accumulate and out. Block tile 64x64 of C,
// k step 32; 128 threads = 4 warps in 2x2, each warp owning a 32x32 sub-tile as 2x2 fragments of
// 16x16x16. Shared memory: A tile 64x(32+8) and B tile 32x(64+8) 16-bit elements
// = (2560 + 2304) * 2 = 9728 B; the 8-element padding keeps rows 16-byte aligned and every
// fragment pointer 32-byte aligned (as load_matrix_sync requires) while skewing banks.
// Global loads are 16-byte vectors (8 elements). No edge handling: m and n multiples of 64, k of
// 32 (checked by the case-list reader).
template <class T>
__global__ void __launch_bounds__(kWmmaThreads)
    gemm_wmma_kernel(const T* __restrict__ a, const T* __restrict__ b, float* __restrict__ c,
                     int m, int n, int k) {
  constexpr int BM = kWmmaBlockM, BN = kWmmaBlockN, BK = kWmmaBlockK;
  constexpr int LDA = BK + kWmmaPad, LDB = BN + kWmmaPad;
  __shared__ __align__(128) T as[BM * LDA];
  __shared__ __align__(128) T bs[BK * LDB];
  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32;
  const int wm = warp / 2, wn = warp % 2;
  const int block_row = static_cast<int>(blockIdx.y) * BM;
  const int block_col = static_cast<int>(blockIdx.x) * BN;
  (void)m;

  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
#pragma unroll
  for (int i = 0; i < 2; ++i) {
#pragma unroll
    for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.0F);
  }

  for (int k0 = 0; k0 < k; k0 += BK) {
    for (int v = tid; v < BM * BK / 8; v += kWmmaThreads) {  // 256 vectors, 2 per thread
      const int r = v / (BK / 8), cc = (v % (BK / 8)) * 8;
      *reinterpret_cast<uint4*>(&as[r * LDA + cc]) = *reinterpret_cast<const uint4*>(
          &a[static_cast<std::size_t>(block_row + r) * k + k0 + cc]);
    }
    for (int v = tid; v < BK * BN / 8; v += kWmmaThreads) {
      const int r = v / (BN / 8), cc = (v % (BN / 8)) * 8;
      *reinterpret_cast<uint4*>(&bs[r * LDB + cc]) = *reinterpret_cast<const uint4*>(
          &b[static_cast<std::size_t>(k0 + r) * n + block_col + cc]);
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fa[2];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> fb[2];
#pragma unroll
      for (int i = 0; i < 2; ++i)
        wmma::load_matrix_sync(fa[i], &as[(wm * 32 + i * 16) * LDA + kk], LDA);
#pragma unroll
      for (int j = 0; j < 2; ++j)
        wmma::load_matrix_sync(fb[j], &bs[kk * LDB + wn * 32 + j * 16], LDB);
#pragma unroll
      for (int i = 0; i < 2; ++i) {
#pragma unroll
        for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 2; ++i) {
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      float* out = &c[static_cast<std::size_t>(block_row + wm * 32 + i * 16) * n + block_col +
                      wn * 32 + j * 16];
      wmma::store_matrix_sync(out, acc[i][j], static_cast<unsigned>(n), wmma::mem_row_major);
    }
  }
}

// Tensor-core int8 GEMM via WMMA, int32 accumulate and out; A[m][k] and B[n][k] (weights stored
// out x in, so both operands are read along k). Block tile 64x64 of C, k step 64; 128 threads =
// 4 warps in 2x2, each 32x32 as 2x2 fragments of 16x16x16. Shared memory: A and B tiles each as
// 4 k-chunks x 64 rows x 32 bytes (16 used, 16 padding, so every fragment pointer is 32-byte
// aligned) = 2 * 4 * 64 * 32 = 16384 B. No edge handling: m, n, k multiples of 64.
__global__ void __launch_bounds__(kInt8Threads)
    gemm_int8_kernel(const std::int8_t* __restrict__ a, const std::int8_t* __restrict__ b_nk,
                     std::int32_t* __restrict__ c, int n, int k) {
  constexpr int BM = kInt8BlockM, BN = kInt8BlockN, BK = kInt8BlockK, RB = kInt8RowBytes;
  constexpr int KC = BK / 16;
  __shared__ __align__(128) signed char as[KC * BM * RB];  // [k-chunk][row][32]
  __shared__ __align__(128) signed char bs[KC * BN * RB];  // [k-chunk][col][32]
  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32;
  const int wm = warp / 2, wn = warp % 2;
  const int block_row = static_cast<int>(blockIdx.y) * BM;
  const int block_col = static_cast<int>(blockIdx.x) * BN;

  wmma::fragment<wmma::accumulator, 16, 16, 16, int> acc[2][2];
#pragma unroll
  for (int i = 0; i < 2; ++i) {
#pragma unroll
    for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0);
  }

  for (int k0 = 0; k0 < k; k0 += BK) {
    for (int v = tid; v < BM * KC; v += kInt8Threads) {  // 256 16-byte vectors, 2 per thread
      const int r = v / KC, kc = v % KC;
      *reinterpret_cast<uint4*>(&as[(kc * BM + r) * RB]) = *reinterpret_cast<const uint4*>(
          &a[static_cast<std::size_t>(block_row + r) * k + k0 + kc * 16]);
    }
    for (int v = tid; v < BN * KC; v += kInt8Threads) {
      const int r = v / KC, kc = v % KC;
      *reinterpret_cast<uint4*>(&bs[(kc * BN + r) * RB]) = *reinterpret_cast<const uint4*>(
          &b_nk[static_cast<std::size_t>(block_col + r) * k + k0 + kc * 16]);
    }
    __syncthreads();
#pragma unroll
    for (int kc = 0; kc < KC; ++kc) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, signed char, wmma::row_major> fa[2];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, signed char, wmma::col_major> fb[2];
#pragma unroll
      for (int i = 0; i < 2; ++i)
        wmma::load_matrix_sync(fa[i], &as[(kc * BM + wm * 32 + i * 16) * RB], RB);
#pragma unroll
      for (int j = 0; j < 2; ++j)
        wmma::load_matrix_sync(fb[j], &bs[(kc * BN + wn * 32 + j * 16) * RB], RB);
#pragma unroll
      for (int i = 0; i < 2; ++i) {
#pragma unroll
        for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 2; ++i) {
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      int* out = &c[static_cast<std::size_t>(block_row + wm * 32 + i * 16) * n + block_col +
                    wn * 32 + j * 16];
      wmma::store_matrix_sync(out, acc[i][j], static_cast<unsigned>(n), wmma::mem_row_major);
    }
  }
}

// Conv2d (NCHW, fp32) as implicit GEMM: M = batch*out_h*out_w output pixels, N = filters,
// K = channels*filter_size^2. Tiled like gemm_tiled_kernel: block tile 32 pixels x 32 filters,
// k step 32, 32x32 threads (1024), one output each. Shared memory: the A tile gathered from the
// input on the fly (zero padding applied at load) and the B tile from the KCRS filters, 32x33
// floats each = 8448 B.
__global__ void conv_implicit_gemm_kernel(const float* __restrict__ input,
                                          const float* __restrict__ filters,
                                          float* __restrict__ output, ConvDims d) {
  constexpr int T = kConvTile;
  __shared__ float as[T][T + 1];  // [pixel][k]
  __shared__ float bs[T][T + 1];  // [k][filter]
  const int tx = static_cast<int>(threadIdx.x);
  const int ty = static_cast<int>(threadIdx.y);
  const int rs = d.filter_size * d.filter_size;
  const int gm = d.batch * d.out_h * d.out_w;
  const int gk = d.channels * rs;
  const int row = static_cast<int>(blockIdx.y) * T + ty;  // output pixel
  const int col = static_cast<int>(blockIdx.x) * T + tx;  // filter
  const int b_filter = static_cast<int>(blockIdx.x) * T + tx;
  int nn = 0, pp = 0, qq = 0;
  if (row < gm) {
    nn = row / (d.out_h * d.out_w);
    const int rem = row % (d.out_h * d.out_w);
    pp = rem / d.out_w;
    qq = rem % d.out_w;
  }
  float acc = 0.0F;
  for (int k0 = 0; k0 < gk; k0 += T) {
    const int kk = k0 + tx;
    float av = 0.0F;
    if (row < gm && kk < gk) {
      const int cc = kk / rs, rem = kk % rs;
      const int y = pp * d.stride + rem / d.filter_size - d.pad;
      const int x = qq * d.stride + rem % d.filter_size - d.pad;
      if (y >= 0 && y < d.height && x >= 0 && x < d.width)
        av = input[(static_cast<std::size_t>(nn) * d.channels + cc) * d.height * d.width +
                   static_cast<std::size_t>(y) * d.width + x];
    }
    as[ty][tx] = av;
    bs[ty][tx] = (k0 + ty < gk && b_filter < d.filters)
                     ? filters[static_cast<std::size_t>(b_filter) * gk + k0 + ty]
                     : 0.0F;
    __syncthreads();
#pragma unroll
    for (int p = 0; p < T; ++p) acc += as[ty][p] * bs[p][tx];
    __syncthreads();
  }
  if (row < gm && col < d.filters)
    output[((static_cast<std::size_t>(nn) * d.filters + col) * d.out_h + pp) * d.out_w + qq] = acc;
}

}  // namespace

void gemm_naive(const float* a, const float* b, float* c, int m, int n, int k, cudaStream_t s) {
  const dim3 block(kNaiveBlock, kNaiveBlock);
  const dim3 grid(ceil_div(n, kNaiveBlock), ceil_div(m, kNaiveBlock));
  gemm_naive_kernel<<<grid, block, 0, s>>>(a, b, c, m, n, k);
}

void gemm_tiled(const float* a, const float* b, float* c, int m, int n, int k, cudaStream_t s) {
  const dim3 block(kTiledTile, kTiledTile);
  const dim3 grid(ceil_div(n, kTiledTile), ceil_div(m, kTiledTile));
  gemm_tiled_kernel<<<grid, block, 0, s>>>(a, b, c, m, n, k);
}

void gemm_wmma(const __half* a, const __half* b, float* c, int m, int n, int k, cudaStream_t s) {
  const dim3 grid(n / kWmmaBlockN, m / kWmmaBlockM);
  gemm_wmma_kernel<__half><<<grid, kWmmaThreads, 0, s>>>(a, b, c, m, n, k);
}

void gemm_wmma(const __nv_bfloat16* a, const __nv_bfloat16* b, float* c, int m, int n, int k,
               cudaStream_t s) {
  const dim3 grid(n / kWmmaBlockN, m / kWmmaBlockM);
  gemm_wmma_kernel<__nv_bfloat16><<<grid, kWmmaThreads, 0, s>>>(a, b, c, m, n, k);
}

void gemm_int8(const std::int8_t* a, const std::int8_t* b_nk, std::int32_t* c, int m, int n, int k,
               cudaStream_t s) {
  const dim3 grid(n / kInt8BlockN, m / kInt8BlockM);
  gemm_int8_kernel<<<grid, kInt8Threads, 0, s>>>(a, b_nk, c, n, k);
}

void conv2d_implicit_gemm(const float* input, const float* filters, float* output,
                          const ConvDims& d, cudaStream_t s) {
  const dim3 block(kConvTile, kConvTile);
  const dim3 grid(ceil_div(d.filters, kConvTile), ceil_div(d.batch * d.out_h * d.out_w, kConvTile));
  conv_implicit_gemm_kernel<<<grid, block, 0, s>>>(input, filters, output, d);
}

}  // namespace coda::validation::kernels
