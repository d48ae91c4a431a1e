#pragma once
// coda's graph passes. Each one is a GraphPass (workloads/passes/pass.h): run it through a
// PassPipeline, which verifies the graph after it. docs/workloads.md, "Passes", describes them.

#include <string_view>
#include <vector>

#include "workloads/passes/pass.h"

namespace coda::workload {

// Changes nothing; the pipeline verifies after every pass, so this only makes that explicit.
struct VerifyPass {
  static constexpr std::string_view kName = "verify";
  PassReport run(Graph& graph);
};

// Each Attention op (make_attention's form) becomes three ops, in its place:
//   <name>.qk       contraction S[b][h][q][kv] = sum_d Q[b][h][q][d] * K[b][hk][kv][d]
//   <name>.softmax  normalization, softmax over kv: P = softmax(S)
//   <name>.pv       contraction O[b][h][q][d] = sum_kv P[b][h][q][kv] * V[b][hk][kv][d]
// with h = hk*G + g. The contractions keep the fused op's dims {b, hk, g, q, kv, d}, so
// grouped-query attention needs no copies of K and V: gemm_view batches over b*hk kv heads with
// m = g*q (the G query heads that share a kv head are stacked along m), n = kv (n = d for P V)
// and k = d (k = kv). MACs: b*hk*g*q*kv*d per matmul, 2*b*heads*q*kv*d in all, equal to the fused
// op's mac_count when not causal. Causal: the mask is applied in the softmax, so both matmuls do
// the full q*kv work and the MACs exceed the fused op's; the report says by how much. A
// soft-capped op (AttentionSpec::softcap) gets a fourth, <name>.softcap, an elementwise Tanh
// from S to the capped scores the softmax reads.
// Attention ops not in make_attention's form are left fused, with a note.
struct DecomposeAttention {
  static constexpr std::string_view kName = "decompose-attention";
  PassReport run(Graph& graph);
};

// The attention of imported graphs, as exporters write it, becomes one Attention op (so that it
// can be priced fused, as FlashAttention runs it): a batched matmul S = Q K^T over rank-4 tensors
// (Q [b][h][q][d], K^T [b][h][d][kv]), then any constant scalings (Mul, Div by a scalar) and
// constant masks (Add, or a masked fill imported as Add), a Softmax, and a batched matmul
// O = P V (V [b][h][kv][d]), each intermediate read only by the next op and not a graph result.
// The op is make_attention's (heads = kv heads = h) with K bound as the first matmul reads it,
// [b][h][d][kv]; it takes the second matmul's place and name (<name>.attention), and the
// pattern's ops and the tensors only they used go. A constant mask over the square score matrix
// shared by every batch and head ([q][kv], or with leading 1s; q = kv: the causal mask exporters
// build from the sequence length) makes it causal; other masks (padding, per-head position
// biases) are left out of the price. Scalings before the first matmul (on Q) stay. Rank-3
// patterns (nn.MultiheadAttention's export, batch and heads in one axis [b*h][q][d]) are the
// same op with one head over b*h sequences, between reshapes of Q, K^T and V to rank 4 and of
// the result back (views, no work).
// Softmax ops record no axis, so the pattern assumes the last, as every exporter writes it.
struct FuseAttention {
  static constexpr std::string_view kName = "fuse-attention";
  PassReport run(Graph& graph);
};

// An attention backward op (make_attention_backward's form) as the five ops an unfused backward
// runs, unbound (no tensors): dV = P^T dO, dP = dO V^T, the softmax's backward dS = P (dP -
// rowsum(dP P)), dQ = dS K and dK = dS^T Q, with P the forward's softmax output (saved, not
// recomputed) and P, dP, dS full b x heads x q x kv tensors. The GEMMs cover every query-key
// pair (the mask acts in the softmax), as the forward's decomposition does.
std::vector<Op> decompose_attention_backward(const Op& attn);

// Inference batch norm (make_normalization BatchNorm: y = x * scale[c] + shift[c]) whose input
// is written by a contraction and read by nothing else is folded into that contraction: the
// scale multiplies the filter and the shift becomes a bias the contraction's epilogue adds.
// The batch norm op and its scale, shift and output tensors are removed; readers of its output
// read the contraction's output instead. Folds only when every channel axis of the batch norm
// is indexed, in the contraction's output, by dims that also index its Weight (so each channel
// has its own filter slice: the conv's k and g, a GEMM's n).
struct FoldBatchNorm {
  static constexpr std::string_view kName = "fold-batch-norm";
  PassReport run(Graph& graph);
};

// Removes ops whose work nobody uses. The results are Graph::outputs, or, when that is empty,
// every tensor some op writes and no op reads (so a graph that marks no results keeps every op
// that writes anything). An op is live when it writes a result, writes a tensor that is not an
// Activation (weights updated in place, KV cache, gradients, optimizer state outlive the graph),
// is a Collective (other ranks wait for it), or writes a tensor a live op reads. Every other op
// is dead and removed, with the tensors only dead ops used.
struct DeadOpElimination {
  static constexpr std::string_view kName = "dead-op-elimination";
  PassReport run(Graph& graph);
};

}  // namespace coda::workload
