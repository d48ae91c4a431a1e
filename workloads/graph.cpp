#include "workloads/graph.h"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <span>

#include <fmt/format.h>

#include "core/check.h"

namespace coda::workload {

TensorId Graph::add_tensor(Tensor tensor) {
  CODA_CHECK(tensors.size() < std::numeric_limits<std::uint32_t>::max());
  tensors.push_back(std::move(tensor));
  return TensorId{static_cast<std::uint32_t>(tensors.size() - 1)};
}

const Tensor& Graph::tensor(TensorId id) const {
  CODA_CHECK(id.value < tensors.size());
  return tensors[id.value];
}

OpId Graph::add(Op op, std::vector<TensorId> bound) {
  const auto& accesses = op.space.accesses;
  CODA_CHECK(bound.size() <= accesses.size());
  for (std::size_t i = 0; i < bound.size(); ++i) {
    const Tensor& t = tensor(bound[i]);
    CODA_CHECK(t.shape == accesses[i].shape && t.dtype == accesses[i].dtype);
  }
  for (std::size_t i = bound.size(); i < accesses.size(); ++i) {
    const TensorAccess& a = accesses[i];
    bound.push_back(add_tensor({fmt::format("{}.{}", op.name, a.tensor), a.shape, a.dtype,
                                a.role == TensorRole::Weight ? TensorKind::Weight
                                                             : TensorKind::Activation}));
  }
  op.tensors = std::move(bound);
  ops.push_back(std::move(op));
  return OpId{static_cast<std::uint32_t>(ops.size() - 1)};
}

std::uint64_t total_macs(const Graph& graph) {
  std::uint64_t total = 0;
  for (const Op& op : graph.ops) total += mac_count(op);
  return total;
}

std::uint64_t total_flops(const Graph& graph) {
  std::uint64_t total = 0;
  for (const Op& op : graph.ops) total += flop_count(op);
  return total;
}

Bytes total_bytes(const Graph& graph, TensorKind kind) {
  Bytes total;
  for (const Tensor& t : graph.tensors)
    if (t.kind == kind) total += storage_bytes(t);
  return total;
}

std::uint64_t total_elements(const Graph& graph, TensorKind kind) {
  std::uint64_t total = 0;
  for (const Tensor& t : graph.tensors)
    if (t.kind == kind) total += element_count(t.shape);
  return total;
}

namespace {

struct Range {
  std::int64_t min = 0, max = 0;
};

Range index_range(const IndexExpr& index, const std::vector<Dim>& dims) {
  Range r{index.offset, index.offset};
  for (const IndexTerm& term : index.terms) {
    if (term.dim >= dims.size()) continue;  // reported separately
    const auto span = term.coefficient * static_cast<std::int64_t>(dims[term.dim].extent - 1);
    (span >= 0 ? r.max : r.min) += span;
  }
  return r;
}

void verify_op(const Graph& graph, const Op& op, std::vector<std::string>& problems) {
  const auto& accesses = op.space.accesses;
  bool empty_space = false;  // index ranges are meaningless then: not checked
  for (const Dim& d : op.space.dims) {
    if (d.extent != 0) continue;
    empty_space = true;
    problems.push_back(fmt::format("op '{}': dim '{}' has extent 0", op.name, d.name));
  }
  if (op.tensors.size() != accesses.size()) {
    problems.push_back(fmt::format("op '{}': {} accesses but {} bound tensors", op.name,
                                   accesses.size(), op.tensors.size()));
    return;
  }
  for (std::size_t i = 0; i < accesses.size(); ++i) {
    const TensorAccess& a = accesses[i];
    if (op.tensors[i].value >= graph.tensors.size()) {
      problems.push_back(fmt::format("op '{}': access '{}' is bound to tensor #{} of {}", op.name,
                                     a.tensor, op.tensors[i].value, graph.tensors.size()));
      continue;
    }
    const Tensor& t = graph.tensor(op.tensors[i]);
    if (t.shape != a.shape || t.dtype != a.dtype)
      problems.push_back(fmt::format(
          "op '{}': access '{}' is [{}] {} but tensor '{}' is [{}] {}", op.name, a.tensor,
          fmt::join(a.shape, ", "), to_string(a.dtype), t.name, fmt::join(t.shape, ", "),
          to_string(t.dtype)));
    if (a.indices.empty()) continue;
    if (a.indices.size() != a.shape.size()) {
      problems.push_back(fmt::format("op '{}': access '{}' has {} indices for rank {}", op.name,
                                     a.tensor, a.indices.size(), a.shape.size()));
      continue;
    }
    for (std::size_t r = 0; r < a.indices.size(); ++r) {
      for (const IndexTerm& term : a.indices[r].terms)
        if (term.dim >= op.space.dims.size())
          problems.push_back(fmt::format("op '{}': access '{}' uses dim #{} of {}", op.name,
                                         a.tensor, term.dim, op.space.dims.size()));
      const Range range = index_range(a.indices[r], op.space.dims);
      const auto extent = static_cast<std::int64_t>(a.shape[r]);
      const bool inside = range.min >= 0 && range.max < extent;
      const bool overlaps = range.max >= 0 && range.min < extent;
      if (!empty_space && (a.role == TensorRole::Input ? !overlaps : !inside))
        problems.push_back(fmt::format(
            "op '{}': {} '{}' rank {} is indexed over [{}, {}] but has extent {}", op.name,
            to_string(a.role), a.tensor, r, range.min, range.max, extent));
    }
  }
}

}  // namespace

std::vector<std::string> verify(const Graph& graph) {
  std::vector<std::string> problems;
  for (const TensorId output : graph.outputs)
    if (output.value >= graph.tensors.size())
      problems.push_back(fmt::format("graph output is tensor #{} of {}", output.value,
                                     graph.tensors.size()));
  // The op that writes each tensor (not counting in-place updates), and the first reader.
  std::map<std::uint32_t, std::size_t> writer, first_reader;
  for (std::size_t i = 0; i < graph.ops.size(); ++i) {
    const Op& op = graph.ops[i];
    verify_op(graph, op, problems);
    if (op.tensors.size() != op.space.accesses.size()) continue;
    std::vector<std::uint32_t> reads;
    for (std::size_t a = 0; a < op.tensors.size(); ++a)
      if (op.space.accesses[a].role != TensorRole::Output) reads.push_back(op.tensors[a].value);
    for (std::size_t a = 0; a < op.tensors.size(); ++a) {
      const std::uint32_t t = op.tensors[a].value;
      if (op.space.accesses[a].role != TensorRole::Output) {
        first_reader.try_emplace(t, i);
        continue;
      }
      if (std::find(reads.begin(), reads.end(), t) != reads.end()) continue;  // in place
      const auto [it, inserted] = writer.try_emplace(t, i);
      if (!inserted && t < graph.tensors.size())
        problems.push_back(fmt::format("tensor '{}' is written by op '{}' and again by op '{}'",
                                       graph.tensors[t].name, graph.ops[it->second].name,
                                       op.name));
    }
  }
  // A weight or optimizer state holds its value from before the graph (the previous step's):
  // reading it before the op that writes its next value is a step's order (mixed precision's
  // AdamW writes the model's weights from the master copy without reading them).
  const auto carries_state = [&](std::uint32_t t) {
    const TensorKind kind = graph.tensors[t].kind;
    return kind == TensorKind::Weight || kind == TensorKind::OptimizerState;
  };
  for (const auto& [t, w] : writer) {
    const auto r = first_reader.find(t);
    if (r != first_reader.end() && r->second < w && t < graph.tensors.size() &&
        !carries_state(t))
      problems.push_back(fmt::format("tensor '{}' is read by op '{}' before op '{}' writes it",
                                     graph.tensors[t].name, graph.ops[r->second].name,
                                     graph.ops[w].name));
  }
  return problems;
}

namespace {

// The product of `extents`, or nullopt past kMaxWorkloadCount.
std::optional<std::uint64_t> bounded_product(std::span<const std::uint64_t> extents) {
  std::uint64_t product = 1;
  for (const std::uint64_t e : extents)
    if (__builtin_mul_overflow(product, e, &product) || product > kMaxWorkloadCount)
      return std::nullopt;
  return product;
}

std::string times(std::span<const std::uint64_t> extents) {
  std::string text;
  for (const std::uint64_t e : extents) text += (text.empty() ? "" : " x ") + fmt::format("{}", e);
  return text;
}

}  // namespace

std::vector<std::string> size_problems(const Graph& graph) {
  std::vector<std::string> problems;
  for (const Op& op : graph.ops) {
    std::vector<std::uint64_t> extents;
    for (const Dim& d : op.space.dims) extents.push_back(d.extent);
    if (!bounded_product(extents))
      problems.push_back(fmt::format(
          "op '{}': its iteration space ({}) has more than 2^62 points; coda counts MACs, bytes "
          "and cycles in 64 bits: split the op",
          op.name, times(extents)));
  }
  for (const Tensor& t : graph.tensors)
    if (!bounded_product(t.shape))
      problems.push_back(fmt::format(
          "tensor '{}': its shape ({}) has more than 2^62 elements; coda counts bytes in 64 bits",
          t.name, times(t.shape)));
  return problems;
}

}  // namespace coda::workload
