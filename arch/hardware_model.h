#pragma once
// The immutable hardware model the mapper and the engines use, built from a validated ArchSpec.
// Everything derived (peaks per precision, chip-wide bandwidths, ridge points, the systolic view
// of one array) is computed once here, so the hot paths read plain numbers.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "arch/arch_spec.h"
#include "arch/energy.h"

namespace coda::arch {

enum class Operand : std::uint8_t { Ifmap, Filter, Ofmap };

// Bits of one partial sum in a systolic array's accumulators: int8 and int4 products add up in
// int32 and 16-bit and 8-bit float products in fp32, so a partial sum is 32 bits wide unless the
// op's output is wider. Sources: Jouppi et al., ISCA 2017, section 2 ("4 MiB of 32-bit
// Accumulators" below the TPU's matrix unit); Gemmini's GemminiConfigs.defaultConfig (accType
// SInt(32) for inputType SInt(8)). The loop-nest model's PE accumulator (mapper/mapping.h) has
// the same width.
inline constexpr std::uint32_t kAccumulatorBits = 32;

// One memory level as the roofline and the summary see it; DRAM is the last, named "dram".
struct LevelSummary {
  std::string name;
  Scope scope = Scope::Chip;
  std::uint64_t instances = 1;  // on the whole chip (a per-core level counts once per core)
  Bytes capacity;               // per instance
  std::optional<double> read_bytes_per_second;   // all instances together; nullopt: no limit
  std::optional<double> write_bytes_per_second;  // all instances together; nullopt: no limit
  std::uint8_t holds = bits(Holds::All);
};

class HardwareModel {
 public:
  explicit HardwareModel(ArchSpec spec);

  const ArchSpec& spec() const { return spec_; }
  const std::string& name() const { return spec_.name; }
  Hertz clock() const { return spec_.clock; }
  std::uint32_t cores() const { return spec_.cores; }

  // The unit contractions run on (the first systolic or tensor-core unit), and the unit
  // elementwise ops, norms and reductions run on; null when the core has none.
  const ComputeUnitSpec* matrix_unit() const { return unit_at(matrix_); }
  const ComputeUnitSpec* vector_unit() const { return unit_at(vector_); }
  // Whether the matrix unit is a GPU's tensor cores.
  bool has_tensor_cores() const;

  // ---- roofline ----
  // Dense operations per second (2 per MAC) of every matrix unit of every core at `precision`;
  // 0 when no matrix unit supports it.
  double peak_ops_per_second(DataType precision) const;
  // Element operations per second of the vector units of every core; 0 when unsupported.
  double peak_vector_ops_per_second(DataType precision) const;
  // The precisions some matrix unit supports, in enum order.
  std::vector<DataType> matrix_precisions() const;
  // Chip DRAM bandwidth in bytes per second; nullopt when unlimited.
  std::optional<double> dram_bytes_per_second() const;
  // The memory levels, innermost first, then DRAM.
  const std::vector<LevelSummary>& levels() const { return levels_; }
  // The roles every engine's view gives the spec's levels, decided here once: the innermost
  // core-level memory holding `role` (a GPU's shared memory for inputs, an NPU's input buffer)
  // and the first chip-level memory (a GPU's L2); null when the arch has none.
  const MemoryLevelSpec* core_level(Holds role) const { return innermost_core_level(spec_, role); }
  const MemoryLevelSpec* chip_cache() const;
  // Operations per byte at which an op moving its bytes through `level` (read bandwidth) turns
  // from memory- to compute-bound at `precision`; nullopt when the level's bandwidth is no
  // limit or the precision is unsupported.
  std::optional<double> ridge_point(DataType precision, const LevelSummary& level) const;

  // ---- the systolic view: one array of the matrix unit (precondition: it is systolic) ----
  std::uint64_t rows() const { return array_.rows; }
  std::uint64_t cols() const { return array_.cols; }
  Dataflow dataflow() const { return array_.dataflow; }
  Accumulation accumulation() const { return array_.accumulation; }
  WeightPreload weight_preload() const { return array_.weight_preload; }
  // Arrays on the chip (instances per core x cores); an op is split over them.
  std::uint64_t arrays() const { return arrays_; }
  // PEs of every array on the chip.
  std::uint64_t processing_elements() const { return rows() * cols() * arrays_; }
  // Schema 1 counts words: every operand of every op is `word_size` bytes (SCALE-Sim's word).
  // nullopt on schema 2, where each operand is priced at its own element type (the op's
  // tensors say which; docs/systolic_model.md, "Operand element sizes").
  std::optional<std::uint64_t> word_bytes() const;
  // The bytes of one array's buffer for an operand: the innermost core-level memory holding
  // the operand's role, shared evenly among the roles it holds and among the core's arrays; 0
  // when no level holds the role. working_bytes is the part one fold's tile may use: half when
  // that level is double-buffered. For outputs this level is the accumulator: partial sums of
  // successive row folds add up there (docs/systolic_model.md, "The accumulator level").
  std::uint64_t sram_bytes(Operand operand) const;
  std::uint64_t working_bytes(Operand operand) const;
  // The memory level buffering `operand`, as above; null when no core-level memory holds its
  // role (for outputs: the arch has no accumulator level).
  const MemoryLevelSpec* operand_level(Operand operand) const;
  bool double_buffered() const { return double_buffered_; }
  // Chip DRAM bandwidth in bytes per cycle of this clock; nullopt when unlimited.
  std::optional<double> dram_bytes_per_cycle() const { return dram_bytes_per_cycle_; }

  // ---- what kernels achieve (docs/arch.md, "Calibration"): the peaks above times the
  // calibration's efficiencies, derived here once for every engine (the closed forms, the
  // loop-nest model and the SystemC engine read these, never the calibration itself) ----
  // Dense MACs per cycle of `clock` of one core's matrix units at `precision`, issued through
  // `path` on tensor cores: rate x count x compute_fraction[precision], and on tensor cores also
  // x tensor_issue[path][precision] x sustained_clock / clock. 0 when unsupported.
  double achievable_macs_per_cycle(DataType precision, TensorPath path) const;
  // The same through the path library GEMMs use (systolic arrays: their only path).
  double achievable_macs_per_cycle(DataType precision) const {
    return achievable_macs_per_cycle(precision, gemm_path());
  }
  // Element operations per cycle of one core's vector units at `precision`, x compute_fraction;
  // 0 when the unit does not run it (or there is no vector unit).
  double achievable_vector_ops_per_cycle(DataType precision) const;
  // DRAM bandwidth kernels reach: dram.bandwidth x dram_fraction; nullopt when unlimited.
  std::optional<double> achievable_dram_bytes_per_second() const;
  std::optional<double> achievable_dram_bytes_per_cycle() const;
  // The time from a warp's load to its data when the load misses L1 and L2 (the tensor-core
  // unit's global_load_latency, a time or cycles of the chip's clock); nullopt when the arch
  // states none.
  std::optional<double> global_load_latency_seconds() const;
  // One chip's per-direction interconnect bandwidth collectives reach: x link_fraction; 0 when
  // the arch has no interconnect.
  double achievable_link_bytes_per_second() const;
  // The fixed cost (launch, ramp-up, tail) of one kernel of `kind` inside a run of a whole model:
  // calibration.in_model_fixed_cost capped at standalone_fixed_seconds(kind) (a collective priced
  // by NCCL's tuner states 0 there: its base latency is its fixed cost), else
  // standalone_fixed_seconds. Every engine prices this one.
  double kernel_fixed_seconds(KernelKind kind) const;
  // The same for a kernel timed on its own: calibration.fixed_cost, else launch_overhead, else
  // kDefaultGpuLaunchSeconds on tensor cores and 0 otherwise.
  double standalone_fixed_seconds(KernelKind kind) const;
  // A thread block's prologue and epilogue in main-loop steps (calibration.tile_overhead;
  // default 0): GEMM and attention kernels on tensor cores.
  double tile_overhead_steps(KernelKind kind) const;
  // The instruction path of library GEMMs and the fused-attention implementation: the
  // calibration's choice, else wgmma / fa3 when the tensor cores have wgmma, else mma_sync / fa2.
  TensorPath gemm_path() const;
  AttentionImpl attention_impl() const;
  // The decode-attention class (calibration.decode_attention; default grouped), the share of
  // per_head's K/V re-reads that reach DRAM (decode_kv_reread; default 1) and an LLM step's
  // fixed cost in its runtime's loop (llm_step_fixed_cost; default 0).
  DecodeAttention decode_attention() const;
  // The norm kernels (calibration.norm_kernel; default fused).
  NormImpl norm_impl() const;
  // The SMs a fused-class row kernel spreads a row over (calibration.row_cluster; default 1).
  std::uint32_t row_cluster() const;
  double decode_kv_reread() const;
  double llm_step_fixed_seconds() const;
  // The host's time to issue one kernel in an eager runtime (calibration.eager_issue_time;
  // default 0: never bound by the host).
  double eager_issue_seconds() const;
  // The share of the forward's matrix rate a fused attention backward reaches (default 1).
  double attention_backward_share() const;
  // The triton attention class's share of fa2's matrix rate (calibration.attention_triton);
  // nullopt when the arch does not state it.
  std::optional<double> attention_triton_share() const;
  // Tensor-core MACs per cycle per core (its units together, as achievable_macs_per_cycle) of a
  // GEMM with an operand whose contiguous dimension is not a whole number of kGemmAlignmentBytes:
  // the datasheet rate x calibration.unaligned_gemm; nullopt when the arch does not state it
  // (such a GEMM is priced as an aligned one).
  std::optional<double> unaligned_macs_per_cycle(DataType precision) const;
  // fa3's share of the shorter of matrix and softmax work hidden under the longer (default 1).
  double attention_overlap() const;

  // ---- energy and area (arch/energy.h): stated figures, else derived ----
  const EnergyTable& energy() const { return energy_; }
  const AreaTable& area() const { return area_; }

 private:
  // Indices into spec_.compute (not pointers, so a copy of the model points into its own spec).
  static constexpr std::size_t kNoUnit = static_cast<std::size_t>(-1);
  const ComputeUnitSpec* unit_at(std::size_t index) const {
    return index == kNoUnit ? nullptr : &spec_.compute[index];
  }

  ArchSpec spec_;
  std::size_t matrix_ = kNoUnit;
  std::size_t vector_ = kNoUnit;
  SystolicArraySpec array_;
  std::uint64_t arrays_ = 0;
  static constexpr std::size_t kNoLevel = static_cast<std::size_t>(-1);
  std::uint64_t operand_bytes_[3] = {0, 0, 0};
  std::size_t operand_level_[3] = {kNoLevel, kNoLevel, kNoLevel};  // into spec_.memory
  bool operand_double_buffered_[3] = {true, true, true};
  bool double_buffered_ = true;
  std::optional<double> dram_bytes_per_cycle_;
  std::vector<LevelSummary> levels_;
  EnergyTable energy_;
  AreaTable area_;
};

}  // namespace coda::arch
