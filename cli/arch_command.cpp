#include "cli/arch_command.h"

#include <ostream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

namespace coda::cli {
namespace {

// "989.4 T" style: operations or bytes per second with an SI prefix.
std::string si(double value) {
  constexpr std::pair<double, std::string_view> kPrefixes[] = {
      {1e15, "P"}, {1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}};
  for (const auto& [factor, prefix] : kPrefixes)
    if (value >= factor) return fmt::format("{:.4g} {}", value / factor, prefix);
  return fmt::format("{:.4g} ", value);
}

std::string optional_rate(const std::optional<double>& bytes_per_second) {
  return bytes_per_second ? si(*bytes_per_second) + "B/s" : "no limit";
}

}  // namespace

std::string format_arch_summary(const arch::HardwareModel& hw) {
  const arch::ArchSpec& spec = hw.spec();
  std::string out = fmt::format("{}{}\n", spec.name,
                                spec.description.empty() ? "" : ": " + spec.description);
  out += fmt::format("  {}; clock {}\n", arch::describe_compute(spec), to_string(hw.clock()));
  for (const arch::ComputeUnitSpec& unit : spec.compute)
    if (unit.array)
      out += fmt::format("  {}: accumulation {}, weight preload {}\n", unit.name,
                         to_string(unit.array->accumulation),
                         to_string(unit.array->weight_preload));
    else if (unit.tensor_core && unit.tensor_core->global_load_latency)
      out += fmt::format("  {}: global load latency {}\n", unit.name,
                         to_string(*unit.tensor_core->global_load_latency));

  out += "\nPeak (dense, whole chip)\n";
  const std::vector<DataType> precisions = hw.matrix_precisions();
  for (const DataType type : precisions)
    out += fmt::format("  matrix {:<9} {:>12}OP/s\n", to_string(type),
                       si(hw.peak_ops_per_second(type)));
  for (const auto& [name, type] : data_type_names())
    if (const double ops = hw.peak_vector_ops_per_second(type); ops > 0)
      out += fmt::format("  vector {:<9} {:>12}OP/s\n", name, si(ops));
  if (precisions.empty() && !hw.vector_unit()) out += "  (no compute unit)\n";

  // Ridge points at the precision with the highest peak.
  std::optional<DataType> ridge_type;
  for (const DataType type : precisions)
    if (!ridge_type || hw.peak_ops_per_second(type) > hw.peak_ops_per_second(*ridge_type))
      ridge_type = type;
  out += fmt::format("\nMemory (innermost first; bandwidth over all instances)\n");
  out += fmt::format("  {:<14} {:>12} {:>9} {:>14} {:>14}  {:<24} {}\n", "level", "capacity",
                     "instances", "read", "write", "holds",
                     ridge_type ? fmt::format("ridge ({} op/B)", to_string(*ridge_type))
                                : std::string("ridge"));
  for (const arch::LevelSummary& level : hw.levels()) {
    const auto ridge = ridge_type ? hw.ridge_point(*ridge_type, level) : std::nullopt;
    out += fmt::format("  {:<14} {:>12} {:>9} {:>14} {:>14}  {:<24} {}\n", level.name,
                       level.capacity.value ? to_string(level.capacity) : std::string("-"),
                       level.instances, optional_rate(level.read_bytes_per_second),
                       optional_rate(level.write_bytes_per_second),
                       arch::holds_to_string(level.holds),
                       ridge ? fmt::format("{:.1f}", *ridge) : std::string("-"));
  }
  if (spec.dram.technology != arch::DramTechnology::Unspecified)
    out += fmt::format("  dram technology {}, {} channel{}\n", to_string(spec.dram.technology),
                       spec.dram.channels, spec.dram.channels == 1 ? "" : "s");
  out += fmt::format("  dram model {}{}\n", to_string(spec.dram.model),
                     spec.dram.capacity ? ", capacity " + to_string(*spec.dram.capacity)
                                        : std::string());
  if (spec.noc)
    out += fmt::format("  on-chip network: {} per link, {} hops on average\n",
                       to_string(spec.noc->bandwidth), spec.noc->average_hops);
  if (spec.interconnect) {
    const arch::InterconnectSpec& ic = *spec.interconnect;
    out += fmt::format("\nLinks: {} chips, {}, {}B/s per chip per direction over {} link{}, "
                       "latency {}\n",
                       ic.chips, to_string(ic.topology), si(ic.bandwidth.value),
                       ic.links_per_chip, ic.links_per_chip == 1 ? "" : "s",
                       to_string(ic.latency));
  }
  if (spec.host_link)
    out +=
        fmt::format("Host link: {}B/s per direction, {} a copy issued\n",
                    si(spec.host_link->bandwidth.value), to_string(spec.host_link->copy_overhead));

  const arch::EnergyTable& energy = hw.energy();
  out += fmt::format("\nEnergy ({} nm)\n", energy.technology_nm);
  for (const auto& [type, joules] : energy.mac)
    out += fmt::format("  MAC {:<10} {:>10}\n", to_string(type), to_string(joules));
  out += fmt::format("  vector op      {:>10}\n", to_string(energy.vector_op));
  for (const auto& [level, joules] : energy.per_byte)
    out += fmt::format("  {:<14} {:>10} per byte\n", level, to_string(joules));
  out += fmt::format("  static power   {:>10}", to_string(energy.static_power));
  out += energy.dram_background.value > 0
             ? fmt::format(" (of which dram background {})\n", to_string(energy.dram_background))
             : "\n";
  for (const std::string& note : energy.notes) out += fmt::format("    {}\n", note);

  const arch::AreaTable& area = hw.area();
  out += fmt::format("\nArea: MAC units {}, SRAM {}, total {}", to_string(area.mac_units),
                     to_string(area.sram), to_string(area.total));
  out += area.die ? fmt::format(" (published die {})\n", to_string(*area.die)) : "\n";
  for (const std::string& note : area.notes) out += fmt::format("    {}\n", note);

  if (spec.power.budget) {
    out += fmt::format("\nPower budget {}{}", to_string(*spec.power.budget),
                       spec.power.mode.empty() ? "" : fmt::format(" ({})", spec.power.mode));
    if (ridge_type)
      out += fmt::format(": at most {:.3g} TOPS/W at peak {}",
                         hw.peak_ops_per_second(*ridge_type) / 1e12 / spec.power.budget->value,
                         to_string(*ridge_type));
    out += "\n";
  }
  if (ridge_type) {
    const double tops = hw.peak_ops_per_second(*ridge_type) / 1e12;
    if (area.die)
      out += fmt::format("Peak {} per mm2: {:.3g} TOPS/mm2 of the published die\n",
                         to_string(*ridge_type), tops / area.die->value);
    if (area.total.value > 0)
      out += fmt::format("Peak {} per mm2: {:.3g} TOPS/mm2 of the modelled MAC and SRAM area\n",
                         to_string(*ridge_type), tops / area.total.value);
  }
  return out;
}

CLI::App* add_arch_command(CLI::App& app, ArchArgs& args) {
  CLI::App* cmd = app.add_subcommand(
      "arch", "Load architectures and print their derived peaks per precision, memory "
              "hierarchy with bandwidths and ridge points, links, energy table and area");
  cmd->add_option("files", args.files, "Architecture configs (YAML)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_flag("--summary", args.summary, "Print the summary (the default)");
  return cmd;
}

int run_arch_command(const ArchArgs& args, std::ostream& out, std::ostream& err) {
  int status = 0;
  for (std::size_t i = 0; i < args.files.size(); ++i) {
    Diagnostics diags;
    const auto loaded = arch::load_arch(args.files[i], diags);
    if (!loaded) {
      err << diags.format_all();
      status = 1;
      continue;
    }
    if (i > 0) out << "\n";
    out << format_arch_summary(arch::HardwareModel(loaded->spec));
  }
  return status;
}

}  // namespace coda::cli
