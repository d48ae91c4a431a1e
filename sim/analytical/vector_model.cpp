#include "sim/analytical/vector_model.h"

#include <algorithm>

#include "core/check.h"

namespace coda::sim::analytical {

std::string_view to_string(VectorBound bound) {
  switch (bound) {
    case VectorBound::Arithmetic: return "arithmetic";
    case VectorBound::Special: return "special";
    case VectorBound::Memory: return "memory";
  }
  return "?";
}

std::string_view to_string(VectorFunction function) {
  switch (function) {
    case VectorFunction::Copy: return "copy";
    case VectorFunction::Add: return "add";
    case VectorFunction::Mul: return "mul";
    case VectorFunction::Relu: return "relu";
    case VectorFunction::Gelu: return "gelu";
    case VectorFunction::Silu: return "silu";
    case VectorFunction::Sigmoid: return "sigmoid";
    case VectorFunction::Tanh: return "tanh";
    case VectorFunction::Exp: return "exp";
    case VectorFunction::Special: return "special";
    case VectorFunction::Softmax: return "softmax";
    case VectorFunction::LayerNorm: return "layer_norm";
    case VectorFunction::RmsNorm: return "rms_norm";
    case VectorFunction::ScaleShift: return "scale_shift";
    case VectorFunction::Quantize: return "quantize";
    case VectorFunction::Dequantize: return "dequantize";
  }
  return "?";
}

VectorCost evaluate_vector(const VectorWork& work, const VectorParams& params) {
  CODA_CHECK(params.ops_per_cycle > 0.0 && params.clock_hz > 0.0 && work.passes > 0);
  const double elements = static_cast<double>(work.elements);
  const bool has_sfu = params.special_ops_per_cycle > 0.0;
  const double ops = elements * (work.ops_per_element +
                                 (has_sfu ? 0.0 : work.special_ops_per_element *
                                                      kSpecialOpEmulationOps));

  VectorCost out;
  out.arithmetic_seconds = ops / params.ops_per_cycle / params.clock_hz;
  out.special_seconds = has_sfu ? elements * work.special_ops_per_element /
                                      params.special_ops_per_cycle / params.clock_hz
                                : 0.0;
  out.bytes = static_cast<double>(work.passes) * static_cast<double>(work.bytes_read) +
              static_cast<double>(work.bytes_written);
  out.memory_seconds = params.bytes_per_second > 0.0 ? out.bytes / params.bytes_per_second : 0.0;
  out.seconds = std::max({out.arithmetic_seconds, out.special_seconds, out.memory_seconds});
  out.cycles = out.seconds * params.clock_hz;
  if (out.memory_seconds > out.arithmetic_seconds && out.memory_seconds > out.special_seconds)
    out.bound = VectorBound::Memory;
  else if (out.special_seconds > out.arithmetic_seconds)
    out.bound = VectorBound::Special;
  else
    out.bound = VectorBound::Arithmetic;
  return out;
}

// Per-element counts. Conventions: add, subtract, multiply, compare/max and divide are 1 op
// each (FMAs are not fused in the counts; a divide is 1 op, as a reciprocal-multiply is on most
// vector units); exp/tanh/rsqrt evaluations are special ops; work done once per row (a
// reciprocal, an rsqrt of the variance) is not counted per element.
VectorOpCounts vector_function_counts(VectorFunction function) {
  switch (function) {
    case VectorFunction::Copy:
      return {.ops_per_element = 0, .special_ops_per_element = 0};
    case VectorFunction::Add:  // a + b
    case VectorFunction::Mul:  // a * b
      return {.ops_per_element = 1, .special_ops_per_element = 0, .inputs = 2};
    case VectorFunction::Relu:  // max(x, 0)
      return {.ops_per_element = 1, .special_ops_per_element = 0};
    case VectorFunction::Exp:  // exp2(x * log2 e): 1 multiply + 1 special (as GPUs do it)
      return {.ops_per_element = 1, .special_ops_per_element = 1};
    case VectorFunction::Special:  // rsqrt(x), sin(x), cos(x): one MUFU instruction each
      return {.ops_per_element = 0, .special_ops_per_element = 1};
    case VectorFunction::Sigmoid:  // 1 / (1 + exp(-x)): negate, add, divide = 3 + exp
      return {.ops_per_element = 3, .special_ops_per_element = 1};
    case VectorFunction::Tanh:  // 2 / (1 + exp(-2x)) - 1: multiply, add, divide, subtract = 4
    case VectorFunction::Silu:  // x * sigmoid(x): sigmoid's 3 + 1 multiply = 4
      return {.ops_per_element = 4, .special_ops_per_element = 1};
    case VectorFunction::Gelu:
      // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))): x*x, *x, *0.044715, +x, *sqrt(2/pi)
      // = 5; tanh = 4 + 1 special; 1 + t, * x, * 0.5 = 3. Total 12 + 1 special.
      return {.ops_per_element = 12, .special_ops_per_element = 1};
    case VectorFunction::Softmax:
      // Pass 1 reads x for the row max: 1 compare. Pass 2 reads x again: subtract the max,
      // multiply by log2 e, exp2 (special), add to the row sum, then divide by the sum = 4;
      // the row's exponentials stay on chip between the sum and the divide.
      // Total 5 ops + 1 special, 2 passes.
      return {.ops_per_element = 5, .special_ops_per_element = 1, .passes = 2};
    case VectorFunction::LayerNorm:
      // Statistics pass: sum += x, x*x, sumsq += x*x = 3 (mean and variance per row, then one
      // rsqrt per row). Normalize pass: (x - mean), * rstd, * gamma, + beta = 4. 7 ops, 2 passes.
      return {.ops_per_element = 7, .special_ops_per_element = 0, .passes = 2};
    case VectorFunction::ScaleShift:
      // Inference batch norm: the running mean and variance are folded into a per-channel scale
      // and shift when the model is loaded, so y = x * scale[c] + shift[c]: one FMA per element
      // (an FMA is one op), one pass, the per-channel vectors negligible next to x.
      return {.ops_per_element = 1, .special_ops_per_element = 0};
    case VectorFunction::RmsNorm:
      // Statistics pass: x*x, sumsq += = 2. Normalize pass: * rstd, * gamma = 2. 4 ops, 2 passes.
      return {.ops_per_element = 4, .special_ops_per_element = 0, .passes = 2};
    case VectorFunction::Quantize:
      // x * (1/scale), round, + zero point, clamp low, clamp high = 5.
      return {.ops_per_element = 5, .special_ops_per_element = 0};
    case VectorFunction::Dequantize:
      // convert to float, - zero point, * scale = 3.
      return {.ops_per_element = 3, .special_ops_per_element = 0};
  }
  return {};
}

VectorWork make_vector_work(VectorFunction function, std::uint64_t elements,
                            std::uint32_t input_bytes, std::uint32_t output_bytes) {
  const VectorOpCounts c = vector_function_counts(function);
  return {.elements = elements,
          .ops_per_element = c.ops_per_element,
          .special_ops_per_element = c.special_ops_per_element,
          .bytes_read = std::uint64_t{c.inputs} * elements * input_bytes,
          .bytes_written = elements * output_bytes,
          .passes = c.passes};
}

}  // namespace coda::sim::analytical
