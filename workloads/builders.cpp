#include "workloads/builders.h"

#include <cstdint>
#include <limits>
#include <utility>

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

Op make_conv2d(std::string name, const Conv2dParams& p, std::uint64_t out_h, std::uint64_t out_w) {
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
      {TensorRole::Input, "ifmap", {dim_index(kN), in_channel, in_row, in_col}},
      {TensorRole::Weight, "filter", {out_channel, dim_index(kC), dim_index(kR), dim_index(kS)}},
      {TensorRole::Output, "ofmap", {dim_index(kN), out_channel, dim_index(kP), dim_index(kQ)}},
  };
  return op;
}

Op make_gemm(std::string name, std::uint64_t m, std::uint64_t n, std::uint64_t k) {
  CODA_CHECK(m >= 1 && n >= 1 && k >= 1);
  enum : std::size_t { kM, kN, kK };
  Op op;
  op.name = std::move(name);
  op.kind = OpKind::Contraction;
  op.space.dims = {{"m", m}, {"n", n}, {"k", k}};
  op.space.accesses = {
      {TensorRole::Input, "A", {dim_index(kM), dim_index(kK)}},
      {TensorRole::Weight, "B", {dim_index(kK), dim_index(kN)}},
      {TensorRole::Output, "C", {dim_index(kM), dim_index(kN)}},
  };
  return op;
}

Op make_batched_gemm(std::string name, std::uint64_t batch, std::uint64_t m, std::uint64_t n,
                     std::uint64_t k) {
  CODA_CHECK(batch >= 1 && m >= 1 && n >= 1 && k >= 1);
  enum : std::size_t { kB, kM, kN, kK };
  Op op;
  op.name = std::move(name);
  op.kind = OpKind::Contraction;
  op.space.dims = {{"b", batch}, {"m", m}, {"n", n}, {"k", k}};
  op.space.accesses = {
      {TensorRole::Input, "A", {dim_index(kB), dim_index(kM), dim_index(kK)}},
      {TensorRole::Weight, "B", {dim_index(kB), dim_index(kK), dim_index(kN)}},
      {TensorRole::Output, "C", {dim_index(kB), dim_index(kM), dim_index(kN)}},
  };
  return op;
}

}  // namespace coda::workload
