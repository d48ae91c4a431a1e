#pragma once
// The decompositions exporters write for functions ONNX (at the opsets torch exports) has no op
// for, recognised on the ONNX graph so that the importer makes each one op, as the runtimes that
// run such models fuse them (docs/cnn_onnx.md, "Functions recognised at import"):
//
//   rms_norm    x * 1/sqrt(mean(x^2) + eps) * w   (LLaMA's, T5's RMSNorm: Pow or Mul, ReduceMean,
//               Add, Sqrt, then Reciprocal and Mul, or Div; Casts to fp32 and back around it)
//   layer_norm  (x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps) * w [+ b]   (LayerNorm below
//               opset 17, which has LayerNormalization)
//   gelu        x * 0.5 * (1 + erf(x / sqrt(2)))   (torch's exact GELU below opset 20), or
//               x * 0.5 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))   (its tanh form, GPT-2's
//               gelu_new), with the 0.5 on either side
//   silu        x * sigmoid(x)
//
// Each pattern's intermediate values must be read only inside it (none a graph output), its
// constants scalars of the stated values (the norms' eps any scalar), its weight and bias
// constants over the last axis, and the norms must reduce over the last axis only. Anything
// else is left as the exporter wrote it.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

namespace coda::workload::onnx {

enum class RecognisedFunction : std::uint8_t { RmsNorm, LayerNorm, Gelu, Silu };
// "rms_norm", "layer_norm", "gelu", "silu"
const char* to_string(RecognisedFunction f);

struct FunctionMatch {
  RecognisedFunction function = RecognisedFunction::Gelu;
  // The pattern's node indices, ascending; the last writes `output`.
  std::vector<std::size_t> nodes;
  std::string input;   // x, as the pattern's first node reads it (before any Cast)
  std::string weight;  // the norms' scale (a constant over the last axis)
  std::string bias;    // layer_norm's shift, or empty
  std::string output;
};

// What the matcher needs to know of the graph's values.
struct PatternValues {
  // A constant's value when it is one number (a scalar or a one-element tensor); nullopt for an
  // activation, a larger constant, or one whose values are not known.
  std::function<std::optional<double>(const std::string&)> scalar;
  // The values of a small integer constant (ReduceMean's axes input); nullopt otherwise.
  std::function<std::optional<std::vector<std::int64_t>>(const std::string&)> ints;
  // A value's static shape; nullopt when unknown.
  std::function<std::optional<std::vector<std::uint64_t>>(const std::string&)> shape;
  // Whether a name is an initializer or a Constant node's output (a node reading only constants
  // makes one too; the matcher follows that itself).
  std::function<bool(const std::string&)> is_constant;
};

// Every pattern of `graph`, in node order; no node belongs to two.
std::vector<FunctionMatch> find_function_patterns(const ::onnx::GraphProto& graph,
                                                  const PatternValues& values);

}  // namespace coda::workload::onnx
