#include "reports/bound_analysis.h"

#include <gtest/gtest.h>

#include "reports/tests/report_fixtures.h"

namespace coda::reports {
namespace {

// The fixture's run (report_fixtures.h): 1 GHz, 100 PEs, so a peak of 1e11 MACs/s.
//   conv: AI at sram 1e6 / 5e5 = 2 >= 1, at dram 1e6 / 5e4 = 20 >= 10: compute-bound.
//   fc: AI at sram 1e6 / 2e5 = 5 >= 1, at dram 5 < 10: memory-bound at dram.
//   softmax: no MACs, so the engine's memory bound stands; the level is the busiest one, dram.
//   qkv: the engine recorded a launch latency.
results::RunResult four_op_run() { return test::four_op_run("t", "a", 1).run; }

// SRAM 1e11 B/s (balance 1 MAC/B), DRAM 1e10 B/s (balance 10).
Machine machine(const results::RunResult& run) {
  Machine m = machine_from_run(run);
  m.levels = {{"sram", 1e11}, {"dram", 1e10}};
  return m;
}

TEST(BoundAnalysis, PeakFromTheRun) {
  EXPECT_DOUBLE_EQ(machine_from_run(four_op_run()).peak_macs_per_second, 100 * 1e9);
}

TEST(BoundAnalysis, ClassifiesOnTheRoofline) {
  const auto run = four_op_run();
  const auto ops = classify_ops(run, machine(run));
  ASSERT_EQ(ops.size(), 4U);

  EXPECT_EQ(ops[0].bound, BoundClass::Compute);
  EXPECT_EQ(ops[0].basis, "roofline");
  ASSERT_EQ(ops[0].levels.size(), 2U);
  EXPECT_EQ(ops[0].levels[0].level, "sram");
  EXPECT_EQ(ops[0].levels[0].bytes, 500'000U);
  EXPECT_DOUBLE_EQ(ops[0].levels[0].macs_per_byte, 2.0);
  EXPECT_DOUBLE_EQ(*ops[0].levels[0].balance, 1.0);
  EXPECT_DOUBLE_EQ(ops[0].levels[1].macs_per_byte, 20.0);
  EXPECT_DOUBLE_EQ(*ops[0].levels[1].balance, 10.0);
  // 20 us; compute 10000 / 20000 cycles = 0.5; sram 5e5 B / 1e11 B/s = 5 us -> 0.25;
  // dram 5e4 / 1e10 = 5 us -> 0.25. The busiest is compute.
  EXPECT_DOUBLE_EQ(ops[0].seconds, 20e-6);
  EXPECT_DOUBLE_EQ(ops[0].compute_busy, 0.5);
  EXPECT_DOUBLE_EQ(*ops[0].levels[0].busy, 0.25);
  EXPECT_DOUBLE_EQ(*ops[0].levels[1].busy, 0.25);
  EXPECT_EQ(ops[0].bottleneck, "compute");
  EXPECT_EQ(ops[0].op_class, "conv");

  EXPECT_EQ(ops[1].bound, BoundClass::Memory);
  EXPECT_EQ(ops[1].level, "dram");
  EXPECT_EQ(class_label(ops[1]), "memory(dram)");
  // dram 2e5 / 1e10 = 20 us of 30 us; compute 1/3; sram 2 us / 30 us.
  EXPECT_EQ(ops[1].bottleneck, "dram");
  EXPECT_NEAR(ops[1].bottleneck_busy, 2.0 / 3.0, 1e-12);

  EXPECT_EQ(ops[2].bound, BoundClass::Memory);
  EXPECT_EQ(ops[2].basis, "engine");
  EXPECT_EQ(ops[2].level, "dram");
  EXPECT_DOUBLE_EQ(*ops[2].levels[0].busy, 1.0);  // 1e5 B / 1e10 B/s = 10 us of 10 us

  EXPECT_EQ(ops[3].bound, BoundClass::Latency);
  EXPECT_EQ(ops[3].bottleneck, "latency");
}

TEST(BoundAnalysis, SharesOfTime) {
  // compute 20 us, memory(dram) 30 + 10 = 40 us, latency 50 us, of 110 us.
  const auto run = four_op_run();
  const auto shares = class_shares(classify_ops(run, machine(run)));
  ASSERT_EQ(shares.size(), 3U);
  EXPECT_EQ(shares[0].label, "compute");
  EXPECT_NEAR(shares[0].share, 20.0 / 110.0, 1e-12);
  EXPECT_EQ(shares[1].label, "memory(dram)");
  EXPECT_NEAR(shares[1].seconds, 40e-6, 1e-18);
  EXPECT_NEAR(shares[1].share, 40.0 / 110.0, 1e-12);
  EXPECT_EQ(shares[2].label, "latency");
  EXPECT_NEAR(shares[2].share, 50.0 / 110.0, 1e-12);
}

TEST(BoundAnalysis, WithoutBandwidthsTheEngineBoundStands) {
  // No level bandwidths: no balance to compare with, so fc keeps the engine's "memory" (with no
  // level: none is known to be busy) and conv its "compute".
  const auto run = four_op_run();
  const auto ops = classify_ops(run, machine_from_run(run));
  EXPECT_EQ(ops[0].bound, BoundClass::Compute);
  EXPECT_EQ(ops[0].basis, "engine");
  EXPECT_FALSE(ops[0].levels[0].balance);
  EXPECT_EQ(class_label(ops[1]), "memory");
}

TEST(BoundAnalysis, OpClassFromTheName) {
  results::OpResult o;
  o.unit = results::OpUnit::Vector;
  for (const auto& [name, kind] : std::vector<std::pair<std::string, std::string>>{
           {"layer1.0.conv2", "conv"}, {"layer0.ffn_up", "ffn_up"}, {"fc", "fc"},
           {"block_3", "block"}, {"layer1.0", "vector"}}) {
    o.name = name;
    EXPECT_EQ(op_class(o), kind) << name;
  }
}

}  // namespace
}  // namespace coda::reports
