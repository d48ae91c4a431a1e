#pragma once
// One measured case, as coda-bench writes it: one CSV row per case, in the schema documented in
// docs/validation.md. The writer and the reader live together so the schema has one definition.

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/diagnostics.h"
#include "validation/kernel_catalog.h"

namespace coda::validation {

// The device a measurement was taken on, as the CUDA runtime and driver report it.
struct DeviceInfo {
  std::string name;                // "NVIDIA H200"
  std::string compute_capability;  // "9.0"
  std::uint32_t sm_count = 0;
  std::uint32_t sm_clock_mhz = 0;   // maximum SM clock
  std::uint32_t mem_clock_mhz = 0;  // maximum memory clock
  std::uint64_t l2_bytes = 0;
  std::string driver;        // "13.0" (cudaDriverGetVersion)
  std::string cuda_runtime;  // "13.0" (cudaRuntimeGetVersion)
  std::string ecc;           // "on" / "off"
  friend bool operator==(const DeviceInfo&, const DeviceInfo&) = default;
};

// How a row's kernels were launched: from a CUDA graph (or captured and replayed), eagerly (one
// by one from the host, calibration.eager_issue_time apart at the least), or not stated. A whole
// model not stated is priced as a graph (the host never binds); a kernel row not stated is a
// kernel timed on its own, and only `graph` (back to back from a graph) may be said of it.
enum class Launch : std::uint8_t { Default, Graph, Eager };
// "", "graph", "eager"
std::string_view launch_name(Launch launch);

// Which software ran a whole-model LLM row's kernels, where it matters to their count: not
// stated (coda's own kernels: an inference engine's, or a training framework's), or Hugging
// Face transformers run eagerly (every PyTorch op of its modeling code a kernel). The LLM
// builder's workload::llm::Runtime, whose names these are; repeated here because the CSV schema
// builds on core alone (validation/published_pricing.cpp maps one onto the other).
enum class RowRuntime : std::uint8_t { Default, HfTransformers };
// "", "hf_transformers"
std::string_view runtime_name(RowRuntime runtime);

inline constexpr double kNotMeasured = std::numeric_limits<double>::quiet_NaN();

struct Measurement {
  Kernel kernel = Kernel::GemmNaive;
  DType dtype = DType::Fp32;
  Shape shape;
  // Published rows (validation/published/README.md); coda-bench leaves them empty.
  Impl impl = Impl::Default;  // the implementation class, where the kernel has them
  std::string model;          // llm_* and network rows: a coda LLM preset or CNN-zoo name
  Launch launch = Launch::Default;  // how the kernels were launched (see Launch)
  RowRuntime runtime = RowRuntime::Default;  // llm_* rows: the software (see RowRuntime)
  std::uint32_t repetitions = 0;
  std::uint32_t warmup = 0;
  double median_us = kNotMeasured;  // of the timed repetitions; NaN when the case did not run
  double min_us = kNotMeasured;
  double max_us = kNotMeasured;
  double operations = 0;  // operation_count(): TFLOP/s (TOP/s for int8) is operations / median
  double bytes = 0;       // minimum_bytes(): GB/s is bytes / median
  double max_error = kNotMeasured;  // normalised error against the CPU reference (see docs)
  double tolerance = 0;
  bool passed = false;
  // Whether the row records a correctness check at all: coda-bench always checks; a published
  // table written by hand may leave `passed` empty (checked false, passed false).
  bool checked = true;
  // int8 GEMM only: relative Frobenius error of the dequantised int8 product against the fp32
  // product, with per-tensor and with per-output-channel weight scales (outlier columns 50x).
  std::optional<double> quant_error_per_tensor;
  std::optional<double> quant_error_per_channel;
  std::uint32_t buffer_sets = 1;  // input/output sets rotated so the working set exceeds L2
  std::uint64_t working_set_bytes = 0;
  std::string tiling;
  DeviceInfo device;
  std::string date;    // ISO 8601 UTC, "2026-11-30T06:12:52Z"
  std::string software;    // library and version as a publication states them
  std::string source;      // "measured: coda-bench 0.1.0", or the publication
  std::string derivation;  // how a published median_us was obtained: "copied" or the arithmetic
  std::string note;        // why a case did not run or did not pass; empty otherwise
  int line = 0;            // the row's first line in the file it was read from; 0: not read
};

// TFLOP/s and GB/s at the median time; NaN when not applicable or not measured.
double achieved_tflops(const Measurement& m);
double achieved_gbps(const Measurement& m);

// The CSV columns, in order.
std::vector<std::string_view> measurement_columns();

// Writes the header line, or one row (CSV quoting as RFC 4180; empty cells for "not applicable").
void write_measurement_header(std::ostream& out);
void write_measurement_row(std::ostream& out, const Measurement& m);

// The columns a hand-written table must have (docs/validation.md, "Published tables"); every
// other column may be left out, and its cells may be empty.
std::vector<std::string_view> required_measurement_columns();

// Reads a measurement CSV. Every problem is a Diagnostic located at the row and column
// ("file:row:col: error: row 3, column 'median_us': ..."); nullopt when there was any error.
// Checked beyond each cell's syntax: a column named twice, a row with more or fewer cells than
// the header, a shape whose keys are not the kernel's (or are missing, zero or too large to
// model; causal not 0 or 1, kv_heads not dividing heads, fewer than 2 ranks), a dtype the
// kernel does not run, an `impl` that is not one of the kernel's, a `model` missing from an
// llm_* or network row, present on any other, or not a plain name. Absent optional keys take
// their defaults (fill_shape_defaults). Absent optional columns and empty cells of counts
// (repetitions, sm_count, clocks, ...) read as 0, "not stated"; an empty `passed` as unchecked.
std::optional<std::vector<Measurement>> read_measurements(std::string_view text,
                                                          const std::string& file,
                                                          Diagnostics& diags);
// Reads a measurement CSV file: read_measurements of its text, or "cannot read the file".
std::optional<std::vector<Measurement>> load_measurements(const std::filesystem::path& file,
                                                          Diagnostics& diags);

// The device models a device name names: its words (split at anything but letters and digits,
// lowercased) that are one to three letters then digits, optionally one more letter ("h200",
// "a100", "rk3588", "v5e", "mi300x"), less memory and form-factor words (sxm5, hbm3, pcie4, ddr5,
// lpddr5, gddr6, nvlink4).
std::vector<std::string> device_model_words(std::string_view device);

// Warns, once per distinct `device` value, when the rows' device names a model (device_model_words)
// and none of those words is a word of the arch's name or description: a table of one device
// priced on another's preset ("H200 rows on google-tpu-v4"). Rows whose device names no model
// (empty, "A100 node") are not judged. Located at the file and the first such row.
void warn_device_mismatch(const std::vector<Measurement>& rows, std::string_view arch_name,
                          std::string_view arch_description, const std::string& file,
                          Diagnostics& diags);

}  // namespace coda::validation
