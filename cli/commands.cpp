#include "cli/commands.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "arch/arch_spec.h"
#include "cli/arch_command.h"
#include "cli/check_config.h"
#include "cli/completion_command.h"
#include "cli/map_command.h"
#include "cli/options.h"
#include "cli/report_command.h"
#include "cli/search_options.h"
#include "cli/sweep_command.h"
#include "cli/serve_command.h"
#include "cli/train_command.h"
#include "cli/validate_command.h"
#include "cli/workload_command.h"
#include "core/text.h"
#include "core/version.h"
#include "core/yaml_reader.h"
#include "mapper/fusion.h"
#include "reports/layer_table.h"
#include "sim/driver.h"
#include "workloads/importers.h"

namespace coda::cli {
namespace {

struct RunArgs {
  std::string arch;
  WorkloadSourceArgs source;  // --workload FILE, --llm or --cnn
  std::string engine = "analytical";
  std::string trace;
  std::string out_dir;
  bool quiet = false;
  bool skip_unsupported = false;
  std::string precision;
  std::string fusion;  // empty: the arch's calibration.fusion, else none
  std::string attention;  // empty: the arch's choice
  std::string decode_attention;  // empty: the arch's choice
  std::string launch = "graph";
  std::string mapper = "fixed";
  SearchArgs search;
  bool search_options_given = false;  // a search option without --mapper search
};

// One line per kind of fusion group: how many, and the DRAM bytes the plan saves.
std::string fusion_lines(const results::RunResult& run) {
  std::string text;
  if (run.fusion.empty())
    text = fmt::format("fusion {}: no ops fused (no group met the rules of docs/fusion.md)\n",
                       run.fusion_mode);
  for (const std::string_view kind :
       {"epilogue", "conv_bn_relu", "elementwise_chain", "attention"}) {
    std::size_t groups = 0, ops = 0;
    Bytes saved;
    for (const results::FusedGroup& group : run.fusion) {
      if (group.kind != kind) continue;
      ++groups;
      ops += group.ops.size();
      saved += group.dram_bytes_saved;
    }
    if (groups > 0)
      text += fmt::format("fusion {}: {} {} group{} ({} ops), {} less DRAM traffic (planned: "
                          "2 x the bytes kept on chip)\n",
                          run.fusion_mode, groups, kind, groups == 1 ? "" : "s", ops,
                          to_string(saved));
  }
  if (!run.fusion_rejected.empty())
    text += fmt::format("fusion {}: {} candidate group{} rejected (reasons in run.json), e.g. {}\n",
                        run.fusion_mode, run.fusion_rejected.size(),
                        run.fusion_rejected.size() == 1 ? "" : "s",
                        run.fusion_rejected.front().reason);
  return text;
}

// What stayed on chip across ops: kept activations and cached weights.
std::string residency_lines(const results::Residency& r) {
  std::string text;
  if (r.activations) {
    Bytes kept, saved;
    for (const results::ResidentTensor& t : r.kept) {
      kept += t.bytes;
      saved += t.dram_bytes_saved;
    }
    text += fmt::format("residency: {} activation{} kept on chip between ops ({} over their "
                        "lifetimes, in an on-chip pool of {}), {} less DRAM traffic (planned); {} "
                        "went through DRAM{}\n",
                        r.kept.size(), r.kept.size() == 1 ? "" : "s", to_string(kept),
                        to_string(r.on_chip), to_string(saved), r.rejected.size(),
                        r.rejected.empty()
                            ? std::string()
                            : fmt::format(" (reasons in run.json), e.g. {}", r.rejected.front().reason));
  }
  if (r.weights) {
    const results::CachedWeights& w = *r.weights;
    text += fmt::format("weight cache: {} of weights ({} tensors) cached on chip across runs, {} "
                        "({} tensors) streamed from DRAM every run{}\n",
                        to_string(w.cached), w.tensors_cached, to_string(w.streamed),
                        w.tensors_streamed,
                        w.first_streamed.empty()
                            ? std::string()
                            : fmt::format(", from '{}' on (a budget of {}: {} of caching "
                                          "levels, {} kept for the ops' own buffers)",
                                          w.first_streamed, to_string(w.budget),
                                          to_string(w.capacity), to_string(w.reserve)));
  }
  return text;
}

// "mapper search: heuristic, latency: 21 of 21 contractions mapped by the loop-nest search".
std::string mapper_line(const results::RunResult& run) {
  std::size_t searched = 0;
  std::size_t contractions = 0;
  for (const results::OpResult& op : run.ops) {
    if (op.unit != results::OpUnit::Systolic && op.unit != results::OpUnit::TensorCore) continue;
    ++contractions;
    if (!op.loop_nest.empty()) ++searched;
  }
  return fmt::format("mapper {}: {} of {} contractions priced from their searched loop nest{} "
                     "(loop nests in run.json)\n",
                     run.mapper, searched, contractions,
                     searched == contractions ? "" : ", the others by the closed forms");
}

// "memory: fits: 13.5 GiB needed of 141 GiB DRAM (weights 13.2 GiB, ...)".
std::string memory_line(const results::MemoryFootprint& m) {
  const bool over = m.status == results::FitStatus::DoesNotFit;
  return fmt::format("memory: {}{}\n", over ? "DOES NOT FIT: " : "",
                     m.reason.empty() ? std::string(results::to_string(m.status)) : m.reason);
}

// A tile-level engine's stalls by cause and its memory system's activity.
std::string stall_lines(const results::RunResult& run) {
  const results::StallBreakdown& s = *run.stalls;
  const double total = static_cast<double>(run.total.cycles.value);
  const auto share = [total](Cycles c) {
    return total > 0 ? 100.0 * static_cast<double>(c.value) / total : 0.0;
  };
  std::string text = fmt::format(
      "stalls: DRAM bandwidth {} ({:.1f}%), DRAM latency {} ({:.1f}%), bank conflicts {} "
      "({:.1f}%), network {} ({:.1f}%), launch {} ({:.1f}%)\n",
      s.dram_bandwidth.value, share(s.dram_bandwidth), s.dram_latency.value,
      share(s.dram_latency), s.bank_conflicts.value, share(s.bank_conflicts), s.network.value,
      share(s.network), s.launch.value, share(s.launch));
  for (const results::LevelActivity& a : run.activity)
    text += fmt::format("{}: {} moved, busy {:.1f}% of the run\n", a.level, to_string(a.bytes),
                        100.0 * a.utilization);
  return text;
}

int do_run(const RunArgs& args, std::ostream& out, std::ostream& err) {
  Diagnostics diags;
  if (!names_a_source(args.source)) {
    err << "error: run: name a workload: --workload FILE, --llm MODEL or --cnn NAME\n";
    return 2;
  }
  std::optional<results::RunResult> run;
  try {
    const sim::EngineRegistry engines = all_engines();
    WorkloadSourceArgs named = args.source;
    named.skip_unsupported = args.skip_unsupported;  // ONNX nodes and ops alike
    auto source = workload_source(named, diags);
    if (!source) {
      err << diags.format_all();
      return 2;
    }
    sim::RunFiles files{args.arch, {}, args.engine, args.skip_unsupported, {}};
    files.source = std::move(*source);
    files.engines = &engines;
    files.trace = args.trace;
    if (!args.trace.empty() && !std::ofstream(args.trace)) {
      err << fmt::format("error: --trace: cannot write '{}' (does its folder exist?)\n",
                         args.trace);
      return 2;
    }
    // CLI11 has checked the name already.
    if (!args.fusion.empty()) files.fusion = mapper::parse_fusion_mode(args.fusion);
    if (!args.attention.empty())  // CLI11 has checked the name
      files.attention = arch::parse_attention_impl(args.attention);
    if (!args.decode_attention.empty())  // CLI11 has checked the name
      files.decode_attention = arch::parse_decode_attention(args.decode_attention);
    files.eager = args.launch == "eager";  // CLI11 has checked the name
    if (!read_precision(args.precision, files.precision, err)) return 2;
    if (args.mapper == "search") {
      files.search = read_search(args.search, err);
      if (!files.search) return 2;
    } else if (args.search_options_given) {
      err << "error: the mapping-search options (--objective, --search, --evaluations, "
             "--seconds, --patience, --seed, --threads, --max-power) need --mapper search\n";
      return 2;
    }
    run = sim::run_files(files, diags);
  } catch (const std::invalid_argument& e) {
    err << "error: " << e.what() << "\n";
    return 2;
  } catch (const std::runtime_error& e) {  // the SystemC worker failed, or the trace
    err << "error: " << e.what() << "\n";
    return 1;
  }
  if (!run) {
    err << diags.format_all() << "no simulation was run.\n";
    return 1;
  }
  if (!diags.all().empty()) err << diags.format_all();
  if (!args.quiet) {
    out << fmt::format("coda {}: {} on {} ({} PEs at {}), {} engine\n", kVersion, run->workload,
                       run->arch, run->processing_elements, to_string(run->clock),
                       run->provenance.engine);
    for (const std::string& note : run->workload_notes) out << note << "\n";
    out << reports::format_layer_table(*run);
    const auto count = [&](results::Bound bound) {
      return std::count_if(run->ops.begin(), run->ops.end(),
                           [&](const auto& op) { return op.bound == bound; });
    };
    out << fmt::format("{} cycles = {} at {}; {} of {} ops memory-bound{}\n",
                       run->total.cycles.value,
                       to_string(Seconds{results::run_time(*run).value - run->host_wait.value}),
                       to_string(run->clock), count(results::Bound::Memory), run->ops.size(),
                       count(results::Bound::Latency) > 0
                           ? fmt::format(", {} latency-bound", count(results::Bound::Latency))
                           : std::string());
    out << fmt::format("energy {}, average power {}, {:.3g} TOPS/W{}\n",
                       to_string(run->total.energy), to_string(results::average_power(*run)),
                       results::tops_per_watt(*run),
                       run->area.value > 0
                           ? fmt::format(", {:.3g} TOPS per mm2 of modelled MAC and SRAM area",
                                         2.0 * static_cast<double>(run->total.macs) /
                                             results::run_time(*run).value / 1e12 /
                                             run->area.value)
                           : std::string());
    if (!run->launch.empty())
      out << fmt::format("launched {}: the host issues a kernel every {} at the least, so the "
                         "GPU also waits {} on it: {} in all ({:.1f}% waiting)\n",
                         run->launch == "eager" ? "eagerly" : run->launch,
                         to_string(run->host_issue), to_string(run->host_wait),
                         to_string(results::run_time(*run)),
                         100.0 * run->host_wait.value / results::run_time(*run).value);
    if (run->stalls) out << stall_lines(*run);
    if (run->fusion_mode != "none") out << fusion_lines(*run);
    if (run->residency) out << residency_lines(*run->residency);
    if (run->mapper != "fixed") out << mapper_line(*run);
    out << memory_line(run->memory);
    if (!run->skipped.empty())
      out << fmt::format("skipped {} op{} this hardware cannot run (listed in run.json)\n",
                         run->skipped.size(), run->skipped.size() == 1 ? "" : "s");
    if (reports::all_systolic(*run))
      out << "Cycles are true counts; SCALE-Sim prints a 0-based index, one less per layer.\n";
  }
  if (!args.out_dir.empty()) {
    const std::filesystem::path dir(args.out_dir);
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) {
      err << fmt::format("error: cannot create '{}': {}\n", dir.string(), ec.message());
      return 1;
    }
    const nlohmann::ordered_json json = *run;
    if (!write_file(dir / "run.json", dump_json(json, 2) + "\n", err) ||
        !write_file(dir / "layers.csv", reports::format_layers_csv(*run), err))
      return 1;
    if (!args.quiet)
      out << fmt::format("wrote {} and {}\n", (dir / "run.json").string(),
                         (dir / "layers.csv").string());
  }
  return 0;
}

int do_check(const std::vector<std::string>& files, std::ostream& out, std::ostream& err) {
  std::size_t bad = 0;
  for (const std::string& file : files) {
    Diagnostics diags;
    const auto what = check_config_file(file, diags);
    for (const auto& d : diags.all()) err << format(d) << "\n";
    if (diags.has_errors()) {
      ++bad;
      err << fmt::format("{}: {} error{}\n", file, diags.error_count(),
                         diags.error_count() == 1 ? "" : "s");
    } else {
      out << fmt::format("{}: ok ({})\n", file, what.value_or(""));
    }
  }
  return bad == 0 ? 0 : 1;
}

}  // namespace

namespace {

int dispatch(std::span<const char* const> args, std::ostream& out, std::ostream& err) {
  CLI::App app{"coda: accelerator performance simulator and co-design explorer", "coda"};
  app.set_version_flag("--version", std::string(kVersion));
  app.require_subcommand(1);

  RunArgs run_args;
  CLI::App* run = app.add_subcommand(
      "run", "Simulate a workload on an architecture; print the per-layer table and optionally "
             "write run.json and layers.csv");
  run->add_option("--arch", run_args.arch, "Architecture config (YAML), e.g. "
                                           "configs/arch/scalesim_32x32_os.yaml")
      ->required()
      ->check(CLI::ExistingFile);
  CLI::Option* run_file =
      run->add_option("--workload", run_args.source.file,
                      "Workload file: a coda layer list (.yaml), a SCALE-Sim topology (.csv), a "
                      "coda trace (.json) or an ONNX model (.onnx, with --bind for its dynamic "
                      "dimensions); or name an LLM (--llm) or a CNN of the zoo (--cnn) instead")
          ->check(CLI::ExistingFile);
  add_workload_source_options(*run, run_args.source, run_file, false);
  run->add_option("--engine", run_args.engine,
                  "Engine: analytical (closed forms) or systemc (cycle-approximate: tiles, DMA, "
                  "DRAM channels with row buffers, NoC; stalls by cause; docs/systemc.md)")
      ->capture_default_str();
  run->add_option("--trace", run_args.trace,
                  "Write the run's timeline to this file as Chrome trace-event JSON (open it "
                  "in Perfetto or chrome://tracing): the analytical engine's ops back to back "
                  "per unit with their DRAM bandwidth, or systemc's cores and stalls");
  run->add_option("--out", run_args.out_dir, "Folder to write run.json and layers.csv into");
  run->add_flag("-q,--quiet", run_args.quiet, "Print nothing but errors");
  run->add_option("--precision", run_args.precision,
                  "Run every op at this precision (fp32, tf32, bf16, fp16, fp8_e4m3, fp8_e5m2, "
                  "int8, int4, int32) instead of its tensors' own");
  run->add_option("--fusion", run_args.fusion,
                  "Which ops run fused, so the tensors between them stay on chip: none (every op "
                  "on its own), eager (as PyTorch runs eagerly: attention as one kernel, a "
                  "GEMM with its bias; every other op on its own), epilogue (a contraction with "
                  "its elementwise followers, conv + "
                  "batch norm + relu, attention as FlashAttention) or all (also elementwise "
                  "chains, and on systolic NPUs every activation that fits stays on chip from "
                  "its producer to its last reader); default: the arch's (calibration.fusion: "
                  "what its vendor's compiler fuses), else none; docs/fusion.md")
      ->check(CLI::IsMember({"none", "eager", "epilogue", "all"}));
  run->add_option("--attention", run_args.attention,
                  "The fused-attention implementation on GPUs: fa2 (FlashAttention-2's kind: "
                  "mma.sync, softmax between the GEMMs), fa3 (FlashAttention-3's: wgmma, softmax "
                  "overlapped; needs Hopper's wgmma) or triton (FlashAttention-2's algorithm as "
                  "Triton compiled it in 2023, at the arch's calibration.attention_triton share of "
                  "fa2's matrix rate); default: the arch's (calibration.attention, else fa3 where "
                  "the tensor cores have wgmma); docs/cost_models.md")
      ->check(CLI::IsMember({"fa2", "fa3", "triton"}));
  run->add_option("--decode-attention", run_args.decode_attention,
                  "The decode-attention kernel class on GPUs (one query per sequence): grouped "
                  "(a GQA group's query heads share one load of their KV head, on the tensor "
                  "cores, as FlashAttention's and TensorRT-LLM's XQA kernels do) or per_head (one "
                  "thread block per query head on the CUDA cores, each loading its KV head: "
                  "TensorRT-LLM's MMHA before v0.7.1) or fa2_forward (FlashAttention-2's prefill "
                  "kernel called with one query, its query tile padded to 128 rows: PyTorch's "
                  "scaled_dot_product_attention as eager PyTorch and Hugging Face transformers "
                  "decode); default: the arch's (calibration.decode_attention, else grouped); "
                  "docs/cost_models.md")
      ->check(CLI::IsMember({"grouped", "per_head", "fa2_forward"}));
  run->add_option("--launch", run_args.launch,
                  "How the kernels are launched: graph (from a CUDA graph: the host never holds "
                  "the GPU back) or eager (one by one from the host, the arch's "
                  "calibration.eager_issue_time apart at the least, so runs of short kernels wait "
                  "on the host); run.json records it (launch); docs/cost_models.md")
      ->check(CLI::IsMember({"graph", "eager"}))
      ->capture_default_str();
  run->add_option("--mapper", run_args.mapper,
                  "How contractions are mapped: fixed (the closed forms: a systolic array's "
                  "dataflow, the GPU model's thread-block tiles) or search (a loop-nest mapping "
                  "per contraction from the mapper's search, repeated shapes searched once; "
                  "docs/mapping.md)")
      ->check(CLI::IsMember({"fixed", "search"}))
      ->capture_default_str();
  add_search_options(*run, run_args.search);
  run->add_flag("--skip-unsupported", run_args.skip_unsupported,
                "Leave out ops the hardware has no unit for, and ONNX nodes coda cannot import "
                "(both listed) instead of failing");

  std::vector<std::string> check_files;
  CLI::App* check = app.add_subcommand(
      "check-config", "Validate arch, workload, LLM, sweep, validation case-list and "
                      "measurement files; print every problem as file:line:col: error: path: "
                      "message and exit non-zero if there is any");
  check->add_option("files", check_files, "Files to check (.yaml or .csv)")
      ->required()
      ->check(CLI::ExistingFile);

  ArchArgs arch_args;
  CLI::App* arch = add_arch_command(app, arch_args);

  MapArgs map_args;
  CLI::App* map = add_map_command(app, map_args);

  WorkloadArgs workload_args;
  CLI::App* workload = add_workload_command(app, workload_args);

  SweepArgs sweep_args;
  CLI::App* sweep = add_sweep_command(app, sweep_args);

  ValidateArgs validate_args;
  CLI::App* validate = add_validate_command(app, validate_args);

  ReportArgs report_args;
  CLI::App* report = add_report_command(app, report_args);

  TrainArgs train_args;
  CLI::App* train = add_train_command(app, train_args);

  ServeArgs serve_args;
  CLI::App* serve = add_serve_command(app, serve_args);

  std::string completion_shell;
  CLI::App* completion = add_completion_command(app, completion_shell);

  try {
    app.parse(static_cast<int>(args.size()), args.data());
  } catch (const CLI::ParseError& e) {
    return app.exit(e, out, err) == 0 ? 0 : 2;
  }
  if (run->parsed()) {
    for (const char* name : {"--objective", "--search", "--evaluations", "--seconds",
                             "--patience", "--seed", "--threads", "--max-power"})
      if (run->count(name) > 0) run_args.search_options_given = true;
    return do_run(run_args, out, err);
  }
  if (check->parsed()) return do_check(check_files, out, err);
  if (arch->parsed()) return run_arch_command(arch_args, out, err);
  if (map->parsed()) return run_map_command(map_args, out, err);
  if (workload->parsed()) return run_workload_command(workload_args, out, err);
  if (sweep->parsed()) return run_sweep_command(sweep_args, out, err);
  if (validate->parsed()) return run_validate_command(validate_args, out, err);
  if (report->parsed()) return run_report_command(report_args, out, err);
  if (train->parsed()) return run_train_command(train_args, out, err);
  if (serve->parsed()) return run_serve_command(serve_args, out, err);
  if (completion->parsed()) {
    out << completion_script(app, completion_shell);
    return 0;
  }
  return 2;
}

}  // namespace

int run_main(std::span<const char* const> args, std::ostream& out, std::ostream& err) {
  // The last resort: every reader reports bad input as located errors and returns, so nothing
  // should throw this far; if something does, say so plainly, with the command line, and exit
  // with a code of its own (70, BSD's EX_SOFTWARE) instead of terminate()'s abort.
  const auto command = [&] {
    std::string line;
    for (const char* arg : args) line += (line.empty() ? "" : " ") + std::string(arg);
    return line;
  };
  try {
    return dispatch(args, out, err);
  } catch (const std::exception& e) {
    err << fmt::format("internal error: {} (while running '{}'); this is a bug in coda {}, please "
                       "report it with the input files\n",
                       e.what(), command(), kVersion);
  } catch (...) {
    err << fmt::format("internal error: an unknown exception (while running '{}'); this is a bug "
                       "in coda {}, please report it with the input files\n",
                       command(), kVersion);
  }
  return kInternalErrorExit;
}

}  // namespace coda::cli
