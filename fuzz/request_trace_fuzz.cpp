// Fuzzes the readers of coda serve's request stream: sim::serving::parse_request_trace (a trace
// CSV), which keeps the reader contract, and parse_length (the --input-len / --output-len
// grammar), which returns a value or an error.
// A trace the reader accepts holds requests a simulation can take (ids in order, arrivals from 0
// and non-decreasing, lengths from 1 to 2^24) and survives a round trip: written back as
// arrival_s,input_tokens,output_tokens with arrivals at full precision, it reads as the same
// requests. A length the grammar accepts prints (to_string) as text that parses to it again.

#include <cstddef>
#include <cstdint>
#include <string>

#include <fmt/format.h>

#include "fuzz/fuzz_contract.h"
#include "sim/serving/requests.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace sv = coda::sim::serving;
  using coda::fuzz::require;
  const std::string_view text = coda::fuzz::as_text(data, size);

  coda::Diagnostics diags;
  const auto trace = sv::parse_request_trace(text, "trace.csv", diags);
  coda::fuzz::check_contract(trace.has_value(), diags);
  if (trace) {
    std::string out = "arrival_s,input_tokens,output_tokens\n";
    double last = 0;
    for (std::size_t i = 0; i < trace->size(); ++i) {
      const sv::Request& r = (*trace)[i];
      require(r.id == i && r.arrival >= last && r.input >= 1 && r.output >= 1 &&
              r.input <= (std::uint64_t{1} << 24) && r.output <= (std::uint64_t{1} << 24));
      last = r.arrival;
      out += fmt::format("{},{},{}\n", r.arrival, r.input, r.output);  // shortest round trip
    }
    coda::Diagnostics again_diags;
    const auto again = sv::parse_request_trace(out, "again.csv", again_diags);
    coda::fuzz::check_contract(again.has_value(), again_diags);
    require(again.has_value() && *again == *trace);
  }

  // A command-line value has no file, so its errors have no line: only the first half of the
  // contract holds (a value, or at least one error with a message).
  coda::Diagnostics length_diags;
  const auto length = sv::parse_length(text, "--input-len", length_diags);
  require(length.has_value() == !length_diags.has_errors());
  for (const coda::Diagnostic& d : length_diags.all()) require(!d.message.empty());
  if (length) {
    coda::Diagnostics again_diags;
    const auto again = sv::parse_length(sv::to_string(*length), "--input-len", again_diags);
    require(again.has_value() && again->kind == length->kind && again->min == length->min &&
            again->max == length->max && again->largest() == length->largest());
  }
  return 0;
}
