#pragma once
// Graph passes and the pipeline that runs them, after LLVM's new pass manager but much smaller.
// A pass is a value type with a name (`kName`) and `PassReport run(Graph&)`; the pipeline stores
// passes type-erased, runs them in order and verifies the graph after each one. A pass is handed
// a graph that verifies and must leave one that verifies; when it does not, that is a bug in the
// pass, and the pipeline reports it as "after pass 'X': <problem>" and stops.

#include <concepts>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "workloads/graph.h"

namespace coda::workload {

// What one pass did: whether it changed the graph, and sentences for the user ("folded 3 batch
// norms into their convolutions").
struct PassReport {
  std::string pass;  // the pass's name; set by the pipeline
  bool changed = false;
  std::vector<std::string> notes;
  friend bool operator==(const PassReport&, const PassReport&) = default;
};

template <class P>
concept GraphPass = requires(P& p, Graph& g) {
  { P::kName } -> std::convertible_to<std::string_view>;
  { p.run(g) } -> std::same_as<PassReport>;
};

// The outcome of running a pipeline: a report per pass that ran, in order, and the verification
// problems that stopped it ("before any pass: ..." when the input graph did not verify, "after
// pass 'X': ..." when a pass broke the graph). `problems` empty: every pass ran.
struct PipelineResult {
  std::vector<PassReport> reports;
  std::vector<std::string> problems;
  bool ok() const { return problems.empty(); }
};

class PassPipeline {
 public:
  using RunFn = std::function<PassReport(Graph&)>;

  template <GraphPass P>
  PassPipeline& add(P pass = {}) {
    return add(std::string(P::kName),
               [p = std::move(pass)](Graph& g) mutable { return p.run(g); });
  }
  // The type-erased form, for the registry.
  PassPipeline& add(std::string name, RunFn run);

  // Verifies `graph`, then runs each pass in order and verifies after each one; stops at the
  // first problem. Never throws for a graph that does not verify: that is in the result.
  PipelineResult run(Graph& graph) const;

  // The pass names in order, comma-separated: "decompose-attention,dead-op-elimination".
  std::string describe() const;
  bool empty() const { return passes_.empty(); }

 private:
  struct Entry {
    std::string name;
    RunFn run;
  };
  std::vector<Entry> passes_;
};

}  // namespace coda::workload
