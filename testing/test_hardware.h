#pragma once
// Test helper: a systolic HardwareModel from a few fields, without a YAML file.

#include <optional>

#include "arch/hardware_model.h"

namespace coda::testing {

struct ArrayParams {
  std::uint32_t rows = 8;
  std::uint32_t cols = 8;
  arch::Dataflow dataflow = arch::Dataflow::OutputStationary;
  Bytes sram{64ULL * 1024};                   // each of ifmap, filter, ofmap
  std::optional<double> bytes_per_cycle;  // nullopt: unlimited DRAM bandwidth
  bool double_buffered = true;
  Bytes word_size{1};
};

inline arch::HardwareModel make_array(const ArrayParams& p) {
  arch::ArchSpec spec;
  spec.name = "test-array";
  spec.clock = Hertz{1e9};
  spec.rows = p.rows;
  spec.cols = p.cols;
  spec.dataflow = p.dataflow;
  spec.word_size = p.word_size;
  spec.sram = {p.sram, p.sram, p.sram, p.double_buffered};
  if (p.bytes_per_cycle) spec.dram.bandwidth = BytesPerCycle{*p.bytes_per_cycle};
  return arch::HardwareModel(spec);
}

}  // namespace coda::testing
