#include "arch/arch_spec.h"

#include <array>
#include <utility>

#include <fmt/format.h>

namespace coda::arch {
namespace {

constexpr std::array<std::pair<std::string_view, Dataflow>, 3> kDataflows{{
    {"output_stationary", Dataflow::OutputStationary},
    {"weight_stationary", Dataflow::WeightStationary},
    {"input_stationary", Dataflow::InputStationary},
}};

constexpr std::uint32_t kSchemaVersion = 1;
constexpr std::uint32_t kMaxArrayDim = 1U << 16;  // 65536 rows or columns: far beyond any chip

void check_dim(const YamlReader& array, std::string_view key, std::uint32_t value,
               Diagnostics& diags) {
  if (!array.has(key)) return;
  if (value == 0)
    diags.error(array.at(key).location(), array.at(key).path(), "must be at least 1",
                "an array has at least one row and one column, e.g. 32");
  else if (value > kMaxArrayDim)
    diags.error(array.at(key).location(), array.at(key).path(),
                fmt::format("{} is larger than the supported {}", value, kMaxArrayDim));
}

void read_array(const YamlReader& array, ArchSpec& spec, Diagnostics& diags) {
  if (!array.expect_map(diags)) return;
  // A value that could not be read is reported once, not again as "must be at least 1".
  const bool rows_read = array.required("rows", spec.rows, diags);
  const bool cols_read = array.required("cols", spec.cols, diags);
  array.required_enum("dataflow", spec.dataflow, EnumTable<Dataflow>(kDataflows), diags);
  array.reject_unknown_keys(diags);
  if (rows_read) check_dim(array, "rows", spec.rows, diags);
  if (cols_read) check_dim(array, "cols", spec.cols, diags);
}

void read_sram(const YamlReader& sram, const ArchSpec& spec, SramSpec& out, Diagnostics& diags) {
  if (!sram.expect_map(diags)) return;
  const std::pair<std::string_view, Bytes*> buffers[] = {
      {"ifmap", &out.ifmap}, {"filter", &out.filter}, {"ofmap", &out.ofmap}};
  for (const auto& [key, size] : buffers) {
    if (!sram.required(key, *size, diags)) continue;
    const YamlReader node = sram.at(key);
    // A double-buffered SRAM needs two halves of at least one word each.
    const std::uint64_t minimum = spec.word_size.value * (out.double_buffered ? 2 : 1);
    if (size->value == 0)
      diags.error(node.location(), node.path(), "must be non-zero",
                  "use a size such as \"64 KiB\"");
    else if (spec.word_size.value > 0 && size->value % spec.word_size.value != 0)
      diags.error(node.location(), node.path(),
                  fmt::format("{} is not a whole number of {}-byte words", to_string(*size),
                              spec.word_size.value));
    else if (size->value < minimum)
      diags.error(node.location(), node.path(),
                  fmt::format("{} is smaller than the {} bytes a double-buffered SRAM needs",
                              to_string(*size), minimum));
  }
  sram.reject_unknown_keys(diags);
}

void read_dram(const YamlReader& dram, DramSpec& out, Diagnostics& diags) {
  if (!dram.expect_map(diags)) return;
  if (!dram.has("bandwidth")) {
    diags.error(dram.location(), dram.path(), "missing required key 'bandwidth'",
                "give a figure such as \"25.6 GB/s\" or \"16 B/cycle\", or \"unlimited\" for "
                "stall-free compute cycles");
  } else {
    const YamlReader bw = dram.at("bandwidth");
    if (bw.is_scalar() && bw.node().Scalar() == "unlimited") {
      out.bandwidth.reset();
    } else {
      Bandwidth value;
      if (bw.read(value, diags)) {
        const bool zero = std::visit([](auto v) { return v.value <= 0.0; }, value);
        if (zero)
          diags.error(bw.location(), bw.path(), "must be above zero",
                      "write \"unlimited\" for no bandwidth limit");
        else
          out.bandwidth = value;
      }
    }
  }
  dram.reject_unknown_keys(diags);
}

}  // namespace

std::string_view to_string(Dataflow dataflow) {
  for (const auto& [name, value] : kDataflows)
    if (value == dataflow) return name;
  return "?";
}

std::string_view short_name(Dataflow dataflow) {
  switch (dataflow) {
    case Dataflow::OutputStationary: return "os";
    case Dataflow::WeightStationary: return "ws";
    case Dataflow::InputStationary: return "is";
  }
  return "?";
}

std::optional<ArchSpec> read_arch_spec(const YamlReader& root, Diagnostics& diags) {
  const std::size_t errors_before = diags.error_count();
  if (!root.expect_map(diags)) return std::nullopt;
  ArchSpec spec;
  std::uint32_t schema_version = 0;
  if (root.required("schema_version", schema_version, diags) &&
      schema_version != kSchemaVersion)
    diags.error(root.at("schema_version").location(), "schema_version",
                fmt::format("unsupported schema_version {}", schema_version),
                fmt::format("this coda reads schema_version {}", kSchemaVersion));
  root.required("name", spec.name, diags);
  root.optional("description", spec.description, diags);
  root.required("clock", spec.clock, diags);
  if (root.optional("word_size", spec.word_size, diags) && spec.word_size.value == 0)
    diags.error(root.at("word_size").location(), "word_size", "must be at least 1 B",
                "SCALE-Sim's arrays use 1 B words; fp16 is 2 B");
  if (root.has("array")) read_array(root.at("array"), spec, diags);
  else diags.error(root.location(), "", "missing required key 'array'",
                   "add array: {rows: 32, cols: 32, dataflow: output_stationary}");
  if (root.has("sram")) {
    const YamlReader sram = root.at("sram");
    if (sram.is_map()) sram.optional("double_buffered", spec.sram.double_buffered, diags);
    read_sram(sram, spec, spec.sram, diags);
  } else {
    diags.error(root.location(), "", "missing required key 'sram'",
                "add sram: {ifmap: 64 KiB, filter: 64 KiB, ofmap: 64 KiB}");
  }
  if (root.has("dram")) read_dram(root.at("dram"), spec.dram, diags);
  else diags.error(root.location(), "", "missing required key 'dram'",
                   "add dram: {bandwidth: 16 B/cycle} or dram: {bandwidth: unlimited}");
  root.optional("sources", spec.sources, diags);
  root.reject_unknown_keys(diags);
  if (diags.error_count() != errors_before) return std::nullopt;
  return spec;
}

std::optional<LoadedArch> load_arch(const std::filesystem::path& file, Diagnostics& diags) {
  const auto doc = YamlDocument::load(file, diags);
  if (!doc) return std::nullopt;
  auto spec = read_arch_spec(doc->root(), diags);
  if (!spec) return std::nullopt;
  return LoadedArch{std::move(*spec), file.string(), doc->content_hash()};
}

}  // namespace coda::arch
