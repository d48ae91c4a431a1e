#include "reports/layer_table.h"

#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "core/csv.h"

namespace coda::reports {
namespace {

// "12.3M" style compaction keeps byte columns narrow; exact values are in layers.csv/run.json.
std::string compact(std::uint64_t v) {
  if (v >= 10'000'000'000ULL) return fmt::format("{:.1f}G", static_cast<double>(v) / 1e9);
  if (v >= 10'000'000ULL) return fmt::format("{:.1f}M", static_cast<double>(v) / 1e6);
  if (v >= 100'000ULL) return fmt::format("{:.1f}k", static_cast<double>(v) / 1e3);
  return fmt::format("{}", v);
}

std::string mapping_text(const results::OpResult& op, std::string_view separator) {
  std::string out;
  for (const auto& [name, value] : op.mapping)
    out += fmt::format("{}{}={}", out.empty() ? "" : separator, name, value);
  return out;
}

std::string general_table(const results::RunResult& run) {
  std::size_t name_width = 5, mapping_width = 7;
  for (const auto& op : run.ops) {
    name_width = std::max(name_width, op.name.size());
    mapping_width = std::max(mapping_width, mapping_text(op, " ").size());
  }
  const double clock = run.clock.value;
  const auto micros = [&](Cycles c) { return static_cast<double>(c.value) / clock * 1e6; };
  constexpr std::string_view kRow =
      "{:<{}}  {:<11} {:<{}}  {:>12} {:>12} {:>10}  {:>6}  {:>8} {:>8} {:>8} {:>8}  {:>10}  {}\n";
  std::string out = fmt::format(kRow, "layer", name_width, "unit", "mapping", mapping_width,
                                "compute_cyc", "total_cyc", "time_us", "util%", "chip_rd",
                                "chip_wr", "dram_rd", "dram_wr", "energy_uJ", "bound");
  for (const auto& op : run.ops)
    out += fmt::format(kRow, op.name, name_width, results::to_string(op.unit),
                       mapping_text(op, " "), mapping_width, op.cost.compute_cycles.value,
                       op.cost.cycles.value, fmt::format("{:.3f}", micros(op.cost.cycles)),
                       fmt::format("{:.2f}", 100.0 * op.compute_utilization),
                       compact(op.cost.sram_reads.value), compact(op.cost.sram_writes.value),
                       compact(op.cost.dram_reads.value), compact(op.cost.dram_writes.value),
                       fmt::format("{:.3f}", op.cost.energy.value * 1e6),
                       results::to_string(op.bound));
  const auto& t = run.total;
  out += fmt::format(kRow, "total", name_width, "", "", mapping_width, t.compute_cycles.value,
                     t.cycles.value, fmt::format("{:.3f}", micros(t.cycles)),
                     fmt::format("{:.2f}", 100.0 * results::compute_utilization(run)),
                     compact(t.sram_reads.value), compact(t.sram_writes.value),
                     compact(t.dram_reads.value), compact(t.dram_writes.value),
                     fmt::format("{:.3f}", t.energy.value * 1e6), "");
  return out;
}

std::string general_csv(const results::RunResult& run) {
  std::string out =
      "layer,unit,mapping,macs,compute_cycles,stall_cycles,cycles,seconds,compute_utilization,"
      "mapping_efficiency,bound,arithmetic_intensity,chip_read_bytes,chip_write_bytes,"
      "dram_read_bytes,dram_write_bytes,energy_joules\n";
  for (const auto& op : run.ops) {
    const results::Cost& c = op.cost;
    out +=
        fmt::format("{},{},{},{},{},{},{},{:.9g},{:.6f},{:.6f},{},{:.6f},{},{},{},{},{:.9g}\n",
                    csv_cell(op.name), results::to_string(op.unit), csv_cell(mapping_text(op, ";")),
                    c.macs, c.compute_cycles.value, c.stall_cycles.value, c.cycles.value,
                    static_cast<double>(c.cycles.value) / run.clock.value, op.compute_utilization,
                    op.mapping_efficiency, results::to_string(op.bound), op.arithmetic_intensity,
                    c.sram_reads.value, c.sram_writes.value, c.dram_reads.value,
                    c.dram_writes.value, c.energy.value);
  }
  return out;
}

}  // namespace

bool all_systolic(const results::RunResult& run) {
  return std::all_of(run.ops.begin(), run.ops.end(), [](const results::OpResult& op) {
    return op.unit == results::OpUnit::Systolic && op.loop_nest.empty();
  });
}

std::string format_layer_table(const results::RunResult& run) {
  if (!all_systolic(run)) return general_table(run);
  std::size_t name_width = 5;
  for (const auto& op : run.ops) name_width = std::max(name_width, op.name.size());
  constexpr std::string_view kHeader =
      "{:<{}}  {:>7} {:>6} {:>7} {:>6}  {:>12} {:>11} {:>12}  {:>6} {:>6}  {:>8} {:>8} {:>8} "
      "{:>8}  {}\n";
  std::string out = fmt::format(kHeader, "layer", name_width, "Sr", "Sc", "T", "folds",
                                "compute_cyc", "stall_cyc", "total_cyc", "util%", "map%",
                                "sram_rd", "sram_wr", "dram_rd", "dram_wr", "bound");
  for (const auto& op : run.ops) {
    // Folds of every pack of groups (ceil(groups / packed) of them, one after another; a last
    // pack of fewer groups may fold fewer times).
    const std::uint64_t groups = std::max<std::uint64_t>(1, mapping_value(op, "groups"));
    const std::uint64_t packed = std::max<std::uint64_t>(1, mapping_value(op, "packed"));
    const std::uint64_t folds = mapping_value(op, "row_folds") * mapping_value(op, "col_folds") *
                                ((groups + packed - 1) / packed);
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
  if (!all_systolic(run)) return general_csv(run);
  std::string out = "layer";
  const results::OpResult* first = run.ops.empty() ? nullptr : &run.ops.front();
  if (first != nullptr)
    for (const auto& entry : first->mapping) out += "," + entry.first;
  out += ",macs,compute_cycles,stall_cycles,cycles,compute_utilization,mapping_efficiency,bound,"
         "arithmetic_intensity";
  if (first != nullptr)
    for (const auto& t : first->traffic)
      out += fmt::format(",{0}_{1}_read_bytes,{0}_{1}_write_bytes", t.level, t.tensor);
  out += ",energy_joules\n";
  for (const auto& op : run.ops) {
    out += csv_cell(op.name);
    for (const auto& entry : op.mapping) out += fmt::format(",{}", entry.second);
    out += fmt::format(",{},{},{},{},{:.6f},{:.6f},{},{:.6f}", op.cost.macs,
                       op.cost.compute_cycles.value, op.cost.stall_cycles.value,
                       op.cost.cycles.value, op.compute_utilization, op.mapping_efficiency,
                       results::to_string(op.bound), op.arithmetic_intensity);
    for (const auto& t : op.traffic) out += fmt::format(",{},{}", t.reads.value, t.writes.value);
    out += fmt::format(",{:.9g}\n", op.cost.energy.value);
  }
  return out;
}

}  // namespace coda::reports
