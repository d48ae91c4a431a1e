#pragma once
// The Chrome trace-event document both engines' timelines share (the JSON object form, which
// Perfetto and chrome://tracing open): the process named after the run, the events, and the
// engine and clock as otherData; and the file it goes to.

#include <filesystem>
#include <functional>
#include <iosfwd>

#include <nlohmann/json.hpp>

#include "core/results.h"

namespace coda::sim {

// The events a timeline starts with: the process ("pid" 1) named "<arch>: <workload>".
nlohmann::ordered_json trace_events_start(const results::RunResult& run);

// Writes {"traceEvents": events, "displayTimeUnit": "ns", "otherData": {engine, clock_hz}}.
void write_trace_document(std::ostream& out, nlohmann::ordered_json events,
                          const results::RunResult& run, double clock_hz);

// Opens `path`, lets `write` fill it, and throws std::runtime_error naming the path when it
// cannot be written (coda run checks the path before it runs).
void write_trace_file(const std::filesystem::path& path,
                      const std::function<void(std::ostream&)>& write);

}  // namespace coda::sim
