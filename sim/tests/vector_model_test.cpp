// Hand-derived checks of the vector-unit model (sim/analytical/vector_model.h):
// time = max(elements x ops / ops per second, elements x special ops / special ops per second,
// (passes x bytes read + bytes written) / bytes per second).
#include "sim/analytical/vector_model.h"

#include <gtest/gtest.h>

namespace coda::sim::analytical {
namespace {

constexpr double kRel = 1e-12;

// A100's SIMT units (CUDA C++ Programming Guide, arithmetic instruction throughput, compute
// capability 8.0): 64 fp32 add/multiply/FMA and 16 exp2/rsqrt/reciprocal results per cycle per
// SM; 108 SMs at 1.41 GHz; 1555 GB/s HBM2.
constexpr VectorParams kA100{.ops_per_cycle = 108 * 64,
                             .special_ops_per_cycle = 108 * 16,
                             .clock_hz = 1.41e9,
                             .bytes_per_second = 1.555e12};

// A small NPU vector unit: 64 lanes and 4 special-function results per cycle at 1 GHz,
// fed by 100 GB/s.
constexpr VectorParams kNpu{.ops_per_cycle = 64,
                            .special_ops_per_cycle = 4,
                            .clock_hz = 1e9,
                            .bytes_per_second = 1e11};

TEST(VectorModel, FunctionCountsAreTheStatedOnes) {
  // Each count is derived next to it in vector_model.cpp.
  const auto counts = [](VectorFunction f) { return vector_function_counts(f); };
  EXPECT_EQ(counts(VectorFunction::Copy).ops_per_element, 0.0);
  EXPECT_EQ(counts(VectorFunction::Add).ops_per_element, 1.0);
  EXPECT_EQ(counts(VectorFunction::Add).inputs, 2u);
  EXPECT_EQ(counts(VectorFunction::Mul).inputs, 2u);
  EXPECT_EQ(counts(VectorFunction::Relu).ops_per_element, 1.0);
  EXPECT_EQ(counts(VectorFunction::Relu).special_ops_per_element, 0.0);
  EXPECT_EQ(counts(VectorFunction::Exp).ops_per_element, 1.0);       // x * log2 e, then exp2
  EXPECT_EQ(counts(VectorFunction::Special).ops_per_element, 0.0);   // rsqrt, sin, cos: MUFU only
  EXPECT_EQ(counts(VectorFunction::Sigmoid).ops_per_element, 3.0);   // negate, +1, divide
  EXPECT_EQ(counts(VectorFunction::Tanh).ops_per_element, 4.0);      // *-2, +1, divide, -1
  EXPECT_EQ(counts(VectorFunction::Silu).ops_per_element, 4.0);      // sigmoid + multiply
  EXPECT_EQ(counts(VectorFunction::Gelu).ops_per_element, 12.0);     // 5 + tanh's 4 + 3
  for (const VectorFunction f :
       {VectorFunction::Exp, VectorFunction::Sigmoid, VectorFunction::Tanh, VectorFunction::Silu,
        VectorFunction::Gelu, VectorFunction::Softmax, VectorFunction::Special})
    EXPECT_EQ(counts(f).special_ops_per_element, 1.0) << to_string(f);
  // Softmax: max (1) | subtract, *log2 e, sum, divide (4) + exp2; a max pass and an exp pass.
  EXPECT_EQ(counts(VectorFunction::Softmax).ops_per_element, 5.0);
  EXPECT_EQ(counts(VectorFunction::Softmax).passes, 2u);
  // Layer norm: sum, square, sum of squares | subtract mean, *rstd, *gamma, +beta.
  EXPECT_EQ(counts(VectorFunction::LayerNorm).ops_per_element, 7.0);
  EXPECT_EQ(counts(VectorFunction::LayerNorm).passes, 2u);
  // RMS norm: square, sum | *rstd, *gamma.
  // Inference batch norm, y = x * scale[c] + shift[c]: one FMA, one pass over x.
  EXPECT_EQ(counts(VectorFunction::ScaleShift).ops_per_element, 1.0);
  EXPECT_EQ(counts(VectorFunction::ScaleShift).passes, 1u);
  EXPECT_EQ(counts(VectorFunction::RmsNorm).ops_per_element, 4.0);
  EXPECT_EQ(counts(VectorFunction::RmsNorm).passes, 2u);
  EXPECT_EQ(counts(VectorFunction::Quantize).ops_per_element, 5.0);  // scale, round, +zp, clamp x2
  EXPECT_EQ(counts(VectorFunction::Dequantize).ops_per_element, 3.0);  // convert, -zp, *scale
}

TEST(VectorModel, MakeWorkCountsInputsPassesAndBytes) {
  // Add of 1000 fp32 elements: 2 inputs x 1000 x 4 B read, 1000 x 4 B written.
  const VectorWork add = make_vector_work(VectorFunction::Add, 1000, 4, 4);
  EXPECT_EQ(add.bytes_read, 8000u);
  EXPECT_EQ(add.bytes_written, 4000u);
  EXPECT_EQ(add.passes, 1u);
  // Quantize fp16 -> int8: 2 B read, 1 B written per element.
  const VectorWork q = make_vector_work(VectorFunction::Quantize, 1000, 2, 1);
  EXPECT_EQ(q.bytes_read, 2000u);
  EXPECT_EQ(q.bytes_written, 1000u);
  // Layer norm of 1000 fp16: read twice, written once: 2 x 2000 + 2000 = 6000 B moved.
  const VectorWork ln = make_vector_work(VectorFunction::LayerNorm, 1000, 2, 2);
  EXPECT_DOUBLE_EQ(evaluate_vector(ln, kA100).bytes, 6000.0);
}

TEST(VectorModel, SoftmaxOnA100IsMemoryBound) {
  // Softmax over 4096 rows of 4096 fp16 = 16777216 elements (32 MiB).
  const std::uint64_t n = 4096ULL * 4096;
  const VectorCost c = evaluate_vector(make_vector_work(VectorFunction::Softmax, n, 2, 2), kA100);
  // Memory: 2 passes x 33554432 B read + 33554432 B written = 100663296 B / 1555 GB/s = 64.7 us.
  EXPECT_DOUBLE_EQ(c.bytes, 100663296.0);
  EXPECT_NEAR(c.memory_seconds, 100663296 / 1.555e12, kRel);
  // Arithmetic: 5 x 16777216 / 6912 per cycle / 1.41e9 = 8.6 us; special: 16777216 / 1728 /
  // 1.41e9 = 6.9 us.
  EXPECT_NEAR(c.arithmetic_seconds, 5.0 * n / 6912 / 1.41e9, kRel);
  EXPECT_NEAR(c.special_seconds, 1.0 * n / 1728 / 1.41e9, kRel);
  EXPECT_EQ(c.seconds, c.memory_seconds);
  EXPECT_EQ(c.bound, VectorBound::Memory);
  EXPECT_NEAR(c.cycles, c.seconds * 1.41e9, 1e-6);
}

TEST(VectorModel, SoftmaxOnASmallNpuIsComputeBound) {
  // 1 Mi fp16 elements on the NPU. Memory: 3 x 2 MiB = 6291456 B / 100 GB/s = 62.91 us.
  // Arithmetic: 5 x 1048576 / 64 / 1e9 = 81.92 us. Special: 1048576 / 4 / 1e9 = 262.144 us.
  const std::uint64_t n = 1ULL << 20;
  const VectorWork work = make_vector_work(VectorFunction::Softmax, n, 2, 2);
  const VectorCost c = evaluate_vector(work, kNpu);
  EXPECT_NEAR(c.memory_seconds, 62.91456e-6, kRel);
  EXPECT_NEAR(c.arithmetic_seconds, 81.92e-6, kRel);
  EXPECT_NEAR(c.special_seconds, 262.144e-6, kRel);
  EXPECT_NEAR(c.seconds, 262.144e-6, kRel);
  EXPECT_EQ(c.bound, VectorBound::Special);
  // Without a special-function unit the exp runs on the lanes as 10 ops:
  // (5 + 10) x 1048576 / 64 / 1e9 = 245.76 us, arithmetic-bound.
  VectorParams no_sfu = kNpu;
  no_sfu.special_ops_per_cycle = 0.0;
  const VectorCost emulated = evaluate_vector(work, no_sfu);
  EXPECT_EQ(emulated.special_seconds, 0.0);
  EXPECT_NEAR(emulated.seconds, 245.76e-6, kRel);
  EXPECT_EQ(emulated.bound, VectorBound::Arithmetic);
}

TEST(VectorModel, UnlimitedBandwidthAndMemoryOnlyWork) {
  // Relu of 1 Mi fp16 on the NPU with unlimited bandwidth: 1048576 / 64 / 1e9 = 16.384 us.
  VectorParams free = kNpu;
  free.bytes_per_second = 0.0;
  const VectorCost relu =
      evaluate_vector(make_vector_work(VectorFunction::Relu, 1 << 20, 2, 2), free);
  EXPECT_EQ(relu.memory_seconds, 0.0);
  EXPECT_NEAR(relu.seconds, 16.384e-6, kRel);
  EXPECT_EQ(relu.bound, VectorBound::Arithmetic);
  // A copy does no arithmetic: 2 MiB in + 2 MiB out at 100 GB/s = 41.94304 us.
  const VectorCost copy =
      evaluate_vector(make_vector_work(VectorFunction::Copy, 1 << 20, 2, 2), kNpu);
  EXPECT_EQ(copy.arithmetic_seconds, 0.0);
  EXPECT_NEAR(copy.seconds, 41.94304e-6, kRel);
  EXPECT_EQ(copy.bound, VectorBound::Memory);
}

}  // namespace
}  // namespace coda::sim::analytical
