#pragma once
// Passes by name, for `coda workload --passes a,b,c` and `--list-passes`. Registration is an
// explicit call (register_builtin_passes), never static initialisation.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/check.h"
#include "core/diagnostics.h"
#include "workloads/passes/pass.h"

namespace coda::workload {

class PassRegistry {
 public:
  struct Info {
    std::string name;
    std::string description;
  };

  // Registers P under P::kName. A name registered twice is a bug (CODA_CHECK).
  template <GraphPass P>
  void add(std::string description) {
    CODA_CHECK(!contains(P::kName));
    entries_.push_back({{std::string(P::kName), std::move(description)},
                        [](PassPipeline& pipeline) { pipeline.add<P>(); }});
  }

  bool contains(std::string_view name) const;
  // Every pass, in registration order.
  std::vector<Info> list() const;

  // "a,b,c" (spaces around names ignored) -> a pipeline of those passes in that order. An empty
  // list is an empty pipeline. Each unknown or empty name is a diagnostic at path `option`
  // (e.g. "--passes"), with a did-you-mean and the valid names; then nullopt.
  std::optional<PassPipeline> parse(std::string_view list, Diagnostics& diags,
                                    std::string_view option = "--passes") const;

 private:
  struct Entry {
    Info info;
    void (*append)(PassPipeline&);
  };
  std::vector<Entry> entries_;
};

// verify, decompose-attention, fold-batch-norm, dead-op-elimination.
void register_builtin_passes(PassRegistry& registry);

}  // namespace coda::workload
