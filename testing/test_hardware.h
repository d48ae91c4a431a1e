#pragma once
// Test helper: a systolic HardwareModel from a few fields, without a YAML file.

#include <optional>
#include <stdexcept>
#include <string_view>

#include "arch/hardware_model.h"
#include "core/yaml_reader.h"

namespace coda::testing {

struct ArrayParams {
  std::uint32_t rows = 8;
  std::uint32_t cols = 8;
  arch::Dataflow dataflow = arch::Dataflow::OutputStationary;
  Bytes sram{64ULL * 1024};                   // each of ifmap, filter, ofmap
  std::optional<double> bytes_per_cycle;  // nullopt: unlimited DRAM bandwidth
  bool double_buffered = true;
  Bytes word_size{1};
  arch::WeightPreload weight_preload = arch::WeightPreload::Exposed;
};

inline arch::HardwareModel make_array(const ArrayParams& p) {
  arch::ArchSpec spec;
  spec.schema_version = 1;
  spec.name = "test-array";
  spec.clock = Hertz{1e9};
  spec.word_size = p.word_size;
  arch::ComputeUnitSpec unit{.name = "array", .kind = arch::UnitKind::Systolic};
  unit.array = arch::SystolicArraySpec{.rows = p.rows,
                                       .cols = p.cols,
                                       .dataflow = p.dataflow,
                                       .weight_preload = p.weight_preload};
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

// A HardwareModel from arch YAML text; a test's own YAML that does not read is a test bug.
inline arch::HardwareModel parse_arch(std::string_view yaml) {
  Diagnostics diags;
  const auto doc = YamlDocument::parse(yaml, "test.yaml", diags);
  const auto spec = doc ? arch::read_arch_spec(doc->root(), diags) : std::nullopt;
  if (!spec) throw std::invalid_argument(diags.format_all());
  return arch::HardwareModel(*spec);
}

// A small GPU: 4 SMs of 512 fp16 tensor-core MACs per cycle, a vector unit of 256 fp16 / 128 fp32
// ops and 16 special ops per cycle per SM, 100 KiB of shared memory per SM, a 4 MiB L2, 1 TB/s
// of DRAM and 8 chips on 100 GB/s links with 1 us latency, at 1 GHz. Stated energies make every
// figure hand-derivable: 1 pJ per MAC, 2 pJ per vector op, 0.5 / 1 / 10 pJ per byte of smem /
// L2 / DRAM, 1 W static.
inline constexpr std::string_view kMiniGpu = R"(schema_version: 2
name: mini-gpu
clock: 1 GHz
cores: 4
compute:
  - {name: tc, kind: tensor_core, macs_per_cycle: {fp16: 512}}
  - {name: simd, kind: vector, ops_per_cycle: {fp32: 128, fp16: 256}, special_ops_per_cycle: 16}
memory:
  - {name: smem, capacity: 100 KiB}
  - {name: l2, scope: chip, capacity: 4 MiB}
dram: {bandwidth: 1 TB/s}
interconnect: {chips: 8, bandwidth: 100 GB/s, latency: 1 us}
energy:
  technology_nm: 7
  mac: {fp16: 1 pJ}
  vector_op: 2 pJ
  per_byte: {smem: 0.5 pJ, l2: 1 pJ, dram: 10 pJ}
  static_power: 1 W
)";

// One 8x8 output-stationary int8 array, one buffer, unlimited DRAM bandwidth: pe, buf and DRAM
// levels, a map space small enough to search exhaustively.
inline constexpr std::string_view kTinyArray = R"(schema_version: 2
name: tiny-array
clock: 1 GHz
compute:
  - name: mxu
    kind: systolic
    array: {rows: 8, cols: 8, dataflow: output_stationary}
    macs_per_pe: {int8: 1}
memory:
  - {name: buf, capacity: 64 KiB}
dram: {bandwidth: unlimited}
)";

// A two-core NPU of two 16x8 int8 weight-stationary arrays per core, unlimited DRAM bandwidth.
inline constexpr std::string_view kMiniNpu = R"(schema_version: 2
name: mini-npu
clock: 1 GHz
cores: 2
compute:
  - name: mxu
    kind: systolic
    count: 2
    array: {rows: 16, cols: 8, dataflow: weight_stationary}
    macs_per_pe: {int8: 1}
memory:
  - {name: spad, capacity: 256 KiB, holds: [inputs, weights]}
  - {name: acc, capacity: 64 KiB, holds: [outputs]}
dram: {bandwidth: unlimited}
)";

// A one-core edge NPU: a 16x16 int8 weight-stationary array and a vector unit, 64 KiB of
// scratchpad for inputs and weights, 16 KiB of accumulators, 8 GB/s of DRAM; no tensor cores.
inline constexpr std::string_view kEdgeNpu = R"(schema_version: 2
name: edge-npu
clock: 1 GHz
cores: 1
compute:
  - name: mxu
    kind: systolic
    array: {rows: 16, cols: 16, dataflow: weight_stationary}
    macs_per_pe: {int8: 1}
  - {name: simd, kind: vector, ops_per_cycle: {int8: 64, fp32: 16}}
memory:
  - {name: spad, capacity: 64 KiB, holds: [inputs, weights]}
  - {name: acc, capacity: 16 KiB, holds: [outputs]}
dram: {bandwidth: 8 GB/s}
)";

}  // namespace coda::testing
