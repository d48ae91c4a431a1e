#include "reports/layer_table.h"

#include <algorithm>
#include <array>

#include <fmt/format.h>

namespace coda::reports {
namespace {

std::uint64_t mapping_value(const results::OpResult& op, std::string_view key) {
  for (const auto& [name, value] : op.mapping)
    if (name == key) return value;
  return 0;
}

// "12.3M" style compaction keeps byte columns narrow; exact values are in layers.csv/run.json.
std::string compact(std::uint64_t v) {
  if (v >= 10'000'000'000ULL) return fmt::format("{:.1f}G", static_cast<double>(v) / 1e9);
  if (v >= 10'000'000ULL) return fmt::format("{:.1f}M", static_cast<double>(v) / 1e6);
  if (v >= 100'000ULL) return fmt::format("{:.1f}k", static_cast<double>(v) / 1e3);
  return fmt::format("{}", v);
}

std::string csv_field(std::string_view text) {
  if (text.find_first_of(",\"\n") == std::string_view::npos) return std::string(text);
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

}  // namespace

std::string format_layer_table(const results::RunResult& run) {
  std::size_t name_width = 5;
  for (const auto& op : run.ops) name_width = std::max(name_width, op.name.size());
  constexpr std::string_view kHeader =
      "{:<{}}  {:>7} {:>6} {:>7} {:>6}  {:>12} {:>11} {:>12}  {:>6} {:>6}  {:>8} {:>8} {:>8} "
      "{:>8}  {}\n";
  std::string out = fmt::format(kHeader, "layer", name_width, "Sr", "Sc", "T", "folds",
                                "compute_cyc", "stall_cyc", "total_cyc", "util%", "map%",
                                "sram_rd", "sram_wr", "dram_rd", "dram_wr", "bound");
  for (const auto& op : run.ops) {
    const std::uint64_t folds = mapping_value(op, "row_folds") * mapping_value(op, "col_folds") *
                                std::max<std::uint64_t>(1, mapping_value(op, "groups"));
    out += fmt::format(
        "{:<{}}  {:>7} {:>6} {:>7} {:>6}  {:>12} {:>11} {:>12}  {:>6.2f} {:>6.2f}  {:>8} {:>8} "
        "{:>8} {:>8}  {}\n",
        op.name, name_width, mapping_value(op, "Sr"), mapping_value(op, "Sc"),
        mapping_value(op, "T"), folds, op.cost.compute_cycles.value, op.cost.stall_cycles.value,
        op.cost.cycles.value, 100.0 * op.compute_utilization, 100.0 * op.mapping_efficiency,
        compact(op.cost.sram_reads.value), compact(op.cost.sram_writes.value),
        compact(op.cost.dram_reads.value), compact(op.cost.dram_writes.value),
        results::to_string(op.bound));
  }
  const auto& t = run.total;
  out += fmt::format(
      "{:<{}}  {:>7} {:>6} {:>7} {:>6}  {:>12} {:>11} {:>12}  {:>6.2f} {:>6}  {:>8} {:>8} {:>8} "
      "{:>8}\n",
      "total", name_width, "", "", "", "", t.compute_cycles.value, t.stall_cycles.value,
      t.cycles.value, 100.0 * results::compute_utilization(run), "", compact(t.sram_reads.value),
      compact(t.sram_writes.value), compact(t.dram_reads.value), compact(t.dram_writes.value));
  return out;
}

std::string format_layers_csv(const results::RunResult& run) {
  std::string out = "layer";
  const results::OpResult* first = run.ops.empty() ? nullptr : &run.ops.front();
  if (first != nullptr)
    for (const auto& entry : first->mapping) out += "," + entry.first;
  out += ",macs,compute_cycles,stall_cycles,cycles,compute_utilization,mapping_efficiency,bound,"
         "arithmetic_intensity";
  if (first != nullptr)
    for (const auto& t : first->traffic)
      out += fmt::format(",{0}_{1}_read_bytes,{0}_{1}_write_bytes", t.level, t.tensor);
  out += "\n";
  for (const auto& op : run.ops) {
    out += csv_field(op.name);
    for (const auto& entry : op.mapping) out += fmt::format(",{}", entry.second);
    out += fmt::format(",{},{},{},{},{:.6f},{:.6f},{},{:.6f}", op.cost.macs,
                       op.cost.compute_cycles.value, op.cost.stall_cycles.value,
                       op.cost.cycles.value, op.compute_utilization, op.mapping_efficiency,
                       results::to_string(op.bound), op.arithmetic_intensity);
    for (const auto& t : op.traffic) out += fmt::format(",{},{}", t.reads.value, t.writes.value);
    out += "\n";
  }
  return out;
}

}  // namespace coda::reports
