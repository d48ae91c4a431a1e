#include "validation/reference/cpu_reference.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/check.h"

namespace coda::validation::reference {

Dot gemm_entry(std::span<const float> a, std::span<const float> b, std::size_t n, std::size_t k,
               std::size_t i, std::size_t j, BLayout layout) {
  Dot d;
  for (std::size_t p = 0; p < k; ++p) {
    const double x = a[i * k + p];
    const double y = layout == BLayout::KN ? b[p * n + j] : b[j * k + p];
    d.value += x * y;
    d.abs_sum += std::abs(x * y);
  }
  return d;
}

std::vector<double> gemm(std::span<const float> a, std::span<const float> b, std::size_t m,
                         std::size_t n, std::size_t k, BLayout layout) {
  CODA_CHECK(a.size() == m * k && b.size() == k * n);
  std::vector<double> c(m * n);
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < n; ++j) c[i * n + j] = gemm_entry(a, b, n, k, i, j, layout).value;
  }
  return c;
}

std::vector<double> softmax(std::span<const float> x) {
  double mx = -std::numeric_limits<double>::infinity();
  for (float v : x) mx = std::max(mx, static_cast<double>(v));
  double s = 0;
  for (float v : x) s += std::exp(static_cast<double>(v) - mx);
  std::vector<double> y;
  y.reserve(x.size());
  for (float v : x) y.push_back(std::exp(static_cast<double>(v) - mx) / s);
  return y;
}

std::vector<double> layernorm(std::span<const float> x, std::span<const float> gamma,
                              std::span<const float> beta, double eps) {
  CODA_CHECK(!x.empty() && gamma.size() == x.size() && beta.size() == x.size());
  double mean = 0;
  for (float v : x) mean += v;
  mean /= static_cast<double>(x.size());
  double var = 0;
  for (float v : x) var += (v - mean) * (v - mean);
  var /= static_cast<double>(x.size());
  const double inv = 1.0 / std::sqrt(var + eps);
  std::vector<double> y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) y[i] = (x[i] - mean) * inv * gamma[i] + beta[i];
  return y;
}

std::vector<double> rmsnorm(std::span<const float> x, std::span<const float> gamma, double eps) {
  CODA_CHECK(!x.empty() && gamma.size() == x.size());
  double ms = 0;
  for (float v : x) ms += static_cast<double>(v) * v;
  ms /= static_cast<double>(x.size());
  const double inv = 1.0 / std::sqrt(ms + eps);
  std::vector<double> y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) y[i] = x[i] * inv * gamma[i];
  return y;
}

double gelu(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }

std::vector<double> bias_gelu(std::span<const float> x, std::span<const float> bias) {
  CODA_CHECK(bias.size() == x.size());
  std::vector<double> y(x.size());
  // The GPU adds in fp32 (t = x + b is stored as float by the unfused pair), so the reference
  // rounds the sum to float too.
  for (std::size_t i = 0; i < x.size(); ++i) y[i] = gelu(static_cast<double>(x[i] + bias[i]));
  return y;
}

std::vector<double> attention_row(std::span<const float> q, std::span<const float> k,
                                  std::span<const float> v, std::size_t keys, double scale) {
  const std::size_t d = q.size();
  CODA_CHECK(k.size() >= keys * d && v.size() >= keys * d);
  std::vector<float> scores(keys);
  for (std::size_t c = 0; c < keys; ++c) {
    double s = 0;
    for (std::size_t e = 0; e < d; ++e) s += static_cast<double>(q[e]) * k[c * d + e];
    scores[c] = static_cast<float>(s * scale);
  }
  const std::vector<double> p = softmax(scores);
  std::vector<double> out(d, 0.0);
  for (std::size_t c = 0; c < keys; ++c) {
    for (std::size_t e = 0; e < d; ++e) out[e] += p[c] * v[c * d + e];
  }
  return out;
}

Dot conv_entry(std::span<const float> input, std::span<const float> filters, const Shape& s,
               std::size_t n, std::size_t kf, std::size_t p, std::size_t q) {
  Dot d;
  const auto h = static_cast<std::int64_t>(s.height);
  const auto w = static_cast<std::int64_t>(s.width);
  const std::size_t rs = s.filter_size;
  for (std::size_t c = 0; c < s.channels; ++c) {
    for (std::size_t r = 0; r < rs; ++r) {
      for (std::size_t t = 0; t < rs; ++t) {
        const auto y = static_cast<std::int64_t>(p * s.stride + r) - static_cast<std::int64_t>(s.pad);
        const auto x = static_cast<std::int64_t>(q * s.stride + t) - static_cast<std::int64_t>(s.pad);
        if (y < 0 || y >= h || x < 0 || x >= w) continue;
        const double a = input[((n * s.channels + c) * s.height + static_cast<std::size_t>(y)) *
                                   s.width +
                               static_cast<std::size_t>(x)];
        const double b = filters[((kf * s.channels + c) * rs + r) * rs + t];
        d.value += a * b;
        d.abs_sum += std::abs(a * b);
      }
    }
  }
  return d;
}

Dot sum(std::span<const float> x) {
  Dot d;
  for (float v : x) {
    d.value += v;
    d.abs_sum += std::abs(static_cast<double>(v));
  }
  return d;
}

std::int8_t quantize(float x, float scale) {
  if (scale <= 0) return 0;
  const float q = std::round(x / scale);  // half away from zero
  return static_cast<std::int8_t>(std::clamp(q, -127.0F, 127.0F));
}

namespace {
float scale_of(std::span<const float> x) {
  float mx = 0;
  for (float v : x) mx = std::max(mx, std::abs(v));
  return mx / 127.0F;
}
}  // namespace

Quantized quantize_per_tensor(std::span<const float> x) {
  Quantized out;
  out.scales.push_back(scale_of(x));
  out.values.reserve(x.size());
  for (float v : x) out.values.push_back(quantize(v, out.scales[0]));
  return out;
}

Quantized quantize_per_row(std::span<const float> x, std::size_t rows, std::size_t cols) {
  CODA_CHECK(x.size() == rows * cols);
  Quantized out;
  out.values.reserve(x.size());
  for (std::size_t r = 0; r < rows; ++r) {
    const auto row = x.subspan(r * cols, cols);
    out.scales.push_back(scale_of(row));
    for (float v : row) out.values.push_back(quantize(v, out.scales.back()));
  }
  return out;
}

std::int64_t int8_dot(std::span<const std::int8_t> a, std::span<const std::int8_t> b_nk,
                      std::size_t k, std::size_t i, std::size_t j) {
  std::int64_t acc = 0;
  for (std::size_t p = 0; p < k; ++p)
    acc += static_cast<std::int64_t>(a[i * k + p]) * b_nk[j * k + p];
  return acc;
}

QuantizationError quantization_error(std::span<const float> a, std::span<const float> b_nk,
                                     std::size_t m, std::size_t n, std::size_t k,
                                     std::span<const std::pair<std::size_t, std::size_t>> entries) {
  CODA_CHECK(a.size() == m * k && b_nk.size() == n * k);
  const Quantized qa = quantize_per_tensor(a);
  const Quantized qt = quantize_per_tensor(b_nk);
  const Quantized qc = quantize_per_row(b_nk, n, k);
  double err_t = 0, err_c = 0, norm = 0;
  for (const auto& [i, j] : entries) {
    const double exact = gemm_entry(a, b_nk, n, k, i, j, BLayout::NK).value;
    const double sa = qa.scales[0];
    const double approx_t =
        static_cast<double>(int8_dot(qa.values, qt.values, k, i, j)) * sa * qt.scales[0];
    const double approx_c =
        static_cast<double>(int8_dot(qa.values, qc.values, k, i, j)) * sa * qc.scales[j];
    err_t += (approx_t - exact) * (approx_t - exact);
    err_c += (approx_c - exact) * (approx_c - exact);
    norm += exact * exact;
  }
  if (norm == 0) return {};
  return {.per_tensor = std::sqrt(err_t / norm), .per_channel = std::sqrt(err_c / norm)};
}

}  // namespace coda::validation::reference
