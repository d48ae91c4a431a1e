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
  spec.schema_version = 1;
  spec.name = "test-array";
  spec.clock = Hertz{1e9};
  spec.word_size = p.word_size;
  arch::ComputeUnitSpec unit{.name = "array", .kind = arch::UnitKind::Systolic};
  unit.array = arch::SystolicArraySpec{p.rows, p.cols, p.dataflow};
  unit.rates[DataType::Int8] = 1.0;
  spec.compute.push_back(unit);
  for (const arch::Holds role : {arch::Holds::Inputs, arch::Holds::Weights, arch::Holds::Outputs})
    spec.memory.push_back({.name = arch::holds_to_string(arch::bits(role)),
                           .capacity = p.sram,
                           .holds = arch::bits(role),
                           .double_buffered = p.double_buffered});
  if (p.bytes_per_cycle) spec.dram.bandwidth = BytesPerCycle{*p.bytes_per_cycle};
  return arch::HardwareModel(spec);
}

}  // namespace coda::testing
