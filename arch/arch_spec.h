#pragma once
// The systolic-array accelerator as a user describes it in YAML (configs/arch/*.yaml), and the
// reader that validates it. See docs/arch.md for every key.
//
//   schema_version: 1
//   name: systolic-32x32-os
//   extends: base.yaml          # optional; deep-merged, keys here win
//   clock: 1 GHz
//   array: {rows: 32, cols: 32, dataflow: output_stationary}
//   word_size: 1 B
//   sram: {ifmap: 64 KiB, filter: 64 KiB, ofmap: 64 KiB, double_buffered: true}
//   dram: {bandwidth: 10 B/cycle}   # or "4.8 TB/s", or "unlimited"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "core/diagnostics.h"
#include "core/units.h"
#include "core/yaml_reader.h"

namespace coda::arch {

// Which of the three GEMM dimensions stays in the PEs while the third streams through.
enum class Dataflow : std::uint8_t { OutputStationary, WeightStationary, InputStationary };
std::string_view to_string(Dataflow dataflow);  // "output_stationary", ...
std::string_view short_name(Dataflow dataflow);  // "os", "ws", "is"

struct SramSpec {
  Bytes ifmap;
  Bytes filter;
  Bytes ofmap;
  // Half of each SRAM holds the tile being computed on while the other half is filled (ifmap,
  // filter) or drained (ofmap). Without double buffering, loads cannot overlap compute.
  bool double_buffered = true;
  friend bool operator==(const SramSpec&, const SramSpec&) = default;
};

struct DramSpec {
  std::optional<Bandwidth> bandwidth;  // nullopt: unlimited (stall-free compute cycles)
  friend bool operator==(const DramSpec&, const DramSpec&) = default;
};

struct ArchSpec {
  std::string name;
  std::string description;
  std::string sources;  // where the real-device numbers come from (free text)
  Hertz clock;
  std::uint32_t rows = 0;
  std::uint32_t cols = 0;
  Dataflow dataflow = Dataflow::OutputStationary;
  Bytes word_size{1};
  SramSpec sram;
  DramSpec dram;
  friend bool operator==(const ArchSpec&, const ArchSpec&) = default;
};

// Reads and validates a whole arch document. Never throws; every problem is a Diagnostic.
std::optional<ArchSpec> read_arch_spec(const YamlReader& root, Diagnostics& diags);

// An arch spec with where it came from, for provenance.
struct LoadedArch {
  ArchSpec spec;
  std::string path;
  std::uint64_t content_hash = 0;  // of the merged document (extends resolved)
};

std::optional<LoadedArch> load_arch(const std::filesystem::path& file, Diagnostics& diags);

}  // namespace coda::arch
