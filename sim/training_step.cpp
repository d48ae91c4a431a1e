#include "sim/training_step.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <limits>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "core/check.h"
#include "sim/analytical/analytical_engine.h"
#include "sim/analytical/cluster_collective.h"
#include "sim/analytical/unit_costs.h"
#include "workloads/llm/llm_builder.h"
#include "workloads/op.h"
#include "workloads/tensor.h"

namespace coda::sim::training {
namespace {

namespace llm = workload::llm;
using workload::Function;
using workload::OpKind;

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

double bytes_per_element(DataType type) { return bit_width(type) / 8.0; }

Bytes scaled(std::uint64_t elements, double bytes_each) {
  return Bytes{static_cast<std::uint64_t>(static_cast<double>(elements) * bytes_each)};
}

// Where a group's ranks sit: `ranks` chips, `per_node` of them in each node it spans.
struct Group {
  std::uint64_t ranks = 1;
  std::uint64_t per_node = 1;
};

// A collective among a group's chips, inside a node on the chip's interconnect and across nodes
// on the cluster's network (price_cluster_collective), with its kernel's fixed cost as the engine
// prices a collective op. nullopt with `why` when the hardware cannot hold the group.
std::optional<double> collective_seconds(analytical::CollectiveKind kind, std::uint64_t bytes,
                                         Group group, const arch::HardwareModel& hw,
                                         const arch::ClusterSpec* cluster, std::string& why) {
  if (group.ranks <= 1 || bytes == 0) return 0.0;
  const auto priced = analytical::price_cluster_collective(
      kind, bytes, static_cast<std::uint32_t>(group.ranks),
      static_cast<std::uint32_t>(group.per_node), hw, cluster, why);
  if (!priced) return std::nullopt;
  return priced->cost.seconds + hw.kernel_fixed_seconds(arch::KernelKind::Collective);
}

// Chips in a node: the cluster's, else the chip's interconnect's (1 without one).
std::uint64_t node_chips(const arch::HardwareModel& hw, const arch::ClusterSpec* cluster) {
  if (cluster != nullptr) return cluster->chips_per_node;
  const auto& ic = hw.spec().interconnect;
  return ic ? ic->chips : 1;
}

// Megatron-LM's rank order (tensor innermost, then context, data, pipeline): the ranks that
// reduce a weight's gradients (dp x cp of them) have node / tp in each node when TP leaves room
// in a node, else one.
Group data_group(const Layout& layout, std::uint64_t node) {
  const std::uint64_t ranks = layout.dp * layout.cp;
  const std::uint64_t per = layout.tp >= node ? 1 : std::min(ranks, node / layout.tp);
  return {ranks, per};
}

// Expert parallelism's groups (Layout::ep; Megatron-Core's expert grid, expert tensor
// parallelism 1, innermost first: ep, then the expert data-parallel ranks): the ep consecutive
// ranks that exchange tokens, and the tp x dp x cp / ep ranks, ep apart, that hold the same
// experts. Without expert parallelism the experts are split as the rest of the layer is, and
// their gradients go with the others' over dp x cp.
Group expert_group(const Layout& layout, std::uint64_t node) {
  return {layout.ep, std::min(layout.ep, node)};
}
Group expert_data_group(const Layout& layout, std::uint64_t node) {
  if (layout.ep == 1) return data_group(layout, node);
  const std::uint64_t ranks = layout.tp * layout.dp * layout.cp / layout.ep;
  return {ranks, layout.ep >= node ? 1 : std::min(ranks, node / layout.ep)};
}

// What one stage's graph of one micro-batch costs and holds.
struct StagePrice {
  std::uint64_t first_layer = 0, layers = 0;
  double forward = 0, backward = 0, optimizer = 0, tp_comm = 0, send = 0;
  double expert_optimizer = 0;  // of optimizer: AdamW over the routed experts' weights
  double weight_cast = 0;  // Precision::Fp8's casts of the weights, once a step on every rank
  double forward_matrix_flops = 0, executed_matrix_flops = 0;  // one micro-batch, one rank
  std::uint64_t parameters = 0;  // elements of the rank's weights on the stage
  std::uint64_t expert_parameters = 0;  // of them, the routed experts' (Layout::ep shards them)
  Bytes peak_activations;        // the one-micro-batch run's, at its peak
  Bytes saved_activations;       // written by the forward, read by the backward
};

bool matrix_op(const workload::Op& op) {
  return op.kind == OpKind::Contraction || op.kind == OpKind::Attention;
}

// The activations a micro-batch's forward writes and its backward reads: what 1F1B keeps per
// micro-batch in flight.
Bytes saved_activations(const llm::LlmBuild& built) {
  const workload::Graph& g = built.graph;
  std::vector<llm::StepPart> part_of(g.ops.size(), llm::StepPart::Optimizer);
  for (const llm::OpSpan& span : built.spans)
    for (std::size_t i = span.first; i < span.end; ++i) part_of[i] = span.part;
  std::set<std::uint32_t> written_forward;
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    if (part_of[i] != llm::StepPart::Forward) continue;
    const workload::Op& op = g.ops[i];
    for (std::size_t a = 0; a < op.tensors.size() && a < op.space.accesses.size(); ++a)
      if (op.space.accesses[a].role == workload::TensorRole::Output)
        written_forward.insert(op.tensors[a].value);
  }
  std::set<std::uint32_t> saved;
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    if (part_of[i] != llm::StepPart::Backward) continue;
    const workload::Op& op = g.ops[i];
    for (std::size_t a = 0; a < op.tensors.size() && a < op.space.accesses.size(); ++a) {
      const std::uint32_t t = op.tensors[a].value;
      if (op.space.accesses[a].role != workload::TensorRole::Output && written_forward.contains(t) &&
          g.tensors[t].kind == workload::TensorKind::Activation)
        saved.insert(t);
    }
  }
  Bytes total;
  for (const std::uint32_t t : saved) total += workload::storage_bytes(g.tensors[t]);
  return total;
}

std::optional<StagePrice> price_stage(const llm::LlmConfig& model, std::uint64_t seq,
                                      const Layout& layout, const Framework& framework,
                                      std::uint64_t stage, mapper::FusionMode fusion,
                                      const arch::HardwareModel& hw, const StepOptions& options,
                                      Diagnostics& diags) {
  const llm::LlmPhase phase{.kind = llm::PhaseKind::Training,
                            .batch = layout.micro_batch_size,
                            .seq_len = seq,
                            .recompute = layout.recompute,
                            .recompute_layers = layout.recompute_layers,
                            .precision = framework.precision,
                            .runtime = framework.runtime};
  // The virtual stage's layers: pp x virtual_stages stages of the model.
  const llm::Parallelism par{.tp = layout.tp,
                             .pp = layout.pp * layout.virtual_stages,
                             .dp = 1,
                             .stage = stage,
                             .micro_batches = 1,
                             .sequence_parallel = layout.sequence_parallel,
                             .cp = layout.cp,
                             .ep = layout.ep,
                             .pipeline_counts_embedding = layout.pipeline_counts_embedding,
                             .pipeline_counts_loss = layout.pipeline_counts_loss};
  Diagnostics build_diags;
  auto built = llm::try_build_llm_parts(model, phase, par, build_diags);
  if (!built) {
    for (const Diagnostic& d : build_diags.all()) {
      std::string path = d.path;
      if (path.starts_with("parallelism.pp") && layout.virtual_stages > 1)
        path = "layout.virtual_stages";
      else if (path.starts_with("parallelism.tp") || path.starts_with("parallelism.pp"))
        path = "layout." + path.substr(std::string_view("parallelism.").size());
      else if (path == "phase.batch")
        path = "layout.micro_batch_size";
      else if (path == "phase.seq_len")
        path = "seq";
      else if (path == "parallelism.sequence_parallel")
        path = "layout.sequence_parallel";
      else if (path == "parallelism.cp")
        path = "layout.cp";
      else if (path == "parallelism.ep")
        path = "layout.ep";
      else if (path == "phase.recompute_layers")
        path = "layout.recompute_layers";
      else if (path == "phase.precision")
        path = "framework.precision";
      else if (path == "phase.runtime")
        path = "framework.runtime";
      diags.error({}, path, d.message, d.hint);
    }
    return std::nullopt;
  }
  const workload::Graph& g = built->graph;
  const mapper::Schedule schedule = mapper::schedule_graph(
      g, hw,
      {.precision = std::nullopt,
       .fusion = fusion,
       .search = options.search,
       .memory_plan = nullptr,
       .collective_ranks = options.cluster != nullptr
                               ? std::optional<std::uint32_t>(options.cluster->chips())
                               : std::nullopt});
  if (!schedule.unsupported.empty()) {
    for (const mapper::UnsupportedOp& op : schedule.unsupported)
      diags.error({}, "arch", fmt::format("'{}' cannot run on '{}': {}", op.name, hw.name(),
                                          op.reason));
    return std::nullopt;
  }
  const analytical::AnalyticalEngine analytical;
  const Engine& engine = options.engine != nullptr ? *options.engine : analytical;
  const results::RunResult run = engine.run(schedule, hw, {});
  CODA_CHECK(run.ops.size() == g.ops.size());  // every op placed: one result each, in order

  StagePrice out;
  const llm::LlmStepStats stats = llm::llm_step_stats(model, phase, par);
  out.first_layer = stats.first_layer;
  out.layers = stats.stage_layers;
  const double clock = hw.clock().value;
  std::set<std::uint32_t> experts;
  for (const workload::TensorId t : built->expert_weights) experts.insert(t.value);
  const auto expert_op = [&](const workload::Op& op) {
    return std::any_of(op.tensors.begin(), op.tensors.end(),
                       [&](workload::TensorId t) { return experts.contains(t.value); });
  };
  // Expert parallelism's all-to-alls on the ranks they join: across nodes on the cluster's
  // network when the ep ranks span nodes.
  const Group ep_group = expert_group(layout, node_chips(hw, options.cluster));
  for (const llm::OpSpan& span : built->spans) {
    std::vector<double> kernels;  // the part's kernels (an op with the ops fused into it)
    double part = 0;
    for (std::size_t i = span.first; i < span.end; ++i) {
      const workload::Op& op = g.ops[i];
      double seconds = static_cast<double>(run.ops[i].cost.cycles.value) / clock;
      if (op.function == Function::AllToAll) {
        std::string why;
        const auto exchange =
            collective_seconds(analytical::CollectiveKind::AllToAll,
                               workload::storage_bytes(g.tensors[op.tensors[0].value]).value,
                               ep_group, hw, options.cluster, why);
        if (!exchange) {
          diags.error({}, "layout.ep",
                      fmt::format("the all-to-all among the ep {} ranks cannot be priced: {}",
                                  layout.ep, why));
          return std::nullopt;
        }
        seconds = *exchange;
      }
      // The graph's gradient reductions (over the cp ranks of its single replica: dp is 1 here)
      // are the step's data-parallel communication, priced below by ZeRO stage.
      if (op.kind == OpKind::Collective && span.part == llm::StepPart::Optimizer) continue;
      if (op.function == Function::SendRecv) {  // the pipeline's transfers: simulate_pipeline's
        out.send = std::max(out.send, seconds);
        continue;
      }
      if (schedule.ops[i].own_kernel || kernels.empty())
        kernels.push_back(seconds);
      else
        kernels.back() += seconds;
      part += seconds;
      if (span.part == llm::StepPart::Optimizer && expert_op(op)) out.expert_optimizer += seconds;
      // Matrix FLOPs: 2 per MAC of the contractions and attentions; MFU conventions leave the
      // softmax's arithmetic out.
      const double flops = matrix_op(op) ? 2.0 * static_cast<double>(workload::mac_count(op)) : 0.0;
      out.executed_matrix_flops += flops;
      if (span.part == llm::StepPart::Forward) out.forward_matrix_flops += flops;
      // The rest are TP's (all-reduces, or sequence parallelism's all-gathers and
      // reduce-scatters), CP's K/V all-gathers and EP's all-to-alls.
      if (op.kind == OpKind::Collective) out.tp_comm += seconds;
    }
    // Launched eagerly, a part's kernels wait on the host where they are shorter than its issue
    // time (analytical::host_issued_seconds, as coda run --launch eager prices a graph).
    if (options.host_issue_s > 0) part = analytical::host_issued_seconds(kernels, options.host_issue_s);
    switch (span.part) {
      case llm::StepPart::Forward: out.forward += part; break;
      case llm::StepPart::Backward: out.backward += part; break;
      case llm::StepPart::Optimizer:
        out.optimizer += part;
        break;
      case llm::StepPart::WeightCast:
        out.weight_cast += part;
        break;
    }
  }
  for (std::size_t t = 0; t < g.tensors.size(); ++t) {
    if (g.tensors[t].kind != workload::TensorKind::Weight) continue;
    const std::uint64_t elements = workload::element_count(g.tensors[t].shape);
    out.parameters += elements;
    if (experts.contains(static_cast<std::uint32_t>(t))) out.expert_parameters += elements;
  }
  out.peak_activations = schedule.memory.peak_activations;
  out.saved_activations = saved_activations(*built);
  return out;
}

// `bytes` in buckets of at most `bucket`, each a collective of the group.
std::optional<std::vector<double>> buckets(analytical::CollectiveKind kind, std::uint64_t bytes,
                                           std::uint64_t bucket, Group group,
                                           const arch::HardwareModel& hw,
                                           const arch::ClusterSpec* cluster, std::string& why) {
  std::vector<double> out;
  if (group.ranks <= 1 || bytes == 0) return out;
  const std::uint64_t size = bucket == 0 ? bytes : bucket;
  const std::uint64_t full = bytes / size, rest = bytes % size;
  const auto one = collective_seconds(kind, size, group, hw, cluster, why);
  if (!one) return std::nullopt;
  out.assign(full, *one);
  if (rest > 0) {
    const auto last = collective_seconds(kind, rest, group, hw, cluster, why);
    if (!last) return std::nullopt;
    out.push_back(*last);
  }
  return out;
}

double sum(std::span<const double> xs) {
  double s = 0;
  for (const double x : xs) s += x;
  return s;
}

// "tp 2 x pp 4 x dp 8", with "x cp 2" after tp where the layout has context parallelism, and
// " (ep 8)" where it has expert parallelism (its ranks are a stage's tp x dp x cp ranks).
std::string product(const Layout& layout) {
  return fmt::format("tp {}{} x pp {} x dp {}{}", layout.tp,
                     layout.cp > 1 ? fmt::format(" x cp {}", layout.cp) : "", layout.pp, layout.dp,
                     layout.ep > 1 ? fmt::format(" (ep {})", layout.ep) : "");
}

bool check_layout(const llm::LlmConfig& model, std::uint64_t seq, const Layout& layout,
                  const arch::HardwareModel& hw, const arch::ClusterSpec* cluster,
                  Diagnostics& diags) {
  const std::size_t before = diags.error_count();
  const auto positive = [&](std::string_view field, std::uint64_t value) {
    if (value == 0) diags.error({}, fmt::format("layout.{}", field), "must be at least 1");
  };
  positive("tp", layout.tp);
  positive("pp", layout.pp);
  positive("dp", layout.dp);
  positive("cp", layout.cp);
  positive("ep", layout.ep);
  positive("micro_batch_size", layout.micro_batch_size);
  positive("micro_batches", layout.micro_batches);
  positive("virtual_stages", layout.virtual_stages);
  if (seq == 0) diags.error({}, "seq", "must be at least 1");
  if (layout.zero > 3)
    diags.error({}, "layout.zero", fmt::format("ZeRO stage {} does not exist", layout.zero),
                "0 (none), 1 (optimizer state), 2 (and gradients) or 3 (and weights: FSDP)");
  if (diags.error_count() != before) return false;
  if (layout.virtual_stages > 1 && layout.pp < 2)
    diags.error({}, "layout.virtual_stages", "interleaving needs a pipeline: pp of 2 or more");
  else if (layout.virtual_stages > 1 && layout.micro_batches % layout.pp != 0)
    diags.error({}, "layout.virtual_stages",
                fmt::format("the interleaved schedule runs micro-batches in groups of pp: {} "
                            "micro-batches are not a multiple of pp {}",
                            layout.micro_batches, layout.pp),
                "use a multiple of pp micro-batches (Megatron-LM's requirement), or "
                "virtual_stages 1");
  if (diags.error_count() != before) return false;
  if (layout.zero > 0 && layout.dp == 1)
    diags.warning({}, "layout.zero", "ZeRO shards over the data-parallel ranks: with dp 1 it "
                                     "changes nothing");
  const std::uint64_t chips = layout.chips();
  const std::uint64_t node = node_chips(hw, cluster);
  const std::uint64_t all = cluster != nullptr ? cluster->chips() : node;
  if (chips > 1 && !hw.spec().interconnect) {
    diags.error({}, "layout",
                fmt::format("{} = {} chips, but '{}' states no interconnect", product(layout),
                            chips, hw.name()),
                "add an interconnect: section to the arch (docs/arch.md)");
  } else if (chips > all) {
    diags.error({}, "layout",
                cluster != nullptr
                    ? fmt::format("{} = {} chips, but the cluster '{}' has {}", product(layout),
                                  chips, cluster->name, all)
                    : fmt::format("{} = {} chips, but '{}' joins {} (interconnect.chips)",
                                  product(layout), chips, hw.name(), all),
                cluster != nullptr ? std::string("use a larger cluster, or fewer chips")
                                   : std::string("more chips than a node need a cluster "
                                                 "(--cluster, docs/arch.md \"Clusters\")"));
  } else if (layout.tp > node) {
    diags.error({}, "layout.tp",
                fmt::format("tp {} spans nodes of {} chips: TP's all-reduces across the network "
                            "are not modelled",
                            layout.tp, node),
                fmt::format("keep tp within a node (at most {})", node));
  } else if (chips > node && node % layout.tp != 0) {
    diags.error({}, "layout.tp",
                fmt::format("tp {} does not divide a node's {} chips, so the ranks of a layout "
                            "across nodes have no placement coda models",
                            layout.tp, node),
                "use a tp that divides the chips per node");
  } else if (layout.cp > 1 &&
             (layout.tp * layout.cp > node || node % (layout.tp * layout.cp) != 0)) {
    diags.error({}, "layout.cp",
                fmt::format("tp {} x cp {} does not fit a node of {} chips evenly: context "
                            "parallelism's K/V all-gathers across the network are not modelled",
                            layout.tp, layout.cp, node),
                "keep tp x cp a divisor of the chips per node");
  } else if (layout.ep > 1 && (layout.tp * layout.dp * layout.cp) % layout.ep != 0) {
    diags.error({}, "layout.ep",
                fmt::format("ep {} does not divide tp {} x dp {} x cp {}: the expert-parallel "
                            "ranks are a stage's ranks (Megatron-Core's MoE parallel folding)",
                            layout.ep, layout.tp, layout.dp, layout.cp),
                "use an ep that divides tp x dp x cp");
  } else if (layout.ep > node && layout.ep % node != 0) {
    diags.error({}, "layout.ep",
                fmt::format("ep {} spans nodes of {} chips unevenly", layout.ep, node),
                "use an ep that divides a node's chips or is a multiple of them");
  } else if (chips > node && (layout.dp * layout.cp) % data_group(layout, node).per_node != 0) {
    diags.error({}, "layout.dp",
                fmt::format("dp {} does not fill whole nodes ({} of its ranks in each)",
                            layout.dp, data_group(layout, node).per_node),
                "use a dp that is a multiple of the chips per node / tp");
  }
  if (hw.peak_ops_per_second(model.dtype) <= 0) {
    std::string types;
    for (const DataType t : hw.matrix_precisions())
      types += fmt::format("{}{}", types.empty() ? "" : ", ", to_string(t));
    diags.error({}, "model",
                fmt::format("'{}' has no matrix unit for {}", hw.name(), to_string(model.dtype)),
                "train in one of its types: " + types);
  }
  return diags.error_count() == before;
}

// Stage prices by (tp, pp, stage, micro-batch size, recompute, sequence parallelism,
// precision, context parallelism, recomputed layers, expert parallelism, whether the split counts
// the embedding and the loss, runtime): what the graph depends on.
using StageKey = std::tuple<std::uint64_t, std::uint64_t, std::uint64_t, std::uint64_t, bool, bool,
                            llm::Precision, std::uint64_t, std::uint64_t, std::uint64_t, bool, bool,
                            llm::Runtime>;
using StageCache = std::map<StageKey, StagePrice>;

std::optional<StepReport> price_step(const llm::LlmConfig& model, std::uint64_t seq,
                                     const Layout& layout, const Framework& framework,
                                     const arch::HardwareModel& hw, const StepOptions& options,
                                     StageCache& cache, Diagnostics& diags);

}  // namespace

namespace {

struct Task {
  std::uint64_t stage = 0;  // virtual stage
  std::uint64_t micro_batch = 0;
  bool backward = false;
};

// Device d's tasks in the order Megatron-LM's schedules run them (megatron/core/pipeline_parallel/
// schedules.py): without interleaving, 1F1B (min(p - d - 1, m) warm-up forwards); with v chunks,
// forward_backward_pipelining_with_interleaving: micro-batches in groups of p, the j-th forward
// of the device on chunk (j mod pv) / p, the j-th backward on chunk v - 1 - that, and
// (p - d - 1) 2 + (v - 1) p warm-up forwards.
std::vector<Task> device_order(std::uint64_t p, std::uint64_t v, std::uint64_t m,
                               std::uint64_t d) {
  std::vector<Task> order;
  if (v == 1) {
    const std::uint64_t warmup = std::min(p - d - 1, m);
    for (std::uint64_t i = 0; i < warmup; ++i) order.push_back({d, i, false});
    for (std::uint64_t i = 0; i < m; ++i) {
      if (warmup + i < m) order.push_back({d, warmup + i, false});
      order.push_back({d, i, true});
    }
    return order;
  }
  const std::uint64_t total = m * v;
  const auto task = [&](std::uint64_t j, bool backward) {
    const std::uint64_t within = j % (p * v);
    std::uint64_t chunk = within / p;
    if (backward) chunk = v - 1 - chunk;
    return Task{chunk * p + d, (j / (p * v)) * p + within % p, backward};
  };
  const std::uint64_t warmup = std::min((p - d - 1) * 2 + (v - 1) * p, total);
  for (std::uint64_t j = 0; j < warmup; ++j) order.push_back(task(j, false));
  for (std::uint64_t j = 0; j + warmup < total; ++j) {
    order.push_back(task(warmup + j, false));
    order.push_back(task(j, true));
  }
  for (std::uint64_t j = total - warmup; j < total; ++j) order.push_back(task(j, true));
  return order;
}

}  // namespace

PipelineTimeline simulate_pipeline(std::span<const PipelineStageTimes> stages,
                                   std::uint64_t devices, std::uint64_t micro_batches) {
  CODA_CHECK(devices >= 1 && !stages.empty() && stages.size() % devices == 0 &&
             micro_batches >= 1);
  const std::uint64_t p = devices, n = stages.size(), v = n / p, m = micro_batches;
  CODA_CHECK(v == 1 || m % p == 0);
  std::vector<std::vector<Task>> order(p);
  for (std::uint64_t d = 0; d < p; ++d) order[d] = device_order(p, v, m, d);
  constexpr double kNotYet = -1;
  std::vector<std::vector<double>> fwd_end(n, std::vector<double>(m, kNotYet));
  std::vector<std::vector<double>> bwd_end(n, std::vector<double>(m, kNotYet));
  std::vector<std::size_t> next(p, 0);
  std::vector<double> free_at(p, 0.0);
  PipelineTimeline out;
  out.end.assign(p, 0.0);
  out.busy.assign(p, 0.0);
  std::uint64_t remaining = n * 2 * m;
  while (remaining > 0) {
    bool progressed = false;
    for (std::uint64_t d = 0; d < p; ++d) {
      while (next[d] < order[d].size()) {
        const Task& t = order[d][next[d]];
        const std::uint64_t k = t.stage, i = t.micro_batch;
        double ready = 0;
        if (!t.backward && k > 0) {
          if (fwd_end[k - 1][i] == kNotYet) break;
          ready = fwd_end[k - 1][i] + stages[k - 1].send;
        } else if (t.backward && k + 1 < n) {
          if (bwd_end[k + 1][i] == kNotYet) break;
          ready = bwd_end[k + 1][i] + stages[k + 1].send;
        } else if (t.backward) {  // the last stage's backward follows its own forward
          if (fwd_end[k][i] == kNotYet) break;
          ready = fwd_end[k][i];
        }
        const double duration = t.backward ? stages[k].backward : stages[k].forward;
        const double end = std::max(free_at[d], ready) + duration;
        (t.backward ? bwd_end : fwd_end)[k][i] = end;
        free_at[d] = end;
        out.busy[d] += duration;
        ++next[d];
        --remaining;
        progressed = true;
      }
    }
    CODA_CHECK(progressed);  // Megatron's orders have no cycle: some device can always go on
  }
  for (std::uint64_t d = 0; d < p; ++d) {
    out.end[d] = free_at[d];
    out.makespan = std::max(out.makespan, free_at[d]);
  }
  return out;
}

PipelineTimeline simulate_1f1b(std::span<const PipelineStageTimes> stages,
                               std::uint64_t micro_batches) {
  return simulate_pipeline(stages, stages.size(), micro_batches);
}

double exposed_bucketed(double window, std::span<const double> bucket_seconds) {
  if (bucket_seconds.empty()) return 0.0;
  const auto n = static_cast<double>(bucket_seconds.size());
  double t = 0;
  for (std::size_t k = 0; k < bucket_seconds.size(); ++k) {
    const double ready = window * static_cast<double>(k + 1) / n;
    t = std::max(t, ready) + bucket_seconds[k];
  }
  return std::max(0.0, t - window);
}

std::optional<StepReport> price_training_step(const llm::LlmConfig& model, std::uint64_t seq,
                                              const Layout& layout, const Framework& framework,
                                              const arch::HardwareModel& hw,
                                              const StepOptions& options, Diagnostics& diags) {
  StageCache cache;
  const arch::HardwareModel step_hw(arch::training_step_view(hw.spec()));
  return price_step(model, seq, layout, framework, step_hw, options, cache, diags);
}

namespace {

std::optional<StepReport> price_step(const llm::LlmConfig& model, std::uint64_t seq,
                                     const Layout& layout, const Framework& framework,
                                     const arch::HardwareModel& hw, const StepOptions& options,
                                     StageCache& cache, Diagnostics& diags) {
  const arch::ClusterSpec* cluster = options.cluster;
  if (!check_layout(model, seq, layout, hw, cluster, diags)) return std::nullopt;
  if (framework.precision == llm::Precision::Fp8 &&
      (hw.peak_ops_per_second(DataType::Fp8E4M3) <= 0 ||
       hw.peak_ops_per_second(DataType::Fp8E5M2) <= 0)) {
    diags.error({}, "framework.precision",
                fmt::format("fp8 runs GEMMs on E4M3 and E5M2 operands, but '{}' has no matrix "
                            "rate for both",
                            hw.name()),
                "train with precision mixed on this arch, or pick one with FP8 tensor cores "
                "(nvidia_h100_sxm)");
    return std::nullopt;
  }
  // Unless asked otherwise: what PyTorch fuses eagerly under Hugging Face transformers, else the
  // arch's vendor fusion.
  const mapper::FusionMode fusion = options.fusion.value_or(
      framework.runtime == llm::Runtime::HfTransformers
          ? mapper::FusionMode::Eager
          : hw.spec().calibration.fusion.value_or(mapper::FusionMode::Epilogue));
  const std::uint64_t p = layout.pp, v = layout.virtual_stages, n = p * v;
  // dp: the ranks that reduce a weight's gradients and that ZeRO shards over (dp x cp).
  const std::uint64_t m = layout.micro_batches, dp = layout.dp * layout.cp;

  // The distinct virtual stages: the first, one middle stage for all (they hold the same
  // layers' ops), the last.
  std::map<std::uint64_t, const StagePrice*> priced;
  const auto kind_of = [&](std::uint64_t k) -> std::uint64_t {
    return (k == 0 || k + 1 == n) ? k : 1;
  };
  for (std::uint64_t k = 0; k < n; ++k) {
    const std::uint64_t kind = kind_of(k);
    if (priced.contains(kind)) continue;
    const StageKey key{layout.tp,
                       n,
                       kind,
                       layout.micro_batch_size,
                       layout.recompute,
                       layout.sequence_parallel,
                       framework.precision,
                       layout.cp,
                       layout.recompute_layers,
                       layout.ep,
                       layout.pipeline_counts_embedding,
                       layout.pipeline_counts_loss,
                       framework.runtime};
    auto found = cache.find(key);
    if (found == cache.end()) {
      auto stage = price_stage(model, seq, layout, framework, kind, fusion, hw, options, diags);
      if (!stage) return std::nullopt;
      found = cache.emplace(key, *stage).first;
    }
    priced.emplace(kind, &found->second);
  }
  const auto chunk = [&](std::uint64_t k) -> const StagePrice& { return *priced.at(kind_of(k)); };

  // Bytes a parameter takes: the weights FSDP gathers, the gradients reduced (in their own type
  // unless the framework reduces in another), the optimizer's state.
  const llm::ParameterBytes per_parameter = llm::parameter_bytes(framework.precision, model.dtype);
  const double e = per_parameter.weight,
               ge = framework.grad_reduce ? bytes_per_element(*framework.grad_reduce)
                                          : per_parameter.gradient;
  using analytical::CollectiveKind;
  StepReport out;
  out.model = model.name;
  out.arch = hw.name();
  out.layout = layout;
  out.framework = framework;
  out.seq = seq;
  out.tokens = layout.global_batch() * seq;
  out.fusion = std::string(mapper::to_string(fusion));
  out.peak_flops_per_chip = hw.peak_ops_per_second(model.dtype);
  const std::uint64_t node = node_chips(hw, cluster);
  std::string why;
  // Whether any gradient is reduced: dp x cp > 1, or under expert parallelism with tp > 1 an
  // expert data-parallel group of more than one rank even at dp x cp = 1.
  const bool reduces = dp > 1 || expert_data_group(layout, node).ranks > 1;
  // The weights by the ranks that reduce their gradients: the routed experts' over the expert
  // data-parallel group (dp x cp / ep ranks; dp x cp without expert parallelism), the rest over
  // dp x cp.
  struct Share {
    std::uint64_t parameters = 0;
    Group group;
  };
  const auto shares = [&](const StagePrice& c) {
    return std::array<Share, 2>{Share{c.parameters - c.expert_parameters, data_group(layout, node)},
                                Share{c.expert_parameters, expert_data_group(layout, node)}};
  };
  // One collective per share, one after the other on the link (nullopt: `why` says why not).
  const auto each_share = [&](const StagePrice& c, CollectiveKind kind,
                              double bytes_each) -> std::optional<double> {
    double total = 0;
    for (const Share& share : shares(c)) {
      const auto t = collective_seconds(kind, scaled(share.parameters, bytes_each).value,
                                        share.group, hw, cluster, why);
      if (!t) return std::nullopt;
      total += *t;
    }
    return total;
  };
  // Bucketed, the buckets of each share in turn.
  const auto bucketed = [&](const StagePrice& c,
                            CollectiveKind kind) -> std::optional<std::vector<double>> {
    std::vector<double> all;
    for (const Share& share : shares(c)) {
      const auto b = buckets(kind, scaled(share.parameters, ge).value, framework.bucket.value,
                             share.group, hw, cluster, why);
      if (!b) return std::nullopt;
      all.insert(all.end(), b->begin(), b->end());
    }
    return all;
  };
  // A share's elements on a rank when sharded over its group's ranks.
  const auto sharded = [&](const StagePrice& c) {
    std::uint64_t total = 0;
    for (const Share& share : shares(c)) total += ceil_div(share.parameters, share.group.ranks);
    return total;
  };
  const auto fail = [&](std::string_view what) -> std::optional<StepReport> {
    diags.error({}, "layout",
                fmt::format("the {} among the dp {} ranks cannot be priced: {}", what, dp, why));
    return std::nullopt;
  };
  // A stage boundary crosses nodes when a stage fills whole nodes (tp x dp chips at least a
  // node's): the activation goes over the network, Megatron-LM's scatter/gather (Narayanan et
  // al. 2021, Sec. 4.1): each of the tp ranks sends 1/tp of it on its own NIC, then the tp
  // ranks all-gather it over the node's links. Otherwise the graph's send/receive, in the node.
  std::optional<double> network_send;
  if (p > 1 && layout.tp * dp >= node && layout.chips() > node) {
    const std::uint64_t bytes =
        scaled(layout.micro_batch_size * (seq / layout.cp) * model.hidden, e).value;
    const auto send = collective_seconds(CollectiveKind::SendRecv,
                                         std::max<std::uint64_t>(bytes / layout.tp, 1),
                                         {.ranks = 2, .per_node = 1}, hw, cluster, why);
    const auto gather = collective_seconds(CollectiveKind::AllGather, bytes,
                                           {.ranks = layout.tp, .per_node = layout.tp}, hw,
                                           cluster, why);
    if (!send || !gather) {
      diags.error({}, "layout", "the pipeline's transfer between nodes cannot be priced: " + why);
      return std::nullopt;
    }
    network_send = *send + *gather;
  }

  // Data-parallel communication that stretches each micro-batch's chunks (ZeRO 2 and 3), then
  // the pipeline.
  std::vector<PipelineStageTimes> times(n);
  std::vector<double> stretch(p, 0.0);
  for (std::uint64_t k = 0; k < n; ++k) {
    const StagePrice& c = chunk(k);
    PipelineStageTimes& t = times[k];
    t.forward = c.forward;
    t.backward = c.backward;
    t.send = network_send.value_or(c.send);
    if (reduces && layout.zero == 3) {  // FSDP: gathers hidden under the forward and backward
      const auto gather = each_share(c, CollectiveKind::AllGather, e);
      const auto scatter = each_share(c, CollectiveKind::ReduceScatter, ge);
      if (!gather || !scatter) return fail("all-gather or reduce-scatter");
      t.forward = std::max(c.forward, *gather);
      t.backward = std::max(c.backward, *gather + *scatter);
    } else if (reduces && layout.zero == 2) {  // a bucketed reduce-scatter after every backward
      const auto rs = bucketed(c, CollectiveKind::ReduceScatter);
      if (!rs) return fail("reduce-scatter");
      t.backward = c.backward + exposed_bucketed(c.backward, *rs);
    }
    stretch[k % p] +=
        static_cast<double>(m) * (t.forward - c.forward + t.backward - c.backward);
  }
  const PipelineTimeline timeline = simulate_pipeline(times, p, m);

  for (std::uint64_t d = 0; d < p; ++d) {
    StageReport r;
    r.stage = d;
    StagePrice sum_chunks;  // the device's chunks together
    std::string ranges;
    for (std::uint64_t c = 0; c < v; ++c) {
      const std::uint64_t k = c * p + d;
      const StagePrice& sp = chunk(k);
      sum_chunks.forward += sp.forward;
      sum_chunks.backward += sp.backward;
      sum_chunks.optimizer += sp.optimizer;
      sum_chunks.expert_optimizer += sp.expert_optimizer;
      sum_chunks.weight_cast += sp.weight_cast;
      sum_chunks.tp_comm += sp.tp_comm;
      sum_chunks.send = std::max(sum_chunks.send, sp.send);
      sum_chunks.forward_matrix_flops += sp.forward_matrix_flops;
      sum_chunks.executed_matrix_flops += sp.executed_matrix_flops;
      sum_chunks.parameters += sp.parameters;
      sum_chunks.expert_parameters += sp.expert_parameters;
      sum_chunks.peak_activations = std::max(sum_chunks.peak_activations, sp.peak_activations);
      sum_chunks.saved_activations = std::max(sum_chunks.saved_activations, sp.saved_activations);
      sum_chunks.layers += sp.layers;
      // The chunk's own layers (the middle stages' price is one of them: k's may differ).
      const llm::StageLayers own =
          llm::stage_layers(model, {.pp = n,
                                    .stage = k,
                                    .pipeline_counts_embedding = layout.pipeline_counts_embedding,
                                    .pipeline_counts_loss = layout.pipeline_counts_loss});
      ranges +=
          fmt::format("{}{}-{}", ranges.empty() ? "" : ",", own.first, own.first + own.count - 1);
      if (c == 0) r.first_layer = own.first;
    }
    const StagePrice& sp = sum_chunks;
    r.layers = sp.layers;
    r.layer_ranges = ranges;
    r.forward_s = sp.forward;
    r.backward_s = sp.backward;
    r.tp_comm_s = sp.tp_comm;
    r.send_s = p > 1 ? network_send.value_or(sp.send) : 0.0;
    r.compute_s = static_cast<double>(m) * (sp.forward + sp.backward);
    r.dp_exposed_s = stretch[d];
    double after = 0;  // exposed after the device's last backward
    if (reduces) {
      switch (layout.zero) {
        case 0: {
          const auto ar = bucketed(sp, CollectiveKind::AllReduce);
          if (!ar) return fail("all-reduce");
          r.dp_comm_s = sum(*ar);
          after = exposed_bucketed(sp.backward, *ar);
          break;
        }
        case 1:
        case 2: {
          const auto rs = bucketed(sp, CollectiveKind::ReduceScatter);
          const auto gather = each_share(sp, CollectiveKind::AllGather, e);
          if (!rs || !gather) return fail("reduce-scatter or all-gather");
          const double per_backward = sum(*rs);
          r.dp_comm_s =
              (layout.zero == 2 ? static_cast<double>(m) : 1.0) * per_backward + *gather;
          if (layout.zero == 1) after = exposed_bucketed(sp.backward, *rs);
          if (!framework.overlap_param_gather) after += *gather;
          break;
        }
        default: {
          const auto gather = each_share(sp, CollectiveKind::AllGather, e);
          const auto scatter = each_share(sp, CollectiveKind::ReduceScatter, ge);
          if (!gather || !scatter) return fail("all-gather or reduce-scatter");
          r.dp_comm_s = static_cast<double>(m) * (2 * *gather + *scatter);
          break;
        }
      }
    }
    r.dp_exposed_s += after;
    // AdamW on the rank's share of the weights under ZeRO; then, under fp8, every weight of the
    // rank cast to FP8 for the next step (on the whole stage: ZeRO shards only the update).
    // The routed experts' share over their expert data-parallel ranks.
    const auto expert_ranks = static_cast<double>(expert_data_group(layout, node).ranks);
    r.optimizer_s =
        (layout.zero >= 1 ? (sp.optimizer - sp.expert_optimizer) / static_cast<double>(dp) +
                                sp.expert_optimizer / expert_ranks
                          : sp.optimizer) +
        sp.weight_cast;
    r.end_s = timeline.end[d] + after + r.optimizer_s;
    // The pipeline's idle time, less what the stretch by ZeRO's communication took of it.
    r.bubble_s = std::max(0.0, timeline.end[d] - timeline.busy[d]);

    // Memory per chip. In flight: 1F1B holds min(p - d, m) micro-batches' activations; the
    // interleaved schedule its warm-up forwards' chunks and the one running.
    const std::uint64_t shard = sharded(sp);
    const std::uint64_t shard_w = layout.zero >= 3 ? shard : sp.parameters;
    const std::uint64_t shard_g = layout.zero >= 2 ? shard : sp.parameters;
    const std::uint64_t shard_o = layout.zero >= 1 ? shard : sp.parameters;
    r.in_flight = v == 1 ? std::min<std::uint64_t>(p - d, m)
                         : std::min<std::uint64_t>((p - d - 1) * 2 + (v - 1) * p + 1, m * v);
    r.memory.weights = scaled(shard_w, e);
    r.memory.gradients = scaled(shard_g, per_parameter.gradient);
    r.memory.optimizer_state = scaled(shard_o, per_parameter.optimizer);
    r.memory.activations =
        sp.peak_activations + Bytes{(r.in_flight - 1) * sp.saved_activations.value};
    r.memory.total = r.memory.weights + r.memory.gradients + r.memory.optimizer_state +
                     r.memory.activations;

    r.model_flops = static_cast<double>(m) * 3.0 * sp.forward_matrix_flops;
    r.hardware_flops = static_cast<double>(m) * sp.executed_matrix_flops;
    out.model_flops += r.model_flops * static_cast<double>(layout.tp * dp);
    out.hardware_flops += r.hardware_flops * static_cast<double>(layout.tp * dp);
    if (r.end_s > out.step_s) {
      out.step_s = r.end_s;
      out.critical_stage = d;
    }
    if (r.memory.total > out.memory_per_chip) out.memory_per_chip = r.memory.total;
    out.stages.push_back(std::move(r));
  }
  const double chip_seconds = out.step_s * static_cast<double>(layout.chips());
  if (out.step_s > 0) {
    out.tokens_per_s = static_cast<double>(out.tokens) / out.step_s;
    out.mfu = out.model_flops / (chip_seconds * out.peak_flops_per_chip);
    out.hfu = out.hardware_flops / (chip_seconds * out.peak_flops_per_chip);
  }
  if (const auto& capacity = hw.spec().dram.capacity) {
    out.capacity = *capacity;
    out.fits = out.memory_per_chip <= *capacity;
  }
  return out;
}

}  // namespace

LayoutSearchResult search_layouts(const llm::LlmConfig& model, std::uint64_t seq,
                                  const LayoutSearch& search, const Framework& framework,
                                  const arch::HardwareModel& arch_hw, const StepOptions& options) {
  LayoutSearchResult out;
  StageCache cache;
  const arch::HardwareModel hw(arch::training_step_view(arch_hw.spec()));
  const std::uint64_t n = search.chips;
  // The placements first: tp dividing the heads, KV heads and FFN, pp the layers, each cp that
  // fits, dp the chips left, each ep that divides the experts and tp x dp x cp. Hugging Face
  // transformers' step is one GPU's code with data parallelism (check_hf_runtime refuses the
  // rest): its placements are data-parallel only.
  const bool data_parallel_only = framework.runtime == llm::Runtime::HfTransformers;
  std::vector<Layout> placements;
  for (std::uint64_t tp = 1; tp <= n; ++tp) {
    if (n % tp != 0 || model.heads % tp != 0 || model.kv_heads % tp != 0 || model.ffn % tp != 0)
      continue;
    for (std::uint64_t pp = 1; pp <= n / tp; ++pp) {
      if ((n / tp) % pp != 0 || model.layers % pp != 0) continue;
      for (const std::uint64_t cp : search.context_parallel) {
        if (cp == 0 || (n / tp / pp) % cp != 0 || (cp > 1 && seq % (2 * cp) != 0)) continue;
        const std::uint64_t dp = n / tp / pp / cp;
        for (const std::uint64_t ep : search.expert_parallel) {
          if (data_parallel_only && tp * pp * cp * ep != 1) continue;
          if (ep == 1 || (ep > 1 && model.moe.experts % ep == 0 && (tp * dp * cp) % ep == 0))
            placements.push_back({.tp = tp, .pp = pp, .dp = dp, .cp = cp, .ep = ep});
        }
      }
    }
  }
  const auto consider = [&](const Layout& layout) {
    Diagnostics diags;
    auto report = price_step(model, seq, layout, framework, hw, options, cache, diags);
    ++out.tried;
    if (!report) {
      ++out.refused;
      if (out.first_refusal.empty() && !diags.all().empty())
        out.first_refusal = format(diags.all().front());
      return;
    }
    out.ranked.push_back(std::move(*report));
  };
  // Then, for each, every micro-batch size that divides the batch, recompute choice, ZeRO stage
  // (where dp > 1: something to shard over) and sequence parallelism (where tp > 1).
  for (const Layout& placement : placements) {
    for (const std::uint64_t mbs : search.micro_batch_sizes) {
      if (mbs == 0 || search.global_batch % (placement.dp * mbs) != 0) continue;
      Layout layout = placement;
      layout.micro_batch_size = mbs;
      layout.micro_batches = search.global_batch / (placement.dp * mbs);
      for (const bool recompute : search.recompute)
        for (const std::uint32_t zero : search.zero_stages)
          for (const bool sp : search.sequence_parallel) {
            if ((placement.dp == 1 && zero > 0) || (sp && placement.tp == 1)) continue;
            layout.recompute = recompute;
            layout.zero = zero;
            layout.sequence_parallel = sp;
            consider(layout);
          }
    }
  }
  std::stable_sort(out.ranked.begin(), out.ranked.end(),
                   [](const StepReport& a, const StepReport& b) {
                     if (a.fits != b.fits) return a.fits;
                     return a.step_s < b.step_s;
                   });
  return out;
}

}  // namespace coda::sim::training
