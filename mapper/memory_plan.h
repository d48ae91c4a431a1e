#pragma once
// Memory planning for a whole graph: when each tensor is live over the execution order, where the
// transient ones sit in one reused arena, the peaks, whether the whole run fits in DRAM, and how
// large a KV cache fits beside the rest. docs/memory_plan.md states every rule; in short:
//
//   * The graph's op order is the execution order. Ops are numbered 0 .. n-1.
//   * Persistent (resident for the whole run, each tensor once, in its own region): Weight,
//     KvCache and OptimizerState tensors, whether or not an op touches them.
//   * Transient (placed in the arena over their live interval): Activation and Gradient tensors.
//     first = the op that writes it (an in-place update is not a write); 0 for a graph input
//     (never written). last = the last op that touches it (reads or updates it in place); n-1
//     for a graph result. Results are Graph::outputs, or, when that list is empty, every tensor
//     some op writes and no op reads (Graph's own rule). A tensor that is written, never read and
//     not a result is a dead write: live only while its writer runs (last = first).
//   * A transient tensor no op touches and no result names is unused: it takes no memory.
//   * The arena: greedy best-fit by size (largest first, TFLite's GreedyBySize): each tensor goes
//     into the smallest gap, among the tensors already placed whose intervals overlap its own,
//     that holds it, else just above them.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "arch/hardware_model.h"
#include "core/results.h"
#include "core/units.h"
#include "workloads/graph.h"
#include "workloads/llm/llm_builder.h"
#include "workloads/llm/llm_config.h"

namespace coda::mapper {

enum class Residency : std::uint8_t {
  Persistent,  // weights, KV cache, optimizer state: the whole run, in the persistent region
  Transient,   // activations, gradients: [first, last], in the arena
  Unused,      // transient, touched by no op and no result: no memory
};
std::string_view to_string(Residency residency);  // "persistent", "transient", "unused"

struct TensorLife {
  workload::TensorId tensor;
  workload::TensorKind kind = workload::TensorKind::Activation;
  Residency residency = Residency::Transient;
  std::size_t first = 0;  // op indices, inclusive (persistent: 0 .. n-1)
  std::size_t last = 0;
  Bytes bytes;
  // Persistent: offset in the persistent region (tensors in id order). Transient: offset in the
  // arena. Unused: 0.
  std::uint64_t offset = 0;
  friend bool operator==(const TensorLife&, const TensorLife&) = default;
};

struct MemoryPlan {
  std::vector<TensorLife> tensors;  // index = TensorId::value

  // Persistent bytes, by kind; persistent = weights + kv_cache + optimizer_state.
  Bytes persistent;
  Bytes weights;
  Bytes kv_cache;
  Bytes optimizer_state;

  // Transient bytes.
  Bytes arena;                    // the arena's size after reuse (max offset + bytes)
  Bytes transient_without_reuse;  // every transient tensor in its own place
  Bytes peak_live;                // max of live_at_op: a lower bound on any arena
  std::size_t peak_op = 0;        // the first op at which peak_live is reached
  Bytes peak_activations;         // of peak_live, Activation tensors
  Bytes peak_gradients;           // of peak_live, Gradient tensors

  // Per op: transient bytes live while it runs (its inputs, its outputs and every tensor live
  // across it; add `persistent` for the total), and its working set (the bytes of its own
  // tensors, each once, every kind; an op without bindings: workload::tensor_bytes(op)).
  std::vector<Bytes> live_at_op;
  std::vector<Bytes> working_set;

  // Bindings that could not be read (a tensor id outside the graph, fewer bindings than
  // accesses), each a sentence naming the op; the plan skips them. Empty for a verified graph.
  std::vector<std::string> problems;

  // The peak DRAM footprint of the run: persistent + arena.
  Bytes off_chip() const { return persistent + arena; }
  friend bool operator==(const MemoryPlan&, const MemoryPlan&) = default;
};

// Plans `graph` as described above. Never throws on a malformed graph (see `problems`).
// Liveness and peaks are linear in ops and tensors; the arena is O(T log T) sorting plus, per
// tensor, O(log n) merges of short address-run lists (a segment tree over the n ops; see
// docs/memory_plan.md), not a visit of every tensor its interval overlaps. A LLaMA-2-70B training
// step of 29k tensors plans in under 0.1 s (bench/memory_plan_bench.cpp).
MemoryPlan plan_memory(const workload::Graph& graph);

// ---- fit against the hardware ----

// Bytes of every on-chip memory level together: per-core levels x instances x cores, plus chip
// levels x instances (DRAM excluded). Levels are summed as if exclusive.
Bytes on_chip_capacity(const arch::HardwareModel& hw);

using results::FitStatus;  // core/results.h: run.json carries it

// One part of the DRAM footprint: "weights", "kv cache", "optimizer state", "activations" and
// "gradients" (those live at the peak op), "arena fragmentation" (arena - peak_live).
struct Contributor {
  std::string what;
  Bytes bytes;
  friend bool operator==(const Contributor&, const Contributor&) = default;
};

struct FitReport {
  FitStatus status = FitStatus::UnknownCapacity;
  Bytes needed;     // plan.off_chip()
  Bytes available;  // dram.capacity; 0 when unknown
  Bytes excess;     // needed - available when it does not fit, else 0
  Bytes headroom;   // available - needed when it fits, else 0
  // The non-zero parts of `needed`, largest first (they sum to `needed`).
  std::vector<Contributor> contributors;
  // On chip: the capacity, and the ops whose working set exceeds it (op indices, in order).
  Bytes on_chip;
  std::vector<std::size_t> ops_over_on_chip;
  // One sentence: "needs 150 GiB of DRAM, 80 GiB available: 70 GiB over; weights 130 GiB, ...".
  std::string reason;
  bool fits() const { return status == FitStatus::Fits; }
  friend bool operator==(const FitReport&, const FitReport&) = default;
};

FitReport check_fit(const MemoryPlan& plan, const arch::HardwareModel& hw);

// ---- KV-cache sizing ----

// What DRAM holds besides the KV cache.
struct KvBudget {
  Bytes capacity;           // DRAM
  Bytes persistent_non_kv;  // weights, optimizer state
  Bytes transient;          // the arena (or any transient peak the caller expects)
};

// From a plan: persistent_non_kv = plan.persistent - plan.kv_cache (a KV cache the graph already
// holds is what is being sized), transient = plan.arena.
KvBudget kv_budget(const MemoryPlan& plan, Bytes capacity);

// The answer of a sizing function: the largest count that fits (tokens, sequences or context
// positions, as the function says), the DRAM left for the KV cache, the KV bytes of `count`, and
// why the count is 0 when it is (empty otherwise).
struct KvFit {
  std::uint64_t count = 0;
  Bytes room;      // capacity - persistent_non_kv - transient, 0 when that is negative
  Bytes kv_bytes;  // of `count`
  std::string reason;
  friend bool operator==(const KvFit&, const KvFit&) = default;
};

// KV-cache bytes one token adds on one rank: 2 (K and V) x layers x kv_heads x head_dim x dtype
// bytes (llm::llm_headline), divided by pp and tp (a rank holds its stage's layers and its
// kv_heads / tp; MLA's latent, by pp only: every TP rank holds it whole). Precondition: tp,
// pp >= 1 (llm::check_llm_build).
Bytes kv_cache_bytes_per_token(const workload::llm::LlmConfig& config,
                               const workload::llm::Parallelism& parallelism = {});

// Tokens (batch x context summed over sequences): floor(room / bytes_per_token).
KvFit max_kv_tokens(const KvBudget& budget, Bytes bytes_per_token);
// The largest batch of `context`-token sequences: floor(max tokens / context).
KvFit max_kv_batch(const KvBudget& budget, Bytes bytes_per_token, std::uint64_t context);

// KV bytes of `batch` sequences of `context` tokens, for caches that are not linear in tokens
// (paged blocks, per-sequence headers). Must not decrease as either argument grows.
using KvBytesFn = std::function<Bytes(std::uint64_t batch, std::uint64_t context)>;
// The largest batch in [0, max_batch] of `context`-token sequences that fits (binary search).
KvFit max_kv_batch(const KvBudget& budget, const KvBytesFn& kv_bytes, std::uint64_t context,
                   std::uint64_t max_batch);
// The largest context in [0, max_context] for `batch` sequences that fits (binary search).
KvFit max_kv_context(const KvBudget& budget, const KvBytesFn& kv_bytes, std::uint64_t batch,
                     std::uint64_t max_context);

}  // namespace coda::mapper
