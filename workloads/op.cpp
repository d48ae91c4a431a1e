#include "workloads/op.h"

#include <algorithm>
#include <array>

#include "core/check.h"
#include "core/enum_table.h"

namespace coda::workload {
namespace {

constexpr std::array<std::pair<std::string_view, Function>, 39> kFunctionNames{{
    {"none", Function::None},
    {"add", Function::Add},
    {"sub", Function::Sub},
    {"mul", Function::Mul},
    {"div", Function::Div},
    {"relu", Function::Relu},
    {"gelu", Function::Gelu},
    {"silu", Function::Silu},
    {"sigmoid", Function::Sigmoid},
    {"tanh", Function::Tanh},
    {"exp", Function::Exp},
    {"quantize", Function::Quantize},
    {"dequantize", Function::Dequantize},
    {"sum", Function::Sum},
    {"mean", Function::Mean},
    {"max", Function::Max},
    {"softmax", Function::Softmax},
    {"layer_norm", Function::LayerNorm},
    {"rms_norm", Function::RmsNorm},
    {"batch_norm", Function::BatchNorm},
    {"max_pool", Function::MaxPool},
    {"avg_pool", Function::AvgPool},
    {"copy", Function::Copy},
    {"reshape", Function::Reshape},
    {"transpose", Function::Transpose},
    {"concat", Function::Concat},
    {"split", Function::Split},
    {"gather", Function::Gather},
    {"all_reduce", Function::AllReduce},
    {"reduce_scatter", Function::ReduceScatter},
    {"all_gather", Function::AllGather},
    {"send_recv", Function::SendRecv},
    {"all_to_all", Function::AllToAll},
    {"adamw", Function::AdamW},
    {"neg", Function::Neg},
    {"pow", Function::Pow},
    {"rsqrt", Function::Rsqrt},
    {"cos", Function::Cos},
    {"sin", Function::Sin},
}};

constexpr std::array<std::pair<std::string_view, OpKind>, 9> kKindNames{{
    {"contraction", OpKind::Contraction}, {"elementwise", OpKind::Elementwise},
    {"reduction", OpKind::Reduction},     {"normalization", OpKind::Normalization},
    {"pooling", OpKind::Pooling},         {"attention", OpKind::Attention},
    {"data_movement", OpKind::DataMovement}, {"collective", OpKind::Collective},
    {"optimizer", OpKind::Optimizer},
}};

// Arithmetic operations per point of the iteration space, for each function, counting the
// operations of the usual formula and a special function (exp, tanh, rsqrt) as one:
//   add, sub, mul, div, max, relu (a compare), exp, tanh: 1; neg, pow (a square: x*x), rsqrt,
//     cos, sin: 1
//   sigmoid 1/(1+exp(-x)): neg, exp, add, div = 4;  silu x*sigmoid(x): 5
//   gelu (tanh form) 0.5x(1+tanh(0.79788(x+0.044715x^3))): x^3 2, mul, add, mul, tanh, add,
//     mul, mul = 9
//   quantize round(x/scale)+zero, clamped: mul, round, add, clamp = 4; dequantize (x-zero)*scale: 2
//   sum, mean, max over an axis: 1 per input point
//   softmax: max, sub, exp, add (sum), div = 5;  layer_norm: mean 1, variance 3 (sub, mul, add),
//     normalize 2, affine 2 = 8;  rms_norm: square-add 2, normalize 1, scale 1 = 4;
//   batch_norm folded to a per-channel scale and shift: 2
//   pooling: 1 per window point
//   adamw per parameter: m update 3, v update 4, bias corrections 2, sqrt+eps+div 3, weight
//     decay and step 3 = 15
std::uint64_t flops_per_point(Function f) {
  switch (f) {
    case Function::Add: case Function::Sub: case Function::Mul: case Function::Div:
    case Function::Max: case Function::Relu: case Function::Exp: case Function::Tanh:
    case Function::Sum: case Function::Mean: case Function::Neg: case Function::Pow:
    case Function::Rsqrt: case Function::Cos: case Function::Sin:
    case Function::MaxPool: case Function::AvgPool: return 1;
    case Function::Sigmoid: return 4;
    case Function::Silu: return 5;
    case Function::Gelu: return 9;
    case Function::Quantize: return 4;
    case Function::Dequantize: return 2;
    case Function::Softmax: return 5;
    case Function::LayerNorm: return 8;
    case Function::RmsNorm: return 4;
    case Function::BatchNorm: return 2;
    case Function::AdamW: return 15;
    case Function::None: case Function::Copy: case Function::Reshape: case Function::Transpose:
    case Function::Concat: case Function::Split: case Function::Gather:
    case Function::AllReduce: case Function::ReduceScatter: case Function::AllGather:
    case Function::SendRecv:
    case Function::AllToAll:
      return 0;
  }
  return 0;
}

std::uint64_t space_points(const Einsum& space) {
  std::uint64_t product = 1;
  for (const Dim& d : space.dims) product *= d.extent;
  return product;
}

// Attention dims, in builder order: b, hk, g, q, kv, d, and e when the values have a head dim
// of their own.
enum : std::size_t { kB, kHk, kG, kQ, kKv, kD, kAttentionDims, kE = kAttentionDims };

// Query-key pairs one head computes.
std::uint64_t attention_pairs(const Op& op) {
  CODA_CHECK(op.space.dims.size() == kAttentionDims || op.space.dims.size() == kAttentionDims + 1);
  const auto* spec = std::get_if<AttentionSpec>(&op.attributes);
  return attention_kept_pairs(op.space.dims[kQ].extent, op.space.dims[kKv].extent,
                              spec != nullptr ? *spec : AttentionSpec{});
}

bool attention_backward(const Op& op) {
  const auto* spec = std::get_if<AttentionSpec>(&op.attributes);
  return spec != nullptr && spec->backward;
}

std::uint64_t attention_heads(const Op& op) {
  return op.space.dims[kB].extent * op.space.dims[kHk].extent * op.space.dims[kG].extent;
}

}  // namespace

std::string_view to_string(OpKind kind) { return enum_name(kKindNames, kind, "unknown"); }

std::string_view to_string(Function function) {
  return enum_name(kFunctionNames, function, "unknown");
}

std::optional<OpKind> parse_op_kind(std::string_view text) { return enum_value(kKindNames, text); }

std::optional<Function> parse_function(std::string_view text) {
  return enum_value(kFunctionNames, text);
}

std::string_view to_string(TensorRole role) {
  switch (role) {
    case TensorRole::Input: return "input";
    case TensorRole::Weight: return "weight";
    case TensorRole::Output: return "output";
  }
  return "unknown";
}

std::uint64_t attention_kept_pairs(std::uint64_t q, std::uint64_t kv, bool causal,
                                   std::uint64_t window) {
  CODA_CHECK(causal || window == 0);
  if (!causal) return q * kv;
  CODA_CHECK(kv >= q);
  // Query i sees keys up to position kv - q + i: t = kv - q + 1 .. kv keys, each capped at the
  // window. The t up to the window sum as a series, the rest keep `window` each.
  const std::uint64_t first = kv - q + 1, cap = window == 0 ? kv : window;
  const std::uint64_t last_uncapped = std::min(kv, cap);
  std::uint64_t pairs = 0;
  if (first <= last_uncapped) pairs += (first + last_uncapped) * (last_uncapped - first + 1) / 2;
  const std::uint64_t capped = kv - std::max(last_uncapped, first - 1);
  return pairs + capped * cap;
}

std::uint64_t attention_kept_pairs(std::uint64_t q, std::uint64_t kv, const AttentionSpec& spec) {
  if (spec.context_parallel > 1 && spec.causal)
    return attention_kept_pairs(kv, kv, true, spec.window) / spec.context_parallel;
  return attention_kept_pairs(q, kv, spec.causal, spec.window);
}

std::uint64_t attention_value_dim(const Op& op) {
  const auto& dims = op.space.dims;
  CODA_CHECK(op.kind == OpKind::Attention && dims.size() > kD);
  return dims.size() > kE ? dims[kE].extent : dims[kD].extent;
}

std::uint64_t mac_count(const Op& op) {
  switch (op.kind) {
    case OpKind::Contraction: return space_points(op.space);
    // Forward: Q K^T (d MACs per kept pair) and P V (e, the value dim). Backward: the four
    // gradient GEMMs (dV = P^T dO and dP = dO V^T over e, dQ = dS K and dK = dS^T Q over d),
    // twice the forward's; a kernel that recomputes S (FlashAttention's) does more, which its
    // pricing counts, not the model's MACs.
    case OpKind::Attention:
      return (attention_backward(op) ? 2 : 1) * attention_heads(op) * attention_pairs(op) *
             (op.space.dims[kD].extent + attention_value_dim(op));
    default: return 0;
  }
}

std::uint64_t iteration_points(const Op& op) { return space_points(op.space); }

std::uint64_t flop_count(const Op& op) {
  switch (op.kind) {
    case OpKind::Contraction: return 2 * mac_count(op);
    // The matmuls, and per kept score the softmax (forward) or dS = P (dP - D) (backward: 2),
    // and a soft cap's tanh (or its derivative's pass) as the decomposed Tanh op counts it.
    case OpKind::Attention: {
      const auto* spec = std::get_if<AttentionSpec>(&op.attributes);
      const std::uint64_t cap = spec && spec->softcap > 0 ? flops_per_point(Function::Tanh) : 0;
      return 2 * mac_count(op) +
             ((attention_backward(op) ? 2 : flops_per_point(Function::Softmax)) + cap) *
                 attention_heads(op) * attention_pairs(op);
    }
    case OpKind::DataMovement:
    case OpKind::Collective: return 0;
    default: return flops_per_point(op.function) * space_points(op.space);
  }
}

// The part of an access's tensor the op touches: per rank, the index range over the iteration
// space clipped to the tensor (a bounding box, so a strided conv that skips rows still counts
// them). An access without indices touches its whole tensor.
Bytes touched_bytes(const TensorAccess& a, const std::vector<Dim>& dims) {
  if (a.indices.size() != a.shape.size()) return storage_bytes(a.shape, a.dtype);
  std::vector<std::uint64_t> box(a.shape.size());
  for (std::size_t r = 0; r < a.shape.size(); ++r) {
    std::int64_t lo = a.indices[r].offset, hi = a.indices[r].offset;
    for (const IndexTerm& term : a.indices[r].terms) {
      if (term.dim >= dims.size() || dims[term.dim].extent == 0) return Bytes{};
      const auto span = term.coefficient * static_cast<std::int64_t>(dims[term.dim].extent - 1);
      (span >= 0 ? hi : lo) += span;
    }
    const auto extent = static_cast<std::int64_t>(a.shape[r]);
    lo = std::max<std::int64_t>(lo, 0);
    hi = std::min<std::int64_t>(hi, extent - 1);
    box[r] = hi >= lo ? static_cast<std::uint64_t>(hi - lo + 1) : 0;
  }
  return storage_bytes(box, a.dtype);
}

Bytes tensor_bytes(const Op& op, TensorRole role) {
  Bytes total;
  for (const TensorAccess& a : op.space.accesses)
    if (a.role == role) total += touched_bytes(a, op.space.dims);
  return total;
}

Bytes tensor_bytes(const Op& op) {
  return tensor_bytes(op, TensorRole::Input) + tensor_bytes(op, TensorRole::Weight) +
         tensor_bytes(op, TensorRole::Output);
}

bool is_accumulator(const Einsum& space, const TensorAccess& access) {
  if (access.role != TensorRole::Input || access.indices.empty()) return false;
  return std::any_of(space.accesses.begin(), space.accesses.end(), [&](const TensorAccess& out) {
    return out.role == TensorRole::Output && out.indices == access.indices &&
           out.shape == access.shape;
  });
}

bool dim_indexes_role(const Einsum& space, std::size_t dim, TensorRole role) {
  for (const TensorAccess& access : space.accesses) {
    if (access.role != role || is_accumulator(space, access)) continue;
    for (const IndexExpr& index : access.indices)
      for (const IndexTerm& term : index.terms)
        if (term.dim == dim && term.coefficient != 0) return true;
  }
  return false;
}

GemmView gemm_view(const Op& op) {
  GemmView view;
  const Einsum& space = op.space;
  for (std::size_t d = 0; d < space.dims.size(); ++d) {
    const std::uint64_t extent = space.dims[d].extent;
    const bool out = dim_indexes_role(space, d, TensorRole::Output);
    const bool in = dim_indexes_role(space, d, TensorRole::Input);
    const bool weight = dim_indexes_role(space, d, TensorRole::Weight);
    if (!out) view.k *= extent;
    else if (in && !weight) view.m *= extent;
    else if (weight && !in) view.n *= extent;
    else view.batch *= extent;  // all three, or the output alone
  }
  return view;
}

}  // namespace coda::workload
