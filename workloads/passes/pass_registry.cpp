#include "workloads/passes/pass_registry.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/yaml_reader.h"
#include "workloads/passes/builtin_passes.h"

namespace coda::workload {
namespace {

std::string_view trim(std::string_view text) {
  const auto first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(" \t");
  return text.substr(first, last - first + 1);
}

}  // namespace

bool PassRegistry::contains(std::string_view name) const {
  return std::any_of(entries_.begin(), entries_.end(),
                     [&](const Entry& e) { return e.info.name == name; });
}

std::vector<PassRegistry::Info> PassRegistry::list() const {
  std::vector<Info> infos;
  for (const Entry& e : entries_) infos.push_back(e.info);
  return infos;
}

std::optional<PassPipeline> PassRegistry::parse(std::string_view list, Diagnostics& diags,
                                                std::string_view option) const {
  PassPipeline pipeline;
  if (trim(list).empty()) return pipeline;
  std::vector<std::string_view> names;
  for (const Entry& e : entries_) names.push_back(e.info.name);
  const std::string valid = fmt::format("passes: {}", fmt::join(names, ", "));
  const auto errors_before = diags.error_count();
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t comma = std::min(list.find(',', start), list.size());
    const std::string_view name = trim(list.substr(start, comma - start));
    const auto it = std::find_if(entries_.begin(), entries_.end(),
                                 [&](const Entry& e) { return e.info.name == name; });
    if (name.empty()) {
      diags.error({}, std::string(option), "empty pass name in the list", valid);
    } else if (it == entries_.end()) {
      const auto close = did_you_mean(name, names);
      diags.error({}, std::string(option),
                  close ? fmt::format("unknown pass '{}' (did you mean '{}'?)", name, *close)
                        : fmt::format("unknown pass '{}'", name),
                  valid);
    } else {
      it->append(pipeline);
    }
    start = comma + 1;
  }
  if (diags.error_count() != errors_before) return std::nullopt;
  return pipeline;
}

void register_builtin_passes(PassRegistry& registry) {
  registry.add<VerifyPass>("check the graph's structure (every pass is followed by this)");
  registry.add<DecomposeAttention>(
      "split each attention op into Q K^T matmul, softmax over kv, and P V matmul");
  registry.add<FuseAttention>(
      "recognise imported attention (Q K^T, scale, mask, softmax, P V) as one attention op");
  registry.add<FoldBatchNorm>(
      "fold inference batch norms into the convolution or GEMM that produces their input");
  registry.add<DeadOpElimination>(
      "remove ops whose outputs reach no graph result (see docs/workloads.md)");
}

}  // namespace coda::workload
