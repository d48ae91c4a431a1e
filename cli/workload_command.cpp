#include "cli/workload_command.h"

#include <charconv>
#include <filesystem>
#include <fstream>
#include <optional>
#include <ostream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/options.h"
#include "core/diagnostics.h"
#include "core/text.h"
#include "workloads/cnn/cnn_zoo.h"
#include "workloads/importers.h"
#include "workloads/llm/hf_config.h"
#include "workloads/llm/llm_builder.h"
#if CODA_WITH_ONNX
#include "workloads/onnx/onnx_importer.h"
#endif
#include "workloads/passes/pass_registry.h"
#include "workloads/summary.h"
#include "workloads/trace.h"

namespace coda::cli {
namespace {

std::optional<workload::DataType> dtype_arg(const WorkloadArgs& args, Diagnostics& diags) {
  const auto dtype = workload::parse_data_type(args.dtype);
  if (!dtype)
    diags.error({}, "--dtype", fmt::format("unknown element type '{}'", args.dtype),
                "expected one of: " + data_type_list());
  return dtype;
}

std::optional<workload::Graph> load_llm(const WorkloadArgs& args, Diagnostics& diags,
                                        std::ostream& out) {
  namespace llm = workload::llm;
  const std::filesystem::path path(args.llm);
  auto config = path.extension() == ".json" ? llm::load_hf_config(path, diags)
                                            : llm::load_llm_config(path, diags);
  if (!config) return std::nullopt;
  if (!args.dtype.empty()) {
    const auto dtype = dtype_arg(args, diags);
    if (!dtype) return std::nullopt;
    config->dtype = *dtype;
  }
  llm::LlmPhase phase{llm::PhaseKind::Prefill, args.batch, args.seq, args.recompute};
  if (args.phase == "decode") phase.kind = llm::PhaseKind::Decode;
  else if (args.phase == "training") phase.kind = llm::PhaseKind::Training;
  else if (args.phase != "prefill") {
    diags.error({}, "--phase", fmt::format("unknown phase '{}'", args.phase),
                "expected one of: prefill, decode, training");
    return std::nullopt;
  }
  const llm::Parallelism par{args.tp, args.pp, args.dp, args.stage, args.micro_batches,
                             args.sequence_parallel};
  auto graph = llm::try_build_llm(*config, phase, par, diags);
  if (!graph) return std::nullopt;
  const llm::LlmHeadline head = llm::llm_headline(*config, args.seq);
  const llm::LlmStepStats stats = llm::llm_step_stats(*config, phase, par);
  out << fmt::format(
      "{}: {} parameters ({} active per token), KV cache {} per token, {} for this step "
      "({} per rank); {} phase, batch {}, sequence {}, TP {} PP {} (stage {}, layers {}..{}, "
      "bubble {:.1f}%) DP {}\n",
      config->name, head.parameters, head.active_parameters,
      to_string(head.kv_cache_bytes_per_token), to_string(stats.kv_cache_bytes),
      to_string(stats.kv_cache_bytes_per_rank), llm::to_string(phase.kind), phase.batch,
      phase.seq_len, par.tp, par.pp, par.stage, stats.first_layer,
      stats.first_layer + stats.stage_layers - 1, 100.0 * stats.pipeline_bubble_fraction,
      par.dp);
  return graph;
}

std::optional<workload::Graph> load_cnn(const WorkloadArgs& args, Diagnostics& diags) {
  workload::cnn::CnnOptions options;
  options.batch = args.batch;
  options.height = options.width = args.image;
  if (!args.dtype.empty()) {
    const auto dtype = dtype_arg(args, diags);
    if (!dtype) return std::nullopt;
    options.dtype = *dtype;
  }
  return workload::cnn::build_cnn(args.cnn, options, diags);
}

#if CODA_WITH_ONNX
std::optional<workload::Graph> load_onnx(const WorkloadArgs& args, Diagnostics& diags,
                                         std::ostream& out) {
  workload::onnx::OnnxOptions options;
  options.skip_unsupported = args.skip_unsupported;
  for (const std::string& binding : args.bind) {
    const auto eq = binding.find('=');
    std::uint64_t value = 0;
    const char* first = binding.data() + (eq == std::string::npos ? 0 : eq + 1);
    const char* last = binding.data() + binding.size();
    const auto [end, ec] = std::from_chars(first, last, value);
    if (eq == std::string::npos || eq == 0 || ec != std::errc{} || end != last || value == 0) {
      diags.error({}, "--bind", fmt::format("cannot read '{}'", binding),
                  "write NAME=VALUE with a whole number of at least 1, e.g. batch=8");
      continue;
    }
    options.dim_bindings[binding.substr(0, eq)] = value;
  }
  if (diags.has_errors()) return std::nullopt;
  auto imported = workload::onnx::import_onnx(args.file, options, diags);
  if (!imported) return std::nullopt;
  if (!imported->skipped.empty())
    out << fmt::format("skipped {} unsupported node{}: {}\n", imported->skipped.size(),
                       imported->skipped.size() == 1 ? "" : "s",
                       fmt::join(imported->skipped, ", "));
  return std::move(imported->graph);
}
#endif

// The graph the arguments name: a file (layer list, SCALE-Sim CSV, trace, ONNX), an LLM or a
// CNN of the zoo.
std::optional<workload::Graph> load_source(const WorkloadArgs& args, Diagnostics& diags,
                                           std::ostream& out) {
  if (!args.llm.empty()) return load_llm(args, diags, out);
  if (!args.cnn.empty()) return load_cnn(args, diags);
  if (std::filesystem::path(args.file).extension() == ".onnx") {
#if CODA_WITH_ONNX
    return load_onnx(args, diags, out);
#else
    diags.error({args.file, 0, 0}, "", "this coda was built without the ONNX importer",
                "rebuild with -DCODA_WITH_ONNX=ON (scripts/setup.sh installs libonnx-dev)");
    return std::nullopt;
#endif
  }
  return workload::load_workload(args.file, diags);
}

}  // namespace

CLI::App* add_workload_command(CLI::App& app, WorkloadArgs& args) {
  CLI::App* cmd = app.add_subcommand(
      "workload", "Load a workload, run graph passes on it, print its summary (ops, parameters, "
                  "MACs, FLOPs, bytes per op kind) and write it as JSON");
  CLI::Option* file =
      cmd->add_option("workload", args.file,
                      "Workload file: a coda layer list (.yaml), a SCALE-Sim topology (.csv), a "
                      "coda trace (.json) or an ONNX model (.onnx)")
          ->check(CLI::ExistingFile);
  CLI::Option* llm =
      cmd->add_option("--llm", args.llm,
                      "An LLM to build: a coda model YAML (configs/workloads/llm/) or a Hugging "
                      "Face config.json")
          ->check(CLI::ExistingFile);
  std::string cnn_names;
  for (const auto name : workload::cnn::cnn_names())
    cnn_names += (cnn_names.empty() ? "" : ", ") + std::string(name);
  CLI::Option* cnn = cmd->add_option("--cnn", args.cnn, "A network of the CNN zoo: " + cnn_names);
  file->excludes(llm)->excludes(cnn);
  llm->excludes(cnn);
  cmd->add_option("--phase", args.phase, "LLM phase: prefill, decode or training")
      ->capture_default_str();
  cmd->add_option("--batch", args.batch, "Sequences (LLM) or images (CNN) per step")
      ->capture_default_str()
      ->check(kPositive);
  cmd->add_option("--seq", args.seq,
                  "LLM prompt length (prefill), tokens in the KV cache (decode) or sequence "
                  "length (training)")
      ->capture_default_str()
      ->check(kPositive);
  cmd->add_flag("--recompute", args.recompute, "LLM training: full activation recomputation");
  cmd->add_option("--tp", args.tp, "Tensor-parallel ranks")->capture_default_str();
  cmd->add_option("--pp", args.pp, "Pipeline stages")->capture_default_str();
  cmd->add_option("--dp", args.dp, "Data-parallel replicas")->capture_default_str();
  cmd->add_option("--stage", args.stage, "Which pipeline stage to build (0-based)")
      ->capture_default_str();
  cmd->add_flag("--sequence-parallel", args.sequence_parallel,
                "LLM training with --tp > 1: Megatron-LM's sequence parallelism");
  cmd->add_option("--micro-batches", args.micro_batches, "Pipeline micro-batches per step")
      ->capture_default_str();
  cmd->add_option("--image", args.image, "CNN input height and width")->capture_default_str();
  cmd->add_option("--dtype", args.dtype,
                  "Element type for --llm or --cnn (fp32, bf16, fp16, fp8_e4m3, int8, ...)");
  cmd->add_option("--bind", args.bind, "ONNX: a dynamic dimension's value, NAME=VALUE");
  cmd->add_flag("--skip-unsupported", args.skip_unsupported,
                "ONNX: skip unsupported nodes (listed) instead of failing");
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
    return 0;
  }
  if (args.file.empty() && args.llm.empty() && args.cnn.empty()) {
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
  auto graph = load_source(args, diags, out);
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
