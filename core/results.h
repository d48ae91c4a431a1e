#pragma once
// Result values every engine returns, and their JSON. An engine fills these; reports and the CLI
// only read them. Plain aggregates: no behaviour beyond summing and serialising.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/units.h"

namespace coda::results {

// Bytes moved at one memory level for one tensor (operand) of an op.
struct TensorTraffic {
  std::string tensor;  // "ifmap", "filter", "ofmap"
  std::string level;   // "sram", "dram"
  Bytes reads;
  Bytes writes;
  friend bool operator==(const TensorTraffic&, const TensorTraffic&) = default;
};

struct Cost {
  Cycles cycles;          // wall cycles, stalls included
  Cycles compute_cycles;  // cycles the compute unit needs with data always ready
  Cycles stall_cycles;    // cycles spent waiting for memory: cycles - compute_cycles
  std::uint64_t macs = 0;
  Bytes sram_reads;
  Bytes sram_writes;
  Bytes dram_reads;
  Bytes dram_writes;
  Joules energy;  // dynamic energy of the MACs, vector ops and every level's accesses, plus
                  // static power over the op's time
  friend bool operator==(const Cost&, const Cost&) = default;
  friend Cost operator+(Cost a, const Cost& b);  // sequential composition: op -> model
};

// What sets an op's time: its compute, moving its data (memory or links), or a fixed latency
// (a kernel launch, a small message's per-hop latency).
enum class Bound { Compute, Memory, Latency };
std::string_view to_string(Bound bound);  // "compute", "memory", "latency"
std::optional<Bound> parse_bound(std::string_view name);
std::string bound_names();  // "compute, memory, latency": for hints

// Where an op ran: the systolic array, the tensor cores, the vector unit, a copy through DRAM,
// the chip-to-chip links, or a fused or decomposed attention (its own pricing).
enum class OpUnit : std::uint8_t { Systolic, TensorCore, Vector, Transfer, Collective, Attention };
// "systolic", "tensor_core", "vector", "transfer", "collective", "attention": run.json's and
// layers.csv's spelling.
std::string_view to_string(OpUnit unit);
std::optional<OpUnit> parse_op_unit(std::string_view name);
std::string op_unit_names();  // for hints

// Where a tile-level engine's stall cycles went (the SystemC engine; the analytical engine has
// no stalls to attribute and leaves it empty). Whole cycles, each rounded on its own.
struct StallBreakdown {
  Cycles dram_bandwidth;  // moving bytes at DRAM bandwidth and queueing behind other transfers
  Cycles dram_latency;    // the DRAM's fixed access latency
  Cycles bank_conflicts;  // opening rows: row-buffer misses
  Cycles network;         // the on-chip network or a GPU's SM-to-L2 path
  Cycles launch;          // kernel launches (GPUs)
  friend bool operator==(const StallBreakdown&, const StallBreakdown&) = default;
  StallBreakdown& operator+=(const StallBreakdown& other);
};

// A tile-level engine's activity at one level of the memory system over the whole run.
struct LevelActivity {
  std::string level;  // "dram", "noc", "sm_to_l2"
  Bytes bytes;
  Cycles busy;          // summed over its channels or links
  double utilization = 0;  // busy / (channels or links x run cycles)
  friend bool operator==(const LevelActivity&, const LevelActivity&) = default;
};

struct OpResult {
  std::string name;
  OpUnit unit = OpUnit::Systolic;  // where it ran
  // How the op was laid onto the hardware, by name, in display order: for a systolic array
  // Sr, Sc, T, row_folds, col_folds.
  std::vector<std::pair<std::string, std::uint64_t>> mapping;
  Cost cost;
  double mapping_efficiency = 0.0;   // share of the PEs that hold work, averaged over folds
  double compute_utilization = 0.0;  // MACs / (PEs * compute cycles)
  Bound bound = Bound::Compute;
  double arithmetic_intensity = 0.0;  // MACs per DRAM byte
  std::vector<TensorTraffic> traffic;
  // The loop nest the mapper's search chose (outermost level first), when it priced the op;
  // empty for the closed forms' fixed rule.
  std::string loop_nest;
  std::optional<StallBreakdown> stalls;  // tile-level engines only
  // What the model assumed for this op where the hardware left a choice open (a systolic
  // array without an accumulator level: partial sums go to DRAM), one sentence each.
  std::vector<std::string> notes;
  // The element type the op computed in, as the schedule chose it ("bf16"); empty when the
  // engine does not record it. The report's roofline takes its peak at this type.
  std::string precision;
  friend bool operator==(const OpResult&, const OpResult&) = default;
};

struct InputHash {
  std::string role;  // "arch", "workload"
  std::string path;
  std::string hash;  // 16 hex digits of the content hash
  friend bool operator==(const InputHash&, const InputHash&) = default;
};

// Where a result came from: which inputs (by content hash), which engine, which coda.
struct Provenance {
  std::string coda_version;
  std::string engine;
  std::vector<InputHash> inputs;
  friend bool operator==(const Provenance&, const Provenance&) = default;
};

// An op left out of a run (only when the user asked to skip what the hardware cannot run).
struct SkippedOp {
  std::string name;
  std::string reason;
  friend bool operator==(const SkippedOp&, const SkippedOp&) = default;
};

// A group of ops the mapper ran as one kernel (mapper/fusion.h, docs/fusion.md).
struct FusedGroup {
  std::string kind;              // "epilogue", "conv_bn_relu", "elementwise_chain", "attention",
                                 // "depth_first"
  std::vector<std::string> ops;  // in execution order
  Bytes dram_bytes_saved;        // planned: 2 x the bytes kept on chip (written and read once)
  friend bool operator==(const FusedGroup&, const FusedGroup&) = default;
};

// A candidate group the fusion planner turned down, and why.
struct RejectedGroup {
  std::string kind;
  std::vector<std::string> ops;
  std::string reason;
  friend bool operator==(const RejectedGroup&, const RejectedGroup&) = default;
};

// An activation the residency plan kept on chip from its producer to its last reader
// (mapper/residency.h, docs/fusion.md "Residency").
struct ResidentTensor {
  std::string tensor;
  Bytes bytes;
  std::string producer;
  std::string last_reader;
  Bytes dram_bytes_saved;  // planned: the producer's write and every reader's read
  friend bool operator==(const ResidentTensor&, const ResidentTensor&) = default;
};

// An activation that goes through DRAM, and why.
struct NonResidentTensor {
  std::string tensor;
  Bytes bytes;
  std::string reason;
  friend bool operator==(const NonResidentTensor&, const NonResidentTensor&) = default;
};

// The weights cached on chip across runs (an arch level with caches_weights).
struct CachedWeights {
  std::vector<std::string> levels;
  Bytes capacity;   // the caching levels, chip-wide
  Bytes reserve;    // left for the ops' own buffers
  Bytes budget;     // min(capacity, on-chip pool - reserve): what weights may fill
  Bytes cached;
  Bytes streamed;   // weights that stream from DRAM every run
  std::uint64_t tensors_cached = 0;
  std::uint64_t tensors_streamed = 0;
  std::string first_streamed;  // the first weight that did not fit; empty when all did
  Bytes dram_bytes_saved;
  friend bool operator==(const CachedWeights&, const CachedWeights&) = default;
};

struct Residency {
  bool activations = false;  // whether activation residency was planned (--fusion all)
  Bytes on_chip;             // the pool: on-chip bytes holding inputs or caching weights
  std::vector<ResidentTensor> kept;
  std::vector<NonResidentTensor> rejected;
  std::optional<CachedWeights> weights;
  friend bool operator==(const Residency&, const Residency&) = default;
};

// Whether a run's DRAM footprint fits the hardware's DRAM.
enum class FitStatus : std::uint8_t {
  Fits,             // persistent + arena <= dram.capacity
  DoesNotFit,       // persistent + arena > dram.capacity
  UnknownCapacity,  // the arch states no dram.capacity
};
std::string_view to_string(FitStatus status);  // "fits", "does not fit", "unknown capacity"
std::optional<FitStatus> parse_fit_status(std::string_view name);
std::string fit_status_names();  // for hints

// Where the run's tensors live in DRAM (mapper/memory_plan.h): the peak footprint, its parts,
// and whether it fits the hardware's DRAM.
struct MemoryFootprint {
  FitStatus status = FitStatus::UnknownCapacity;
  Bytes needed;     // weights + KV cache + optimizer state + the activation arena
  Bytes available;  // DRAM capacity; 0 when the arch states none
  Bytes weights;
  Bytes kv_cache;
  Bytes optimizer_state;
  Bytes activations;       // the arena: transient tensors at their peak, after buffer reuse
  Bytes on_chip;           // every on-chip level's capacity together
  std::uint64_t ops_over_on_chip = 0;  // ops whose working set exceeds it
  std::string reason;      // one sentence with the numbers
  friend bool operator==(const MemoryFootprint&, const MemoryFootprint&) = default;
};

struct RunResult {
  Provenance provenance;
  std::string arch;
  std::string workload;
  Hertz clock;
  std::uint64_t processing_elements = 0;
  SquareMillimetres area;  // of the compute units and SRAM (arch/energy.h); 0 when unknown
  std::vector<OpResult> ops;
  std::vector<SkippedOp> skipped;
  Cost total;  // the sum over ops
  std::string fusion_mode = "none";  // how ops were fused: none, epilogue, all
  // GPUs: the instruction path of library GEMMs and the fused-attention implementation the run
  // priced ("wgmma", "fa3"); empty on archs without tensor cores.
  std::string gemm_path;
  std::string attention_impl;
  std::string decode_attention;  // "grouped", "per_head" or "fa2_forward" (arch::DecodeAttention)
  // How the kernels were launched: empty (from a CUDA graph, or no host modelled) or "eager"
  // (issued one by one by the host, at least host_issue apart: calibration.eager_issue_time).
  // host_wait is the time the GPU waited on the host beyond the ops' own; run_time adds it.
  std::string launch;
  Seconds host_issue;
  Seconds host_wait;
  std::vector<FusedGroup> fusion;    // the groups fused, in execution order
  std::vector<RejectedGroup> fusion_rejected;
  // Tensors held on chip across ops; absent where no residency was planned (no systolic matrix
  // unit, or neither --fusion all nor a level that caches weights).
  std::optional<Residency> residency;
  // How contractions were mapped: "fixed" (the closed forms' rule) or "search: STRATEGY,
  // OBJECTIVE" (mapper/search.h).
  std::string mapper = "fixed";
  MemoryFootprint memory;
  // Tile-level engines only: the run's stalls by cause, each memory-system level's activity,
  // and where each timing figure came from (stated in the config or a cited default).
  std::optional<StallBreakdown> stalls;
  std::vector<LevelActivity> activity;
  std::vector<std::string> engine_notes;
  // What loading the workload said (an LLM's size, KV cache and layout; the ONNX nodes left out
  // under --skip-unsupported).
  std::vector<std::string> workload_notes;
  // The distinct notes of the ops, in the order they first appear.
  std::vector<std::string> notes;
  friend bool operator==(const RunResult&, const RunResult&) = default;
};

// An op's mapping entry `key` (OpResult::mapping), 0 when it has none.
std::uint64_t mapping_value(const OpResult& op, std::string_view key);

// Utilisation of the whole run: total MACs / (PEs * total compute cycles).
double compute_utilization(const RunResult& run);

// Wall time of the whole run at its clock, average power (energy over time) and efficiency
// (2 operations per MAC per joule, in TOPS/W); 0 when the run took no time or energy.
Seconds run_time(const RunResult& run);
Watts average_power(const RunResult& run);
double tops_per_watt(const RunResult& run);

std::string hex_hash(std::uint64_t hash);

void to_json(nlohmann::ordered_json& j, const Cost& cost);
void from_json(const nlohmann::ordered_json& j, Cost& cost);
void to_json(nlohmann::ordered_json& j, const OpResult& op);
void from_json(const nlohmann::ordered_json& j, OpResult& op);
void to_json(nlohmann::ordered_json& j, const RunResult& run);
void from_json(const nlohmann::ordered_json& j, RunResult& run);

}  // namespace coda::results
