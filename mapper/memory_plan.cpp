#include "mapper/memory_plan.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "core/check.h"
#include "workloads/op.h"

namespace coda::mapper {

namespace {

using workload::Graph;
using workload::TensorKind;
using workload::TensorRole;

constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();

bool is_persistent(TensorKind kind) {
  return kind == TensorKind::Weight || kind == TensorKind::KvCache ||
         kind == TensorKind::OptimizerState;
}

// What the ops do to each tensor.
struct Dataflow {
  std::vector<std::size_t> first_touch, last_touch;  // kNone: no op touches it
  std::vector<bool> written;                         // by some op, not in place
  std::vector<bool> read;                            // by some op (in place counts)
};

// Walks the ops once: touches, writes and reads of every tensor, and each op's working set.
Dataflow read_dataflow(const Graph& graph, const std::vector<Bytes>& sizes, MemoryPlan& plan) {
  const std::size_t n_tensors = graph.tensors.size();
  Dataflow flow{std::vector<std::size_t>(n_tensors, kNone),
                std::vector<std::size_t>(n_tensors, kNone), std::vector<bool>(n_tensors),
                std::vector<bool>(n_tensors)};
  plan.working_set.assign(graph.ops.size(), Bytes{});
  std::vector<std::uint32_t> own;  // the op's distinct tensors
  for (std::size_t i = 0; i < graph.ops.size(); ++i) {
    const workload::Op& op = graph.ops[i];
    if (op.tensors.empty()) {
      plan.working_set[i] = workload::tensor_bytes(op);
      if (!op.space.accesses.empty())
        plan.problems.push_back(
            fmt::format("op '{}' (#{}) has no tensor bindings: its tensors are not planned",
                        op.name, i));
      continue;
    }
    const std::size_t bound = std::min(op.tensors.size(), op.space.accesses.size());
    if (op.tensors.size() != op.space.accesses.size())
      plan.problems.push_back(fmt::format(
          "op '{}' (#{}) binds {} tensors to {} accesses: only the first {} are planned", op.name,
          i, op.tensors.size(), op.space.accesses.size(), bound));
    own.clear();
    for (std::size_t a = 0; a < bound; ++a) {
      const std::uint32_t t = op.tensors[a].value;
      if (t >= n_tensors) {
        plan.problems.push_back(fmt::format("op '{}' (#{}) binds access '{}' to tensor #{} of {}",
                                            op.name, i, op.space.accesses[a].tensor, t,
                                            n_tensors));
        continue;
      }
      if (op.space.accesses[a].role != TensorRole::Output) flow.read[t] = true;
      if (std::find(own.begin(), own.end(), t) == own.end()) own.push_back(t);
    }
    for (const std::uint32_t t : own) {
      plan.working_set[i] += sizes[t];
      if (flow.first_touch[t] == kNone) flow.first_touch[t] = i;
      flow.last_touch[t] = i;
    }
    // A write that is not an update in place: no read of the same tensor in this op.
    for (std::size_t a = 0; a < bound; ++a) {
      const std::uint32_t t = op.tensors[a].value;
      if (t >= n_tensors || op.space.accesses[a].role != TensorRole::Output) continue;
      bool in_place = false;
      for (std::size_t b = 0; b < bound; ++b)
        in_place = in_place || (op.tensors[b].value == t &&
                                op.space.accesses[b].role != TensorRole::Output);
      if (!in_place) flow.written[t] = true;
    }
  }
  return flow;
}

// Sorted, disjoint address ranges [begin, end); ranges that touch are merged.
using Runs = std::vector<std::pair<std::uint64_t, std::uint64_t>>;

void add_run(Runs& runs, std::uint64_t begin, std::uint64_t end) {
  // The runs that overlap or touch [begin, end): from the first ending at or after `begin` to
  // the last starting at or before `end`.
  const auto lo = std::lower_bound(runs.begin(), runs.end(), begin,
                                   [](const auto& run, std::uint64_t b) { return run.second < b; });
  const auto hi = std::upper_bound(lo, runs.end(), end,
                                   [](std::uint64_t e, const auto& run) { return e < run.first; });
  if (lo == hi) {
    runs.insert(lo, {begin, end});
    return;
  }
  lo->first = std::min(begin, lo->first);
  lo->second = std::max(end, std::prev(hi)->second);
  runs.erase(std::next(lo), hi);
}

// Where the placed tensors sit, for "which addresses are taken at some op in [first, last]".
// A segment tree over op indices: a tensor live over [first, last] is stored at the O(log n)
// nodes whose ranges cover its interval (the canonical nodes). Each node keeps the union of the
// address ranges of the tensors stored at it (`own`) and of those stored at it or below it
// (`below`). A placed tensor overlaps [first, last] exactly when it is stored at an ancestor of
// one of the query's canonical nodes (it covers that whole node) or at one of them or below
// (inside it), so the taken addresses are the `below` unions of the query's canonical nodes and
// the `own` unions of the nodes on the way down to them. Both unions stay short: the addresses
// taken over any stretch of ops are mostly one run from 0 with few holes. A query costs
// O(log n) unions instead of one entry per overlapping tensor.
class Occupancy {
 public:
  explicit Occupancy(std::size_t ops) : ops_(ops) {
    std::size_t leaves = 1;
    while (leaves < ops) leaves *= 2;
    own_.resize(2 * leaves);
    below_.resize(2 * leaves);
  }

  void insert(std::size_t first, std::size_t last, std::uint64_t begin, std::uint64_t end) {
    insert(1, 0, ops_ - 1, first, last, begin, end);
  }

  // The union of the addresses taken at some op in [first, last], sorted and merged.
  void taken(std::size_t first, std::size_t last, Runs& out) {
    out.clear();
    collect(1, 0, ops_ - 1, first, last, out);
  }

 private:
  void insert(std::size_t node, std::size_t lo, std::size_t hi, std::size_t first,
              std::size_t last, std::uint64_t begin, std::uint64_t end) {
    add_run(below_[node], begin, end);
    if (first <= lo && hi <= last) {
      add_run(own_[node], begin, end);
      return;
    }
    const std::size_t mid = lo + (hi - lo) / 2;
    if (first <= mid) insert(2 * node, lo, mid, first, last, begin, end);
    if (last > mid) insert(2 * node + 1, mid + 1, hi, first, last, begin, end);
  }

  void collect(std::size_t node, std::size_t lo, std::size_t hi, std::size_t first,
               std::size_t last, Runs& out) {
    if (first <= lo && hi <= last) {
      unite(out, below_[node]);
      return;
    }
    unite(out, own_[node]);
    const std::size_t mid = lo + (hi - lo) / 2;
    if (first <= mid) collect(2 * node, lo, mid, first, last, out);
    if (last > mid) collect(2 * node + 1, mid + 1, hi, first, last, out);
  }

  // out = out | runs, both sorted and merged: one linear pass, so `out` stays short.
  void unite(Runs& out, const Runs& runs) {
    if (runs.empty()) return;
    scratch_.clear();
    auto a = out.begin();
    auto b = runs.begin();
    while (a != out.end() || b != runs.end()) {
      const bool take_a = b == runs.end() || (a != out.end() && a->first < b->first);
      const auto& run = take_a ? *a++ : *b++;
      if (!scratch_.empty() && run.first <= scratch_.back().second)
        scratch_.back().second = std::max(scratch_.back().second, run.second);
      else
        scratch_.push_back(run);
    }
    out.swap(scratch_);
  }

  std::size_t ops_;
  std::vector<Runs> own_, below_;
  Runs scratch_;
};

// Greedy best-fit by size over the transient tensors: sets their offsets, returns the arena.
Bytes place_transients(std::vector<TensorLife>& lives, std::size_t ops) {
  std::vector<std::uint32_t> order;
  for (const TensorLife& life : lives)
    if (life.residency == Residency::Transient && life.bytes.value > 0)
      order.push_back(life.tensor.value);
  if (order.empty()) return Bytes{};
  // Largest first; ties: the longer interval, then the earlier start, then the tensor id.
  std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    const TensorLife& x = lives[a];
    const TensorLife& y = lives[b];
    if (x.bytes != y.bytes) return x.bytes > y.bytes;
    if (x.last - x.first != y.last - y.first) return x.last - x.first > y.last - y.first;
    if (x.first != y.first) return x.first < y.first;
    return a < b;
  });

  Occupancy occupancy(ops);
  Runs taken;
  std::uint64_t arena = 0;
  for (const std::uint32_t t : order) {
    TensorLife& life = lives[t];
    occupancy.taken(life.first, life.last, taken);
    // The smallest hole between the taken runs that holds the tensor, else above them all.
    std::uint64_t best = 0, best_gap = std::numeric_limits<std::uint64_t>::max(), top = 0;
    bool found = false;
    for (const auto& [begin, end] : taken) {
      const std::uint64_t gap = begin - top;  // runs are disjoint: begin >= top
      if (gap >= life.bytes.value && gap < best_gap) {
        best = top;
        best_gap = gap;
        found = true;
      }
      top = end;
    }
    life.offset = found ? best : top;
    arena = std::max(arena, life.offset + life.bytes.value);
    occupancy.insert(life.first, life.last, life.offset, life.offset + life.bytes.value);
  }
  return Bytes{arena};
}

}  // namespace

std::string_view to_string(Residency residency) {
  switch (residency) {
    case Residency::Persistent: return "persistent";
    case Residency::Transient: return "transient";
    case Residency::Unused: return "unused";
  }
  return "?";
}

MemoryPlan plan_memory(const Graph& graph) {
  MemoryPlan plan;
  const std::size_t n_ops = graph.ops.size();
  const std::size_t n_tensors = graph.tensors.size();
  std::vector<Bytes> sizes(n_tensors);
  for (std::size_t t = 0; t < n_tensors; ++t) sizes[t] = workload::storage_bytes(graph.tensors[t]);
  const Dataflow flow = read_dataflow(graph, sizes, plan);

  // Results: the listed outputs, else every tensor written and never read.
  std::vector<bool> result(n_tensors);
  for (const workload::TensorId id : graph.outputs) {
    if (id.value < n_tensors)
      result[id.value] = true;
    else
      plan.problems.push_back(
          fmt::format("graph output is tensor #{} of {}: ignored", id.value, n_tensors));
  }
  if (graph.outputs.empty())
    for (std::size_t t = 0; t < n_tensors; ++t) result[t] = flow.written[t] && !flow.read[t];

  const std::size_t end = n_ops == 0 ? 0 : n_ops - 1;
  plan.tensors.resize(n_tensors);
  std::vector<std::int64_t> delta(n_ops + 1);  // live bytes entering minus leaving at each op
  for (std::size_t t = 0; t < n_tensors; ++t) {
    TensorLife& life = plan.tensors[t];
    const TensorKind kind = graph.tensors[t].kind;
    life.tensor = workload::TensorId{static_cast<std::uint32_t>(t)};
    life.kind = kind;
    life.bytes = sizes[t];
    if (is_persistent(kind)) {
      life.residency = Residency::Persistent;
      life.first = 0;
      life.last = end;
      life.offset = plan.persistent.value;
      plan.persistent += life.bytes;
      (kind == TensorKind::Weight    ? plan.weights
       : kind == TensorKind::KvCache ? plan.kv_cache
                                     : plan.optimizer_state) += life.bytes;
      continue;
    }
    const bool touched = flow.first_touch[t] != kNone;
    if (n_ops == 0 || (!touched && !result[t])) {
      life.residency = Residency::Unused;
      continue;
    }
    life.residency = Residency::Transient;
    life.first = flow.written[t] ? flow.first_touch[t] : 0;
    life.last = result[t] ? end : flow.last_touch[t];
    plan.transient_without_reuse += life.bytes;
    delta[life.first] += static_cast<std::int64_t>(life.bytes.value);
    delta[life.last + 1] -= static_cast<std::int64_t>(life.bytes.value);
  }

  plan.live_at_op.resize(n_ops);
  std::int64_t live = 0;
  for (std::size_t i = 0; i < n_ops; ++i) {
    live += delta[i];
    plan.live_at_op[i] = Bytes{static_cast<std::uint64_t>(live)};
    if (plan.live_at_op[i] > plan.peak_live) {
      plan.peak_live = plan.live_at_op[i];
      plan.peak_op = i;
    }
  }
  for (const TensorLife& life : plan.tensors)
    if (life.residency == Residency::Transient && life.first <= plan.peak_op &&
        plan.peak_op <= life.last)
      (life.kind == TensorKind::Gradient ? plan.peak_gradients : plan.peak_activations) +=
          life.bytes;

  plan.arena = place_transients(plan.tensors, n_ops);
  return plan;
}

Bytes on_chip_capacity(const arch::HardwareModel& hw) {
  Bytes total;
  const auto& levels = hw.levels();
  // The last level is DRAM.
  for (std::size_t i = 0; i + 1 < levels.size(); ++i)
    total += Bytes{levels[i].capacity.value * levels[i].instances};
  return total;
}

FitReport check_fit(const MemoryPlan& plan, const arch::HardwareModel& hw) {
  FitReport report;
  report.needed = plan.off_chip();
  report.on_chip = on_chip_capacity(hw);
  for (std::size_t i = 0; i < plan.working_set.size(); ++i)
    if (plan.working_set[i] > report.on_chip) report.ops_over_on_chip.push_back(i);

  const std::pair<const char*, Bytes> parts[] = {
      {"weights", plan.weights},
      {"kv cache", plan.kv_cache},
      {"optimizer state", plan.optimizer_state},
      {"activations", plan.peak_activations},
      {"gradients", plan.peak_gradients},
      {"arena fragmentation", Bytes{plan.arena.value - plan.peak_live.value}},
  };
  for (const auto& [what, bytes] : parts)
    if (bytes.value > 0) report.contributors.push_back({what, bytes});
  std::stable_sort(report.contributors.begin(), report.contributors.end(),
                   [](const Contributor& a, const Contributor& b) { return a.bytes > b.bytes; });
  std::string parts_text;
  for (const Contributor& c : report.contributors)
    parts_text +=
        fmt::format("{}{} {}", parts_text.empty() ? "" : ", ", c.what, to_string(c.bytes));
  if (parts_text.empty()) parts_text = "nothing";

  const std::optional<Bytes> capacity = hw.spec().dram.capacity;
  if (!capacity) {
    report.status = FitStatus::UnknownCapacity;
    report.reason = fmt::format("needs {} of DRAM ({}); the arch states no dram.capacity",
                                to_string(report.needed), parts_text);
    return report;
  }
  report.available = *capacity;
  if (report.needed <= report.available) {
    report.status = FitStatus::Fits;
    report.headroom = Bytes{report.available.value - report.needed.value};
    report.reason = fmt::format("needs {} of DRAM, {} available: {} to spare ({})",
                                to_string(report.needed), to_string(report.available),
                                to_string(report.headroom), parts_text);
  } else {
    report.status = FitStatus::DoesNotFit;
    report.excess = Bytes{report.needed.value - report.available.value};
    report.reason = fmt::format("needs {} of DRAM, {} available: {} over; {}",
                                to_string(report.needed), to_string(report.available),
                                to_string(report.excess), parts_text);
  }
  return report;
}

// ---- KV-cache sizing ----

KvBudget kv_budget(const MemoryPlan& plan, Bytes capacity) {
  return {capacity, Bytes{plan.persistent.value - plan.kv_cache.value}, plan.arena};
}

Bytes kv_cache_bytes_per_token(const workload::llm::LlmConfig& config,
                               const workload::llm::Parallelism& parallelism) {
  CODA_CHECK(parallelism.tp >= 1 && parallelism.pp >= 1);
  const Bytes whole = workload::llm::llm_headline(config, 0).kv_cache_bytes_per_token;
  return Bytes{whole.value / parallelism.pp / config.kv_cache_split(parallelism.tp)};
}

namespace {

// The room for the KV cache, or a reason why there is none.
KvFit room_for_kv(const KvBudget& budget) {
  KvFit fit;
  const Bytes rest = budget.persistent_non_kv + budget.transient;
  if (rest >= budget.capacity) {
    fit.reason = fmt::format(
        "no room for a KV cache: the rest needs {} ({} persistent + {} transient) of {}",
        to_string(rest), to_string(budget.persistent_non_kv), to_string(budget.transient),
        to_string(budget.capacity));
    return fit;
  }
  fit.room = Bytes{budget.capacity.value - rest.value};
  return fit;
}

// The largest n in [0, limit] with bytes(n) <= room, for bytes non-decreasing in n.
template <class BytesOf>
KvFit largest_fitting(KvFit fit, std::uint64_t limit, const BytesOf& bytes_of,
                      const std::string& what) {
  std::uint64_t lo = 0, hi = limit;  // the answer is in [lo, hi]
  while (lo < hi) {
    const std::uint64_t mid = lo + (hi - lo + 1) / 2;  // > lo
    if (bytes_of(mid) <= fit.room)
      lo = mid;
    else
      hi = mid - 1;
  }
  fit.count = lo;
  fit.kv_bytes = lo == 0 ? Bytes{} : bytes_of(lo);
  if (lo == 0 && fit.reason.empty())
    fit.reason = fmt::format("{} free for the KV cache, too little for one {}", to_string(fit.room),
                             what);
  return fit;
}

}  // namespace

KvFit max_kv_tokens(const KvBudget& budget, Bytes bytes_per_token) {
  KvFit fit = room_for_kv(budget);
  if (!fit.reason.empty()) return fit;
  if (bytes_per_token.value == 0) {
    fit.reason = "the KV cache takes 0 bytes per token: no token limit";
    return fit;
  }
  fit.count = fit.room.value / bytes_per_token.value;
  fit.kv_bytes = Bytes{fit.count * bytes_per_token.value};
  if (fit.count == 0)
    fit.reason = fmt::format("{} free for the KV cache, less than one token's {}",
                             to_string(fit.room), to_string(bytes_per_token));
  return fit;
}

KvFit max_kv_batch(const KvBudget& budget, Bytes bytes_per_token, std::uint64_t context) {
  KvFit fit = max_kv_tokens(budget, bytes_per_token);
  if (!fit.reason.empty()) return fit;
  if (context == 0) {
    fit.count = 0;
    fit.kv_bytes = Bytes{};
    fit.reason = "a context of 0 tokens";
    return fit;
  }
  fit.count /= context;
  fit.kv_bytes = Bytes{fit.count * context * bytes_per_token.value};
  if (fit.count == 0)
    fit.reason = fmt::format("{} free for the KV cache, less than one sequence of {} tokens ({})",
                             to_string(fit.room), context,
                             to_string(Bytes{context * bytes_per_token.value}));
  return fit;
}

KvFit max_kv_batch(const KvBudget& budget, const KvBytesFn& kv_bytes, std::uint64_t context,
                   std::uint64_t max_batch) {
  KvFit fit = room_for_kv(budget);
  if (!fit.reason.empty()) return fit;
  if (!kv_bytes) {
    fit.reason = "no function for the KV-cache bytes";
    return fit;
  }
  return largest_fitting(
      std::move(fit), max_batch, [&](std::uint64_t b) { return kv_bytes(b, context); },
      fmt::format("sequence of {} tokens", context));
}

KvFit max_kv_context(const KvBudget& budget, const KvBytesFn& kv_bytes, std::uint64_t batch,
                     std::uint64_t max_context) {
  KvFit fit = room_for_kv(budget);
  if (!fit.reason.empty()) return fit;
  if (!kv_bytes) {
    fit.reason = "no function for the KV-cache bytes";
    return fit;
  }
  return largest_fitting(
      std::move(fit), max_context, [&](std::uint64_t c) { return kv_bytes(batch, c); },
      fmt::format("token for each of {} sequences", batch));
}

}  // namespace coda::mapper
