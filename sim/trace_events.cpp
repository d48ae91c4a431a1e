#include "sim/trace_events.h"

#include <fstream>
#include <ostream>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "core/text.h"

namespace coda::sim {

nlohmann::ordered_json trace_events_start(const results::RunResult& run) {
  nlohmann::ordered_json events = nlohmann::ordered_json::array();
  events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", 1}, {"tid", 0},
                    {"args", {{"name", run.arch + ": " + run.workload}}}});
  return events;
}

void write_trace_document(std::ostream& out, nlohmann::ordered_json events,
                          const results::RunResult& run, double clock_hz) {
  const nlohmann::ordered_json trace = {
      {"traceEvents", std::move(events)},
      {"displayTimeUnit", "ns"},
      {"otherData", {{"engine", run.provenance.engine}, {"clock_hz", clock_hz}}}};
  out << dump_json(trace) << '\n';
}

void write_trace_file(const std::filesystem::path& path,
                      const std::function<void(std::ostream&)>& write) {
  std::ofstream out(path);
  write(out);
  if (!out) throw std::runtime_error(fmt::format("cannot write the trace to '{}'", path.string()));
}

}  // namespace coda::sim
