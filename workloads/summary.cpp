#include "workloads/summary.h"

#include <array>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace coda::workload {
namespace {

constexpr std::size_t kOpKinds = static_cast<std::size_t>(OpKind::Optimizer) + 1;

// 1234567 -> "1.23 M"; below 10000 the number itself.
std::string si(std::uint64_t value) {
  constexpr std::array<const char*, 6> kPrefixes{"k", "M", "G", "T", "P", "E"};
  if (value < 10000) return fmt::format("{}", value);
  double v = static_cast<double>(value);
  std::size_t p = 0;
  for (v /= 1000.0; v >= 1000.0 && p + 1 < kPrefixes.size(); v /= 1000.0) ++p;
  return fmt::format("{:.3g} {}", v, kPrefixes[p]);
}

}  // namespace

WorkloadSummary summarize(const Graph& graph) {
  WorkloadSummary s;
  s.name = graph.name;
  s.source = graph.source;
  s.ops = graph.ops.size();
  s.tensors = graph.tensors.size();
  s.parameters = total_elements(graph, TensorKind::Weight);
  s.parameter_bytes = total_bytes(graph, TensorKind::Weight);
  s.activation_bytes = total_bytes(graph, TensorKind::Activation);
  s.kv_cache_bytes = total_bytes(graph, TensorKind::KvCache);
  std::vector<bool> written(graph.tensors.size(), false);
  for (const Op& op : graph.ops) {
    if (op.tensors.size() != op.space.accesses.size()) continue;  // unbound
    for (std::size_t a = 0; a < op.tensors.size(); ++a) {
      const std::uint32_t t = op.tensors[a].value;
      if (t >= written.size()) continue;
      if (op.space.accesses[a].role == TensorRole::Output) continue;
      if (written[t]) ++s.links;
    }
    for (std::size_t a = 0; a < op.tensors.size(); ++a)
      if (op.space.accesses[a].role == TensorRole::Output && op.tensors[a].value < written.size())
        written[op.tensors[a].value] = true;
  }
  std::array<OpKindSummary, kOpKinds> kinds{};
  for (const Op& op : graph.ops) {
    OpKindSummary& k = kinds[static_cast<std::size_t>(op.kind)];
    const std::uint64_t macs = mac_count(op), flops = flop_count(op);
    const Bytes bytes = tensor_bytes(op);
    ++k.count;
    k.macs += macs;
    k.flops += flops;
    k.bytes += bytes;
    s.macs += macs;
    s.flops += flops;
    s.compulsory_bytes += bytes;
  }
  for (std::size_t i = 0; i < kOpKinds; ++i) {
    if (kinds[i].count == 0) continue;
    kinds[i].kind = static_cast<OpKind>(i);
    s.by_kind.push_back(kinds[i]);
  }
  if (s.compulsory_bytes.value > 0)
    s.arithmetic_intensity =
        static_cast<double>(s.flops) / static_cast<double>(s.compulsory_bytes.value);
  return s;
}

std::string format_summary(const WorkloadSummary& s) {
  std::string out = fmt::format("workload '{}'{}\n", s.name,
                                s.source.empty() ? "" : fmt::format(" ({})", s.source));
  out += fmt::format("  ops                  {}\n", s.ops);
  out += fmt::format("  dataflow links       {} (operands read from an earlier op's output)\n",
                     s.links);
  out += fmt::format("  parameters           {} ({})\n", si(s.parameters),
                     to_string(s.parameter_bytes));
  out += fmt::format("  activations          {}\n", to_string(s.activation_bytes));
  if (s.kv_cache_bytes.value > 0)
    out += fmt::format("  KV cache             {}\n", to_string(s.kv_cache_bytes));
  out += fmt::format("  MACs                 {}\n", si(s.macs));
  out += fmt::format("  FLOPs                {}\n", si(s.flops));
  out += fmt::format("  compulsory traffic   {}\n", to_string(s.compulsory_bytes));
  out += fmt::format("  arithmetic intensity {:.2f} FLOP/B\n", s.arithmetic_intensity);
  out += fmt::format("  {:<14} {:>6} {:>12} {:>12} {:>12}\n", "kind", "ops", "MACs", "FLOPs",
                     "bytes");
  for (const OpKindSummary& k : s.by_kind)
    out += fmt::format("  {:<14} {:>6} {:>12} {:>12} {:>12}\n", to_string(k.kind), k.count,
                       si(k.macs), si(k.flops), to_string(k.bytes));
  return out;
}

void to_json(nlohmann::ordered_json& j, const WorkloadSummary& s) {
  nlohmann::ordered_json kinds = nlohmann::ordered_json::array();
  for (const OpKindSummary& k : s.by_kind)
    kinds.push_back({{"kind", to_string(k.kind)},
                     {"count", k.count},
                     {"macs", k.macs},
                     {"flops", k.flops},
                     {"bytes", k.bytes.value}});
  j = {{"name", s.name},
       {"source", s.source},
       {"ops", s.ops},
       {"tensors", s.tensors},
       {"links", s.links},
       {"parameters", s.parameters},
       {"parameter_bytes", s.parameter_bytes.value},
       {"activation_bytes", s.activation_bytes.value},
       {"kv_cache_bytes", s.kv_cache_bytes.value},
       {"macs", s.macs},
       {"flops", s.flops},
       {"compulsory_bytes", s.compulsory_bytes.value},
       {"arithmetic_intensity", s.arithmetic_intensity},
       {"by_kind", std::move(kinds)}};
}

}  // namespace coda::workload
