#pragma once
// coda's JSON trace of a workload graph (docs/trace_format.md, schema_version 1): every tensor,
// every op with its iteration space, accesses, bindings and attributes, and the graph's results.
// Writing and reading round-trip exactly: read_trace(write_trace(g)) == g.

#include <optional>
#include <string>
#include <string_view>

#include "core/diagnostics.h"
#include "workloads/graph.h"

namespace coda::workload {

// The graph as JSON text (two-space indent, keys in a fixed order, a final newline). The same
// graph always gives the same text.
std::string write_trace(const Graph& graph);

// Reads a trace. Never throws on bad input and never prints: syntax errors are diagnostics at
// file:line:col; every other problem (an unknown key, with a did-you-mean; a wrong type; an
// unknown enum name, listing the valid ones; an index out of range; a value out of range) is a
// diagnostic at the JSON path ("ops[3].accesses[1].shape") with line 0, and all of them are
// reported. A trace that reads cleanly is then verified (workloads/graph.h, verify) and each
// problem is a diagnostic too. nullopt when there was any error.
std::optional<Graph> read_trace(std::string_view text, const std::string& file,
                                Diagnostics& diags);

}  // namespace coda::workload
