#pragma once
// The operator graph of one device's share of an LLM step: prefill, decode or a training step,
// under tensor (TP), pipeline (PP) and data (DP) parallelism. docs/llm.md has the model, its
// assumptions and the FLOP conventions; in short:
//
//   * Per layer: norm, QKV GEMM, split into heads, RoPE (an elementwise Mul over Q and K), the
//     fused attention op, head merge, output GEMM, residual add, norm, FFN (GELU MLP, SwiGLU or
//     MoE experts), residual add. Biases and LayerNorm shifts are elementwise Adds of a weight.
//   * TP (Megatron-LM): QKV and FFN up/gate column-parallel, output and FFN down row-parallel;
//     heads, kv_heads and the FFN are divided by TP; an all-reduce of [tokens x hidden] follows
//     each row-parallel GEMM (forward), and the gradient of each column-parallel GEMM's input
//     (backward). The vocabulary is split too (padded up to a multiple of TP).
//   * PP: the graph holds stage `stage` (layers split evenly), with a send/recv of the boundary
//     activation (and, in training, of its gradient) per micro-batch; micro-batches run in
//     1F1B order. The bubble (PP-1)/(micro_batches+PP-1) is in LlmStepStats.
//   * SP (Parallelism::sequence_parallel): the residual stream split over the TP ranks by tokens;
//     an all-gather before each column-parallel GEMM and a reduce-scatter after each row-parallel
//     one (their conjugates in the backward) replace the all-reduces.
//   * DP: in training, an all-reduce of each weight's gradient (this rank's shard) before AdamW.
//   * Tensor kinds: weights Weight, KV cache KvCache, weight gradients Gradient (accumulated in
//     place over micro-batches), AdamW moments OptimizerState (fp32), everything else Activation.
//   * Quantization (inference, quantization.h): the linear layers' weights in the scheme's type
//     (with a [k / group x n] scale tensor read by the GEMM for grouped schemes: its reduction
//     split into k / group x group), their inputs in its activation type, written so by the op
//     that produces them (the norm, the FFN's activation product, the attention's head merge:
//     the quantization fused into that kernel, as TensorRT-LLM does), the KV cache in its type.
//   * Runtime (Runtime, docs/llm.md "Runtimes"): the ops above, or, for Hugging Face
//     transformers run eagerly, every PyTorch op of LlamaForCausalLM's forward as a kernel of
//     its own (RMSNorm in 8, RoPE in 5 per tensor, three projections, DynamicCache's cat).
//   * Training precision (Precision, docs/training.md "Precision"): the model's type throughout
//     (pure), with fp32 master weights in the optimizer (mixed), or PyTorch autocast over fp32
//     parameters (autocast: the casts, an fp32 residual stream and fp32 norms as eager PyTorch
//     runs them).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "core/enum_table.h"
#include "core/diagnostics.h"
#include "core/units.h"
#include "workloads/graph.h"
#include "workloads/llm/llm_config.h"
#include "workloads/llm/quantization.h"

namespace coda::workload::llm {

enum class PhaseKind : std::uint8_t { Prefill, Decode, Training };

// How a training step keeps its numbers. Inference phases run in the model's type (mixed, the
// default, is the only value they accept).
enum class Precision : std::uint8_t {
  // Every weight, gradient and activation in the model's type; AdamW's moments in fp32, no
  // master copy: 2 + 2 + 8 bytes a bf16 parameter.
  Pure,
  // Megatron-LM's, DeepSpeed's and FSDP's mixed precision (Micikevicius et al. 2018): weights,
  // gradients and activations in the model's type, fp32 master weights in the optimizer: AdamW
  // reads the gradient, the master and the moments and writes the master, the moments and the
  // model's copy (16 bytes a bf16 parameter, ZeRO's count). An fp32 model has no master copy.
  Mixed,
  // PyTorch autocast (torch.amp) over fp32 parameters, as a plain PyTorch script trains: every
  // weight cast to the model's type at each use of each forward (and its gradient cast back and
  // added into the fp32 gradient), fp32 embeddings, so an fp32 residual stream, fp32 norms,
  // their outputs cast before each GEMM and the gradients cast at each change of type, the
  // loss's log-probabilities in fp32 (nll_loss), AdamW over fp32 weights, gradients and moments
  // (16 bytes a parameter). Needs a model type narrower than fp32.
  Autocast,
  // Mixed, with the transformer layers' linear GEMMs in FP8 as NVIDIA Transformer Engine runs
  // them under Megatron-LM and NeMo (Micikevicius et al. 2022, "FP8 Formats for Deep Learning";
  // TE's hybrid recipe): each GEMM's input cast to E4M3 with its transpose (one cast_transpose
  // kernel, or written in E4M3 by the norm that produces it: TE's LayerNormLinear), its weight's
  // E4M3 copy and transpose refreshed once a step (StepPart::WeightCast), the gradient of its
  // output cast to E5M2 with its transpose before dgrad and wgrad; the GEMMs accumulate in fp32
  // and write the model's type, and wgrad adds into the weight's gradient. Attention, norms,
  // embeddings and the LM head stay in the model's type (Megatron-LM's output layer is not a TE
  // module). Needs a bf16 or fp16 model and a matrix unit with E4M3 and E5M2 rates.
  Fp8,
};
std::string_view to_string(Precision precision);  // "pure", "mixed", "autocast", "fp8"
EnumTable<Precision> precision_names();

// Bytes a parameter takes under a precision, for a model of type `model`: the weights the
// forward reads (autocast: the fp32 parameters), their gradients, and the optimizer's state
// (AdamW's moments and any master copy).
struct ParameterBytes {
  double weight = 0, gradient = 0, optimizer = 0;
};
ParameterBytes parameter_bytes(Precision precision, DataType model);
std::string_view to_string(PhaseKind kind);  // "prefill", "decode", "training"
// The phases by name, in that order (for readers' EnumTable and hints).
EnumTable<PhaseKind> phase_names();

// Which kernels a step's ops become (docs/llm.md "Runtimes"):
//   default          coda's layer ops: a norm, a fused QKV GEMM, RoPE as one pass over Q and
//                    over K, the attention, ... (what inference engines and training frameworks
//                    launch, or fewer: --fusion fuses them further)
//   hf_transformers  Hugging Face transformers' LlamaForCausalLM run eagerly by PyTorch
//                    (attn_implementation "sdpa", DynamicCache): every PyTorch op of its
//                    modeling code is a kernel. Per layer: RMSNorm as to(float32), pow(2),
//                    mean, + eps, rsqrt, *, to(dtype), weight * (8 kernels, twice); q_proj,
//                    k_proj and v_proj (3 GEMMs); RoPE as q * cos, -x2, cat, * sin, + (5 each
//                    for Q and K); DynamicCache.update's torch.cat of K and of V (the whole
//                    cache copied each step); SDPA (1); o_proj; the residual adds; gate, up,
//                    SiLU, *, down. Per forward: the embedding, the rotary table (9 small
//                    kernels), the final RMSNorm, the LM head over the last position and the
//                    greedy argmax. Inference only, one GPU, LLaMA-style models (RMSNorm,
//                    rotary positions, SwiGLU, no biases, dense): check_llm_build refuses the
//                    rest rather than price another family's code as Llama's.
enum class Runtime : std::uint8_t { Default, HfTransformers };
std::string_view to_string(Runtime runtime);  // "default", "hf_transformers"
EnumTable<Runtime> runtime_names();

struct LlmPhase {
  PhaseKind kind = PhaseKind::Prefill;
  // Sequences per step on one DP replica (split into Parallelism::micro_batches).
  std::uint64_t batch = 1;
  // Prefill: prompt length (causal attention over it; writes the KV cache).
  // Decode: tokens already in the KV cache; one new token per sequence attends to seq_len + 1.
  // Training: sequence length (causal).
  std::uint64_t seq_len = 1;
  // Training only: re-run each layer's forward just before its backward (full recomputation).
  bool recompute = false;
  // With recompute: only the stage's first this many layers (Megatron-LM's
  // --recompute-method block --recompute-num-layers N); 0: every layer.
  std::uint64_t recompute_layers = 0;
  Precision precision = Precision::Mixed;
  // Inference phases only (quantization.h): the types of the linear layers' weights and inputs
  // and of the KV cache, where they differ from the model's.
  Quantization quant;
  Runtime runtime = Runtime::Default;
};

struct Parallelism {
  std::uint64_t tp = 1;  // tensor parallel ranks
  std::uint64_t pp = 1;  // pipeline stages
  std::uint64_t dp = 1;  // data parallel replicas
  std::uint64_t stage = 0;          // which pipeline stage the graph holds, 0 .. pp-1
  std::uint64_t micro_batches = 1;  // must divide LlmPhase::batch
  // Megatron-LM's sequence parallelism (Korthikanti et al. 2022; training, tp > 1): outside the
  // TP regions (norms, residual adds, biases of the row-parallel GEMMs, the stage boundary) each
  // TP rank holds 1/tp of the tokens; all-gathers enter a region and reduce-scatters leave it, in
  // place of f's and g's all-reduces. No effect at tp 1.
  bool sequence_parallel = false;
  // Context parallelism (training; Megatron-LM's --context-parallel-size with Transformer Engine's
  // attention): each sequence's tokens split over `cp` ranks in 2 x cp load-balanced chunks, every
  // op but the attention on the rank's seq / cp tokens; each layer all-gathers K and V over the
  // cp ranks (TE's cp_comm_type all_gather; the gradients reduce-scattered back) and attends its
  // queries over the whole sequence, keeping 1/cp of its causal pairs. The weights' gradients are
  // reduced over dp x cp ranks (sim/training_step.h).
  std::uint64_t cp = 1;
  // Expert parallelism (training, MoE models; Megatron-Core's --expert-model-parallel-size with
  // its all-to-all token dispatcher): each rank holds experts / ep of every MoE layer's routed
  // experts, whole (no expert tensor parallelism); after the router and the local permutation,
  // an all-to-all among the ep ranks sends each token's rows to the ranks of its experts, which
  // regroup them by local expert (sort_chunks) and, after the experts, send them back (routing
  // balanced: a rank receives as many rows as it sends). The ep ranks are tp x dp x cp ranks (ep
  // divides tp x dp x cp: sim/training_step.h and the CLI check it); a routed expert's gradient
  // is reduced over the tp x dp x cp / ep ranks that hold it. With tp > 1 (Megatron-Core's MoE
  // parallel folding, expert_tensor_parallel_size 1) sequence parallelism is required and the
  // MoE block runs on the rank's 1/tp of the tokens, with no all-gather into it and no
  // reduce-scatter out of it; no shared experts then.
  std::uint64_t ep = 1;
  // Megatron-LM's --account-for-embedding-in-pipeline-split and
  // --account-for-loss-in-pipeline-split: the pipeline split counts the embedding as a layer of
  // the first stage and the LM head with the loss as a layer of the last, so (layers + those)
  // divide evenly over pp and the first and last stages hold one transformer layer fewer
  // (stage_layers below).
  bool pipeline_counts_embedding = false;
  bool pipeline_counts_loss = false;
};

// The transformer layers of pipeline stage `par.stage`: [first, first + count). Preconditions
// (check_llm_build): pp divides layers plus the embedding and loss the split counts, and each
// stage holds at least one layer.
struct StageLayers {
  std::uint64_t first = 0, count = 0;
};
StageLayers stage_layers(const LlmConfig& config, const Parallelism& par);

// Checks that the phase and parallelism fit the model: sizes at least 1, TP dividing heads,
// kv_heads and the FFN, PP dividing the layers, stage < pp, micro_batches dividing the batch,
// recompute and a precision other than mixed only for training, autocast only for a model type
// narrower than fp32, fp8 only for a bf16 or fp16 one, quantization only for inference (weights
// narrower than the model's type, a group dividing every quantized GEMM's input dimension on a
// rank, a KV cache type coda models), and positions within max_positions for learned position
// tables (a warning for rotary ones). Paths are "phase.*" and "parallelism.*"; there is no file.
bool check_llm_build(const LlmConfig& config, const LlmPhase& phase,
                     const Parallelism& parallelism, Diagnostics& diags);

// The graph of one rank (one TP rank of stage `stage`): verify(graph) is clean.
// Precondition: check_llm_build passed (CODA_CHECK otherwise).
Graph build_llm(const LlmConfig& config, const LlmPhase& phase, const Parallelism& parallelism);

// check_llm_build, then build_llm.
std::optional<Graph> try_build_llm(const LlmConfig& config, const LlmPhase& phase,
                                   const Parallelism& parallelism, Diagnostics& diags);

// Which part of a step a run of consecutive ops is: a micro-batch's forward (with, on the last
// stage of a training step, the loss and its gradient), its backward (with a full recomputation's
// re-run forward, and the receive and send of the stage boundary's gradient), the optimizer, or
// (Precision::Fp8) the casts of the updated weights to FP8, once a step on every rank (TE casts
// them at a step's first micro-batch and keeps them for the rest), however ZeRO shards AdamW.
enum class StepPart : std::uint8_t { Forward, Backward, Optimizer, WeightCast };
// "forward", "backward", "optimizer", "weight_cast"
std::string_view to_string(StepPart part);
struct OpSpan {
  StepPart part = StepPart::Forward;
  std::uint64_t micro_batch = 0;  // 0 for the optimizer and the weight casts
  std::size_t first = 0;          // graph ops [first, end)
  std::size_t end = 0;
  friend bool operator==(const OpSpan&, const OpSpan&) = default;
};
// The graph and its ops' parts, in the order the builder emitted them: the spans cover every op
// once. For the training step model (sim/training_step.h), which prices each part on its own.
struct LlmBuild {
  Graph graph;
  std::vector<OpSpan> spans;
  // The routed experts' stacked weights and biases on the rank (Parallelism::ep shards them).
  std::vector<TensorId> expert_weights;
};
std::optional<LlmBuild> try_build_llm_parts(const LlmConfig& config, const LlmPhase& phase,
                                            const Parallelism& parallelism, Diagnostics& diags);

// Closed-form numbers of a step that the graph does not carry.
struct LlmStepStats {
  std::uint64_t tokens = 0;             // tokens processed per step on one DP replica
  std::uint64_t micro_batch_size = 0;   // sequences per micro-batch
  std::uint64_t first_layer = 0;        // the stage's layers: [first_layer, first_layer+layers)
  std::uint64_t stage_layers = 0;
  double pipeline_bubble_fraction = 0;  // (pp - 1) / (micro_batches + pp - 1)
  // The whole model's KV cache after the step (all layers, all kv heads, the whole batch):
  // prefill seq_len tokens per sequence, decode seq_len + 1, training 0; in the cache's type
  // (phase.quant.kv_cache, else the model's).
  Bytes kv_cache_bytes;
  // This rank's share: its stage's layers, kv_heads / tp (MLA's latent: all of it).
  Bytes kv_cache_bytes_per_rank;
};
// The whole model's KV-cache bytes per token (K and V of every layer and kv head; MLA's latent
// and rotary key), in the cache's type: quant.kv_cache, else the model's.
Bytes kv_cache_bytes_per_token(const LlmConfig& config, const Quantization& quant);
// One TP rank's share of that: 1/tp of the kv heads, or with MLA the whole latent, which every
// rank keeps (its heads all read it).
Bytes kv_cache_bytes_per_token_per_rank(const LlmConfig& config, const Quantization& quant,
                                        std::uint64_t tp);

LlmStepStats llm_step_stats(const LlmConfig& config, const LlmPhase& phase,
                            const Parallelism& parallelism);

}  // namespace coda::workload::llm
