#pragma once
// An operator of the workload IR: an iteration space (named dims with extents) and, for each
// tensor it touches, one affine index expression per tensor rank. A GEMM, a convolution, a
// pooling window, an attention head and an elementwise add all have this one form, so nothing
// downstream switches on an op's name; `kind` says how the points of the space combine and
// `function` which arithmetic each point does (what a vector unit's per-op throughput prices).
//
//   GEMM      dims {m, n, k}:  A[m][k] (Input) * B[k][n] (Weight) -> C[m][n] (Output)
//   Conv2d    dims {n, g, k, c, p, q, r, s}: see make_conv2d in workloads/builders.h
//   Attention dims {b, hk, g, q, kv, d}: Q[b][hk*G+g][q][d], K/V[b][hk][kv][d] -> O[b][hk*G+g][q][d]
//
// An op is self-contained: its accesses carry each tensor's shape and element type, so the
// mapper can price it alone. `tensors` binds the accesses to a Graph's tensors (the dataflow).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/diagnostics.h"
#include "workloads/data_type.h"
#include "workloads/tensor.h"

namespace coda::workload {

enum class OpKind : std::uint8_t {
  Contraction,    // sum over the reduction dims of products (GEMM, conv)
  Elementwise,    // one output point per input point (activations, add, bias, quantize)
  Reduction,      // reduces some dims (sum, mean, max over an axis)
  Normalization,  // a reduction and an elementwise pass over the same data (softmax, norms)
  Pooling,        // a window reduction (max or average pooling)
  Attention,      // softmax(Q K^T / sqrt(d)) V as one op, with an optional causal mask
  DataMovement,   // copies without arithmetic (reshape, transpose, concat, split, gather)
  Collective,     // communication among ranks (all-reduce, reduce-scatter, all-gather, send/recv)
  Optimizer,      // a parameter update (AdamW)
};

enum class Function : std::uint8_t {
  None,  // contractions and attention: the kind says it all
  Add,
  Sub,
  Mul,
  Div,
  Relu,
  Gelu,
  Silu,
  Sigmoid,
  Tanh,
  Exp,
  Quantize,
  Dequantize,
  Sum,
  Mean,
  Max,
  Softmax,
  LayerNorm,
  RmsNorm,
  BatchNorm,
  MaxPool,
  AvgPool,
  Copy,
  Reshape,
  Transpose,
  Concat,
  Split,
  Gather,
  AllReduce,
  ReduceScatter,
  AllGather,
  SendRecv,
  // Every rank sends 1/ranks of its buffer to each rank (MoE expert parallelism's token
  // exchange); the output is the same shape as the input.
  AllToAll,
  AdamW,
  // Unary math kernels of eager PyTorch code (workloads/llm: the Hugging Face decomposition):
  // -x, x^2 (pow(x, 2), the only power builders emit), 1/sqrt(x), cos x, sin x.
  Neg,
  Pow,
  Rsqrt,
  Cos,
  Sin,
};

std::string_view to_string(OpKind kind);      // "contraction", ...
std::string_view to_string(Function function);  // "add", "softmax", "all_reduce", ...
std::optional<OpKind> parse_op_kind(std::string_view text);
std::optional<Function> parse_function(std::string_view text);

enum class TensorRole : std::uint8_t { Input, Weight, Output };
std::string_view to_string(TensorRole role);  // "input", "weight", "output"

struct Dim {
  std::string name;
  std::uint64_t extent = 1;
  friend bool operator==(const Dim&, const Dim&) = default;
};

// One term of an affine index: coefficient * dims[dim].
struct IndexTerm {
  std::size_t dim = 0;  // index into Einsum::dims
  std::int64_t coefficient = 1;
  friend bool operator==(const IndexTerm&, const IndexTerm&) = default;
};

// sum(coefficient * dim) + offset. A conv's input row is p*stride + r - pad: terms {p: stride,
// r: 1}, offset -pad. An offset can point outside the tensor (padding reads zeros).
struct IndexExpr {
  std::vector<IndexTerm> terms;
  std::int64_t offset = 0;
  friend bool operator==(const IndexExpr&, const IndexExpr&) = default;
};

struct TensorAccess {
  TensorRole role = TensorRole::Input;
  std::string tensor;               // name local to the op: "A", "ifmap", ...
  // One per tensor rank, outermost first. Empty for data movement and collectives, whose
  // element mapping is not affine (concat, gather): only their shapes matter.
  std::vector<IndexExpr> indices;
  std::vector<std::uint64_t> shape;  // the tensor's shape
  DataType dtype = DataType::Int8;
  friend bool operator==(const TensorAccess&, const TensorAccess&) = default;
};

struct Einsum {
  std::vector<Dim> dims;
  std::vector<TensorAccess> accesses;
  friend bool operator==(const Einsum&, const Einsum&) = default;
};

struct AttentionSpec {
  bool causal = false;  // query i attends to the first (kv - q + i + 1) keys
  // The backward pass (make_attention_backward): dQ, dK, dV from Q, K, V, O and dO.
  bool backward = false;
  // Logit soft-capping (Gemma 2's attn_logit_softcapping): S = cap x tanh(S / cap) before the
  // softmax; 0: none. The cost does not depend on the cap's value, only on whether there is one.
  double softcap = 0;
  // Sliding-window attention (Mistral, Gemma 2's local layers): with `causal`, query i attends to
  // at most the last `window` keys up to its position; 0: no window. A kernel that knows the
  // window (FlashAttention's window_size) skips the keys outside it.
  std::uint64_t window = 0;
  // Context parallelism (Megatron-LM and Transformer Engine, causal only): the queries are one
  // rank's share of a sequence of `kv` positions split over this many ranks, in load-balanced
  // chunks (a rank holds chunks i and 2 x ranks - 1 - i of 2 x ranks), and the keys the whole
  // sequence: the rank keeps the sequence's causal pairs / ranks. 1: none.
  std::uint32_t context_parallel = 1;
  friend bool operator==(const AttentionSpec&, const AttentionSpec&) = default;
};

struct CollectiveSpec {
  std::uint32_t ranks = 1;  // devices taking part
  friend bool operator==(const CollectiveSpec&, const CollectiveSpec&) = default;
};

using OpAttributes = std::variant<std::monostate, AttentionSpec, CollectiveSpec>;

struct Op {
  std::string name;  // for humans and reports; never used for dispatch
  OpKind kind = OpKind::Contraction;
  Function function = Function::None;
  Einsum space;
  OpAttributes attributes;
  std::vector<TensorId> tensors;  // Graph tensor of each access, same order; empty when unbound
  SourceLocation source;  // where the op was declared (file:line:col), empty for built ops
  friend bool operator==(const Op&, const Op&) = default;
};

// The query-key pairs one head keeps: q x kv; causal (the queries the last q of the kv
// positions): q*kv - q*(q-1)/2; with a window W as well, query i at position p = kv - q + i keeps
// min(p + 1, W). Precondition: kv >= q when causal; window 0 (none) unless causal.
std::uint64_t attention_kept_pairs(std::uint64_t q, std::uint64_t kv, bool causal,
                                   std::uint64_t window);
// The pairs one head of an attention with `spec` keeps over q queries and kv keys: the above, or
// under context parallelism the causal pairs of kv positions over the ranks.
std::uint64_t attention_kept_pairs(std::uint64_t q, std::uint64_t kv, const AttentionSpec& spec);

// An attention op's value head dim: its dim "e" (make_attention's 7th, when V and O have a head
// dim of their own: DeepSeek's multi-head latent attention), else d, the query-key head dim.
std::uint64_t attention_value_dim(const Op& op);

// Multiply-accumulates: the iteration-space size of a Contraction; for Attention the points of
// Q K^T (d per kept pair) and of P V (the value dim per kept pair) that the mask keeps
// (attention_kept_pairs per head); 0 for every other kind.
std::uint64_t mac_count(const Op& op);

// Points of the op's iteration space (the product of its dims' extents): a contraction's MACs,
// an elementwise op's output points, a reduction's input points.
std::uint64_t iteration_points(const Op& op);

// Arithmetic operations: 2 per MAC, plus for other kinds points x the per-element cost of the
// function (docs/workloads.md, "FLOPs"). Data movement and collectives do none.
std::uint64_t flop_count(const Op& op);

// Bytes of the part of every tensor the op touches (the bounding box of its index ranges,
// clipped to the tensor; the whole tensor for accesses without indices), each once: the
// compulsory traffic of running it alone. A decode step's KV-cache append touches one slot.
Bytes tensor_bytes(const Op& op);
Bytes tensor_bytes(const Op& op, TensorRole role);
// One access's part of that: the bounding box of its index ranges over `dims`.
Bytes touched_bytes(const TensorAccess& access, const std::vector<Dim>& dims);

// Whether `access` is an Input that reads an output as the output indexes it (C += A B: the
// accumulator that accumulate-into-output ops read, beta = 1; every weight gradient of a
// training step with gradient accumulation). It is no operand of the contraction's loops: it is
// read once per output tile, where the tile's sums start.
bool is_accumulator(const Einsum& space, const TensorAccess& access);

// Whether some index expression of some access with `role` uses dims[dim] with a non-zero
// coefficient. An Input that reads an output at the output's own indices (the accumulator of an
// op that adds into its output, C += A B) does not count: it is no operand of the loops.
bool dim_indexes_role(const Einsum& space, std::size_t dim, TensorRole role);

// The op seen as a batch of independent GEMMs, derived only from which tensors each dim indexes
// (never from the op's name):
//   indexes Output, Input and Weight         -> batch (e.g. conv groups, attention heads)
//   indexes Output and Input, not Weight     -> m
//   indexes Output and Weight, not Input     -> n
//   does not index Output                    -> k (a reduction)
//   indexes Output only                      -> batch (independent copies, no reuse)
// Extents of dims in the same class multiply. Conv: batch = groups, m = N*P*Q,
// n = filters per group, k = channels per group * R * S. Meaningful for contractions.
struct GemmView {
  std::uint64_t batch = 1, m = 1, n = 1, k = 1;
  friend bool operator==(const GemmView&, const GemmView&) = default;
};
GemmView gemm_view(const Op& op);

}  // namespace coda::workload
