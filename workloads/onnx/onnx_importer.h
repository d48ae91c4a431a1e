#pragma once
// Reads an ONNX model (a serialized onnx.ModelProto) into a workload Graph, through Debian's
// libonnx (the onnx protobuf classes and onnx::shape_inference). This header does not include
// any ONNX or protobuf header: only coda::workloads_onnx links them.
//
// What happens, in order (docs/cnn_onnx.md has the op table):
//   1. parse the file; a missing, truncated or non-ONNX file is a Diagnostic;
//   2. drop initializer data: each initializer keeps its dims and element type, and its values
//      only if it is a small integer tensor that shape inference may read (a Reshape target, a
//      Split's sizes, axes); the rest is cleared at once, so the imported graph holds no
//      weights and, past parsing, the weights are not in memory;
//   3. replace every symbolic dim (dim_param) of the graph's inputs, outputs and value_info by
//      its binding from OnnxOptions::dim_bindings; an unbound one on an input is an error
//      naming the input and the dim;
//   4. run onnx::shape_inference::InferShapes, so every tensor has a static shape;
//   5. map each node, in order, to coda ops bound to the tensors it reads and writes. Initializers
//      and Constant outputs that an op reads as data become Weight tensors (shape only); those
//      read only as shapes or axes become nothing. An unsupported op type is an error naming the
//      op type and the node, unless OnnxOptions::skip_unsupported.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/diagnostics.h"
#include "workloads/data_type.h"
#include "workloads/graph.h"

namespace coda::workload::onnx {

struct OnnxOptions {
  // Value of each symbolic dim by its name ("batch" -> 8), for inputs declared with dim_param.
  std::map<std::string, std::uint64_t, std::less<>> dim_bindings;
  // Skip nodes of unsupported op types (each listed in OnnxImport::skipped) instead of failing.
  // A skipped node's outputs exist only if the model declares their shapes (value_info or
  // graph outputs); they then have no producer, like graph inputs.
  bool skip_unsupported = false;
  // Price every floating-point tensor in this type instead of the model's (integer tensors
  // such as Gather indices keep theirs).
  std::optional<DataType> float_dtype;
  // Recognise the decompositions exporters write for RMSNorm, LayerNorm (below opset 17), GELU
  // (erf and tanh forms) and SiLU, and import each as one op (function_patterns.h), and run the
  // QDQ form's contractions in int8 (docs/cnn_onnx.md); false keeps the exported ops as they are.
  bool fuse_functions = true;
};

struct OnnxImport {
  Graph graph;
  // One entry per node skipped under skip_unsupported: "<op type> '<node name>'".
  std::vector<std::string> skipped;
  // How many of each function fuse_functions recognised, by name ("rms_norm" -> 4).
  std::map<std::string, std::size_t, std::less<>> functions;
};

// Reads `file`. Never throws on bad input and never prints: every problem is a Diagnostic
// located at the file, with a path such as "graph.node[3] 'attn/qk' (MatMul)" and a hint.
// Returns nullopt when there were errors.
std::optional<OnnxImport> import_onnx(const std::filesystem::path& file,
                                      const OnnxOptions& options, Diagnostics& diags);

// The same from the serialized bytes; `file` names them in diagnostics and becomes the graph's
// source (its stem the graph's name).
std::optional<OnnxImport> import_onnx_bytes(std::string_view bytes, const std::string& file,
                                            const OnnxOptions& options, Diagnostics& diags);

// The ONNX op types the importer maps, sorted (for the docs and for hints).
std::vector<std::string_view> supported_onnx_ops();

}  // namespace coda::workload::onnx
