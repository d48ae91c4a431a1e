#pragma once
// Launchers of the bundled CUDA kernels. Each enqueues its kernel(s) on `stream` and returns at
// once; launch errors are left for the caller's cudaGetLastError. Shapes must satisfy the
// constraints the case-list reader checks (case_list.cpp): the WMMA GEMMs have no edge handling.
// Included by CUDA translation units only; the tiling of each kernel is in tiling.h.
//
// Layouts (row-major): GEMM A[m][k], B[k][n] (int8: B[n][k]), C[m][n]. Attention Q, K, V
// [batch*heads][seq][head_dim]. Conv NCHW input, KCRS filters, NKPQ output.

#include <cstddef>
#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

namespace coda::validation::kernels {

// gemm_kernels.cu
void gemm_naive(const float* a, const float* b, float* c, int m, int n, int k, cudaStream_t s);
void gemm_tiled(const float* a, const float* b, float* c, int m, int n, int k, cudaStream_t s);
void gemm_wmma(const __half* a, const __half* b, float* c, int m, int n, int k, cudaStream_t s);
void gemm_wmma(const __nv_bfloat16* a, const __nv_bfloat16* b, float* c, int m, int n, int k,
               cudaStream_t s);
void gemm_int8(const std::int8_t* a, const std::int8_t* b_nk, std::int32_t* c, int m, int n, int k,
               cudaStream_t s);

struct ConvDims {
  int batch, channels, height, width, filters, filter_size, stride, pad, out_h, out_w;
};
void conv2d_implicit_gemm(const float* input, const float* filters, float* output,
                          const ConvDims& d, cudaStream_t s);

// row_kernels.cu
void softmax_naive(const float* x, float* y, float* row_max, float* row_sum, int rows, int cols,
                   cudaStream_t s);
void softmax_online(const float* x, float* y, int rows, int cols, cudaStream_t s);
void softmax_online(const float* x, __half* y, int rows, int cols, cudaStream_t s);
void layernorm(const float* x, const float* gamma, const float* beta, float* y, int rows, int cols,
               float eps, cudaStream_t s);
void rmsnorm(const float* x, const float* gamma, float* y, int rows, int cols, float eps,
             cudaStream_t s);
void bias_gelu_fused(const float* x, const float* bias, float* y, int rows, int cols, int blocks,
                     cudaStream_t s);
void bias_gelu_unfused(const float* x, const float* bias, float* t, float* y, int rows, int cols,
                       int blocks, cudaStream_t s);
// partials holds kReduceMaxBlocks floats; the sum lands in out[0].
void reduce_sum(const float* x, std::size_t n, float* partials, float* out, cudaStream_t s);
void copy(const float4* src, float4* dst, std::size_t n4, int blocks, cudaStream_t s);
// out holds blocks * kElementwiseThreads floats: each thread's sum over kL2Passes passes.
void l2_read(const float4* src, std::size_t n4, float* out, int blocks, cudaStream_t s);
void empty(cudaStream_t s);

// attention_kernels.cu
void attention_scores(const __half* q, const __half* k, float* scores, int bh, int seq,
                      int head_dim, float scale, cudaStream_t s);
void attention_pv(const __half* p, const __half* v, float* o, int bh, int seq, int head_dim,
                  cudaStream_t s);
// Sets the kernel's dynamic shared-memory limit; call once before the first launch.
cudaError_t attention_flash_prepare(int head_dim);
void attention_flash(const __half* q, const __half* k, const __half* v, float* o, int bh, int seq,
                     int head_dim, float scale, cudaStream_t s);
void decode_attention(const __half* q, const __half* k, const __half* v, float* o, int bh,
                      int context, int head_dim, float scale, cudaStream_t s);

}  // namespace coda::validation::kernels
