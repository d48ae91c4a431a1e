// Attention kernels, fp16 in and fp32 accumulate and out: unfused (QK^T, softmax, PV as three
// kernels, the scores S in fp32 and the probabilities P in fp16 through global memory), fused in
// the FlashAttention-2 style (online softmax over key/value tiles in shared memory; S and P never
// leave the chip), and decode (one query token over a KV cache). Not causal. Scale 1/sqrt(d).

#include <cmath>

#include "validation/kernels/kernels.h"
#include "validation/kernels/tiling.h"

namespace coda::validation::kernels {
namespace {

using namespace tiling;
constexpr unsigned kFullMask = 0xffffffffU;

__host__ __device__ constexpr int ceil_div(int a, int b) { return (a + b - 1) / b; }

// S = scale * Q K^T per (batch, head). Tiled: 16x16 output tile, 16x16 threads, one score each,
// head_dim step 16; Q and K tiles as 16x17 floats in shared memory = 2176 B. grid
// (ceil(seq/16), ceil(seq/16), batch*heads). head_dim is a multiple of 16.
__global__ void attention_scores_kernel(const __half* __restrict__ q, const __half* __restrict__ k,
                                        float* __restrict__ scores, int seq, int d, float scale) {
  constexpr int T = kAttnMatmulTile;
  __shared__ float qs[T][T + 1];
  __shared__ float ks[T][T + 1];
  const int tx = static_cast<int>(threadIdx.x);
  const int ty = static_cast<int>(threadIdx.y);
  const std::size_t base = static_cast<std::size_t>(blockIdx.z) * seq * d;
  const int i = static_cast<int>(blockIdx.y) * T + ty;  // query
  const int j = static_cast<int>(blockIdx.x) * T + tx;  // key
  const int key_row = static_cast<int>(blockIdx.x) * T + ty;
  float acc = 0.0F;
  for (int e0 = 0; e0 < d; e0 += T) {
    qs[ty][tx] = i < seq ? __half2float(q[base + static_cast<std::size_t>(i) * d + e0 + tx]) : 0.0F;
    ks[ty][tx] = key_row < seq
                     ? __half2float(k[base + static_cast<std::size_t>(key_row) * d + e0 + tx])
                     : 0.0F;
    __syncthreads();
#pragma unroll
    for (int p = 0; p < T; ++p) acc += qs[ty][p] * ks[tx][p];
    __syncthreads();
  }
  if (i < seq && j < seq)
    scores[(static_cast<std::size_t>(blockIdx.z) * seq + i) * seq + j] = acc * scale;
}

// O = P V per (batch, head). Tiled: 16x16 output tile (queries x head_dim), 16x16 threads, key
// step 16; P and V tiles as 16x17 floats = 2176 B. grid (d/16, ceil(seq/16), batch*heads).
__global__ void attention_pv_kernel(const __half* __restrict__ p, const __half* __restrict__ v,
                                    float* __restrict__ o, int seq, int d) {
  constexpr int T = kAttnMatmulTile;
  __shared__ float ps[T][T + 1];
  __shared__ float vs[T][T + 1];
  const int tx = static_cast<int>(threadIdx.x);
  const int ty = static_cast<int>(threadIdx.y);
  const std::size_t bh = blockIdx.z;
  const int i = static_cast<int>(blockIdx.y) * T + ty;  // query
  const int e = static_cast<int>(blockIdx.x) * T + tx;  // head_dim element
  float acc = 0.0F;
  for (int j0 = 0; j0 < seq; j0 += T) {
    ps[ty][tx] = (i < seq && j0 + tx < seq)
                     ? __half2float(p[(bh * seq + i) * seq + j0 + tx])
                     : 0.0F;
    vs[ty][tx] = j0 + ty < seq ? __half2float(v[(bh * seq + j0 + ty) * d + e]) : 0.0F;
    __syncthreads();
#pragma unroll
    for (int c = 0; c < T; ++c) acc += ps[ty][c] * vs[c][tx];
    __syncthreads();
  }
  if (i < seq) o[(bh * seq + i) * d + e] = acc;
}

// FlashAttention-2 style. One block per 64 queries of one (batch, head): grid
// (ceil(seq/64), batch*heads), 128 threads. The Q tile stays in shared memory; for each tile of
// 64 keys the block loads K and V, computes the 64x64 scores, updates each row's running max m
// and sum l (online softmax: rescale by exp(m_old - m_new)), and accumulates O += P V with O in
// shared memory; O / l is written at the end. Shared memory (dynamic):
//   Q, K, V tiles   3 x 64 x d fp16     (d = 64: 24576 B, d = 128: 49152 B)
//   scores/probs    64 x 64 fp32        16384 B
//   O accumulator   64 x d fp32         (16384 B, 32768 B)
//   m, l, rescale   3 x 64 fp32         768 B
//   total           57856 B (d = 64), 99072 B (d = 128): tiling::flash_smem_bytes.
// The arithmetic is plain fp32 on CUDA cores: correct and honestly tiled, not fast.
template <int D>
__global__ void __launch_bounds__(kFlashThreads)
    flash_attention_kernel(const __half* __restrict__ q, const __half* __restrict__ k,
                           const __half* __restrict__ v, float* __restrict__ o, int seq,
                           float scale) {
  constexpr int BQ = kFlashBlockQ, BK = kFlashBlockKv, NT = kFlashThreads;
  extern __shared__ __align__(16) unsigned char smem[];
  __half* qs = reinterpret_cast<__half*>(smem);
  __half* ks = qs + BQ * D;
  __half* vs = ks + BK * D;
  float* ss = reinterpret_cast<float*>(vs + BK * D);
  float* os = ss + BQ * BK;
  float* row_m = os + BQ * D;
  float* row_l = row_m + BQ;
  float* row_a = row_l + BQ;
  const int tid = static_cast<int>(threadIdx.x);
  const std::size_t base = static_cast<std::size_t>(blockIdx.y) * seq * D;
  const int q0 = static_cast<int>(blockIdx.x) * BQ;
  const __half zero = __float2half_rn(0.0F);

  for (int idx = tid; idx < BQ * D; idx += NT) {
    const int r = idx / D, e = idx % D;
    qs[idx] = q0 + r < seq ? q[base + static_cast<std::size_t>(q0 + r) * D + e] : zero;
    os[idx] = 0.0F;
  }
  for (int r = tid; r < BQ; r += NT) {
    row_m[r] = -INFINITY;
    row_l[r] = 0.0F;
  }
  __syncthreads();

  for (int k0 = 0; k0 < seq; k0 += BK) {
    for (int idx = tid; idx < BK * D; idx += NT) {
      const int r = idx / D, e = idx % D;
      const bool in = k0 + r < seq;
      const std::size_t at = base + static_cast<std::size_t>(k0 + r) * D + e;
      ks[idx] = in ? k[at] : zero;
      vs[idx] = in ? v[at] : zero;
    }
    __syncthreads();
    for (int idx = tid; idx < BQ * BK; idx += NT) {
      const int r = idx / BK, c = idx % BK;
      float acc = 0.0F;
#pragma unroll 16
      for (int e = 0; e < D; ++e) acc += __half2float(qs[r * D + e]) * __half2float(ks[c * D + e]);
      ss[idx] = k0 + c < seq ? acc * scale : -INFINITY;
    }
    __syncthreads();
    for (int r = tid; r < BQ; r += NT) {  // one thread per query row
      float mx = row_m[r];
      for (int c = 0; c < BK; ++c) mx = fmaxf(mx, ss[r * BK + c]);
      float sum = 0.0F;
      for (int c = 0; c < BK; ++c) {
        const float p = expf(ss[r * BK + c] - mx);  // masked keys: exp(-inf) = 0
        ss[r * BK + c] = p;
        sum += p;
      }
      const float alpha = expf(row_m[r] - mx);  // 0 on the first tile (m = -inf)
      row_l[r] = row_l[r] * alpha + sum;
      row_m[r] = mx;
      row_a[r] = alpha;
    }
    __syncthreads();
    for (int idx = tid; idx < BQ * D; idx += NT) {
      const int r = idx / D, e = idx % D;
      float acc = os[idx] * row_a[r];
      for (int c = 0; c < BK; ++c) acc += ss[r * BK + c] * __half2float(vs[c * D + e]);
      os[idx] = acc;
    }
    __syncthreads();
  }
  for (int idx = tid; idx < BQ * D; idx += NT) {
    const int r = idx / D, e = idx % D;
    if (q0 + r < seq) o[base + static_cast<std::size_t>(q0 + r) * D + e] = os[idx] / row_l[r];
  }
}

// Decode attention: one query token per (batch, head) over `context` cached keys and values.
// One block of 8 warps per (batch, head); warp w takes keys w, w+8, ...; each lane holds d/32
// contiguous elements of q and of the running output (a warp reads one 2d-byte key or value row
// per step, coalesced); the score is a warp-shuffle sum. Each warp keeps its own running max,
// sum and output (online softmax); the 8 are merged through shared memory:
// 8 x (2 + d) fp32 = 2112 B (d = 64), 4160 B (d = 128). Reads K and V once: memory-bound.
template <int D>
__global__ void __launch_bounds__(kDecodeWarps * 32)
    decode_attention_kernel(const __half* __restrict__ q, const __half* __restrict__ k,
                            const __half* __restrict__ v, float* __restrict__ o, int context,
                            float scale) {
  constexpr int W = kDecodeWarps, E = D / 32;
  __shared__ float sm_m[W];
  __shared__ float sm_l[W];
  __shared__ float sm_o[W][D];
  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32, lane = tid % 32;
  const std::size_t bh = blockIdx.x;
  const __half* kb = k + bh * context * D;
  const __half* vb = v + bh * context * D;
  float qr[E];
  float acc[E];
#pragma unroll
  for (int e = 0; e < E; ++e) {
    qr[e] = __half2float(q[bh * D + lane * E + e]);
    acc[e] = 0.0F;
  }
  float m = -INFINITY, l = 0.0F;
  for (int c = warp; c < context; c += W) {
    const __half* kr = kb + static_cast<std::size_t>(c) * D + lane * E;
    float s = 0.0F;
#pragma unroll
    for (int e = 0; e < E; ++e) s += qr[e] * __half2float(kr[e]);
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) s += __shfl_xor_sync(kFullMask, s, offset);
    s *= scale;
    const float mx = fmaxf(m, s);
    const float alpha = expf(m - mx);
    const float p = expf(s - mx);
    l = l * alpha + p;
    const __half* vr = vb + static_cast<std::size_t>(c) * D + lane * E;
#pragma unroll
    for (int e = 0; e < E; ++e) acc[e] = acc[e] * alpha + p * __half2float(vr[e]);
    m = mx;
  }
  if (lane == 0) {
    sm_m[warp] = m;
    sm_l[warp] = l;
  }
#pragma unroll
  for (int e = 0; e < E; ++e) sm_o[warp][lane * E + e] = acc[e];
  __syncthreads();
  for (int e = tid; e < D; e += W * 32) {
    float gm = -INFINITY;
    for (int w = 0; w < W; ++w) gm = fmaxf(gm, sm_m[w]);
    float total_l = 0.0F, total_o = 0.0F;
    for (int w = 0; w < W; ++w) {
      if (sm_m[w] == -INFINITY) continue;  // a warp that had no keys
      const float f = expf(sm_m[w] - gm);
      total_l += sm_l[w] * f;
      total_o += sm_o[w][e] * f;
    }
    o[bh * D + e] = total_o / total_l;
  }
}

}  // namespace

void attention_scores(const __half* q, const __half* k, float* scores, int bh, int seq,
                      int head_dim, float scale, cudaStream_t s) {
  const dim3 block(kAttnMatmulTile, kAttnMatmulTile);
  const dim3 grid(ceil_div(seq, kAttnMatmulTile), ceil_div(seq, kAttnMatmulTile), bh);
  attention_scores_kernel<<<grid, block, 0, s>>>(q, k, scores, seq, head_dim, scale);
}

void attention_pv(const __half* p, const __half* v, float* o, int bh, int seq, int head_dim,
                  cudaStream_t s) {
  const dim3 block(kAttnMatmulTile, kAttnMatmulTile);
  const dim3 grid(head_dim / kAttnMatmulTile, ceil_div(seq, kAttnMatmulTile), bh);
  attention_pv_kernel<<<grid, block, 0, s>>>(p, v, o, seq, head_dim);
}

cudaError_t attention_flash_prepare(int head_dim) {
  if (head_dim == 64)
    return cudaFuncSetAttribute(flash_attention_kernel<64>,
                                cudaFuncAttributeMaxDynamicSharedMemorySize, flash_smem_bytes(64));
  return cudaFuncSetAttribute(flash_attention_kernel<128>,
                              cudaFuncAttributeMaxDynamicSharedMemorySize, flash_smem_bytes(128));
}

void attention_flash(const __half* q, const __half* k, const __half* v, float* o, int bh, int seq,
                     int head_dim, float scale, cudaStream_t s) {
  const dim3 grid(ceil_div(seq, kFlashBlockQ), bh);
  const auto bytes = static_cast<std::size_t>(flash_smem_bytes(head_dim));
  if (head_dim == 64)
    flash_attention_kernel<64><<<grid, kFlashThreads, bytes, s>>>(q, k, v, o, seq, scale);
  else
    flash_attention_kernel<128><<<grid, kFlashThreads, bytes, s>>>(q, k, v, o, seq, scale);
}

void decode_attention(const __half* q, const __half* k, const __half* v, float* o, int bh,
                      int context, int head_dim, float scale, cudaStream_t s) {
  if (head_dim == 64)
    decode_attention_kernel<64><<<bh, kDecodeWarps * 32, 0, s>>>(q, k, v, o, context, scale);
  else
    decode_attention_kernel<128><<<bh, kDecodeWarps * 32, 0, s>>>(q, k, v, o, context, scale);
}

}  // namespace coda::validation::kernels
