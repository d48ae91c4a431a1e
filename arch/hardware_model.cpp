#include "arch/hardware_model.h"

#include "core/check.h"

namespace coda::arch {

HardwareModel::HardwareModel(ArchSpec spec) : spec_(std::move(spec)) {
  CODA_CHECK(spec_.rows > 0 && spec_.cols > 0);
  CODA_CHECK(spec_.word_size.value > 0);
  CODA_CHECK(spec_.clock.value > 0);
  if (spec_.dram.bandwidth) dram_bytes_per_cycle_ = per_cycle(*spec_.dram.bandwidth, spec_.clock).value;
}

std::uint64_t HardwareModel::sram_words(Operand operand) const {
  switch (operand) {
    case Operand::Ifmap: return spec_.sram.ifmap.value / word_bytes();
    case Operand::Filter: return spec_.sram.filter.value / word_bytes();
    case Operand::Ofmap: return spec_.sram.ofmap.value / word_bytes();
  }
  return 0;
}

std::uint64_t HardwareModel::working_words(Operand operand) const {
  const std::uint64_t words = sram_words(operand);
  return double_buffered() ? words / 2 : words;
}

}  // namespace coda::arch
