#include "workloads/trace.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "workloads/builders.h"

namespace coda::workload {
namespace {

// One op from every builder, with an in-place AdamW, a source location and marked results.
Graph every_builder_graph() {
  Graph g;
  g.name = "everything";
  g.source = "trace_test.cpp";
  const Conv2dParams conv{.batch = 2, .in_h = 8, .in_w = 8, .in_channels = 4, .filter_h = 3,
                          .filter_w = 3, .out_channels = 6, .stride_h = 2, .stride_w = 2,
                          .pad_h = 1, .pad_w = 1, .groups = 2};
  g.add(make_conv2d("conv", conv, 4, 4));
  g.ops.back().source = {"model.yaml", 3, 5};
  g.add(make_gemm("gemm", 2, 3, 4, DataType::Bf16));
  g.add(make_batched_gemm("bgemm", 3, 2, 3, 4, DataType::Fp16));
  g.add(make_elementwise("bias", Function::Add, {2, 3}, DataType::Bf16,
                         {{TensorRole::Weight, {1}}}),
        {g.ops[1].tensors[2]});
  g.add(make_elementwise("quant", Function::Quantize, {2, 3}, DataType::Bf16, {},
                         DataType::Int4));
  g.add(make_reduction("sum", Function::Sum, {4, 8}, {1}, DataType::Fp32));
  for (const Function f :
       {Function::Softmax, Function::LayerNorm, Function::RmsNorm, Function::BatchNorm})
    g.add(make_normalization(std::string(to_string(f)), f, {2, 4, 3}, {1}, DataType::Fp16));
  g.add(make_pool2d("pool", Function::AvgPool,
                    {.channels = 2, .in_h = 5, .in_w = 5, .kernel_h = 3, .kernel_w = 3,
                     .stride_h = 2, .stride_w = 2, .pad_h = 1, .pad_w = 1},
                    3, 3, DataType::Int8));
  g.add(make_attention("attn",
                       {.batch = 2,
                        .heads = 8,
                        .kv_heads = 2,
                        .q_len = 3,
                        .kv_len = 5,
                        .head_dim = 4,
                        .causal = true,
                        .window = 4},
                       DataType::Fp8E4M3));
  g.add(make_attention_backward("attn.bwd",
                                {.batch = 1,
                                 .heads = 2,
                                 .kv_heads = 1,
                                 .q_len = 4,
                                 .kv_len = 4,
                                 .head_dim = 8,
                                 .softcap = 50.5},
                                DataType::Bf16));
  g.add(make_attention("attn.cp",
                       {.batch = 1,
                        .heads = 2,
                        .kv_heads = 2,
                        .q_len = 4,
                        .kv_len = 8,
                        .head_dim = 8,
                        .causal = true,
                        .context_parallel = 2},
                       DataType::Bf16));
  g.add(make_data_movement("concat", Function::Concat, {{2, 3}, {2, 5}}, {{2, 8}},
                           DataType::Fp32));
  g.add(make_embedding("embed", 50, 8, 4, DataType::Bf16));
  for (const Function f : {Function::AllReduce, Function::ReduceScatter, Function::AllGather,
                           Function::SendRecv, Function::AllToAll})
    g.add(make_collective(std::string(to_string(f)), f, {8, 2}, 4, DataType::Fp8E5M2));
  const TensorId w = g.add_tensor({"w", {6}, DataType::Bf16, TensorKind::Weight});
  const TensorId dw = g.add_tensor({"dw", {6}, DataType::Tf32, TensorKind::Gradient});
  const TensorId m = g.add_tensor({"m", {6}, DataType::Fp32, TensorKind::OptimizerState});
  const TensorId v = g.add_tensor({"v", {6}, DataType::Int32, TensorKind::KvCache});
  g.add(make_adamw("adam", {6}, DataType::Bf16, DataType::Tf32, DataType::Fp32),
        {w, dw, m, m, w, m, m});
  (void)v;
  g.outputs = {g.ops[3].tensors[2], w};
  return g;
}

std::optional<Graph> read(const std::string& text, Diagnostics& diags) {
  return read_trace(text, "t.json", diags);
}

std::vector<std::string> formatted(const Diagnostics& diags) {
  std::vector<std::string> lines;
  for (const Diagnostic& d : diags.all()) lines.push_back(format(d));
  return lines;
}

TEST(Trace, RoundTripsEveryBuilderExactly) {
  const Graph g = every_builder_graph();
  ASSERT_TRUE(verify(g).empty()) << verify(g).front();
  const std::string text = write_trace(g);
  EXPECT_EQ(write_trace(g), text);  // deterministic
  Diagnostics diags;
  const auto back = read(text, diags);
  ASSERT_TRUE(back.has_value()) << diags.format_all();
  EXPECT_FALSE(diags.has_errors());
  EXPECT_EQ(*back, g);
  EXPECT_EQ(write_trace(*back), text);
}

TEST(Trace, WritesTheDocumentedLayout) {
  Graph g;
  g.name = "one";
  g.add(make_gemm("fc", 1, 2, 3, DataType::Int8));
  const auto j = nlohmann::ordered_json::parse(write_trace(g));
  std::vector<std::string> keys;
  for (const auto& [key, value] : j.items()) keys.push_back(key);
  EXPECT_EQ(keys, (std::vector<std::string>{"schema_version", "name", "source", "tensors",
                                            "outputs", "ops"}));
  EXPECT_EQ(j["tensors"][1].dump(),
            R"({"name":"fc.B","shape":[3,2],"dtype":"int8","kind":"weight"})");
  EXPECT_EQ(j["ops"][0]["accesses"][0]["indices"][1].dump(),
            R"({"terms":[{"dim":2,"coefficient":1}],"offset":0})");
  EXPECT_EQ(j["ops"][0]["tensors"].dump(), "[0,1,2]");
  EXPECT_FALSE(j["ops"][0].contains("attributes"));  // none for a GEMM
  EXPECT_FALSE(j["ops"][0].contains("source"));      // built, not read from a file
}

TEST(Trace, SyntaxErrorsHaveLineAndColumn) {
  Diagnostics diags;
  // The 'x' is on line 2, column 11.
  EXPECT_FALSE(read("{\n  \"name\": x\n}", diags).has_value());
  ASSERT_EQ(diags.error_count(), 1u);
  const std::string line = format(diags.all()[0]);
  EXPECT_EQ(line.rfind("t.json:2:11: error: syntax error while parsing value", 0), 0u) << line;
}

TEST(Trace, NumberBeyondADoubleIsAnErrorNotACrash) {
  // nlohmann throws out_of_range, not parse_error, for 1e400 (found by fuzz/trace_fuzz).
  Diagnostics diags;
  EXPECT_FALSE(read("{\"schema_version\": 1e400}", diags).has_value());
  ASSERT_EQ(diags.error_count(), 1u);
  EXPECT_NE(diags.all()[0].message.find("not valid JSON"), std::string::npos);
  EXPECT_EQ(diags.all()[0].hint, "numbers must fit a double (about 1.8e308)");
}

// A one-GEMM trace as JSON to break in tests.
nlohmann::ordered_json gemm_json() {
  Graph g;
  g.name = "one";
  g.add(make_gemm("fc", 1, 2, 3, DataType::Int8));
  return nlohmann::ordered_json::parse(write_trace(g));
}

TEST(Trace, ReportsEveryProblemWithItsPath) {
  auto j = gemm_json();
  j["tensors"][0]["dtype"] = "fp33";
  j["ops"][0]["dimz"] = j["ops"][0]["dims"];
  j["ops"][0].erase("dims");
  j["ops"][0]["kind"] = "contractoin";
  j["ops"][0]["accesses"][1]["shape"] = "3, 2";
  j["ops"][0]["tensors"][2] = 99;
  j["ops"][0]["accesses"][0]["indices"][0]["terms"][0]["coefficient"] = 1.5;
  j["outputs"] = {-1};
  Diagnostics diags;
  EXPECT_FALSE(read(j.dump(), diags).has_value());
  // Long messages are split over adjacent literals on purpose.
  // NOLINTBEGIN(bugprone-suspicious-missing-comma)
  EXPECT_EQ(formatted(diags),
            (std::vector<std::string>{
                "t.json: error: tensors[0].dtype: \"fp33\" is not valid (did you mean 'fp32'?); "
                "expected one of: fp32, tf32, bf16, fp16, fp8_e4m3, fp8_e5m2, int8, int4, int32",
                "t.json: error: outputs[0]: must be at least 0, not -1",
                "t.json: error: ops[0].dimz: unknown key (did you mean 'dims'?)",
                "t.json: error: ops[0].kind: \"contractoin\" is not valid (did you mean "
                "'contraction'?); expected one of: contraction, elementwise, reduction, "
                "normalization, pooling, attention, data_movement, collective, optimizer",
                "t.json: error: ops[0]: missing required key 'dims'",
                "t.json: error: ops[0].accesses[0].indices[0].terms[0].coefficient: expected a "
                "whole number, found a number",
                "t.json: error: ops[0].accesses[1].shape: expected an array, found a string",
                "t.json: error: ops[0].tensors[2]: tensor index 99 is out of range (the trace "
                "has 3 tensors)",
            }));
  // NOLINTEND(bugprone-suspicious-missing-comma)
}

TEST(Trace, RejectsBadVersionsAttributesAndAttentionShapes) {
  auto j = gemm_json();
  j["schema_version"] = 2;
  j["ops"][0]["attributes"] = {{"ranks", 4}};
  Diagnostics diags;
  EXPECT_FALSE(read(j.dump(), diags).has_value());
  EXPECT_EQ(formatted(diags),
            (std::vector<std::string>{
                "t.json: error: schema_version: unsupported schema_version 2; this coda reads "
                "schema_version 1",
                "t.json: error: ops[0].attributes.ranks: only collective ops have 'ranks', not "
                "contraction",
            }));

  // "backward" is a boolean of attention ops, beside "causal".
  auto b = gemm_json();
  b["ops"][0]["attributes"] = {{"backward", true}};
  Diagnostics diags3;
  EXPECT_FALSE(read(b.dump(), diags3).has_value());
  EXPECT_EQ(formatted(diags3),
            (std::vector<std::string>{
                "t.json: error: ops[0].attributes.backward: only attention ops have 'backward', "
                "not contraction",
                "t.json: error: ops[0].attributes: missing required key 'causal'",
            }));

  // "softcap" is a number above 0 (absent: no cap).
  Graph capped;
  capped.name = "c";
  capped.add(make_attention("attn", {.q_len = 2, .kv_len = 4, .softcap = 30}, DataType::Fp16));
  auto c = nlohmann::ordered_json::parse(write_trace(capped));
  EXPECT_EQ(c["ops"][0]["attributes"]["softcap"], 30.0);
  c["ops"][0]["attributes"]["softcap"] = -1;
  Diagnostics diags4;
  EXPECT_FALSE(read(c.dump(), diags4).has_value());
  EXPECT_EQ(formatted(diags4),
            (std::vector<std::string>{
                "t.json: error: ops[0].attributes.softcap: must be above 0, not -1"}));

  // "window" is a key count of at least 1, and only with causal: true.
  Graph windowed;
  windowed.name = "w";
  windowed.add(make_attention("attn", {.q_len = 2, .kv_len = 4, .causal = true, .window = 2},
                              DataType::Fp16));
  auto w = nlohmann::ordered_json::parse(write_trace(windowed));
  EXPECT_EQ(w["ops"][0]["attributes"]["window"], 2);
  w["ops"][0]["attributes"]["causal"] = false;
  Diagnostics diags5;
  EXPECT_FALSE(read(w.dump(), diags5).has_value());
  EXPECT_EQ(formatted(diags5),
            (std::vector<std::string>{
                "t.json: error: ops[0].attributes.window: a sliding window needs 'causal': true "
                "(each query sees the last 'window' keys up to its position)"}));
  // "context_parallel" only on a causal attention without a window.
  w["ops"][0]["attributes"]["causal"] = true;
  w["ops"][0]["attributes"]["context_parallel"] = 2;  // with the window of 2
  Diagnostics diags7;
  EXPECT_FALSE(read(w.dump(), diags7).has_value());
  ASSERT_EQ(diags7.error_count(), 1u);
  EXPECT_EQ(diags7.all()[0].path, "ops[0].attributes.context_parallel");
  w["ops"][0]["attributes"].erase("context_parallel");
  w["ops"][0]["attributes"]["causal"] = true;
  w["ops"][0]["attributes"]["window"] = 0;
  Diagnostics diags6;
  EXPECT_FALSE(read(w.dump(), diags6).has_value());
  ASSERT_EQ(diags6.error_count(), 1u);
  EXPECT_EQ(diags6.all()[0].path, "ops[0].attributes.window");

  Graph g;
  g.name = "a";
  g.add(make_attention("attn", {.q_len = 2, .kv_len = 4, .causal = true}, DataType::Fp16));
  auto a = nlohmann::ordered_json::parse(write_trace(g));
  a["ops"][0]["dims"][4]["extent"] = 1;  // kv 1 < q 2
  Diagnostics diags2;
  EXPECT_FALSE(read(a.dump(), diags2).has_value());
  EXPECT_EQ(formatted(diags2),
            (std::vector<std::string>{"t.json: error: ops[0].attributes.causal: a causal "
                                      "attention needs kv (1) >= q (2)"}));
}

TEST(Trace, VerifyProblemsBecomeDiagnostics) {
  auto j = gemm_json();
  j["tensors"][2]["shape"] = {1, 5};  // fc.C is [1, 2] in the op
  Diagnostics diags;
  EXPECT_FALSE(read(j.dump(), diags).has_value());
  EXPECT_EQ(formatted(diags),
            (std::vector<std::string>{
                "t.json: error: op 'fc': access 'C' is [1, 2] int8 but tensor 'fc.C' is [1, 5] "
                "int8; the trace's dataflow is inconsistent"}));
}

TEST(Trace, RejectsNonObjectsAndHugeValues) {
  Diagnostics diags;
  EXPECT_FALSE(read("[1, 2]", diags).has_value());
  EXPECT_EQ(formatted(diags), (std::vector<std::string>{
                                  "t.json: error: expected a JSON object at the top, found an "
                                  "array"}));
  auto j = gemm_json();
  j["ops"][0]["dims"][0]["extent"] = 0;
  j["ops"][0]["accesses"][0]["indices"][0]["offset"] = 1LL << 40;
  Diagnostics diags2;
  EXPECT_FALSE(read(j.dump(), diags2).has_value());
  EXPECT_EQ(formatted(diags2),
            (std::vector<std::string>{
                "t.json: error: ops[0].dims[0].extent: must be at least 1, not 0",
                "t.json: error: ops[0].accesses[0].indices[0].offset: 1099511627776 is out of "
                "range (magnitude at most 4294967296)"}));
}

}  // namespace
}  // namespace coda::workload
