#include "core/results.h"

#include <stdexcept>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace coda::results {
namespace {

TEST(Results, CostsAddFieldByField) {
  const Cost a{Cycles{10}, Cycles{8}, Cycles{2}, 100, Bytes{1}, Bytes{2}, Bytes{3}, Bytes{4}};
  const Cost b{Cycles{5}, Cycles{5}, Cycles{0}, 50, Bytes{10}, Bytes{20}, Bytes{30}, Bytes{40}};
  const Cost sum = a + b;
  EXPECT_EQ(sum.cycles, Cycles{15});
  EXPECT_EQ(sum.compute_cycles, Cycles{13});
  EXPECT_EQ(sum.stall_cycles, Cycles{2});
  EXPECT_EQ(sum.macs, 150u);
  EXPECT_EQ(sum.sram_reads, Bytes{11});
  EXPECT_EQ(sum.dram_writes, Bytes{44});
}

TEST(Results, RunResultRoundTripsThroughJson) {
  RunResult run;
  run.provenance = {"0.1.0", "analytical", {{"arch", "a.yaml", hex_hash(0xabcdefULL)}}};
  run.arch = "systolic-32x32-os";
  run.workload = "resnet18";
  run.clock = Hertz{1e9};
  run.processing_elements = 1024;
  OpResult op;
  op.name = "conv1";
  op.mapping = {{"Sr", 12544}, {"Sc", 64}, {"T", 147}};  // written order must survive
  op.cost = {Cycles{100}, Cycles{90}, Cycles{10}, 4096, Bytes{1}, Bytes{2}, Bytes{3}, Bytes{4}};
  op.mapping_efficiency = 0.75;
  op.compute_utilization = 0.5;
  op.bound = Bound::Memory;
  op.arithmetic_intensity = 585.14;
  op.traffic = {{"ifmap", "sram", Bytes{7}, Bytes{0}}, {"ofmap", "dram", Bytes{0}, Bytes{9}}};
  run.ops = {op};
  run.skipped = {{"relu1", "an elementwise op cannot run here"}};
  run.total = op.cost;
  run.fusion_mode = "epilogue";
  run.fusion = {{"epilogue", {"fc", "fc.bias", "fc.relu"}, Bytes{4096}}};
  run.fusion_rejected = {{"epilogue", {"fc2", "fc2.relu"}, "'fc2.C' is also read by 'add'"}};
  run.residency = Residency{
      true,
      Bytes{393216},
      {{"l1.C", Bytes{2048}, "l1", "l2", Bytes{4096}}},
      {{"l2.C", Bytes{2048}, "'l2.C' (2 KiB) does not fit"}},
      CachedWeights{{"sram"}, Bytes{8}, Bytes{2}, Bytes{6}, Bytes{4}, Bytes{5}, 1, 2, "l3.B",
                    Bytes{4}}};

  const nlohmann::ordered_json j = run;
  EXPECT_EQ(j.at("residency").at("weight_cache").at("budget_bytes"), 6);
  EXPECT_EQ(j.at("provenance").at("inputs").at(0).at("hash"), "0000000000abcdef");
  // 4096 MACs / (1024 PEs * 90 compute cycles)
  EXPECT_DOUBLE_EQ(j.at("compute_utilization").get<double>(), 4096.0 / (1024.0 * 90.0));
  const RunResult back = nlohmann::ordered_json::parse(j.dump()).get<RunResult>();
  EXPECT_EQ(back, run);
  EXPECT_EQ(back.ops[0].mapping[0].first, "Sr");
  EXPECT_EQ(j.at("memory").at("status"), "unknown capacity");  // the default
  nlohmann::ordered_json bad = j;
  bad["memory"]["status"] = "full";
  try {
    (void)bad.get<RunResult>();
    ADD_FAILURE() << "an unknown memory status was read";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(),
                 "memory.status 'full' is not one of fits, does not fit, unknown capacity");
  }
  // Results written before residency existed have none.
  nlohmann::ordered_json old = j;
  old.erase("residency");
  EXPECT_FALSE(old.get<RunResult>().residency.has_value());
}

TEST(Results, AnOpsUnitAndBoundAreReadByNameAndAnUnknownOneIsAnErrorNamingIt) {
  OpResult op;
  op.name = "fc";
  op.unit = OpUnit::TensorCore;
  op.bound = Bound::Latency;
  nlohmann::ordered_json j = op;
  EXPECT_EQ(j.at("unit"), "tensor_core");
  EXPECT_EQ(j.at("bound"), "latency");
  EXPECT_EQ(j.get<OpResult>(), op);
  for (OpUnit unit : {OpUnit::Systolic, OpUnit::TensorCore, OpUnit::Vector, OpUnit::Transfer,
                      OpUnit::Collective, OpUnit::Attention})
    EXPECT_EQ(parse_op_unit(to_string(unit)), unit);
  j["unit"] = "gpu";
  try {
    (void)j.get<OpResult>();
    ADD_FAILURE() << "an unknown unit was read";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(),
                 "op 'fc': unit 'gpu' is not one of systolic, tensor_core, vector, transfer, "
                 "collective, attention");
  }
  j["unit"] = "vector";
  j["bound"] = "fast";  // was read as compute
  try {
    (void)j.get<OpResult>();
    ADD_FAILURE() << "an unknown bound was read";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "op 'fc': bound 'fast' is not one of compute, memory, latency");
  }
}

}  // namespace
}  // namespace coda::results
