#pragma once
// The schedule: every op of a graph in execution order, placed on a unit of the hardware with
// the work that unit needs to price it, and the ops the hardware cannot run (each a value with a
// reason). Engines consume this.
//
// Placement is a fixed rule (docs/arch.md, "Which unit runs an op"):
//   contraction        -> the matrix unit: a systolic array (SystolicMapping) or tensor cores
//                         (TensorCoreWork; the engine picks the thread-block tile)
//   elementwise, reduction, normalization, pooling, optimizer
//                      -> the vector unit (VectorWork)
//   data movement      -> a copy through DRAM (TransferWork); a reshape or a split (views:
//                         each reader takes its part at its stride) moves nothing, and so does
//                         the heads' merge after a fused attention (written merged by it)
//   collective         -> the chip-to-chip links (CollectiveWork)
//   attention          -> the matrix unit and the vector unit together (AttentionWork): Q K^T and
//                         P V on the matrix unit, the softmax on the vector unit; fused
//                         (FlashAttention: S and P stay on chip) when the fusion plan groups it,
//                         else priced as decompose-attention's three ops would be
// An op runs at the precision of its first input; a matrix unit that lacks it cannot run the op
// (unless ScheduleOptions::precision overrides every op's precision); a vector unit that lacks it
// computes in fp32 when it can. Schema-1 arrays count words, not precisions, and run everything.
//
// Fusion and residency (mapper/fusion.h, mapper/residency.h, docs/fusion.md). schedule_graph
// plans fusion with ScheduleOptions::fusion, then, on a systolic matrix unit, the residency plan
// (activations kept on chip under FusionMode::All; weights cached where a level caches them),
// and applies both: the bytes of a tensor held on chip are taken off the DRAM reads and writes
// of the vector and transfer work that touches it (so the engine prices the lighter op, time
// included); for a contraction its role is marked in `on_chip` (the systolic model then neither
// fetches nor writes it and times the folds without it) and its bytes are recorded in
// dram_reads_saved / dram_writes_saved (tensor cores and loop-nest mappings take them off the
// priced traffic and energy; their time is not recomputed); an attention op in an attention
// group is priced fused.
//
// Mapping search (ScheduleOptions::search, docs/mapping.md): every contraction placed on the
// matrix unit also gets a loop-nest mapping (LoopNestPlan), repeated shapes searched once through
// the mapping cache; attention's inner GEMMs keep the closed forms. The memory plan and its fit
// against DRAM are always made.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "arch/hardware_model.h"
#include "core/data_type.h"
#include "mapper/fusion.h"
#include "mapper/loop_nest_model.h"
#include "mapper/memory_plan.h"
#include "mapper/residency.h"
#include "mapper/search.h"
#include "mapper/systolic_mapping.h"
#include "mapper/tile_program.h"
#include "workloads/graph.h"
#include "workloads/op.h"

namespace coda::mapper {

// The most folds (row folds x column folds x packs) a systolic op may have: its traffic and
// stalls are computed fold by fold (sim/analytical/systolic_traffic.h). 2^24 is about 16.7
// million, above any layer of the bundled workloads on any bundled array by orders of magnitude
// (LLaMA-2-70B's largest GEMM on an 8x8 array folds 3.7 million times).
inline constexpr std::uint64_t kMaxSystolicFolds = std::uint64_t{1} << 24;

enum class Placement : std::uint8_t {
  Systolic,
  TensorCore,
  Vector,
  Transfer,
  Collective,
  Attention,
};
std::string_view to_string(Placement placement);

// A GEMM on a GPU's tensor cores.
struct TensorCoreWork {
  workload::GemmView gemm;
  std::uint32_t input_bytes = 2;   // per element of A and B
  std::uint32_t output_bytes = 2;  // per element of C
  // A's bytes as stored in DRAM, over the whole op: the input tensor at the op's precision. For a
  // convolution that is its feature map (the window the op touches), not the im2col-unrolled
  // m x k matrix an implicit-GEMM kernel walks through L2; for a plain GEMM, m x k x input_bytes.
  std::uint64_t a_bytes = 0;
  // Whether every operand's contiguous (innermost) dimension is a whole number of
  // arch::kGemmAlignmentBytes at its element size (A and B at input_bytes, C at output_bytes),
  // as cuBLAS's fast kernels need; false e.g. for GPT-2's LM head (vocabulary 50,257). An
  // operand indexed by an affine window (a convolution's input) counts as aligned: implicit-GEMM
  // kernels stage it through shared memory by their own rules, which coda does not model.
  bool aligned = true;
  // B's bytes as stored, per element of B, where they differ from input_bytes: a weight in a
  // narrower type than the op computes in, with any scales it carries (a W4A16 weight with one
  // bf16 scale per 128: 0.5 + 2 / 128); 0: input_bytes.
  double b_element_bytes = 0;
  friend bool operator==(const TensorCoreWork&, const TensorCoreWork&) = default;
};

// An op of the vector unit: `elements` output points (for a reduction, input points) of
// `function`, reading and writing the bytes of the tensors it touches.
struct VectorWork {
  workload::OpKind kind = workload::OpKind::Elementwise;
  workload::Function function = workload::Function::None;
  std::uint64_t elements = 0;
  Bytes reads;
  Bytes writes;
  // A normalization (softmax, norms): the extent of the axis it normalises over, its last; else 0.
  std::uint64_t row_elements = 0;
  friend bool operator==(const VectorWork&, const VectorWork&) = default;
};

// A copy through memory; a view (reshape, split, a fused attention's heads' merge) is free
// (`bytes` zero, and no kernel).
struct TransferWork {
  Bytes reads;
  Bytes writes;
  friend bool operator==(const TransferWork&, const TransferWork&) = default;
};

struct CollectiveWork {
  workload::Function function = workload::Function::AllReduce;
  std::uint32_t ranks = 1;
  Bytes bytes;  // the buffer each rank holds (all-gather: the gathered output)
  friend bool operator==(const CollectiveWork&, const CollectiveWork&) = default;
};

// A contraction's loop-nest mapping, chosen by the mapper's search (ScheduleOptions::search)
// with its cost on the loop-nest model (mapper/loop_nest_model.h). Engines price the op from it
// instead of the unit's closed form.
struct LoopNestPlan {
  Mapping mapping;
  MappingCost cost;
  std::vector<std::string> levels;   // the hierarchy's level names, innermost first, DRAM last
  std::vector<std::string> tensors;  // per access of the op: "inputs", "weights" or "outputs"
  double peak_macs_per_cycle = 0;    // the hierarchy's PEs x MACs per PE per cycle
  double dram_pj_per_byte = 0;
  std::string loop_nest;             // to_string(mapping, ...): the nest, outermost first
  TileProgram program;               // the tiles DRAM moves, step by step (mapper/tile_program.h)
  bool cached = false;               // taken from the mapping cache (a repeated shape)
  std::uint64_t evaluated = 0;       // points the search scored for it (0 when cached)
};

struct ScheduledOp;

// A contraction's operands, by role, that stay on chip for the whole op (a kept activation, a
// cached weight, a fused intermediate): every access of the role is such a tensor.
struct OnChipOperands {
  bool input = false;
  bool weight = false;
  bool output = false;
  friend bool operator==(const OnChipOperands&, const OnChipOperands&) = default;
};

// An attention op (make_attention's form). `parts` are decompose-attention's three ops placed by
// the same rules as any op: Q K^T (batch = b x kv heads, m = query heads per kv head x q, n = kv,
// k = d) and P V (n = d, k = kv) on the matrix unit, the softmax over S on the vector unit; the
// GEMMs cover every query-key pair and S and P are full b x heads x q x kv tensors.
//   fused    FlashAttention: the matrix unit does the parts' GEMMs for the kept pairs only
//            (pairs / all_pairs of their work), the vector unit an online softmax over the kept
//            pairs, and DRAM sees `reads` (Q, K, V once) and `writes` (O once).
//   unfused  the three parts one after another, each priced as it is, S and P through DRAM.
// A backward op (make_attention_backward's form) has five parts (dV, dP, the softmax's backward,
// dQ, dK: workload::decompose_attention_backward); fused, it is FlashAttention-2's backward
// kernel (which recomputes S from Q and K), reading Q, K, V, O, dO and writing dQ, dK, dV once.
struct AttentionWork {
  bool fused = false;
  // The backward op (make_attention_backward): parts dv, dp, softmax_bwd, dq, dk
  // (decompose_attention_backward); fused, FlashAttention-2's backward kernel.
  bool backward = false;
  std::vector<ScheduledOp> parts;  // qk, softmax, pv
  std::uint64_t batch = 1, heads = 1, kv_heads = 1, q_len = 1, kv_len = 1;
  std::uint64_t pairs = 0;         // query-key pairs the mask keeps, over batch and heads
  std::uint64_t all_pairs = 0;     // b x heads x q x kv
  std::uint64_t head_dim = 0;      // Q's and K's (d)
  std::uint64_t value_dim = 0;     // V's and O's (workload::attention_value_dim: d, or e)
  std::uint64_t block = 0;  // fused: the FlashAttention block Br = Bc the fusion plan took
  bool softcap = false;     // logit soft-capping (AttentionSpec::softcap)
  Bytes reads;   // Q, K and V (backward: also O and dO); a tensor two accesses read, once
  Bytes writes;  // O (backward: dQ, dK and dV)
};

using Work = std::variant<std::monostate, TensorCoreWork, VectorWork, TransferWork, CollectiveWork,
                          AttentionWork>;

struct ScheduledOp {
  std::string name;
  std::uint64_t macs = 0;
  SystolicMapping mapping;  // Placement::Systolic
  Placement placement = Placement::Systolic;
  DataType precision = DataType::Int8;
  Work work;  // every other placement
  // Contractions only: DRAM bytes of fused intermediates this op reads or writes, which the
  // engine takes off its priced traffic (vector and transfer work is reduced in `work` itself).
  Bytes dram_reads_saved;
  Bytes dram_writes_saved;
  OnChipOperands on_chip;  // contractions: the same by role, for the systolic model
  std::optional<std::size_t> fusion_group;  // index into Schedule::fusion.groups
  // Whether the op launches a kernel of its own: false for an op that runs inside an earlier op's
  // kernel of its fusion group (an epilogue, a later link of a chain), which pays no fixed cost.
  bool own_kernel = true;
  // Contractions on the matrix unit, when the schedule searched mappings: the one chosen, or,
  // when the op has no map space on the hierarchy, why (the closed form prices it then).
  std::optional<LoopNestPlan> loop_nest;
  std::string loop_nest_why;
};

// An op the hardware has no unit for. Infeasibility is a value with a reason; the driver decides
// whether it is an error.
struct UnsupportedOp {
  std::string name;
  std::string reason;
  SourceLocation source;
};

struct Schedule {
  std::string workload;
  std::vector<ScheduledOp> ops;
  std::vector<UnsupportedOp> unsupported;
  FusionPlan fusion;  // group op indices refer to the graph's ops
  ResidencyPlan residency;  // likewise
  // Where the run's tensors live (mapper/memory_plan.h) and whether they fit the hardware.
  MemoryPlan memory;
  FitReport fit;
};

// The loop-nest search of every contraction on the matrix unit (mapper/search.h).
struct ScheduleSearch {
  SearchGoal goal;
  SearchSettings settings;
  // Shared between schedules (a sweep's points); nullptr: a cache for this schedule only.
  MappingCache* cache = nullptr;
};

struct ScheduleOptions {
  std::optional<DataType> precision;  // run every op at this precision
  FusionMode fusion = FusionMode::None;
  // Search a loop-nest mapping for every contraction on the matrix unit; nullopt: the closed
  // forms' fixed rule (a systolic array's dataflow, the GPU model's thread-block tile list).
  std::optional<ScheduleSearch> search;
  // plan_memory(graph) made before (it depends on the graph only; a sweep makes it once per
  // workload); nullptr: schedule_graph makes it.
  const MemoryPlan* memory_plan = nullptr;
  // The most ranks a collective may join: the chips of the cluster whose network the caller
  // prices it on (sim/training_step.h re-prices expert parallelism's all-to-alls that span
  // nodes); nullopt: the arch's interconnect.chips.
  std::optional<std::uint32_t> collective_ranks;
};

// The precision an op computes in: its first input's element type.
DataType op_precision(const workload::Op& op);

// TensorCoreWork::aligned of a contraction run at `precision` (its inputs at that precision, its
// output at its own type): each operand's innermost extent a whole number of
// arch::kGemmAlignmentBytes; an op indexed by an affine window (a convolution) counts as aligned.
bool gemm_operands_aligned(const workload::Op& op, DataType precision);

Schedule schedule_graph(const workload::Graph& graph, const arch::HardwareModel& hw,
                        const ScheduleOptions& options = {});

}  // namespace coda::mapper
