#pragma once
// Residency: which tensors stay in on-chip memory across ops instead of going to DRAM and back.
// Two decisions, each a value with its reasons (docs/fusion.md, "Residency", states the rules):
//
// Activations (`--fusion all` on hardware whose matrix unit is a systolic array: edge NPUs and
// TPU-like chips, where depth-first fusion of two layers used to be the only way to keep one).
// The graph is walked in order with each activation's lifetime, from the op that writes it to
// the last op that reads it, whatever the number of readers (a residual branch is read twice).
// Greedy in graph order of the producers: an activation is kept when, at every op of its
// lifetime, the resident set plus the op's own buffers fits the on-chip pool:
//
//   occupied(j) + bytes(t) + need(j) <= pool        for every op j from producer to last reader
//
//   pool       the chip-wide bytes of the on-chip levels that hold inputs (what a consumer reads
//              from) or cache weights: capacity x instances x cores for a per-core level
//   occupied   the kept activations alive at j and the cached weights (all ops)
//   need(j)    op j's buffers for the operands it does not find resident: for each such access,
//              min(its bytes, the share of the pool the systolic model gives its role), the
//              share being HardwareModel::sram_bytes x arrays when that buffer is a level of the
//              pool, else 0 (an accumulator outside the pool). Tile intermediates of fusion
//              groups (an epilogue's) need nothing here, nor does an op that does not run or a
//              reshape (a view, priced free).
//
// Graph inputs (never written) and graph results go through DRAM, and so does a tensor that an
// op which does not run, or whose cost model reads its operands from DRAM (attention,
// collectives), writes or reads; each rejected activation is listed with the reason. A kept
// activation saves its producer's write and every reader's read: 2 x its bytes for a chain (a
// reshape's, which the schedule prices free, are not counted).
//
// Weights (an arch level with `caches_weights: true`, whatever the fusion mode: it is how the
// hardware runs repeated inference, not a kernel choice). In steady state the weights that fit
// stay on chip across runs (Coral, Edge TPU Compiler docs, "Parameter data caching":
// https://coral.ai/docs/edgetpu/compiler/). They are assigned in graph order of first use until
// one does not fit; it and every later weight stream from DRAM each run. The budget is
//
//   min(caching levels' chip-wide capacity, pool - reserve),   reserve = max over ops of need(j)
//                                                              with nothing resident
//
// so every op keeps room for its own buffers whatever is cached; activations are then planned
// in what the cached weights leave. A weight some op writes (a training step) is not a cached
// parameter, nor is one read only by ops that do not run.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "arch/hardware_model.h"
#include "core/units.h"
#include "mapper/fusion.h"
#include "workloads/graph.h"

namespace coda::mapper {

// An activation kept on chip over its lifetime.
struct KeptTensor {
  workload::TensorId tensor;
  Bytes bytes;
  std::size_t producer = 0;       // graph op index
  std::size_t last_reader = 0;    // graph op index
  std::uint32_t readers = 0;      // ops that read it
  Bytes dram_bytes_saved;         // the producer's write and every reader's read of it
  friend bool operator==(const KeptTensor&, const KeptTensor&) = default;
};

// An activation that goes through DRAM, and why.
struct RejectedTensor {
  workload::TensorId tensor;
  Bytes bytes;
  std::string reason;  // a sentence naming the tensor, and the op and bytes where it failed
  friend bool operator==(const RejectedTensor&, const RejectedTensor&) = default;
};

// The weights held on chip across runs.
struct WeightCache {
  std::vector<std::string> levels;  // the levels with caches_weights
  Bytes capacity;                   // their chip-wide bytes
  Bytes reserve;                    // the largest op's buffers with nothing resident
  Bytes budget;                     // min(capacity, pool - reserve)
  Bytes cached;                     // bytes of the cached weights
  Bytes streamed;                   // bytes of the weights that stream every run
  std::vector<workload::TensorId> tensors;         // cached, in graph order of first use
  std::vector<workload::TensorId> streamed_tensors;
  Bytes dram_bytes_saved;  // every running op's read of a cached weight
  friend bool operator==(const WeightCache&, const WeightCache&) = default;
};

struct ResidencyPlan {
  bool activations = false;  // whether activation residency was planned
  Bytes pool;                // on-chip bytes holding inputs or caching weights, chip-wide
  std::vector<KeptTensor> kept;          // in graph order of their producers
  std::vector<RejectedTensor> rejected;  // likewise
  std::optional<WeightCache> weights;    // when some level caches weights
  friend bool operator==(const ResidencyPlan&, const ResidencyPlan&) = default;
};

// The planned DRAM bytes saved: kept activations and cached weights.
Bytes total_dram_bytes_saved(const ResidencyPlan& plan);

// How a graph op takes part, from the schedule's placement.
struct OpTraits {
  bool runs = true;            // the hardware has a unit for it
  bool prices_on_chip = true;  // its cost model takes on-chip tensors off its DRAM traffic
};

// Plans both decisions (see the header comment); `activations` says whether to plan activation
// residency (the schedule asks for it under FusionMode::All). Returns an empty plan unless the
// matrix unit is a systolic array. `traits` has one entry per graph op; the fusion plan's
// intermediates are tiles inside their groups and are neither candidates nor buffered.
// Pure and deterministic; O(ops x accesses + candidates x lifetime x accesses).
ResidencyPlan plan_residency(const workload::Graph& graph, const arch::HardwareModel& hw,
                             const FusionPlan& fusion, std::span<const OpTraits> traits,
                             bool activations);

}  // namespace coda::mapper
