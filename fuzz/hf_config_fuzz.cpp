// Fuzzes the Hugging Face config.json reader: workload::llm::parse_hf_config. A config it
// accepts must also build a small prefill graph that verifies.

#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_contract.h"
#include "workloads/llm/hf_config.h"
#include "workloads/llm/llm_builder.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  coda::Diagnostics diags;
  const auto config =
      coda::workload::llm::parse_hf_config(coda::fuzz::as_text(data, size), "config.json", diags);
  coda::fuzz::require(config.has_value() == !diags.has_errors());
  for (const coda::Diagnostic& d : diags.all()) coda::fuzz::require(!d.message.empty());
  // Build only small models: the fuzzer would otherwise spend its time allocating huge graphs.
  if (config && config->layers <= 4 && config->hidden <= 4096 && config->vocab <= 65536 &&
      config->ffn <= 16384 && config->moe.experts <= 8 && config->moe.dense_ffn <= 16384 &&
      config->mla.q_lora_rank <= 4096 && config->mla.latent() <= 4096 &&
      config->heads * config->head_dim <= 65536) {
    coda::Diagnostics build;
    const auto graph = coda::workload::llm::try_build_llm(
        *config, {coda::workload::llm::PhaseKind::Prefill, 1, 8, false}, {}, build);
    if (graph) coda::fuzz::require(coda::workload::verify(*graph).empty());
  }
  return 0;
}
