#pragma once
// A closed-form model of elementwise and row-wise ops (activations, norms, softmax, quantize) on
// a vector or SIMT unit: three resources run in parallel and the slowest sets the time.
// docs/cost_models.md derives it; in short:
//
//   arithmetic = elements x ops_per_element / (ops_per_cycle x clock_hz)
//   special    = elements x special_ops_per_element / (special_ops_per_cycle x clock_hz)
//   memory     = (passes x bytes_read + bytes_written) / bytes_per_second
//   time       = max(arithmetic, special, memory)
//
// Without a special-function unit (special_ops_per_cycle = 0) each special op runs on the
// lanes as kSpecialOpEmulationOps ordinary ops and counts toward the arithmetic time.
// vector_function_counts() gives the per-element counts of common functions, each stated
// next to it in vector_model.cpp.

#include <cstdint>
#include <string_view>

namespace coda::sim::analytical {

struct VectorParams {
  double ops_per_cycle = 0.0;          // lanes x ops per lane per cycle at the op's precision,
                                       // summed over the chip's cores
  double special_ops_per_cycle = 0.0;  // exp/rsqrt/tanh unit throughput, summed; 0 = none
  double clock_hz = 0.0;
  double bytes_per_second = 0.0;       // the memory that feeds the unit; 0 = unlimited
};

struct VectorWork {
  std::uint64_t elements = 0;
  double ops_per_element = 0.0;          // all passes together
  double special_ops_per_element = 0.0;
  std::uint64_t bytes_read = 0;          // one pass over the inputs
  std::uint64_t bytes_written = 0;
  std::uint32_t passes = 1;              // times the inputs are read (softmax, norms: 2)
  friend bool operator==(const VectorWork&, const VectorWork&) = default;
};

// Ordinary ops one special op costs when there is no special-function unit: exp(x) as
// 2^(x log2 e) is 1 multiply, 2 to split integer and fraction (floor, subtract), a degree-5
// polynomial by Horner (5 FMAs) and 1 integer add into the exponent = 9, rounded up to 10.
inline constexpr double kSpecialOpEmulationOps = 10.0;

enum class VectorBound : std::uint8_t { Arithmetic, Special, Memory };
std::string_view to_string(VectorBound bound);

struct VectorCost {
  double seconds = 0.0;
  double cycles = 0.0;               // seconds x clock_hz
  double arithmetic_seconds = 0.0;
  double special_seconds = 0.0;
  double memory_seconds = 0.0;
  double bytes = 0.0;                // passes x bytes_read + bytes_written
  VectorBound bound = VectorBound::Arithmetic;  // ties: arithmetic, then special, then memory
  friend bool operator==(const VectorCost&, const VectorCost&) = default;
};

// Pure, thread-safe, O(1). Preconditions (CODA_CHECK): ops_per_cycle > 0, clock_hz > 0,
// passes > 0.
VectorCost evaluate_vector(const VectorWork& work, const VectorParams& params);

// The functions the lead maps workload ops onto (sim/analytical does not include workloads/).
enum class VectorFunction : std::uint8_t {
  Copy,        // data movement only: transpose, concat, cast between equal sizes
  Add,
  Mul,
  Relu,
  Gelu,        // tanh approximation
  Silu,
  Sigmoid,
  Tanh,
  Exp,
  Special,     // one special-function evaluation, nothing else: rsqrt, sin, cos
  Softmax,     // over the last dim
  LayerNorm,
  RmsNorm,
  ScaleShift,  // inference batch norm: x * scale[c] + shift[c], the statistics precomputed
  Quantize,    // float -> int with scale and zero point
  Dequantize,  // int -> float
};
std::string_view to_string(VectorFunction function);

struct VectorOpCounts {
  double ops_per_element = 0.0;
  double special_ops_per_element = 0.0;
  std::uint32_t passes = 1;  // reads of the input
  std::uint32_t inputs = 1;  // tensors of `elements` elements read per pass
};

VectorOpCounts vector_function_counts(VectorFunction function);

// The work of `function` over `elements` outputs: inputs x elements x input_bytes read per pass,
// elements x output_bytes written. Per-row scalars (gamma, beta, scales) are not counted.
VectorWork make_vector_work(VectorFunction function, std::uint64_t elements,
                            std::uint32_t input_bytes, std::uint32_t output_bytes);

}  // namespace coda::sim::analytical
