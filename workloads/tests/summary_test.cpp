#include "workloads/summary.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "workloads/builders.h"

namespace coda::workload {
namespace {

// fc: A[2][4] x B[4][3] -> C[2][3] (fp16, B a weight); relu(C) -> y; copy y into a KV cache.
Graph small_graph() {
  Graph g;
  g.name = "small";
  g.source = "summary_test.cpp";
  g.add(make_gemm("fc", 2, 3, 4, DataType::Fp16));
  g.add(make_elementwise("relu", Function::Relu, {2, 3}, DataType::Fp16), {g.ops[0].tensors[2]});
  const TensorId kv = g.add_tensor({"kv", {2, 3}, DataType::Fp16, TensorKind::KvCache});
  g.add(make_data_movement("cache", Function::Copy, {{2, 3}}, {{2, 3}}, DataType::Fp16),
        {g.ops[1].tensors[1], kv});
  return g;
}

TEST(Summary, CountsByHand) {
  const WorkloadSummary s = summarize(small_graph());
  EXPECT_EQ(s.name, "small");
  EXPECT_EQ(s.ops, 3u);
  EXPECT_EQ(s.tensors, 5u);          // fc.A, fc.B, fc.C, relu.y, kv
  EXPECT_EQ(s.parameters, 12u);      // B: 4*3
  EXPECT_EQ(s.parameter_bytes, Bytes{24});
  EXPECT_EQ(s.activation_bytes, Bytes{16 + 12 + 12});  // A, C, y in fp16
  EXPECT_EQ(s.kv_cache_bytes, Bytes{12});
  EXPECT_EQ(s.macs, 24u);       // 2*3*4
  EXPECT_EQ(s.flops, 48u + 6);  // the GEMM's 2 per MAC and one compare per relu point
  // Per op: fc 16 + 24 + 12 = 52, relu 12 + 12 = 24, copy 12 + 12 = 24.
  EXPECT_EQ(s.compulsory_bytes, Bytes{100});
  EXPECT_DOUBLE_EQ(s.arithmetic_intensity, 54.0 / 100.0);
  EXPECT_EQ(s.by_kind,
            (std::vector<OpKindSummary>{{OpKind::Contraction, 1, 24, 48, Bytes{52}},
                                        {OpKind::Elementwise, 1, 0, 6, Bytes{24}},
                                        {OpKind::DataMovement, 1, 0, 0, Bytes{24}}}));
}

TEST(Summary, EmptyGraphHasNoIntensity) {
  const WorkloadSummary s = summarize(Graph{});
  EXPECT_EQ(s.ops, 0u);
  EXPECT_EQ(s.arithmetic_intensity, 0.0);
  EXPECT_TRUE(s.by_kind.empty());
}

TEST(Summary, TableAndJson) {
  const WorkloadSummary s = summarize(small_graph());
  const std::string table = format_summary(s);
  EXPECT_NE(table.find("workload 'small' (summary_test.cpp)"), std::string::npos) << table;
  EXPECT_NE(table.find("arithmetic intensity 0.54 FLOP/B"), std::string::npos) << table;
  EXPECT_NE(table.find("KV cache             12 B"), std::string::npos) << table;
  EXPECT_NE(table.find("data_movement"), std::string::npos) << table;

  const nlohmann::ordered_json j = s;
  EXPECT_EQ(j["macs"], 24u);
  EXPECT_EQ(j["flops"], 54u);
  EXPECT_EQ(j["compulsory_bytes"], 100u);
  EXPECT_EQ(j["by_kind"][0].dump(),
            R"({"kind":"contraction","count":1,"macs":24,"flops":48,"bytes":52})");
}

}  // namespace
}  // namespace coda::workload
