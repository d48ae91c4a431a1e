#include "mapper/fusion.h"

#include <algorithm>
#include <array>
#include <set>
#include <utility>
#include <variant>

#include <fmt/format.h>

#include "workloads/builders.h"

namespace coda::mapper {
namespace {

using workload::Function;
using workload::Op;
using workload::OpKind;
using workload::TensorId;
using workload::TensorRole;

// The output tile an epilogue or a chain works on where no systolic array sets it: a 128 x 128
// thread-block tile (the middle of the GPU model's candidate tiles, sim/analytical/gpu_model.h).
constexpr std::uint64_t kThreadBlockTileElements = 128ULL * 128;
// FlashAttention block sizes tried, largest first (Dao 2023 uses 64 to 128 on A100 and H100),
// and the bytes of one element of the score tile, which is accumulated in fp32.
constexpr std::array<std::uint64_t, 4> kFlashBlocks{128, 64, 32, 16};
constexpr std::uint64_t kScoreBytes = 4;

struct Touch {
  std::size_t op = 0;
  TensorRole role = TensorRole::Input;
};

class Planner {
 public:
  Planner(const workload::Graph& graph, const arch::HardwareModel& hw, FusionMode mode)
      : graph_(graph), hw_(hw), mode_(mode), touches_(graph.tensors.size()) {
    for (std::size_t i = 0; i < graph.ops.size(); ++i) {
      const Op& op = graph.ops[i];
      if (!is_bound(op)) continue;
      for (std::size_t a = 0; a < op.tensors.size(); ++a)
        if (op.tensors[a].value < touches_.size())
          touches_[op.tensors[a].value].push_back({i, op.space.accesses[a].role});
    }
    for (const TensorId t : graph.outputs) results_.insert(t.value);
    systolic_ = hw.matrix_unit() && hw.matrix_unit()->kind == arch::UnitKind::Systolic;
    for (const arch::MemoryLevelSpec& level : hw.spec().memory) {
      const std::uint64_t bytes = level.capacity.value * level.instances;
      if (level.scope == arch::Scope::Core) core_capacity_ += bytes;
    }
    if (core_capacity_ == 0)
      for (const arch::MemoryLevelSpec& level : hw.spec().memory)
        core_capacity_ += level.capacity.value * level.instances / std::max(1u, hw.cores());
  }

  FusionPlan run() {
    FusionPlan plan;
    plan.mode = mode_;
    if (mode_ == FusionMode::None) return plan;
    const std::size_t n = graph_.ops.size();
    std::size_t i = 0;
    while (i < n) {
      const Op& op = graph_.ops[i];
      if (op.kind == OpKind::Attention) {
        plan_attention(i, plan);
        ++i;
      } else if (op.kind == OpKind::Contraction && is_bound(op)) {
        i = plan_contraction(i, plan);
      } else if (mode_ == FusionMode::All && is_chain_op(op) && is_bound(op)) {
        FusionGroup group{.kind = FusionKind::ElementwiseChain, .ops = {i}};
        const std::size_t end = extend(group, plan, true);
        if (group.ops.size() >= 2) add(std::move(group), plan);
        i = end;
      } else {
        ++i;
      }
    }
    return plan;
  }

 private:
  static bool is_chain_op(const Op& op) {
    return op.kind == OpKind::Elementwise || op.kind == OpKind::Normalization;
  }
  // A bias add: an elementwise Add of a weight broadcast over the rows (F.linear's and addmm's
  // bias, which cuBLASLt adds in the GEMM's epilogue).
  static bool is_bias_add(const Op& op) {
    if (op.kind != OpKind::Elementwise || op.function != Function::Add) return false;
    return std::any_of(
        op.space.accesses.begin(), op.space.accesses.end(),
        [](const workload::TensorAccess& a) { return a.role == TensorRole::Weight; });
  }
  // An epilogue follower: an elementwise op or an inference batch norm (a per-channel scale and
  // shift, elementwise on the contraction's output tile).
  static bool is_epilogue_op(const Op& op) {
    return op.kind == OpKind::Elementwise ||
           (op.kind == OpKind::Normalization && op.function == Function::BatchNorm);
  }

  const std::string& name(std::size_t op) const { return graph_.ops[op].name; }
  const workload::Tensor& tensor(TensorId t) const { return graph_.tensor(t); }
  Bytes bytes(TensorId t) const { return workload::storage_bytes(tensor(t)); }

  static void add(FusionGroup group, FusionPlan& plan) {
    group.dram_bytes_saved = Bytes{2 * group.intermediate_bytes.value};
    plan.groups.push_back(std::move(group));
  }

  // The tensor `prev` writes and `next` reads, if any.
  std::optional<TensorId> chain_tensor(std::size_t prev, std::size_t next) const {
    const Op& p = graph_.ops[prev];
    const Op& q = graph_.ops[next];
    if (!is_bound(p) || !is_bound(q)) return std::nullopt;
    for (std::size_t a = 0; a < p.tensors.size(); ++a) {
      if (p.space.accesses[a].role != TensorRole::Output) continue;
      for (std::size_t b = 0; b < q.tensors.size(); ++b)
        if (q.space.accesses[b].role != TensorRole::Output && q.tensors[b] == p.tensors[a])
          return p.tensors[a];
    }
    return std::nullopt;
  }

  // Why `t`, written by `producer` and read by `consumer`, cannot stay on chip; nullopt if it can.
  std::optional<std::string> not_intermediate(TensorId t, std::size_t producer,
                                              std::size_t consumer) const {
    const workload::Tensor& tt = tensor(t);
    if (tt.kind != workload::TensorKind::Activation)
      return fmt::format("'{}' is a {} tensor, which lives in DRAM", tt.name,
                         workload::to_string(tt.kind));
    if (results_.contains(t.value)) return fmt::format("'{}' is a result of the graph", tt.name);
    for (const Touch& touch : touches_[t.value]) {
      if (touch.op == producer && touch.role == TensorRole::Output) continue;
      if (touch.op == consumer && touch.role != TensorRole::Output) continue;
      return fmt::format("'{}' is also {} by '{}'", tt.name,
                         touch.role == TensorRole::Output ? "written" : "read", name(touch.op));
    }
    return std::nullopt;
  }

  // Why `op` runs as a kernel of its own although it reads a fusable tile, if it does: it
  // writes a weight, a gradient, optimizer state or the KV cache (autograd's AccumulateGrad
  // after a weight-gradient GEMM, a cache write: separate kernels in the frameworks coda
  // models); nullopt if it writes activations only.
  std::optional<std::string> writes_persistent(const Op& op) const {
    for (std::size_t a = 0; a < op.tensors.size() && a < op.space.accesses.size(); ++a) {
      if (op.space.accesses[a].role != TensorRole::Output) continue;
      const workload::Tensor& out = tensor(op.tensors[a]);
      if (out.kind != workload::TensorKind::Activation)
        return fmt::format("'{}' writes '{}', a {} tensor: a kernel of its own", op.name,
                           out.name, workload::to_string(out.kind));
    }
    return std::nullopt;
  }

  // The tile of `t` an epilogue or chain holds at once when `consumer` reads it.
  Bytes tile_bytes(TensorId t, const Op& consumer) const {
    const workload::Tensor& tt = tensor(t);
    std::uint64_t elements = systolic_ ? hw_.rows() * hw_.cols() : kThreadBlockTileElements;
    if (consumer.kind == OpKind::Normalization && consumer.function != Function::BatchNorm &&
        !tt.shape.empty())
      elements = std::max(elements, tt.shape.back());  // a whole row of the reduction
    elements = std::min(elements, workload::element_count(tt.shape));
    return workload::storage_bytes(std::vector<std::uint64_t>{elements}, tt.dtype);
  }

  FusionKind kind_of(const std::vector<std::size_t>& ops, bool chain) const {
    if (chain) return FusionKind::ElementwiseChain;
    for (const std::size_t i : ops)
      if (graph_.ops[i].function == Function::BatchNorm) return FusionKind::ConvBnRelu;
    return FusionKind::Epilogue;
  }

  void reject(FusionKind kind, std::vector<std::size_t> ops, std::string reason,
              FusionPlan& plan) const {
    plan.rejected.push_back({kind, std::move(ops), std::move(reason)});
  }

  // Extends `group` over the followers of its last op (epilogue ops, or with `chain` any
  // elementwise or normalization op) while each reads the previous op's output and that output
  // can stay on chip. Returns one past the group's last op; sets the group's kind.
  std::size_t extend(FusionGroup& group, FusionPlan& plan, bool chain) const {
    std::size_t j = group.ops.back() + 1;
    for (; j < graph_.ops.size(); ++j) {
      const Op& next = graph_.ops[j];
      if (!(chain ? is_chain_op(next) : is_epilogue_op(next))) break;
      // Eager PyTorch: a GEMM's epilogue holds its bias and nothing more.
      if (mode_ == FusionMode::Eager && (group.ops.size() > 1 || !is_bias_add(next))) break;
      const auto t = chain_tensor(j - 1, j);
      if (!t) break;  // does not consume the previous op's output: not a candidate
      std::vector<std::size_t> candidate = group.ops;
      candidate.push_back(j);
      const FusionKind kind = kind_of(candidate, chain);
      if (!hw_.vector_unit()) {
        reject(kind, std::move(candidate),
               fmt::format("'{}' has no vector unit to run '{}' on the tile of '{}'", hw_.name(),
                           next.name, tensor(*t).name),
               plan);
        break;
      }
      if (auto why = not_intermediate(*t, j - 1, j)) {
        reject(kind, std::move(candidate), std::move(*why), plan);
        break;
      }
      if (auto why = writes_persistent(next)) {
        reject(kind, std::move(candidate), std::move(*why), plan);
        break;
      }
      const std::uint64_t elements = workload::element_count(tensor(*t).shape);
      if (workload::iteration_points(next) != elements) {
        reject(kind, std::move(candidate),
               fmt::format("'{}' reads '{}' broadcast ({} points over {} elements)", next.name,
                           tensor(*t).name, workload::iteration_points(next), elements),
               plan);
        break;
      }
      const Bytes need = std::max(group.on_chip_bytes, tile_bytes(*t, next));
      if (need.value > core_capacity_) {
        reject(kind, std::move(candidate),
               fmt::format("a tile of '{}' needs {} on chip; a core of '{}' has {}",
                           tensor(*t).name, to_string(need), hw_.name(),
                           to_string(Bytes{core_capacity_})),
               plan);
        break;
      }
      group.ops.push_back(j);
      group.intermediates.push_back(*t);
      group.intermediate_bytes += bytes(*t);
      group.on_chip_bytes = need;
      group.on_chip_capacity = Bytes{core_capacity_};
    }
    group.kind = kind_of(group.ops, chain);
    return j;
  }

  // A contraction with its epilogue. Returns the index after the ops it grouped.
  std::size_t plan_contraction(std::size_t i, FusionPlan& plan) const {
    FusionGroup group{.kind = FusionKind::Epilogue, .ops = {i}};
    const std::size_t end = extend(group, plan, false);
    if (group.ops.size() >= 2) add(std::move(group), plan);
    return end;
  }

  // The attention output O when op i + 1 is a transpose of it (the heads' merge: same elements,
  // other layout); nullopt otherwise. Other readers of O do not matter: the kernel writes O in
  // the merged layout for all of them.
  std::optional<TensorId> merged_heads(std::size_t i) const {
    if (i + 1 >= graph_.ops.size()) return std::nullopt;
    const Op& next = graph_.ops[i + 1];
    if (next.kind != OpKind::DataMovement || next.function != Function::Transpose ||
        !is_bound(next) || next.tensors.size() != 2)
      return std::nullopt;
    const auto o = chain_tensor(i, i + 1);
    if (!o || workload::element_count(tensor(*o).shape) !=
                  workload::element_count(tensor(next.tensors[1]).shape))
      return std::nullopt;
    return o;
  }

  void plan_attention(std::size_t i, FusionPlan& plan) const {
    const Op& op = graph_.ops[i];
    if (!hw_.matrix_unit() || !hw_.vector_unit()) {
      reject(FusionKind::Attention, {i},
             fmt::format("'{}' has no {}", hw_.name(),
                         hw_.matrix_unit() ? "vector unit for the softmax"
                                           : "matrix unit for Q K^T and P V"),
             plan);
      return;
    }
    const workload::AttentionForm form = workload::attention_form(op);
    if (form == workload::AttentionForm::None) {
      reject(FusionKind::Attention, {i},
             fmt::format("'{}' is not in make_attention's form (dims b, hk, g, q, kv, d; Q, K, "
                         "V, O) nor make_attention_backward's",
                         op.name),
             plan);
      return;
    }
    const bool backward = form == workload::AttentionForm::Backward;
    const auto& dims = op.space.dims;
    const workload::TensorAccess& q_access = op.space.accesses[0];
    const std::uint64_t b = dims[0].extent, heads = q_access.shape[1], q = dims[3].extent,
                        kv = dims[4].extent, d = dims[5].extent,
                        e = workload::attention_value_dim(op);
    // S and P of the decomposed form: b x heads x q x kv each, in Q's type (the mask is applied
    // in the softmax there, so a causal op's S and P are full size too).
    const Bytes s_bytes =
        workload::storage_bytes(std::vector<std::uint64_t>{b * heads * q * kv}, q_access.dtype);
    const auto elements = [&](std::uint64_t n) {
      return workload::storage_bytes(std::vector<std::uint64_t>{n}, q_access.dtype).value;
    };
    for (const std::uint64_t block : kFlashBlocks) {
      const std::uint64_t br = std::min(block, q), bc = std::min(block, kv);
      // Forward (FlashAttention-2, Algorithm 1): a Q block and a K and a V block (d and e
      // wide), and the score tile. Backward (Algorithm 2): a K and a V block with their dK and
      // dV accumulators (fp32), a Q, dO and dQ block, and two score tiles (P and dS).
      const Bytes need{backward ? 2 * br * bc * kScoreBytes +
                                      elements(2 * br * d + br * e + bc * (d + e)) +
                                      bc * (d + e) * kScoreBytes
                                : br * bc * kScoreBytes + elements((br + bc) * d + bc * e)};
      if (need.value > core_capacity_) continue;
      FusionGroup group{.kind = FusionKind::Attention, .ops = {i}};
      // Forward: S and P stay on chip. Backward: P, dP and dS (decompose_attention_backward's).
      group.intermediate_bytes = Bytes{(backward ? 3 : 2) * s_bytes.value};
      // The heads' merge that follows (O from b x heads x q x d to tokens x heads*d): a
      // FlashAttention kernel writes O already merged (its output layout is b x q x heads x d),
      // so the transpose is no kernel and no copy; its read and write of O are saved.
      if (const auto merge = backward ? std::nullopt : merged_heads(i)) {
        group.ops.push_back(i + 1);
        group.intermediate_bytes += bytes(*merge);
      }
      group.on_chip_bytes = need;
      group.on_chip_capacity = Bytes{core_capacity_};
      group.flash_block = block;
      add(std::move(group), plan);
      // Unfused, the backward reads P twice (dV, the softmax's backward), writes and reads dP,
      // writes dS and reads it twice (dQ, dK): 7 score tensors' bytes, not 2 x 3.
      if (backward) plan.groups.back().dram_bytes_saved = Bytes{7 * s_bytes.value};
      return;
    }
    reject(FusionKind::Attention, {i},
           fmt::format("even a {} x {} FlashAttention block of '{}' does not fit the {} of a core "
                       "of '{}'",
                       kFlashBlocks.back(), kFlashBlocks.back(), op.name,
                       to_string(Bytes{core_capacity_}), hw_.name()),
           plan);
  }

  const workload::Graph& graph_;
  const arch::HardwareModel& hw_;
  FusionMode mode_;
  std::vector<std::vector<Touch>> touches_;  // by tensor id
  std::set<std::uint32_t> results_;
  bool systolic_ = false;
  std::uint64_t core_capacity_ = 0;  // one core's on-chip bytes
};

}  // namespace

std::string_view to_string(FusionKind kind) {
  switch (kind) {
    case FusionKind::Epilogue: return "epilogue";
    case FusionKind::ConvBnRelu: return "conv_bn_relu";
    case FusionKind::ElementwiseChain: return "elementwise_chain";
    case FusionKind::Attention: return "attention";
  }
  return "?";
}

Bytes total_dram_bytes_saved(const FusionPlan& plan) {
  Bytes total;
  for (const FusionGroup& group : plan.groups) total += group.dram_bytes_saved;
  return total;
}

FusionPlan plan_fusion(const workload::Graph& graph, const arch::HardwareModel& hw,
                       FusionMode mode) {
  return Planner(graph, hw, mode).run();
}

bool is_bound(const Op& op) {
  return !op.tensors.empty() && op.tensors.size() == op.space.accesses.size();
}

}  // namespace coda::mapper
