#include "workloads/builders.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>
#include <variant>

#include <fmt/format.h>

#include "core/check.h"

namespace coda::workload {

std::uint64_t conv_output_extent(std::uint64_t in, std::uint64_t filter, std::uint64_t stride,
                                 std::uint64_t pad) {
  CODA_CHECK(stride >= 1 && in + 2 * pad >= filter);
  return (in + 2 * pad - filter) / stride + 1;
}

std::uint64_t scalesim_output_extent(std::uint64_t in, std::uint64_t filter,
                                     std::uint64_t stride) {
  CODA_CHECK(stride >= 1 && in >= filter);
  return (in - filter + stride - 1) / stride + 1;
}

namespace {

IndexExpr dim_index(std::size_t dim) { return IndexExpr{{IndexTerm{dim, 1}}, 0}; }

// Sizes in the IR are far below 2^63; a larger one is a bug upstream.
std::int64_t signed_size(std::uint64_t value) {
  CODA_CHECK(value <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()));
  return static_cast<std::int64_t>(value);
}

}  // namespace

Op make_conv2d(std::string name, const Conv2dParams& p, std::uint64_t out_h, std::uint64_t out_w,
                DataType dtype) {
  CODA_CHECK(p.batch >= 1 && p.in_h >= 1 && p.in_w >= 1 && p.filter_h >= 1 && p.filter_w >= 1);
  CODA_CHECK(p.stride_h >= 1 && p.stride_w >= 1 && out_h >= 1 && out_w >= 1);
  CODA_CHECK(p.groups >= 1 && p.in_channels >= 1 && p.out_channels >= 1);
  CODA_CHECK(p.in_channels % p.groups == 0 && p.out_channels % p.groups == 0);
  const std::uint64_t c_per_group = p.in_channels / p.groups;
  const std::uint64_t k_per_group = p.out_channels / p.groups;

  enum : std::size_t { kN, kG, kK, kC, kP, kQ, kR, kS };
  Op op;
  op.name = std::move(name);
  op.kind = OpKind::Contraction;
  op.space.dims = {{"n", p.batch},    {"g", p.groups}, {"k", k_per_group}, {"c", c_per_group},
                   {"p", out_h},      {"q", out_w},    {"r", p.filter_h},  {"s", p.filter_w}};
  const IndexExpr in_channel{{{kG, signed_size(c_per_group)}, {kC, 1}}, 0};
  const IndexExpr out_channel{{{kG, signed_size(k_per_group)}, {kK, 1}}, 0};
  const IndexExpr in_row{{{kP, signed_size(p.stride_h)}, {kR, 1}}, -signed_size(p.pad_h)};
  const IndexExpr in_col{{{kQ, signed_size(p.stride_w)}, {kS, 1}}, -signed_size(p.pad_w)};
  op.space.accesses = {
      {TensorRole::Input, "ifmap", {dim_index(kN), in_channel, in_row, in_col},
       {p.batch, p.in_channels, p.in_h, p.in_w}, dtype},
      {TensorRole::Weight, "filter", {out_channel, dim_index(kC), dim_index(kR), dim_index(kS)},
       {p.out_channels, c_per_group, p.filter_h, p.filter_w}, dtype},
      {TensorRole::Output, "ofmap", {dim_index(kN), out_channel, dim_index(kP), dim_index(kQ)},
       {p.batch, p.out_channels, out_h, out_w}, dtype},
  };
  return op;
}

Op make_gemm(std::string name, std::uint64_t m, std::uint64_t n, std::uint64_t k,
              DataType dtype) {
  CODA_CHECK(m >= 1 && n >= 1 && k >= 1);
  enum : std::size_t { kM, kN, kK };
  Op op;
  op.name = std::move(name);
  op.kind = OpKind::Contraction;
  op.space.dims = {{"m", m}, {"n", n}, {"k", k}};
  op.space.accesses = {
      {TensorRole::Input, "A", {dim_index(kM), dim_index(kK)}, {m, k}, dtype},
      {TensorRole::Weight, "B", {dim_index(kK), dim_index(kN)}, {k, n}, dtype},
      {TensorRole::Output, "C", {dim_index(kM), dim_index(kN)}, {m, n}, dtype},
  };
  return op;
}

Op make_batched_gemm(std::string name, std::uint64_t batch, std::uint64_t m, std::uint64_t n,
                     std::uint64_t k, DataType dtype) {
  CODA_CHECK(batch >= 1 && m >= 1 && n >= 1 && k >= 1);
  enum : std::size_t { kB, kM, kN, kK };
  Op op;
  op.name = std::move(name);
  op.kind = OpKind::Contraction;
  op.space.dims = {{"b", batch}, {"m", m}, {"n", n}, {"k", k}};
  op.space.accesses = {
      {TensorRole::Input, "A", {dim_index(kB), dim_index(kM), dim_index(kK)}, {batch, m, k}, dtype},
      {TensorRole::Weight, "B", {dim_index(kB), dim_index(kK), dim_index(kN)}, {batch, k, n},
       dtype},
      {TensorRole::Output, "C", {dim_index(kB), dim_index(kM), dim_index(kN)}, {batch, m, n},
       dtype},
  };
  return op;
}

namespace {

// dims d0, d1, ... over `shape`.
std::vector<Dim> shape_dims(const std::vector<std::uint64_t>& shape) {
  std::vector<Dim> dims;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    CODA_CHECK(shape[i] >= 1);
    dims.push_back({fmt::format("d{}", i), shape[i]});
  }
  return dims;
}

// An access to the given axes of the iteration space (each dim i indexes rank j of the tensor).
TensorAccess axes_access(TensorRole role, std::string name, const std::vector<std::uint64_t>& shape,
                         const std::vector<std::size_t>& axes, DataType dtype) {
  TensorAccess a{role, std::move(name), {}, {}, dtype};
  for (const std::size_t axis : axes) {
    CODA_CHECK(axis < shape.size());
    a.indices.push_back(dim_index(axis));
    a.shape.push_back(shape[axis]);
  }
  return a;
}

std::vector<std::size_t> all_axes(std::size_t rank) {
  std::vector<std::size_t> axes(rank);
  for (std::size_t i = 0; i < rank; ++i) axes[i] = i;
  return axes;
}

}  // namespace

Op make_elementwise(std::string name, Function f, const std::vector<std::uint64_t>& shape,
                    DataType dtype, const std::vector<ElementwiseOperand>& extra,
                    std::optional<DataType> out_dtype) {
  Op op;
  op.name = std::move(name);
  op.kind = OpKind::Elementwise;
  op.function = f;
  op.space.dims = shape_dims(shape);
  const auto every = all_axes(shape.size());
  op.space.accesses.push_back(axes_access(TensorRole::Input, "x", shape, every, dtype));
  for (std::size_t i = 0; i < extra.size(); ++i)
    op.space.accesses.push_back(axes_access(extra[i].role, fmt::format("x{}", i + 1), shape,
                                            extra[i].axes.empty() ? every : extra[i].axes, dtype));
  op.space.accesses.push_back(
      axes_access(TensorRole::Output, "y", shape, every, out_dtype.value_or(dtype)));
  return op;
}

Op make_reduction(std::string name, Function f, const std::vector<std::uint64_t>& shape,
                  const std::vector<std::size_t>& axes, DataType dtype) {
  Op op;
  op.name = std::move(name);
  op.kind = OpKind::Reduction;
  op.function = f;
  op.space.dims = shape_dims(shape);
  std::vector<std::size_t> kept;
  for (std::size_t i = 0; i < shape.size(); ++i)
    if (std::find(axes.begin(), axes.end(), i) == axes.end()) kept.push_back(i);
  op.space.accesses = {axes_access(TensorRole::Input, "x", shape, all_axes(shape.size()), dtype),
                       axes_access(TensorRole::Output, "y", shape, kept, dtype)};
  return op;
}

Op make_normalization(std::string name, Function f, const std::vector<std::uint64_t>& shape,
                      const std::vector<std::size_t>& axes, DataType dtype) {
  Op op;
  op.name = std::move(name);
  op.kind = OpKind::Normalization;
  op.function = f;
  op.space.dims = shape_dims(shape);
  const auto every = all_axes(shape.size());
  op.space.accesses.push_back(axes_access(TensorRole::Input, "x", shape, every, dtype));
  if (f != Function::Softmax)
    op.space.accesses.push_back(axes_access(TensorRole::Weight, "scale", shape, axes, dtype));
  if (f == Function::BatchNorm)  // inference: y = x * scale[c] + shift[c]
    op.space.accesses.push_back(axes_access(TensorRole::Weight, "shift", shape, axes, dtype));
  op.space.accesses.push_back(axes_access(TensorRole::Output, "y", shape, every, dtype));
  return op;
}

Op make_pool2d(std::string name, Function f, const Pool2dParams& p, std::uint64_t out_h,
               std::uint64_t out_w, DataType dtype) {
  CODA_CHECK(p.stride_h >= 1 && p.stride_w >= 1 && out_h >= 1 && out_w >= 1);
  enum : std::size_t { kN, kC, kP, kQ, kR, kS };
  Op op;
  op.name = std::move(name);
  op.kind = OpKind::Pooling;
  op.function = f;
  op.space.dims = {{"n", p.batch}, {"c", p.channels},   {"p", out_h},
                   {"q", out_w},   {"r", p.kernel_h}, {"s", p.kernel_w}};
  const IndexExpr in_row{{{kP, signed_size(p.stride_h)}, {kR, 1}}, -signed_size(p.pad_h)};
  const IndexExpr in_col{{{kQ, signed_size(p.stride_w)}, {kS, 1}}, -signed_size(p.pad_w)};
  op.space.accesses = {
      {TensorRole::Input, "x", {dim_index(kN), dim_index(kC), in_row, in_col},
       {p.batch, p.channels, p.in_h, p.in_w}, dtype},
      {TensorRole::Output, "y", {dim_index(kN), dim_index(kC), dim_index(kP), dim_index(kQ)},
       {p.batch, p.channels, out_h, out_w}, dtype},
  };
  return op;
}

std::uint64_t effective_window(std::uint64_t window, std::uint64_t kv_len) {
  return window < kv_len ? window : 0;
}

Op make_attention(std::string name, const AttentionParams& p, DataType dtype) {
  CODA_CHECK(p.batch >= 1 && p.kv_heads >= 1 && p.heads % p.kv_heads == 0 && p.q_len >= 1 &&
             p.kv_len >= 1 && p.head_dim >= 1);
  CODA_CHECK(!p.causal || p.kv_len >= p.q_len);
  CODA_CHECK(p.softcap >= 0);
  CODA_CHECK(p.causal || p.window == 0);
  CODA_CHECK(p.context_parallel == 1 ||
             (p.causal && p.window == 0 && p.kv_len == p.q_len * p.context_parallel));
  const std::uint64_t group = p.heads / p.kv_heads;
  enum : std::size_t { kB, kHk, kG, kQ, kKv, kD, kE };
  Op op;
  op.name = std::move(name);
  op.kind = OpKind::Attention;
  op.attributes = AttentionSpec{.causal = p.causal,
                                .softcap = p.softcap,
                                .window = effective_window(p.window, p.kv_len),
                                .context_parallel = static_cast<std::uint32_t>(p.context_parallel)};
  op.space.dims = {{"b", p.batch}, {"hk", p.kv_heads}, {"g", group},
                   {"q", p.q_len}, {"kv", p.kv_len},   {"d", p.head_dim}};
  const std::uint64_t e = p.values();
  const std::size_t value = e == p.head_dim ? kD : kE;  // the dim V and O run over
  if (value == kE) op.space.dims.push_back({"e", e});
  const IndexExpr head{{{kHk, signed_size(group)}, {kG, 1}}, 0};
  op.space.accesses = {
      {TensorRole::Input,
       "Q",
       {dim_index(kB), head, dim_index(kQ), dim_index(kD)},
       {p.batch, p.heads, p.q_len, p.head_dim},
       dtype},
      {TensorRole::Input,
       "K",
       {dim_index(kB), dim_index(kHk), dim_index(kKv), dim_index(kD)},
       {p.batch, p.kv_heads, p.kv_len, p.head_dim},
       dtype},
      {TensorRole::Input,
       "V",
       {dim_index(kB), dim_index(kHk), dim_index(kKv), dim_index(value)},
       {p.batch, p.kv_heads, p.kv_len, e},
       dtype},
      {TensorRole::Output,
       "O",
       {dim_index(kB), head, dim_index(kQ), dim_index(value)},
       {p.batch, p.heads, p.q_len, e},
       dtype},
  };
  return op;
}

Op make_attention_backward(std::string name, const AttentionParams& p, DataType dtype) {
  Op op = make_attention(std::move(name), p, dtype);
  std::get<AttentionSpec>(op.attributes).backward = true;
  auto& a = op.space.accesses;  // Q, K, V, O
  a[3].role = TensorRole::Input;
  TensorAccess d_out = a[3];
  d_out.tensor = "dO";
  a.push_back(d_out);
  for (std::size_t src = 0; src < 3; ++src) {  // dQ, dK, dV
    TensorAccess grad = a[src];
    grad.role = TensorRole::Output;
    grad.tensor = "d" + grad.tensor;
    a.push_back(std::move(grad));
  }
  return op;
}

AttentionForm attention_form(const Op& op) {
  const auto* spec = std::get_if<AttentionSpec>(&op.attributes);
  const auto& a = op.space.accesses;
  const auto& dims = op.space.dims;
  if (op.kind != OpKind::Attention || spec == nullptr ||
      !(dims.size() == 6 || (dims.size() == 7 && dims[6].name == "e")))
    return AttentionForm::None;
  // Forward: Q, K, V in, O out. Backward: Q, K, V, O, dO in, dQ, dK, dV out.
  const std::size_t inputs = spec->backward ? 5 : 3, outputs = spec->backward ? 3 : 1;
  if (a.size() != inputs + outputs) return AttentionForm::None;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].shape.size() != 4 || a[i].indices.size() != 4 ||
        a[i].role != (i < inputs ? TensorRole::Input : TensorRole::Output))
      return AttentionForm::None;
  return spec->backward ? AttentionForm::Backward : AttentionForm::Forward;
}

Op make_data_movement(std::string name, Function f,
                      std::vector<std::vector<std::uint64_t>> input_shapes,
                      std::vector<std::vector<std::uint64_t>> output_shapes, DataType dtype) {
  CODA_CHECK(!output_shapes.empty());
  Op op;
  op.name = std::move(name);
  op.kind = OpKind::DataMovement;
  op.function = f;
  std::uint64_t elements = 0;
  for (const auto& shape : output_shapes) elements += element_count(shape);
  op.space.dims = {{"elements", std::max<std::uint64_t>(1, elements)}};
  for (std::size_t i = 0; i < input_shapes.size(); ++i)
    op.space.accesses.push_back(
        {TensorRole::Input, fmt::format("in{}", i), {}, std::move(input_shapes[i]), dtype});
  for (std::size_t i = 0; i < output_shapes.size(); ++i)
    op.space.accesses.push_back(
        {TensorRole::Output, fmt::format("out{}", i), {}, std::move(output_shapes[i]), dtype});
  return op;
}

Op make_embedding(std::string name, std::uint64_t vocab, std::uint64_t hidden,
                  std::uint64_t tokens, DataType dtype) {
  CODA_CHECK(vocab >= 1 && hidden >= 1 && tokens >= 1);
  Op op = make_data_movement(std::move(name), Function::Gather, {{tokens}}, {{tokens, hidden}},
                             dtype);
  op.space.accesses[0].tensor = "ids";
  op.space.accesses[0].dtype = DataType::Int32;
  op.space.accesses[1].tensor = "out";
  op.space.accesses.insert(op.space.accesses.begin() + 1,
                           TensorAccess{TensorRole::Weight, "table", {}, {vocab, hidden}, dtype});
  return op;
}

Op make_collective(std::string name, Function f, std::vector<std::uint64_t> shape,
                   std::uint32_t ranks, DataType dtype) {
  CODA_CHECK(ranks >= 1 && !shape.empty());
  std::vector<std::uint64_t> out = shape;
  if (f == Function::ReduceScatter) {
    CODA_CHECK(shape[0] % ranks == 0);
    out[0] = shape[0] / ranks;
  } else if (f == Function::AllGather) {
    out[0] = shape[0] * ranks;
  } else {
    CODA_CHECK(f == Function::AllReduce || f == Function::SendRecv || f == Function::AllToAll);
  }
  Op op = make_data_movement(std::move(name), f, {std::move(shape)}, {std::move(out)}, dtype);
  op.kind = OpKind::Collective;
  op.attributes = CollectiveSpec{ranks};
  return op;
}

Op make_adamw(std::string name, const std::vector<std::uint64_t>& shape, DataType param_dtype,
              DataType grad_dtype, DataType state_dtype, std::optional<DataType> master) {
  Op op;
  op.name = std::move(name);
  op.kind = OpKind::Optimizer;
  op.function = Function::AdamW;
  op.space.dims = shape_dims(shape);
  const auto every = all_axes(shape.size());
  op.space.accesses = {
      master ? axes_access(TensorRole::Weight, "master", shape, every, *master)
             : axes_access(TensorRole::Weight, "param", shape, every, param_dtype),
      axes_access(TensorRole::Input, "grad", shape, every, grad_dtype),
      axes_access(TensorRole::Input, "m", shape, every, state_dtype),
      axes_access(TensorRole::Input, "v", shape, every, state_dtype),
      axes_access(TensorRole::Output, "param_out", shape, every, param_dtype),
      axes_access(TensorRole::Output, "m_out", shape, every, state_dtype),
      axes_access(TensorRole::Output, "v_out", shape, every, state_dtype),
  };
  if (master)
    op.space.accesses.push_back(
        axes_access(TensorRole::Output, "master_out", shape, every, *master));
  return op;
}

}  // namespace coda::workload
