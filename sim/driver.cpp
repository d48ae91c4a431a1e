#include "sim/driver.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "arch/arch_spec.h"
#include "core/hash.h"
#include "mapper/schedule.h"
#include "sim/analytical/analytical_engine.h"
#include "sim/analytical/unit_costs.h"
#include "workloads/importers.h"

namespace coda::sim {

void register_builtin_engines(EngineRegistry& registry) {
  registry.add("analytical", [] { return std::make_unique<analytical::AnalyticalEngine>(); });
}

std::uint64_t file_hash(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return 0;
  std::stringstream bytes;
  bytes << in.rdbuf();
  return fnv1a64(bytes.str());
}

results::MemoryFootprint memory_footprint(const mapper::Schedule& schedule) {
  const mapper::MemoryPlan& plan = schedule.memory;
  const mapper::FitReport& fit = schedule.fit;
  return {fit.status,
          fit.needed,
          fit.available,
          plan.weights,
          plan.kv_cache,
          plan.optimizer_state,
          plan.arena,
          fit.on_chip,
          fit.ops_over_on_chip.size(),
          fit.reason};
}

results::RunResult run_schedule(const Engine& engine, const mapper::Schedule& schedule,
                                const workload::Graph& graph, const arch::HardwareModel& hw,
                                const std::optional<mapper::ScheduleSearch>& search,
                                const RunOptions& options) {
  results::RunResult run = engine.run(schedule, hw, options);
  for (const mapper::UnsupportedOp& op : schedule.unsupported)
    run.skipped.push_back({op.name, op.reason});
  run.fusion_mode = std::string(mapper::to_string(schedule.fusion.mode));
  if (hw.has_tensor_cores()) {
    run.gemm_path = std::string(arch::to_string(hw.gemm_path()));
    run.attention_impl = std::string(arch::to_string(hw.attention_impl()));
    run.decode_attention = std::string(arch::to_string(hw.decode_attention()));
  }
  for (const mapper::FusionGroup& group : schedule.fusion.groups) {
    results::FusedGroup fused{std::string(mapper::to_string(group.kind)), {},
                              group.dram_bytes_saved};
    for (const std::size_t i : group.ops) fused.ops.push_back(graph.ops[i].name);
    run.fusion.push_back(std::move(fused));
  }
  for (const mapper::RejectedFusion& rejected : schedule.fusion.rejected) {
    results::RejectedGroup entry{std::string(mapper::to_string(rejected.kind)), {},
                                 rejected.reason};
    for (const std::size_t i : rejected.ops) entry.ops.push_back(graph.ops[i].name);
    run.fusion_rejected.push_back(std::move(entry));
  }
  const mapper::ResidencyPlan& plan = schedule.residency;
  if (plan.activations || plan.weights) {
    const auto tensor = [&](workload::TensorId t) { return graph.tensor(t).name; };
    results::Residency residency{plan.activations, plan.pool, {}, {}, {}};
    for (const mapper::KeptTensor& kept : plan.kept)
      residency.kept.push_back({tensor(kept.tensor), kept.bytes, graph.ops[kept.producer].name,
                                graph.ops[kept.last_reader].name, kept.dram_bytes_saved});
    for (const mapper::RejectedTensor& rejected : plan.rejected)
      residency.rejected.push_back({tensor(rejected.tensor), rejected.bytes, rejected.reason});
    if (const auto& w = plan.weights) {
      residency.weights = results::CachedWeights{
          w->levels,         w->capacity,       w->reserve,          w->budget,
          w->cached,         w->streamed,       w->tensors.size(),
          w->streamed_tensors.size(),
          w->streamed_tensors.empty() ? std::string() : tensor(w->streamed_tensors.front()),
          w->dram_bytes_saved};
    }
    run.residency = std::move(residency);
  }
  if (search)
    run.mapper = fmt::format("search: {}, {}", mapper::to_string(search->settings.strategy),
                             mapper::to_string(search->goal.objective));
  run.memory = memory_footprint(schedule);
  return run;
}

void add_host_issue(results::RunResult& run, const mapper::Schedule& schedule, double issue) {
  run.launch = "eager";
  run.host_issue = Seconds{issue};
  if (run.ops.size() != schedule.ops.size() || run.clock.value <= 0) return;
  // One entry per kernel: an op that launches its own, plus the ops fused into it after it.
  std::vector<double> kernels;
  double own = 0;
  for (std::size_t i = 0; i < run.ops.size(); ++i) {
    const double seconds = static_cast<double>(run.ops[i].cost.cycles.value) / run.clock.value;
    own += seconds;
    if (schedule.ops[i].own_kernel || kernels.empty())
      kernels.push_back(seconds);
    else
      kernels.back() += seconds;
  }
  run.host_wait = Seconds{std::max(0.0, analytical::host_issued_seconds(kernels, issue) - own)};
}

bool apply_attention_choice(arch::ArchSpec& spec, const std::filesystem::path& arch_file,
                            std::optional<arch::AttentionImpl> attention,
                            std::optional<arch::DecodeAttention> decode_attention,
                            Diagnostics& diags) {
  if (attention) {
    const arch::ComputeUnitSpec* tc = arch::find_unit(spec, arch::UnitKind::TensorCore);
    const bool wgmma = tc != nullptr && tc->tensor_core &&
                       std::find(tc->tensor_core->paths.begin(), tc->tensor_core->paths.end(),
                                 arch::TensorPath::Wgmma) != tc->tensor_core->paths.end();
    if (tc == nullptr || (*attention == arch::AttentionImpl::Fa3 && !wgmma)) {
      diags.error({arch_file.string(), 0, 0}, "--attention",
                  tc == nullptr ? "the arch has no tensor cores: its attention is not a GPU kernel"
                                : "fa3 needs the wgmma path, which this arch's tensor cores lack",
                  "leave --attention out, or use fa2");
      return false;
    }
    if (*attention == arch::AttentionImpl::Triton && !spec.calibration.attention_triton) {
      diags.error({arch_file.string(), 0, 0}, "--attention",
                  "triton needs calibration.attention_triton (its share of fa2's matrix rate), "
                  "which this arch does not state",
                  "leave --attention out, use fa2, or state calibration.attention_triton");
      return false;
    }
    spec.calibration.attention = *attention;
  }
  if (decode_attention) {
    if (arch::find_unit(spec, arch::UnitKind::TensorCore) == nullptr) {
      diags.error({arch_file.string(), 0, 0}, "--decode-attention",
                  "the arch has no tensor cores: its decode attention is not a GPU kernel",
                  "leave --decode-attention out");
      return false;
    }
    spec.calibration.decode_attention = *decode_attention;
  }
  return true;
}

std::optional<results::RunResult> run_files(const RunFiles& files, Diagnostics& diags) {
  EngineRegistry builtin;
  if (files.engines == nullptr) register_builtin_engines(builtin);
  const auto engine = (files.engines != nullptr ? *files.engines : builtin).create(files.engine);

  // Read both inputs before stopping, so the user sees every error at once.
  const auto arch = files.arch_spec ? files.arch_spec : arch::load_arch(files.arch, diags);
  const workload::WorkloadSource source =
      files.source ? *files.source : workload::FileSource{.file = files.workload};
  auto loaded = workload::load_source(source, diags);
  if (!arch || !loaded) return std::nullopt;
  const workload::Graph* graph = &loaded->graph;
  const std::string source_name = workload::describe(source);

  arch::ArchSpec spec = arch->spec;
  // An LLM's training phase runs at the arch's training clock (calibration.training_clock).
  if (const auto* llm = std::get_if<workload::LlmSource>(&source);
      llm != nullptr && llm->phase.kind == workload::llm::PhaseKind::Training)
    spec = arch::training_step_view(std::move(spec));
  if (!apply_attention_choice(spec, files.arch, files.attention, files.decode_attention, diags))
    return std::nullopt;
  if (files.eager && !spec.calibration.eager_issue_time) {
    diags.error({files.arch.string(), 0, 0}, "--launch eager",
                "the arch states no calibration.eager_issue_time (the host's time to issue one "
                "kernel), so an eager launch cannot be priced",
                "add calibration.eager_issue_time to the arch (e.g. 16 us, as nvidia_h100_sxm.yaml "
                "states for TensorRT-LLM's runtime), or leave --launch out (a CUDA graph)");
    return std::nullopt;
  }
  if (spec.dram.model == arch::DramModel::ScaleSim &&
      (files.search || files.engine != "analytical")) {
    diags.error({files.arch.string(), 0, 0}, "dram.model",
                "model: scalesim times the analytical engine's folds as SCALE-Sim does; " +
                    std::string(files.search ? "--mapper search prices loop nests"
                                             : "the '" + files.engine + "' engine times DRAM") +
                    " with coda's own memory model",
                "run the analytical engine without --mapper search, or use model: coda");
    return std::nullopt;
  }
  const arch::HardwareModel hw(spec);
  const mapper::Schedule schedule = mapper::schedule_graph(
      *graph, hw,
      mapper::ScheduleOptions{files.precision,
                              files.fusion.value_or(
                                  spec.calibration.fusion.value_or(mapper::FusionMode::None)),
                              files.search});
  if (!schedule.unsupported.empty() && !files.skip_unsupported) {
    for (const mapper::UnsupportedOp& op : schedule.unsupported)
      diags.error(op.source.file.empty() ? SourceLocation{source_name, 0, 0} : op.source,
                  fmt::format("op '{}'", op.name), op.reason,
                  "run with --skip-unsupported to leave such ops out (they are listed in the "
                  "results)");
    return std::nullopt;
  }
  results::RunResult run =
      run_schedule(*engine, schedule, *graph, hw, files.search, RunOptions{files.trace});
  if (files.eager) add_host_issue(run, schedule, hw.eager_issue_seconds());
  run.provenance.inputs = {
      {"arch", files.arch.string(), results::hex_hash(arch->content_hash)},
      {"workload", source_name, results::hex_hash(workload::source_hash(source))}};
  run.workload_notes = std::move(loaded->notes);
  return run;
}

}  // namespace coda::sim
