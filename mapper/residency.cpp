#include "mapper/residency.h"

#include <algorithm>
#include <array>
#include <utility>

#include <fmt/format.h>

#include "core/check.h"

namespace coda::mapper {
namespace {

using workload::Op;
using workload::TensorId;
using workload::TensorKind;
using workload::TensorRole;

constexpr std::size_t kNone = static_cast<std::size_t>(-1);

// TensorRole is declared Input, Weight, Output (workloads/op.h): the ifmap, filter, ofmap order.
std::size_t role_index(TensorRole role) { return static_cast<std::size_t>(role); }

// The bytes of access `a` of `op`, as workload::tensor_bytes counts them (the part it touches).
std::uint64_t access_bytes(const Op& op, std::size_t a) {
  Op probe;
  probe.space.dims = op.space.dims;
  probe.space.accesses = {op.space.accesses[a]};
  return workload::tensor_bytes(probe).value;
}

// A reshape is a view: it reads and writes nothing (the schedule prices it free).
bool moves_nothing(const Op& op) { return op.function == workload::Function::Reshape; }

std::string article(std::string_view word) {
  return fmt::format("{} {}", word.find_first_of("aeiou") == 0 ? "an" : "a", word);
}

class Planner {
 public:
  Planner(const workload::Graph& graph, const arch::HardwareModel& hw, const FusionPlan& fusion,
          std::span<const OpTraits> traits)
      : graph_(graph),
        hw_(hw),
        traits_(traits),
        tile_(graph.tensors.size(), false),
        resident_(graph.tensors.size(), false),
        producer_(graph.tensors.size(), kNone),
        readers_(graph.tensors.size()),
        writers_(graph.tensors.size()),
        occupied_(graph.ops.size(), 0),
        access_bytes_(graph.ops.size()) {
    CODA_CHECK(traits.size() == graph.ops.size());
    for (const FusionGroup& group : fusion.groups)
      for (const TensorId t : group.intermediates)
        if (t.value < tile_.size()) tile_[t.value] = true;
    for (const TensorId t : graph.outputs)
      if (t.value < graph.tensors.size()) results_.push_back(t.value);
    for (std::size_t i = 0; i < graph.ops.size(); ++i) {
      const Op& op = graph.ops[i];
      for (std::size_t a = 0; a < op.space.accesses.size(); ++a)
        access_bytes_[i].push_back(access_bytes(op, a));
      if (!is_bound(op)) continue;
      for (std::size_t a = 0; a < op.tensors.size(); ++a) {
        const std::uint32_t t = op.tensors[a].value;
        if (t >= graph.tensors.size()) continue;
        if (op.space.accesses[a].role == TensorRole::Output) {
          if (producer_[t] == kNone) producer_[t] = i;
          if (writers_[t].empty() || writers_[t].back() != i) writers_[t].push_back(i);
        } else if (readers_[t].empty() || readers_[t].back() != i) {
          readers_[t].push_back(i);
        }
      }
    }
    // Graph::outputs empty: every tensor some op writes and no op reads is a result.
    if (graph.outputs.empty())
      for (std::uint32_t t = 0; t < graph.tensors.size(); ++t)
        if (producer_[t] != kNone && readers_[t].empty()) results_.push_back(t);
    std::sort(results_.begin(), results_.end());

    // The pool, and which roles' buffers are in it.
    const auto& memory = hw.spec().memory;
    std::vector<bool> in_pool(memory.size(), false);
    for (std::size_t l = 0; l < memory.size(); ++l) {
      const arch::MemoryLevelSpec& level = memory[l];
      if ((level.holds & arch::bits(arch::Holds::Inputs)) == 0 && !level.caches_weights) continue;
      in_pool[l] = true;
      pool_ += level.capacity.value * arch::instances_on_chip(level, hw.cores());
    }
    constexpr std::array<arch::Operand, 3> kOperands{arch::Operand::Ifmap, arch::Operand::Filter,
                                                      arch::Operand::Ofmap};
    for (std::size_t r = 0; r < 3; ++r) {
      const arch::MemoryLevelSpec* level = hw.operand_level(kOperands[r]);
      if (level == nullptr) continue;
      const auto index = static_cast<std::size_t>(level - memory.data());
      if (index < in_pool.size() && in_pool[index])
        share_[r] = hw.sram_bytes(kOperands[r]) * hw.arrays();
    }
  }

  ResidencyPlan run(bool activations) {
    ResidencyPlan plan;
    plan.pool = Bytes{pool_};
    plan.activations = activations;
    plan_weights(plan);
    if (!activations && !plan.weights) return {};  // nothing was planned
    if (activations) plan_activations(plan);
    return plan;
  }

 private:
  const std::string& tensor_name(std::uint32_t t) const { return graph_.tensors[t].name; }
  std::uint64_t bytes(std::uint32_t t) const {
    return workload::storage_bytes(graph_.tensors[t]).value;
  }
  bool is_result(std::uint32_t t) const {
    return std::binary_search(results_.begin(), results_.end(), t);
  }

  // Op j's buffers for the operands it does not find resident (see the header), with `extra`
  // counted as resident too.
  std::uint64_t need(std::size_t j, std::uint32_t extra = kNoTensor) const {
    const Op& op = graph_.ops[j];
    if (!traits_[j].runs || moves_nothing(op)) return 0;
    const bool bound = is_bound(op);
    std::uint64_t total = 0;
    for (std::size_t a = 0; a < op.space.accesses.size(); ++a) {
      if (bound) {
        const std::uint32_t t = op.tensors[a].value;
        if (t < resident_.size() && (resident_[t] || tile_[t] || t == extra)) continue;
      }
      total += std::min(access_bytes_[j][a], share_[role_index(op.space.accesses[a].role)]);
    }
    return total;
  }

  void plan_weights(ResidencyPlan& plan) {
    WeightCache cache;
    std::uint64_t capacity = 0;
    for (const arch::MemoryLevelSpec& level : hw_.spec().memory) {
      if (!level.caches_weights) continue;
      cache.levels.push_back(level.name);
      capacity += level.capacity.value * arch::instances_on_chip(level, hw_.cores());
    }
    if (cache.levels.empty()) return;
    std::uint64_t reserve = 0;
    for (std::size_t j = 0; j < graph_.ops.size(); ++j) reserve = std::max(reserve, need(j));
    const std::uint64_t budget = std::min(capacity, pool_ - std::min(pool_, reserve));
    cache.capacity = Bytes{capacity};
    cache.reserve = Bytes{reserve};
    cache.budget = Bytes{budget};

    std::vector<bool> seen(graph_.tensors.size(), false);
    bool full = false;
    std::uint64_t used = 0;
    for (const Op& op : graph_.ops) {
      if (!is_bound(op)) continue;
      for (const TensorId id : op.tensors) {
        const std::uint32_t t = id.value;
        if (t >= seen.size() || seen[t] || graph_.tensors[t].kind != TensorKind::Weight) continue;
        seen[t] = true;
        if (!writers_[t].empty()) continue;  // updated by the run: not a cached parameter
        bool runs = false, prices = true;
        for (const std::size_t r : readers_[t]) {
          runs = runs || traits_[r].runs;
          prices = prices && (!traits_[r].runs || traits_[r].prices_on_chip);
        }
        if (!runs) continue;
        const std::uint64_t b = bytes(t);
        if (!full && prices && used + b <= budget) {
          used += b;
          resident_[t] = true;
          cache.tensors.push_back(id);
          for (const std::size_t r : readers_[t]) {
            if (!traits_[r].runs) continue;
            const Op& reader = graph_.ops[r];
            for (std::size_t a = 0; a < reader.tensors.size(); ++a)
              if (reader.tensors[a] == id && reader.space.accesses[a].role != TensorRole::Output)
                cache.dram_bytes_saved += Bytes{access_bytes_[r][a]};
          }
        } else {
          full = full || prices;  // the first that does not fit ends the cached prefix
          cache.streamed += Bytes{b};
          cache.streamed_tensors.push_back(id);
        }
      }
    }
    cache.cached = Bytes{used};
    for (std::uint64_t& o : occupied_) o += used;
    plan.weights = std::move(cache);
  }

  void plan_activations(ResidencyPlan& plan) {
    for (std::size_t i = 0; i < graph_.ops.size(); ++i) {
      const Op& op = graph_.ops[i];
      if (!is_bound(op)) continue;
      for (std::size_t a = 0; a < op.tensors.size(); ++a) {
        const std::uint32_t t = op.tensors[a].value;
        if (op.space.accesses[a].role != TensorRole::Output || t >= producer_.size() ||
            producer_[t] != i || tile_[t] || readers_[t].empty() ||
            graph_.tensors[t].kind != TensorKind::Activation)
          continue;
        if (auto why = rejection(t)) {
          plan.rejected.push_back({TensorId{t}, Bytes{bytes(t)}, std::move(*why)});
          continue;
        }
        keep(t, plan);
      }
    }
  }

  // Why activation `t` cannot stay on chip, or nullopt when it fits (see the header).
  std::optional<std::string> rejection(std::uint32_t t) const {
    const std::string& name = tensor_name(t);
    if (is_result(t)) return fmt::format("'{}' is a result of the graph, which goes to DRAM", name);
    const std::size_t p = producer_[t];
    for (const std::size_t w : writers_[t])
      if (w != p) return fmt::format("'{}' is also written by '{}'", name, graph_.ops[w].name);
    std::vector<std::size_t> ops = readers_[t];
    ops.insert(ops.begin(), p);
    for (const std::size_t j : ops) {
      const Op& op = graph_.ops[j];
      if (!traits_[j].runs)
        return fmt::format("'{}' cannot run on '{}', so '{}' goes through DRAM", op.name,
                           hw_.name(), name);
      if (!traits_[j].prices_on_chip)
        return fmt::format("'{}' is {} op, whose cost model reads and writes its operands in "
                           "DRAM",
                           op.name, article(workload::to_string(op.kind)));
    }
    const std::uint64_t b = bytes(t);
    const std::string fits = fmt::format("'{}' ({}) does not fit the {} of on-chip memory holding "
                                         "inputs on '{}'",
                                         name, to_string(Bytes{b}), to_string(Bytes{pool_}),
                                         hw_.name());
    if (b > pool_) return fits;
    const std::size_t last = readers_[t].back();
    for (std::size_t j = p; j <= last; ++j) {
      const std::uint64_t own = need(j, t);
      if (occupied_[j] + b + own <= pool_) continue;
      return fmt::format("{} while '{}' runs: {} is held by other tensors and its own buffers "
                         "need {}",
                         fits, graph_.ops[j].name, to_string(Bytes{occupied_[j]}),
                         to_string(Bytes{own}));
    }
    return std::nullopt;
  }

  void keep(std::uint32_t t, ResidencyPlan& plan) {
    const std::size_t p = producer_[t], last = readers_[t].back();
    const std::uint64_t b = bytes(t);
    resident_[t] = true;
    for (std::size_t j = p; j <= last; ++j) occupied_[j] += b;
    KeptTensor kept{TensorId{t}, Bytes{b}, p, last,
                    static_cast<std::uint32_t>(readers_[t].size()), {}};
    // The producer's writes of it, then every reader's reads.
    const auto add = [&](std::size_t j, bool writes) {
      const Op& op = graph_.ops[j];
      if (moves_nothing(op)) return;
      for (std::size_t a = 0; a < op.tensors.size(); ++a)
        if (op.tensors[a].value == t &&
            (op.space.accesses[a].role == TensorRole::Output) == writes)
          kept.dram_bytes_saved += Bytes{access_bytes_[j][a]};
    };
    add(p, true);
    for (const std::size_t j : readers_[t]) add(j, false);
    plan.kept.push_back(kept);
  }

  static constexpr std::uint32_t kNoTensor = static_cast<std::uint32_t>(-1);

  const workload::Graph& graph_;
  const arch::HardwareModel& hw_;
  std::span<const OpTraits> traits_;
  std::vector<bool> tile_;      // by tensor: a fusion group's intermediate (a tile on chip)
  std::vector<bool> resident_;  // by tensor: kept or cached
  std::vector<std::size_t> producer_;                // by tensor: the first op writing it
  std::vector<std::vector<std::size_t>> readers_;    // by tensor: ops reading it, in order
  std::vector<std::vector<std::size_t>> writers_;    // by tensor: ops writing it, in order
  std::vector<std::uint32_t> results_;               // sorted
  std::vector<std::uint64_t> occupied_;              // by op: resident bytes while it runs
  std::vector<std::vector<std::uint64_t>> access_bytes_;  // by op, by access
  std::uint64_t pool_ = 0;
  std::array<std::uint64_t, 3> share_{};  // by role: the pool's buffer for it, chip-wide
};

}  // namespace

Bytes total_dram_bytes_saved(const ResidencyPlan& plan) {
  Bytes total;
  for (const KeptTensor& kept : plan.kept) total += kept.dram_bytes_saved;
  if (plan.weights) total += plan.weights->dram_bytes_saved;
  return total;
}

ResidencyPlan plan_residency(const workload::Graph& graph, const arch::HardwareModel& hw,
                             const FusionPlan& fusion, std::span<const OpTraits> traits,
                             bool activations) {
  const arch::ComputeUnitSpec* matrix = hw.matrix_unit();
  if (matrix == nullptr || matrix->kind != arch::UnitKind::Systolic) return {};
  return Planner(graph, hw, fusion, traits).run(activations);
}

}  // namespace coda::mapper
