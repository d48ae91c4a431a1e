#include "arch/arch_spec.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <set>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "core/enum_table.h"

namespace coda::arch {
namespace {

constexpr std::array<std::pair<std::string_view, Dataflow>, 3> kDataflows{{
    {"output_stationary", Dataflow::OutputStationary},
    {"weight_stationary", Dataflow::WeightStationary},
    {"input_stationary", Dataflow::InputStationary},
}};

constexpr std::array<std::pair<std::string_view, Accumulation>, 2> kAccumulations{{
    {"column_fold", Accumulation::ColumnFold},
    {"stripes", Accumulation::Stripes},
}};

constexpr std::array<std::pair<std::string_view, WeightPreload>, 2> kWeightPreloads{{
    {"exposed", WeightPreload::Exposed},
    {"overlapped", WeightPreload::Overlapped},
}};

constexpr std::array<std::pair<std::string_view, UnitKind>, 3> kUnitKinds{{
    {"systolic", UnitKind::Systolic},
    {"tensor_core", UnitKind::TensorCore},
    {"vector", UnitKind::Vector},
}};

constexpr std::array<std::pair<std::string_view, Scope>, 2> kScopes{{
    {"core", Scope::Core},
    {"chip", Scope::Chip},
}};

constexpr std::array<std::pair<std::string_view, Holds>, 3> kHolds{{
    {"inputs", Holds::Inputs},
    {"weights", Holds::Weights},
    {"outputs", Holds::Outputs},
}};

constexpr std::array<std::pair<std::string_view, DramModel>, 2> kDramModels{{
    {"coda", DramModel::Coda},
    {"scalesim", DramModel::ScaleSim},
}};
constexpr std::array<std::pair<std::string_view, DramTechnology>, 12> kDramTechnologies{{
    {"ddr3", DramTechnology::Ddr3},
    {"ddr4", DramTechnology::Ddr4},
    {"ddr5", DramTechnology::Ddr5},
    {"lpddr4", DramTechnology::Lpddr4},
    {"lpddr4x", DramTechnology::Lpddr4x},
    {"lpddr5", DramTechnology::Lpddr5},
    {"lpddr5x", DramTechnology::Lpddr5x},
    {"gddr6", DramTechnology::Gddr6},
    {"hbm2", DramTechnology::Hbm2},
    {"hbm2e", DramTechnology::Hbm2e},
    {"hbm3", DramTechnology::Hbm3},
    {"hbm3e", DramTechnology::Hbm3e},
}};

constexpr std::array<std::pair<std::string_view, Topology>, 5> kTopologies{{
    {"ring", Topology::Ring},
    {"fully_connected", Topology::FullyConnected},
    {"torus2d", Topology::Torus2d},
    {"torus3d", Topology::Torus3d},
    {"switch", Topology::Switch},
}};

constexpr std::array<std::pair<std::string_view, NcclAlgorithm>, 3> kNcclAlgorithms{{
    {"ring", NcclAlgorithm::Ring},
    {"tree", NcclAlgorithm::Tree},
    {"nvls", NcclAlgorithm::Nvls},
}};

constexpr std::array<std::pair<std::string_view, NcclProtocol>, 3> kNcclProtocols{{
    {"ll", NcclProtocol::Ll},
    {"ll128", NcclProtocol::Ll128},
    {"simple", NcclProtocol::Simple},
}};

constexpr std::array<std::pair<std::string_view, TensorPath>, 2> kTensorPaths{{
    {"mma_sync", TensorPath::MmaSync},
    {"wgmma", TensorPath::Wgmma},
}};

constexpr std::array<std::pair<std::string_view, AttentionImpl>, 3> kAttentionImpls{{
    {"fa2", AttentionImpl::Fa2},
    {"fa3", AttentionImpl::Fa3},
    {"triton", AttentionImpl::Triton},
}};

constexpr std::array<std::pair<std::string_view, NormImpl>, 2> kNormImpls{{
    {"fused", NormImpl::Fused},
    {"torch", NormImpl::Torch},
}};
constexpr std::array<std::pair<std::string_view, DecodeAttention>, 3> kDecodeAttentions{{
    {"grouped", DecodeAttention::Grouped},
    {"per_head", DecodeAttention::PerHead},
    {"fa2_forward", DecodeAttention::Fa2Forward},
}};

constexpr std::array<std::pair<std::string_view, FusionMode>, 4> kFusionModes{{
    {"none", FusionMode::None},
    {"eager", FusionMode::Eager},
    {"epilogue", FusionMode::Epilogue},
    {"all", FusionMode::All},
}};

constexpr std::array<std::pair<std::string_view, KernelKind>, 5> kKernelKinds{{
    {"gemm", KernelKind::Gemm},
    {"attention", KernelKind::Attention},
    {"vector", KernelKind::Vector},
    {"copy", KernelKind::Copy},
    {"collective", KernelKind::Collective},
}};

constexpr std::uint32_t kMaxArrayDim = 1U << 16;  // 65536 rows or columns: far beyond any chip
constexpr std::uint32_t kMaxCount = 1U << 20;     // cores, instances, chips: a typo guard

bool positive(const Bandwidth& bandwidth) {
  return std::visit([](auto v) { return v.value > 0.0; }, bandwidth);
}

// ---- shared checks -------------------------------------------------------------------------

void check_dim(const YamlReader& array, std::string_view key, std::uint32_t value,
               Diagnostics& diags) {
  if (!array.has(key)) return;
  if (value == 0)
    diags.error(array.at(key), "must be at least 1",
                "an array has at least one row and one column, e.g. 32");
  else if (value > kMaxArrayDim)
    diags.error(array.at(key),
                fmt::format("{} is larger than the supported {}", value, kMaxArrayDim));
}

void read_array(const YamlReader& array, SystolicArraySpec& out, Diagnostics& diags) {
  if (!array.expect_map(diags)) return;
  // A value that could not be read is reported once, not again as "must be at least 1".
  const bool rows_read = array.required("rows", out.rows, diags);
  const bool cols_read = array.required("cols", out.cols, diags);
  array.required_enum("dataflow", out.dataflow, EnumTable<Dataflow>(kDataflows), diags);
  array.optional_enum("accumulation", out.accumulation, EnumTable<Accumulation>(kAccumulations),
                      diags);
  array.optional_enum("weight_preload", out.weight_preload,
                      EnumTable<WeightPreload>(kWeightPreloads), diags);
  array.reject_unknown_keys(diags);
  if (rows_read) check_dim(array, "rows", out.rows, diags);
  if (cols_read) check_dim(array, "cols", out.cols, diags);
  // Both describe the stationary tile of K' on the rows; an output-stationary array has neither.
  if (out.dataflow == Dataflow::OutputStationary)
    for (const std::string_view key : {"accumulation", "weight_preload"})
      if (array.has(key))
        diags.error(array.at(key),
                    "applies to weight- and input-stationary arrays only (an output-stationary "
                    "array finishes its outputs in the PEs and holds no weights)",
                    "leave it out, or use dataflow: weight_stationary");
}

// A count such as cores or instances: optional, at least 1, below a typo guard.
void read_count(const YamlReader& map, std::string_view key, std::uint32_t& out,
                Diagnostics& diags, std::string_view example) {
  if (!map.optional(key, out, diags)) return;
  const YamlReader node = map.at(key);
  if (out == 0)
    diags.error(node, "must be at least 1",
                fmt::format("e.g. {}: {}", key, example));
  else if (out > kMaxCount)
    diags.error(node,
                fmt::format("{} is larger than the supported {}", out, kMaxCount));
}

// A bandwidth that must be above zero; "unlimited" is allowed only where `unlimited_ok`.
// Returns whether a finite value was read into `out`.
bool read_positive_bandwidth(const YamlReader& node, std::optional<Bandwidth>& out,
                             bool unlimited_ok, Diagnostics& diags) {
  if (unlimited_ok && node.is_scalar() && node.node().Scalar() == "unlimited") {
    out.reset();
    return false;
  }
  Bandwidth value;
  if (!node.read(value, diags)) return false;
  if (!positive(value)) {
    diags.error(node, "must be above zero",
                unlimited_ok ? "write \"unlimited\" for no bandwidth limit"
                             : "leave the key out when the bandwidth is not a limit");
    return false;
  }
  out = value;
  return true;
}

void read_latency(const YamlReader& map, std::string_view key, std::optional<Latency>& out,
                  Diagnostics& diags) {
  Latency value;
  if (map.optional(key, value, diags)) out = value;
}

// ---- schema 1: the systolic shorthand ------------------------------------------------------

struct Sram {
  Bytes ifmap, filter, ofmap;
  bool double_buffered = true;
};

void read_sram(const YamlReader& sram, Bytes word_size, Sram& out, Diagnostics& diags) {
  if (!sram.expect_map(diags)) return;
  sram.optional("double_buffered", out.double_buffered, diags);
  const std::pair<std::string_view, Bytes*> buffers[] = {
      {"ifmap", &out.ifmap}, {"filter", &out.filter}, {"ofmap", &out.ofmap}};
  for (const auto& [key, size] : buffers) {
    if (!sram.required(key, *size, diags)) continue;
    const YamlReader node = sram.at(key);
    // A double-buffered SRAM needs two halves of at least one word each.
    const std::uint64_t minimum = word_size.value * (out.double_buffered ? 2 : 1);
    if (size->value == 0)
      diags.error(node, "must be non-zero",
                  "use a size such as \"64 KiB\"");
    else if (word_size.value > 0 && size->value % word_size.value != 0)
      diags.error(node,
                  fmt::format("{} is not a whole number of {}-byte words", to_string(*size),
                              word_size.value));
    else if (size->value < minimum)
      diags.error(node,
                  fmt::format("{} is smaller than the {} bytes a double-buffered SRAM needs",
                              to_string(*size), minimum));
  }
  sram.reject_unknown_keys(diags);
}

void read_v1_dram(const YamlReader& dram, DramSpec& out, Diagnostics& diags) {
  if (!dram.expect_map(diags)) return;
  dram.optional_enum("model", out.model, EnumTable<DramModel>(kDramModels), diags);
  if (!dram.has("bandwidth"))
    diags.error(dram, "missing required key 'bandwidth'",
                "give a figure such as \"25.6 GB/s\" or \"16 B/cycle\", or \"unlimited\" for "
                "stall-free compute cycles");
  else
    read_positive_bandwidth(dram.at("bandwidth"), out.bandwidth, true, diags);
  dram.reject_unknown_keys(diags);
}

// SCALE-Sim's USER mode needs what its memory system has: double-buffered SRAMs (active fraction
// 0.5) and a port bandwidth of a whole number of words per cycle (its request lines are that
// many words wide).
void check_v1_scalesim_dram(const YamlReader& dram, const ArchSpec& spec, bool double_buffered,
                            Diagnostics& diags) {
  if (!dram.is_map() || !dram.has("model") || spec.dram.model != DramModel::ScaleSim) return;
  const YamlReader model = dram.at("model");
  if (!double_buffered)
    diags.error(model,
                "SCALE-Sim's USER mode needs double-buffered SRAMs",
                "set sram.double_buffered: true, or use model: coda");
  // SCALE-Sim's folds are whole column folds with their preload exposed: it has neither stripes
  // nor shadow weights, so its demand rows would not be the array's cycles.
  for (const ComputeUnitSpec& unit : spec.compute)
    if (unit.array && (unit.array->accumulation != Accumulation::ColumnFold ||
                       unit.array->weight_preload != WeightPreload::Exposed))
      diags.error(model,
                  "SCALE-Sim's USER mode times an array that accumulates whole column folds and "
                  "exposes its weight preload",
                  "leave array.accumulation and array.weight_preload at their defaults "
                  "(column_fold, exposed), or use model: coda");
  if (!dram.has("bandwidth")) return;
  if (!spec.dram.bandwidth) {
    diags.error(dram.at("bandwidth"),
                "model: scalesim needs a finite bandwidth (SCALE-Sim's Bandwidth, words per cycle)",
                "give e.g. \"10 B/cycle\"; for SCALE-Sim's CALC mode write bandwidth: unlimited "
                "without model: scalesim");
    return;
  }
  const double word = static_cast<double>(spec.word_size.value_or(Bytes{1}).value);
  const double words = per_cycle(*spec.dram.bandwidth, spec.clock).value / word;
  if (spec.clock.value > 0 && (words < 1.0 || std::abs(words - std::round(words)) > 1e-9))
    diags.error(dram.at("bandwidth"),
                fmt::format("{:g} words per cycle is not a whole number of words, which "
                            "SCALE-Sim's ports move",
                            words),
                fmt::format("give a multiple of the {:g}-byte word per cycle, e.g. "
                            "\"{:g} B/cycle\"",
                            word, std::max(1.0, std::round(words)) * word));
}

// The precision a schema-1 word stands for: 1 B int8 (SCALE-Sim's word), 2 B fp16, 4 B fp32.
DataType word_precision(Bytes word_size) {
  switch (word_size.value) {
    case 2: return DataType::Fp16;
    case 4: return DataType::Fp32;
    default: return DataType::Int8;
  }
}

void read_v1(const YamlReader& root, ArchSpec& spec, Diagnostics& diags) {
  spec.schema_version = 1;
  Bytes word_size{1};
  if (root.optional("word_size", word_size, diags) && word_size.value == 0)
    diags.error(root.at("word_size").location(), "word_size", "must be at least 1 B",
                "SCALE-Sim's arrays use 1 B words; fp16 is 2 B");
  spec.word_size = word_size;

  ComputeUnitSpec unit{.name = "array", .kind = UnitKind::Systolic};
  unit.array.emplace();
  if (root.has("array")) read_array(root.at("array"), *unit.array, diags);
  else diags.error(root.location(), "", "missing required key 'array'",
                   "add array: {rows: 32, cols: 32, dataflow: output_stationary}");
  unit.rates[word_precision(word_size)] = 1.0;
  spec.compute.push_back(std::move(unit));

  Sram sram;
  if (root.has("sram")) read_sram(root.at("sram"), word_size, sram, diags);
  else diags.error(root.location(), "", "missing required key 'sram'",
                   "add sram: {ifmap: 64 KiB, filter: 64 KiB, ofmap: 64 KiB}");
  const std::tuple<std::string_view, Bytes, Holds> levels[] = {
      {"ifmap", sram.ifmap, Holds::Inputs},
      {"filter", sram.filter, Holds::Weights},
      {"ofmap", sram.ofmap, Holds::Outputs}};
  for (const auto& [name, capacity, holds] : levels)
    spec.memory.push_back({.name = std::string(name),
                           .capacity = capacity,
                           .holds = bits(holds),
                           .double_buffered = sram.double_buffered});

  if (root.has("dram")) read_v1_dram(root.at("dram"), spec.dram, diags);
  else diags.error(root.location(), "", "missing required key 'dram'",
                   "add dram: {bandwidth: 16 B/cycle} or dram: {bandwidth: unlimited}");
}

// After the clock is read: what the DRAM model needs of the rest of the file.
void check_v1_dram_model(const YamlReader& root, const ArchSpec& spec, Diagnostics& diags) {
  if (!root.has("dram")) return;
  bool double_buffered = true;
  for (const MemoryLevelSpec& level : spec.memory) double_buffered &= level.double_buffered;
  check_v1_scalesim_dram(root.at("dram"), spec, double_buffered, diags);
}

// ---- schema 2: the general form ------------------------------------------------------------

// "fp8" begins two formats: list them; otherwise suggest the closest by spelling.
void report_unknown_precision(const YamlReader& value, const std::string& name,
                              Diagnostics& diags) {
  std::vector<std::string_view> names;
  std::string starting;
  int prefixed = 0;
  for (const auto& [n, type] : data_type_names()) {
    names.emplace_back(n);
    if (n.starts_with(name)) {
      starting += (starting.empty() ? "" : " or ") + std::string(n);
      ++prefixed;
    }
  }
  if (prefixed < 2) starting.clear();  // one longer name is no more likely than a typo
  const auto close = did_you_mean(name, names);
  const std::string guess = !starting.empty() ? fmt::format(" (did you mean {}?)", starting)
                            : close            ? fmt::format(" (did you mean '{}'?)", *close)
                                               : std::string();
  diags.error(value,
              fmt::format("unknown precision '{}'{}", name, guess),
              fmt::format("expected one of: {}", data_type_list()));
}

// A map from precision names to positive per-cycle rates: {fp16: 1024, int8: 2048}.
void read_rates(const YamlReader& unit, std::string_view key, RateTable& out,
                Diagnostics& diags) {
  if (!unit.has(key)) {
    diags.error(unit, fmt::format("missing required key '{}'", key),
                fmt::format("give a rate per precision, e.g. {}: {{fp16: 1024, int8: 2048}}",
                            key));
    return;
  }
  const YamlReader table = unit.at(key);
  if (!table.expect_map(diags)) return;
  for (const std::string& name : table.keys()) {
    const YamlReader value = table.at(name);
    const auto parsed = parse_data_type(name);
    if (!parsed) {
      report_unknown_precision(value, name, diags);
      continue;
    }
    double rate = 0;
    if (!value.read(rate, diags)) continue;
    if (rate <= 0)
      diags.error(value, "must be above zero",
                  "leave a precision out when the unit does not support it");
    else
      out[*parsed] = rate;
  }
}

// `instruction_paths: [mma_sync, wgmma]`: a non-empty list without repeats.
void read_paths(const YamlReader& node, std::vector<TensorPath>& out, Diagnostics& diags) {
  if (!node.expect_sequence(diags)) return;
  std::vector<TensorPath> paths;
  for (const YamlReader& item : node.items()) {
    TensorPath path = TensorPath::MmaSync;
    if (!item.read_enum(path, EnumTable<TensorPath>(kTensorPaths), diags)) continue;
    if (std::find(paths.begin(), paths.end(), path) != paths.end())
      diags.error(item, fmt::format("'{}' is listed twice", to_string(path)));
    else
      paths.push_back(path);
  }
  if (node.items().empty())
    diags.error(node, "lists no instruction path",
                "e.g. instruction_paths: [mma_sync] (Ampere) or [mma_sync, wgmma] (Hopper)");
  else if (!paths.empty())
    out = std::move(paths);
}

void read_unit(const YamlReader& node, ComputeUnitSpec& unit, Diagnostics& diags) {
  if (!node.expect_map(diags)) return;
  node.required("name", unit.name, diags);
  if (!node.required_enum("kind", unit.kind, EnumTable<UnitKind>(kUnitKinds), diags)) {
    return;  // without a kind the other keys cannot be judged; report only the kind
  }
  read_count(node, "count", unit.count, diags, "4");
  switch (unit.kind) {
    case UnitKind::Systolic:
      unit.array.emplace();
      if (node.has("array")) read_array(node.at("array"), *unit.array, diags);
      else diags.error(node, "missing required key 'array'",
                       "add array: {rows: 128, cols: 128, dataflow: weight_stationary}");
      read_rates(node, "macs_per_pe", unit.rates, diags);
      break;
    case UnitKind::TensorCore: {
      read_rates(node, "macs_per_cycle", unit.rates, diags);
      TensorCoreSpec tc;
      if (node.has("mma")) {
        const YamlReader mma = node.at("mma");
        if (mma.expect_map(diags)) {
          mma.required("m", tc.mma_m, diags);
          mma.required("n", tc.mma_n, diags);
          mma.required("k", tc.mma_k, diags);
          mma.reject_unknown_keys(diags);
        }
      }
      read_count(node, "max_warps_per_core", tc.max_warps_per_core, diags, "64");
      read_count(node, "max_blocks_per_core", tc.max_blocks_per_core, diags, "32");
      read_count(node, "registers_per_core", tc.registers_per_core, diags, "65536");
      read_latency(node, "global_load_latency", tc.global_load_latency, diags);
      if (node.has("instruction_paths")) read_paths(node.at("instruction_paths"), tc.paths, diags);
      unit.tensor_core = tc;
      break;
    }
    case UnitKind::Vector:
      read_rates(node, "ops_per_cycle", unit.rates, diags);
      if (node.optional("special_ops_per_cycle", unit.special_ops_per_cycle, diags) &&
          unit.special_ops_per_cycle <= 0)
        diags.error(node.at("special_ops_per_cycle"), "must be above zero",
                    "leave the key out for a quarter of the fp32 rate");
      else if (!node.has("special_ops_per_cycle") && unit.rates.contains(DataType::Fp32))
        unit.special_ops_per_cycle = unit.rates.at(DataType::Fp32) / 4.0;
      node.optional("pipelined_epilogue", unit.pipelined_epilogue, diags);
      break;
  }
  node.reject_unknown_keys(diags);
}

void read_holds(const YamlReader& node, std::uint8_t& out, Diagnostics& diags) {
  if (!node.expect_sequence(diags)) return;
  std::uint8_t holds = 0;
  for (const YamlReader& item : node.items()) {
    Holds role{};
    if (item.read_enum(role, EnumTable<Holds>(kHolds), diags)) holds |= bits(role);
  }
  if (node.items().empty())
    diags.error(node, "holds no tensor role, so no op can use it",
                "list at least one of: inputs, weights, outputs (or leave the key out for all "
                "three)");
  else
    out = holds;
}

void read_level(const YamlReader& node, MemoryLevelSpec& level, Diagnostics& diags) {
  if (!node.expect_map(diags)) return;
  if (node.required("name", level.name, diags) && level.name == "dram")
    diags.error(node.at("name"),
                "'dram' is the name of the DRAM level", "describe DRAM under the dram: key");
  node.optional_enum("scope", level.scope, EnumTable<Scope>(kScopes), diags);
  read_count(node, "instances", level.instances, diags, "2");
  if (node.required("capacity", level.capacity, diags) && level.capacity.value == 0)
    diags.error(node.at("capacity"), "must be non-zero",
                "use a size such as \"256 KiB\"");
  if (node.has("read_bandwidth"))
    read_positive_bandwidth(node.at("read_bandwidth"), level.read_bandwidth, false, diags);
  if (node.has("write_bandwidth"))
    read_positive_bandwidth(node.at("write_bandwidth"), level.write_bandwidth, false, diags);
  read_latency(node, "latency", level.latency, diags);
  read_count(node, "banks", level.banks, diags, "32");
  read_count(node, "ports", level.ports, diags, "2");
  if (node.has("holds")) read_holds(node.at("holds"), level.holds, diags);
  node.optional("double_buffered", level.double_buffered, diags);
  node.optional("caches_weights", level.caches_weights, diags);
  node.reject_unknown_keys(diags);
}

// Stripes (accumulation: stripes) are sized to the accumulator level, the innermost core-level
// memory holding outputs: an arch that states none has nothing to size them to.
void check_stripes(const ArchSpec& spec, const std::vector<YamlReader>& nodes,
                   Diagnostics& diags) {
  const bool accumulator =
      std::any_of(spec.memory.begin(), spec.memory.end(), [](const MemoryLevelSpec& level) {
        return level.scope == Scope::Core && (level.holds & bits(Holds::Outputs)) != 0;
      });
  if (accumulator) return;
  for (std::size_t i = 0; i < spec.compute.size() && i < nodes.size(); ++i) {
    const ComputeUnitSpec& unit = spec.compute[i];
    if (!unit.array || unit.array->accumulation != Accumulation::Stripes) continue;
    const YamlReader at = nodes[i].at("array").at("accumulation");
    diags.error(at,
                "stripes are sized to the accumulator level, and no core-level memory holds "
                "outputs",
                "add a memory level with scope: core and holds: [outputs], or leave "
                "accumulation out");
  }
}

// A level that caches weights must hold them, and the matrix unit must be a systolic array: the
// weight cache is planned against the arrays' buffers (mapper/residency.h); a GPU's is not
// modelled.
void check_weight_caches(const ArchSpec& spec, const std::vector<YamlReader>& nodes,
                         Diagnostics& diags) {
  const ComputeUnitSpec* matrix = nullptr;
  for (const ComputeUnitSpec& unit : spec.compute)
    if (unit.kind == UnitKind::Systolic || unit.kind == UnitKind::TensorCore) {
      matrix = &unit;
      break;
    }
  for (std::size_t i = 0; i < spec.memory.size() && i < nodes.size(); ++i) {
    const MemoryLevelSpec& level = spec.memory[i];
    if (!level.caches_weights) continue;
    const YamlReader at = nodes[i].at("caches_weights");
    if ((level.holds & bits(Holds::Weights)) == 0)
      diags.error(at,
                  fmt::format("'{}' holds {} but not weights, so it cannot cache them", level.name,
                              holds_to_string(level.holds)),
                  "add weights to its holds, or leave caches_weights out");
    else if (matrix == nullptr || matrix->kind != UnitKind::Systolic)
      diags.error(at,
                  matrix == nullptr
                      ? std::string("this arch has no matrix unit whose weights could be cached")
                      : fmt::format("the matrix unit '{}' is tensor cores; coda plans cached "
                                    "weights against a systolic array's buffers only",
                                    matrix->name),
                  "leave caches_weights out");
  }
}

void read_dram(const YamlReader& node, DramSpec& dram, Diagnostics& diags) {
  if (!node.expect_map(diags)) return;
  if (node.optional_enum("model", dram.model, EnumTable<DramModel>(kDramModels), diags) &&
      dram.model == DramModel::ScaleSim)
    diags.error(node.at("model"),
                "model: scalesim reproduces SCALE-Sim's three-SRAM systolic array, which this "
                "schema_version 2 arch does not describe",
                "describe the array in the schema_version 1 form (array, sram, dram; "
                "docs/arch.md), or leave model out for coda's own DRAM model");
  node.optional_enum("technology", dram.technology,
                     EnumTable<DramTechnology>(kDramTechnologies), diags);
  Bytes capacity;
  if (node.optional("capacity", capacity, diags)) {
    if (capacity.value == 0)
      diags.error(node.at("capacity"),
                  "must be non-zero", "use a size such as \"80 GB\"");
    else
      dram.capacity = capacity;
  }
  if (!node.has("bandwidth"))
    diags.error(node, "missing required key 'bandwidth'",
                "give a figure such as \"3.35 TB/s\", or \"unlimited\" for stall-free compute");
  else
    read_positive_bandwidth(node.at("bandwidth"), dram.bandwidth, true, diags);
  read_count(node, "channels", dram.channels, diags, "8");
  read_latency(node, "latency", dram.latency, diags);
  if (node.has("timing")) {
    const YamlReader t = node.at("timing");
    if (t.expect_map(diags)) {
      DramTiming timing;
      read_count(t, "banks_per_channel", timing.banks_per_channel, diags, "16");
      t.optional("row_buffer", timing.row_buffer, diags);
      const std::pair<std::string_view, std::optional<Seconds>*> times[] = {
          {"t_rcd", &timing.t_rcd}, {"t_rp", &timing.t_rp}, {"t_cl", &timing.t_cl}};
      for (const auto& [key, field] : times) {
        Seconds value;
        if (t.optional(key, value, diags)) *field = value;
      }
      t.reject_unknown_keys(diags);
      dram.timing = timing;
    }
  }
  node.reject_unknown_keys(diags);
}

void read_noc(const YamlReader& node, NocSpec& noc, Diagnostics& diags) {
  if (!node.expect_map(diags)) return;
  std::optional<Bandwidth> bandwidth;
  if (!node.has("bandwidth"))
    diags.error(node, "missing required key 'bandwidth'",
                "give one link's bandwidth, e.g. \"64 B/cycle\"");
  else if (read_positive_bandwidth(node.at("bandwidth"), bandwidth, false, diags))
    noc.bandwidth = *bandwidth;
  if (node.optional("average_hops", noc.average_hops, diags) && noc.average_hops < 0)
    diags.error(node.at("average_hops"),
                "must not be negative", "e.g. average_hops: 2");
  read_latency(node, "hop_latency", noc.hop_latency, diags);
  node.reject_unknown_keys(diags);
}

// A share of a peak in (0, 1]; false (with the error) when outside.
bool read_fraction(const YamlReader& node, double& out, std::string_view what,
                   Diagnostics& diags) {
  if (!node.read(out, diags)) return false;
  if (out > 0 && out <= 1) return true;
  diags.error(node,
              fmt::format("{} is not a fraction of {} in (0, 1]", out, what),
              "e.g. 0.85 for 85% of the peak; 1 is the default (the peak itself)");
  return false;
}

// A map key that names an enum value (fixed_cost: gemm, tensor_issue: wgmma, ...): false, with a
// located error and a did-you-mean, when it names none.
template <class E>
bool enum_key(const YamlReader& value, const std::string& name, EnumTable<E> table, E& out,
              std::string_view what, Diagnostics& diags) {
  std::vector<std::string_view> names;
  for (const auto& [n, v] : table) {
    if (n == name) {
      out = v;
      return true;
    }
    names.push_back(n);
  }
  std::string list;
  for (const std::string_view n : names) list += (list.empty() ? "" : ", ") + std::string(n);
  const auto close = did_you_mean(name, names);
  diags.error(value,
              fmt::format("unknown {} '{}'{}", what, name,
                          close ? fmt::format(" (did you mean '{}'?)", *close) : std::string()),
              fmt::format("expected one of: {}", list));
  return false;
}

// One (algorithm, protocol) pair of `interconnect.nccl`: {base, hop, bandwidth, max}, and NVLS's
// {channels, loop}.
void read_nccl_protocol(const YamlReader& node, NcclAlgorithm algorithm, NcclProtocolSpec& out,
                        Diagnostics& diags) {
  if (!node.expect_map(diags)) return;
  for (const auto& [key, field] : {std::pair<std::string_view, Seconds*>{"base", &out.base},
                                    std::pair<std::string_view, Seconds*>{"hop", &out.hop}})
    if (node.required(key, *field, diags) && field->value < 0)
      diags.error(node.at(key), "must not be negative");
  if (node.has("bandwidth") && !read_fraction(node.at("bandwidth"), out.bandwidth,
                                               "the Simple ring's bus bandwidth", diags))
    out.bandwidth = 1.0;
  std::optional<Bandwidth> max;
  if (node.has("max") && read_positive_bandwidth(node.at("max"), max, false, diags)) {
    if (const auto* per_s = std::get_if<BytesPerSecond>(&*max))
      out.max = *per_s;
    else
      diags.error(node.at("max"),
                  "chip links run on their own clock: give bytes per second", "e.g. \"87.7 GB/s\"");
  }
  if (node.has("size_correction")) {
    const YamlReader list = node.at("size_correction");
    if (list.expect_sequence(diags)) {
      for (const YamlReader& item : list.items()) {
        double f = 1.0;
        if (read_fraction(item, f, "the tree's bandwidth", diags)) out.size_correction.push_back(f);
      }
      if (out.size_correction.size() > 23)
        diags.error(list,
                    fmt::format("{} factors; NCCL's table covers 23 sizes (64 B to 512 MiB)",
                                out.size_correction.size()));
    }
  }
  for (const std::string_view key : {"channels", "loop"})
    if (node.has(key) && algorithm != NcclAlgorithm::Nvls)
      diags.error(node.at(key), "only NVLS states its channels and loop time",
                  "leave it out, or state it under nvls: {simple: {...}}");
  if (node.has("channels")) read_count(node, "channels", out.channels, diags, "16");
  node.optional("loop", out.loop, diags);  // a duration: never negative
  if (node.has("loop") && out.channels == 0)
    diags.error(node.at("loop"), "a loop time needs the NVLS channels that loop",
                "state channels: too, e.g. channels: 16");
  node.reject_unknown_keys(diags);
}

// `interconnect.nccl`: algorithm -> protocol -> pair, as NCCL's tuner states them.
void read_nccl(const YamlReader& node, NcclSpec& out, Diagnostics& diags) {
  if (!node.expect_map(diags)) return;
  for (const std::string& a : node.keys()) {
    const YamlReader algorithm = node.at(a);
    NcclAlgorithm which{};
    if (!enum_key(algorithm, a, EnumTable<NcclAlgorithm>(kNcclAlgorithms), which,
                  "NCCL algorithm", diags) ||
        !algorithm.expect_map(diags))
      continue;
    for (const std::string& p : algorithm.keys()) {
      const YamlReader protocol = algorithm.at(p);
      NcclProtocol proto{};
      if (!enum_key(protocol, p, EnumTable<NcclProtocol>(kNcclProtocols), proto, "NCCL protocol",
                    diags))
        continue;
      if (which == NcclAlgorithm::Nvls && proto != NcclProtocol::Simple) {
        diags.error(protocol, "NVLS runs the simple protocol only",
                    "state nvls: {simple: {...}}");
        continue;
      }
      read_nccl_protocol(protocol, which, out[which][proto], diags);
    }
  }
  if (out.empty())
    diags.error(node, "names no NCCL algorithm",
                "e.g. nccl: {ring: {ll: {base: 6.6 us, hop: 0.6 us, bandwidth: 0.5}}}");
}

// A link's required `bandwidth` in bytes per second: `what` says what to give, `clock` that the
// link runs on its own clock (not the chip's cycles), `example` the value to suggest.
void read_link_bandwidth(const YamlReader& node, std::string_view what, std::string_view clock,
                         std::string_view example, BytesPerSecond& out, Diagnostics& diags) {
  std::optional<Bandwidth> bandwidth;
  if (!node.has("bandwidth")) {
    diags.error(node, "missing required key 'bandwidth'",
                fmt::format("give {} per direction, e.g. \"{}\"", what, example));
  } else if (read_positive_bandwidth(node.at("bandwidth"), bandwidth, false, diags)) {
    if (const auto* per_s = std::get_if<BytesPerSecond>(&*bandwidth))
      out = *per_s;
    else
      diags.error(node.at("bandwidth"), fmt::format("{}: give bytes per second", clock),
                  fmt::format("e.g. \"{}\"", example));
  }
}

void read_interconnect(const YamlReader& node, InterconnectSpec& ic, Diagnostics& diags) {
  if (!node.expect_map(diags)) return;
  read_count(node, "chips", ic.chips, diags, "8");
  node.optional_enum("topology", ic.topology, EnumTable<Topology>(kTopologies), diags);
  read_link_bandwidth(node, "one chip's injection bandwidth", "chip links run on their own clock",
                      "450 GB/s", ic.bandwidth, diags);
  node.optional("latency", ic.latency, diags);
  read_count(node, "links_per_chip", ic.links_per_chip, diags, "18");
  if (node.has("nccl")) read_nccl(node.at("nccl"), ic.nccl.emplace(), diags);
  node.reject_unknown_keys(diags);
}

void read_host_link(const YamlReader& node, HostLinkSpec& link, Diagnostics& diags) {
  if (!node.expect_map(diags)) return;
  read_link_bandwidth(node, "the link's bandwidth", "the host link runs on its own clock",
                      "64 GB/s", link.bandwidth, diags);
  if (!node.has("copy_overhead"))
    diags.error(node, "missing required key 'copy_overhead'",
                "give what one copy costs to issue, e.g. \"6 us\" (0 us to price bytes alone)");
  else
    node.optional("copy_overhead", link.copy_overhead, diags);  // a duration: never negative
  node.reject_unknown_keys(diags);
}

template <class T>
bool read_non_negative(const YamlReader& map, std::string_view key, T& out, Diagnostics& diags) {
  if (!map.optional(key, out, diags)) return false;
  if (out.value < 0) {
    diags.error(map.at(key), "must not be negative");
    return false;
  }
  return true;
}

void read_energy(const YamlReader& node, const ArchSpec& spec, EnergySpec& energy,
                 Diagnostics& diags) {
  if (!node.expect_map(diags)) return;
  double nm = 0;
  if (node.optional("technology_nm", nm, diags)) {
    if (nm < 1 || nm > 1000)
      diags.error(node.at("technology_nm"),
                  fmt::format("{} nm is not a process node", nm),
                  "give the node in nanometres, e.g. technology_nm: 7");
    else
      energy.technology_nm = nm;
  }
  if (node.has("mac")) {
    const YamlReader mac = node.at("mac");
    if (mac.expect_map(diags)) {
      for (const std::string& name : mac.keys()) {
        const YamlReader value = mac.at(name);
        const auto type = parse_data_type(name);
        if (!type) {
          report_unknown_precision(value, name, diags);
          continue;
        }
        Joules joules;
        if (value.read(joules, diags)) energy.mac[*type] = joules;
      }
    }
  }
  Joules vector_op;
  if (read_non_negative(node, "vector_op", vector_op, diags)) energy.vector_op = vector_op;
  if (node.has("per_byte")) {
    const YamlReader per_byte = node.at("per_byte");
    if (per_byte.expect_map(diags)) {
      std::vector<std::string_view> levels;
      for (const MemoryLevelSpec& level : spec.memory)
        if (level.name != "dram") levels.emplace_back(level.name);  // a level named dram is an error
      levels.emplace_back("dram");
      for (const std::string& name : per_byte.keys()) {
        const YamlReader value = per_byte.at(name);
        if (std::find(levels.begin(), levels.end(), name) == levels.end()) {
          std::string valid;
          for (const auto l : levels) valid += (valid.empty() ? "" : ", ") + std::string(l);
          const auto close = did_you_mean(name, levels);
          diags.error(value,
                      close ? fmt::format("no memory level '{}' (did you mean '{}'?)", name,
                                          *close)
                            : fmt::format("no memory level '{}'", name),
                      fmt::format("the levels are: {}", valid));
          continue;
        }
        Joules joules;
        if (value.read(joules, diags)) energy.per_byte[name] = joules;
      }
    }
  }
  Watts static_power;
  if (read_non_negative(node, "static_power", static_power, diags))
    energy.static_power = static_power;
  Joules standby;
  if (read_non_negative(node, "dram_standby_per_bandwidth", standby, diags)) {
    if (spec.dram.bandwidth)
      energy.dram_standby_per_bandwidth = standby;
    else
      diags.error(node.at("dram_standby_per_bandwidth"),
                  "needs dram.bandwidth: the standby power is this figure x the bandwidth",
                  "state dram.bandwidth (e.g. \"51.2 GB/s\") or drop this key");
  }
  Watts idle;
  if (read_non_negative(node, "dram_idle_per_gb", idle, diags)) {
    if (spec.dram.capacity)
      energy.dram_idle_per_gb = idle;
    else
      diags.error(node.at("dram_idle_per_gb"),
                  "needs dram.capacity: the idle power is this figure x the capacity in GB",
                  "state dram.capacity (e.g. \"8 GB\") or drop this key");
  }
  node.reject_unknown_keys(diags);
}

void read_area(const YamlReader& node, AreaSpec& area, Diagnostics& diags) {
  if (!node.expect_map(diags)) return;
  const std::pair<std::string_view, std::optional<SquareMillimetres>*> fields[] = {
      {"die", &area.die}, {"per_mac", &area.per_mac}, {"per_kib_sram", &area.per_kib_sram}};
  for (const auto& [key, field] : fields) {
    SquareMillimetres value;
    if (!node.optional(key, value, diags)) continue;
    if (value.value <= 0)
      diags.error(node.at(key), "must be above zero");
    else
      *field = value;
  }
  node.reject_unknown_keys(diags);
}

void read_power(const YamlReader& node, PowerSpec& power, Diagnostics& diags) {
  if (!node.expect_map(diags)) return;
  Watts budget;
  if (node.optional("budget", budget, diags)) {
    if (budget.value <= 0)
      diags.error(node.at("budget"), "must be above zero",
                  "e.g. budget: 700 W");
    else
      power.budget = budget;
  }
  node.optional("mode", power.mode, diags);
  node.reject_unknown_keys(diags);
}

// The precisions some unit of the arch runs (of the tensor-core units only, when `tensor_only`).
std::set<DataType> precisions_of(const ArchSpec& spec, bool tensor_only) {
  std::set<DataType> out;
  for (const ComputeUnitSpec& unit : spec.compute)
    if (!tensor_only || unit.kind == UnitKind::TensorCore)
      for (const auto& [precision, rate] : unit.rates) out.insert(precision);
  return out;
}

// A map from precision names to fractions, each precision one of `runs`.
void read_fractions(const YamlReader& table, const std::set<DataType>& runs,
                    std::string_view unit, std::string_view units,
                    std::map<DataType, double>& out, Diagnostics& diags) {
  if (!table.expect_map(diags)) return;
  for (const std::string& name : table.keys()) {
    const YamlReader value = table.at(name);
    const auto type = parse_data_type(name);
    if (!type) {
      report_unknown_precision(value, name, diags);
      continue;
    }
    if (!runs.contains(*type)) {
      std::string list;
      for (const DataType p : runs) list += (list.empty() ? "" : ", ") + std::string(to_string(p));
      diags.error(value, fmt::format("no {} of this arch runs {}", unit, name),
                  fmt::format("the {} run: {}", units, list.empty() ? std::string("nothing") : list));
      continue;
    }
    double fraction = 0;
    if (read_fraction(value, fraction, "the peak rate", diags)) out[*type] = fraction;
  }
}

// A time between 0 and kMaxLaunchOverheadSeconds: `what` it is not, and what to give instead.
bool read_kernel_time(const YamlReader& node, Seconds& out, std::string_view what,
                      std::string_view give, Diagnostics& diags) {
  if (!node.read(out, diags)) return false;
  if (out.value >= 0 && out.value <= kMaxLaunchOverheadSeconds) return true;
  diags.error(node, fmt::format("{} is not {}", to_string(out), what),
              fmt::format("give {}, between 0 and 1 ms, e.g. 4 us", give));
  return false;
}

// The tensor-core unit's instruction paths, or none when the arch has no tensor cores.
std::vector<TensorPath> tensor_paths(const ArchSpec& spec) {
  const ComputeUnitSpec* unit = find_unit(spec, UnitKind::TensorCore);
  return unit && unit->tensor_core ? unit->tensor_core->paths : std::vector<TensorPath>{};
}

std::string path_list(const std::vector<TensorPath>& paths) {
  std::string out;
  for (const TensorPath p : paths) out += (out.empty() ? "" : ", ") + std::string(to_string(p));
  return out.empty() ? std::string("none (no tensor-core unit)") : out;
}

// A key that only means something on tensor cores, on an arch that has them with `path`.
bool has_tensor_path(const ArchSpec& spec, TensorPath path) {
  const std::vector<TensorPath> paths = tensor_paths(spec);
  return std::find(paths.begin(), paths.end(), path) != paths.end();
}

bool check_path(const YamlReader& at, const ArchSpec& spec, TensorPath path, Diagnostics& diags) {
  if (has_tensor_path(spec, path)) return true;
  diags.error(at, fmt::format("this arch's tensor cores have no {} path", to_string(path)),
              fmt::format("their instruction_paths: {}", path_list(tensor_paths(spec))));
  return false;
}

void read_calibration(const YamlReader& node, const ArchSpec& spec, CalibrationSpec& out,
                      Diagnostics& diags) {
  if (!node.expect_map(diags)) return;
  if (node.has("launch_overhead")) {
    Seconds launch;
    if (read_kernel_time(node.at("launch_overhead"), launch, "a kernel launch overhead",
                         "the time from launch to kernel start", diags))
      out.launch_overhead = launch;
  }
  if (node.has("fixed_cost")) {
    const YamlReader table = node.at("fixed_cost");
    if (table.expect_map(diags)) {
      for (const std::string& name : table.keys()) {
        const YamlReader value = table.at(name);
        KernelKind kind = KernelKind::Gemm;
        if (!enum_key(value, name, EnumTable<KernelKind>(kKernelKinds), kind, "kernel kind", diags))
          continue;
        Seconds time;
        if (read_kernel_time(value, time, "a kernel's fixed cost",
                             "the launch, ramp-up and tail time of one kernel", diags))
          out.fixed_cost[kind] = time;
      }
    }
  }
  if (node.has("in_model_fixed_cost")) {
    Seconds time;
    if (read_kernel_time(node.at("in_model_fixed_cost"), time, "a kernel's fixed cost",
                         "the ramp-up, tail and gap of a kernel launched behind another", diags))
      out.in_model_fixed_cost = time;
  }
  if (node.has("tile_overhead")) {
    const YamlReader table = node.at("tile_overhead");
    if (table.expect_map(diags)) {
      for (const std::string& name : table.keys()) {
        const YamlReader value = table.at(name);
        KernelKind kind = KernelKind::Gemm;
        if (!enum_key(value, name, EnumTable<KernelKind>(kKernelKinds), kind, "kernel kind", diags))
          continue;
        if (kind != KernelKind::Gemm && kind != KernelKind::Attention) {
          diags.error(value,
                      fmt::format("{} kernels have no thread-block main loop", name),
                      "tile_overhead is for gemm and attention");
          continue;
        }
        double steps = 0;
        if (!value.read(steps, diags)) continue;
        if (steps < 0 || steps > kMaxTileOverheadSteps)
          diags.error(value,
                      fmt::format("{} is not a block's prologue and epilogue in main-loop steps",
                                  steps),
                      fmt::format("give 0 to {}, e.g. 1.5", kMaxTileOverheadSteps));
        else
          out.tile_overhead[kind] = steps;
      }
    }
  }
  if (node.has("compute_fraction"))
    read_fractions(node.at("compute_fraction"), precisions_of(spec, false), "compute unit",
                   "units", out.compute_fraction, diags);
  if (node.has("tensor_issue")) {
    const YamlReader table = node.at("tensor_issue");
    if (table.expect_map(diags)) {
      for (const std::string& name : table.keys()) {
        TensorPath path = TensorPath::MmaSync;
        if (!enum_key(table.at(name), name, EnumTable<TensorPath>(kTensorPaths), path,
                      "instruction path", diags))
          continue;
        if (!check_path(table.at(name), spec, path, diags)) continue;
        read_fractions(table.at(name), precisions_of(spec, true), "tensor-core unit",
                       "tensor cores", out.tensor_issue[path], diags);
      }
    }
  }
  // The SM clock under tensor load, in any run (sustained_clock) or in a training step
  // (training_clock): tensor cores only, above zero and at most `clock`.
  const auto read_clock = [&](const char* key, std::optional<Hertz>& into) {
    if (!node.has(key)) return;
    const YamlReader at = node.at(key);
    Hertz clock;
    if (!at.read(clock, diags)) return;
    if (tensor_paths(spec).empty())
      diags.error(at, "only tensor cores have a sustained clock",
                  "this arch has no tensor-core unit; state its clock instead");
    else if (clock.value <= 0 || clock.value > spec.clock.value)
      diags.error(at,
                  fmt::format("{} is not a sustained clock of a {} part", to_string(clock),
                              to_string(spec.clock)),
                  "give the clock under load, above zero and at most `clock`");
    else
      into = clock;
  };
  read_clock("sustained_clock", out.sustained_clock);
  read_clock("training_clock", out.training_clock);
  if (node.has("raster_group")) {
    const YamlReader at = node.at("raster_group");
    std::uint32_t group = 0;
    if (at.read(group, diags)) {
      if (tensor_paths(spec).empty())
        diags.error(at, "only tensor-core GEMMs have a raster group",
                    "this arch has no tensor-core unit; leave raster_group out");
      else if (group == 0)
        diags.error(at, "0 is not a raster group",
                    "give the m-tiles a GEMM walks before the next n-tile, at least 1, e.g. 8");
      else
        out.raster_group = group;
    }
  }
  // A thread-block cluster size under `key`: wgmma-generation tensor cores only, 1 to 16
  // (Hopper's portable cluster limit is 8, 16 with opt-in). `without` says what needs the
  // wgmma path, `what` what the size counts, `example` a typical size.
  const auto cluster_size = [&](std::string_view key, std::string_view without,
                                std::string_view what, std::uint32_t example,
                                std::optional<std::uint32_t>& into) {
    if (!node.has(key)) return;
    const YamlReader at = node.at(key);
    std::uint32_t cluster = 0;
    if (!at.read(cluster, diags)) return;
    if (!has_tensor_path(spec, TensorPath::Wgmma))
      diags.error(
          at, std::string(without),
          fmt::format("list wgmma in the tensor core's instruction_paths, or leave {} out", key));
    else if (cluster == 0 || cluster > 16)
      diags.error(at, fmt::format("{} is not a cluster size", cluster),
                  fmt::format("give {}, 1 to 16 (Hopper's portable cluster limit is 8, 16 with "
                              "opt-in), e.g. {}",
                              what, example));
    else
      into = cluster;
  };
  cluster_size("cluster_multicast",
               "only tensor cores with the wgmma path multicast within a cluster",
               "the thread blocks a cluster multicasts to", 2, out.cluster_multicast);
  cluster_size("row_cluster",
               "only GPUs with thread-block clusters (the wgmma generation) spread a row over "
               "several SMs",
               "the SMs a row kernel spreads a row over", 16, out.row_cluster);
  if (node.has("gemm_path")) {
    TensorPath path = TensorPath::MmaSync;
    if (node.required_enum("gemm_path", path, EnumTable<TensorPath>(kTensorPaths), diags) &&
        check_path(node.at("gemm_path"), spec, path, diags))
      out.gemm_path = path;
  }
  if (node.has("attention")) {
    AttentionImpl impl = AttentionImpl::Fa2;
    const YamlReader at = node.at("attention");
    if (node.required_enum("attention", impl, EnumTable<AttentionImpl>(kAttentionImpls), diags) &&
        check_path(at, spec, impl == AttentionImpl::Fa3 ? TensorPath::Wgmma : TensorPath::MmaSync,
                   diags))
      out.attention = impl;
    if (out.attention == AttentionImpl::Triton && !node.has("attention_triton"))
      diags.error(at,
                  "attention: triton needs attention_triton (its share of fa2's matrix rate)",
                  "state calibration.attention_triton, or choose fa2 or fa3");
  }
  if (node.has("decode_attention")) {
    DecodeAttention impl = DecodeAttention::Grouped;
    if (node.required_enum("decode_attention", impl,
                           EnumTable<DecodeAttention>(kDecodeAttentions), diags))
      out.decode_attention = impl;
  }
  if (node.has("norm_kernel")) {
    NormImpl impl = NormImpl::Fused;
    if (node.required_enum("norm_kernel", impl, EnumTable<NormImpl>(kNormImpls), diags))
      out.norm_kernel = impl;
  }
  if (node.has("decode_kv_reread")) {
    const YamlReader at = node.at("decode_kv_reread");
    double share = 0;
    if (at.read(share, diags)) {
      if (!(share >= 0 && share <= 1))
        diags.error(at,
                    fmt::format("{} is not a share of the K and V re-reads", share),
                    "give 0 (every re-read hits L2) to 1 (every re-read reaches DRAM)");
      else
        out.decode_kv_reread = share;
    }
  }
  if (node.has("llm_step_fixed_cost")) {
    Seconds time;
    if (read_kernel_time(node.at("llm_step_fixed_cost"), time, "an LLM step's fixed cost",
                         "the runtime's host work per generation step", diags))
      out.llm_step_fixed_cost = time;
  }
  if (node.has("eager_issue_time")) {
    Seconds time;
    if (read_kernel_time(node.at("eager_issue_time"), time, "an eager kernel issue time",
                         "the host's time to launch one kernel without a CUDA graph", diags))
      out.eager_issue_time = time;
  }
  if (node.has("fusion")) {
    FusionMode mode = FusionMode::None;
    if (node.required_enum("fusion", mode, EnumTable<FusionMode>(kFusionModes), diags))
      out.fusion = mode;
  }
  const auto fraction = [&](std::string_view key, std::string_view what,
                            std::optional<double>& into) {
    if (!node.has(key)) return;
    double value = 0;
    if (read_fraction(node.at(key), value, what, diags)) into = value;
  };
  fraction("attention_backward", "the forward's matrix rate", out.attention_backward);
  fraction("attention_triton", "the fa2 class's matrix rate", out.attention_triton);
  fraction("unaligned_gemm", "the datasheet tensor-core rate", out.unaligned_gemm);
  fraction("attention_overlap", "the shorter of the matrix and softmax work",
           out.attention_overlap);
  fraction("dram_fraction", "the DRAM bandwidth", out.dram_fraction);
  fraction("link_fraction", "the interconnect bandwidth", out.link_fraction);
  if (out.link_fraction && !spec.interconnect)
    diags.error(node.at("link_fraction"),
                "this arch has no interconnect", "add interconnect: or leave link_fraction out");
  node.optional("source", out.source, diags);
  node.reject_unknown_keys(diags);
}

// Names must be unique within a list; the second use is the error.
template <class T>
void check_unique_names(const std::vector<T>& items, const std::vector<YamlReader>& nodes,
                        std::string_view what, Diagnostics& diags) {
  std::set<std::string, std::less<>> seen;
  for (std::size_t i = 0; i < items.size() && i < nodes.size(); ++i) {
    if (items[i].name.empty()) continue;
    if (!seen.insert(items[i].name).second)
      diags.error(nodes[i].at("name"),
                  fmt::format("a second {} named '{}'", what, items[i].name),
                  "names must be unique");
  }
}

void read_v2(const YamlReader& root, ArchSpec& spec, Diagnostics& diags) {
  read_count(root, "cores", spec.cores, diags, "132");
  std::vector<YamlReader> compute_nodes;

  if (!root.has("compute")) {
    diags.error(root.location(), "", "missing required key 'compute'",
                "list the units of one core, e.g. compute: [{name: mxu, kind: systolic, array: "
                "{rows: 128, cols: 128, dataflow: weight_stationary}, macs_per_pe: {bf16: 1}}]");
  } else if (const YamlReader compute = root.at("compute"); compute.expect_sequence(diags)) {
    const auto nodes = compute.items();
    if (nodes.empty())
      diags.error(compute, "a core needs at least one compute unit");
    for (const YamlReader& node : nodes) read_unit(node, spec.compute.emplace_back(), diags);
    check_unique_names(spec.compute, nodes, "compute unit", diags);
    compute_nodes = nodes;
  }

  if (root.has("memory")) {
    const YamlReader memory = root.at("memory");
    if (memory.expect_sequence(diags)) {
      const auto nodes = memory.items();
      for (const YamlReader& node : nodes) read_level(node, spec.memory.emplace_back(), diags);
      check_unique_names(spec.memory, nodes, "memory level", diags);
      check_weight_caches(spec, nodes, diags);
    }
  }
  check_stripes(spec, compute_nodes, diags);

  if (root.has("dram")) read_dram(root.at("dram"), spec.dram, diags);
  else diags.error(root.location(), "", "missing required key 'dram'",
                   "add dram: {technology: hbm3, bandwidth: 3.35 TB/s}");
  if (root.has("noc")) read_noc(root.at("noc"), spec.noc.emplace(), diags);
  if (root.has("interconnect"))
    read_interconnect(root.at("interconnect"), spec.interconnect.emplace(), diags);
  if (root.has("host_link")) read_host_link(root.at("host_link"), spec.host_link.emplace(), diags);
  if (root.has("energy")) read_energy(root.at("energy"), spec, spec.energy, diags);
  if (root.has("area")) read_area(root.at("area"), spec.area, diags);
  if (root.has("power")) read_power(root.at("power"), spec.power, diags);
}

}  // namespace

std::string_view to_string(Dataflow dataflow) { return enum_name(kDataflows, dataflow); }
std::string_view to_string(UnitKind kind) { return enum_name(kUnitKinds, kind); }
std::string_view to_string(Accumulation accumulation) {
  return enum_name(kAccumulations, accumulation);
}
std::string_view to_string(WeightPreload preload) { return enum_name(kWeightPreloads, preload); }
std::string_view to_string(Scope scope) { return enum_name(kScopes, scope); }
std::string_view to_string(Topology topology) { return enum_name(kTopologies, topology); }
std::string_view to_string(TensorPath path) { return enum_name(kTensorPaths, path); }
std::string_view to_string(AttentionImpl impl) { return enum_name(kAttentionImpls, impl); }
std::string_view to_string(DecodeAttention impl) { return enum_name(kDecodeAttentions, impl); }
std::string_view to_string(NormImpl impl) { return enum_name(kNormImpls, impl); }
std::string_view to_string(KernelKind kind) { return enum_name(kKernelKinds, kind); }
std::string_view to_string(FusionMode mode) { return enum_name(kFusionModes, mode); }
std::optional<AttentionImpl> parse_attention_impl(std::string_view text) {
  return enum_value(kAttentionImpls, text);
}
std::optional<DecodeAttention> parse_decode_attention(std::string_view text) {
  return enum_value(kDecodeAttentions, text);
}
std::optional<FusionMode> parse_fusion_mode(std::string_view text) {
  return enum_value(kFusionModes, text);
}
std::string_view to_string(DramModel model) { return enum_name(kDramModels, model); }
std::string_view to_string(DramTechnology technology) {
  return technology == DramTechnology::Unspecified ? "unspecified"
                                                   : enum_name(kDramTechnologies, technology);
}

std::string holds_to_string(std::uint8_t holds) {
  std::string out;
  for (const auto& [name, role] : kHolds)
    if ((holds & bits(role)) != 0) out += (out.empty() ? "" : ", ") + std::string(name);
  return out;
}

std::string_view short_name(Dataflow dataflow) {
  switch (dataflow) {
    case Dataflow::OutputStationary: return "os";
    case Dataflow::WeightStationary: return "ws";
    case Dataflow::InputStationary: return "is";
  }
  return "?";
}

namespace {

// Values no real device has (docs/arch.md, "Plausibility"): legal, and priced as written, but
// most likely a slip (a clock in kHz read as MHz, a size in KiB written as GiB), so each is a
// warning at its key. The limits are well past every shipping part: 10 GHz (GPUs and NPUs run
// at 1-3 GHz), 2^20 PEs in one array (TPU v4's MXU has 2^14), 1 GiB of on-chip memory per core
// (H100's SM has 256 KiB; a whole Cerebras WSE-3 wafer 44 GB), 100 TB/s of DRAM bandwidth
// (H200: 4.8 TB/s).
constexpr double kMaxPlausibleClockHz = 10e9;
constexpr std::uint64_t kMaxPlausiblePes = std::uint64_t{1} << 20;
constexpr std::uint64_t kMaxPlausibleCoreBytes = std::uint64_t{1} << 30;
constexpr double kMaxPlausibleDramBytesPerSecond = 100e12;

void warn_implausible(const YamlReader& root, const ArchSpec& spec, Diagnostics& diags) {
  const auto warn = [&](const YamlReader& at, std::string message) {
    diags.warning(at, std::move(message),
                  "legal, and priced as written; check the unit (docs/arch.md, \"Plausibility\")");
  };
  if (spec.clock.value > kMaxPlausibleClockHz && root.has("clock"))
    warn(root.at("clock"), fmt::format("{} GHz is above any real device's clock (10 GHz)",
                                       spec.clock.value / 1e9));
  for (const ComputeUnitSpec& unit : spec.compute) {
    if (!unit.array) continue;
    const std::uint64_t pes = std::uint64_t{unit.array->rows} * unit.array->cols;
    if (pes > kMaxPlausiblePes)
      warn(root.has("compute") ? root.at("compute") : root,
           fmt::format("unit '{}': a {}x{} array has {} PEs, more than any real array (2^20)",
                       unit.name, unit.array->rows, unit.array->cols, pes));
  }
  for (const MemoryLevelSpec& level : spec.memory) {
    const std::uint64_t bytes = level.capacity.value * level.instances;
    if (level.scope == Scope::Core && bytes > kMaxPlausibleCoreBytes)
      warn(root.has("memory") ? root.at("memory") : root,
           fmt::format("level '{}': {} MiB per core is more on-chip memory than any real core "
                       "has (1 GiB)",
                       level.name, bytes >> 20));
  }
  if (spec.dram.bandwidth) {
    const double per_second = per_cycle(*spec.dram.bandwidth, spec.clock).value * spec.clock.value;
    if (per_second > kMaxPlausibleDramBytesPerSecond)
      warn(root.has("dram") ? root.at("dram") : root,
           fmt::format("{} TB/s of DRAM bandwidth is above any real memory system's (100 TB/s)",
                       per_second / 1e12));
  }
}

}  // namespace

std::optional<ArchSpec> read_arch_spec(const YamlReader& root, Diagnostics& diags) {
  const std::size_t errors_before = diags.error_count();
  if (!root.expect_map(diags)) return std::nullopt;
  ArchSpec spec;
  std::uint32_t schema_version = 0;
  const bool version_read = root.required("schema_version", schema_version, diags);
  if (version_read && schema_version != 1 && schema_version != 2) {
    diags.error(root.at("schema_version").location(), "schema_version",
                fmt::format("unsupported schema_version {}", schema_version),
                "this coda reads schema_version 2 (the general form) and 1 (the systolic "
                "shorthand)");
    return std::nullopt;
  }
  root.required("name", spec.name, diags);
  root.optional("description", spec.description, diags);
  root.optional("sources", spec.sources, diags);
  root.required("clock", spec.clock, diags);
  // The shorthand's keys tell the form when the version is missing or unreadable.
  const bool shorthand_keys = root.is_map() && (root.node()["array"] || root.node()["sram"]);
  if (version_read && schema_version == 2 && shorthand_keys && !root.node()["compute"]) {
    diags.error(root.at("schema_version").location(), "schema_version",
                "this file uses the schema_version 1 shorthand (array, sram), but says "
                "schema_version 2",
                "write schema_version: 1, or describe the hardware with compute:, memory: and "
                "dram: (docs/arch.md)");
    return std::nullopt;
  }
  if (version_read ? schema_version == 1 : shorthand_keys) {
    read_v1(root, spec, diags);
    check_v1_dram_model(root, spec, diags);
  } else {
    read_v2(root, spec, diags);
  }
  if (root.has("calibration")) read_calibration(root.at("calibration"), spec, spec.calibration, diags);
  root.reject_unknown_keys(diags);
  if (diags.error_count() != errors_before) return std::nullopt;
  warn_implausible(root, spec, diags);
  return spec;
}

std::optional<LoadedArch> load_arch(const std::filesystem::path& file, Diagnostics& diags) {
  const auto doc = YamlDocument::load(file, diags);
  if (!doc) return std::nullopt;
  auto spec = read_arch_spec(doc->root(), diags);
  if (!spec) return std::nullopt;
  return LoadedArch{std::move(*spec), file.string(), doc->content_hash()};
}

std::string calibration_yaml(const CalibrationSpec& c, int indent) {
  const std::string pad(static_cast<std::size_t>(indent), ' ');
  const std::string pad2 = pad + pad;
  const std::string pad3 = pad2 + pad;
  const auto us = [](const Seconds& s) { return fmt::format("{} us", s.value * 1e6); };
  std::string out = "calibration:\n";
  if (c.launch_overhead) out += fmt::format("{}launch_overhead: {}\n", pad, us(*c.launch_overhead));
  if (!c.fixed_cost.empty()) {
    out += pad + "fixed_cost:\n";
    for (const auto& [kind, time] : c.fixed_cost)
      out += fmt::format("{}{}: {}\n", pad2, to_string(kind), us(time));
  }
  if (c.in_model_fixed_cost)
    out += fmt::format("{}in_model_fixed_cost: {}\n", pad, us(*c.in_model_fixed_cost));
  if (!c.tile_overhead.empty()) {
    out += pad + "tile_overhead:\n";
    for (const auto& [kind, steps] : c.tile_overhead)
      out += fmt::format("{}{}: {}\n", pad2, to_string(kind), steps);
  }
  if (c.sustained_clock)
    out += fmt::format("{}sustained_clock: {} MHz\n", pad, c.sustained_clock->value / 1e6);
  if (c.training_clock)
    out += fmt::format("{}training_clock: {} MHz\n", pad, c.training_clock->value / 1e6);
  if (!c.tensor_issue.empty()) {
    out += pad + "tensor_issue:\n";
    for (const auto& [path, fractions] : c.tensor_issue) {
      out += fmt::format("{}{}:\n", pad2, to_string(path));
      for (const auto& [precision, fraction] : fractions)
        out += fmt::format("{}{}: {}\n", pad3, to_string(precision), fraction);
    }
  }
  if (!c.compute_fraction.empty()) {
    out += pad + "compute_fraction:\n";
    for (const auto& [precision, fraction] : c.compute_fraction)
      out += fmt::format("{}{}: {}\n", pad2, to_string(precision), fraction);
  }
  if (c.raster_group) out += fmt::format("{}raster_group: {}\n", pad, *c.raster_group);
  if (c.cluster_multicast)
    out += fmt::format("{}cluster_multicast: {}\n", pad, *c.cluster_multicast);
  if (c.row_cluster) out += fmt::format("{}row_cluster: {}\n", pad, *c.row_cluster);
  if (c.gemm_path) out += fmt::format("{}gemm_path: {}\n", pad, to_string(*c.gemm_path));
  if (c.attention) out += fmt::format("{}attention: {}\n", pad, to_string(*c.attention));
  if (c.decode_attention)
    out += fmt::format("{}decode_attention: {}\n", pad, to_string(*c.decode_attention));
  if (c.norm_kernel) out += fmt::format("{}norm_kernel: {}\n", pad, to_string(*c.norm_kernel));
  if (c.decode_kv_reread)
    out += fmt::format("{}decode_kv_reread: {}\n", pad, *c.decode_kv_reread);
  if (c.llm_step_fixed_cost)
    out += fmt::format("{}llm_step_fixed_cost: {}\n", pad, us(*c.llm_step_fixed_cost));
  if (c.eager_issue_time)
    out += fmt::format("{}eager_issue_time: {}\n", pad, us(*c.eager_issue_time));
  if (c.fusion) out += fmt::format("{}fusion: {}\n", pad, to_string(*c.fusion));
  if (c.attention_backward)
    out += fmt::format("{}attention_backward: {}\n", pad, *c.attention_backward);
  if (c.attention_triton)
    out += fmt::format("{}attention_triton: {}\n", pad, *c.attention_triton);
  if (c.attention_overlap)
    out += fmt::format("{}attention_overlap: {}\n", pad, *c.attention_overlap);
  if (c.unaligned_gemm) out += fmt::format("{}unaligned_gemm: {}\n", pad, *c.unaligned_gemm);
  if (c.dram_fraction) out += fmt::format("{}dram_fraction: {}\n", pad, *c.dram_fraction);
  if (c.link_fraction) out += fmt::format("{}link_fraction: {}\n", pad, *c.link_fraction);
  if (!c.source.empty()) {
    std::string quoted;
    for (const char ch : c.source)
      quoted += ch == '"' || ch == '\\' ? std::string{'\\', ch} : std::string(1, ch);
    out += fmt::format("{}source: \"{}\"\n", pad, quoted);
  }
  return out;
}

std::string describe_compute(const ArchSpec& spec) {
  std::string units;
  for (const ComputeUnitSpec& unit : spec.compute) {
    std::string text = unit.count > 1 ? fmt::format("{}x {}", unit.count, unit.name) : unit.name;
    if (unit.array)
      text += fmt::format(" {}x{} {}", unit.array->rows, unit.array->cols,
                          to_string(unit.array->dataflow));
    else if (unit.name != to_string(unit.kind))
      text += fmt::format(" ({})", to_string(unit.kind));
    units += (units.empty() ? "" : ", ") + text;
  }
  return spec.cores == 1 ? fmt::format("1 core: {}", units)
                         : fmt::format("{} cores, each: {}", spec.cores, units);
}

std::uint64_t instances_on_chip(const MemoryLevelSpec& level, std::uint32_t cores) {
  return std::uint64_t{level.instances} * (level.scope == Scope::Core ? cores : 1U);
}

const MemoryLevelSpec* innermost_core_level(const ArchSpec& spec, Holds role) {
  for (const MemoryLevelSpec& level : spec.memory)
    if (level.scope == Scope::Core && (level.holds & bits(role)) != 0) return &level;
  return nullptr;
}

const ComputeUnitSpec* find_unit(const ArchSpec& spec, UnitKind kind) {
  for (const ComputeUnitSpec& unit : spec.compute)
    if (unit.kind == kind) return &unit;
  return nullptr;
}

ArchSpec training_step_view(ArchSpec spec) {
  if (spec.calibration.training_clock)
    spec.calibration.sustained_clock = spec.calibration.training_clock;
  return spec;
}

}  // namespace coda::arch
