#include "cli/map_command.h"

#include <chrono>
#include <ostream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "arch/arch_spec.h"
#include "cli/options.h"
#include "mapper/schedule.h"
#include "mapper/search.h"
#include "workloads/importers.h"

namespace coda::cli {
namespace {

std::string cost_line(const mapper::MappingCost& c, double clock_hz) {
  // A GPU's grid larger than its SMs runs in waves: its PEs are counted over all of them.
  const std::string waves = c.rounds > 1 ? fmt::format(" over {:.0f} waves", c.rounds) : "";
  return fmt::format("{:.0f} cycles ({:.4g} us), {:.4g} uJ, EDP {:.4g} pJ*cycles, utilization "
                     "{:.1f}%, {} PEs used{}",
                     c.cycles, c.cycles / clock_hz * 1e6, c.energy_pj * 1e-6, c.edp,
                     100.0 * c.utilization, c.used_pes, waves);
}

void print_outcome(const mapper::SearchOutcome& o, const workload::Op& op,
                   const mapper::Hierarchy& h, std::ostream& out) {
  out << fmt::format("{}: {} search, {} points evaluated, {} valid, stopped: {}\n", op.name,
                     o.strategy, o.evaluated, o.valid, o.stopped);
  if (!o.found()) {
    out << "no valid mapping found\n";
  } else {
    const mapper::Candidate& best = o.best.front();
    out << "\nbest mapping (outermost level first):\n"
        << mapper::to_string(best.mapping, op.space, h) << "\n"
        << "cost: " << cost_line(best.cost, h.clock_hz) << "\n";
    if (best.cost.bottleneck == mapper::kComputeBound)
      out << "bound by compute\n";
    else
      out << fmt::format("bound by the bandwidth of '{}'\n", h.levels[best.cost.bottleneck].name);
    if (o.best.size() > 1) {
      out << "\nrunners-up:\n";
      for (std::size_t i = 1; i < o.best.size(); ++i)
        out << fmt::format("  #{}: score {:.6g} (+{:.2f}%): {}\n", i + 1, o.best[i].score,
                           100.0 * (o.best[i].score / best.score - 1.0),
                           cost_line(o.best[i].cost, h.clock_hz));
    }
  }
  out << "\nrejected:";
  bool any = false;
  for (std::size_t r = 1; r < o.rejected.size(); ++r) {
    if (o.rejected[r] == 0) continue;
    out << fmt::format(" {} {}", to_string(static_cast<mapper::Infeasible>(r)), o.rejected[r]);
    any = true;
  }
  if (o.over_power > 0) {
    out << fmt::format(" over_power {}", o.over_power);
    any = true;
  }
  out << (any ? "\n" : " none\n");
}

}  // namespace

CLI::App* add_map_command(CLI::App& app, MapArgs& args) {
  CLI::App* cmd = app.add_subcommand(
      "map", "Map a workload's contractions onto an architecture with the loop-nest mapper; "
             "with --op, print one op's best loop nest, its cost, the runners-up and the "
             "rejections by reason");
  cmd->add_option("--arch", args.arch, "Architecture config (YAML)")
      ->required()
      ->check(CLI::ExistingFile);
  CLI::Option* file =
      cmd->add_option("--workload", args.source.file,
                      "Workload file: layer list (.yaml), SCALE-Sim CSV, trace (.json) or ONNX "
                      "model (.onnx); or name an LLM (--llm) or a CNN of the zoo (--cnn) instead")
          ->check(CLI::ExistingFile);
  add_workload_source_options(*cmd, args.source, file);
  cmd->add_option("--op", args.op, "The op to map and print in full");
  add_search_options(*cmd, args.search);
  cmd->add_option("--precision", args.precision, "Map every op at this precision");
  return cmd;
}

int run_map_command(const MapArgs& args, std::ostream& out, std::ostream& err) {
  const auto search = read_search(args.search, err);
  if (!search) return 2;
  std::optional<DataType> precision;
  if (!read_precision(args.precision, precision, err)) return 2;
  Diagnostics diags;
  if (!names_a_source(args.source)) {
    err << "error: map: name a workload: --workload FILE, --llm MODEL or --cnn NAME\n";
    return 2;
  }
  const auto source = workload_source(args.source, diags);
  if (!source) {
    err << diags.format_all();
    return 2;
  }
  const auto arch = arch::load_arch(args.arch, diags);
  auto loaded = workload::load_source(*source, diags);
  if (!arch || !loaded) {
    err << diags.format_all();
    return 1;
  }
  workload::Graph* graph = &loaded->graph;
  if (precision)
    for (workload::Op& op : graph->ops)
      for (workload::TensorAccess& access : op.space.accesses) access.dtype = *precision;
  const arch::HardwareModel hw(arch->spec);
  const mapper::SearchGoal& goal = search->goal;
  const mapper::SearchSettings& settings = search->settings;

  if (!args.op.empty()) {
    const workload::Op* op = nullptr;
    for (const workload::Op& candidate : graph->ops)
      if (candidate.name == args.op) op = &candidate;
    if (op == nullptr || op->kind != workload::OpKind::Contraction) {
      std::string names;
      for (const workload::Op& candidate : graph->ops)
        if (candidate.kind == workload::OpKind::Contraction)
          names += (names.empty() ? "" : ", ") + candidate.name;
      err << fmt::format("error: --op: '{}' is not a contraction of {}; its contractions: {}\n",
                         args.op, workload::describe(*source), names);
      return 2;
    }
    const DataType op_type = mapper::op_precision(*op);
    const mapper::Hierarchy h =
        mapper::make_hierarchy(hw, op_type, mapper::gemm_operands_aligned(*op, op_type));
    std::string why;
    const auto outcome = mapper::map_op(op->space, h, goal, settings, why);
    if (!outcome) {
      err << fmt::format("error: op '{}' cannot be mapped on '{}': {}\n", op->name, hw.name(), why);
      return 1;
    }
    print_outcome(*outcome, *op, h, out);
    return outcome->found() ? 0 : 1;
  }

  const auto start = std::chrono::steady_clock::now();
  mapper::MappingCache cache;
  const auto mapped = mapper::map_graph(*graph, hw, goal, settings, cache);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::size_t width = 5;
  for (const auto& m : mapped) width = std::max(width, m.op.size());
  out << fmt::format("{:<{}}  {:>6}  {:>14} {:>12} {:>8} {:>10} {:>8}\n", "op", width, "cached",
                     "cycles", "energy_uJ", "util%", "evaluated", "valid");
  double cycles = 0, energy = 0;
  int failed = 0;
  for (const auto& m : mapped) {
    if (!m.outcome || !m.outcome->found()) {
      out << fmt::format("{:<{}}  {}\n", m.op, width,
                         m.outcome ? std::string("no valid mapping") : "not mapped: " + m.why);
      ++failed;
      continue;
    }
    const mapper::MappingCost& c = m.outcome->best.front().cost;
    cycles += c.cycles;
    energy += c.energy_pj;
    out << fmt::format("{:<{}}  {:>6}  {:>14.0f} {:>12.4g} {:>8.1f} {:>10} {:>8}\n", m.op, width,
                       m.cached ? "yes" : "", c.cycles, c.energy_pj * 1e-6,
                       100.0 * c.utilization, m.outcome->evaluated, m.outcome->valid);
  }
  out << fmt::format("{} contractions, {} distinct shapes mapped, {} from the cache, in {:.3f} s; "
                     "total {:.0f} cycles ({:.4g} ms at {}), {:.4g} mJ\n",
                     mapped.size(), cache.size(), cache.hits(), seconds, cycles,
                     cycles / hw.clock().value * 1e3, to_string(hw.clock()), energy * 1e-9);
  return failed == 0 ? 0 : 1;
}

}  // namespace coda::cli
