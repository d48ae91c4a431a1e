#pragma once
// Builders for the common ops. They take already-validated sizes: importers check user input
// and report Diagnostics first; a builder given inconsistent sizes is a bug (CODA_CHECK).
// Each returns a self-contained Op (accesses carry shapes and element types); Graph::add binds
// it to tensors. Access roles name operand positions: for a contraction, Input is the operand
// indexed by m and Weight the one indexed by n, whether or not it is a parameter (that is the
// bound tensor's TensorKind).

#include <cstdint>
#include <optional>
#include <string>

#include <vector>

#include "workloads/data_type.h"
#include "workloads/op.h"

namespace coda::workload {

struct Conv2dParams {
  std::uint64_t batch = 1, in_h = 1, in_w = 1, in_channels = 1, filter_h = 1, filter_w = 1,
                out_channels = 1, stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, groups = 1;
};

// floor((in + 2*pad - filter) / stride) + 1, the usual (PyTorch, ONNX) output size.
// Precondition: in + 2*pad >= filter and stride >= 1.
std::uint64_t conv_output_extent(std::uint64_t in, std::uint64_t filter, std::uint64_t stride,
                                 std::uint64_t pad);

// SCALE-Sim's output size: ceil((in - filter) / stride) + 1, with padding already folded into
// `in`. Differs from conv_output_extent(in, filter, stride, 0) when (in - filter) is not a
// multiple of stride: 224, 7, stride 2 gives 110 here and 109 with floor.
// Precondition: in >= filter and stride >= 1.
std::uint64_t scalesim_output_extent(std::uint64_t in, std::uint64_t filter, std::uint64_t stride);

// A 2-D convolution with an explicit output size (importers choose the size convention).
// Dims, in this order: n (batch), g (groups), k (filters per group), c (channels per group),
// p, q (output rows, columns), r, s (filter rows, columns). Tensors:
//   ifmap  (Input)  [n][g*C + c][p*stride_h + r - pad_h][q*stride_w + s - pad_w]
//   filter (Weight) [g*K + k][c][r][s]
//   ofmap  (Output) [n][g*K + k][p][q]
// where C = in_channels / groups and K = out_channels / groups.
// Preconditions: every size >= 1 (pads >= 0), groups divides in_channels and out_channels.
Op make_conv2d(std::string name, const Conv2dParams& p, std::uint64_t out_h, std::uint64_t out_w,
                DataType dtype = DataType::Int8);

// A[m][k] (Input) * B[k][n] (Weight) -> C[m][n] (Output); dims m, n, k.
Op make_gemm(std::string name, std::uint64_t m, std::uint64_t n, std::uint64_t k,
              DataType dtype = DataType::Int8);

// `batch` independent GEMMs (attention heads): A[b][m][k] * B[b][k][n] -> C[b][m][n];
// dims b, m, n, k. The b dim indexes all three tensors, so gemm_view gives batch = `batch`.
Op make_batched_gemm(std::string name, std::uint64_t batch, std::uint64_t m, std::uint64_t n,
                     std::uint64_t k, DataType dtype = DataType::Int8);

// A further operand of an elementwise op: its role, and which axes of the output shape it spans
// (empty: all of them). A bias over channels of [N, C, H, W] is {Weight, {1}}; a residual is
// {Input, {}}.
struct ElementwiseOperand {
  TensorRole role = TensorRole::Input;
  std::vector<std::size_t> axes;
};

// out[i] = f(in[i], extra...[i restricted to their axes]) over `shape`; dims d0, d1, ...
// `out_dtype` differs from `dtype` for quantize / dequantize.
Op make_elementwise(std::string name, Function f, const std::vector<std::uint64_t>& shape,
                    DataType dtype, const std::vector<ElementwiseOperand>& extra = {},
                    std::optional<DataType> out_dtype = std::nullopt);

// Sum, Mean or Max over `axes` of `shape`; the output drops those axes.
Op make_reduction(std::string name, Function f, const std::vector<std::uint64_t>& shape,
                  const std::vector<std::size_t>& axes, DataType dtype);

// Softmax, LayerNorm, RmsNorm over `axes` (a Weight scale over those axes for the norms), or
// BatchNorm (inference: a per-channel scale and shift, two Weight accesses "scale" and "shift",
// `axes` = {channel axis}). Output shape = input shape.
Op make_normalization(std::string name, Function f, const std::vector<std::uint64_t>& shape,
                      const std::vector<std::size_t>& axes, DataType dtype);

struct Pool2dParams {
  std::uint64_t batch = 1, channels = 1, in_h = 1, in_w = 1, kernel_h = 1, kernel_w = 1,
                stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0;
};
// MaxPool or AvgPool; dims n, c, p, q, r, s; in[n][c][p*sh + r - ph][q*sw + s - pw] -> out[n][c][p][q].
Op make_pool2d(std::string name, Function f, const Pool2dParams& p, std::uint64_t out_h,
               std::uint64_t out_w, DataType dtype);

struct AttentionParams {
  std::uint64_t batch = 1, heads = 1, kv_heads = 1, q_len = 1, kv_len = 1, head_dim = 1;
  bool causal = false;
  double softcap = 0;  // AttentionSpec::softcap: > 0 caps the scores with tanh; 0 none
  std::uint64_t window = 0;  // AttentionSpec::window: causal only; 0 none
  // V's and O's head dim when it differs from Q's and K's (DeepSeek's multi-head latent
  // attention: 192 for Q K^T, 128 for the values); 0: head_dim.
  std::uint64_t value_dim = 0;
  // AttentionSpec::context_parallel: causal, no window, kv_len = q_len x context_parallel.
  std::uint64_t context_parallel = 1;
  std::uint64_t values() const { return value_dim > 0 ? value_dim : head_dim; }
};

// The window an attention over kv_len keys keeps: `window`, or 0 (none) when it covers them
// all, so that an op whose window changes nothing is the op without one.
std::uint64_t effective_window(std::uint64_t window, std::uint64_t kv_len);
// softmax(Q K^T / sqrt(d)) V as one op. heads must be a multiple of kv_heads (MHA: equal, GQA:
// a divisor, MQA: 1). Dims b, hk (kv heads), g (query heads per kv head), q, kv, d, and e (the
// value dim) when p.value_dim differs from head_dim. Its spec's window is
// effective_window(p.window, p.kv_len).
// Q [b][heads][q][d] (Input), K [b][kv_heads][kv][d] and V [b][kv_heads][kv][e] (Input) ->
// O [b][heads][q][e] (e = d without a value dim).
// causal requires kv_len >= q_len (the queries are the last q_len positions).
Op make_attention(std::string name, const AttentionParams& p, DataType dtype);

// The gradient of make_attention's op as one op: make_attention's dims; Q, K, V, O and dO
// (Input; dO shaped as O) -> dQ, dK, dV (Output, shaped as Q, K, V). AttentionSpec::backward.
Op make_attention_backward(std::string name, const AttentionParams& p, DataType dtype);

// Which of the two forms above an op is in (dims b, hk, g, q, kv, d and optionally e; rank-4
// accesses in the order and roles given there; AttentionSpec's `backward` saying which); None for
// any other op.
enum class AttentionForm : std::uint8_t { None, Forward, Backward };
AttentionForm attention_form(const Op& op);

// Reshape, Transpose, Copy, Concat, Split or Gather: inputs and outputs by shape only (no
// element mapping). Dims: one, "elements", the output element count.
Op make_data_movement(std::string name, Function f,
                      std::vector<std::vector<std::uint64_t>> input_shapes,
                      std::vector<std::vector<std::uint64_t>> output_shapes, DataType dtype);

// An embedding lookup: ids [tokens] (int32, Input), table [vocab][hidden] (Weight) ->
// out [tokens][hidden]. A Gather data movement.
Op make_embedding(std::string name, std::uint64_t vocab, std::uint64_t hidden,
                  std::uint64_t tokens, DataType dtype);

// AllReduce (out = in), ReduceScatter (out axis 0 = in axis 0 / ranks), AllGather (out axis 0 =
// in axis 0 * ranks), SendRecv (out = in) or AllToAll (out = in) of a per-rank `shape` among
// `ranks` devices.
// ReduceScatter needs axis 0 divisible by ranks.
Op make_collective(std::string name, Function f, std::vector<std::uint64_t> shape,
                   std::uint32_t ranks, DataType dtype);

// AdamW over a parameter of `shape`: reads param (Weight), grad (Input), m and v (Input, in
// `state_dtype`); writes param, m, v (Outputs; bind them to the same tensors: in place).
// With `master` (mixed precision: the optimizer keeps the weights in that wider type), it reads
// the master copy (the Weight access) instead of param, and writes param (the model's copy, rounded from the
// update), m, v and the master (Outputs "param_out", "m_out", "v_out", "master_out").
Op make_adamw(std::string name, const std::vector<std::uint64_t>& shape, DataType param_dtype,
              DataType grad_dtype, DataType state_dtype,
              std::optional<DataType> master = std::nullopt);

}  // namespace coda::workload
