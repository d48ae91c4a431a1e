#include "workloads/onnx/onnx_importer.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <exception>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <string_view>
#include <utility>

#include <fmt/format.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include "workloads/builders.h"
#include "workloads/onnx/contrib_ops.h"
#include "workloads/onnx/function_patterns.h"
#include "workloads/onnx/shape_folding.h"

namespace coda::workload::onnx {
namespace {

// A tensor's static shape and coda element type, as known after shape inference.
struct ValueInfo {
  std::vector<std::uint64_t> shape;
  DataType dtype = DataType::Fp32;
};

// Integer tensors up to this many elements keep their values: shape inference reads them
// (Reshape targets, Split sizes, axes), and so does the importer (ReduceMean axes).
constexpr std::int64_t kKeptIntegerElements = 1024;

bool is_integer(std::int32_t elem_type) {
  using T = ::onnx::TensorProto;
  return elem_type == T::INT64 || elem_type == T::INT32;
}

// The elements a tensor proto's dims imply; -1 for a negative dim or a count beyond int64.
std::int64_t proto_elements(const ::onnx::TensorProto& t) {
  std::int64_t n = 1;
  for (const std::int64_t d : t.dims()) {
    if (d < 0 || (d > 0 && n > std::numeric_limits<std::int64_t>::max() / d)) return -1;
    n *= d;
  }
  return n;
}

bool keeps_values(const ::onnx::TensorProto& t) {
  const std::int64_t n = proto_elements(t);
  return is_integer(t.data_type()) && n >= 0 && n <= kKeptIntegerElements;
}

// Float scalars keep their values too: exporters compute attention's scale from shapes with
// them (shape_folding.h folds that), and a scalar costs nothing to keep.
bool keeps_float_scalar(const ::onnx::TensorProto& t) {
  return (t.data_type() == ::onnx::TensorProto::FLOAT ||
          t.data_type() == ::onnx::TensorProto::DOUBLE) &&
         proto_elements(t) == 1;
}

// Why a kept integer tensor's stored values disagree with its dims (libonnx's data propagation
// copies them without checking, and crashes on a short raw_data), or empty when they agree.
std::string kept_data_problem(const ::onnx::TensorProto& t) {
  const std::int64_t n = proto_elements(t);
  const bool is64 = t.data_type() == ::onnx::TensorProto::INT64;
  const std::int64_t width = is64 ? 8 : 4;
  const std::string shape = t.dims_size() == 0
                                ? std::string("a scalar")
                                : fmt::format("dims {}", fmt::join(t.dims(), "x"));
  if (t.has_raw_data()) {
    const auto bytes = static_cast<std::int64_t>(t.raw_data().size());
    if (bytes == n * width) return {};
    return fmt::format("raw_data holds {} bytes, but {} of {}-byte elements needs {}", bytes,
                       shape, width, n * width);
  }
  const std::int64_t stored = is64 ? t.int64_data_size() : t.int32_data_size();
  if (stored == n) return {};
  return fmt::format("it stores {} values, but {} needs {}", stored, shape, n);
}

// Drops the values of a tensor proto unless they may be needed as a shape.
void drop_data(::onnx::TensorProto& t) {
  if (keeps_values(t) || keeps_float_scalar(t)) return;
  t.clear_raw_data();
  t.clear_float_data();
  t.clear_double_data();
  t.clear_int32_data();
  t.clear_int64_data();
  t.clear_uint64_data();
  t.clear_string_data();
}

IndexExpr dim_index(std::size_t dim) { return IndexExpr{{IndexTerm{dim, 1}}, 0}; }

std::vector<std::size_t> range(std::size_t begin, std::size_t end) {
  std::vector<std::size_t> axes;
  for (std::size_t i = begin; i < end; ++i) axes.push_back(i);
  return axes;
}

class Importer {
 public:
  Importer(std::string file, const OnnxOptions& options, Diagnostics& diags)
      : file_(std::move(file)), options_(options), diags_(diags) {}

  std::optional<OnnxImport> run(::onnx::ModelProto& model);

 private:
  // Steps, in order.
  void strip_data(::onnx::GraphProto& g);
  void bind_dims(::onnx::GraphProto& g);
  void verify_nodes(const ::onnx::GraphProto& g);
  void guard_conv_pool_nodes(::onnx::GraphProto& g);
  void infer_shapes(::onnx::ModelProto& model);
  void collect_values(const ::onnx::GraphProto& g);
  void add_graph_inputs(const ::onnx::GraphProto& g);
  void import_node(const ::onnx::NodeProto& node, std::size_t index);

  // Node handlers; each reports its own errors.
  void unary(const ::onnx::NodeProto& node, Function f);
  void binary(const ::onnx::NodeProto& node, Function f);
  void matmul(const ::onnx::NodeProto& node);
  void matmul_nbits(const ::onnx::NodeProto& node);
  std::optional<TensorId> weight_view(const ::onnx::NodeProto& node, int i,
                                      std::vector<std::uint64_t> shape, DataType dtype);
  void gemm(const ::onnx::NodeProto& node);
  void conv(const ::onnx::NodeProto& node);
  void batch_norm(const ::onnx::NodeProto& node);
  void layer_norm(const ::onnx::NodeProto& node);
  void softmax(const ::onnx::NodeProto& node);
  void pool(const ::onnx::NodeProto& node, Function f);
  void reduce(const ::onnx::NodeProto& node, Function f, bool global);
  void data_movement(const ::onnx::NodeProto& node, Function f, std::size_t data_inputs);
  void constant(const ::onnx::NodeProto& node);
  void convert(const ::onnx::NodeProto& node, Function f);
  // The function patterns to import as one op each (function_patterns.h), when their types and
  // shapes allow it; fills functions_ and function_of_.
  void plan_functions(const ::onnx::GraphProto& g);
  void function(const FunctionMatch& m);
  // The QDQ form of quantized models (fuse_functions): a MatMul, Gemm or Conv whose two operands
  // are each a DequantizeLinear of an int8 tensor is an int8 contraction; those
  // DequantizeLinears, read only by such contractions, are not imported.
  void plan_qdq(const ::onnx::GraphProto& g);
  // Operand `i` of a contraction: the int8 tensor behind an absorbed DequantizeLinear, else the
  // input itself.
  std::optional<TensorId> operand(const ::onnx::NodeProto& node, int i);
  // A QDQ contraction's result is in its DequantizeLinears' type (the epilogue applies the
  // scales): its output accesses take the node's inferred output type.
  void quantized_result(const ::onnx::NodeProto& node, Op& op);
  void where(const ::onnx::NodeProto& node);

  // Helpers.
  void error(std::string message, std::string hint = {}) {
    diags_.error({file_, 0, 0}, path_, std::move(message), std::move(hint));
  }
  std::optional<DataType> data_type(std::int32_t elem_type, const std::string& tensor);
  std::string op_name(const ::onnx::NodeProto& node) const;
  // The graph tensor for input `i` of `node`, made now if it is a constant read as data.
  std::optional<TensorId> input(const ::onnx::NodeProto& node, int i);
  // The same by the value's name.
  std::optional<TensorId> named_input(const std::string& name);
  // The inferred static shape and type of a named value.
  const ValueInfo* value(const std::string& name);
  bool is_constant(const std::string& name) const {
    return constants_.count(name) > 0 || derived_constants_.count(name) > 0;
  }
  TensorRole role_of(const std::string& name) const {
    return is_constant(name) ? TensorRole::Weight : TensorRole::Input;
  }
  // Binds `op` to `inputs` (its non-output accesses, in order) and to new tensors named
  // `outputs` (its output accesses, in order; each checked against its inferred shape).
  bool add(Op op, const std::vector<TensorId>& inputs, const std::vector<std::string>& outputs);
  // out = in + bias broadcast along `axes` of the output (conv and Gemm biases).
  void add_bias(const ::onnx::NodeProto& node, const std::string& in, int bias_input,
                const std::string& out);
  // Adds `op` writing the node's output, or, when the node has a bias at `bias_input`, writing
  // "<output><suffix>" with the bias added after it; whether `op` was added.
  bool add_with_bias(const ::onnx::NodeProto& node, Op op, const std::vector<TensorId>& inputs,
                     int bias_input, std::string_view suffix);
  std::optional<TensorAccess> broadcast_access(TensorRole role, std::string name,
                                               const std::vector<std::uint64_t>& shape,
                                               const std::vector<std::uint64_t>& out,
                                               DataType dtype);
  std::optional<std::size_t> axis(std::int64_t value, std::size_t rank, std::string_view what);

  std::string file_;
  const OnnxOptions& options_;
  Diagnostics& diags_;
  std::string path_;  // where the current problem is: "graph.node[3] 'name' (Conv)"
  std::int64_t opset_ = 0;
  OnnxImport result_;
  std::map<std::string, ValueInfo, std::less<>> values_;
  std::map<std::string, TensorId, std::less<>> tensors_;
  std::map<std::string, const ::onnx::TensorProto*, std::less<>> constants_;
  std::set<std::string, std::less<>> skipped_outputs_;
  std::set<std::string, std::less<>> failed_outputs_;  // outputs of nodes that failed
  // Outputs of nodes that read only constants (a causal mask built from ConstantOfShape, Trilu
  // and Equal too large to fold by value), and of Shape (the importer's shapes are static):
  // constants a runtime computes once, read like initializers; their shapes come from shape
  // inference. Shape arithmetic that shape_folding.h could not fold ends here too.
  std::set<std::string, std::less<>> derived_constants_;
  std::vector<FunctionMatch> functions_;
  // For each node of a recognised function, its index in functions_.
  std::map<std::size_t, std::size_t> function_of_;
  std::vector<std::string> node_names_;  // by node index, for the functions' names
  std::set<std::size_t> absorbed_dq_;    // DequantizeLinear nodes a QDQ contraction absorbed
  std::map<std::string, std::string, std::less<>> dq_source_;  // their outputs -> int8 inputs
  std::set<const ::onnx::NodeProto*> qdq_contractions_;
};

// ---------------------------------------------------------------------------------------------
// Attributes.

std::int64_t int_attribute(const ::onnx::NodeProto& node, std::string_view name,
                           std::int64_t fallback) {
  const auto* a = find_attribute(node, name);
  return a != nullptr && a->type() == ::onnx::AttributeProto::INT ? a->i() : fallback;
}

std::vector<std::int64_t> ints_attribute(const ::onnx::NodeProto& node, std::string_view name) {
  const auto* a = find_attribute(node, name);
  if (a == nullptr) return {};
  return {a->ints().begin(), a->ints().end()};
}

std::string string_attribute(const ::onnx::NodeProto& node, std::string_view name) {
  const auto* a = find_attribute(node, name);
  return a != nullptr ? a->s() : std::string{};
}

// ---------------------------------------------------------------------------------------------
// Steps.

void Importer::strip_data(::onnx::GraphProto& g) {
  const auto check = [&](const ::onnx::TensorProto& t, std::string where) {
    if (!keeps_values(t)) return;
    if (const std::string problem = kept_data_problem(t); !problem.empty()) {
      path_ = std::move(where);
      error(fmt::format("integer tensor '{}' is malformed: {}", t.name(), problem),
            "re-export the model, or check it with onnx.checker.check_model(model, "
            "full_check=True)");
    }
  };
  for (int i = 0; i < g.initializer_size(); ++i) {
    check(g.initializer(i), fmt::format("graph.initializer[{}]", i));
    drop_data(*g.mutable_initializer(i));
  }
  for (int i = 0; i < g.node_size(); ++i) {
    auto& node = *g.mutable_node(i);
    if (node.op_type() != "Constant") continue;
    for (auto& a : *node.mutable_attribute()) {
      if (!a.has_t()) continue;
      check(a.t(), fmt::format("graph.node[{}] '{}' (Constant)", i, node.name()));
      drop_data(*a.mutable_t());
    }
  }
}

void Importer::bind_dims(::onnx::GraphProto& g) {
  std::set<std::string, std::less<>> initializers;
  for (const auto& init : g.initializer()) initializers.insert(init.name());
  std::set<std::string, std::less<>> symbols;  // every symbolic dim the graph names
  const auto bind = [&](::onnx::ValueInfoProto& v, bool is_input) {
    if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) return;
    auto* shape = v.mutable_type()->mutable_tensor_type()->mutable_shape();
    for (int d = 0; d < shape->dim_size(); ++d) {
      auto* dim = shape->mutable_dim(d);
      if (!dim->has_dim_param()) continue;
      symbols.insert(dim->dim_param());
      const auto it = options_.dim_bindings.find(dim->dim_param());
      if (it != options_.dim_bindings.end()) {
        const std::uint64_t bound = it->second;
        dim->set_dim_value(static_cast<std::int64_t>(bound));
      } else if (is_input) {
        path_ = fmt::format("graph.input '{}'", v.name());
        error(fmt::format("dim {} is symbolic ('{}') and has no binding", d, dim->dim_param()),
              fmt::format("bind it: --bind {0}=<size> (in a sweep's workload: bind: {{{0}: "
                          "<size>}})",
                          dim->dim_param()));
      } else {
        dim->clear_dim_param();  // an output's or value_info's: shape inference derives it
      }
    }
  };
  for (auto& v : *g.mutable_input())
    if (initializers.count(v.name()) == 0) bind(v, true);
  for (auto& v : *g.mutable_output()) bind(v, false);
  for (auto& v : *g.mutable_value_info()) bind(v, false);
  // A binding of a name the graph does not use is a slip (a typo, another model's name): said,
  // not ignored.
  for (const auto& [name, value] : options_.dim_bindings) {
    if (symbols.contains(name)) continue;
    path_ = "dim_bindings";
    error(fmt::format("'{}={}' binds no symbolic dim of the model", name, value),
          symbols.empty() ? std::string("its dims are all static: drop --bind")
                          : fmt::format("its symbolic dims: {}", fmt::join(symbols, ", ")));
  }
}

// Conv, pooling and Split nodes are checked before libonnx's shape inference, which trusts them.
// Strides, dilations and kernel sizes must be at least 1 and pads not negative (libonnx 1.12
// divides by the strides: a zero stride is SIGFPE). And libonnx's Conv shape inference (Debian's
// 1.12 and later releases alike) takes a missing
// kernel_shape from the weight's dims[2:] without checking that the weight's rank matches the
// input's, and then indexes the input's dims and the dilations past their ends: a weight of the
// wrong rank crashes the process (fuzz/known_crashes/onnx_conv_shape_inference_segv.onnx). Pinning
// kernel_shape from the weight's static shape turns that into the size check libonnx does make
// ("Attribute kernel_shape has incorrect size"), which infer_shapes reports. The weight's shape
// is static when it is an initializer, a graph input or a value_info with every dim known, or
// is reached from one through shape-preserving nodes (Identity, Cast, QuantizeLinear,
// DequantizeLinear, as in QDQ models). A conv-like node whose weight shape cannot be known before
// inference and that has no kernel_shape is an error here, never a crash.
// Each standard node against its op's schema at the model's opset (input and output counts,
// attributes and their types), before libonnx's shape inference, which trusts them: a Shape
// with two outputs crashed it (fuzz/onnx_fuzz.cpp). Real exports pass; a node of an op the
// registry does not know is left to import_node's "unsupported" error.
void Importer::verify_nodes(const ::onnx::GraphProto& g) {
  for (int i = 0; i < g.node_size(); ++i) {
    const ::onnx::NodeProto& node = g.node(i);
    if (!node.domain().empty() && node.domain() != "ai.onnx") continue;
    const auto* schema = ::onnx::OpSchemaRegistry::Schema(node.op_type(), static_cast<int>(opset_));
    if (schema == nullptr) continue;
    try {
      schema->Verify(node);
    } catch (const std::exception& e) {
      path_ = fmt::format("graph.node[{}] '{}' ({})", i, node.name(), node.op_type());
      error(fmt::format("not a valid {} node at opset {}: {}", node.op_type(), opset_, e.what()),
            "check the model with onnx.checker.check_model(model)");
    }
  }
}

void Importer::guard_conv_pool_nodes(::onnx::GraphProto& g) {
  std::map<std::string, std::vector<std::int64_t>, std::less<>> shapes;
  for (const auto& init : g.initializer())
    shapes[init.name()] = {init.dims().begin(), init.dims().end()};
  const auto from_value_info = [&](const ::onnx::ValueInfoProto& v) {
    if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) return;
    std::vector<std::int64_t> dims;
    for (const auto& d : v.type().tensor_type().shape().dim()) {
      if (!d.has_dim_value()) return;
      dims.push_back(d.dim_value());
    }
    shapes.try_emplace(v.name(), std::move(dims));
  };
  for (const auto& v : g.input()) from_value_info(v);
  for (const auto& v : g.value_info()) from_value_info(v);
  std::map<std::string, const ::onnx::NodeProto*, std::less<>> producer;
  for (const auto& node : g.node())
    for (const auto& out : node.output()) producer[out] = &node;
  const std::set<std::string, std::less<>> shape_preserving{"Identity", "Cast", "QuantizeLinear",
                                                            "DequantizeLinear"};
  const auto static_shape = [&](std::string name) -> const std::vector<std::int64_t>* {
    for (std::size_t hops = 0; hops <= producer.size(); ++hops) {  // bounded: no cycle loops
      if (const auto it = shapes.find(name); it != shapes.end()) return &it->second;
      const auto p = producer.find(name);
      if (p == producer.end() || shape_preserving.count(p->second->op_type()) == 0 ||
          p->second->input_size() == 0)
        return nullptr;
      name = p->second->input(0);
    }
    return nullptr;
  };
  // The weight's input index of each conv-like op whose shape inference derives kernel_shape.
  const std::map<std::string, int, std::less<>> weight_input{
      {"Conv", 1}, {"ConvTranspose", 1}, {"ConvInteger", 1}, {"QLinearConv", 3}};
  // libonnx divides by strides and multiplies by dilations without checking them either.
  const std::set<std::string, std::less<>> windowed{"Conv",    "ConvTranspose", "ConvInteger",
                                                    "QLinearConv", "MaxPool",  "AveragePool",
                                                    "LpPool"};
  for (int i = 0; i < g.node_size(); ++i) {
    ::onnx::NodeProto& node = *g.mutable_node(i);
    path_ = fmt::format("graph.node[{}] '{}' ({})", i, node.name(), node.op_type());
    // libonnx's Split inference divides the axis by the number of outputs when no sizes are
    // given: a Split with none is SIGFPE (found by onnx_fuzz, 2026-12-04).
    if (node.op_type() == "Split" && node.output_size() == 0) {
      error("a Split with no outputs", "give it one output per part");
      continue;
    }
    if (windowed.count(node.op_type()) == 0) continue;
    for (const std::string_view name : {"strides", "dilations", "kernel_shape"}) {
      const auto values = ints_attribute(node, name);
      if (std::any_of(values.begin(), values.end(), [](std::int64_t v) { return v < 1; }))
        error(fmt::format("attribute {} is [{}]; every value must be at least 1", name,
                          fmt::join(values, ", ")));
    }
    const auto pads = ints_attribute(node, "pads");
    if (std::any_of(pads.begin(), pads.end(), [](std::int64_t v) { return v < 0; }))
      error(fmt::format("attribute pads is [{}]; pads cannot be negative", fmt::join(pads, ", ")));
    const auto w = weight_input.find(node.op_type());
    if (w == weight_input.end() || find_attribute(node, "kernel_shape") != nullptr) continue;
    const auto* shape = node.input_size() > w->second ? static_shape(node.input(w->second))
                                                      : nullptr;
    if (shape == nullptr) {
      error("the weight's shape is not known before shape inference and the node has no "
            "kernel_shape attribute",
            "give the node a kernel_shape attribute, or make its weight an initializer");
      continue;
    }
    if (shape->size() < 3) continue;  // libonnx rejects a weight without spatial dims itself
    auto* attr = node.add_attribute();
    attr->set_name("kernel_shape");
    attr->set_type(::onnx::AttributeProto::INTS);
    for (std::size_t d = 2; d < shape->size(); ++d) attr->add_ints((*shape)[d]);
  }
}

void Importer::infer_shapes(::onnx::ModelProto& model) {
  path_ = "model";
  try {
    // error_mode 0: a node whose shape cannot be inferred (a custom op) leaves its outputs
    // unknown instead of aborting; data propagation follows Shape -> Gather -> Reshape chains.
    // ContribSchemas: libonnx's schemas and onnxruntime's contrib ops coda imports.
    const ContribSchemas schemas;
    ::onnx::shape_inference::InferShapes(model, &schemas,
                                         ::onnx::ShapeInferenceOptions{false, 0, true});
  } catch (const std::exception& e) {
    error(fmt::format("ONNX shape inference failed: {}", e.what()),
          "check the model with onnx.checker.check_model(model, full_check=True)");
  }
}

std::optional<DataType> Importer::data_type(std::int32_t elem_type, const std::string& tensor) {
  using T = ::onnx::TensorProto;
  std::optional<DataType> type;
  bool floating = true;
  switch (elem_type) {
    case T::FLOAT: type = DataType::Fp32; break;
    case T::FLOAT16: type = DataType::Fp16; break;
    case T::BFLOAT16: type = DataType::Bf16; break;
    case T::INT8: case T::UINT8: case T::BOOL: type = DataType::Int8; floating = false; break;
    // coda has no 64-bit integers: index and shape tensors are priced as int32.
    case T::INT32: case T::UINT32: case T::INT64: case T::UINT64:
      type = DataType::Int32; floating = false; break;
    default: break;
  }
  if (!type) {
    error(fmt::format("tensor '{}' has ONNX element type {} ({}), which coda cannot price",
                      tensor, elem_type, T::DataType_Name(static_cast<T::DataType>(elem_type))),
          "supported: float, float16, bfloat16, int8, uint8, bool, int32, int64");
    return std::nullopt;
  }
  if (floating && options_.float_dtype) type = options_.float_dtype;
  return type;
}

void Importer::collect_values(const ::onnx::GraphProto& g) {
  const auto from_value_info = [&](const ::onnx::ValueInfoProto& v) {
    if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) return;
    const auto& tt = v.type().tensor_type();
    ValueInfo info;
    for (const auto& dim : tt.shape().dim()) {
      if (!dim.has_dim_value() || dim.dim_value() < 1) return;  // not static: leave it unknown
      info.shape.push_back(static_cast<std::uint64_t>(dim.dim_value()));
    }
    const auto dtype = data_type(tt.elem_type(), v.name());
    if (!dtype) return;
    info.dtype = *dtype;
    values_.insert_or_assign(v.name(), std::move(info));
  };
  const auto from_tensor = [&](const ::onnx::TensorProto& t, const std::string& name) {
    ValueInfo info;
    for (const std::int64_t d : t.dims()) {
      if (d < 1) {
        error(fmt::format("constant '{}' has an empty dim ({})", name, d));
        return;
      }
      info.shape.push_back(static_cast<std::uint64_t>(d));
    }
    const auto dtype = data_type(t.data_type(), name);
    if (!dtype) return;
    info.dtype = *dtype;
    values_.insert_or_assign(name, std::move(info));
    constants_.insert_or_assign(name, &t);
  };
  path_ = "graph";
  for (const auto& v : g.input()) from_value_info(v);
  for (const auto& v : g.value_info()) from_value_info(v);
  for (const auto& v : g.output()) from_value_info(v);
  for (const auto& t : g.initializer()) from_tensor(t, t.name());
  for (const auto& node : g.node()) {
    if (node.op_type() != "Constant" || node.output_size() != 1) continue;
    if (const auto* a = find_attribute(node, "value"); a != nullptr && a->has_t())
      from_tensor(a->t(), node.output(0));
  }
}

void Importer::add_graph_inputs(const ::onnx::GraphProto& g) {
  for (const auto& v : g.input()) {
    if (is_constant(v.name())) continue;  // IR < 4 lists initializers as inputs too
    path_ = fmt::format("graph.input '{}'", v.name());
    const ValueInfo* info = value(v.name());
    if (info == nullptr) {
      error("has no static shape",
            "declare every dim, or bind symbolic ones with --bind NAME=<size> (in a sweep's "
            "workload: bind: {NAME: <size>})");
      continue;
    }
    tensors_[v.name()] =
        result_.graph.add_tensor({v.name(), info->shape, info->dtype, TensorKind::Activation});
  }
}

std::optional<OnnxImport> Importer::run(::onnx::ModelProto& model) {
  const auto errors_before = diags_.error_count();
  path_ = "model";
  if (model.ir_version() <= 0 || !model.has_graph()) {
    error("not an ONNX model: no ir_version or no graph",
          "expected a serialized onnx.ModelProto (torch.onnx.export or onnx.save output)");
    return std::nullopt;
  }
  for (const auto& opset : model.opset_import())
    if (opset.domain().empty() || opset.domain() == "ai.onnx") opset_ = opset.version();
  ::onnx::GraphProto& g = *model.mutable_graph();
  strip_data(g);
  if (diags_.error_count() != errors_before) return std::nullopt;
  bind_dims(g);
  verify_nodes(g);
  if (diags_.error_count() != errors_before) return std::nullopt;
  guard_conv_pool_nodes(g);
  if (diags_.error_count() != errors_before) return std::nullopt;
  infer_shapes(model);
  // Fold shape arithmetic (shape_folding.h) and infer again, until nothing folds: each round
  // can give shapes that let a later Shape node fold.
  for (int round = 0; round < 16 && diags_.error_count() == errors_before &&
                      fold_shape_arithmetic(g) + complete_einsum_shapes(g) > 0;
       ++round)
    infer_shapes(model);
  if (diags_.error_count() != errors_before) return std::nullopt;
  collect_values(g);
  add_graph_inputs(g);
  if (options_.fuse_functions) {
    plan_functions(g);
    plan_qdq(g);
  }
  for (int i = 0; i < g.node_size(); ++i) {
    const auto index = static_cast<std::size_t>(i);
    if (const auto f = function_of_.find(index); f != function_of_.end()) {
      // A recognised function is imported at its last node; its other nodes are not.
      const FunctionMatch& m = functions_[f->second];
      if (m.nodes.back() == index) {
        path_ = fmt::format("graph.node[{}] '{}' ({})", i, g.node(i).name(), g.node(i).op_type());
        function(m);
      }
      continue;
    }
    if (absorbed_dq_.count(index) > 0) continue;  // read through by its contractions
    import_node(g.node(i), index);
    // A node that failed (its own error said why) leaves its outputs unwritten: the nodes that
    // read them fail quietly, so each real problem is one error, not a cascade of false
    // "not written by any earlier node" ones.
    for (const std::string& out : g.node(i).output())
      if (!out.empty() && tensors_.count(out) == 0 && skipped_outputs_.count(out) == 0)
        failed_outputs_.insert(out);
  }
  if (diags_.error_count() != errors_before) return std::nullopt;
  const std::filesystem::path p(file_);
  result_.graph.name = g.name().empty() ? p.stem().string() : g.name();
  result_.graph.source = fmt::format("ONNX {} (opset {}, producer '{}')", file_, opset_,
                                     model.producer_name());
  return std::move(result_);
}

// ---------------------------------------------------------------------------------------------
// Nodes.

std::string Importer::op_name(const ::onnx::NodeProto& node) const {
  return node.name().empty() ? fmt::format("{}_{}", node.op_type(), result_.graph.ops.size())
                             : node.name();
}

const ValueInfo* Importer::value(const std::string& name) {
  const auto it = values_.find(name);
  return it == values_.end() ? nullptr : &it->second;
}

std::optional<TensorId> Importer::input(const ::onnx::NodeProto& node, int i) {
  if (i >= node.input_size() || node.input(i).empty()) {
    error(fmt::format("input {} is missing", i));
    return std::nullopt;
  }
  return named_input(node.input(i));
}

std::optional<TensorId> Importer::named_input(const std::string& name) {
  if (const auto it = tensors_.find(name); it != tensors_.end()) return it->second;
  if (is_constant(name)) {
    const ValueInfo& info = values_.at(name);
    const TensorId id =
        result_.graph.add_tensor({name, info.shape, info.dtype, TensorKind::Weight});
    tensors_[name] = id;
    return id;
  }
  if (failed_outputs_.count(name) > 0) return std::nullopt;  // its producer's error stands
  if (skipped_outputs_.count(name) > 0)
    error(fmt::format("input '{}' comes from a skipped node and its shape is not declared", name),
          "declare its shape in the model's value_info, or remove the unsupported node");
  else
    error(fmt::format("input '{}' is not written by any earlier node", name),
          "nodes must be in topological order (onnx.checker.check_model)");
  return std::nullopt;
}

std::optional<std::size_t> Importer::axis(std::int64_t value, std::size_t rank,
                                          std::string_view what) {
  const auto r = static_cast<std::int64_t>(rank);
  if (value < -r || value >= r) {
    error(fmt::format("{} {} is outside rank {}", what, value, rank));
    return std::nullopt;
  }
  return static_cast<std::size_t>(value < 0 ? value + r : value);
}

bool Importer::add(Op op, const std::vector<TensorId>& inputs,
                   const std::vector<std::string>& outputs) {
  auto& accesses = op.space.accesses;
  std::vector<TensorId> bound = inputs;
  std::size_t next_output = 0;
  for (std::size_t i = 0; i < accesses.size(); ++i) {
    TensorAccess& a = accesses[i];
    if (a.role != TensorRole::Output) {
      if (i >= inputs.size()) {
        error(fmt::format("internal: access '{}' has no tensor", a.tensor));
        return false;
      }
      const Tensor& t = result_.graph.tensor(inputs[i]);
      // Data movement copies bits whatever their type (Gather's indices are integers).
      if (op.kind == OpKind::DataMovement) a.dtype = t.dtype;
      if (t.shape != a.shape || t.dtype != a.dtype) {
        error(fmt::format("'{}' is [{}] {} where the op reads [{}] {}", t.name,
                          fmt::join(t.shape, ", "), to_string(t.dtype), fmt::join(a.shape, ", "),
                          to_string(a.dtype)),
              "mixed element types or shapes coda does not model");
        return false;
      }
      continue;
    }
    if (next_output >= outputs.size()) {
      error("internal: more outputs than the node names");
      return false;
    }
    const std::string& name = outputs[next_output++];
    if (const ValueInfo* info = value(name); info != nullptr && info->shape != a.shape) {
      error(fmt::format("output '{}' is inferred as [{}] but the op writes [{}]", name,
                        fmt::join(info->shape, ", "), fmt::join(a.shape, ", ")));
      return false;
    }
    if (tensors_.count(name) > 0) {
      error(fmt::format("output '{}' is written twice", name));
      return false;
    }
    const TensorId id =
        result_.graph.add_tensor({name, a.shape, a.dtype, TensorKind::Activation});
    tensors_[name] = id;
    bound.push_back(id);
  }
  op.source = {file_, 0, 0};
  result_.graph.add(std::move(op), std::move(bound));
  return true;
}

std::optional<TensorAccess> Importer::broadcast_access(TensorRole role, std::string name,
                                                       const std::vector<std::uint64_t>& shape,
                                                       const std::vector<std::uint64_t>& out,
                                                       DataType dtype) {
  if (shape.size() > out.size()) {
    error(fmt::format("operand [{}] has a higher rank than the result [{}]",
                      fmt::join(shape, ", "), fmt::join(out, ", ")));
    return std::nullopt;
  }
  TensorAccess a{role, std::move(name), {}, shape, dtype};
  const std::size_t lead = out.size() - shape.size();
  for (std::size_t j = 0; j < shape.size(); ++j) {
    if (shape[j] == out[lead + j]) {
      a.indices.push_back(dim_index(lead + j));
    } else if (shape[j] == 1) {
      a.indices.push_back(IndexExpr{});  // broadcast: always element 0
    } else {
      error(fmt::format("operand [{}] does not broadcast to [{}]", fmt::join(shape, ", "),
                        fmt::join(out, ", ")));
      return std::nullopt;
    }
  }
  return a;
}

void Importer::unary(const ::onnx::NodeProto& node, Function f) {
  const auto x = input(node, 0);
  if (!x) return;
  const Tensor& t = result_.graph.tensor(*x);
  add(make_elementwise(op_name(node), f, t.shape, t.dtype), {*x}, {node.output(0)});
}

void Importer::binary(const ::onnx::NodeProto& node, Function f) {
  const auto a = input(node, 0), b = input(node, 1);
  const ValueInfo* out = value(node.output(0));
  if (!a || !b) return;
  if (out == nullptr) {
    error(fmt::format("the shape of output '{}' is unknown", node.output(0)));
    return;
  }
  const Tensor& ta = result_.graph.tensor(*a);
  const Tensor& tb = result_.graph.tensor(*b);
  Op op = make_elementwise(op_name(node), f, out->shape, ta.dtype, {{TensorRole::Input, {}}});
  auto xa = broadcast_access(role_of(node.input(0)), "x", ta.shape, out->shape, ta.dtype);
  auto xb = broadcast_access(role_of(node.input(1)), "x1", tb.shape, out->shape, tb.dtype);
  if (!xa || !xb) return;
  op.space.accesses[0] = std::move(*xa);
  op.space.accesses[1] = std::move(*xb);
  add(std::move(op), {*a, *b}, {node.output(0)});
}

void Importer::matmul(const ::onnx::NodeProto& node) {
  const auto a = operand(node, 0), b = operand(node, 1);
  const ValueInfo* out = value(node.output(0));
  if (!a || !b) return;
  const Tensor& ta = result_.graph.tensor(*a);
  const Tensor& tb = result_.graph.tensor(*b);
  if (ta.shape.size() < 2 || tb.shape.size() < 2 || out == nullptr) {
    error("MatMul of a 1-D operand, or of unknown output shape, is not supported",
          "reshape the vector to a matrix first");
    return;
  }
  const std::size_t ra = ta.shape.size(), rb = tb.shape.size(), ro = out->shape.size();
  const std::uint64_t m = ta.shape[ra - 2], k = ta.shape[ra - 1], n = tb.shape[rb - 1];
  // numpy's matmul: the result has the larger operand rank, and each operand batch dim is 1 or
  // the result's (a declared output of lower rank came from a file, not from inference).
  const auto broadcasts = [&](const std::vector<std::uint64_t>& shape) {
    if (shape.size() > ro) return false;
    for (std::size_t j = 0; j + 2 < shape.size(); ++j) {
      const std::uint64_t o = out->shape[ro - shape.size() + j];
      if (shape[j] != 1 && shape[j] != o) return false;
    }
    return true;
  };
  if (tb.shape[rb - 2] != k || ro < 2 || out->shape[ro - 2] != m || out->shape[ro - 1] != n ||
      !broadcasts(ta.shape) || !broadcasts(tb.shape)) {
    error(fmt::format("[{}] x [{}] does not give [{}]", fmt::join(ta.shape, ", "),
                      fmt::join(tb.shape, ", "), fmt::join(out->shape, ", ")));
    return;
  }
  // Dims: the result's batch dims b0.., then m, n, k.
  const std::size_t nb = ro - 2, km = nb, kn = nb + 1, kk = nb + 2;
  Op op;
  op.name = op_name(node);
  op.kind = OpKind::Contraction;
  for (std::size_t i = 0; i < nb; ++i)
    op.space.dims.push_back({fmt::format("b{}", i), out->shape[i]});
  op.space.dims.push_back({"m", m});
  op.space.dims.push_back({"n", n});
  op.space.dims.push_back({"k", k});
  // An operand's batch dims, aligned right with the result's; size 1 broadcasts.
  const auto batch_indices = [&](const std::vector<std::uint64_t>& shape) {
    std::vector<IndexExpr> indices;
    const std::size_t own = shape.size() - 2;
    for (std::size_t j = 0; j < own; ++j) {
      const std::size_t dim = nb - own + j;
      indices.push_back(shape[j] == 1 && out->shape[dim] != 1 ? IndexExpr{} : dim_index(dim));
    }
    return indices;
  };
  auto ia = batch_indices(ta.shape);
  ia.push_back(dim_index(km));
  ia.push_back(dim_index(kk));
  auto ib = batch_indices(tb.shape);
  ib.push_back(dim_index(kk));
  ib.push_back(dim_index(kn));
  std::vector<IndexExpr> io;
  for (std::size_t i = 0; i < nb; ++i) io.push_back(dim_index(i));
  io.push_back(dim_index(km));
  io.push_back(dim_index(kn));
  op.space.accesses = {{TensorRole::Input, "A", std::move(ia), ta.shape, ta.dtype},
                       {TensorRole::Weight, "B", std::move(ib), tb.shape, ta.dtype},
                       {TensorRole::Output, "C", std::move(io), out->shape, ta.dtype}};
  quantized_result(node, op);
  add(std::move(op), {*a, *b}, {node.output(0)});
}

// onnxruntime's MatMulNBits (contrib_ops.h): C = A x B with B an int4 (bits 4) or int8 (bits 8)
// weight [K][N] quantized in blocks of block_size along K, with one scale (and, when given, one
// zero point) per block and column. Built as the LLM builder's grouped W4A16 matmul
// (workloads/llm/llm_builder.cpp, grouped_matmul): the reduction split into ko (K / block_size)
// and ki (block_size), so that B[ko x block_size + ki][n], the scales S[ko][n] and the zero points
// Z[ko][n] are affine. The weight is read in its stored bytes (K x N x bits / 8) and the scales and
// zero points in theirs: onnxruntime's kernels dequantize in registers, writing no float copy of
// B. Packed 4-bit zero points are priced as K / block_size x N nibbles, which leaves out the pad
// nibble of a column with an odd number of blocks (N / 2 bytes at most).
void Importer::matmul_nbits(const ::onnx::NodeProto& node) {
  const std::int64_t k_attr = int_attribute(node, "K", 0);
  const std::int64_t n_attr = int_attribute(node, "N", 0);
  const std::int64_t bits = int_attribute(node, "bits", 4);
  const std::int64_t block = int_attribute(node, "block_size", 0);
  // At most 2^32 each (a weight has far fewer rows and columns), so that no product of sizes
  // below overflows.
  constexpr std::int64_t kMaxSide = std::int64_t{1} << 32;
  if (k_attr < 1 || n_attr < 1 || k_attr > kMaxSide || n_attr > kMaxSide) {
    error(fmt::format("attributes K ({}) and N ({}) must be between 1 and 2^32", k_attr, n_attr),
          "onnxruntime's quantizer writes both: K the weight's rows, N its columns");
    return;
  }
  if (bits != 4 && bits != 8) {
    error(fmt::format("bits {}: coda prices 4-bit (int4) and 8-bit (int8) weights, not {}-bit",
                      bits, bits),
          "quantize the model with bits=4 or bits=8");
    return;
  }
  if (block < 16 || block > k_attr || (block & (block - 1)) != 0) {
    error(fmt::format("block_size {} is not a power of two from 16 to K ({})", block, k_attr),
          "onnxruntime's MatMulNBits takes block sizes 16, 32, 64, 128, ...");
    return;
  }
  if (k_attr % block != 0) {
    error(fmt::format("K {} is not a multiple of block_size {}: coda prices whole blocks only",
                      k_attr, block),
          "quantize with a block size that divides K (32, 64 or 128 divide most models' K)");
    return;
  }
  if (node.input_size() > 4 && !node.input(4).empty()) {
    error("input 4 (g_idx, deprecated in onnxruntime) is not supported",
          "quantize without act-order (GPTQ desc_act=False), or with a current onnxruntime");
    return;
  }
  const auto k = static_cast<std::uint64_t>(k_attr), n = static_cast<std::uint64_t>(n_attr);
  const std::uint64_t blocks = k / static_cast<std::uint64_t>(block);
  const DataType weight_type = bits == 4 ? DataType::Int4 : DataType::Int8;
  const auto a = input(node, 0);
  if (!a) return;
  // A copy: weight_view adds tensors to the graph, which may move its tensors.
  const Tensor ta = result_.graph.tensor(*a);
  if (ta.shape.size() < 2 || ta.shape.back() != k) {
    error(fmt::format("A is [{}], where MatMulNBits needs a matrix (or a batch of them) of K = {} "
                      "columns",
                      fmt::join(ta.shape, ", "), k),
          ta.shape.size() < 2 ? "reshape a vector to [1, K] first" : "");
    return;
  }
  // An input as stored, checked against the element count its form implies.
  const auto stored = [&](int i, std::string_view what, std::uint64_t elements,
                          std::string_view form) -> const ValueInfo* {
    if (i >= node.input_size() || node.input(i).empty()) {
      error(fmt::format("input {} ({}) is missing", i, what));
      return nullptr;
    }
    const ValueInfo* info = value(node.input(i));
    if (info == nullptr) {
      error(fmt::format("input {} ({}) '{}' has no static shape", i, what, node.input(i)),
            "quantized weights are initializers");
      return nullptr;
    }
    if (workload::element_count(info->shape) != elements) {
      error(fmt::format(
          "input {} ({}) '{}' is [{}], where K {}, N {}, bits {} and block_size {} "
          "need {} ({} elements)",
          i, what, node.input(i), fmt::join(info->shape, ", "), k, n, bits, block, form, elements));
      return nullptr;
    }
    return info;
  };
  const std::uint64_t blob = static_cast<std::uint64_t>(block * bits / 8);
  if (stored(1, "B", n * blocks * blob, fmt::format("[{}, {}, {}] uint8", n, blocks, blob)) ==
      nullptr)
    return;
  const ValueInfo* scales = stored(2, "scales", n * blocks, fmt::format("[{}, {}]", n, blocks));
  if (scales == nullptr) return;
  const bool has_zero_points = node.input_size() > 3 && !node.input(3).empty();
  std::optional<DataType> zero_type;
  if (has_zero_points) {
    const ValueInfo* info = value(node.input(3));
    const bool packed = info != nullptr && info->dtype == DataType::Int8;
    const std::uint64_t per_column =
        packed ? (blocks * static_cast<std::uint64_t>(bits) + 7) / 8 : blocks;
    if (stored(3, "zero_points", n * per_column,
               packed ? fmt::format("[{}, {}] uint8 (packed)", n, per_column)
                      : fmt::format("[{}, {}] in A's type (unpacked)", n, blocks)) == nullptr)
      return;
    zero_type = packed ? weight_type : info->dtype;
  }
  const std::size_t nb = ta.shape.size() - 2;
  const std::size_t km = nb, kn = nb + 1, kko = nb + 2, kki = nb + 3;
  const IndexExpr k_index{{IndexTerm{kko, block}, IndexTerm{kki, 1}}, 0};
  std::vector<std::uint64_t> out_shape = ta.shape;
  out_shape.back() = n;
  Op op;
  op.name = op_name(node);
  op.kind = OpKind::Contraction;
  std::vector<IndexExpr> ia, io;
  for (std::size_t i = 0; i < nb; ++i) {
    op.space.dims.push_back({fmt::format("b{}", i), ta.shape[i]});
    ia.push_back(dim_index(i));
    io.push_back(dim_index(i));
  }
  op.space.dims.push_back({"m", ta.shape[nb]});
  op.space.dims.push_back({"n", n});
  op.space.dims.push_back({"ko", blocks});
  op.space.dims.push_back({"ki", static_cast<std::uint64_t>(block)});
  ia.push_back(dim_index(km));
  ia.push_back(k_index);
  io.push_back(dim_index(km));
  io.push_back(dim_index(kn));
  op.space.accesses = {
      {TensorRole::Input, "A", std::move(ia), ta.shape, ta.dtype},
      {TensorRole::Weight, "B", {k_index, dim_index(kn)}, {k, n}, weight_type},
      {TensorRole::Weight, "S", {dim_index(kko), dim_index(kn)}, {blocks, n}, scales->dtype}};
  std::vector<TensorId> inputs{*a};
  const auto b = weight_view(node, 1, {k, n}, weight_type);
  const auto s = weight_view(node, 2, {blocks, n}, scales->dtype);
  if (!b || !s) return;
  inputs.push_back(*b);
  inputs.push_back(*s);
  if (zero_type) {
    op.space.accesses.push_back(
        {TensorRole::Weight, "Z", {dim_index(kko), dim_index(kn)}, {blocks, n}, *zero_type});
    const auto z = weight_view(node, 3, {blocks, n}, *zero_type);
    if (!z) return;
    inputs.push_back(*z);
  }
  op.space.accesses.push_back({TensorRole::Output, "C", std::move(io), out_shape, ta.dtype});
  if (add_with_bias(node, std::move(op), inputs, 5, ".product"))
    ++result_.functions["int" + std::to_string(bits) + "_weight_contraction"];
}

// A quantized weight as the contraction reads it: `shape` in `dtype`, the same bytes as the
// stored blobs. Made once per initializer; another reader of it in another form is an error.
std::optional<TensorId> Importer::weight_view(const ::onnx::NodeProto& node, int i,
                                              std::vector<std::uint64_t> shape, DataType dtype) {
  const std::string& name = node.input(i);
  if (const auto it = tensors_.find(name); it != tensors_.end()) {
    const Tensor& t = result_.graph.tensor(it->second);
    if (t.shape == shape && t.dtype == dtype) return it->second;
    error(fmt::format("'{}' is read as [{}] {} here and as [{}] {} by another node", name,
                      fmt::join(shape, ", "), to_string(dtype), fmt::join(t.shape, ", "),
                      to_string(t.dtype)),
          "a quantized weight must be read by MatMulNBits nodes alone");
    return std::nullopt;
  }
  const TensorId id = result_.graph.add_tensor({name, std::move(shape), dtype, TensorKind::Weight});
  tensors_[name] = id;
  return id;
}

void Importer::add_bias(const ::onnx::NodeProto& node, const std::string& in, int bias_input,
                        const std::string& out) {
  const auto x = tensors_.find(in);
  const auto bias = input(node, bias_input);
  if (x == tensors_.end() || !bias) return;
  const Tensor& tx = result_.graph.tensor(x->second);
  const Tensor& tb = result_.graph.tensor(*bias);
  // A conv bias [M] spans the channel axis 1 of [N, M, H, W]; a Gemm bias broadcasts
  // numpy-style to [M, N].
  std::optional<TensorAccess> access;
  if (node.op_type() == "Conv" && tb.shape.size() == 1) {
    access = TensorAccess{role_of(node.input(bias_input)), "x1", {dim_index(1)}, tb.shape,
                          tb.dtype};
  } else {
    access = broadcast_access(role_of(node.input(bias_input)), "x1", tb.shape, tx.shape,
                              tb.dtype);
  }
  if (!access) return;
  Op op = make_elementwise(op_name(node) + ".bias", Function::Add, tx.shape, tx.dtype,
                           {{TensorRole::Input, {}}});
  op.space.accesses[1] = std::move(*access);
  add(std::move(op), {x->second, *bias}, {out});
}

bool Importer::add_with_bias(const ::onnx::NodeProto& node, Op op,
                             const std::vector<TensorId>& inputs, int bias_input,
                             std::string_view suffix) {
  const bool has_bias = node.input_size() > bias_input && !node.input(bias_input).empty();
  const std::string out = has_bias ? node.output(0) + std::string(suffix) : node.output(0);
  if (!add(std::move(op), inputs, {out})) return false;
  if (has_bias) add_bias(node, out, bias_input, node.output(0));
  return true;
}

void Importer::gemm(const ::onnx::NodeProto& node) {
  const auto a = operand(node, 0), b = operand(node, 1);
  if (!a || !b) return;
  const Tensor& ta = result_.graph.tensor(*a);
  const Tensor& tb = result_.graph.tensor(*b);
  if (ta.shape.size() != 2 || tb.shape.size() != 2) {
    error("Gemm operands must be 2-D");
    return;
  }
  const bool trans_a = int_attribute(node, "transA", 0) != 0;
  const bool trans_b = int_attribute(node, "transB", 0) != 0;
  const std::uint64_t m = ta.shape[trans_a ? 1 : 0], k = ta.shape[trans_a ? 0 : 1];
  const std::uint64_t n = tb.shape[trans_b ? 0 : 1];
  if (tb.shape[trans_b ? 1 : 0] != k) {
    error(fmt::format("inner sizes differ: A is [{}], B is [{}] (transA {}, transB {})",
                      fmt::join(ta.shape, ", "), fmt::join(tb.shape, ", "), trans_a, trans_b));
    return;
  }
  enum : std::size_t { kM, kN, kK };
  Op op;
  op.name = op_name(node);
  op.kind = OpKind::Contraction;
  op.space.dims = {{"m", m}, {"n", n}, {"k", k}};
  op.space.accesses = {
      {TensorRole::Input, "A",
       trans_a ? std::vector{dim_index(kK), dim_index(kM)}
               : std::vector{dim_index(kM), dim_index(kK)},
       ta.shape, ta.dtype},
      {TensorRole::Weight, "B",
       trans_b ? std::vector{dim_index(kN), dim_index(kK)}
               : std::vector{dim_index(kK), dim_index(kN)},
       tb.shape, ta.dtype},
      {TensorRole::Output, "C", {dim_index(kM), dim_index(kN)}, {m, n}, ta.dtype}};
  quantized_result(node, op);
  add_with_bias(node, std::move(op), {*a, *b}, 2, ".product");
}

void Importer::conv(const ::onnx::NodeProto& node) {
  const auto x = operand(node, 0), w = operand(node, 1);
  const ValueInfo* out = value(node.output(0));
  if (!x || !w) return;
  const Tensor& tx = result_.graph.tensor(*x);
  const Tensor& tw = result_.graph.tensor(*w);
  if (tx.shape.size() != 4 || tw.shape.size() != 4) {
    error(fmt::format("only 2-D convolutions (4-D input and weight) are supported; input is [{}]",
                      fmt::join(tx.shape, ", ")));
    return;
  }
  for (const std::int64_t d : ints_attribute(node, "dilations"))
    if (d != 1) {
      error(fmt::format("dilations [{}] are not supported (only 1)",
                        fmt::join(ints_attribute(node, "dilations"), ", ")),
            "coda's conv indexing has no dilation term");
      return;
    }
  if (out == nullptr || out->shape.size() != 4) {
    error(fmt::format("the shape of output '{}' is unknown", node.output(0)));
    return;
  }
  const std::int64_t group = int_attribute(node, "group", 1);
  const std::uint64_t groups = group < 1 ? 0 : static_cast<std::uint64_t>(group);
  const std::uint64_t c = tx.shape[1], m = tw.shape[0];
  if (groups == 0 || c % groups != 0 || m % groups != 0 || tw.shape[1] * groups != c) {
    error(fmt::format("group {} does not fit {} input channels, weight [{}]", group, c,
                      fmt::join(tw.shape, ", ")));
    return;
  }
  auto strides = ints_attribute(node, "strides");
  auto pads = ints_attribute(node, "pads");
  strides.resize(2, 1);
  pads.resize(4, 0);
  const std::string auto_pad = string_attribute(node, "auto_pad");
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (std::size_t i = 0; i < 2; ++i) {
      const auto in = static_cast<std::int64_t>(tx.shape[2 + i]);
      const auto kernel = static_cast<std::int64_t>(tw.shape[2 + i]);
      const auto o = static_cast<std::int64_t>(out->shape[2 + i]);
      const std::int64_t total = std::max<std::int64_t>(0, (o - 1) * strides[i] + kernel - in);
      pads[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
    }
  } else if (auto_pad == "VALID") {
    pads = {0, 0, 0, 0};
  }
  if (strides[0] < 1 || strides[1] < 1 || pads[0] < 0 || pads[1] < 0) {
    error("strides must be at least 1 and pads not negative");
    return;
  }
  // The begin pads place the window; an end pad only lets the last window reach past the edge,
  // which the output size (from shape inference) already says.
  const Conv2dParams p{.batch = tx.shape[0],
                       .in_h = tx.shape[2],
                       .in_w = tx.shape[3],
                       .in_channels = c,
                       .filter_h = tw.shape[2],
                       .filter_w = tw.shape[3],
                       .out_channels = m,
                       .stride_h = static_cast<std::uint64_t>(strides[0]),
                       .stride_w = static_cast<std::uint64_t>(strides[1]),
                       .pad_h = static_cast<std::uint64_t>(pads[0]),
                       .pad_w = static_cast<std::uint64_t>(pads[1]),
                       .groups = groups};
  Op op = make_conv2d(op_name(node), p, out->shape[2], out->shape[3], tx.dtype);
  quantized_result(node, op);
  add_with_bias(node, std::move(op), {*x, *w}, 2, ".conv");
}

void Importer::batch_norm(const ::onnx::NodeProto& node) {
  if (int_attribute(node, "training_mode", 0) != 0) {
    error("training_mode BatchNormalization is not supported", "export the model in eval mode");
    return;
  }
  // Inference folds the running mean and variance into the scale and shift (as runtimes do
  // when they load the model, and as the BatchNorm function is priced): x * scale' + shift'.
  // So the op reads two per-channel vectors; mean and var are not tensors of the graph.
  std::vector<TensorId> inputs;
  for (int i = 0; i < 3; ++i) {
    const auto t = input(node, i);
    if (!t) return;
    inputs.push_back(*t);
  }
  if (node.input_size() < 5) {
    error("BatchNormalization needs 5 inputs (X, scale, B, mean, var)");
    return;
  }
  const Tensor& tx = result_.graph.tensor(inputs[0]);
  if (tx.shape.size() < 2) {
    error("BatchNormalization input needs a channel axis (rank 2 or more)");
    return;
  }
  add(make_normalization(op_name(node), Function::BatchNorm, tx.shape, {1}, tx.dtype), inputs,
      {node.output(0)});
}

void Importer::layer_norm(const ::onnx::NodeProto& node) {
  const auto x = input(node, 0), scale = input(node, 1);
  if (!x || !scale) return;
  const Tensor& tx = result_.graph.tensor(*x);
  const auto first = axis(int_attribute(node, "axis", -1), tx.shape.size(), "axis");
  if (!first) return;
  Op op = make_normalization(op_name(node), Function::LayerNorm, tx.shape,
                             range(*first, tx.shape.size()), tx.dtype);
  std::vector<TensorId> inputs{*x, *scale};
  if (node.input_size() > 2 && !node.input(2).empty()) {
    const auto bias = input(node, 2);
    if (!bias) return;
    TensorAccess b = op.space.accesses[1];
    b.tensor = "bias";
    op.space.accesses.insert(op.space.accesses.begin() + 2, std::move(b));
    inputs.push_back(*bias);
  }
  add(std::move(op), inputs, {node.output(0)});
}

void Importer::softmax(const ::onnx::NodeProto& node) {
  const auto x = input(node, 0);
  if (!x) return;
  const Tensor& tx = result_.graph.tensor(*x);
  // Opset 13 normalizes over one axis (default -1); earlier opsets over [axis, rank) (default 1).
  const bool one_axis = opset_ >= 13;
  const auto first = axis(int_attribute(node, "axis", one_axis ? -1 : 1), tx.shape.size(), "axis");
  if (!first) return;
  const auto axes = one_axis ? std::vector<std::size_t>{*first} : range(*first, tx.shape.size());
  add(make_normalization(op_name(node), Function::Softmax, tx.shape, axes, tx.dtype), {*x},
      {node.output(0)});
}

void Importer::pool(const ::onnx::NodeProto& node, Function f) {
  const auto x = input(node, 0);
  const ValueInfo* out = value(node.output(0));
  if (!x) return;
  const Tensor& tx = result_.graph.tensor(*x);
  const auto kernel = ints_attribute(node, "kernel_shape");
  if (tx.shape.size() != 4 || kernel.size() != 2 || out == nullptr || out->shape.size() != 4) {
    error("only 2-D pooling (4-D input, 2 kernel dims, known output shape) is supported");
    return;
  }
  for (const std::int64_t d : ints_attribute(node, "dilations"))
    if (d != 1) {
      error("pooling dilations other than 1 are not supported");
      return;
    }
  auto strides = ints_attribute(node, "strides");
  auto pads = ints_attribute(node, "pads");
  strides.resize(2, 1);
  pads.resize(4, 0);
  const std::string auto_pad = string_attribute(node, "auto_pad");
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (std::size_t i = 0; i < 2; ++i) {
      const auto in = static_cast<std::int64_t>(tx.shape[2 + i]);
      const auto o = static_cast<std::int64_t>(out->shape[2 + i]);
      const std::int64_t total = std::max<std::int64_t>(0, (o - 1) * strides[i] + kernel[i] - in);
      pads[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
    }
  } else if (auto_pad == "VALID") {
    pads = {0, 0, 0, 0};
  }
  if (kernel[0] < 1 || kernel[1] < 1 || strides[0] < 1 || strides[1] < 1 || pads[0] < 0 ||
      pads[1] < 0) {
    error("kernel and strides must be at least 1 and pads not negative");
    return;
  }
  const Pool2dParams p{.batch = tx.shape[0], .channels = tx.shape[1], .in_h = tx.shape[2],
                       .in_w = tx.shape[3], .kernel_h = static_cast<std::uint64_t>(kernel[0]),
                       .kernel_w = static_cast<std::uint64_t>(kernel[1]),
                       .stride_h = static_cast<std::uint64_t>(strides[0]),
                       .stride_w = static_cast<std::uint64_t>(strides[1]),
                       .pad_h = static_cast<std::uint64_t>(pads[0]),
                       .pad_w = static_cast<std::uint64_t>(pads[1])};
  add(make_pool2d(op_name(node), f, p, out->shape[2], out->shape[3], tx.dtype), {*x},
      {node.output(0)});
}

void Importer::reduce(const ::onnx::NodeProto& node, Function f, bool global) {
  const auto x = input(node, 0);
  if (!x) return;
  const Tensor& tx = result_.graph.tensor(*x);
  const std::size_t rank = tx.shape.size();
  std::vector<std::size_t> axes;
  bool keep = true;
  if (global) {  // GlobalAveragePool / GlobalMaxPool: every spatial axis, kept as size 1
    axes = range(2, rank);
  } else {
    keep = int_attribute(node, "keepdims", 1) != 0;
    std::vector<std::int64_t> listed = ints_attribute(node, "axes");
    if (node.input_size() > 1 && !node.input(1).empty()) {  // opset 18: axes as an input
      const auto it = constants_.find(node.input(1));
      if (it == constants_.end()) {
        error("reduction axes computed at run time are not supported",
              "give them as an initializer or a Constant");
        return;
      }
      listed = integer_values(*it->second);
    }
    for (const std::int64_t a : listed) {
      const auto ax = axis(a, rank, "reduction axis");
      if (!ax) return;
      axes.push_back(*ax);
    }
    if (axes.empty()) axes = range(0, rank);  // no axes: reduce everything
  }
  Op op = make_reduction(op_name(node), f, tx.shape, axes, tx.dtype);
  if (keep) {  // the output keeps reduced axes as size 1: index them with element 0
    TensorAccess& y = op.space.accesses.back();
    y.shape.clear();
    y.indices.clear();
    for (std::size_t i = 0; i < rank; ++i) {
      const bool reduced = std::find(axes.begin(), axes.end(), i) != axes.end();
      y.shape.push_back(reduced ? 1 : tx.shape[i]);
      y.indices.push_back(reduced ? IndexExpr{} : dim_index(i));
    }
  }
  add(std::move(op), {*x}, {node.output(0)});
}

void Importer::data_movement(const ::onnx::NodeProto& node, Function f,
                             std::size_t data_inputs) {
  std::vector<TensorId> inputs;
  std::vector<std::vector<std::uint64_t>> in_shapes, out_shapes;
  const std::size_t n = std::min(data_inputs, static_cast<std::size_t>(node.input_size()));
  for (std::size_t i = 0; i < n; ++i) {
    const auto t = input(node, static_cast<int>(i));
    if (!t) return;
    inputs.push_back(*t);
    in_shapes.push_back(result_.graph.tensor(*t).shape);
  }
  std::vector<std::string> outputs;
  for (const std::string& name : node.output()) {
    if (name.empty()) continue;  // an optional output the model does not use
    const ValueInfo* info = value(name);
    if (info == nullptr) {
      error(fmt::format("the shape of output '{}' is unknown", name),
            "shape inference could not derive it; data-dependent shapes are not supported");
      return;
    }
    out_shapes.push_back(info->shape);
    outputs.push_back(name);
  }
  if (outputs.empty()) {
    error("node has no outputs");
    return;
  }
  const DataType dtype = value(outputs[0])->dtype;
  Op op = make_data_movement(op_name(node), f, std::move(in_shapes), std::move(out_shapes), dtype);
  for (std::size_t i = 0; i < n; ++i)
    op.space.accesses[i].role = role_of(node.input(static_cast<int>(i)));
  add(std::move(op), inputs, outputs);
}

// Where(cond, X, Y) with one of X and Y data and the other a constant: a masked fill (a causal
// mask on attention scores), one elementwise op that reads the data and the condition, priced
// as an Add of the two.
void Importer::where(const ::onnx::NodeProto& node) {
  if (node.input_size() != 3) {
    error("Where takes 3 inputs (condition, X, Y)");
    return;
  }
  const bool x_data = !is_constant(node.input(1)), y_data = !is_constant(node.input(2));
  if (x_data == y_data || !is_constant(node.input(0))) {
    error("only a masked fill is supported: a constant condition and one of X and Y constant",
          "a Where that selects between two computed tensors is not modeled");
    return;
  }
  const int data = x_data ? 1 : 2;
  const auto cond = input(node, 0), x = input(node, data);
  const ValueInfo* out = value(node.output(0));
  if (!cond || !x) return;
  if (out == nullptr) {
    error(fmt::format("the shape of output '{}' is unknown", node.output(0)));
    return;
  }
  const Tensor& tx = result_.graph.tensor(*x);
  const Tensor& tc = result_.graph.tensor(*cond);
  Op op = make_elementwise(op_name(node), Function::Add, out->shape, tx.dtype,
                           {{TensorRole::Weight, {}}});
  auto ax = broadcast_access(TensorRole::Input, "x", tx.shape, out->shape, tx.dtype);
  auto ac = broadcast_access(TensorRole::Weight, "mask", tc.shape, out->shape, tc.dtype);
  if (!ax || !ac) return;
  op.space.accesses[0] = std::move(*ax);
  op.space.accesses[1] = std::move(*ac);
  add(std::move(op), {*x, *cond}, {node.output(0)});
}

// A conversion of data between element types, one elementwise pass that reads one type and
// writes the other: Cast (PyTorch's cast kernel; Function::Copy), nothing when the types are the
// same (an fp32 export's casts around a norm, or any cast under --precision); QuantizeLinear
// (float to int8) and DequantizeLinear (int8 to float), whose scale and zero point are metadata.
void Importer::convert(const ::onnx::NodeProto& node, Function f) {
  const auto x = input(node, 0);
  if (!x) return;
  const ValueInfo* out = value(node.output(0));
  if (out == nullptr) {
    error(fmt::format("the shape of output '{}' is unknown", node.output(0)));
    return;
  }
  const Tensor& t = result_.graph.tensor(*x);
  if (f == Function::Copy && out->dtype == t.dtype) {
    tensors_[node.output(0)] = *x;
    return;
  }
  add(make_elementwise(op_name(node), f, t.shape, t.dtype, {}, out->dtype), {*x}, {node.output(0)});
}

void Importer::plan_functions(const ::onnx::GraphProto& g) {
  PatternValues values;
  values.is_constant = [this](const std::string& name) { return constants_.count(name) > 0; };
  values.scalar = [this](const std::string& name) -> std::optional<double> {
    const auto it = constants_.find(name);
    return it == constants_.end() ? std::nullopt : scalar_value(*it->second);
  };
  values.ints = [this](const std::string& name) -> std::optional<std::vector<std::int64_t>> {
    const auto it = constants_.find(name);
    if (it == constants_.end()) return std::nullopt;
    auto ints = integer_values(*it->second);
    if (ints.empty()) return std::nullopt;
    return ints;
  };
  values.shape = [this](const std::string& name) -> std::optional<std::vector<std::uint64_t>> {
    const ValueInfo* info = value(name);
    if (info == nullptr) return std::nullopt;
    return info->shape;
  };
  for (const auto& node : g.node()) node_names_.push_back(node.name());
  for (FunctionMatch& m : find_function_patterns(g, values)) {
    // One op of one type and shape: x, the result, the scale and the shift alike.
    const ValueInfo* x = value(m.input);
    const ValueInfo* out = value(m.output);
    if (x == nullptr || out == nullptr || x->shape != out->shape || x->dtype != out->dtype)
      continue;
    const auto same_type = [&](const std::string& name) {
      const ValueInfo* v = name.empty() ? nullptr : value(name);
      return name.empty() || (v != nullptr && v->dtype == x->dtype);
    };
    if (!same_type(m.weight) || !same_type(m.bias)) continue;
    for (const std::size_t n : m.nodes) function_of_[n] = functions_.size();
    functions_.push_back(std::move(m));
  }
}

void Importer::function(const FunctionMatch& m) {
  const auto x = named_input(m.input);
  if (!x) return;
  const Tensor& tx = result_.graph.tensor(*x);
  // Named by the scope its nodes share ("/model/layers.0/input_layernorm/" + "rms_norm"), as
  // exporters name nodes by module; else by the last node.
  std::string scope = node_names_.at(m.nodes.front());
  for (const std::size_t n : m.nodes) {
    const std::string& other = node_names_.at(n);
    const auto end = std::mismatch(scope.begin(), scope.end(), other.begin(), other.end()).first;
    scope.erase(end, scope.end());
  }
  scope.erase(scope.rfind('/') == std::string::npos ? 0 : scope.rfind('/') + 1);
  const std::string name =
      scope.empty() ? fmt::format("{}_{}", to_string(m.function), result_.graph.ops.size())
                    : scope + to_string(m.function);
  std::vector<TensorId> inputs{*x};
  Op op;
  if (m.function == RecognisedFunction::Gelu || m.function == RecognisedFunction::Silu) {
    op = make_elementwise(name,
                          m.function == RecognisedFunction::Gelu ? Function::Gelu : Function::Silu,
                          tx.shape, tx.dtype);
  } else {
    op = make_normalization(
        name, m.function == RecognisedFunction::RmsNorm ? Function::RmsNorm : Function::LayerNorm,
        tx.shape, {tx.shape.size() - 1}, tx.dtype);
    const auto scale = named_input(m.weight);
    if (!scale) return;
    inputs.push_back(*scale);
    if (!m.bias.empty()) {
      const auto bias = named_input(m.bias);
      if (!bias) return;
      TensorAccess b = op.space.accesses[1];
      b.tensor = "bias";
      op.space.accesses.insert(op.space.accesses.begin() + 2, std::move(b));
      inputs.push_back(*bias);
    }
  }
  if (add(std::move(op), inputs, {m.output})) ++result_.functions[to_string(m.function)];
}

void Importer::plan_qdq(const ::onnx::GraphProto& g) {
  std::map<std::string, std::size_t, std::less<>> dq_of;  // a DequantizeLinear's output -> node
  std::map<std::string, std::vector<std::size_t>, std::less<>> readers;
  for (int i = 0; i < g.node_size(); ++i) {
    const auto& node = g.node(i);
    const bool standard = node.domain().empty() || node.domain() == "ai.onnx";
    if (standard && node.op_type() == "DequantizeLinear" && node.input_size() >= 1 &&
        node.output_size() == 1) {
      const ValueInfo* in = value(node.input(0));
      if (in != nullptr && in->dtype == DataType::Int8)
        dq_of.emplace(node.output(0), static_cast<std::size_t>(i));
    }
    for (const std::string& in : node.input()) readers[in].push_back(static_cast<std::size_t>(i));
  }
  std::set<std::string, std::less<>> results;
  for (const auto& out : g.output()) results.insert(out.name());
  // The contractions whose two operands are such DequantizeLinears.
  std::set<std::size_t> quantized;
  for (int i = 0; i < g.node_size(); ++i) {
    const auto& node = g.node(i);
    const std::string& type = node.op_type();
    if ((type != "MatMul" && type != "Gemm" && type != "Conv") || node.input_size() < 2) continue;
    if (dq_of.count(node.input(0)) > 0 && dq_of.count(node.input(1)) > 0)
      quantized.insert(static_cast<std::size_t>(i));
  }
  // A DequantizeLinear is absorbed when every reader is such a contraction, as an operand.
  for (const auto& entry : dq_of) {
    const std::string& name = entry.first;  // not a structured binding: the lambda reads it
    const std::size_t dq = entry.second;
    const auto& r = readers[name];
    const bool only_operand = !r.empty() && results.count(name) == 0 &&
                              std::all_of(r.begin(), r.end(), [&](std::size_t c) {
                                const auto& node = g.node(static_cast<int>(c));
                                for (int k = 2; k < node.input_size(); ++k)
                                  if (node.input(k) == name)
                                    return false;  // a bias, not an operand
                                return quantized.count(c) > 0;
                              });
    if (!only_operand) continue;
    absorbed_dq_.insert(dq);
    dq_source_.emplace(name, g.node(static_cast<int>(dq)).input(0));
  }
  for (const std::size_t c : quantized) {
    const auto& node = g.node(static_cast<int>(c));
    if (dq_source_.count(node.input(0)) > 0 && dq_source_.count(node.input(1)) > 0) {
      qdq_contractions_.insert(&node);
      ++result_.functions["int8_contraction"];
    }
  }
}

std::optional<TensorId> Importer::operand(const ::onnx::NodeProto& node, int i) {
  if (qdq_contractions_.count(&node) > 0 && i < node.input_size())
    if (const auto it = dq_source_.find(node.input(i)); it != dq_source_.end())
      return named_input(it->second);
  return input(node, i);
}

void Importer::quantized_result(const ::onnx::NodeProto& node, Op& op) {
  if (qdq_contractions_.count(&node) == 0) return;
  const ValueInfo* out = value(node.output(0));
  if (out == nullptr) return;
  for (TensorAccess& a : op.space.accesses)
    if (a.role == TensorRole::Output) a.dtype = out->dtype;
}

void Importer::constant(const ::onnx::NodeProto& node) {
  // collect_values recorded a tensor-valued Constant; any other form has no shape here.
  if (node.output_size() != 1 || !is_constant(node.output(0)))
    error("only tensor-valued Constant nodes ('value' attribute) are supported");
}

void Importer::import_node(const ::onnx::NodeProto& node, std::size_t index) {
  const std::string& type = node.op_type();
  path_ = fmt::format("graph.node[{}] '{}' ({})", index, node.name(), type);
  const bool standard = node.domain().empty() || node.domain() == "ai.onnx";
  if (standard && node.output_size() == 0) {
    error("node has no outputs");
    return;
  }
  // Unary elementwise. Special functions without a Function of their own (Erf, Sqrt, Sin, Cos)
  // are priced as Exp: one special-function op per element. LeakyRelu and Clip (ReLU6) as Relu;
  // Neg as a Sub (0 - x).
  static constexpr std::pair<std::string_view, Function> kUnary[] = {
      {"Relu", Function::Relu},       {"LeakyRelu", Function::Relu}, {"Clip", Function::Relu},
      {"Sigmoid", Function::Sigmoid}, {"Tanh", Function::Tanh},      {"Gelu", Function::Gelu},
      {"Erf", Function::Exp},         {"Sqrt", Function::Exp},       {"Exp", Function::Exp},
      {"Sin", Function::Exp},         {"Cos", Function::Exp},        {"Reciprocal", Function::Div},
      {"Neg", Function::Sub},
  };
  // Binary with numpy broadcasting. Pow as one Mul (x^2, the RMSNorm case).
  static constexpr std::pair<std::string_view, Function> kBinary[] = {
      {"Add", Function::Add}, {"Sub", Function::Sub}, {"Mul", Function::Mul},
      {"Div", Function::Div}, {"Pow", Function::Mul},
  };
  if (standard && type == "Shape") {
    if (node.input_size() < 1 || node.input(0).empty()) {
      error("input 0 is missing");
      return;
    }
    const std::string& in = node.input(0);
    if (tensors_.count(in) == 0 && !is_constant(in)) {
      input(node, 0);  // reports why (or stays quiet after its producer's error)
      return;
    }
  }
  // Shape of a known tensor, or a node of constants alone, computes a constant: no work at run
  // time.
  const bool reads_only_constants =
      type == "Shape" ||
      (node.input_size() > 0 && type != "Constant" &&
       std::all_of(node.input().begin(), node.input().end(),
                   [&](const std::string& in) { return in.empty() || is_constant(in); }));
  if (standard && reads_only_constants) {
    for (const std::string& out : node.output()) {
      if (out.empty()) continue;
      if (value(out) == nullptr) {
        error(fmt::format("the shape of output '{}' is unknown", out),
              "shape inference could not derive it; data-dependent shapes are not supported");
        return;
      }
      derived_constants_.insert(out);
    }
    return;
  }
  if (standard) {
    for (const auto& [name, f] : kUnary)
      if (type == name) return unary(node, f);
    for (const auto& [name, f] : kBinary)
      if (type == name) return binary(node, f);
    if (type == "MatMul") return matmul(node);
    if (type == "Gemm") return gemm(node);
    if (type == "Conv") return conv(node);
    if (type == "BatchNormalization") return batch_norm(node);
    if (type == "LayerNormalization") return layer_norm(node);
    if (type == "Softmax") return softmax(node);
    if (type == "MaxPool") return pool(node, Function::MaxPool);
    if (type == "AveragePool") return pool(node, Function::AvgPool);
    if (type == "GlobalAveragePool") return reduce(node, Function::Mean, true);
    if (type == "GlobalMaxPool") return reduce(node, Function::Max, true);
    if (type == "ReduceMean") return reduce(node, Function::Mean, false);
    if (type == "ReduceSum") return reduce(node, Function::Sum, false);
    if (type == "ReduceMax") return reduce(node, Function::Max, false);
    // Reshape-like ops read their first input as data; the rest (a shape, axes) are metadata.
    if (type == "Reshape" || type == "Flatten" || type == "Squeeze" || type == "Unsqueeze")
      return data_movement(node, Function::Reshape, 1);
    if (type == "Transpose") return data_movement(node, Function::Transpose, 1);
    if (type == "Concat")
      return data_movement(node, Function::Concat, static_cast<std::size_t>(node.input_size()));
    // A Slice of data is a strided view its readers take as it is, like a Split's parts
    // (mapper/schedule.cpp: no bytes, no kernel); its starts, ends, axes and steps are metadata.
    if (type == "Split" || type == "Slice") return data_movement(node, Function::Split, 1);
    if (type == "Gather") return data_movement(node, Function::Gather, 2);
    // Expand of data writes the broadcast copy (repeat_interleave of GQA's keys and values); its
    // shape input is metadata.
    if (type == "Expand") return data_movement(node, Function::Copy, 1);
    if (type == "Cast") return convert(node, Function::Copy);
    if (type == "QuantizeLinear") return convert(node, Function::Quantize);
    if (type == "DequantizeLinear") return convert(node, Function::Dequantize);
    if (type == "Constant") return constant(node);
    if (type == "Where") return where(node);
    if (type == "Identity" || type == "Dropout") {  // no work: the output is the input
      const auto x = input(node, 0);
      if (x) tensors_[node.output(0)] = *x;
      return;
    }
  }
  if (node.domain() == kMicrosoftDomain && type == "MatMulNBits") return matmul_nbits(node);
  const std::string what =
      standard ? fmt::format("op type '{}'", type)
               : fmt::format("op type '{}' of domain '{}'", type, node.domain());
  if (options_.skip_unsupported) {
    result_.skipped.push_back(fmt::format("{} '{}'", type, node.name()));
    // Outputs the model declares become tensors without a producer, like graph inputs.
    for (const std::string& out : node.output()) {
      if (out.empty()) continue;
      if (const ValueInfo* info = value(out); info != nullptr)
        tensors_[out] =
            result_.graph.add_tensor({out, info->shape, info->dtype, TensorKind::Activation});
      else
        skipped_outputs_.insert(out);
    }
    return;
  }
  error(fmt::format("unsupported {} in node '{}'", what, node.name()),
        fmt::format("supported: {}; or skip it with --skip-unsupported (in a sweep's workload: "
                    "skip_unsupported: true), which lists what was skipped",
                    fmt::join(supported_onnx_ops(), ", ")));
}

}  // namespace

std::vector<std::string_view> supported_onnx_ops() {
  std::vector<std::string_view> ops{"Add",
                                    "Cast",
                                    "Cos",
                                    "DequantizeLinear",
                                    "Expand",
                                    "Neg",
                                    "Sin",
                                    "AveragePool",
                                    "BatchNormalization",
                                    "Clip",
                                    "Concat",
                                    "Constant",
                                    "Conv",
                                    "Div",
                                    "Dropout",
                                    "Erf",
                                    "Exp",
                                    "Flatten",
                                    "Gather",
                                    "Gelu",
                                    "Gemm",
                                    "GlobalAveragePool",
                                    "GlobalMaxPool",
                                    "Identity",
                                    "LayerNormalization",
                                    "LeakyRelu",
                                    "MatMul",
                                    "MatMulNBits (com.microsoft)",
                                    "MaxPool",
                                    "Mul",
                                    "Pow",
                                    "QuantizeLinear",
                                    "Reciprocal",
                                    "ReduceMax",
                                    "ReduceMean",
                                    "ReduceSum",
                                    "Relu",
                                    "Reshape",
                                    "Shape",
                                    "Sigmoid",
                                    "Slice",
                                    "Softmax",
                                    "Split",
                                    "Sqrt",
                                    "Squeeze",
                                    "Sub",
                                    "Tanh",
                                    "Transpose",
                                    "Unsqueeze",
                                    "Where"};
  std::sort(ops.begin(), ops.end());
  return ops;
}

std::optional<OnnxImport> import_onnx_bytes(std::string_view bytes, const std::string& file,
                                            const OnnxOptions& options, Diagnostics& diags) {
  ::onnx::ModelProto model;
  if (bytes.size() > static_cast<std::size_t>(INT_MAX) ||
      !model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    diags.error({file, 0, 0}, "model",
                "cannot parse as an ONNX model (truncated, or not a serialized onnx.ModelProto)",
                "check the file with: python3 -c \"import onnx; onnx.checker.check_model('" +
                    file + "')\"");
    return std::nullopt;
  }
  return Importer(file, options, diags).run(model);
}

std::optional<OnnxImport> import_onnx(const std::filesystem::path& file,
                                      const OnnxOptions& options, Diagnostics& diags) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    diags.error({file.string(), 0, 0}, "", "cannot open the file",
                "check the path and its permissions");
    return std::nullopt;
  }
  // Parsed straight from the stream: the file is not also held as one string.
  ::onnx::ModelProto model;
  if (!model.ParseFromIstream(&in)) {
    diags.error({file.string(), 0, 0}, "model",
                "cannot parse as an ONNX model (truncated, or not a serialized onnx.ModelProto)",
                "check the file with: python3 -c \"import onnx; onnx.checker.check_model('" +
                    file.string() + "')\"");
    return std::nullopt;
  }
  return Importer(file.string(), options, diags).run(model);
}

}  // namespace coda::workload::onnx
