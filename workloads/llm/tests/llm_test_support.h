#pragma once
// What the LLM builder's tests share: a preset by name and a graph built and verified.

#include <string>
#include <utility>

#include <gtest/gtest.h>

#include "workloads/llm/llm_builder.h"

namespace coda::workload::llm::testing {

// configs/workloads/llm/<name>.yaml, read without a diagnostic.
inline LlmConfig preset(const std::string& name) {
  Diagnostics diags;
  auto c = load_llm_config("configs/workloads/llm/" + name + ".yaml", diags);
  EXPECT_TRUE(c && diags.all().empty()) << name << "\n" << diags.format_all();
  return c ? *c : LlmConfig{};
}

// The graph of one rank, built without a diagnostic and clean under verify.
inline Graph build(const LlmConfig& c, const LlmPhase& phase, const Parallelism& par = {}) {
  Diagnostics diags;
  auto g = try_build_llm(c, phase, par, diags);
  EXPECT_TRUE(g && diags.all().empty()) << diags.format_all();
  if (!g) return {};
  const auto problems = verify(*g);
  EXPECT_TRUE(problems.empty()) << problems.size() << " problems, first: " << problems.front();
  return std::move(*g);
}

}  // namespace coda::workload::llm::testing
