#pragma once
// Folding the shape arithmetic exporters write (torch.onnx.export of attention, of a flatten):
// Shape of a tensor whose shape is static, and the small integer (and scalar float) ops on such
// values (Gather, Add, Div, Concat, Unsqueeze, Cast, Sqrt, ...), evaluated here and written back
// as constants, so that ONNX shape inference can then derive the shapes of the Slice, Reshape
// and Expand nodes they feed. onnx-simplifier does the same in Python; ONNX's own data
// propagation folds only some of these ops (not Div, not Cast to float), which left the rest of
// an exported transformer without shapes.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include <onnx/onnx_pb.h>

namespace coda::workload::onnx {

// Values of at most this many elements are folded (shape vectors and scalars are a handful).
inline constexpr std::size_t kMaxFoldedElements = 1024;

// Folds every node of `graph` whose inputs are all known: the static shapes come from the
// graph's inputs, value_info, outputs and initializers (run shape inference first); integer and
// float constants of at most kMaxFoldedElements elements are known by their values. A folded
// node is removed and its outputs become initializers. Returns the number of nodes folded (0:
// nothing changed). Nodes of other domains, and ops not listed in shape_folding.cpp, are kept.
std::size_t fold_shape_arithmetic(::onnx::GraphProto& graph);

// Completes the output shape of each Einsum (explicit form, "i,j->ij") whose inputs have static
// shapes and whose output has none: ONNX's shape inference gives an Einsum's output only its
// rank (a rotary embedding's outer product of positions and frequencies). Returns the number of
// shapes written into value_info (0: nothing changed); run shape inference again after it.
std::size_t complete_einsum_shapes(::onnx::GraphProto& graph);

// The attribute of `node` named `name`, or null.
const ::onnx::AttributeProto* find_attribute(const ::onnx::NodeProto& node, std::string_view name);

// The value of a one-element integer or float (FLOAT, DOUBLE) tensor whose values are stored;
// nullopt otherwise.
std::optional<double> scalar_value(const ::onnx::TensorProto& t);

// The values of an INT64 or INT32 tensor (raw_data or the typed field); empty for other types.
std::vector<std::int64_t> integer_values(const ::onnx::TensorProto& t);

}  // namespace coda::workload::onnx
