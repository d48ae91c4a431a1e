#include "cli/serve_command.h"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <ostream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "arch/arch_spec.h"
#include "arch/hardware_model.h"
#include "cli/options.h"
#include "core/csv.h"
#include "core/diagnostics.h"
#include "core/text.h"
#include "mapper/fusion.h"
#include "sim/driver.h"
#include "sim/serving/deployment_search.h"
#include "sim/serving/iteration_cost.h"
#include "sim/serving/requests.h"
#include "sim/serving/serve_output.h"
#include "sim/serving/simulator.h"

namespace coda::cli {
namespace {

namespace sv = sim::serving;
using nlohmann::ordered_json;

std::string gib(Bytes b) {
  return fmt::format("{:.2f} GiB", static_cast<double>(b.value) / (1ull << 30));
}

// The headline's and the deployment table's words for a batching mode.
std::string_view batching_phrase(sv::Batching batching) {
  switch (batching) {
    case sv::Batching::Mixed:
      return "mixed batches";
    case sv::Batching::Chunked:
      return "chunked prefill";
    case sv::Batching::PrefillFirst:
      break;
  }
  return "prefill first";
}

void print_stats_row(std::ostream& out, const char* name, const sv::Stats& s, double scale) {
  out << fmt::format("  {:<10} {:>10.4g} {:>10.4g} {:>10.4g} {:>10.4g} {:>10.4g}\n", name,
                     s.mean * scale, s.p50 * scale, s.p90 * scale, s.p99 * scale, s.max * scale);
}

void print_summary(std::ostream& out, const sv::ServeResult& r, const sv::Slo& slo) {
  const sv::ServeSummary& s = r.summary;
  out << fmt::format(
      "throughput: {:.4g} requests/s, {:.4g} output tokens/s, {:.4g} tokens/s "
      "(prompt and output), over {:.4g} s; busy {:.1f}%\n",
      s.requests_per_s, s.output_tokens_per_s, s.total_tokens_per_s, s.duration,
      100 * s.busy_fraction);
  out << fmt::format("  {:<10} {:>10} {:>10} {:>10} {:>10} {:>10}\n", "ms", "mean", "p50", "p90",
                     "p99", "max");
  print_stats_row(out, "TTFT", s.ttft, 1e3);
  print_stats_row(out, "TPOT", s.tpot, 1e3);
  print_stats_row(out, "ITL", s.itl, 1e3);
  print_stats_row(out, "E2E", s.e2e, 1e3);
  out << fmt::format(
      "iterations {}: batch mean {:.1f}, max {} sequences; KV cache used mean "
      "{:.1f}%, max {:.1f}%; preemptions {}{}\n",
      s.iterations, s.mean_batch, s.max_batch, 100 * s.kv_utilisation_mean,
      100 * s.kv_utilisation_max, s.preemptions,
      s.swap_outs > 0 ? fmt::format(" ({} swapped out; {:.4g} ms of swap copies)", s.swap_outs,
                                    s.swap_seconds * 1e3)
                      : std::string());
  if (slo.any())
    out << fmt::format(
        "SLO (p{:g} TTFT <= {}, TPOT <= {}): {}; {:.1f}% of requests within both, "
        "goodput {:.4g} requests/s\n",
        slo.percentile, slo.ttft > 0 ? fmt::format("{:g} ms", slo.ttft * 1e3) : "-",
        slo.tpot > 0 ? fmt::format("{:g} ms", slo.tpot * 1e3) : "-",
        s.meets_slo ? "met" : "NOT met", 100 * s.slo_attainment, s.goodput_rps);
}

// Creates the --out folder; false (the error printed) when it cannot.
bool make_out_dir(const std::string& dir, std::ostream& err) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) err << fmt::format("error: --out: cannot create '{}': {}\n", dir, ec.message());
  return !ec;
}

int run_deployment_search(const ServeArgs& args, const workload::llm::LlmConfig& model,
                          const arch::HardwareModel& hw, const sv::PricerOptions& pricing,
                          const sv::Deployment& deployment, const sv::RequestSpec& spec,
                          const sv::Slo& slo, std::ostream& out, std::ostream& err) {
  Diagnostics diags;
  sv::DeploymentSearch search{.chips = args.chips, .steps = args.search_steps};
  if (args.chip_cost > 0) search.chip_cost_per_hour = args.chip_cost;
  const auto ranked =
      sv::search_deployments(model, hw, pricing, deployment, spec, slo, search, diags);
  if (!ranked) {
    err << diags.format_all();
    return 1;
  }
  out << fmt::format(
      "layouts of {} chips, ranked by the highest rate within the SLO (p{:g} TTFT "
      "<= {}, TPOT <= {}):\n",
      args.chips, slo.percentile, slo.ttft > 0 ? fmt::format("{:g} ms", slo.ttft * 1e3) : "-",
      slo.tpot > 0 ? fmt::format("{:g} ms", slo.tpot * 1e3) : "-");
  out << fmt::format("  {:>3} {:>3} {:>8} {:<15} {:>10} {:>10} {:>12} {:>10} {:>10} {:>10}\n", "tp",
                     "pp", "replicas", "prefill", "rate/s", "offline/s", "tok/s/chip", "TTFT p99",
                     "TPOT p99", "cost/Mtok");
  std::string csv =
      "tp,pp,replicas,batching,prefill_replicas,decode_replicas,rate_rps,offline_rps,output_"
      "tokens_per_s_per_chip,"
      "ttft_p99_s,tpot_p99_s,cost_per_million_tokens,rejected\n";
  for (const sv::DeploymentResult& r : *ranked) {
    const sv::DeploymentCandidate& c = r.candidate;
    const std::string prefill =
        c.disaggregated
            ? fmt::format("disagg {}:{}", c.disaggregated->prefill, c.disaggregated->decode)
            : std::string(batching_phrase(c.batching));
    const std::string cost =
        r.cost_per_million_tokens ? fmt::format("{:.4g}", *r.cost_per_million_tokens) : "";
    if (!r.rejected.empty()) {
      out << fmt::format("  {:>3} {:>3} {:>8} {:<15} rejected: {}\n", c.tp, c.pp, c.replicas,
                         prefill, r.rejected);
    } else if (!r.at_rate) {
      out << fmt::format("  {:>3} {:>3} {:>8} {:<15} {:>10} {:>10.4g}  (no rate within the SLO)\n",
                         c.tp, c.pp, c.replicas, prefill, "-", r.offline_rps);
    } else {
      out << fmt::format(
          "  {:>3} {:>3} {:>8} {:<15} {:>10.4g} {:>10.4g} {:>12.4g} {:>10.4g} "
          "{:>10.4g} {:>10}\n",
          c.tp, c.pp, c.replicas, prefill, r.rate, r.offline_rps, r.tokens_per_chip_s,
          r.at_rate->ttft.p99 * 1e3, r.at_rate->tpot.p99 * 1e3, cost);
    }
    csv += fmt::format(
        "{},{},{},{},{},{},{},{},{},{},{},{},{}\n", c.tp, c.pp, c.replicas,
        sv::to_string(c.batching),
        c.disaggregated ? fmt::format("{}", c.disaggregated->prefill) : "",
        c.disaggregated ? fmt::format("{}", c.disaggregated->decode) : "", r.rate, r.offline_rps,
        r.tokens_per_chip_s, r.at_rate ? fmt::format("{}", r.at_rate->ttft.p99) : "",
        r.at_rate ? fmt::format("{}", r.at_rate->tpot.p99) : "", cost, csv_cell(r.rejected));
  }
  out << "  (TTFT and TPOT p99 in ms, at each layout's rate)\n";
  if (!args.out.empty()) {
    if (!make_out_dir(args.out, err)) return 1;
    const std::filesystem::path file = std::filesystem::path(args.out) / "deployments.csv";
    if (!write_file(file, csv, err)) return 1;
    out << fmt::format("wrote {}\n", file.string());
  }
  return 0;
}

}  // namespace

CLI::App* add_serve_command(CLI::App& app, ServeArgs& args) {
  CLI::App* cmd = app.add_subcommand(
      "serve",
      "Simulate an LLM serving deployment under a request stream (docs/serving.md): "
      "continuous batching with vLLM's scheduler, chunked prefill, a paged KV cache "
      "and preemption; TTFT, TPOT, ITL and end-to-end percentiles, throughput and "
      "goodput under an SLO; with --search-rate, the highest rate within the SLO");
  cmd->add_option("--arch", args.arch, "Architecture config of one chip (YAML)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--llm", args.llm,
                  "The model: a coda model YAML (configs/workloads/llm/) or a Hugging Face "
                  "config.json")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--dtype", args.dtype,
                  "The model's type: weights, activations and KV cache (default: the config's)");
  add_quantization_options(*cmd, args.quant, args.kv_dtype, args.fp8_context_fmha);
  cmd->add_option("--tp", args.tp, "Tensor-parallel chips per replica")
      ->capture_default_str()
      ->check(kPositive);
  cmd->add_option("--pp", args.pp,
                  "Pipeline stages per replica (dividing the model's layers), tp x pp chips: run "
                  "as vLLM's virtual engines, one per stage, each with its own scheduler and "
                  "share of the KV cache, their iterations in flight through the stages at once; "
                  "with --disaggregate, both pools' replicas")
      ->capture_default_str()
      ->check(kPositive);
  cmd->add_option("--replicas", args.replicas,
                  "Replicas of the model, each fed every replicas-th request (round-robin)")
      ->capture_default_str()
      ->check(kPositive);
  cmd->add_option("--disaggregate", args.disaggregate,
                  "P:D: disaggregated prefill and decode (DistServe, Splitwise), P replicas that "
                  "only prefill and D that decode, each KV cache sent over the chip links; "
                  "instead of --replicas")
      ->excludes("--replicas");
  cmd->add_option("--decode-tp", args.decode_tp,
                  "With --disaggregate: tensor-parallel chips per decode replica (DistServe runs "
                  "the pools at different TP); default --tp")
      ->needs("--disaggregate")
      ->check(kPositive);
  CLI::Option* rate = cmd->add_option("--rate", args.rate,
                                      "Open loop: Poisson arrivals at this many requests per "
                                      "second (gamma with --cv)")
                          ->check(kPositive);
  cmd->add_option("--cv", args.cv,
                  "With --rate or --search-rate: gamma-distributed gaps with this coefficient "
                  "of variation instead of Poisson's 1 (burstier above 1)")
      ->check(kPositive);
  CLI::Option* concurrency =
      cmd->add_option("--concurrency", args.concurrency,
                      "Closed loop: this many clients, each sending its next request when its "
                      "last one ends")
          ->check(kPositive);
  cmd->add_option("--warmup", args.warmup,
                  "The first N requests (by id; with --concurrency, the first sends) run but are "
                  "left out of every statistic, as a benchmark's warm-up (AIPerf's "
                  "--warmup-request-count)");
  CLI::Option* offline =
      cmd->add_flag("--offline", args.offline, "Every request at time 0 (a throughput run)");
  CLI::Option* trace =
      cmd->add_option("--trace", args.trace,
                      "A request trace: CSV with columns arrival_s, input_tokens, output_tokens")
          ->check(CLI::ExistingFile);
  CLI::Option* search =
      cmd->add_flag("--search-rate", args.search_rate,
                    "Find the highest Poisson rate (gamma with --cv) whose SLO percentile of "
                    "TTFT and TPOT is within --slo-ttft and --slo-tpot, by bisection below the "
                    "offline throughput");
  CLI::Option* rates =
      cmd->add_option("--rates", args.rates,
                      "A latency-vs-rate curve: Poisson (gamma with --cv) at each of these "
                      "rates, e.g. 1,2,4,8; the same requests at every rate")
          ->delimiter(',')
          ->check(kPositive);
  CLI::Option* deployments = cmd->add_flag(
      "--search-deployments", args.search_deployments,
      "Rank every layout of --chips chips (TP ranks x PP stages per replica x replicas, "
      "prefill-first and "
      "chunked prefill) by the highest Poisson rate it sustains within the SLO");
  for (CLI::Option* a : {rate, concurrency, offline, trace, search, deployments, rates})
    for (CLI::Option* b : {rate, concurrency, offline, trace, search, deployments, rates})
      if (a != b) a->excludes(b);
  // The search lays out pipeline stages itself.
  cmd->get_option("--pp")->excludes(deployments);
  CLI::Option* chips =
      cmd->add_option("--chips", args.chips, "With --search-deployments: the chips to lay out")
          ->check(kPositive);
  cmd->add_option("--chip-cost", args.chip_cost,
                  "With --search-deployments: a chip's cost per hour (any currency), for the "
                  "cost of a million output tokens at each layout's rate")
      ->check(kPositive);
  deployments->needs(chips);
  CLI::Option* requests = cmd->add_option("--requests", args.requests, "Requests to simulate")
                              ->capture_default_str()
                              ->check(kPositive);
  CLI::Option* input =
      cmd->add_option("--input-len", args.input_len,
                      "Prompt tokens: N, uniform:MIN:MAX or lognormal:MEDIAN:SIGMA:MIN:MAX")
          ->capture_default_str();
  CLI::Option* output =
      cmd->add_option("--output-len", args.output_len,
                      "Tokens to generate (the first by the prefill), as --input-len")
          ->capture_default_str();
  CLI::Option* prefix =
      cmd->add_option("--shared-prefix", args.shared_prefix,
                      "Tokens every prompt starts with (a system prompt), before its "
                      "--input-len tokens; --prefix-caching reuses them");
  for (CLI::Option* o : {requests, input, output, prefix}) trace->excludes(o);
  cmd->add_option("--seed", args.seed, "Seed of the arrivals and lengths")->capture_default_str();
  cmd->add_option("--max-batch", args.max_batch, "Sequences running at once (vLLM's max_num_seqs)")
      ->capture_default_str()
      ->check(kPositive);
  cmd->add_option("--max-batched-tokens", args.max_batched_tokens,
                  "Tokens per iteration (vLLM's max_num_batched_tokens, TensorRT-LLM's "
                  "max_num_tokens); default 512 chunked, max(8192, the longest request) mixed, "
                  "else max(2048, the longest request)")
      ->check(kPositive);
  cmd->add_option("--runtime", args.runtime,
                  "Whose scheduler defaults: vllm (--batching prefill_first, --kv-admission "
                  "on_demand: vLLM 0.6) or tensorrt_llm (mixed, guaranteed_no_evict: "
                  "TensorRT-LLM's in-flight batching and capacity scheduler)")
      ->capture_default_str()
      ->check(CLI::IsMember({"vllm", "tensorrt_llm"}));
  CLI::Option* batching =
      cmd->add_option(
             "--batching", args.batching,
             "What an iteration runs: prefill_first (all prefills or all decodes: "
             "vLLM 0.6's default), mixed (decodes, then whole prompts in the rest of the "
             "token budget: TensorRT-LLM's in-flight batching) or chunked (decodes, then "
             "prompts in chunks: Sarathi-Serve's chunked prefill); default the --runtime's")
          ->check(CLI::IsMember({"prefill_first", "mixed", "chunked"}));
  cmd->add_flag("--chunked-prefill", args.chunked_prefill, "The same as --batching chunked")
      ->excludes(batching);
  cmd->add_flag("--prefix-caching", args.prefix_caching,
                "vLLM's automatic prefix caching: the shared prefix's whole KV blocks stay "
                "cached once made, and later prompts compute only the rest");
  cmd->add_option("--policy", args.policy,
                  "Admission order: fcfs (arrival) or shortest_first (fewest prompt tokens)")
      ->capture_default_str()
      ->check(CLI::IsMember({"fcfs", "shortest_first"}));
  cmd->add_option("--kv-admission", args.kv_admission,
                  "KV blocks taken at admission: on_demand (the prompt's, more as decode needs "
                  "them, preempting when none is free: vLLM) or guaranteed_no_evict (the whole "
                  "sequence's, never preempting: TensorRT-LLM's default); default the "
                  "--runtime's")
      ->check(CLI::IsMember({"on_demand", "guaranteed_no_evict"}));
  cmd->add_option("--preemption", args.preemption,
                  "What preemption does with a sequence's KV cache (vLLM's --preemption-mode): "
                  "recompute (free it; prefill again later: vLLM's default) or swap (copy it to "
                  "the host's memory over the arch's host_link, and back when it fits; no new "
                  "prompts while any is out)")
      ->capture_default_str()
      ->check(CLI::IsMember({"recompute", "swap"}));
  cmd->add_option("--swap-space", args.swap_space_gib,
                  "With --preemption swap: host memory for swapped KV blocks, GiB a chip "
                  "(vLLM's --swap-space; default 4, vLLM's)")
      ->check(kPositive);
  cmd->add_option("--block-size", args.block_size, "Tokens per KV-cache block")
      ->capture_default_str()
      ->check(kPositive);
  cmd->add_option("--memory-utilization", args.memory_utilization,
                  "Share of each chip's DRAM for weights, activations and KV cache (vLLM's "
                  "gpu_memory_utilization)")
      ->capture_default_str()
      ->check(CLI::Range(0.01, 1.0));
  cmd->add_option("--watermark", args.watermark,
                  "Share of KV blocks kept free when admitting a prompt (vLLM's 0.01)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 0.5));
  cmd->add_option("--kv-blocks", args.kv_blocks,
                  "KV-cache blocks per replica, instead of what the memory leaves")
      ->check(kPositive);
  cmd->add_option("--iteration-overhead", args.iteration_overhead_ms,
                  "Host time added to every iteration (scheduling, sampling, the step's sync), ms; "
                  "default: the arch's calibration.llm_step_fixed_cost, else 0")
      ->check(CLI::Range(0.0, 1e6));
  cmd->add_option("--slo-ttft", args.slo_ttft_ms, "SLO: time to first token, ms")->check(kPositive);
  cmd->add_option("--slo-tpot", args.slo_tpot_ms, "SLO: time per output token, ms")
      ->check(kPositive);
  cmd->add_option("--slo-percentile", args.slo_percentile,
                  "The percentile of TTFT and TPOT the SLO holds (MLPerf's LLM server: 99)")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 100.0));
  cmd->add_option("--search-steps", args.search_steps, "Bisections of --search-rate")
      ->capture_default_str()
      ->check(CLI::Range(1, 40));
  cmd->add_option("--fusion", args.fusion,
                  "none, eager (as PyTorch runs eagerly), epilogue or all (docs/fusion.md); "
                  "default: the arch's, else epilogue "
                  "(attention as one kernel, as every serving engine runs it)")
      ->check(CLI::IsMember({"none", "eager", "epilogue", "all"}));
  cmd->add_option("--attention", args.attention,
                  "GPUs' fused-attention class: fa2, fa3 or triton (as coda run --attention)")
      ->check(CLI::IsMember({"fa2", "fa3", "triton"}));
  cmd->add_option("--decode-attention", args.decode_attention,
                  "GPUs' decode-attention class: grouped, per_head or fa2_forward (as coda run)")
      ->check(CLI::IsMember({"grouped", "per_head", "fa2_forward"}));
  cmd->add_option("--out", args.out,
                  "Folder to write serve.json, requests.csv and iterations.csv into");
  return cmd;
}

int run_serve_command(const ServeArgs& args, std::ostream& out, std::ostream& err) {
  const bool searching = args.search_rate || args.search_deployments || !args.rates.empty();
  if (!searching && args.rate == 0 && args.concurrency == 0 && !args.offline &&
      args.trace.empty()) {
    err << "error: serve: say how requests arrive: --rate R (Poisson), --concurrency N (closed "
           "loop), --offline, --trace FILE.csv, or --search-rate / --search-deployments with an "
           "SLO\n";
    return 2;
  }
  if (args.cv > 0 && args.rate == 0 && !searching) {
    err << "error: --cv: gamma arrivals need --rate (or --search-rate)\n";
    return 2;
  }
  Diagnostics diags;
  auto model = load_llm_option(args.llm, diags);
  auto arch = arch::load_arch(args.arch, diags);
  sv::RequestSpec spec;
  const auto input = sv::parse_length(args.input_len, "--input-len", diags);
  const auto output = sv::parse_length(args.output_len, "--output-len", diags);
  if (!model || !arch || !input || !output) {
    err << diags.format_all();
    return 1;
  }
  if (!read_model_dtype(args.dtype, *model, err)) return 2;
  arch::ArchSpec arch_spec = arch->spec;
  const std::optional<arch::AttentionImpl> attention =
      args.attention.empty() ? std::nullopt : arch::parse_attention_impl(args.attention);
  const std::optional<arch::DecodeAttention> decode_attention =  // CLI11 has checked the name
      args.decode_attention.empty() ? std::nullopt
                                    : arch::parse_decode_attention(args.decode_attention);
  if (!sim::apply_attention_choice(arch_spec, args.arch, attention, decode_attention, diags)) {
    err << diags.format_all();
    return 1;
  }
  const arch::HardwareModel hw(arch_spec);
  sv::PricerOptions pricing;
  pricing.tp = args.tp;
  pricing.pp = args.pp;
  if (!args.fusion.empty()) pricing.fusion = mapper::parse_fusion_mode(args.fusion);
  if (!read_quantization(args.quant, args.kv_dtype, args.fp8_context_fmha, pricing.quant, diags)) {
    err << diags.format_all();
    return 2;
  }
  auto pricer = sv::IterationPricer::make(*model, hw, pricing, diags);
  if (!pricer) {
    err << diags.format_all();
    return 1;
  }

  sv::Deployment deployment;
  deployment.replicas = args.replicas;
  if (!args.disaggregate.empty()) {
    const auto colon = args.disaggregate.find(':');
    const auto p = colon == std::string::npos
                       ? std::nullopt
                       : parse_whole_uint(std::string_view(args.disaggregate).substr(0, colon));
    const auto d = colon == std::string::npos
                       ? std::nullopt
                       : parse_whole_uint(std::string_view(args.disaggregate).substr(colon + 1));
    if (!p || !d || *p == 0 || *d == 0) {
      err << fmt::format(
          "error: --disaggregate: '{}' is not P:D, the prefill and decode "
          "replicas (each at least 1), e.g. 1:3\n",
          args.disaggregate);
      return 2;
    }
    deployment.disaggregated = sv::Disaggregation{.prefill = *p, .decode = *d};
  }
  const std::uint64_t decode_tp = args.decode_tp > 0 ? args.decode_tp : args.tp;
  std::optional<sv::IterationPricer> decode_pricer;
  if (decode_tp != args.tp) {
    sv::PricerOptions decode_pricing = pricing;
    decode_pricing.tp = decode_tp;
    decode_pricer = sv::IterationPricer::make(*model, hw, decode_pricing, diags);
    if (!decode_pricer) {
      err << diags.format_all();
      return 1;
    }
    deployment.disaggregated->decode_pricer = &*decode_pricer;
  }
  sv::SchedulerConfig& sched = deployment.scheduler;
  sched.max_batch = args.max_batch;
  sched.max_batched_tokens = args.max_batched_tokens;
  // CLI11 has checked every name below.
  sv::apply_runtime(sched, *enum_value(sv::runtime_names(), args.runtime));
  if (args.chunked_prefill) sched.batching = sv::Batching::Chunked;
  if (!args.batching.empty()) sched.batching = *enum_value(sv::batching_names(), args.batching);
  sched.prefix_caching = args.prefix_caching;
  sched.policy = *enum_value(sv::policy_names(), args.policy);
  if (!args.kv_admission.empty())
    sched.admission = *enum_value(sv::kv_admission_names(), args.kv_admission);
  sched.preemption = *enum_value(sv::preemption_names(), args.preemption);
  if (args.swap_space_gib > 0) {
    if (sched.preemption != sv::Preemption::Swap) {
      err << "error: --swap-space: swap space is used only with --preemption swap\n";
      return 2;
    }
    sched.swap_space = Bytes{static_cast<std::uint64_t>(args.swap_space_gib * (1ull << 30))};
  }
  sched.block_size = args.block_size;
  sched.memory_utilization = args.memory_utilization;
  sched.watermark = args.watermark;
  if (args.kv_blocks > 0) sched.kv_blocks = args.kv_blocks;
  if (args.iteration_overhead_ms >= 0) sched.iteration_overhead = args.iteration_overhead_ms * 1e-3;
  const sv::Slo slo{.ttft = args.slo_ttft_ms * 1e-3,
                    .tpot = args.slo_tpot_ms * 1e-3,
                    .percentile = args.slo_percentile};

  spec.input = *input;
  spec.output = *output;
  spec.count = args.requests;
  spec.seed = args.seed;
  spec.shared_prefix = args.shared_prefix;
  std::string arrivals_text;
  std::vector<sv::Request> requests;
  if (!args.trace.empty()) {
    auto read = sv::read_request_trace(args.trace, diags);
    if (!read) {
      err << diags.format_all();
      return 1;
    }
    requests = std::move(*read);
    spec.arrivals = {.kind = sv::ArrivalKind::Poisson};  // unused: the trace's own times
    arrivals_text = fmt::format("trace {} ({} requests)", args.trace, requests.size());
  } else {
    if (args.offline) {
      spec.arrivals = {.kind = sv::ArrivalKind::Offline};
      arrivals_text = "offline (all at time 0)";
    } else if (args.concurrency > 0) {
      spec.arrivals = {.kind = sv::ArrivalKind::Closed, .concurrency = args.concurrency};
      arrivals_text = fmt::format("closed loop of {} clients", args.concurrency);
    } else {
      spec.arrivals = {.kind = args.cv > 0 ? sv::ArrivalKind::Gamma : sv::ArrivalKind::Poisson,
                       .rate = args.rate,
                       .cv = args.cv > 0 ? args.cv : 1.0};
      arrivals_text = searching ? fmt::format("{} at {} rates", to_string(spec.arrivals.kind),
                                              args.rates.empty() ? "searched" : "given")
                                : fmt::format("{} at {:g} requests/s",
                                              to_string(spec.arrivals.kind), args.rate);
      if (args.cv > 0) arrivals_text += fmt::format(" (gaps' cv {:g})", args.cv);
    }
    arrivals_text += fmt::format(
        "; {} requests{}, input {}{}, output {}, seed {}", args.requests,
        args.warmup > 0 ? fmt::format(" (the first {} a warm-up)", args.warmup) : std::string(),
        args.shared_prefix > 0 ? fmt::format("{} shared + ", args.shared_prefix) : std::string(),
        to_string(*input), to_string(*output), args.seed);
    if (!searching) requests = sv::make_requests(spec);
  }
  spec.arrivals.warmup = args.warmup;

  const std::string layout =
      args.search_deployments ? fmt::format("layouts of {} chips", args.chips)
      : deployment.disaggregated
          ? fmt::format("{} prefill replica(s) at TP {} + {} decode at TP {}{}",
                        deployment.disaggregated->prefill, args.tp,
                        deployment.disaggregated->decode, decode_tp,
                        args.pp > 1 ? fmt::format(", each x PP {}", args.pp) : std::string())
          : fmt::format("TP {}{} x {} replica(s)", args.tp,
                        args.pp > 1 ? fmt::format(" x PP {}", args.pp) : std::string(),
                        args.replicas);
  const std::string quant = workload::llm::describe(pricing.quant);
  out << fmt::format("coda serve: {} ({}{}) on '{}', {}; {}\n", model->name,
                     to_string(model->dtype), quant.empty() ? "" : ", " + quant, hw.name(), layout,
                     arrivals_text);

  if (args.search_deployments)
    return run_deployment_search(args, *model, hw, pricing, deployment, spec, slo, out, err);

  std::optional<sv::ServeResult> result;
  std::optional<sv::RateSearch> searched;
  std::vector<sv::RateProbe> curve;
  if (!args.rates.empty()) {
    auto measured = sv::rate_curve(*pricer, deployment, spec, args.rates, slo, diags);
    if (!measured) {
      err << diags.format_all();
      return 1;
    }
    curve = measured->points;
    out << fmt::format("  {:>10} {:>10} {:>12} {:>10} {:>10} {:>10} {:>10}  {}\n", "rate/s",
                       "served/s", "out tok/s", "TTFT p50", "TTFT p99", "TPOT p50", "TPOT p99",
                       slo.any() ? "SLO" : "");
    for (const sv::RateProbe& p : curve)
      out << fmt::format(
          "  {:>10.4g} {:>10.4g} {:>12.4g} {:>10.4g} {:>10.4g} {:>10.4g} "
          "{:>10.4g}  {}\n",
          p.rate, p.summary.requests_per_s, p.summary.output_tokens_per_s, p.summary.ttft.p50 * 1e3,
          p.summary.ttft.p99 * 1e3, p.summary.tpot.p50 * 1e3, p.summary.tpot.p99 * 1e3,
          slo.any() ? (p.summary.meets_slo ? "met" : "NOT met") : "");
    out << "  (TTFT and TPOT in ms); the full results below are the highest rate's\n";
    // The highest rate's whole result, for the files.
    spec.arrivals.rate = curve[measured->top_index].rate;
    result = std::move(measured->top);
  } else if (args.search_rate) {
    searched = sv::search_rate(*pricer, deployment, spec, slo, args.search_steps, diags);
    if (!searched) {
      err << diags.format_all();
      return 1;
    }
    out << fmt::format("rate search: offline throughput {:.4g} requests/s; probes:",
                       searched->offline_rps);
    for (const sv::RateProbe& p : searched->probes)
      out << fmt::format(" {:.4g}{}", p.rate, p.summary.meets_slo ? "+" : "-");
    out << "\n";
    if (!searched->best) {
      out << fmt::format("no rate above {:.4g} requests/s meets the SLO\n",
                         searched->probes.back().rate);
      return 0;
    }
    out << fmt::format("highest rate within the SLO: {:.4g} requests/s\n", searched->rate);
    result = std::move(searched->best);
    curve = searched->probes;
  } else {
    result = sv::simulate(*pricer, deployment, requests, spec.arrivals, slo, diags);
    if (!result) {
      err << diags.format_all();
      return 1;
    }
  }
  const sv::KvBudget& kv = result->kv;
  out << fmt::format(
      "scheduler: max batch {}, {} tokens per iteration, {}, {}, {}, host {:g} us an iteration; "
      "KV cache {} blocks of {} tokens ({} tokens, {} a token per chip)",
      sched.max_batch, result->max_batched_tokens, batching_phrase(sched.batching),
      to_string(sched.policy), to_string(sched.admission), result->iteration_overhead * 1e6,
      kv.blocks, kv.block_size, kv.tokens(), to_string(kv.kv_bytes_per_token));
  if (args.pp > 1)
    out << fmt::format(" over {} virtual engines ({} blocks each)", args.pp, kv.blocks / args.pp);
  if (sched.preemption == sv::Preemption::Swap)
    out << fmt::format("; preemption by swap to {} of host memory a chip ({} blocks)",
                       gib(sched.swap_space), kv.swap_blocks);
  if (kv.capacity.value > 0)
    out << fmt::format(": {} x {:g} less weights {} and activations {}", gib(kv.capacity),
                       sched.memory_utilization, gib(kv.weights), gib(kv.activations));
  out << "\n";
  if (const auto& dk = result->decode_kv)
    out << fmt::format(
        "decode pool at TP {}: KV cache {} blocks ({} tokens, {} a token per chip), weights {} a "
        "chip\n",
        decode_tp, dk->blocks, dk->tokens(), to_string(dk->kv_bytes_per_token), gib(dk->weights));
  print_summary(out, *result, slo);

  if (!args.out.empty()) {
    if (!make_out_dir(args.out, err)) return 1;
    ordered_json config = {
        {"model", model->name},
        {"model_file", args.llm},
        {"dtype", to_string(model->dtype)},
        {"quant", workload::llm::scheme_name(pricing.quant)},
        {"kv_dtype", to_string(pricing.quant.kv_cache.value_or(model->dtype))},
        {"arch", hw.name()},
        {"arch_file", args.arch},
        {"tp", args.tp},
        {"pp", args.pp},
        {"replicas", deployment.total_replicas()},
        {"disaggregated",
         deployment.disaggregated
             ? ordered_json{{"prefill_replicas", deployment.disaggregated->prefill},
                            {"decode_replicas", deployment.disaggregated->decode},
                            {"decode_tp", decode_tp}}
             : ordered_json(nullptr)},
        {"fusion", mapper::to_string(pricer->fusion())},
        {"arrivals", std::string(sv::to_string(spec.arrivals.kind))},
        {"rate", searched ? searched->rate : spec.arrivals.rate},
        {"cv", args.cv > 0 ? args.cv : 1.0},
        {"concurrency", args.concurrency},
        {"warmup", args.warmup},
        {"trace", args.trace},
        {"requests", result->requests.size()},
        {"input_len", args.trace.empty() ? sv::to_string(*input) : "trace"},
        {"output_len", args.trace.empty() ? sv::to_string(*output) : "trace"},
        {"seed", args.seed},
        {"shared_prefix", args.shared_prefix},
        {"scheduler",
         {{"max_batch", sched.max_batch},
          {"max_batched_tokens", result->max_batched_tokens},
          {"runtime", args.runtime},
          {"batching", sv::to_string(sched.batching)},
          {"prefix_caching", sched.prefix_caching},
          {"policy", sv::to_string(sched.policy)},
          {"kv_admission", sv::to_string(sched.admission)},
          {"preemption", sv::to_string(sched.preemption)},
          {"swap_space_bytes", sched.swap_space.value},
          {"block_size", sched.block_size},
          {"memory_utilization", sched.memory_utilization},
          {"watermark", sched.watermark},
          {"iteration_overhead_s", result->iteration_overhead}}},
        {"slo", {{"ttft_s", slo.ttft}, {"tpot_s", slo.tpot}, {"percentile", slo.percentile}}}};
    ordered_json doc = sv::serve_json(*result, std::move(config));
    if (!curve.empty()) {  // latency against load, by rate (docs/serving.md "Results")
      std::sort(curve.begin(), curve.end(),
                [](const sv::RateProbe& a, const sv::RateProbe& b) { return a.rate < b.rate; });
      ordered_json points = ordered_json::array();
      for (const sv::RateProbe& p : curve)
        points.push_back({{"rate", p.rate},
                          {"meets_slo", p.summary.meets_slo},
                          {"summary", sv::summary_json(p.summary)}});
      doc["rate_curve"] = std::move(points);
    }
    if (searched) {
      ordered_json probes = ordered_json::array();
      for (const sv::RateProbe& p : searched->probes)
        probes.push_back({{"rate", p.rate},
                          {"meets_slo", p.summary.meets_slo},
                          {"summary", sv::summary_json(p.summary)}});
      doc["rate_search"] = {{"offline_requests_per_s", searched->offline_rps},
                            {"rate", searched->rate},
                            {"probes", std::move(probes)}};
    }
    const std::filesystem::path dir(args.out);
    if (!write_file(dir / "serve.json", dump_json(doc, 2) + "\n", err) ||
        !write_file(dir / "requests.csv", sv::requests_csv(*result), err) ||
        !write_file(dir / "iterations.csv", sv::iterations_csv(*result), err))
      return 1;
    out << fmt::format("wrote {}/serve.json, requests.csv, iterations.csv\n", args.out);
  }
  return 0;
}

}  // namespace coda::cli
