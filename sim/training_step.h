#pragma once
// One optimizer step of LLM training on tp x pp x dp chips, priced end to end (docs/training.md):
//
//   stages     each distinct pipeline stage's graph (the first, a middle one, the last) is built
//              for one micro-batch of one TP rank (workloads/llm/llm_builder.h), scheduled and run
//              on the chip; its ops' times are summed by part (forward, backward, optimizer), TP
//              all-reduces inside the parts (on the critical path, as Megatron-LM runs them)
//   pipeline   the schedule itself (simulate_pipeline): each device runs its forwards and
//              backwards in Megatron-LM's order (1F1B, or interleaved 1F1B over virtual stages),
//              a forward waits for the previous stage's forward of the same micro-batch and a
//              backward for the next stage's backward, plus the boundary transfer; a device's
//              bubble is the time it waits
//   data       the gradients' reduction among dp ranks by ZeRO stage (Layout::zero), in buckets
//              released as the last backward produces them (exposed_bucketed), FSDP's
//              all-gathers and reduce-scatter overlapped with each micro-batch's forward and
//              backward; then AdamW over the rank's share
//   step       the slowest stage's pipeline end + its exposed data-parallel communication + its
//              optimizer (+ ZeRO 1/2's weight all-gather unless overlapped)
//   memory     per chip: weights, gradients, optimizer state (fp32 moments, and fp32 master
//              weights when the model computes in a narrower type), sharded by the ZeRO stage;
//              activations: the one-micro-batch run's peak plus, for every further micro-batch
//              1F1B keeps in flight on the stage, the activations its backward reads
//   MFU        model FLOPs (3 x the forward's matrix FLOPs: the backward's two GEMMs per forward
//              GEMM; causal attention counts its kept pairs) per step / (step x chips x the chip's
//              dense peak at the model's type); HFU counts the matrix FLOPs the chips execute,
//              recomputation included
//
// Across nodes (StepOptions::cluster): ranks in Megatron-LM's order, tensor innermost, then data,
// then pipeline; a data-parallel group has node / tp ranks in each node; a stage boundary
// crosses the network when a stage fills whole nodes.
//
// Not modelled (errors where a layout asks for it): TP across nodes, expert tensor parallelism,
// selective recomputation, interference of overlapped communication with compute.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "arch/cluster_spec.h"
#include "arch/hardware_model.h"
#include "core/data_type.h"
#include "core/diagnostics.h"
#include "core/units.h"
#include "mapper/fusion.h"
#include "mapper/schedule.h"
#include "sim/engine.h"
#include "workloads/llm/llm_builder.h"
#include "workloads/llm/llm_config.h"

namespace coda::sim::training {

// How the step is laid over the chips: tp x pp x dp chips in all.
struct Layout {
  std::uint64_t tp = 1;
  std::uint64_t pp = 1;
  std::uint64_t dp = 1;
  std::uint64_t micro_batch_size = 1;  // sequences per micro-batch
  std::uint64_t micro_batches = 1;     // per data-parallel replica per step
  bool recompute = false;              // full activation recomputation
  // With recompute: the first this many layers of each (virtual) stage only (Megatron-LM's block
  // method, --recompute-num-layers); 0: all.
  std::uint64_t recompute_layers = 0;
  // Model chunks per pipeline device (Megatron-LM's interleaved 1F1B, virtual pipeline stages):
  // device d holds virtual stages d, d + pp, ...; 1: plain 1F1B.
  std::uint64_t virtual_stages = 1;
  // What the data-parallel ranks shard (ZeRO, Rajbhandari et al. 2020):
  //   0  nothing: an all-reduce of the gradients (PyTorch DDP, Megatron-LM's default)
  //   1  the optimizer state: a reduce-scatter of the gradients, AdamW on the rank's 1/dp, an
  //      all-gather of the updated weights (Megatron-LM's distributed optimizer)
  //   2  and the gradients: a reduce-scatter after every micro-batch's backward
  //   3  and the weights: FSDP FULL_SHARD, all-gathers before every forward and backward
  std::uint32_t zero = 0;
  // Megatron-LM's sequence parallelism (workloads/llm/llm_builder.h; tp > 1): the norms' and
  // residuals' activations split over the TP ranks, all-gathers and reduce-scatters for TP's
  // all-reduces.
  bool sequence_parallel = false;
  // Context parallelism (workloads/llm/llm_builder.h, Parallelism::cp): each sequence split over
  // cp ranks, between TP and DP in Megatron-LM's rank order (tp x cp within a node); the weights'
  // gradients are reduced, and ZeRO shards, over dp x cp ranks.
  std::uint64_t cp = 1;
  // Expert parallelism (workloads/llm/llm_builder.h, Parallelism::ep; MoE models; with tp > 1
  // sequence parallelism and MoE parallel folding): each MoE layer's routed experts split over ep
  // of a stage's tp x dp x cp ranks, consecutive in Megatron-Core's expert grid, with an
  // all-to-all of the tokens' rows each way. A routed expert's gradient is reduced, and ZeRO
  // shards its optimizer state, over the tp x dp x cp / ep ranks that hold it (Megatron-Core's
  // expert data-parallel group, strided by ep); the rest over dp x cp.
  std::uint64_t ep = 1;
  // Megatron-LM's --account-for-embedding-in-pipeline-split and --account-for-loss-in-pipeline-
  // split (llm_builder.h, Parallelism): the split over pp x virtual_stages counts the embedding
  // and the loss as a layer each, so the first and last (virtual) stages hold one layer fewer.
  bool pipeline_counts_embedding = false;
  bool pipeline_counts_loss = false;
  std::uint64_t chips() const { return tp * cp * pp * dp; }
  std::uint64_t global_batch() const { return dp * micro_batches * micro_batch_size; }
  friend bool operator==(const Layout&, const Layout&) = default;
};

// What the framework decides that the layout does not (docs/training.md gives each default's
// source).
struct Framework {
  // Gradient bucket of the data-parallel reduction: PyTorch DDP's bucket_cap_mb default, 25 MiB.
  Bytes bucket{25ull << 20};
  // The type gradients are reduced in; nullopt: the gradients' own (the model's under pure and
  // mixed precision, DDP's and Megatron-LM's bf16 grads; fp32 under autocast).
  std::optional<DataType> grad_reduce;
  // How the step keeps its numbers (workload/llm/llm_builder.h): mixed, fp32 master weights in
  // the optimizer (Megatron-LM, DeepSpeed, FSDP); autocast, PyTorch AMP over fp32 parameters.
  workload::llm::Precision precision = workload::llm::Precision::Mixed;
  // What runs the model: coda's kernels (default), or Hugging Face transformers eagerly
  // (GPT2LMHeadModel under autocast: llm_builder.h, Runtime::HfTransformers), which a caller
  // prices with FusionMode::Eager.
  workload::llm::Runtime runtime = workload::llm::Runtime::Default;
  // ZeRO 1/2: the updated weights' all-gather runs under the next step's forward
  // (Megatron-LM --overlap-param-gather); false: after the optimizer, exposed.
  bool overlap_param_gather = false;
  friend bool operator==(const Framework&, const Framework&) = default;
};

struct StepOptions {
  // nullopt: the arch's vendor fusion (calibration.fusion), else epilogue.
  std::optional<mapper::FusionMode> fusion;
  std::optional<mapper::ScheduleSearch> search;
  const Engine* engine = nullptr;  // null: the analytical engine
  // The cluster the chips are nodes of (arch/cluster_spec.h); null: one node, the chip's
  // interconnect. Collectives whose group spans nodes go over its network
  // (analytical::price_cluster_collective); the chip must be the cluster's.
  const arch::ClusterSpec* cluster = nullptr;
  // Kernels issued one by one by the host at least this far apart (PyTorch eager: the arch's
  // calibration.eager_issue_time); 0: from a CUDA graph.
  double host_issue_s = 0;
};

// ---- the pieces, on their own (tests derive them by hand) ----------------------------------

struct PipelineStageTimes {
  double forward = 0;   // one micro-batch
  double backward = 0;  // one micro-batch
  double send = 0;      // the boundary transfer to the next stage (activation or its gradient)
};
struct PipelineTimeline {
  double makespan = 0;                  // the last backward's end over all stages
  std::vector<double> end;              // each stage's last backward's end
  std::vector<double> busy;             // each stage's forward + backward time
};
// 1F1B (PipeDream-Flush, Megatron-LM's default schedule): stage s runs min(p - s - 1, m) forwards,
// then alternates one forward and one backward, then drains its backwards. A forward of
// micro-batch i on stage s > 0 starts after stage s-1's forward of i ends plus s-1's send; a
// backward of i on stage s < p-1 after stage s+1's backward of i ends plus s+1's send (a transfer
// delays the receiver; it does not occupy either stage). Precondition: stages non-empty, m >= 1.
PipelineTimeline simulate_1f1b(std::span<const PipelineStageTimes> stages,
                               std::uint64_t micro_batches);
// The same over `devices` devices holding stages.size() / devices = v virtual stages each
// (device d holds stages d, d + p, ..., as Megatron-LM's interleaved schedule assigns model
// chunks), in the order Megatron-LM runs them: 1F1B when v = 1, else its interleaved 1F1B
// (forward_backward_pipelining_with_interleaving: (p - d - 1) 2 + (v - 1) p warm-up forwards,
// micro-batches in groups of p, chunks in turn). Result per device. Preconditions: the stages
// divide evenly over the devices; v = 1 or p divides m.
PipelineTimeline simulate_pipeline(std::span<const PipelineStageTimes> stages,
                                   std::uint64_t devices, std::uint64_t micro_batches);

// Communication beyond `window` seconds of compute during which buckets[k] becomes ready at
// window x (k+1) / n: each bucket is sent when ready and after the previous one (one link).
// max(0, the last bucket's end - window). Empty buckets: 0.
double exposed_bucketed(double window, std::span<const double> bucket_seconds);

// ---- the step --------------------------------------------------------------------------------

struct StageMemory {
  Bytes weights;
  Bytes gradients;
  Bytes optimizer_state;   // AdamW's moments, and master weights under mixed precision
  Bytes activations;
  Bytes total;
  friend bool operator==(const StageMemory&, const StageMemory&) = default;
};

// One pipeline device (with its model chunks under interleaving).
struct StageReport {
  std::uint64_t stage = 0;
  std::uint64_t first_layer = 0;
  std::uint64_t layers = 0;
  std::string layer_ranges;    // "0-7", or with virtual stages "0-3,16-19"
  double forward_s = 0;        // one micro-batch, TP communication included
  double backward_s = 0;       // one micro-batch, recomputation and TP communication included
  double tp_comm_s = 0;        // of forward + backward, one micro-batch (and CP's gathers and
                               // EP's all-to-alls)
  double send_s = 0;           // one boundary transfer to the next stage
  double compute_s = 0;        // micro_batches x (forward + backward)
  double bubble_s = 0;         // waiting in the pipeline: pipeline end - compute
  double dp_comm_s = 0;        // data-parallel communication in all
  double dp_exposed_s = 0;     // of it, not hidden under compute
  double optimizer_s = 0;      // AdamW over the rank's share (and fp8's weight casts)
  double end_s = 0;            // when the stage is done with the step
  std::uint64_t in_flight = 0; // micro-batches whose activations 1F1B holds at once
  StageMemory memory;
  double model_flops = 0;      // per chip per step
  double hardware_flops = 0;   // per chip per step
};

struct StepReport {
  std::string model;
  std::string arch;
  Layout layout;
  Framework framework;
  std::uint64_t seq = 0;
  std::uint64_t tokens = 0;    // per step, all replicas
  std::string fusion;
  double step_s = 0;
  double tokens_per_s = 0;
  double mfu = 0;
  double hfu = 0;
  double model_flops = 0;      // per step, all chips
  double hardware_flops = 0;   // per step, all chips
  double peak_flops_per_chip = 0;
  std::uint64_t critical_stage = 0;  // the stage that ends last
  std::vector<StageReport> stages;   // every stage, 0 .. pp-1
  Bytes memory_per_chip;             // the largest stage's
  std::optional<Bytes> capacity;     // DRAM per chip; nullopt when the arch states none
  bool fits = true;                  // memory_per_chip <= capacity (true when unknown)
};

// nullopt with errors in `diags` (paths "layout.*", "model", "arch") when the layout does not fit
// the model or the chips, or an op cannot run on the arch.
std::optional<StepReport> price_training_step(const workload::llm::LlmConfig& model,
                                              std::uint64_t seq, const Layout& layout,
                                              const Framework& framework,
                                              const arch::HardwareModel& hw,
                                              const StepOptions& options, Diagnostics& diags);

// ---- the layouts of a cluster ------------------------------------------------------------

struct LayoutSearch {
  std::uint64_t chips = 1;         // tp x pp x dp
  std::uint64_t global_batch = 1;  // sequences per step
  std::vector<std::uint64_t> micro_batch_sizes{1, 2, 4, 8};
  std::vector<bool> recompute{false, true};
  std::vector<std::uint32_t> zero_stages{0, 1, 3};  // tried where dp > 1
  std::vector<bool> sequence_parallel{false, true};  // true tried where tp > 1
  // Context-parallel sizes; each cp > 1 where it divides the chips left by tp x pp and splits
  // the sequence into 2 x cp chunks (Layout::cp). 1 alone: no context parallelism.
  std::vector<std::uint64_t> context_parallel{1};
  // Expert-parallel sizes (MoE models); each ep > 1 where it divides the experts and tp x dp x
  // cp (Layout::ep). 1 alone: no expert parallelism.
  std::vector<std::uint64_t> expert_parallel{1};
};
struct LayoutSearchResult {
  std::vector<StepReport> ranked;  // the layouts that fit first, each group by step time
  std::uint64_t tried = 0;         // layouts priced
  std::uint64_t refused = 0;       // of them, those the model or the arch refused
  std::string first_refusal;       // the first refusal's error, formatted
};
// Every layout of `search.chips` chips: tp dividing the heads, kv heads and FFN; pp dividing the
// layers; dp the rest; each micro-batch size that divides global_batch / dp; each recompute
// choice, ZeRO stage, where tp > 1 sequence parallelism, and each of search.context_parallel
// that fits (dp the chips left by tp x cp x pp), and each of search.expert_parallel that fits;
// under framework.runtime hf_transformers only data parallelism (tp, pp, cp and ep 1), the one
// layout family that runtime runs. A stage's graph is priced once for all layouts that share it.
LayoutSearchResult search_layouts(const workload::llm::LlmConfig& model, std::uint64_t seq,
                                  const LayoutSearch& search, const Framework& framework,
                                  const arch::HardwareModel& hw, const StepOptions& options);

}  // namespace coda::sim::training
