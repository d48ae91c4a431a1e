// Fuzzes the YAML layer-list reader: YamlDocument::parse + workload::read_layer_list.

#include <cstddef>
#include <cstdint>

#include "core/yaml_reader.h"
#include "fuzz/fuzz_contract.h"
#include "workloads/importers.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  coda::Diagnostics diags;
  const auto doc = coda::YamlDocument::parse(coda::fuzz::as_text(data, size), "fuzz.yaml", diags);
  bool has_value = false;
  if (doc) {
    const auto graph = coda::workload::read_layer_list(doc->root(), diags);
    has_value = graph.has_value();
    if (graph) coda::fuzz::require(!graph->ops.empty());
  }
  coda::fuzz::check_contract(has_value, diags);
  return 0;
}
