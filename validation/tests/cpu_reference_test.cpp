#include "validation/reference/cpu_reference.h"

#include <cmath>
#include <utility>

#include <gtest/gtest.h>

namespace coda::validation::reference {
namespace {

TEST(CpuReference, SoftmaxOfZeroAndLnTwo) {
  // exp(0) : exp(ln 2) = 1 : 2, so [1/3, 2/3].
  const std::vector<float> x{0.0F, static_cast<float>(std::log(2.0))};
  const auto y = softmax(x);
  ASSERT_EQ(y.size(), 2u);
  EXPECT_NEAR(y[0], 1.0 / 3.0, 1e-7);
  EXPECT_NEAR(y[1], 2.0 / 3.0, 1e-7);
}

TEST(CpuReference, SoftmaxIsShiftInvariant) {
  // Large inputs would overflow exp without the max subtraction: [1000, 1000] -> [1/2, 1/2].
  const auto y = softmax(std::vector<float>{1000.0F, 1000.0F});
  EXPECT_DOUBLE_EQ(y[0], 0.5);
  EXPECT_DOUBLE_EQ(y[1], 0.5);
}

TEST(CpuReference, LayerNormOfOneToFour) {
  // mean 2.5, population variance (2.25 + 0.25 + 0.25 + 2.25) / 4 = 1.25; eps 0:
  // (x - 2.5) / sqrt(1.25) = [-1.5, -0.5, 0.5, 1.5] / 1.1180339887...
  const std::vector<float> x{1, 2, 3, 4};
  const std::vector<float> gamma{1, 1, 1, 2};
  const std::vector<float> beta{0, 0, 0, 1};
  const auto y = layernorm(x, gamma, beta, 0.0);
  const double s = std::sqrt(1.25);
  EXPECT_NEAR(y[0], -1.5 / s, 1e-12);
  EXPECT_NEAR(y[1], -0.5 / s, 1e-12);
  EXPECT_NEAR(y[2], 0.5 / s, 1e-12);
  EXPECT_NEAR(y[3], 2 * 1.5 / s + 1, 1e-12);  // gamma 2, beta 1
}

TEST(CpuReference, RmsNormOfThreeFour) {
  // mean of squares (9 + 16) / 2 = 12.5; y = x / sqrt(12.5) * gamma.
  const auto y = rmsnorm(std::vector<float>{3, 4}, std::vector<float>{1, 2}, 0.0);
  EXPECT_NEAR(y[0], 3 / std::sqrt(12.5), 1e-12);
  EXPECT_NEAR(y[1], 8 / std::sqrt(12.5), 1e-12);
}

TEST(CpuReference, GeluKnownValues) {
  EXPECT_DOUBLE_EQ(gelu(0.0), 0.0);
  // gelu(1) = Phi(1) = 0.841344746068543 (the standard normal CDF at 1).
  EXPECT_NEAR(gelu(1.0), 0.841344746068543, 1e-12);
  // gelu(-1) = -1 * Phi(-1) = -0.158655253931457
  EXPECT_NEAR(gelu(-1.0), -0.158655253931457, 1e-12);
  const auto y = bias_gelu(std::vector<float>{0.5F, -1.0F}, std::vector<float>{0.5F, 1.0F});
  EXPECT_NEAR(y[0], 0.841344746068543, 1e-12);  // gelu(1)
  EXPECT_DOUBLE_EQ(y[1], 0.0);                  // gelu(0)
}

TEST(CpuReference, GemmTwoByTwoInBothLayouts) {
  // [[1, 2], [3, 4]] x [[5, 6], [7, 8]] = [[19, 22], [43, 50]]
  const std::vector<float> a{1, 2, 3, 4};
  const std::vector<float> b_kn{5, 6, 7, 8};
  const std::vector<float> b_nk{5, 7, 6, 8};  // the same B stored [n][k]
  EXPECT_EQ(gemm(a, b_kn, 2, 2, 2), (std::vector<double>{19, 22, 43, 50}));
  EXPECT_EQ(gemm(a, b_nk, 2, 2, 2, BLayout::NK), (std::vector<double>{19, 22, 43, 50}));
  // |1*6| + |2*8| = 22: with no cancellation the magnitude sum equals the value.
  EXPECT_DOUBLE_EQ(gemm_entry(a, b_kn, 2, 2, 0, 1).abs_sum, 22.0);
  const std::vector<float> neg{1, -2, 3, 4};
  const Dot d = gemm_entry(neg, b_kn, 2, 2, 0, 1);  // 1*6 - 2*8 = -10, |6| + |16| = 22
  EXPECT_DOUBLE_EQ(d.value, -10.0);
  EXPECT_DOUBLE_EQ(d.abs_sum, 22.0);
}

TEST(CpuReference, AttentionRowWeighsValuesBySoftmax) {
  // q = [1], keys [0] and [ln 2], scale 1: scores [0, ln 2], p = [1/3, 2/3];
  // values [3] and [6]: 3/3 + 12/3 = 5.
  const std::vector<float> q{1};
  const std::vector<float> k{0, static_cast<float>(std::log(2.0))};
  const std::vector<float> v{3, 6};
  const auto out = attention_row(q, k, v, 2, 1.0);
  EXPECT_NEAR(out[0], 5.0, 1e-6);
}

TEST(CpuReference, ConvThreeByThreeOnesPaddedByOne) {
  // Input 1..9 as a 3x3 image, one 3x3 filter of ones, pad 1, stride 1.
  const std::vector<float> input{1, 2, 3, 4, 5, 6, 7, 8, 9};
  const std::vector<float> filter(9, 1.0F);
  const Shape s{.batch = 1, .channels = 1, .height = 3, .width = 3, .filters = 1,
                .filter_size = 3, .stride = 1, .pad = 1};
  EXPECT_DOUBLE_EQ(conv_entry(input, filter, s, 0, 0, 0, 0).value, 1 + 2 + 4 + 5);  // corner
  EXPECT_DOUBLE_EQ(conv_entry(input, filter, s, 0, 0, 1, 1).value, 45);             // all nine
  EXPECT_DOUBLE_EQ(conv_entry(input, filter, s, 0, 0, 2, 1).value, 4 + 5 + 6 + 7 + 8 + 9);
}

TEST(CpuReference, SumAndMagnitudes) {
  const Dot d = sum(std::vector<float>{1, -2, 3});
  EXPECT_DOUBLE_EQ(d.value, 2);
  EXPECT_DOUBLE_EQ(d.abs_sum, 6);
}

TEST(CpuReference, QuantizeRoundsHalfAwayAndClamps) {
  EXPECT_EQ(quantize(0.5F, 1.0F), 1);
  EXPECT_EQ(quantize(-0.5F, 1.0F), -1);
  EXPECT_EQ(quantize(0.49F, 1.0F), 0);
  EXPECT_EQ(quantize(300.0F, 1.0F), 127);
  EXPECT_EQ(quantize(-300.0F, 1.0F), -127);
  const Quantized q = quantize_per_row(std::vector<float>{1.5F, -2, 10, 4}, 2, 2);
  ASSERT_EQ(q.scales.size(), 2u);
  EXPECT_FLOAT_EQ(q.scales[0], 2.0F / 127);   // row max |x| / 127
  EXPECT_FLOAT_EQ(q.scales[1], 10.0F / 127);
  // 1.5 / (2 / 127) = 95.25 -> 95; 4 / (10 / 127) = 50.8 -> 51
  EXPECT_EQ(q.values, (std::vector<std::int8_t>{95, -127, 127, 51}));
}

TEST(CpuReference, Int8ErrorPerTensorVersusPerChannelWithAnOutlier) {
  // A = [[1, 1]] quantizes exactly (scale 1/127). B stored [n][k]: channel 0 = [0.254, 0.128],
  // channel 1 = [12.7, 12.7], a 50x outlier.
  //   per tensor: scale 12.7 / 127 = 0.1; channel 0 -> [round(2.54), round(1.28)] = [3, 1],
  //     C0 = 0.4 instead of 0.382; C1 = 25.4 exactly. Error 0.018 / |[0.382, 25.4]|.
  //   per channel: channel 0 scale 0.254 / 127 = 0.002 -> [127, 64], exact; so is channel 1.
  const std::vector<float> a{1, 1};
  const std::vector<float> b{0.254F, 0.128F, 12.7F, 12.7F};
  const std::vector<std::pair<std::size_t, std::size_t>> all{{0, 0}, {0, 1}};
  const QuantizationError e = quantization_error(a, b, 1, 2, 2, all);
  EXPECT_NEAR(e.per_tensor, 0.018 / std::sqrt(0.382 * 0.382 + 25.4 * 25.4), 1e-6);  // 7.086e-4
  EXPECT_NEAR(e.per_channel, 0.0, 1e-6);
  EXPECT_LT(e.per_channel, e.per_tensor);
}

TEST(CpuReference, Int8DotIsExact) {
  const std::vector<std::int8_t> a{127, -127, 5};
  const std::vector<std::int8_t> b{127, 127, -3};
  EXPECT_EQ(int8_dot(a, b, 3, 0, 0), 127 * 127 - 127 * 127 - 15);
}

}  // namespace
}  // namespace coda::validation::reference
