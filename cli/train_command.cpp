#include "cli/train_command.h"

#include <filesystem>
#include <memory>
#include <optional>
#include <ostream>
#include <stdexcept>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "arch/arch_spec.h"
#include "arch/cluster_spec.h"
#include "arch/hardware_model.h"
#include "cli/options.h"
#include "core/diagnostics.h"
#include "core/text.h"
#include "mapper/fusion.h"
#include "sim/driver.h"
#include "sim/training_step.h"

namespace coda::cli {
namespace {

namespace tr = sim::training;
using nlohmann::ordered_json;

std::string pct(double x) { return fmt::format("{:.1f}%", 100.0 * x); }
// Seconds as ms below 1 s, else s.
std::string ms(double s) {
  return s < 1.0 ? fmt::format("{:.4g} ms", s * 1e3) : fmt::format("{:.4g} s", s);
}

std::string layout_text(const tr::Layout& l) {
  return fmt::format(
      "tp {}{}{} pp {}{} dp {}{}, micro-batch {} x {}, recompute {}, ZeRO {}", l.tp,
      l.sequence_parallel ? " (SP)" : "", l.cp > 1 ? fmt::format(" cp {}", l.cp) : "", l.pp,
      l.virtual_stages > 1 ? fmt::format(" (x{} virtual)", l.virtual_stages) : "", l.dp,
      l.ep > 1 ? fmt::format(" (ep {})", l.ep) : "", l.micro_batch_size, l.micro_batches,
      !l.recompute              ? std::string("none")
      : l.recompute_layers == 0 ? std::string("full")
                                : fmt::format("{} layers a stage", l.recompute_layers),
      l.zero);
}

ordered_json memory_json(const tr::StageMemory& m) {
  return {{"weights_bytes", m.weights.value},
          {"gradients_bytes", m.gradients.value},
          {"optimizer_state_bytes", m.optimizer_state.value},
          {"activations_bytes", m.activations.value},
          {"total_bytes", m.total.value}};
}

ordered_json report_json(const tr::StepReport& r) {
  const tr::Layout& l = r.layout;
  ordered_json stages = ordered_json::array();
  for (const tr::StageReport& s : r.stages)
    stages.push_back({{"stage", s.stage},
                      {"first_layer", s.first_layer},
                      {"layers", s.layers},
                      {"layer_ranges", s.layer_ranges},
                      {"forward_s", s.forward_s},
                      {"backward_s", s.backward_s},
                      {"tp_comm_s", s.tp_comm_s},
                      {"send_s", s.send_s},
                      {"compute_s", s.compute_s},
                      {"bubble_s", s.bubble_s},
                      {"dp_comm_s", s.dp_comm_s},
                      {"dp_exposed_s", s.dp_exposed_s},
                      {"optimizer_s", s.optimizer_s},
                      {"end_s", s.end_s},
                      {"in_flight_micro_batches", s.in_flight},
                      {"memory", memory_json(s.memory)},
                      {"model_flops", s.model_flops},
                      {"hardware_flops", s.hardware_flops}});
  return {
      {"model", r.model},
      {"arch", r.arch},
      {"layout",
       {{"tp", l.tp},
        {"cp", l.cp},
        {"ep", l.ep},
        {"pp", l.pp},
        {"virtual_stages", l.virtual_stages},
        {"dp", l.dp},
        {"chips", l.chips()},
        {"micro_batch_size", l.micro_batch_size},
        {"micro_batches", l.micro_batches},
        {"global_batch", l.global_batch()},
        {"recompute", l.recompute ? "full" : "none"},
        {"recompute_layers", l.recompute_layers},
        {"zero", l.zero},
        {"sequence_parallel", l.sequence_parallel},
        {"pipeline_counts_embedding", l.pipeline_counts_embedding},
        {"pipeline_counts_loss", l.pipeline_counts_loss}}},
      {"framework",
       {{"bucket_bytes", r.framework.bucket.value},
        {"grad_reduce", r.framework.grad_reduce ? std::string(to_string(*r.framework.grad_reduce))
                                                : std::string("model")},
        {"precision", workload::llm::to_string(r.framework.precision)},
        {"runtime", workload::llm::to_string(r.framework.runtime)},
        {"overlap_param_gather", r.framework.overlap_param_gather}}},
      {"seq", r.seq},
      {"tokens", r.tokens},
      {"fusion", r.fusion},
      {"step_s", r.step_s},
      {"tokens_per_s", r.tokens_per_s},
      {"mfu", r.mfu},
      {"hfu", r.hfu},
      {"model_flops", r.model_flops},
      {"hardware_flops", r.hardware_flops},
      {"peak_flops_per_chip", r.peak_flops_per_chip},
      {"critical_stage", r.critical_stage},
      {"memory_per_chip_bytes", r.memory_per_chip.value},
      {"capacity_bytes", r.capacity ? ordered_json(r.capacity->value) : ordered_json(nullptr)},
      {"fits", r.fits},
      {"stages", std::move(stages)}};
}

void print_report(const tr::StepReport& r, std::ostream& out) {
  const tr::Layout& l = r.layout;
  out << fmt::format(
      "{} training on {} x '{}': {}; global batch {} sequences of {} tokens "
      "({} tokens), fusion {}, precision {}{}\n",
      r.model, l.chips(), r.arch, layout_text(l), l.global_batch(), r.seq, r.tokens, r.fusion,
      workload::llm::to_string(r.framework.precision),
      r.framework.runtime == workload::llm::Runtime::HfTransformers
          ? ", as Hugging Face transformers runs it"
          : "");
  out << fmt::format("step {}, {:.0f} tokens/s ({:.0f} per chip), MFU {}, HFU {}\n",
                     ms(r.step_s), r.tokens_per_s,
                     r.tokens_per_s / static_cast<double>(l.chips()), pct(r.mfu), pct(r.hfu));
  const tr::StageReport& worst = r.stages.at(r.critical_stage);
  std::string fit = "capacity unknown";
  if (r.capacity)
    fit = fmt::format("of {}: {}", to_string(*r.capacity), r.fits ? "fits" : "does NOT fit");
  out << fmt::format("memory per chip {} {} (stage {}: weights {}, gradients {}, optimizer "
                     "state {}, activations {})\n",
                     to_string(r.memory_per_chip), fit, worst.stage,
                     to_string(worst.memory.weights), to_string(worst.memory.gradients),
                     to_string(worst.memory.optimizer_state), to_string(worst.memory.activations));
  // TP's collectives, with CP's K/V all-gathers and EP's all-to-alls where the layout has them.
  const std::string comm = fmt::format("tp{}{}", l.cp > 1 ? "+cp" : "", l.ep > 1 ? "+ep" : "");
  out << fmt::format("{:>5} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11}\n",
                     "stage", "layers", "forward", "backward", "compute", comm + " comm", "bubble",
                     "dp exposed", "optimizer", "end");
  const auto cell = [](double s) { return ms(s); };
  for (const tr::StageReport& s : r.stages)
    out << fmt::format("{:>5} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11}\n",
                       s.stage, s.layer_ranges,
                       cell(s.forward_s), cell(s.backward_s), cell(s.compute_s),
                       cell(static_cast<double>(l.micro_batches) * s.tp_comm_s),
                       cell(s.bubble_s), cell(s.dp_exposed_s), cell(s.optimizer_s),
                       cell(s.end_s));
  const double step = r.step_s > 0 ? r.step_s : 1.0;
  const double tp = static_cast<double>(l.micro_batches) * worst.tp_comm_s;
  out << fmt::format(
      "time of stage {} (the step's): compute {} (of which {} communication {}), "
      "pipeline bubble {}, exposed data-parallel communication {} (of {} in "
      "all), optimizer {}\n",
      worst.stage, pct((worst.compute_s) / step),
      l.cp > 1 ? (l.ep > 1 ? "TP, CP and EP" : "TP and CP") : (l.ep > 1 ? "TP and EP" : "TP"),
      pct(tp / step), pct(worst.bubble_s / step), pct(worst.dp_exposed_s / step),
      ms(worst.dp_comm_s), pct(worst.optimizer_s / step));
}

}  // namespace

CLI::App* add_train_command(CLI::App& app, TrainArgs& args) {
  CLI::App* cmd = app.add_subcommand(
      "train", "Price one optimizer step of LLM training on tp x pp x dp chips: step time, "
               "tokens/s, MFU and HFU, memory per chip, and each pipeline stage's time split "
               "into compute, bubble, exposed data-parallel communication and optimizer "
               "(docs/training.md); with --search-layouts, every layout of --chips chips");
  CLI::Option* arch_option =
      cmd->add_option("--arch", args.arch, "Architecture config of one chip (YAML): one node")
          ->check(CLI::ExistingFile);
  CLI::Option* cluster_option =
      cmd->add_option("--cluster", args.cluster,
                      "A cluster file (configs/cluster/): its chip and nodes; collectives whose "
                      "ranks span nodes go over its network (docs/arch.md, \"Clusters\")")
          ->check(CLI::ExistingFile);
  arch_option->excludes(cluster_option);
  cmd->add_option("--llm", args.llm,
                  "The model: a coda model YAML (configs/workloads/llm/) or a Hugging Face "
                  "config.json")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--dtype", args.dtype, "The model's compute type (default: the config's)");
  cmd->add_option("--seq", args.seq, "Sequence length")
      ->capture_default_str()
      ->check(kPositive);
  cmd->add_option("--tp", args.tp, "Tensor-parallel ranks (Megatron-LM splits)")
      ->capture_default_str()
      ->check(kPositive);
  cmd->add_option("--cp", args.cp,
                  "Context-parallel ranks (Megatron-LM with Transformer Engine): each sequence "
                  "split over them in 2 x cp load-balanced chunks, K and V all-gathered each "
                  "layer; tp x cp within a node")
      ->capture_default_str()
      ->check(kPositive);
  cmd->add_option("--ep", args.ep,
                  "Expert-parallel ranks (MoE models; Megatron-Core's all-to-all token "
                  "dispatcher): each holds experts / ep of every MoE layer, whole; ep divides tp "
                  "x dp x cp; with --tp > 1 needs --sequence-parallel (MoE parallel folding)")
      ->capture_default_str()
      ->check(kPositive);
  cmd->add_option("--pp", args.pp, "Pipeline stages (1F1B)")
      ->capture_default_str()
      ->check(kPositive);
  cmd->add_option("--virtual-stages", args.virtual_stages,
                  "Model chunks per pipeline stage: Megatron-LM's interleaved 1F1B (micro-batches "
                  "a multiple of --pp)")
      ->capture_default_str()
      ->check(kPositive);
  cmd->add_option("--dp", args.dp, "Data-parallel replicas")
      ->capture_default_str()
      ->check(kPositive);
  cmd->add_option("--micro-batch-size", args.micro_batch_size, "Sequences per micro-batch")
      ->capture_default_str()
      ->check(kPositive);
  CLI::Option* micro = cmd->add_option("--micro-batches", args.micro_batches,
                                       "Micro-batches per replica per step (gradient "
                                       "accumulation; the pipeline's micro-batches)")
                           ->capture_default_str()
                           ->check(kPositive);
  CLI::Option* global =
      cmd->add_option("--global-batch", args.global_batch,
                      "Sequences per step over all replicas: sets --micro-batches to "
                      "global / (dp x micro-batch size); with --search-layouts, the batch "
                      "every layout runs")
          ->check(kPositive);
  micro->excludes(global);
  cmd->add_flag("--recompute", args.recompute, "Full activation recomputation");
  cmd->add_option("--recompute-layers", args.recompute_layers,
                  "With --recompute: recompute only the first N layers of each (virtual) stage "
                  "(Megatron-LM's --recompute-method block --recompute-num-layers N); 0: all")
      ->capture_default_str();
  cmd->add_flag("--account-for-embedding-in-pipeline-split", args.pipeline_counts_embedding,
                "Count the embedding as a layer of the first pipeline stage (Megatron-LM's flag): "
                "it holds one transformer layer fewer");
  cmd->add_flag("--account-for-loss-in-pipeline-split", args.pipeline_counts_loss,
                "Count the LM head and loss as a layer of the last pipeline stage (Megatron-LM's "
                "flag): it holds one transformer layer fewer");
  cmd->add_flag("--sequence-parallel", args.sequence_parallel,
                "Megatron-LM's sequence parallelism (tp > 1): norms and residuals split over the "
                "TP ranks, all-gathers and reduce-scatters for TP's all-reduces");
  cmd->add_option("--zero", args.zero,
                  "What the data-parallel ranks shard: 0 nothing (DDP all-reduce), 1 optimizer "
                  "state (distributed optimizer), 2 and gradients, 3 and weights (FSDP "
                  "FULL_SHARD)")
      ->capture_default_str()
      ->check(CLI::Range(0, 3));
  cmd->add_option("--bucket-mib", args.bucket_mib,
                  "Gradient bucket of the data-parallel reduction, MiB (PyTorch DDP's default 25)")
      ->capture_default_str()
      ->check(kPositive);
  cmd->add_option("--grad-reduce", args.grad_reduce,
                  "The type gradients are reduced in (default: the gradients'; e.g. fp32)");
  cmd->add_option("--train-precision", args.precision,
                  "pure (all in the model's type), mixed (fp32 master weights in the optimizer: "
                  "Megatron-LM, DeepSpeed, FSDP), autocast (PyTorch AMP over fp32 parameters) or "
                  "fp8 (mixed, the linear layers' GEMMs in FP8 as Transformer Engine runs them)")
      ->capture_default_str()
      ->check(CLI::IsMember({"pure", "mixed", "autocast", "fp8"}));
  cmd->add_option("--runtime", args.runtime,
                  "default (coda's kernels) or hf_transformers (Hugging Face transformers' "
                  "GPT2LMHeadModel trained eagerly under autocast: its dropouts and written-out "
                  "GELU, fused as PyTorch fuses them; docs/training.md)")
      ->capture_default_str()
      ->check(CLI::IsMember({"default", "hf_transformers"}));
  cmd->add_flag("--overlap-param-gather", args.overlap_param_gather,
                "ZeRO 1/2: the updated weights' all-gather runs under the next step's forward "
                "(Megatron-LM --overlap-param-gather)");
  cmd->add_option("--fusion", args.fusion,
                  "none, eager (as PyTorch runs eagerly), epilogue or all (docs/fusion.md); "
                  "default: the arch's, else epilogue")
      ->check(CLI::IsMember({"none", "eager", "epilogue", "all"}));
  cmd->add_option("--attention", args.attention,
                  "GPUs' fused-attention class: fa2, fa3 or triton (as coda run --attention)")
      ->check(CLI::IsMember({"fa2", "fa3", "triton"}));
  cmd->add_option("--engine", args.engine, "analytical or systemc")->capture_default_str();
  cmd->add_option("--launch", args.launch,
                  "graph (kernels from a CUDA graph) or eager (issued one by one by the host, "
                  "as PyTorch eager runs a step: the arch's calibration.eager_issue_time apart)")
      ->check(CLI::IsMember({"graph", "eager"}))
      ->capture_default_str();
  cmd->add_option("--mapper", args.mapper, "fixed or search (as coda run --mapper)")
      ->check(CLI::IsMember({"fixed", "search"}))
      ->capture_default_str();
  add_search_options(*cmd, args.search);
  cmd->add_flag(
      "--search-layouts", args.search_layouts,
      "Price every (tp, pp, dp, micro-batch size, recompute, ZeRO, sequence "
      "parallelism, --search-cp, --search-ep) layout of --chips chips at --global-batch and print "
      "the best --top by step time, those that fit in memory first");
  cmd->add_option("--chips", args.chips, "With --search-layouts: the chips to lay out")
      ->check(kPositive);
  cmd->add_option("--search-cp", args.search_cp,
                  "With --search-layouts: the context-parallel sizes to try, e.g. 1,2,4 (each "
                  "where it divides the chips left by tp x pp and 2 x cp divides --seq)")
      ->delimiter(',')
      ->capture_default_str()
      ->check(kPositive);
  cmd->add_option("--search-ep", args.search_ep,
                  "With --search-layouts: the expert-parallel sizes to try on a MoE model, e.g. "
                  "1,8 (each where it divides the experts and tp x dp x cp)")
      ->delimiter(',')
      ->capture_default_str()
      ->check(kPositive);
  cmd->add_option("--top", args.top, "With --search-layouts: layouts to print")
      ->capture_default_str()
      ->check(kPositive);
  cmd->add_option("--json", args.json_out, "Write the report (or the ranked layouts) as JSON");
  return cmd;
}

int run_train_command(const TrainArgs& args, std::ostream& out, std::ostream& err) {
  if (args.search_layouts && (args.chips == 0 || args.global_batch == 0)) {
    err << "error: --search-layouts needs --chips N and --global-batch B\n";
    return 2;
  }
  Diagnostics diags;
  auto model = load_llm_option(args.llm, diags);
  if (args.arch.empty() == args.cluster.empty()) {
    err << "error: train: name the chip with --arch ARCH.yaml or a cluster with --cluster "
           "CLUSTER.yaml\n";
    return 2;
  }
  std::optional<arch::LoadedCluster> cluster;
  std::optional<arch::LoadedArch> arch;
  if (!args.cluster.empty()) {
    cluster = arch::load_cluster(args.cluster, diags);
    if (cluster) arch = cluster->chip;
  } else {
    arch = arch::load_arch(args.arch, diags);
  }
  if (!model || !arch) {
    err << diags.format_all();
    return 1;
  }
  const std::string arch_file = cluster ? cluster->spec.chip.string() : args.arch;
  if (!read_model_dtype(args.dtype, *model, err)) return 2;
  tr::Framework framework;
  framework.bucket = Bytes{static_cast<std::uint64_t>(args.bucket_mib * 1024.0 * 1024.0)};
  framework.overlap_param_gather = args.overlap_param_gather;
  framework.precision = *enum_value(workload::llm::precision_names(), args.precision);  // checked
  framework.runtime = *enum_value(workload::llm::runtime_names(), args.runtime);        // checked
  if (!args.grad_reduce.empty()) {
    framework.grad_reduce = parse_data_type(args.grad_reduce);
    if (!framework.grad_reduce) {
      err << fmt::format("error: --grad-reduce: unknown element type '{}'; expected one of: {}\n",
                         args.grad_reduce, data_type_list());
      return 2;
    }
  }
  arch::ArchSpec spec = arch->spec;
  const std::optional<arch::AttentionImpl> attention =
      args.attention.empty() ? std::nullopt : arch::parse_attention_impl(args.attention);
  if (!sim::apply_attention_choice(spec, arch_file, attention, std::nullopt, diags)) {
    err << diags.format_all();
    return 1;
  }
  const arch::HardwareModel hw(spec);
  tr::StepOptions options;
  if (!args.fusion.empty()) options.fusion = mapper::parse_fusion_mode(args.fusion);
  if (args.mapper == "search") {
    options.search = read_search(args.search, err);
    if (!options.search) return 2;
  }
  const sim::EngineRegistry engines = all_engines();
  std::unique_ptr<sim::Engine> engine;
  try {
    engine = engines.create(args.engine);
  } catch (const std::invalid_argument& e) {
    err << "error: --engine: " << e.what() << "\n";
    return 2;
  }
  options.engine = engine.get();
  if (cluster) options.cluster = &cluster->spec;
  if (args.launch == "eager") {
    if (!spec.calibration.eager_issue_time) {
      err << fmt::format("{}: error: --launch eager: the arch states no "
                         "calibration.eager_issue_time (the host's time to issue one kernel), so "
                         "an eager launch cannot be priced; add it to the arch or leave --launch "
                         "out (a CUDA graph)\n",
                         arch_file);
      return 1;
    }
    options.host_issue_s = hw.eager_issue_seconds();
  }

  if (args.search_layouts) {
    tr::LayoutSearch search{.chips = args.chips, .global_batch = args.global_batch};
    search.context_parallel = args.search_cp;
    search.expert_parallel = args.search_ep;
    const tr::LayoutSearchResult found =
        tr::search_layouts(*model, args.seq, search, framework, hw, options);
    if (found.ranked.empty()) {
      err << fmt::format("error: no layout of {} chips runs {} at a global batch of {}{}\n",
                         args.chips, model->name, args.global_batch,
                         found.first_refusal.empty() ? "" : ": e.g. " + found.first_refusal);
      return 1;
    }
    std::size_t fitting = 0;
    for (const tr::StepReport& r : found.ranked) fitting += r.fits ? 1 : 0;
    out << fmt::format("{} on {} x '{}', global batch {} of {} tokens: {} layouts priced ({} "
                       "refused by the model or the arch), {} fit in memory\n",
                       model->name, args.chips, hw.name(), args.global_batch, args.seq,
                       found.tried, found.refused, fitting);
    out << fmt::format("{:>4} {:>11} {:>9} {:>6} {:>10} {:>5}  {}\n", "rank", "step",
                       "tokens/s", "MFU", "memory", "fits", "layout");
    ordered_json ranked = ordered_json::array();
    for (std::size_t i = 0; i < found.ranked.size(); ++i) {
      const tr::StepReport& r = found.ranked[i];
      ranked.push_back(report_json(r));
      if (i >= args.top) continue;
      out << fmt::format("{:>4} {:>11} {:>9.0f} {:>6} {:>10} {:>5}  {}\n", i + 1, ms(r.step_s),
                         r.tokens_per_s, pct(r.mfu), to_string(r.memory_per_chip),
                         r.fits ? "yes" : "no", layout_text(r.layout));
    }
    if (!args.json_out.empty() &&
        !write_file(args.json_out,
                    dump_json(ordered_json{{"schema_version", 1}, {"layouts", std::move(ranked)}}, 2) +
                        "\n",
                    err))
      return 1;
    return 0;
  }

  tr::Layout layout{.tp = args.tp,
                    .pp = args.pp,
                    .dp = args.dp,
                    .micro_batch_size = args.micro_batch_size,
                    .micro_batches = args.micro_batches,
                    .recompute = args.recompute,
                    .recompute_layers = args.recompute_layers,
                    .virtual_stages = args.virtual_stages,
                    .zero = args.zero,
                    .sequence_parallel = args.sequence_parallel,
                    .cp = args.cp,
                    .ep = args.ep,
                    .pipeline_counts_embedding = args.pipeline_counts_embedding,
                    .pipeline_counts_loss = args.pipeline_counts_loss};
  if (args.global_batch > 0) {
    const std::uint64_t per = args.dp * args.micro_batch_size;
    if (args.global_batch % per != 0) {
      err << fmt::format("error: --global-batch {} is not a multiple of dp {} x micro-batch size "
                         "{}\n",
                         args.global_batch, args.dp, args.micro_batch_size);
      return 2;
    }
    layout.micro_batches = args.global_batch / per;
  }
  const auto report =
      tr::price_training_step(*model, args.seq, layout, framework, hw, options, diags);
  if (!report) {
    err << diags.format_all();
    return 1;
  }
  if (!diags.all().empty()) err << diags.format_all();
  print_report(*report, out);
  if (!args.json_out.empty() &&
      !write_file(args.json_out,
                  dump_json(ordered_json{{"schema_version", 1},
                                         {"training_step", report_json(*report)}},
                            2) +
                      "\n",
                  err))
    return 1;
  return 0;
}

}  // namespace coda::cli
