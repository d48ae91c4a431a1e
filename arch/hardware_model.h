#pragma once
// The immutable hardware model the mapper and the engines use, built from a validated ArchSpec.
// Everything derived (PE count, buffer capacities in words, DRAM bytes per cycle) is computed
// once here, so the hot paths read plain numbers.

#include <cstdint>
#include <optional>
#include <string>

#include "arch/arch_spec.h"

namespace coda::arch {

enum class Operand : std::uint8_t { Ifmap, Filter, Ofmap };

class HardwareModel {
 public:
  explicit HardwareModel(ArchSpec spec);

  const ArchSpec& spec() const { return spec_; }
  const std::string& name() const { return spec_.name; }
  std::uint64_t rows() const { return spec_.rows; }
  std::uint64_t cols() const { return spec_.cols; }
  std::uint64_t processing_elements() const { return rows() * cols(); }
  Dataflow dataflow() const { return spec_.dataflow; }
  Hertz clock() const { return spec_.clock; }
  std::uint64_t word_bytes() const { return spec_.word_size.value; }

  // Capacity of one operand's SRAM in words, and the part of it that one fold's tile may use:
  // half when double-buffered (the other half is being filled or drained), all of it otherwise.
  std::uint64_t sram_words(Operand operand) const;
  std::uint64_t working_words(Operand operand) const;
  bool double_buffered() const { return spec_.sram.double_buffered; }

  // DRAM bandwidth in bytes per cycle of this clock; nullopt when unlimited.
  std::optional<double> dram_bytes_per_cycle() const { return dram_bytes_per_cycle_; }

 private:
  ArchSpec spec_;
  std::optional<double> dram_bytes_per_cycle_;
};

}  // namespace coda::arch
