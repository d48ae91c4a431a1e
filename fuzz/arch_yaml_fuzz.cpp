// Fuzzes the YAML arch reader: YamlDocument::parse + arch::read_arch_spec.

#include <cstddef>
#include <cstdint>

#include "arch/arch_spec.h"
#include "core/yaml_reader.h"
#include "fuzz/fuzz_contract.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  coda::Diagnostics diags;
  const auto doc = coda::YamlDocument::parse(coda::fuzz::as_text(data, size), "fuzz.yaml", diags);
  bool has_value = false;
  if (doc) {
    const auto spec = coda::arch::read_arch_spec(doc->root(), diags);
    has_value = spec.has_value();
    if (spec) coda::fuzz::require(spec->rows >= 1 && spec->cols >= 1 && spec->clock.value > 0);
  }
  coda::fuzz::check_contract(has_value, diags);
  return 0;
}
