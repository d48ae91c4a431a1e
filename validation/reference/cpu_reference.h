#pragma once
// CPU references for the bundled CUDA kernels: what each kernel must compute, in double precision,
// from the same (already rounded) inputs the GPU sees. coda-bench checks a sample of every
// kernel's outputs against these; the tests check these on small hand-derivable inputs.
//
// Layouts are row-major. GEMM: A[m][k], B[k][n] (or B[n][k], "weights as out x in", for int8),
// C[m][n]. Attention: Q, K, V [batch][heads][seq][head_dim]. Conv: NCHW input, KCRS filters, NKPQ
// output. Plain C++, no CUDA.

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "validation/kernel_catalog.h"

namespace coda::validation::reference {

// A dot product and the sum of the magnitudes of its terms, sum |a_i b_i|: the scale rounding
// errors of the dot product grow with, so a GEMM's error is judged relative to it.
struct Dot {
  double value = 0;
  double abs_sum = 0;
};

enum class BLayout : std::uint8_t { KN, NK };

// C[i][j] of A (m x k) times B (k x n).
Dot gemm_entry(std::span<const float> a, std::span<const float> b, std::size_t n, std::size_t k,
               std::size_t i, std::size_t j, BLayout layout = BLayout::KN);
std::vector<double> gemm(std::span<const float> a, std::span<const float> b, std::size_t m,
                         std::size_t n, std::size_t k, BLayout layout = BLayout::KN);

// y = exp(x - max x) / sum exp(x - max x).
std::vector<double> softmax(std::span<const float> x);
// y = (x - mean) / sqrt(var + eps) * gamma + beta; var is the biased (population) variance.
std::vector<double> layernorm(std::span<const float> x, std::span<const float> gamma,
                              std::span<const float> beta, double eps);
// y = x / sqrt(mean(x^2) + eps) * gamma.
std::vector<double> rmsnorm(std::span<const float> x, std::span<const float> gamma, double eps);
// GELU with erf: 0.5 x (1 + erf(x / sqrt 2)).
double gelu(double x);
// y = gelu(x + bias) for one row.
std::vector<double> bias_gelu(std::span<const float> x, std::span<const float> bias);

// Attention of one query over `keys` keys: softmax(q K^T * scale) V, K and V [keys][head_dim].
std::vector<double> attention_row(std::span<const float> q, std::span<const float> k,
                                  std::span<const float> v, std::size_t keys, double scale);

// Output [n][kf][p][q] of a conv, NCHW input and KCRS filters.
Dot conv_entry(std::span<const float> input, std::span<const float> filters, const Shape& shape,
               std::size_t n, std::size_t kf, std::size_t p, std::size_t q);

// Sum of the elements, and of their magnitudes.
Dot sum(std::span<const float> x);

// --- int8 quantization (symmetric, round half away from zero, clamped to [-127, 127]) --------

struct Quantized {
  std::vector<std::int8_t> values;
  std::vector<float> scales;  // one per tensor, or one per row (channel)
};
Quantized quantize_per_tensor(std::span<const float> x);
// One scale per row of a [rows][cols] matrix: per output channel for weights stored [n][k].
Quantized quantize_per_row(std::span<const float> x, std::size_t rows, std::size_t cols);
std::int8_t quantize(float x, float scale);

// Exact integer dot product of row i of A[m][k] and row j of B[n][k].
std::int64_t int8_dot(std::span<const std::int8_t> a, std::span<const std::int8_t> b_nk,
                      std::size_t k, std::size_t i, std::size_t j);

// Relative Frobenius error sqrt(sum (approx - exact)^2 / sum exact^2) of the dequantised int8
// product against the fp32 product, over the (i, j) entries listed, for per-tensor and for
// per-output-channel weight scales (activations per tensor in both). A is [m][k], B is [n][k].
struct QuantizationError {
  double per_tensor = 0;
  double per_channel = 0;
};
QuantizationError quantization_error(std::span<const float> a, std::span<const float> b_nk,
                                     std::size_t m, std::size_t n, std::size_t k,
                                     std::span<const std::pair<std::size_t, std::size_t>> entries);

}  // namespace coda::validation::reference
