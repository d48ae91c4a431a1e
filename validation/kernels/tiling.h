#pragma once
// The tiling of every bundled CUDA kernel, as constants shared by the kernels (kernels/*.cu) and by
// the host code that reports them (kernel_catalog.cpp writes them into each measurement row), so
// coda can later model a measured kernel with the tiling it actually ran. Plain C++: no CUDA here.
//
// Shared-memory sizes are bytes per thread block, padding included; each kernel's comment repeats
// its tiling and derives the bytes.

#include <cstdint>

namespace coda::validation::tiling {

// GEMM, naive: one thread per C element, 16x16 threads, no shared memory.
inline constexpr int kNaiveBlock = 16;

// GEMM, shared-memory tiled (fp32): 32x32 C tile, k step 32, 32x32 threads (one C element each);
// A and B tiles 32x(32+1) floats each (the +1 column avoids bank conflicts).
inline constexpr int kTiledTile = 32;
inline constexpr int kTiledSmemBytes = 2 * kTiledTile * (kTiledTile + 1) * 4;  // 8448

// GEMM, WMMA fp16/bf16: 64x64 C tile, k step 32, 4 warps (128 threads) in 2x2, each warp 32x32 as
// 2x2 fragments of 16x16x16. A tile 64x(32+8) and B tile 32x(64+8) 16-bit elements.
inline constexpr int kWmmaBlockM = 64;
inline constexpr int kWmmaBlockN = 64;
inline constexpr int kWmmaBlockK = 32;
inline constexpr int kWmmaPad = 8;
inline constexpr int kWmmaThreads = 128;
inline constexpr int kWmmaSmemBytes =
    (kWmmaBlockM * (kWmmaBlockK + kWmmaPad) + kWmmaBlockK * (kWmmaBlockN + kWmmaPad)) * 2;  // 9728

// GEMM, WMMA int8 (int32 accumulate): 64x64 C tile, k step 64, 4 warps in 2x2 as above. A tile
// and B tile each stored as 4 k-chunks of 64 rows x 32 bytes (16 used, 16 padding) so every
// fragment pointer is 32-byte aligned, as wmma::load_matrix_sync requires.
inline constexpr int kInt8BlockM = 64;
inline constexpr int kInt8BlockN = 64;
inline constexpr int kInt8BlockK = 64;
inline constexpr int kInt8RowBytes = 32;
inline constexpr int kInt8Threads = 128;
inline constexpr int kInt8SmemBytes =
    (kInt8BlockK / 16) * (kInt8BlockM + kInt8BlockN) * kInt8RowBytes;  // 16384

// Row-wise kernels (softmax, LayerNorm, RMSNorm): one block of 256 threads per row; the block
// reduction keeps one partial per warp (8 warps) in shared memory: one float (max or sum), two
// (online softmax's max and sum) or three (Welford's count, mean and M2).
inline constexpr int kRowThreads = 256;
inline constexpr int kRowWarps = kRowThreads / 32;
inline constexpr int kSoftmaxNaiveSmemBytes = kRowWarps * 4;       // 32
inline constexpr int kSoftmaxOnlineSmemBytes = kRowWarps * 2 * 4;  // 64
inline constexpr int kLayerNormSmemBytes = kRowWarps * 3 * 4;      // 96
inline constexpr int kRmsNormSmemBytes = kRowWarps * 4;            // 32

// Elementwise (bias + GELU, copy) and reduction kernels: 256 threads, grid-stride loops.
inline constexpr int kElementwiseThreads = 256;
inline constexpr int kReduceThreads = 256;
inline constexpr int kReduceMaxBlocks = 1024;

// Unfused attention: QK^T and PV as batched tiled matmuls (16x16 output tile, 16x16 threads, k step
// 16, fp16 in shared memory as float), softmax as the row kernel above.
inline constexpr int kAttnMatmulTile = 16;
inline constexpr int kAttnMatmulSmemBytes = 2 * kAttnMatmulTile * (kAttnMatmulTile + 1) * 4;  // 2176

// FlashAttention-2 style: one block per 64 query rows of one (batch, head); 128 threads; key/value
// tiles of 64 rows. Shared memory: Q, K, V tiles (64 x head_dim fp16 each), the score tile 64x64
// fp32, the output accumulator 64 x head_dim fp32, and per-row max, sum, rescale (3 x 64 fp32).
inline constexpr int kFlashBlockQ = 64;
inline constexpr int kFlashBlockKv = 64;
inline constexpr int kFlashThreads = 128;
constexpr int flash_smem_bytes(int head_dim) {
  return 3 * kFlashBlockQ * head_dim * 2 + kFlashBlockQ * kFlashBlockKv * 4 +
         kFlashBlockQ * head_dim * 4 + 3 * kFlashBlockQ * 4;  // 57856 (d=64), 99072 (d=128)
}

// Decode attention: one block of 8 warps per (batch, head); warp w takes keys w, w+8, ...; each
// lane holds head_dim/32 output elements. Shared memory for merging the warps: per warp max, sum
// and head_dim partial outputs.
inline constexpr int kDecodeWarps = 8;
constexpr int decode_smem_bytes(int head_dim) { return kDecodeWarps * (2 + head_dim) * 4; }

// Conv2d as implicit GEMM (NCHW fp32): GEMM M = N*P*Q output pixels, N = K filters,
// K = C*R*S; tiled like the fp32 GEMM (32x32 tile, k step 32, 32x32 threads), the A tile gathered
// from the input on the fly.
inline constexpr int kConvTile = 32;
inline constexpr int kConvSmemBytes = 2 * kConvTile * (kConvTile + 1) * 4;  // 8448

// L2-resident bandwidth probe: every thread reads the buffer this many times (float4 loads).
inline constexpr int kL2Passes = 32;
// Launch-overhead probe: empty kernels launched back to back per timed repetition.
inline constexpr int kLaunchesPerRepetition = 100;

}  // namespace coda::validation::tiling
