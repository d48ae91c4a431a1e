#pragma once
// Predicted vs measured: each measured case (validation/measurement.h) is mapped onto coda ops,
// priced by the analytical engine on an arch, and compared; errors are summarised per class of
// kernel and per source (MAPE, worst case, Spearman rank correlation); optionally the arch's
// calibration knobs (arch/arch_spec.h CalibrationSpec) are fitted on a named subset of the cases
// and the error reported on that subset and on the held-out rest. docs/validation.md says how
// each kernel is mapped and what is approximated.
//
// Pure library code: nothing is printed (validation/validation_report.h renders the result) and
// results are deterministic for the same inputs.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "arch/arch_spec.h"
#include "arch/hardware_model.h"
#include "mapper/fusion.h"
#include "mapper/schedule.h"
#include "workloads/graph.h"
#include "validation/measurement.h"
#include "validation/published_pricing.h"

namespace coda::validation {

inline constexpr double kNoValue = std::numeric_limits<double>::quiet_NaN();

// A measurement's input type as coda's precision.
DataType data_type_of(DType dtype);

// The classes the report groups cases into; a kernel may be in two (bias_gelu_fused is memory-
// bound and one half of a fused/unfused pair).
enum class CaseClass : std::uint8_t {
  Gemm,       // compute-bound GEMM and conv
  Memory,     // memory-bound elementwise, norms, softmax, reduction, copy, L2 probe
  Attention,  // prefill and decode attention
  Fusion,     // the fused/unfused pairs: bias+GELU, attention, softmax naive/online
  Launch,     // the empty-kernel launch probe
  Collective, // all-reduce, all-gather, reduce-scatter among the chips of a node
  Llm,        // whole-model LLM inference: first-token latency, per-token latency, generation
  Training,   // whole-model LLM training: an optimizer step's time on one GPU
  Network,    // whole-network CNN inference
};
std::string_view to_string(CaseClass c);   // "gemm", "memory", "attention", "fusion", "launch"
std::string_view describe(CaseClass c);    // one line for the report
std::span<const CaseClass> all_classes();
std::vector<CaseClass> classes_of(Kernel kernel);

// What sets a predicted time.
enum class PredictedBound : std::uint8_t { Compute, Memory, Launch };
std::string_view to_string(PredictedBound bound);  // "compute", "memory", "launch"

// One priced piece of a case: an op of coda's schedule, or the kernel's fixed-tile GEMM.
struct PredictedPart {
  std::string name;
  std::string unit;  // "tensor_core", "vector", "transfer", "attention", "launch", "l2"
  double seconds = 0;
  double compute_seconds = 0;  // the unit's arithmetic alone
  double dram_bytes = 0;
  PredictedBound bound = PredictedBound::Compute;
  std::vector<std::pair<std::string, std::uint64_t>> mapping;  // tile, waves, ...
};

struct Prediction {
  double seconds = 0;
  PredictedBound bound = PredictedBound::Compute;  // of the longest part
  std::string model;  // how it was priced, and what is approximated, in one sentence
  std::vector<PredictedPart> parts;
  // Launched eagerly on an arch that states no calibration.eager_issue_time: the host's issue
  // time is left out, so the prediction is a lower bound (the model text says so too).
  bool host_unpriced = false;
};

// A graph through coda's schedule (with `fusion`) and the analytical engine: the prediction is
// the sum of its ops, each a part (by_unit: one part per unit, the ops' times summed), `what`
// says how the case was mapped. nullopt with `why` when an op cannot run or be priced.
std::optional<Prediction> price_graph(const workload::Graph& graph, mapper::FusionMode fusion,
                                      const std::string& what, const arch::HardwareModel& hw,
                                      bool by_unit, std::string& why);

inline constexpr std::string_view kEagerUnpriced =
    "; launched eagerly, but the arch states no calibration.eager_issue_time, so the host's "
    "issue time is not priced (a lower bound)";

// The same for a schedule made on an arch that differs from `hw` at most in its calibration
// (the schedule depends on the hardware's units and capacities, not on its rates). With
// `eager`, the kernels are issued by the host one by one, hw.eager_issue_seconds() apart at the
// least (sim/analytical/unit_costs.h, host_issued_seconds): the time the GPU waits on the host
// is a part of its own ("host issue", unit "host"). An arch that states no
// calibration.eager_issue_time prices an eager row without the host and says so in the model
// text (kEagerUnpriced): the prediction is then a lower bound, not a silent approximation.
std::optional<Prediction> price_schedule(const mapper::Schedule& schedule,
                                         mapper::FusionMode fusion, const std::string& what,
                                         const arch::HardwareModel& hw, bool by_unit,
                                         std::string& why, bool eager = false);

// Prices measured cases on one arch. Built once per arch (the hardware model and its CUDA-core
// view are made in the constructor); predict() is pure and thread-safe.
//
// The CUDA-core view: kernels whose arithmetic runs on the CUDA cores in fp32 (gemm_naive,
// gemm_tiled, conv2d_*, fp32 gemm_cublas without TF32, and the attention kernels, which load
// fp16 and compute in fp32) are priced on a copy of the arch whose matrix unit has the vector
// unit's fp32 rate (FMAs per SM) at every precision, and whose vector unit runs every precision
// at its fp32 rate, with calibration.compute_fraction[fp32].
class Predictor {
 public:
  explicit Predictor(const arch::ArchSpec& spec, PublishedPricing pricing = {});

  // nullopt with `why` set when coda cannot price the case on this arch (an L2 probe when the
  // arch states no L2 bandwidth, a precision no unit runs, ...). `cluster`: the cluster the row's
  // device runs on (predict_published), null: one node.
  std::optional<Prediction> predict(const Measurement& m, std::string& why,
                                    const arch::ClusterSpec* cluster = nullptr) const;

  const arch::HardwareModel& hardware() const { return hw_; }
  // Whether a kernel is a whole model (llm_*, network): priced with the arch's in-model fixed
  // costs, where every other row is a kernel timed on its own (HardwareModel's
  // standalone_fixed_seconds).
  static bool whole_model(Kernel kernel);
  // Whether a row is priced with the in-model fixed costs: a whole model, or a kernel timed back
  // to back from a CUDA graph (launch: graph), whose launch hides under the previous kernel's.
  static bool in_model(const Measurement& m);

 private:
  arch::HardwareModel hw_;          // as given: whole models
  arch::HardwareModel standalone_;  // in_model_fixed_cost cleared: kernels timed on their own
  std::optional<arch::HardwareModel> cuda_cores_;  // nullopt: no vector unit with fp32
  PublishedPricing pricing_;
};

// Error of a prediction against a measurement: (predicted - measured) / measured.
double relative_error(double predicted_s, double measured_s);

// Spearman's rank correlation of two equally long series: the Pearson correlation of their
// ranks, ties given their average rank. NaN for fewer than 2 points or a constant series.
double spearman(std::span<const double> a, std::span<const double> b);

struct ErrorStats {
  std::size_t count = 0;
  double mape = kNoValue;      // mean of |relative error|, as a fraction (0.1 = 10%)
  double spearman = kNoValue;  // of predicted vs measured times
  std::size_t worst = 0;       // index (into the given series) of the largest |error|
  double worst_error = kNoValue;  // its signed relative error
  double median = kNoValue;       // median of |relative error|
};
ErrorStats error_stats(std::span<const double> predicted_s, std::span<const double> measured_s);

// One row of the measurement file and what became of it.
struct ComparedRow {
  std::size_t row = 0;  // 1-based position among the file's data rows
  Measurement measurement;
  std::vector<CaseClass> classes;
  std::optional<Prediction> prediction;  // with the arch as given; nullopt: skipped
  std::string skipped;                   // why the row is not compared; empty when it is
  double error = kNoValue;               // relative error of `prediction`
  bool in_subset = false;                // in the calibration subset
  std::optional<Prediction> calibrated;  // with the fitted knobs (when calibrating)
  double calibrated_error = kNoValue;
};

struct GroupStats {
  std::string name;
  std::string description;
  std::vector<std::size_t> rows;  // indices into ValidationReport::rows
  ErrorStats stats;               // with the arch as given
  ErrorStats calibrated;          // with the fitted knobs (when calibrating)
};

// A fitted knob, in the units the arch YAML uses.
struct FittedKnob {
  std::string name;   // "fixed_cost.gemm", "tensor_issue.wgmma.fp16", "dram_fraction", ...
  double before = 0;  // seconds for a fixed cost, else a fraction
  double fitted = 0;
  bool at_limit = false;  // the fit asked for a value outside the knob's range and was held there
  bool seconds = false;   // a time (a fixed cost); else a fraction
};

// A row to fit on: a measurement and which of the fit's archs it is priced on.
struct FitRow {
  const Measurement* measurement = nullptr;
  std::size_t spec = 0;  // index into the specs given to fit_calibration
  // The row's cluster (Predictor::predict's); null: one node.
  const arch::ClusterSpec* cluster = nullptr;
};

struct FitResult {
  std::vector<FittedKnob> knobs;                 // those the rows' predictions depend on
  std::vector<arch::CalibrationSpec> fitted;     // per spec: its calibration with the knobs set
  std::size_t iterations = 0;                    // Gauss-Newton steps
  std::vector<std::string> notes;                // knobs held at a limit, too few rows, ...
};

// Fits the calibration knobs of specs[0] (fixed costs per kernel kind; tensor-core issue per
// instruction path and precision, or compute fractions without tensor cores; the DRAM and link
// fractions; the attention backward's share) to `rows` by least squares on their relative errors:
// damped, projected Gauss-Newton with finite-difference derivatives over the fixed costs and
// 1 / fraction (in which a bound time is linear), each held within its valid range (fixed costs
// 0 to 1 ms, fractions 0.001 to 1). Every spec shares the knobs (archs with one SM design, e.g.
// H100 and H200); each keeps its other calibration. Only knobs the rows depend on are fitted.
// Which knobs a fit may move: all; the kernels' (every knob but the whole-model ones: fitted on
// kernels timed on their own); the whole models' (in_model_fixed_cost, llm_step_fixed_cost,
// eager_issue_time, decode_kv_reread, the kernels' knobs held: fitted on whole-model rows), less
// in_model_fixed_cost with hold_in_model_fixed_cost; or GraphKernels: in_model_fixed_cost alone,
// on kernels timed back to back from a CUDA graph (which measure it directly).
enum class FitScope : std::uint8_t { All, Kernels, WholeModels, GraphKernels };
struct FitOptions {
  FitScope scope = FitScope::All;
  bool hold_in_model_fixed_cost = false;
  // A knob is fitted only when at least this many rows depend on it; the others keep their
  // value and are listed in the notes.
  std::size_t min_rows_per_knob = 1;
  // When not empty, only the knobs these name are fitted (knob_names: a name, or a prefix of
  // names up to a '.', as "tensor_issue.wgmma" for every precision of that path); every other
  // knob keeps the arch's value. For refitting the knobs a model change touches.
  std::vector<std::string> only_knobs;
};
// The names of the knobs a fit of `spec` may move ("fixed_cost.gemm", "tile_overhead.gemm",
// "tensor_issue.wgmma.fp16+bf16", "dram_fraction", ...), in the fit's order.
std::vector<std::string> knob_names(const arch::ArchSpec& spec);
// Whether `name` (a knob's) is selected by `pattern`: equal, or `pattern` then '.' begins it.
bool knob_selected(std::string_view name, std::string_view pattern);
FitResult fit_calibration(std::span<const FitRow> rows, std::span<const arch::ArchSpec> specs,
                          const PublishedPricing& pricing = {}, const FitOptions& options = {});

struct CalibrationResult {
  std::vector<std::string> subset;   // the classes and kernel names asked for
  std::vector<FittedKnob> knobs;     // those the subset's predictions depend on
  arch::CalibrationSpec fitted;      // the arch's calibration with the fitted knobs
  std::size_t iterations = 0;        // Gauss-Newton steps
  ErrorStats subset_before, subset_after;
  ErrorStats held_out_before, held_out_after;  // count 0 when every compared row is in the subset
  std::vector<std::string> notes;    // knobs held at a limit, too few rows, ...
};

struct ValidationReport {
  std::string arch_name;
  std::vector<ComparedRow> rows;
  ErrorStats overall;
  std::vector<GroupStats> by_class;   // classes with at least one row, in all_classes() order
  std::vector<GroupStats> by_source;  // in order of first appearance
  std::optional<CalibrationResult> calibration;
};

// Resolves --calibrate-on: a comma-separated list of class names and kernel names. nullopt with
// `why` (naming the closest valid name) for an unknown or empty item.
std::optional<std::vector<std::string>> parse_subset(std::string_view text, std::string& why);

// Compares every row. With a subset, fits the calibration knobs on the subset's compared rows
// (least squares on relative errors, Gauss-Newton over launch overhead, 1 / compute fraction
// and 1 / DRAM fraction, each held within its valid range) and prices every row again with them.
// nullopt with `why` when the subset selects no compared row.
std::optional<ValidationReport> compare(std::span<const Measurement> measurements,
                                        const arch::ArchSpec& spec,
                                        const std::vector<std::string>& subset, std::string& why,
                                        const PublishedPricing& pricing = {});

}  // namespace coda::validation
