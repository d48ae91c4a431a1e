// Quantized LLM GEMMs on a tensor-core GPU (workloads/llm/quantization.h): a weight stored
// narrower than the op computes in is read from DRAM at its own bytes (with its scales), the
// math runs at the inputs' precision. The bytes are derived by hand below.

#include <string>

#include <gtest/gtest.h>

#include "arch/arch_spec.h"
#include "arch/hardware_model.h"
#include "mapper/schedule.h"
#include "sim/analytical/analytical_engine.h"
#include "workloads/llm/llm_builder.h"

namespace coda::sim {
namespace {

namespace llm = workload::llm;

arch::HardwareModel h100() {
  Diagnostics diags;
  const auto arch = arch::load_arch("configs/arch/nvidia_h100_sxm.yaml", diags);
  EXPECT_TRUE(arch.has_value()) << diags.format_all();
  return arch::HardwareModel(arch->spec);
}

// LLaMA-2-7B decode, batch 8 at 1024 tokens of context, one op of layer 0 priced alone.
struct Priced {
  results::OpResult op;
  DataType precision = DataType::Bf16;
};

Priced price_op(const std::string& scheme, const std::string& name) {
  Diagnostics diags;
  auto model = llm::load_llm_config("configs/workloads/llm/llama2_7b.yaml", diags);
  EXPECT_TRUE(model.has_value()) << diags.format_all();
  llm::LlmPhase phase{.kind = llm::PhaseKind::Decode, .batch = 8, .seq_len = 1024};
  std::string error;
  phase.quant = llm::parse_quantization(scheme, error).value();
  const workload::Graph g = llm::build_llm(*model, phase, {});
  const arch::HardwareModel hw = h100();
  const mapper::Schedule s = mapper::schedule_graph(g, hw, {});
  const results::RunResult run = analytical::AnalyticalEngine{}.run(s, hw, RunOptions{});
  for (std::size_t i = 0; i < g.ops.size(); ++i)
    if (g.ops[i].name == name) return {run.ops[i], s.ops[i].precision};
  ADD_FAILURE() << "no op " << name;
  return {};
}

TEST(QuantizedGemm, WeightBytesAsStored) {
  // L0.qkv: A is 8 x 4096, B 4096 x 12288 (50,331,648 weights), C 8 x 12288 in bf16. At M = 8
  // the one wave of blocks reads A once (65,536 B in bf16) and B once.
  const Priced none = price_op("none", "L0.qkv");
  EXPECT_EQ(none.op.cost.dram_reads, Bytes{50'331'648ULL * 2 + 65'536});
  // W4A16, group 128: half a byte a weight and one bf16 scale per 128 of them,
  // 50,331,648 x (0.5 + 2 / 128) = 25,952,256 B; A stays bf16; the math at bf16's rate.
  const Priced w4 = price_op("w4a16", "L0.qkv");
  EXPECT_EQ(w4.op.cost.dram_reads, Bytes{25'952'256ULL + 65'536});
  EXPECT_EQ(w4.precision, DataType::Bf16);
  // W8A16: a byte a weight (its per-channel scales left out).
  EXPECT_EQ(price_op("w8a16", "L0.qkv").op.cost.dram_reads, Bytes{50'331'648ULL + 65'536});
  // FP8: a byte a weight and a byte an input element (8 x 4096); the math at fp8's rate.
  const Priced fp8 = price_op("fp8", "L0.qkv");
  EXPECT_EQ(fp8.op.cost.dram_reads, Bytes{50'331'648ULL + 32'768});
  EXPECT_EQ(fp8.precision, DataType::Fp8E4M3);
  // Decode GEMMs are DRAM-bound: fewer bytes, less time, in the order of the bytes.
  EXPECT_LT(w4.op.cost.cycles, fp8.op.cost.cycles);
  EXPECT_LT(fp8.op.cost.cycles, none.op.cost.cycles);
  // The output is bf16 in every scheme: 8 x 12288 x 2 B.
  EXPECT_EQ(fp8.op.cost.dram_writes, Bytes{196'608});
  EXPECT_EQ(w4.op.cost.dram_writes, Bytes{196'608});
}

}  // namespace
}  // namespace coda::sim
