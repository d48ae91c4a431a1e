// Fuzzes the YAML arch reader (YamlDocument::parse + arch::read_arch_spec, both schemas) and
// what HardwareModel derives from every spec the reader accepts: a validated spec must never
// trip a check, and its peaks, bandwidths and energy figures are finite and non-negative.

#include <cstddef>
#include <cmath>
#include <cstdint>

#include "arch/arch_spec.h"
#include "arch/hardware_model.h"
#include "core/yaml_reader.h"
#include "fuzz/fuzz_contract.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  coda::Diagnostics diags;
  const auto doc = coda::YamlDocument::parse(coda::fuzz::as_text(data, size), "fuzz.yaml", diags);
  bool has_value = false;
  if (doc) {
    const auto spec = coda::arch::read_arch_spec(doc->root(), diags);
    has_value = spec.has_value();
    if (spec) {
      coda::fuzz::require(spec->clock.value > 0 && spec->cores >= 1 && !spec->compute.empty());
      const coda::arch::HardwareModel hw(*spec);
      const auto sane = [](double v) { return std::isfinite(v) && v >= 0; };
      for (const auto& [name, type] : coda::data_type_names())
        coda::fuzz::require(sane(hw.peak_ops_per_second(type)) &&
                            sane(hw.peak_vector_ops_per_second(type)));
      coda::fuzz::require(!hw.levels().empty() && hw.levels().back().name == "dram");
      for (const auto& level : hw.levels())
        coda::fuzz::require(!level.read_bytes_per_second || sane(*level.read_bytes_per_second));
      for (const auto& [level, joules] : hw.energy().per_byte)
        coda::fuzz::require(sane(joules.value));
      coda::fuzz::require(sane(hw.area().total.value));
    }
  }
  coda::fuzz::check_contract(has_value, diags);
  return 0;
}
