#pragma once
// The request stream an LLM serving simulation replays (docs/serving.md "Requests"): arrival
// times and input/output lengths, synthetic (offline, Poisson, gamma or closed-loop arrivals;
// fixed, uniform or log-normal lengths) or from a trace file. Deterministic for a seed on every
// platform: Boost.Random's engine and distributions are specified to the bit, unlike the
// standard library's distributions, whose algorithms each library chooses.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/diagnostics.h"

namespace coda::sim::serving {

// A distribution of lengths in tokens.
//   fixed      `value`
//   uniform    an integer in [min, max], each equally likely
//   lognormal  round(exp(N(ln median, sigma))) clamped to [min, max]: the long-tailed shape of
//              chat prompts and answers (ShareGPT's lengths are often described this way)
enum class LengthKind : std::uint8_t { Fixed, Uniform, LogNormal };
struct LengthDist {
  LengthKind kind = LengthKind::Fixed;
  std::uint64_t value = 0;
  std::uint64_t min = 1, max = 1;
  double median = 0, sigma = 0;
  std::uint64_t largest() const;  // the longest length it can give
  double mean_hint() const;  // its mean, for messages and search brackets (lognormal: unclamped)
  friend bool operator==(const LengthDist&, const LengthDist&) = default;
};
std::string to_string(const LengthDist& dist);  // "512", "uniform:128:1024", ...

// Parses "N", "uniform:MIN:MAX" or "lognormal:MEDIAN:SIGMA:MIN:MAX"; errors name `option`.
std::optional<LengthDist> parse_length(std::string_view text, std::string_view option,
                                       Diagnostics& diags);

// How requests arrive.
//   offline  every request at time 0 (a throughput benchmark)
//   poisson  exponential gaps at `rate` requests per second
//   gamma    gamma-distributed gaps at `rate`, coefficient of variation `cv` (burstier when > 1)
//   closed   `concurrency` clients, each sending its next request the moment its last one ends
enum class ArrivalKind : std::uint8_t { Offline, Poisson, Gamma, Closed };
std::string_view to_string(ArrivalKind kind);  // "offline", "poisson", "gamma", "closed"

struct ArrivalSpec {
  ArrivalKind kind = ArrivalKind::Offline;
  double rate = 0;                // poisson, gamma: requests per second
  double cv = 1;                  // gamma
  std::uint64_t concurrency = 0;  // closed
  // The benchmark harness's warm-up (AIPerf's and genai-perf's --warmup-request-count): the
  // first `warmup` requests by id run like the others but are left out of every statistic.
  std::uint64_t warmup = 0;
  friend bool operator==(const ArrivalSpec&, const ArrivalSpec&) = default;
};

struct Request {
  std::uint64_t id = 0;
  // Seconds from the start. Closed-loop arrivals are set by the simulation (a client's request
  // arrives when its previous one ends); the first `concurrency` arrive at 0.
  double arrival = 0;
  std::uint64_t input = 1;   // prompt tokens
  std::uint64_t output = 1;  // tokens generated, the first one by the prefill
  // The prompt's first tokens that every request of the stream shares (a system prompt), which
  // prefix caching can reuse; less than `input`.
  std::uint64_t shared_prefix = 0;
  friend bool operator==(const Request&, const Request&) = default;
};

struct RequestSpec {
  ArrivalSpec arrivals;
  LengthDist input{LengthKind::Fixed, 512};
  LengthDist output{LengthKind::Fixed, 128};
  std::uint64_t count = 1000;
  std::uint64_t seed = 1;
  // Tokens every prompt starts with (a system prompt), added to each sampled input length.
  std::uint64_t shared_prefix = 0;
};

// The spec's requests in id order; each input is its sampled length plus shared_prefix. Lengths
// come from an mt19937_64 seeded with `seed` (each request's input, then its output), gaps from
// another seeded with seed ^ 0x9e3779b97f4a7c15: the same seed gives the same lengths whatever the
// arrivals.
std::vector<Request> make_requests(const RequestSpec& spec);

// A trace file: CSV with a header naming arrival_s, input_tokens and output_tokens (any order,
// other columns ignored), one request a row, arrivals in seconds, non-decreasing. Errors name
// the file, the line and the column.
std::optional<std::vector<Request>> read_request_trace(const std::filesystem::path& file,
                                                       Diagnostics& diags);
// The same from text; `name` is the file name errors carry.
std::optional<std::vector<Request>> parse_request_trace(std::string_view text,
                                                        const std::string& name,
                                                        Diagnostics& diags);

}  // namespace coda::sim::serving
