// Runs every bundled kernel once on a small shape and checks it against the CPU reference. Where
// there is no CUDA device (CI, laptops) every test here skips with the reason.

#include <gtest/gtest.h>

#include "validation/harness/runner.h"

namespace coda::validation {
namespace {

class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (cuda_device_count(why) == 0) GTEST_SKIP() << "no CUDA device: " << why;
    runner_ = Runner::open(why);
    ASSERT_TRUE(runner_) << why;
  }
  Measurement run(Kernel kernel, DType dtype, Shape shape) {
    const Case c{.kernel = kernel, .dtype = dtype, .shape = shape, .repetitions = 3, .warmup = 1};
    return runner_->run(c, RunSettings{.seed = 1, .check_samples = 64, .date = "test",
                                       .source = "test"});
  }
  std::unique_ptr<Runner> runner_;
};

#define CODA_EXPECT_PASSES(measurement)                                                  \
  do {                                                                                   \
    const Measurement& m_ = (measurement);                                               \
    EXPECT_TRUE(m_.passed) << info(m_.kernel).name << " " << dtype_name(m_.dtype) << ": " \
                           << m_.note << " (max_error " << m_.max_error << ")";          \
    EXPECT_GT(m_.median_us, 0.0);                                                        \
  } while (false)

TEST_F(GpuTest, DeviceIsDescribed) {
  EXPECT_FALSE(runner_->device().name.empty());
  EXPECT_GT(runner_->device().sm_count, 0u);
  EXPECT_GT(runner_->device().l2_bytes, 0u);
}

TEST_F(GpuTest, Gemms) {
  const Shape odd{.m = 100, .n = 70, .k = 33};  // edges of the tiled kernels
  const Shape even{.m = 128, .n = 192, .k = 256};
  CODA_EXPECT_PASSES(run(Kernel::GemmNaive, DType::Fp32, odd));
  CODA_EXPECT_PASSES(run(Kernel::GemmTiled, DType::Fp32, odd));
  CODA_EXPECT_PASSES(run(Kernel::GemmWmma, DType::Fp16, even));
  CODA_EXPECT_PASSES(run(Kernel::GemmWmma, DType::Bf16, even));
  CODA_EXPECT_PASSES(run(Kernel::GemmInt8, DType::Int8, even));
  for (DType t : {DType::Fp32, DType::Fp16, DType::Bf16})
    CODA_EXPECT_PASSES(run(Kernel::GemmCublas, t, even));
  for (DType t : {DType::Fp16, DType::Bf16, DType::Int8})
    CODA_EXPECT_PASSES(run(Kernel::GemmCublasLt, t, even));
}

TEST_F(GpuTest, Int8PerChannelBeatsPerTensorWithOutliers) {
  const Measurement m = run(Kernel::GemmInt8, DType::Int8, Shape{.m = 64, .n = 256, .k = 256});
  CODA_EXPECT_PASSES(m);
  ASSERT_TRUE(m.quant_error_per_tensor && m.quant_error_per_channel);
  EXPECT_LT(*m.quant_error_per_channel, *m.quant_error_per_tensor);
}

TEST_F(GpuTest, RowKernels) {
  for (Kernel k : {Kernel::SoftmaxNaive, Kernel::SoftmaxOnline, Kernel::LayerNorm,
                   Kernel::RmsNorm, Kernel::BiasGeluFused, Kernel::BiasGeluUnfused}) {
    CODA_EXPECT_PASSES(run(k, DType::Fp32, Shape{.rows = 37, .cols = 1000}));
    CODA_EXPECT_PASSES(run(k, DType::Fp32, Shape{.rows = 3, .cols = 100}));  // < 1 element/thread
  }
}

TEST_F(GpuTest, Attention) {
  for (const std::uint64_t d : {std::uint64_t{64}, std::uint64_t{128}}) {
    const Shape s{.batch = 2, .heads = 2, .seq = 100, .head_dim = d};  // a partial last tile
    CODA_EXPECT_PASSES(run(Kernel::AttentionUnfused, DType::Fp16, s));
    CODA_EXPECT_PASSES(run(Kernel::AttentionFlash, DType::Fp16, s));
    CODA_EXPECT_PASSES(run(Kernel::DecodeAttention, DType::Fp16, s));
    CODA_EXPECT_PASSES(
        run(Kernel::DecodeAttention, DType::Fp16, Shape{.batch = 1, .heads = 3, .seq = 5,
                                                        .head_dim = d}));  // idle warps
  }
}

TEST_F(GpuTest, ProbesAndReduction) {
  CODA_EXPECT_PASSES(run(Kernel::ReduceSum, DType::Fp32, Shape{.elements = 1000003}));
  CODA_EXPECT_PASSES(run(Kernel::CopyBandwidth, DType::Fp32, Shape{.elements = 1 << 20}));
  CODA_EXPECT_PASSES(run(Kernel::L2Bandwidth, DType::Fp32, Shape{.elements = 1 << 18}));
  CODA_EXPECT_PASSES(run(Kernel::LaunchOverhead, DType::Fp32, Shape{}));
}

TEST_F(GpuTest, Conv) {
  const Shape s{.batch = 2, .channels = 5, .height = 9, .width = 11, .filters = 7,
                .filter_size = 3, .stride = 2, .pad = 1};
  CODA_EXPECT_PASSES(run(Kernel::Conv2dImplicitGemm, DType::Fp32, s));
  CODA_EXPECT_PASSES(run(Kernel::Conv2dCudnn, DType::Fp32, s));
}

}  // namespace
}  // namespace coda::validation
