#include "cli/workload_command.h"

#include <optional>
#include <ostream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/options.h"
#include "core/diagnostics.h"
#include "core/text.h"
#include "workloads/passes/pass_registry.h"
#include "workloads/summary.h"
#include "workloads/trace.h"

namespace coda::cli {
namespace {

// The graph the arguments name (workloads/source.h), with what loading it said printed.
std::optional<workload::Graph> load(const WorkloadArgs& args, Diagnostics& diags,
                                    std::ostream& out) {
  const auto source = workload_source(args.source, diags);
  if (!source) return std::nullopt;
  auto loaded = workload::load_source(*source, diags);
  if (!loaded) return std::nullopt;
  for (const std::string& note : loaded->notes) out << note << "\n";
  return std::move(loaded->graph);
}

}  // namespace

CLI::App* add_workload_command(CLI::App& app, WorkloadArgs& args) {
  CLI::App* cmd = app.add_subcommand(
      "workload", "Load a workload, run graph passes on it, print its summary (ops, parameters, "
                  "MACs, FLOPs, bytes per op kind) and write it as JSON");
  CLI::Option* file =
      cmd->add_option("workload", args.source.file,
                      "Workload file: a coda layer list (.yaml), a SCALE-Sim topology (.csv), a "
                      "coda trace (.json) or an ONNX model (.onnx)")
          ->check(CLI::ExistingFile);
  add_workload_source_options(*cmd, args.source, file);
  cmd->add_option("--passes", args.passes,
                  "Graph passes to run, in order, comma-separated (see --list-passes)");
  cmd->add_flag("--list-passes", args.list_passes, "List the graph passes and exit");
  cmd->add_flag("--summary", args.summary, "Print the summary table (the default)");
  cmd->add_option("--json", args.json_out, "Write the summary and pass reports to this file");
  cmd->add_option("--export-trace", args.trace_out,
                  "Write the graph, after the passes, as a coda trace (docs/trace_format.md)");
  return cmd;
}

int run_workload_command(const WorkloadArgs& args, std::ostream& out, std::ostream& err) {
  workload::PassRegistry registry;
  workload::register_builtin_passes(registry);
  if (args.list_passes) {
    for (const auto& info : registry.list())
      out << fmt::format("{:<20} {}\n", info.name, info.description);
    out << "\nAt ONNX import (not passes; on unless --no-fuse-functions): RMSNorm, LayerNorm, "
           "GELU and SiLU\nwritten out as their pieces are imported as one op each "
           "(docs/cnn_onnx.md)\n";
    return 0;
  }
  if (!names_a_source(args.source)) {
    err << "error: workload: name a workload file, --llm MODEL or --cnn NAME (or use "
           "--list-passes)\n";
    return 2;
  }
  Diagnostics diags;
  const auto pipeline = registry.parse(args.passes, diags);
  if (!pipeline) {
    err << diags.format_all();
    return 2;
  }
  auto graph = load(args, diags, out);
  if (!graph) {
    err << diags.format_all() << "no summary was made.\n";
    return 1;
  }
  if (!diags.all().empty()) err << diags.format_all();

  const workload::PipelineResult passes = pipeline->run(*graph);
  for (const auto& report : passes.reports)
    for (const auto& note : report.notes) out << fmt::format("{}: {}\n", report.pass, note);
  if (!passes.ok()) {
    for (const auto& problem : passes.problems) err << "error: " << problem << "\n";
    return 1;
  }

  const workload::WorkloadSummary summary = workload::summarize(*graph);
  const bool print_summary = args.summary || (args.json_out.empty() && args.trace_out.empty());
  if (print_summary) out << workload::format_summary(summary);
  if (!args.json_out.empty()) {
    nlohmann::ordered_json reports = nlohmann::ordered_json::array();
    for (const auto& report : passes.reports)
      reports.push_back(
          {{"pass", report.pass}, {"changed", report.changed}, {"notes", report.notes}});
    const nlohmann::ordered_json json = {{"schema_version", 1},
                                         {"workload", graph->name},
                                         {"passes", pipeline->describe()},
                                         {"pass_reports", std::move(reports)},
                                         {"summary", summary}};
    if (!write_file(args.json_out, dump_json(json, 2) + "\n", err)) return 1;
  }
  if (!args.trace_out.empty() && !write_file(args.trace_out, workload::write_trace(*graph), err))
    return 1;
  return 0;
}

}  // namespace coda::cli
