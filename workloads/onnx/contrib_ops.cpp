#include "workloads/onnx/contrib_ops.h"

#include <onnx/defs/shape_inference.h>

namespace coda::workload::onnx {
namespace {

// Y: A's type, and A's shape with its last dim N. The node's inputs and attributes are checked
// by the importer (Importer::matmul_nbits), which locates each problem; here a node that cannot
// give a shape leaves its output unknown.
void infer_matmul_nbits(::onnx::InferenceContext& ctx) {
  ::onnx::propagateElemTypeFromInputToOutput(ctx, 0, 0);
  if (!::onnx::hasInputShape(ctx, 0)) return;
  const ::onnx::AttributeProto* n = ctx.getAttribute("N");
  if (n == nullptr || !n->has_i() || n->i() < 1) return;
  ::onnx::TensorShapeProto shape = ::onnx::getInputShape(ctx, 0);
  if (shape.dim_size() < 1) return;
  shape.mutable_dim(shape.dim_size() - 1)->set_dim_value(n->i());
  ::onnx::updateOutputShape(ctx, 0, shape);
}

}  // namespace

ContribSchemas::ContribSchemas() : matmul_nbits_(std::make_unique<::onnx::OpSchema>()) {
  using ::onnx::AttributeProto;
  using ::onnx::OpSchema;
  (*matmul_nbits_)
      .SetName("MatMulNBits")
      .SetDomain(kMicrosoftDomain)
      .SinceVersion(1)
      .Input(0, "A", "", "T1")
      .Input(1, "B", "", "T2")
      .Input(2, "scales", "", "T1")
      .Input(3, "zero_points", "", "T3", OpSchema::Optional)
      .Input(4, "g_idx", "", "T4", OpSchema::Optional)
      .Input(5, "bias", "", "T1", OpSchema::Optional)
      .Output(0, "Y", "", "T1")
      .TypeConstraint("T1", {"tensor(float)", "tensor(float16)", "tensor(bfloat16)"}, "")
      .TypeConstraint("T2", {"tensor(uint8)", "tensor(int32)"}, "")
      .TypeConstraint("T3",
                      {"tensor(uint8)", "tensor(int32)", "tensor(float)", "tensor(float16)",
                       "tensor(bfloat16)"},
                      "")
      .TypeConstraint("T4", {"tensor(int32)"}, "")
      .Attr("K", "", AttributeProto::INT, false)
      .Attr("N", "", AttributeProto::INT, false)
      .Attr("bits", "", AttributeProto::INT, false)
      .Attr("block_size", "", AttributeProto::INT, false)
      .Attr("accuracy_level", "", AttributeProto::INT, false)
      .AllowUncheckedAttributes()
      .TypeAndShapeInferenceFunction(infer_matmul_nbits);
  matmul_nbits_->Finalize();
}

const ::onnx::OpSchema* ContribSchemas::GetSchema(const std::string& key, int max_inclusive_version,
                                                  const std::string& domain) const {
  if (domain == kMicrosoftDomain && key == "MatMulNBits" && max_inclusive_version >= 1)
    return matmul_nbits_.get();
  return ::onnx::OpSchemaRegistry::Schema(key, max_inclusive_version, domain);
}

}  // namespace coda::workload::onnx
