// Calibration: the knobs fitted on a subset, the error on it and on the held-out rest. The rows
// here are built in memory: times from coda's own model with known knobs (so the fit has an
// exact answer), or a hand-derived prediction plus a known offset. None is a measurement.

#include <gtest/gtest.h>

#include "arch/arch_spec.h"
#include "validation/compare.h"
#include "validation/validation_report.h"

namespace coda::validation {
namespace {

arch::ArchSpec h200() {
  Diagnostics diags;
  const auto arch = arch::load_arch("configs/arch/nvidia_h200_sxm.yaml", diags);
  EXPECT_TRUE(arch) << diags.format_all();
  return arch ? arch->spec : arch::ArchSpec{};
}

Measurement row(Kernel kernel, DType dtype, Shape shape, double median_us) {
  Measurement m;
  m.kernel = kernel;
  m.dtype = dtype;
  m.shape = shape;
  m.median_us = median_us;
  m.passed = true;
  m.source = "FIXTURE: not a measurement";
  return m;
}

TEST(ValidationCalibration, RecoversALaunchOverheadFromAKnownOffset) {
  // coda's gemm_wmma fp16 4096^3 on the H200 is 4 us + 143.248 us of waves (compare_test.cpp
  // derives it). Measured: launch 2.5 us, and the GEMM 1.5 us less than predicted, as if its
  // launch took 2.5 us too.
  const double waves_us = 4.0 * 65536.0 / 1.83e9 * 1e6;
  const std::vector<Measurement> rows{
      row(Kernel::LaunchOverhead, DType::Fp32, {}, 2.5),
      row(Kernel::GemmWmma, DType::Fp16, {.m = 4096, .n = 4096, .k = 4096}, waves_us + 2.5)};
  std::string why;
  const auto report = compare(rows, h200(), {"launch"}, why);
  ASSERT_TRUE(report) << why;
  const CalibrationResult& c = report->calibration.value();
  // Only the launch row is in the subset, and only the launch overhead moves it.
  ASSERT_EQ(c.knobs.size(), 1u);
  EXPECT_EQ(c.knobs[0].name, "launch_overhead");
  EXPECT_NEAR(c.knobs[0].before, 4e-6, 1e-15);
  EXPECT_NEAR(c.knobs[0].fitted, 2.5e-6, 1e-12);
  EXPECT_FALSE(c.knobs[0].at_limit);
  ASSERT_TRUE(c.fitted.launch_overhead);
  EXPECT_NEAR(c.fitted.launch_overhead->value, 2.5e-6, 1e-12);
  // Subset: error (4 - 2.5) / 2.5 = 0.6 before, 0 after.
  EXPECT_EQ(c.subset_before.count, 1u);
  EXPECT_NEAR(c.subset_before.mape, 0.6, 1e-9);
  EXPECT_NEAR(c.subset_after.mape, 0.0, 1e-6);
  // Held out, the GEMM: 1.5 / (143.248 + 2.5) = 1.029% before, 0 after (whole cycles: 1e-6).
  EXPECT_EQ(c.held_out_before.count, 1u);
  EXPECT_NEAR(c.held_out_before.mape, 1.5 / (waves_us + 2.5), 1e-6);
  EXPECT_NEAR(c.held_out_after.mape, 0.0, 1e-6);
  EXPECT_TRUE(report->rows[0].in_subset);
  EXPECT_FALSE(report->rows[1].in_subset);
}

TEST(ValidationCalibration, RecoversEveryKnobFromRowsMadeByTheModel) {
  // The truth: launch 3 us, 70% of the fp16 tensor-core peak, 85% of the DRAM bandwidth.
  arch::ArchSpec truth = h200();
  truth.calibration.launch_overhead = Seconds{3e-6};
  truth.calibration.compute_fraction[DataType::Fp16] = 0.7;
  truth.calibration.dram_fraction = 0.85;
  const Predictor model(truth);
  std::vector<Measurement> rows{
      row(Kernel::LaunchOverhead, DType::Fp32, {}, 0),
      row(Kernel::GemmWmma, DType::Fp16, {.m = 4096, .n = 4096, .k = 4096}, 0),
      row(Kernel::GemmCublas, DType::Fp16, {.m = 2048, .n = 8192, .k = 1024}, 0),
      row(Kernel::CopyBandwidth, DType::Fp32, {.elements = 1u << 26}, 0),
      row(Kernel::CopyBandwidth, DType::Fp32, {.elements = 1u << 24}, 0),
      // Held out: a norm and a reduction (memory-bound, DRAM fraction only).
      row(Kernel::LayerNorm, DType::Fp32, {.rows = 8192, .cols = 4096}, 0),
      row(Kernel::ReduceSum, DType::Fp32, {.elements = 1u << 26}, 0),
  };
  for (Measurement& m : rows) {
    std::string why;
    const auto p = model.predict(m, why);
    ASSERT_TRUE(p) << why;
    m.median_us = p->seconds * 1e6;
  }
  std::string why;
  const auto report = compare(rows, h200(), {"gemm", "launch", "copy_bandwidth"}, why);
  ASSERT_TRUE(report) << why;
  const CalibrationResult& c = report->calibration.value();
  const arch::CalibrationSpec& f = c.fitted;
  ASSERT_TRUE(f.launch_overhead && f.dram_fraction);
  EXPECT_NEAR(f.launch_overhead->value, 3e-6, 3e-9);
  EXPECT_NEAR(f.compute_fraction.at(DataType::Fp16), 0.7, 1e-3);
  EXPECT_NEAR(*f.dram_fraction, 0.85, 1e-3);
  EXPECT_EQ(c.subset_after.count, 5u);
  EXPECT_LT(c.subset_after.mape, 1e-4);
  // The held-out rows were off by the DRAM fraction alone: 1 / 0.85 - 1 = 15% too fast.
  EXPECT_EQ(c.held_out_before.count, 2u);
  EXPECT_NEAR(c.held_out_before.mape, 1 - 0.85, 1e-3);
  EXPECT_LT(c.held_out_after.mape, 1e-3);

  // The YAML snippet extends the arch and carries the fitted values in YAML units.
  const std::string yaml = calibration_yaml(*report, {.measurements = "m.csv", .arch = "a.yaml",
                                                      .arch_hash = "0"},
                                            "../a.yaml");
  EXPECT_NE(yaml.find("\nextends: ../a.yaml\ncalibration:\n  launch_overhead: "), std::string::npos)
      << yaml;
  EXPECT_NE(yaml.find("  compute_fraction:\n    fp16: 0."), std::string::npos) << yaml;
}

TEST(ValidationCalibration, ASubsetWithoutComparedRowsIsAnError) {
  const std::vector<Measurement> rows{row(Kernel::LaunchOverhead, DType::Fp32, {}, 2.5)};
  std::string why;
  EXPECT_FALSE(compare(rows, h200(), {"gemm"}, why));
  EXPECT_EQ(why, "--calibrate-on gemm selects no compared row (skipped rows are not fitted)");
}

}  // namespace
}  // namespace coda::validation
