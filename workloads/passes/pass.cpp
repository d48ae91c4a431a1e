#include "workloads/passes/pass.h"

#include <fmt/format.h>

namespace coda::workload {

PassPipeline& PassPipeline::add(std::string name, RunFn run) {
  passes_.push_back({std::move(name), std::move(run)});
  return *this;
}

PipelineResult PassPipeline::run(Graph& graph) const {
  PipelineResult result;
  for (const std::string& problem : verify(graph))
    result.problems.push_back(fmt::format("before any pass: {}", problem));
  if (!result.ok()) return result;
  for (const Entry& entry : passes_) {
    PassReport report = entry.run(graph);
    report.pass = entry.name;
    result.reports.push_back(std::move(report));
    for (const std::string& problem : verify(graph))
      result.problems.push_back(fmt::format("after pass '{}': {}", entry.name, problem));
    if (!result.ok()) return result;
  }
  return result;
}

std::string PassPipeline::describe() const {
  std::string names;
  for (const Entry& entry : passes_) names += (names.empty() ? "" : ",") + entry.name;
  return names;
}

}  // namespace coda::workload
