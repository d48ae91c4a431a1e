#include "validation/compare.h"

#include <cmath>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "arch/arch_spec.h"
#include "validation/validation_report.h"

namespace coda::validation {
namespace {

// The fixtures are hand-written tables of made-up times (their source column says "FIXTURE: not
// a measurement"); each time is a stated multiple of a prediction derived below by hand from the
// H200 preset with its calibration pinned (fixtures/h200_pinned.yaml): DRAM 4.8 TB/s, clock
// 1.83 GHz, 132 SMs, tensor cores 2048 fp16 MACs per cycle per SM, CUDA cores 128 fp32 ops per
// cycle per SM, L2 with no stated bandwidth, every efficiency 1, every kernel's fixed cost 4 us
// but a copy's 0.
constexpr const char* kArch = "validation/tests/fixtures/h200_pinned.yaml";

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

ValidationReport compare_fixture(const std::string& fixture,
                                 const std::vector<std::string>& subset = {}) {
  Diagnostics diags;
  const auto arch = arch::load_arch(kArch, diags);
  const std::string path = "validation/tests/fixtures/" + fixture;
  const auto rows = read_measurements(read_text(path), path, diags);
  EXPECT_TRUE(arch && rows) << diags.format_all();
  if (!arch || !rows) return {};
  std::string why;
  auto report = compare(*rows, arch->spec, subset, why);
  EXPECT_TRUE(report) << why;
  return report.value_or(ValidationReport{});
}

// Predictions derived by hand. coda rounds an op's time up to whole cycles of 1.83 GHz, so they
// agree to one cycle (kCycle), and errors built on them to 1e-5.
constexpr double kCycle = 1.0 / 1.83e9;
constexpr double kStat = 1e-5;
constexpr double kCopy256M = 2147483648.0 / 4.8e12;  // 2^28 fp32 read + written: 2^31 B
// Sum of 2^28 fp32: memory (2^30 B + the 4 B result) / 4.8 TB/s = 223.70 us beats the arithmetic
// 2^28 / (132 x 128 x 1.83e9) = 8.68 us; plus the vector kernel's fixed cost, 4 us (the fixture
// arch pins every kernel's fixed cost at 4 us, a copy's at 0).
constexpr double kReduce256M = 4e-6 + (1073741824.0 + 4.0) / 4.8e12;
// gemm_wmma fp16 4096^3 with its own tile 64x64x32, 4 warps, 1 stage (9728 B of shared memory /
// 8192 B per stage, rounded) and its compiled 71 registers a thread: 64 x 64 = 4096 blocks; per
// block 8192 B smem (28 fit), 128 x 71 = 9088 registers (7 fit), 4 warps (16 fit): 7 blocks per
// SM, waves of 924 blocks: 4 full and a tail of 400. The kernel does not pipeline its loads: a
// K step waits for 4 dependent global round trips at the preset's global_load_latency, 354 ns,
// so a block's 128 steps take 128 x 4 x 354 ns = 181.248 us, more than a wave's compute (7 x
// 64*64*4096 MACs / 2048 a cycle = 57344 cycles = 31.3 us) or its DRAM bytes (about 12 us):
// 4 us + 5 x 181.248 us = 910.24 us, bound by the load latency (reported as memory).
constexpr double kWmma4096 = 4e-6 + 5.0 * 128.0 * 4.0 * 354e-9;

TEST(ValidationStats, SpearmanOfAKnownPermutation) {
  // Ranks (1 2 3 4 5) against (2 1 3 5 4): sum d^2 = 4, rho = 1 - 6*4 / (5*24) = 0.8.
  const std::vector<double> a{10, 20, 30, 40, 50}, b{2, 1, 3, 5, 4};
  EXPECT_NEAR(spearman(a, b), 0.8, 1e-12);
  // Ties take their average rank: (1 2.5 2.5 4) vs (1 2 3 4): 4.5 / sqrt(4.5 x 5) = 0.948683.
  const std::vector<double> c{1, 2, 2, 3}, d{1, 2, 3, 4};
  EXPECT_NEAR(spearman(c, d), 4.5 / std::sqrt(4.5 * 5.0), 1e-12);
  // A reversed order is -1; fewer than two points, or a constant series, have none.
  const std::vector<double> e{4, 3, 2, 1};
  EXPECT_NEAR(spearman(d, e), -1.0, 1e-12);
  EXPECT_TRUE(std::isnan(spearman(std::vector<double>{1}, std::vector<double>{2})));
  EXPECT_TRUE(std::isnan(spearman(std::vector<double>{1, 1}, std::vector<double>{1, 2})));
}

TEST(ValidationStats, MapeAndWorstCase) {
  // Errors (p - m) / m: 1/1.1 - 1 = -0.0909, 1/0.9 - 1 = +0.1111, 1/2 - 1 = -0.5.
  const std::vector<double> predicted{1, 1, 1}, measured{1.1, 0.9, 2};
  const ErrorStats s = error_stats(predicted, measured);
  EXPECT_EQ(s.count, 3u);
  // The median of |error|: 0.0909, 0.1111, 0.5 -> 0.1111.
  EXPECT_NEAR(s.median, 1 / 0.9 - 1, 1e-12);
  EXPECT_NEAR(s.mape, (1 - 1 / 1.1 + 1 / 0.9 - 1 + 0.5) / 3, 1e-12);
  EXPECT_EQ(s.worst, 2u);
  EXPECT_NEAR(s.worst_error, -0.5, 1e-12);
}

TEST(ValidationCompare, HandDerivedFixtureOnTheH200) {
  const ValidationReport r = compare_fixture("h200_hand_derived.csv");
  ASSERT_EQ(r.rows.size(), 6u);
  const auto predicted = [&](std::size_t i) { return r.rows[i].prediction.value().seconds; };
  EXPECT_NEAR(predicted(0), kCopy256M, kCycle);
  EXPECT_NEAR(predicted(1), kReduce256M, kCycle);
  EXPECT_NEAR(predicted(3), 4e-6, 1e-12);
  EXPECT_NEAR(predicted(4), kWmma4096, kCycle);
  EXPECT_EQ(r.rows[0].prediction->bound, PredictedBound::Memory);
  EXPECT_EQ(r.rows[1].prediction->bound, PredictedBound::Memory);
  EXPECT_EQ(r.rows[3].prediction->bound, PredictedBound::Launch);
  EXPECT_EQ(r.rows[4].prediction->bound, PredictedBound::Memory);

  // Skipped rows stay in the report with their reason, never silently dropped.
  EXPECT_FALSE(r.rows[2].prediction);
  EXPECT_NE(r.rows[2].skipped.find("states no read bandwidth for its L2 level 'l2'"),
            std::string::npos)
      << r.rows[2].skipped;
  EXPECT_EQ(r.rows[5].skipped, "not measured: FIXTURE: this case did not run");

  // Measured = 1.1x, 0.9x, 1.25x and 0.9x of the predictions: errors -1/11, +1/9, -0.2, +1/9.
  const double mape = (1.0 / 11 + 1.0 / 9 + 0.2 + 1.0 / 9) / 4;
  EXPECT_EQ(r.overall.count, 4u);
  EXPECT_NEAR(r.overall.mape, mape, kStat);
  EXPECT_EQ(r.overall.worst, 3u);  // the launch row
  EXPECT_NEAR(r.overall.worst_error, -0.2, kStat);
  // The measured order equals the predicted one (910 > 447 > 224 > 4 us): rho = 1.
  EXPECT_NEAR(r.overall.spearman, 1.0, 1e-12);

  // By class: memory = copy and reduce (the L2 and softmax rows are skipped), gemm, launch.
  ASSERT_EQ(r.by_class.size(), 4u);
  EXPECT_EQ(r.by_class[0].name, "gemm");
  EXPECT_NEAR(r.by_class[0].stats.mape, 1.0 / 9, kStat);
  EXPECT_EQ(r.by_class[1].name, "memory");
  EXPECT_EQ(r.by_class[1].rows.size(), 4u);
  EXPECT_EQ(r.by_class[1].stats.count, 2u);
  EXPECT_NEAR(r.by_class[1].stats.mape, (1.0 / 11 + 1.0 / 9) / 2, kStat);
  EXPECT_EQ(r.by_class[2].name, "fusion");  // softmax_online, skipped: no compared row
  EXPECT_EQ(r.by_class[2].stats.count, 0u);
  EXPECT_EQ(r.by_class[3].name, "launch");
  EXPECT_NEAR(r.by_class[3].stats.mape, 0.2, kStat);

  // By source, in order of first appearance: table A (copy, reduce, L2), table B.
  ASSERT_EQ(r.by_source.size(), 2u);
  EXPECT_EQ(r.by_source[0].name, "FIXTURE: not a measurement (table A)");
  EXPECT_EQ(r.by_source[0].stats.count, 2u);
  EXPECT_NEAR(r.by_source[0].stats.mape, (1.0 / 11 + 1.0 / 9) / 2, kStat);
  EXPECT_NEAR(r.by_source[1].stats.mape, (0.2 + 1.0 / 9) / 2, kStat);
}

TEST(ValidationCompare, PermutedFixtureGivesTheHandDerivedSpearmanAndMape) {
  // Copies of 2^20 .. 2^24 floats: coda predicts t_i = 8 x 2^(19+i) B / 4.8 TB/s, doubling each
  // row; the fixture lists t2, t1, t3, t5, t4 (measured ranks 2 1 3 5 4): rho = 0.8, errors
  // -0.5, +1, 0, -0.5, +1, MAPE 0.6, worst the first +1 (row 2).
  const ValidationReport r = compare_fixture("h200_permutation.csv");
  EXPECT_EQ(r.overall.count, 5u);
  EXPECT_NEAR(r.overall.spearman, 0.8, 1e-12);
  // The smallest copy is 1.75 us = 3198 cycles, so whole cycles move its error by 3e-4 at most.
  EXPECT_NEAR(r.overall.mape, 0.6, 1e-3);
  EXPECT_EQ(r.overall.worst, 1u);
  EXPECT_NEAR(r.overall.worst_error, 1.0, 1e-3);
}

arch::ArchSpec pinned_h200() {
  Diagnostics diags;
  const auto arch = arch::load_arch(kArch, diags);
  EXPECT_TRUE(arch) << diags.format_all();
  return arch ? arch->spec : arch::ArchSpec{};
}

// One of coda-bench's fp16 attention cases.
Measurement attention_case(Kernel kernel, std::uint64_t batch, std::uint64_t heads,
                           std::uint64_t seq, std::uint64_t head_dim) {
  Measurement m;
  m.kernel = kernel;
  m.dtype = DType::Fp16;
  m.shape.batch = batch;
  m.shape.heads = heads;
  m.shape.seq = seq;
  m.shape.head_dim = head_dim;
  return m;
}

TEST(ValidationCompare, DecodeKernelWaitsTwoGlobalLoadLatenciesAKeyPerWarp) {
  // coda-bench's decode kernel, batch 1, 32 heads, context 4096, head_dim 128, on the pinned
  // H200 (global_load_latency 354 ns from the H100 preset it extends; attention fixed cost 4 us):
  // 32 blocks of 8 warps, one wave (an SM holds min(32, 64 / 8) = 8 blocks, 132 SMs). Each warp
  // walks 4096 / 8 = 512 keys, two dependent loads a key: 512 x 2 x 354 ns = 362.496 us. The
  // bytes, 2 x 32 x 4096 x 128 x 2 B of K and V + 32 x 128 x 6 B of q and o = 67,133,440 B at
  // 4.8 TB/s, take 13.99 us; the MACs, 2 x 32 x 4096 x 128 = 33.6M at 132 x 128 x 1.83e9 a
  // second, 1.09 us. So 4 us + 362.496 us.
  const arch::ArchSpec spec = pinned_h200();
  Measurement m = attention_case(Kernel::DecodeAttention, 1, 32, 4096, 128);
  const Predictor predictor(spec);
  std::string why;
  const auto p = predictor.predict(m, why);
  ASSERT_TRUE(p) << why;
  EXPECT_NEAR(p->seconds, 4e-6 + 512 * 2 * 354e-9, 1e-12);
  EXPECT_EQ(p->bound, PredictedBound::Memory);
  EXPECT_NE(p->model.find("global_load_latency 354 ns"), std::string::npos) << p->model;

  // Batch 16: 512 blocks still fit one wave (132 x 8 = 1056), so the chain is the same, and the
  // bytes (16x: 1,074,135,040 B, 223.78 us) still take less.
  m.shape.batch = 16;
  const auto b16 = predictor.predict(m, why);
  ASSERT_TRUE(b16) << why;
  EXPECT_NEAR(b16->seconds, 4e-6 + 512 * 2 * 354e-9, 1e-12);

  // Without global_load_latency the chain is not priced: the bytes bound it, and the model says the
  // prediction is a lower bound. Batch 16: 4 us + 1,074,135,040 B / 4.8 TB/s.
  arch::ArchSpec no_latency = spec;
  for (arch::ComputeUnitSpec& unit : no_latency.compute)
    if (unit.tensor_core) unit.tensor_core->global_load_latency.reset();
  const auto bytes = Predictor(no_latency).predict(m, why);
  ASSERT_TRUE(bytes) << why;
  EXPECT_NEAR(bytes->seconds, 4e-6 + 1074135040.0 / 4.8e12, 1e-12);
  EXPECT_NE(bytes->model.find("lower bound"), std::string::npos) << bytes->model;
}

TEST(ValidationCompare, UnfusedAttentionIsItsThreeKernelsAsWritten) {
  // coda-bench's unfused attention, batch 1, 1 head, seq 64, head_dim 64, on the pinned H200
  // (CUDA cores 128 fp32 FMAs a cycle an SM, shared memory 128 B a cycle, 1.83 GHz, 354 ns global
  // load latency, tile overhead 0, 4 us fixed cost a kernel):
  //   attention_scores: 16x16x16 tiles, 256 threads: 4 x 4 = 16 blocks, one wave, one an SM. A
  //     block's 16 x 16 x 64 = 16384 MACs take 128 cycles and its operand loads (8 warps x 2 a
  //     k x 64 k = 1024 one-wavefront loads) 1024 cycles, 0.56 us, both below its chain: 64 / 16
  //     = 4 K steps x 2 dependent round trips x 354 ns = 2.832 us. 4 us + 2.832 us.
  //   attention_pv: m = 64, n = 64, k = 64, the same: 4 us + 2.832 us.
  //   softmax_online over 64 rows of 64: 4096 x 4 B read and 4096 x 2 B written = 24576 B at
  //     4.8 TB/s, 5.1 ns, and its exps on 16 special-function lanes an SM, about 1 ns: 4 us and a
  //     few ns (checked to 10 ns).
  std::string why;
  const auto p =
      Predictor(pinned_h200()).predict(attention_case(Kernel::AttentionUnfused, 1, 1, 64, 64), why);
  ASSERT_TRUE(p) << why;
  ASSERT_EQ(p->parts.size(), 3u);
  EXPECT_EQ(p->parts[0].name, "attention_scores");
  EXPECT_NEAR(p->parts[0].seconds, 4e-6 + 4 * 2 * 354e-9, kCycle);
  EXPECT_EQ(p->parts[1].unit, "vector");
  EXPECT_NEAR(p->parts[1].seconds, 4e-6, 10e-9);
  EXPECT_EQ(p->parts[2].name, "attention_pv");
  EXPECT_NEAR(p->parts[2].seconds, 4e-6 + 4 * 2 * 354e-9, kCycle);
  EXPECT_NEAR(p->seconds, p->parts[0].seconds + p->parts[1].seconds + p->parts[2].seconds, 1e-15);
  // The longest part is the scores kernel, whose 4 us fixed cost outweighs its 2.832 us chain.
  EXPECT_EQ(p->bound, PredictedBound::Launch);
  EXPECT_NE(p->model.find("three kernels"), std::string::npos) << p->model;
}

TEST(ValidationCompare, SubsetNamesAreCheckedWithDidYouMean) {
  std::string why;
  EXPECT_EQ(parse_subset("gemm,launch_overhead,gemm", why),
            (std::vector<std::string>{"gemm", "launch_overhead"}));
  EXPECT_FALSE(parse_subset("gemm,lanch", why));
  EXPECT_EQ(why, "'lanch' is neither a class (gemm, memory, attention, fusion, launch) nor a "
                 "kernel name (did you mean 'launch'?)");
  EXPECT_FALSE(parse_subset("gemm,", why));
}

TEST(ValidationReportText, JsonCarriesEveryRowWithItsInputsAndParts) {
  const ValidationReport r = compare_fixture("h200_hand_derived.csv");
  const std::string json = report_json(r, {.measurements = "m.csv", .arch = kArch,
                                           .arch_hash = "0"});
  // Every row is there, compared or skipped with its reason; each prediction lists its parts.
  EXPECT_NE(json.find("\"status\": \"skipped\""), std::string::npos);
  EXPECT_NE(json.find("\"skipped\": \"not measured: FIXTURE: this case did not run\""),
            std::string::npos);
  EXPECT_NE(json.find("\"tile_m\": 64"), std::string::npos);
  const std::string csv = report_csv(r);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 7);  // header + 6 rows
}

}  // namespace
}  // namespace coda::validation
