// Calibration: the knobs fitted on a subset, the error on it and on the held-out rest. The rows
// here are built in memory: times from coda's own model with known knobs (so the fit has an
// exact answer), or a hand-derived prediction plus a known offset. None is a measurement.

#include <gtest/gtest.h>

#include "arch/arch_spec.h"
#include "validation/compare.h"
#include "validation/validation_report.h"

namespace coda::validation {
namespace {

// The H200 preset with every calibration parameter pinned (fixtures/h200_pinned.yaml): every
// efficiency 1, every kernel's fixed cost 4 us but a copy's 0.
arch::ArchSpec h200() {
  Diagnostics diags;
  const auto arch = arch::load_arch("validation/tests/fixtures/h200_pinned.yaml", diags);
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

TEST(ValidationCalibration, RecoversAFixedCostFromAKnownOffset) {
  // The empty-kernel probe is priced as a vector kernel's fixed cost: 4 us pinned. Measured
  // 2.5 us. Held out: a sum of 2^28 fp32, memory-bound: (2^30 + 4) B / 4.8 TB/s = 223.696 us plus
  // its fixed cost; measured as if that fixed cost were 2.5 us too.
  const double bytes_us = (1073741824.0 + 4.0) / 4.8e12 * 1e6;
  const std::vector<Measurement> rows{
      row(Kernel::LaunchOverhead, DType::Fp32, {}, 2.5),
      row(Kernel::ReduceSum, DType::Fp32, {.elements = 268435456}, bytes_us + 2.5)};
  std::string why;
  const auto report = compare(rows, h200(), {"launch"}, why);
  ASSERT_TRUE(report) << why;
  const CalibrationResult& c = report->calibration.value();
  // Only the launch row is in the subset, and only the vector kernels' fixed cost moves it.
  ASSERT_EQ(c.knobs.size(), 1u);
  EXPECT_EQ(c.knobs[0].name, "fixed_cost.vector");
  EXPECT_NEAR(c.knobs[0].before, 4e-6, 1e-15);
  EXPECT_NEAR(c.knobs[0].fitted, 2.5e-6, 1e-12);
  EXPECT_FALSE(c.knobs[0].at_limit);
  EXPECT_NEAR(c.fitted.fixed_cost.at(arch::KernelKind::Vector).value, 2.5e-6, 1e-12);
  // Subset: error (4 - 2.5) / 2.5 = 0.6 before, 0 after.
  EXPECT_EQ(c.subset_before.count, 1u);
  EXPECT_NEAR(c.subset_before.mape, 0.6, 1e-9);
  EXPECT_NEAR(c.subset_after.mape, 0.0, 1e-6);
  // Held out, the sum: 1.5 / (223.696 + 2.5) = 0.663% before, 0 after (coda rounds the op's
  // time and its fixed cost up to whole cycles of 0.55 ns each: 1e-5 of 226 us).
  EXPECT_EQ(c.held_out_before.count, 1u);
  EXPECT_NEAR(c.held_out_before.mape, 1.5 / (bytes_us + 2.5), 1e-5);
  EXPECT_NEAR(c.held_out_after.mape, 0.0, 1e-5);
  EXPECT_TRUE(report->rows[0].in_subset);
  EXPECT_FALSE(report->rows[1].in_subset);
}

// A kernel timed back to back from a CUDA graph (launch: graph) is priced with the in-model
// fixed cost, and the GraphKernels stage fits that knob alone on such rows.
TEST(ValidationCalibration, GraphLaunchedKernelsFitTheInModelFixedCost) {
  arch::ArchSpec spec = h200();
  spec.calibration.fixed_cost[arch::KernelKind::Copy] = Seconds{4e-6};  // every standalone: 4 us
  arch::ArchSpec truth = spec;
  truth.calibration.in_model_fixed_cost = Seconds{1.1e-6};
  const Predictor model(truth);
  std::vector<Measurement> rows;
  for (const std::uint64_t elements : {1024ULL, 65536ULL, 1048576ULL}) {
    Measurement m = row(Kernel::Gelu, DType::Fp16, {.elements = elements}, 0);
    m.launch = Launch::Graph;
    std::string why;
    const auto graph = model.predict(m, why);
    ASSERT_TRUE(graph) << why;
    m.median_us = graph->seconds * 1e6;
    // The same kernel timed on its own pays the standalone 4 us instead: 2.9 us more (to the
    // cycle: 0.55 ns at the H200's 1.83 GHz).
    Measurement alone = m;
    alone.launch = Launch::Default;
    const auto standalone = model.predict(alone, why);
    ASSERT_TRUE(standalone) << why;
    EXPECT_NEAR(standalone->seconds - graph->seconds, 2.9e-6, 1e-9);
    rows.push_back(m);
  }
  std::vector<FitRow> fit_rows;
  fit_rows.reserve(rows.size());
  for (const Measurement& m : rows) fit_rows.push_back({&m, 0});
  const std::vector<arch::ArchSpec> specs{spec};
  const FitResult fit = fit_calibration(fit_rows, specs, {}, {.scope = FitScope::GraphKernels});
  ASSERT_EQ(fit.knobs.size(), 1u);
  EXPECT_EQ(fit.knobs[0].name, "in_model_fixed_cost");
  EXPECT_NEAR(fit.knobs[0].before, 4e-6, 1e-12);  // unset: the least standalone fixed cost
  EXPECT_NEAR(fit.knobs[0].fitted, 1.1e-6, 1e-9);
}

// only_knobs fits the knobs it names and holds the rest. The rows: the empty-kernel probe (the
// vector fixed cost alone, measured 2.5 us against the pinned 4 us) and copies of 2^26 and 2^20
// fp32 (2^29 and 2^23 B read and written at the pinned copy fixed cost 0, measured as if at 85%
// of 4.8 TB/s). Asked for "fixed_cost" (a prefix: every kind), the fit moves the vector fixed
// cost to 2.5 us and leaves dram_fraction at its pinned 1, though the copy rows ask for 0.85.
TEST(ValidationCalibration, OnlyTheNamedKnobsAreFitted) {
  const arch::ArchSpec spec = h200();
  std::vector<Measurement> rows{row(Kernel::LaunchOverhead, DType::Fp32, {}, 2.5),
                                row(Kernel::CopyBandwidth, DType::Fp32, {.elements = 1u << 26},
                                    536870912.0 / (0.85 * 4.8e12) * 1e6),
                                row(Kernel::CopyBandwidth, DType::Fp32, {.elements = 1u << 20},
                                    8388608.0 / (0.85 * 4.8e12) * 1e6)};
  std::vector<FitRow> fit_rows;
  fit_rows.reserve(rows.size());
  for (const Measurement& m : rows) fit_rows.push_back({&m, 0});
  const std::vector<arch::ArchSpec> specs{spec};
  const FitResult fit = fit_calibration(fit_rows, specs, {},
                                        {.scope = FitScope::Kernels, .only_knobs = {"fixed_cost"}});
  ASSERT_EQ(fit.knobs.size(), 2u);  // the vector's and the copy's fixed costs move these rows
  EXPECT_EQ(fit.knobs[0].name, "fixed_cost.vector");
  EXPECT_NEAR(fit.knobs[0].fitted, 2.5e-6, 1e-9);
  EXPECT_EQ(fit.knobs[1].name, "fixed_cost.copy");
  EXPECT_EQ(fit.fitted.at(0).dram_fraction, spec.calibration.dram_fraction);
  // Without the restriction the DRAM fraction is fitted too: 0.85, the copies' fixed cost 0.
  const FitResult all = fit_calibration(fit_rows, specs, {}, {.scope = FitScope::Kernels});
  ASSERT_TRUE(all.fitted.at(0).dram_fraction);
  EXPECT_NEAR(*all.fitted.at(0).dram_fraction, 0.85, 1e-3);
  // Names match whole or up to a '.'.
  EXPECT_TRUE(knob_selected("tensor_issue.wgmma.bf16+fp16", "tensor_issue.wgmma"));
  EXPECT_TRUE(knob_selected("dram_fraction", "dram_fraction"));
  EXPECT_FALSE(knob_selected("tensor_issue.wgmma.bf16+fp16", "tensor_issue.wg"));
  EXPECT_FALSE(knob_selected("fixed_cost.gemm", "fixed_cost.gemm.x"));
}

// The pinned H200 without its global_load_latency: the WMMA kernel's K steps then wait for no
// load chain (gpu_model.h, "Load latency") and its time is its MACs, which carry the mma.sync
// issue share this test recovers.
arch::ArchSpec h200_without_load_latency() {
  arch::ArchSpec spec = h200();
  for (arch::ComputeUnitSpec& unit : spec.compute)
    if (unit.tensor_core) unit.tensor_core->global_load_latency.reset();
  return spec;
}

TEST(ValidationCalibration, RecoversEveryKnobFromRowsMadeByTheModel) {
  // The truth: fixed costs 3 us (GEMM and vector kernels) and 1 us (copies); 70% of the fp16
  // tensor peak through mma.sync (the WMMA kernels) and 80% through wgmma (the H200's library
  // GEMM path); 85% of the DRAM bandwidth.
  arch::ArchSpec truth = h200_without_load_latency();
  arch::CalibrationSpec& t = truth.calibration;
  t.fixed_cost[arch::KernelKind::Gemm] = Seconds{3e-6};
  t.fixed_cost[arch::KernelKind::Vector] = Seconds{3e-6};
  t.fixed_cost[arch::KernelKind::Copy] = Seconds{1e-6};
  t.tensor_issue[arch::TensorPath::MmaSync][DataType::Fp16] = 0.7;
  t.tensor_issue[arch::TensorPath::Wgmma][DataType::Fp16] = 0.8;
  t.dram_fraction = 0.85;
  const Predictor model(truth);
  std::vector<Measurement> rows{
      row(Kernel::LaunchOverhead, DType::Fp32, {}, 0),
      row(Kernel::GemmWmma, DType::Fp16, {.m = 4096, .n = 4096, .k = 4096}, 0),
      row(Kernel::GemmWmma, DType::Fp16, {.m = 2048, .n = 2048, .k = 2048}, 0),
      row(Kernel::GemmCublas, DType::Fp16, {.m = 2048, .n = 8192, .k = 1024}, 0),
      row(Kernel::GemmCublas, DType::Fp16, {.m = 4096, .n = 4096, .k = 4096}, 0),
      row(Kernel::CopyBandwidth, DType::Fp32, {.elements = 1u << 26}, 0),
      row(Kernel::CopyBandwidth, DType::Fp32, {.elements = 1u << 24}, 0),
      row(Kernel::CopyBandwidth, DType::Fp32, {.elements = 1u << 20}, 0),
      // Held out: a norm and a reduction (memory-bound vector kernels).
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
  const auto report =
      compare(rows, h200_without_load_latency(), {"gemm", "launch", "copy_bandwidth"}, why);
  ASSERT_TRUE(report) << why;
  const CalibrationResult& c = report->calibration.value();
  const arch::CalibrationSpec& f = c.fitted;
  ASSERT_TRUE(f.dram_fraction);
  EXPECT_NEAR(f.fixed_cost.at(arch::KernelKind::Gemm).value, 3e-6, 3e-9);
  EXPECT_NEAR(f.fixed_cost.at(arch::KernelKind::Vector).value, 3e-6, 3e-9);
  EXPECT_NEAR(f.fixed_cost.at(arch::KernelKind::Copy).value, 1e-6, 3e-9);
  EXPECT_NEAR(f.tensor_issue.at(arch::TensorPath::MmaSync).at(DataType::Fp16), 0.7, 1e-3);
  EXPECT_NEAR(f.tensor_issue.at(arch::TensorPath::Wgmma).at(DataType::Fp16), 0.8, 1e-3);
  EXPECT_NEAR(*f.dram_fraction, 0.85, 1e-3);
  EXPECT_EQ(c.subset_after.count, 8u);
  EXPECT_LT(c.subset_after.mape, 1e-4);
  // The held-out rows, priced with the pinned knobs, were off by the fixed cost and the DRAM
  // fraction: predicted 4 us + b / 4.8 TB/s against the truth 3 us + b / (0.85 x 4.8 TB/s), with
  // b the bytes each moves once (a row of 4096 fp32 fits shared memory): the norm reads x and
  // gamma and writes y, 2 x 2^27 + 2^14 B; the sum reads 2^28 B and writes 4.
  const auto error = [](double b) {
    return std::abs((4e-6 + b / 4.8e12) / (3e-6 + b / (0.85 * 4.8e12)) - 1.0);
  };
  const double held_out = (error(2.0 * 134217728 + 16384) + error(268435456.0 + 4)) / 2;
  EXPECT_EQ(c.held_out_before.count, 2u);
  EXPECT_NEAR(c.held_out_before.mape, held_out, 1e-4);
  EXPECT_LT(c.held_out_after.mape, 1e-3);

  // The YAML snippet extends the arch and carries the fitted values in YAML units.
  const std::string yaml = calibration_yaml(*report, {.measurements = "m.csv", .arch = "a.yaml",
                                                      .arch_hash = "0"},
                                            "../a.yaml");
  EXPECT_NE(yaml.find("\nextends: ../a.yaml\ncalibration:\n"), std::string::npos) << yaml;
  const std::string gemm_key = "  fixed_cost:\n    gemm: ";
  const auto gemm = yaml.find(gemm_key);
  ASSERT_NE(gemm, std::string::npos) << yaml;  // in us, the fitted 3 us to the fit's precision
  EXPECT_NEAR(std::stod(yaml.substr(gemm + gemm_key.size())), 3.0, 1e-3) << yaml;
  const auto mma_sync = yaml.find("  tensor_issue:\n    mma_sync:\n");
  ASSERT_NE(mma_sync, std::string::npos) << yaml;
  // fp16 and bf16 run at one peak rate, so they share a knob: both are written.
  for (const std::string key : {"      bf16: ", "      fp16: "}) {
    const auto at = yaml.find(key, mma_sync);
    ASSERT_NE(at, std::string::npos) << yaml;
    EXPECT_NEAR(std::stod(yaml.substr(at + key.size())), 0.7, 1e-3) << yaml;
  }
}

TEST(ValidationCalibration, ASubsetWithoutComparedRowsIsAnError) {
  const std::vector<Measurement> rows{row(Kernel::LaunchOverhead, DType::Fp32, {}, 2.5)};
  std::string why;
  EXPECT_FALSE(compare(rows, h200(), {"gemm"}, why));
  EXPECT_EQ(why, "--calibrate-on gemm selects no compared row (skipped rows are not fitted)");
}

}  // namespace
}  // namespace coda::validation
