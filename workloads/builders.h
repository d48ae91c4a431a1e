#pragma once
// Builders for the common ops. They take already-validated sizes: importers check user input
// and report Diagnostics first; a builder given inconsistent sizes is a bug (CODA_CHECK).

#include <cstdint>
#include <string>

#include "workloads/op.h"

namespace coda::workload {

struct Conv2dParams {
  std::uint64_t batch = 1, in_h = 1, in_w = 1, in_channels = 1, filter_h = 1, filter_w = 1,
                out_channels = 1, stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, groups = 1;
};

// floor((in + 2*pad - filter) / stride) + 1, the usual (PyTorch, ONNX) output size.
// Precondition: in + 2*pad >= filter and stride >= 1.
std::uint64_t conv_output_extent(std::uint64_t in, std::uint64_t filter, std::uint64_t stride,
                                 std::uint64_t pad);

// SCALE-Sim's output size: ceil((in - filter) / stride) + 1, with padding already folded into
// `in`. Differs from conv_output_extent(in, filter, stride, 0) when (in - filter) is not a
// multiple of stride: 224, 7, stride 2 gives 110 here and 109 with floor.
// Precondition: in >= filter and stride >= 1.
std::uint64_t scalesim_output_extent(std::uint64_t in, std::uint64_t filter, std::uint64_t stride);

// A 2-D convolution with an explicit output size (importers choose the size convention).
// Dims, in this order: n (batch), g (groups), k (filters per group), c (channels per group),
// p, q (output rows, columns), r, s (filter rows, columns). Tensors:
//   ifmap  (Input)  [n][g*C + c][p*stride_h + r - pad_h][q*stride_w + s - pad_w]
//   filter (Weight) [g*K + k][c][r][s]
//   ofmap  (Output) [n][g*K + k][p][q]
// where C = in_channels / groups and K = out_channels / groups.
// Preconditions: every size >= 1 (pads >= 0), groups divides in_channels and out_channels.
Op make_conv2d(std::string name, const Conv2dParams& p, std::uint64_t out_h, std::uint64_t out_w);

// A[m][k] (Input) * B[k][n] (Weight) -> C[m][n] (Output); dims m, n, k.
Op make_gemm(std::string name, std::uint64_t m, std::uint64_t n, std::uint64_t k);

// `batch` independent GEMMs (attention heads): A[b][m][k] * B[b][k][n] -> C[b][m][n];
// dims b, m, n, k. The b dim indexes all three tensors, so gemm_view gives batch = `batch`.
Op make_batched_gemm(std::string name, std::uint64_t batch, std::uint64_t m, std::uint64_t n,
                     std::uint64_t k);

}  // namespace coda::workload
