#pragma once
// A hardware description as a user writes it in YAML (configs/arch/*.yaml), and the reader that
// validates it. docs/arch.md lists every key. Two forms are read:
//
//   schema_version: 2   the general form: a chip of identical cores, each with compute units
//                       (systolic arrays, tensor cores, a vector unit) and memory levels; chip-wide
//                       memory levels, DRAM, the on-chip network, chip-to-chip links, energy,
//                       area and power.
//   schema_version: 1   the Foundation's shorthand for one systolic array with three SRAMs
//                       (array/sram/dram/word_size). It is read into the same ArchSpec: one core,
//                       one systolic unit, three core-level memories holding inputs, weights and
//                       outputs, and DRAM.
//
// The spec is plain data; arch::HardwareModel derives everything (peaks, ridge points, the
// systolic view, energy and area tables) from it.

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/data_type.h"
#include "core/diagnostics.h"
#include "core/units.h"
#include "core/yaml_reader.h"

namespace coda::arch {

// Which of the three GEMM dimensions stays in the PEs while the third streams through.
enum class Dataflow : std::uint8_t { OutputStationary, WeightStationary, InputStationary };
std::string_view to_string(Dataflow dataflow);  // "output_stationary", ...
std::string_view short_name(Dataflow dataflow);  // "os", "ws", "is"

enum class UnitKind : std::uint8_t {
  Systolic,    // a rows x cols array of MACs with a dataflow (TPU MXU, NPU cores, Eyeriss)
  TensorCore,  // the matrix units of a GPU SM, fed from shared memory by warps
  Vector,      // SIMD lanes for elementwise ops, softmax, norms and reductions
};
std::string_view to_string(UnitKind kind);  // "systolic", "tensor_core", "vector"

// Per-precision throughput of one unit instance per clock cycle: dense MACs for matrix units,
// element operations for a vector unit. A precision that is absent is not supported by the unit.
using RateTable = std::map<DataType, double>;

// How a weight- or input-stationary array orders its folds when a column fold's partial sums
// exceed the accumulator level (docs/systolic_model.md, "The accumulator level and the outputs").
//   ColumnFold  each column fold streams all of T through every row fold (SCALE-Sim's order); its
//               partial sums add up in the accumulator when they fit, else go to DRAM
//   Stripes     T is cut into stripes whose partial sums fit the accumulator, each run through
//               every row fold before the next (NVDLA's stripe/channel operations)
enum class Accumulation : std::uint8_t { ColumnFold, Stripes };
std::string_view to_string(Accumulation accumulation);  // "column_fold", "stripes"

// When a weight- or input-stationary array loads its stationary tile.
//   Exposed     before the fold streams: R cycles per fold (SCALE-Sim)
//   Overlapped  into shadow registers while the previous fold streams (NVDLA CMAC): only the
//               first load, and the part of a load longer than the previous stream, is exposed
enum class WeightPreload : std::uint8_t { Exposed, Overlapped };
std::string_view to_string(WeightPreload preload);  // "exposed", "overlapped"

struct SystolicArraySpec {
  std::uint32_t rows = 0;
  std::uint32_t cols = 0;
  Dataflow dataflow = Dataflow::OutputStationary;
  Accumulation accumulation = Accumulation::ColumnFold;
  WeightPreload weight_preload = WeightPreload::Exposed;
  friend bool operator==(const SystolicArraySpec&, const SystolicArraySpec&) = default;
};

// The instruction families that feed a GPU's tensor cores. Kernels of the two kinds reach
// different shares of the same peak: Ampere's warp-level mma.sync takes its operands from
// registers, which warps load from shared memory; Hopper's warpgroup wgmma reads them from shared
// memory asynchronously (with TMA loads and warp specialisation), so more of the peak is issued.
enum class TensorPath : std::uint8_t { MmaSync, Wgmma };
std::string_view to_string(TensorPath path);  // "mma_sync", "wgmma"

// Fused attention by implementation class (docs/cost_models.md, "Fused attention"):
//   fa2  FlashAttention-2 and kernels of its kind: mma.sync GEMMs, the online softmax of a block
//        runs between its two GEMMs (no overlap of the matrix and the softmax work)
//   fa3     FlashAttention-3: wgmma GEMMs, two warpgroups ping-pong so one's softmax runs under
//           the other's GEMMs (the matrix and the softmax work overlap)
//   triton  FlashAttention in Triton as of 2023 (triton.ops.flash_attention, flash_attn_triton.py
//           and its descendants such as MPT's): fa2's model at the arch's
//           calibration.attention_triton share of fa2's matrix rate
enum class AttentionImpl : std::uint8_t { Fa2, Fa3, Triton };
std::string_view to_string(AttentionImpl impl);  // "fa2", "fa3", "triton"
std::optional<AttentionImpl> parse_attention_impl(std::string_view text);

// Decode attention (one query token per sequence over its KV cache) by how a kernel walks the
// heads of a GQA group (docs/cost_models.md, "Decode attention"):
//   grouped   one pass over a KV head serves every query head of its group (FlashAttention's
//             and FlashInfer's decode paths, TensorRT-LLM's XQA): K and V are read once
//   per_head  one thread block per query head, each reading its group's KV head again, dot
//             products on the CUDA cores (TensorRT-LLM's masked multi-head attention, MMHA,
//             before its GQA optimisation in v0.7.1): K and V are loaded group times, the
//             re-reads partly from L2 (calibration.decode_kv_reread)
//   fa2_forward  FlashAttention-2's prefill (forward) kernel called with the decode's one query
//             (PyTorch's scaled_dot_product_attention on its flash backend, as eager PyTorch and
//             Hugging Face transformers' sdpa attention run decode): one thread block per
//             (sequence, query head) whose query tile is padded to the kernel's 128 rows (64
//             under split-KV), so the tensor cores do that many rows' work; a GQA group's KV
//             head is loaded once per query head, as per_head
enum class DecodeAttention : std::uint8_t { Grouped, PerHead, Fa2Forward };
std::string_view to_string(DecodeAttention impl);  // "grouped", "per_head", "fa2_forward"
std::optional<DecodeAttention> parse_decode_attention(std::string_view text);

// The LayerNorm and RMSNorm kernels the software runs (docs/cost_models.md, "Norm kernels"):
//   fused  a kernel that keeps each row on chip between its statistics and its normalising pass
//          (Triton's and Liger's, QuACK, Apex, Transformer Engine, cuDNN): the input is read
//          once while a row fits a core's on-chip memory
//   torch  PyTorch's native CUDA kernel (aten layer_norm_kernel.cu, vectorized_layer_norm_kernel;
//          F.rms_norm the same kernel in PyTorch 2.11): blocks of 128 threads, one row each, read
//          the row for its statistics and again to normalise it; the second read stays on chip
//          only while the rows resident on a core (its warps / 4 blocks) fit its on-chip memory
enum class NormImpl : std::uint8_t { Fused, Torch };
std::string_view to_string(NormImpl impl);  // "fused", "torch"

// Which ops run fused, so the tensors between them stay on chip (mapper/fusion.h, docs/fusion.md):
//   none      every op on its own: every tensor goes through DRAM
//   eager     what PyTorch runs eagerly: attention groups (scaled_dot_product_attention's fused
//             kernels) and a contraction with its bias add (F.linear's and addmm's cuBLASLt bias
//             epilogue); every other op on its own
//   epilogue  epilogue, conv_bn_relu and attention groups (what GPU libraries do)
//   all       also elementwise chains, and activation residency (mapper/residency.h)
// The schedule's choice (mapper::FusionMode); an arch's calibration may state the one its vendor's
// compiler applies to whole models.
enum class FusionMode : std::uint8_t { None, Eager, Epilogue, All };
std::string_view to_string(FusionMode mode);  // "none", "eager", "epilogue", "all"
std::optional<FusionMode> parse_fusion_mode(std::string_view text);

// What a kernel is, for its fixed cost (launch, ramp-up and tail).
enum class KernelKind : std::uint8_t { Gemm, Attention, Vector, Copy, Collective };
std::string_view to_string(KernelKind kind);  // "gemm", "attention", "vector", "copy", "collective"

// What a GPU SM offers the thread blocks of a GEMM kernel; occupancy comes from these and the
// shared memory of the core-level memory that holds inputs.
struct TensorCoreSpec {
  std::uint32_t mma_m = 16, mma_n = 8, mma_k = 16;  // the MMA instruction shape
  std::uint32_t max_warps_per_core = 64;
  std::uint32_t max_blocks_per_core = 32;
  std::uint32_t registers_per_core = 65536;  // 32-bit registers in the register file
  // The time from a warp's global load to its data when the load misses L1 and L2 (a pointer
  // chase's "main memory" latency); nullopt: not stated. Only kernels that wait on one load
  // after another feel it (validation's decode kernel); the bandwidth models do not use it.
  std::optional<Latency> global_load_latency;
  // The instruction families the SM has (YAML `instruction_paths`); Ampere: mma_sync only.
  std::vector<TensorPath> paths{TensorPath::MmaSync};
  friend bool operator==(const TensorCoreSpec&, const TensorCoreSpec&) = default;
};

struct ComputeUnitSpec {
  std::string name;  // "mxu", "tensor_core", "vector"
  UnitKind kind = UnitKind::Systolic;
  std::uint32_t count = 1;  // instances per core
  // Systolic: MACs per PE per cycle by precision (1 for the native one, 2 for int4 on an
  // int8 array that packs two); the unit's rate is rows * cols times that.
  // TensorCore: dense MACs per cycle per instance. Vector: element operations per cycle.
  RateTable rates;
  std::optional<SystolicArraySpec> array;       // kind == Systolic
  std::optional<TensorCoreSpec> tensor_core;    // kind == TensorCore
  double special_ops_per_cycle = 0;             // Vector: exp, rsqrt, ... per cycle (SFU)
  // Vector: takes the matrix unit's outputs as they stream out (NVDLA's fused mode: the
  // accumulator feeds the SDP through FIFOs), so a fused epilogue runs under the contraction
  // instead of after it (YAML `pipelined_epilogue`, default false).
  bool pipelined_epilogue = false;
  friend bool operator==(const ComputeUnitSpec&, const ComputeUnitSpec&) = default;
};

// The tensor roles a memory level may hold, as a bit set.
enum class Holds : std::uint8_t { Inputs = 1, Weights = 2, Outputs = 4, All = 7 };
constexpr std::uint8_t bits(Holds h) { return static_cast<std::uint8_t>(h); }
std::string holds_to_string(std::uint8_t holds);  // "inputs, weights"

enum class Scope : std::uint8_t { Core, Chip };  // one per core, or shared by the chip's cores
std::string_view to_string(Scope scope);

struct MemoryLevelSpec {
  std::string name;  // "smem", "l2", "ifmap_sram"
  Scope scope = Scope::Core;
  std::uint32_t instances = 1;  // per scope (per core, or per chip)
  Bytes capacity;               // per instance
  std::optional<Bandwidth> read_bandwidth;   // per instance; nullopt: not a limit
  std::optional<Bandwidth> write_bandwidth;  // per instance; nullopt: same as read
  std::optional<Latency> latency;
  std::uint32_t banks = 1;
  std::uint32_t ports = 1;
  std::uint8_t holds = bits(Holds::All);
  // Half of the level holds the tile being computed on while the other half is filled or
  // drained, so loads overlap compute.
  bool double_buffered = true;
  // Steady-state repeated inference: the weights that fit in this level stay there across runs
  // and cost no DRAM traffic (the Edge TPU's "parameter data caching"); the rest stream every run.
  // mapper/residency.h assigns them; docs/arch.md and docs/fusion.md ("Residency") state the rule.
  bool caches_weights = false;
  friend bool operator==(const MemoryLevelSpec&, const MemoryLevelSpec&) = default;
};

enum class DramTechnology : std::uint8_t {
  Unspecified, Ddr3, Ddr4, Ddr5, Lpddr4, Lpddr4x, Lpddr5, Lpddr5x, Gddr6, Hbm2, Hbm2e, Hbm3, Hbm3e
};
std::string_view to_string(DramTechnology technology);

// What a bank/row-buffer timing model needs (later); read and kept, not used by the closed form.
struct DramTiming {
  std::uint32_t banks_per_channel = 0;
  Bytes row_buffer;
  std::optional<Seconds> t_rcd, t_rp, t_cl;
  friend bool operator==(const DramTiming&, const DramTiming&) = default;
};

// Which model times a systolic op's DRAM traffic (docs/systolic_model.md).
//   Coda      coda's own closed form: one shared channel, folds double-buffered (the default).
//   ScaleSim  SCALE-Sim v2's USER (bandwidth-limited) mode: a read port per input operand and a
//             write port for the output, each of dram.bandwidth, with SCALE-Sim's set prefetch
//             and half drains; schema-1 arrays (three double-buffered SRAMs) only.
enum class DramModel : std::uint8_t { Coda, ScaleSim };
std::string_view to_string(DramModel model);

struct DramSpec {
  DramModel model = DramModel::Coda;
  DramTechnology technology = DramTechnology::Unspecified;
  std::optional<Bytes> capacity;
  std::optional<Bandwidth> bandwidth;  // whole chip; nullopt: unlimited (stall-free compute)
  std::uint32_t channels = 1;
  std::optional<Latency> latency;
  std::optional<DramTiming> timing;
  friend bool operator==(const DramSpec&, const DramSpec&) = default;
};

// The network joining a chip's cores: one link's bandwidth and the average hop count a transfer
// crosses.
struct NocSpec {
  Bandwidth bandwidth = BytesPerCycle{0};
  double average_hops = 1;
  std::optional<Latency> hop_latency;
  friend bool operator==(const NocSpec&, const NocSpec&) = default;
};

enum class Topology : std::uint8_t { Ring, FullyConnected, Torus2d, Torus3d, Switch };
std::string_view to_string(Topology topology);

// Chips joined by links (NVLink, ICI). `bandwidth` is one chip's injection bandwidth in one
// direction, over all its links together.
// NCCL's tuner model of one (algorithm, protocol) pair (docs/cost_models.md, "Collectives"): a
// collective costs base + steps x hop, and moves data at `bandwidth` x the Simple ring's bus
// bandwidth (interconnect.bandwidth x link_fraction), at most `max`.
enum class NcclAlgorithm : std::uint8_t { Ring, Tree, Nvls };
enum class NcclProtocol : std::uint8_t { Ll, Ll128, Simple };
struct NcclProtocolSpec {
  Seconds base;
  Seconds hop;
  double bandwidth = 1.0;             // share of the Simple ring's bus bandwidth, (0, 1]
  std::optional<BytesPerSecond> max;  // NCCL's cap on the protocol's bus bandwidth
  // NCCL's treeCorrectionFactor: the tree all-reduce's bandwidth x size_correction[floor(log2(
  // S / 64))] for S from 64 B to 512 MiB (indexes 0..22); empty: x 1.
  std::vector<double> size_correction;
  // NVLS only: NCCL loops over the buffer (enqueue.cc calcCollChunking), `channels` NVLS channels
  // each reducing one chunk per rank a loop, the chunk 16-128 KiB by the buffer's size; `loop` is
  // the time each loop adds beyond its bytes (all-reduce; 0 with no channels stated).
  std::uint32_t channels = 0;
  Seconds loop;
  friend bool operator==(const NcclProtocolSpec&, const NcclProtocolSpec&) = default;
};
// The pairs NCCL may pick on this interconnect; an absent pair is never picked.
using NcclSpec = std::map<NcclAlgorithm, std::map<NcclProtocol, NcclProtocolSpec>>;

struct InterconnectSpec {
  std::uint32_t chips = 1;
  Topology topology = Topology::Ring;
  BytesPerSecond bandwidth;
  Seconds latency;  // per message, per hop
  std::uint32_t links_per_chip = 1;
  // `nccl:` in the YAML: collectives priced as NCCL's tuner prices them; absent: the plain
  // alpha-beta model on `latency`.
  std::optional<NcclSpec> nccl;
  friend bool operator==(const InterconnectSpec&, const InterconnectSpec&) = default;
};

// The chip's link to its host's memory (PCIe on a GPU board): what one copy between device and
// host memory pays. coda serve's swap preemption moves KV-cache blocks over it
// (docs/serving.md, "Preemption by swapping").
struct HostLinkSpec {
  BytesPerSecond bandwidth;  // per direction
  Seconds copy_overhead;     // per copy issued (a cudaMemcpyAsync): the host's submission cost
  friend bool operator==(const HostLinkSpec&, const HostLinkSpec&) = default;
};

// Energy figures a user states; anything absent is derived from the technology node by the
// scaling rule in arch/energy.h.
struct EnergySpec {
  std::optional<double> technology_nm;
  std::map<DataType, Joules> mac;           // per MAC, by precision
  std::optional<Joules> vector_op;          // per vector element operation
  std::map<std::string, Joules> per_byte;   // per byte accessed, by memory level name or "dram"
  std::optional<Watts> static_power;
  // DRAM background power, added to static power (docs/energy.md, "DRAM background power"):
  // active standby of the channels in use, as power per byte/s of dram.bandwidth (so W = this x
  // bandwidth), and power-down standby per GB (1e9 bytes) of dram.capacity.
  std::optional<Joules> dram_standby_per_bandwidth;
  std::optional<Watts> dram_idle_per_gb;
  friend bool operator==(const EnergySpec&, const EnergySpec&) = default;
};

struct AreaSpec {
  std::optional<SquareMillimetres> die;     // the published die area, when known
  std::optional<SquareMillimetres> per_mac; // override of the derived figures
  std::optional<SquareMillimetres> per_kib_sram;
  friend bool operator==(const AreaSpec&, const AreaSpec&) = default;
};

struct PowerSpec {
  std::optional<Watts> budget;  // TDP or the power mode's budget: a sweep constraint
  std::string mode;             // "MAXN", "15W", ...
  friend bool operator==(const PowerSpec&, const PowerSpec&) = default;
};

// What real kernels achieve of the datasheet: the efficiencies and fixed costs of the arch's
// `calibration:` section (docs/arch.md, "Calibration"), each a named parameter that a preset
// states with its source beside it, or that `coda validate --calibrate-on` fits to measurements
// (docs/validation.md). HardwareModel derives the achievable rates from them once, and every
// engine (the closed forms, the loop-nest model, the SystemC engine) reads those. Anything absent
// keeps the default given beside it, so an arch without `calibration:` prices at its peaks.
struct CalibrationSpec {
  // The fixed cost of every kernel on a GPU (launch, ramp-up and tail) whose kind has none in
  // `fixed_cost`. Default: 4 us on archs with tensor cores (sim/analytical/gpu_model.h), else 0.
  std::optional<Seconds> launch_overhead;
  // Per kind of kernel; replaces launch_overhead for that kind. On any arch. This is a kernel
  // timed on its own (a microbenchmark), its launch exposed.
  std::map<KernelKind, Seconds> fixed_cost;
  // A kernel's fixed cost inside a whole model (a run: kernels launched back to back, ahead of
  // the GPU, or from a CUDA graph), where its launch hides under the previous kernel and the
  // ramp-up, tail and inter-kernel gap remain; every kind. Default: fixed_cost.
  std::optional<Seconds> in_model_fixed_cost;
  // GEMM and attention kernels on tensor cores: the work of a thread block's prologue and
  // epilogue (pipeline fill, the output tile's write-back, attention's final normalisation), in
  // main-loop steps of the block (a GEMM's tile_k slice of K, an attention block's key block):
  // a block of n steps costs n + tile_overhead. Default 0.
  std::map<KernelKind, double> tile_overhead;
  // The share of a unit's peak rate at a precision that kernels reach, in (0, 1]: the matrix
  // unit's MACs and the vector unit's element operations at that precision are scaled by it.
  // Default 1.
  std::map<DataType, double> compute_fraction;
  // Tensor cores only: the share of the per-clock peak each instruction path issues, by
  // precision, in (0, 1]; multiplies compute_fraction. A precision a path does not list: 1.
  std::map<TensorPath, std::map<DataType, double>> tensor_issue;
  // Tensor cores only: the SM clock while the tensor cores are busy (power- and
  // thermally-limited), at most `clock`; the tensor rate scales by sustained_clock / clock.
  // Default: clock.
  std::optional<Hertz> sustained_clock;
  // Tensor cores only: the SM clock while the tensor cores are busy in an LLM training step (a
  // loop of multi-second steps, long enough for the board's power limit to hold the clock down,
  // where kernels timed on their own run for milliseconds), at most `clock`. It replaces
  // sustained_clock in the steps `coda train` and the corpus's llm_train rows price
  // (training_step_view). Default: sustained_clock.
  std::optional<Hertz> training_clock;
  // Tensor cores only: how many m-tiles a GEMM's thread blocks walk before stepping to the next
  // n-tile (grouped rasterization, as Triton's GROUP_SIZE_M, CUTLASS's threadblock swizzle and
  // DeepGEMM's scheduler do), so a wave's blocks share A and B panels in L2. Default: none (the
  // identity order, m-tile fastest over the whole grid).
  std::optional<std::uint32_t> raster_group;
  // Tensor cores with wgmma only: thread-block clusters of this many blocks, adjacent along M or
  // N, that fetch the operand panel they share from L2 once and multicast it into every block's
  // shared memory (Hopper's TMA multicast, as CUTLASS's and cuBLAS's sm90 GEMMs run in 2-block
  // clusters). Divides that operand's L2 -> SM traffic on the wgmma path. Default: 1 (none).
  std::optional<std::uint32_t> cluster_multicast;
  // Tensor cores with wgmma only (thread-block clusters, compute capability 9.0): the SMs a row
  // kernel (softmax, LayerNorm, RMSNorm of the fused class) spreads one row over, holding it in the
  // cluster's distributed shared memory, so a row is read once while it fits that many SMs' on-chip
  // memory (QuACK's kernels: cluster_n up to 16). 1 to 16. Default: 1 (a row in one SM).
  std::optional<std::uint32_t> row_cluster;
  // The instruction path library GEMMs use; default: wgmma when the tensor cores have it, else
  // mma_sync.
  std::optional<TensorPath> gemm_path;
  // The fused-attention implementation; default: fa3 when the tensor cores have wgmma, else fa2.
  std::optional<AttentionImpl> attention;
  // The decode-attention class (above); default grouped.
  std::optional<DecodeAttention> decode_attention;
  // The norm kernels (above); default fused.
  std::optional<NormImpl> norm_kernel;
  // per_head decode attention: the share of a GQA group's K and V re-reads (group - 1 per KV
  // head) that reach DRAM, in [0, 1]; the rest hit L2. Default 1 (every load the kernel issues).
  std::optional<double> decode_kv_reread;
  // An LLM step's fixed cost in its runtime's generation loop, beyond its kernels: the host's
  // per-step work (sampling, stop check and the step's host-device synchronisation, the gap
  // before the next step's first kernel), paid once per prefill and once per decode step of a
  // whole-model LLM row. Default 0.
  std::optional<Seconds> llm_step_fixed_cost;
  // The host's time to issue one kernel in an eager runtime (kernels launched one by one from
  // the CPU, no CUDA graph: the framework's dispatch, the runtime's enqueue and the driver's
  // launch). A run launched eagerly starts its i-th kernel no earlier than i x this after its
  // first, so a run of short kernels is bound by the host. Default 0 (as from a CUDA graph).
  std::optional<Seconds> eager_issue_time;
  // The fusion the vendor's compiler and runtime apply to a whole model (a network or an LLM step
  // as the vendor's stack runs it): `coda run` and sweeps use it when not told otherwise, and
  // `coda validate` prices published whole-model rows with it. Default: none for a run,
  // epilogue for a published row (every vendor inference stack fuses conv + bias + activation).
  std::optional<FusionMode> fusion;
  // The share of the forward's matrix rate a fused attention backward's five GEMMs reach, in
  // (0, 1] (they run smaller tiles and accumulate dQ across blocks). Default 1.
  std::optional<double> attention_backward;
  // The triton attention class's share of the fa2 class's matrix rate, in (0, 1]. No default:
  // an arch that does not state it cannot price that class.
  std::optional<double> attention_triton;
  // The share of the datasheet tensor-core rate (at the op's precision), in (0, 1], that a GEMM
  // reaches when one of its operands' contiguous dimension is not a whole number of 16-byte
  // vectors (kGemmAlignmentBytes): cuBLAS then runs element-wise-loading kernels (CUTLASS's
  // align1 mma.sync kernels) in place of its TMA / 128-bit-load ones. No default: an arch that
  // does not state it prices such a GEMM as an aligned one.
  std::optional<double> unaligned_gemm;
  // fa3: the share of the shorter of the matrix and softmax work hidden under the longer one by
  // the ping-pong schedule, in (0, 1]. Default 1 (fully hidden). fa2 hides none.
  std::optional<double> attention_overlap;
  // The share of dram.bandwidth that kernels reach, in (0, 1]. Default 1.
  std::optional<double> dram_fraction;
  // The share of interconnect.bandwidth collectives reach, in (0, 1]. Default 1.
  std::optional<double> link_fraction;
  std::string source;  // where the values came from (free text), e.g. "fitted by coda validate"
  friend bool operator==(const CalibrationSpec&, const CalibrationSpec&) = default;
};

// The knobs' limits, shared by the reader and the fit.
inline constexpr double kMaxLaunchOverheadSeconds = 1e-3;  // 1 ms: beyond any kernel launch
inline constexpr double kMaxTileOverheadSteps = 64;        // a block's prologue + epilogue

// The access width a tensor-core GEMM's fast kernels need: 128-bit (16-byte) vector loads of
// every operand, so each operand's contiguous dimension must be a whole number of 16 bytes
// (cuBLAS documentation, section 2.1.11 "Tensor Core Usage"; CUTLASS maintainers, NVIDIA/cutlass
// issue #75: "most kernels targeting Tensor Cores require 128b aligned memory accesses").
// calibration.unaligned_gemm prices the others.
inline constexpr std::uint32_t kGemmAlignmentBytes = 16;

// A GPU kernel's fixed cost when the arch states none. Measured empty-kernel launches: 2.2 us back
// to back and 6.6 us with a synchronize after each on P100 (CSCS's ReFrame kernel_latency check,
// reference values), "approximately 5 us" on Linux (NVIDIA developer forum). 4 us sits between.
inline constexpr double kDefaultGpuLaunchSeconds = 4e-6;

struct ArchSpec {
  std::uint32_t schema_version = 2;
  std::string name;
  std::string description;
  std::string sources;  // where the real-device numbers come from (free text)
  Hertz clock;
  std::uint32_t cores = 1;
  std::vector<ComputeUnitSpec> compute;  // the units of one core
  std::vector<MemoryLevelSpec> memory;   // innermost first; DRAM is separate
  DramSpec dram;
  std::optional<NocSpec> noc;
  std::optional<InterconnectSpec> interconnect;
  std::optional<HostLinkSpec> host_link;
  EnergySpec energy;
  AreaSpec area;
  PowerSpec power;
  CalibrationSpec calibration;
  // Bytes per element of the systolic shorthand (schema 1), which has no per-op precision.
  std::optional<Bytes> word_size;
  friend bool operator==(const ArchSpec&, const ArchSpec&) = default;
};

// Reads and validates a whole arch document, either schema. Never throws; every problem is a
// Diagnostic with the file, line and YAML path.
std::optional<ArchSpec> read_arch_spec(const YamlReader& root, Diagnostics& diags);

// The `calibration:` section as YAML the reader accepts (the keys that are set, each on its own
// line, indented by `indent` spaces under a `calibration:` line), `source` quoted.
std::string calibration_yaml(const CalibrationSpec& calibration, int indent = 2);

// An arch spec with where it came from, for provenance.
struct LoadedArch {
  ArchSpec spec;
  std::string path;
  std::uint64_t content_hash = 0;  // of the merged document (extends resolved)
};

std::optional<LoadedArch> load_arch(const std::filesystem::path& file, Diagnostics& diags);

// One line naming the compute: "1 core: array 32x32 output_stationary", "132 cores, each:
// tensor_core, vector".
std::string describe_compute(const ArchSpec& spec);

// Instances of a memory level on the whole chip: per core levels count once per core.
std::uint64_t instances_on_chip(const MemoryLevelSpec& level, std::uint32_t cores);

// The innermost core-level memory that holds `role`, or null.
const MemoryLevelSpec* innermost_core_level(const ArchSpec& spec, Holds role);

// The first unit of `kind` in a spec, or null.
const ComputeUnitSpec* find_unit(const ArchSpec& spec, UnitKind kind);

// The arch as an LLM training step sees it: calibration.training_clock, when stated, as its
// sustained clock (CalibrationSpec::training_clock); otherwise `spec` unchanged.
ArchSpec training_step_view(ArchSpec spec);

}  // namespace coda::arch
