#include "validation/serving_corpus.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <string_view>

#include <fmt/format.h>

#include "arch/arch_spec.h"
#include "arch/hardware_model.h"
#include "core/csv.h"
#include "core/data_type.h"
#include "core/text.h"
#include "core/yaml_reader.h"
#include "sim/serving/iteration_cost.h"
#include "sim/serving/requests.h"
#include "sim/serving/simulator.h"
#include "workloads/llm/llm_config.h"

namespace coda::validation {
namespace {

namespace fs = std::filesystem;
namespace sv = sim::serving;

constexpr std::array<std::string_view, 20> kMetrics{"throughput_output_tokens_s",
                                                    "throughput_total_tokens_s",
                                                    "throughput_req_s",
                                                    "ttft_mean_ms",
                                                    "ttft_p50_ms",
                                                    "ttft_p90_ms",
                                                    "ttft_p99_ms",
                                                    "tpot_mean_ms",
                                                    "tpot_p50_ms",
                                                    "tpot_p90_ms",
                                                    "tpot_p99_ms",
                                                    "itl_mean_ms",
                                                    "itl_p50_ms",
                                                    "itl_p90_ms",
                                                    "itl_p99_ms",
                                                    "e2e_mean_ms",
                                                    "e2e_p50_ms",
                                                    "e2e_p90_ms",
                                                    "e2e_p99_ms",
                                                    "e2e_max_ms"};
constexpr std::array<std::string_view, 4> kScenarios{"offline", "poisson", "closed",
                                                     "static_batch"};

// Reads one source's CSV into `source.rows`.
void read_rows(ServingSource& source, Diagnostics& diags) {
  const std::string name = source.file.string();
  std::string why;
  const std::optional<std::string> text = read_text_file(source.file, why);
  if (!text) {
    diags.error({name, 0, 0}, "file", why);
    return;
  }
  std::size_t pos = 0;
  int line = 1;
  std::vector<CsvCell> cells;
  if (!split_csv_record(*text, pos, line, cells)) {
    diags.error({name, 1, 1}, "header", "a quoted cell is not closed");
    return;
  }
  std::map<std::string, std::size_t> col;
  for (std::size_t i = 0; i < cells.size(); ++i) col[cells[i].text] = i;
  for (const char* required :
       {"source", "device", "chips", "tp", "model", "dtype", "scenario", "metric", "value", "unit"})
    if (!col.contains(required))
      diags.error({name, 1, 1}, "header", fmt::format("no column '{}'", required),
                  "validation/published/serving/README.md lists the columns");
  if (diags.has_errors()) return;
  while (pos < text->size()) {
    const int at = line;
    if (!split_csv_record(*text, pos, line, cells)) {
      diags.error({name, at, 1}, fmt::format("row {}", at), "a quoted cell is not closed");
      return;
    }
    if (cells.size() == 1 && cells[0].text.empty()) continue;
    const auto cell = [&](const char* c) -> std::string {
      const auto it = col.find(c);
      return it != col.end() && it->second < cells.size() ? cells[it->second].text : "";
    };
    const auto bad = [&](const char* c, const std::string& message, const std::string& hint) {
      diags.error({name, at, 1}, fmt::format("row {}, column '{}'", at, c), message, hint);
    };
    ServingRow r;
    r.where = {name, at, 1};
    r.source = cell("source");
    r.device = cell("device");
    r.model = cell("model");
    r.dtype = cell("dtype");
    r.kv_dtype = cell("kv_dtype");
    r.engine = cell("engine");
    r.scenario = cell("scenario");
    r.metric = cell("metric");
    r.unit = cell("unit");
    r.input_len = cell("input_len");
    r.output_len = cell("output_len");
    if (r.source != source.id)
      bad("source", fmt::format("'{}' in the file of source '{}'", r.source, source.id),
          "every row of a file belongs to its manifest entry's source");
    const auto count = [&](const char* c, bool required) -> std::optional<std::uint64_t> {
      const std::string t = cell(c);
      if (t.empty()) {
        if (required) bad(c, "empty", "a whole number above 0");
        return std::nullopt;
      }
      const auto v = parse_whole_uint(t);
      if (!v || *v == 0) {
        bad(c, fmt::format("'{}' is not a whole number above 0", t), "e.g. 8");
        return std::nullopt;
      }
      return v;
    };
    r.chips = count("chips", true).value_or(1);
    r.tp = count("tp", true).value_or(1);
    if (r.chips % r.tp != 0)
      bad("tp", fmt::format("{} tensor-parallel ranks do not divide {} chips", r.tp, r.chips),
          "chips is replicas x tp");
    r.concurrency = count("concurrency", false);
    r.num_requests = count("num_requests", false);
    r.max_batch = count("max_batch", false);
    r.max_batched_tokens = count("max_batched_tokens", false);
    if (const std::string rate = cell("rate_rps"); !rate.empty()) {
      r.rate = parse_finite_double(rate);
      if (!r.rate || *r.rate <= 0)
        bad("rate_rps", fmt::format("'{}' is not a rate", rate), "e.g. 4");
    }
    if (const std::string c = cell("chunked_prefill"); c == "true" || c == "false")
      r.chunked_prefill = c == "true";
    else if (!c.empty())
      bad("chunked_prefill", fmt::format("'{}'", c), "true, false or empty");
    if (std::find(kScenarios.begin(), kScenarios.end(), r.scenario) == kScenarios.end())
      bad("scenario", fmt::format("unknown scenario '{}'", r.scenario),
          "offline, poisson, closed or static_batch");
    if (!known_serving_metric(r.metric))
      bad("metric", fmt::format("unknown metric '{}'", r.metric),
          "README.md lists them: throughput_output_tokens_s, ttft_p50_ms, ...");
    const auto value = parse_finite_double(cell("value"));
    if (!value || *value <= 0)
      bad("value", fmt::format("'{}' is not a measurement above 0", cell("value")), "e.g. 27911");
    else
      r.value = *value;
    source.rows.push_back(std::move(r));
  }
}

// The scenario a row measured: rows that agree on it share one simulation.
std::string scenario_key(const ServingRow& r) {
  return fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}", r.source, r.device, r.chips, r.tp,
                     r.model, r.dtype + "/" + r.kv_dtype, r.scenario, r.rate.value_or(0),
                     r.concurrency.value_or(0), r.num_requests.value_or(0), r.input_len,
                     r.output_len, r.max_batch.value_or(0), r.max_batched_tokens.value_or(0));
}

// A row's types as a model type and a quantization: "fp8" is TensorRT-LLM's --quantization FP8
// (and ModelOpt's, NIM's and MLPerf's FP8 engines): FP8 weights and GEMM inputs of the bf16
// checkpoint; the KV cache as the row's kv_dtype says.
struct ServingTypes {
  DataType model = DataType::Bf16;
  workload::llm::Quantization quant;
};

std::optional<DataType> element_type(const std::string& d) {
  if (d == "fp8") return DataType::Fp8E4M3;
  if (d == "fp16") return DataType::Fp16;
  if (d == "bf16") return DataType::Bf16;
  return std::nullopt;
}

std::optional<ServingTypes> serving_types(const ServingRow& r) {
  const std::optional<DataType> type = element_type(r.dtype);
  const std::optional<DataType> kv = r.kv_dtype.empty() ? type : element_type(r.kv_dtype);
  if (!type || !kv) return std::nullopt;
  ServingTypes out;
  if (*type == DataType::Fp8E4M3) {
    out.quant.weights = out.quant.activations = DataType::Fp8E4M3;
    if (r.fp8_context_fmha) out.quant.context_attention = DataType::Fp8E4M3;
  } else {
    out.model = *type;
  }
  if (*kv != out.model) out.quant.kv_cache = *kv;
  return out;
}

std::optional<double> metric_of(const sv::ServeSummary& s, const std::string& m) {
  if (m == "throughput_output_tokens_s") return s.output_tokens_per_s;
  if (m == "throughput_total_tokens_s") return s.total_tokens_per_s;
  if (m == "throughput_req_s") return s.requests_per_s;
  const auto pick = [](const sv::Stats& st, std::string_view which) -> double {
    if (which == "mean") return st.mean;
    if (which == "p50") return st.p50;
    if (which == "p90") return st.p90;
    if (which == "p99") return st.p99;
    return st.max;
  };
  const std::size_t a = m.find('_'), b = m.rfind('_');
  if (a == std::string::npos || b <= a) return std::nullopt;
  const std::string what = m.substr(0, a), which = m.substr(a + 1, b - a - 1);
  const sv::Stats* st = what == "ttft"   ? &s.ttft
                        : what == "tpot" ? &s.tpot
                        : what == "itl"  ? &s.itl
                        : what == "e2e"  ? &s.e2e
                                         : nullptr;
  if (st == nullptr) return std::nullopt;
  return pick(*st, which) * 1e3;  // ms
}

// What a comparison keeps across scenarios: archs and pricers (with their memoised graphs).
struct Pricers {
  std::map<std::string, std::unique_ptr<arch::HardwareModel>> hw;
  std::map<std::string, std::unique_ptr<sv::IterationPricer>> pricers;
};

}  // namespace

bool known_serving_metric(const std::string& metric) {
  return std::find(kMetrics.begin(), kMetrics.end(), metric) != kMetrics.end();
}

std::optional<ServingCorpus> load_serving_corpus(const fs::path& manifest, Diagnostics& diags) {
  const std::size_t before = diags.error_count();
  const std::optional<YamlDocument> doc = YamlDocument::load(manifest, diags);
  if (!doc) return std::nullopt;
  const YamlReader root = doc->root();
  if (!root.expect_map(diags)) return std::nullopt;
  std::uint32_t version = 0;
  if (root.required("schema_version", version, diags) && version != 1)
    diags.error(root.at("schema_version"), fmt::format("schema_version {} is not known", version),
                "1");
  ServingCorpus corpus;
  const fs::path folder = manifest.parent_path();
  const std::optional<fs::path> top = corpus_root(folder.empty() ? fs::path(".") : folder);
  if (!top) {
    diags.error(root, "no configs/ folder above the manifest",
                "keep the manifest inside the coda repository");
    return std::nullopt;
  }
  corpus.root = *top;
  const YamlReader devices = root.at("devices");
  if (devices.expect_map(diags))
    for (const std::string& key : devices.keys()) {
      std::string path;
      if (!devices.at(key).read(path, diags)) continue;
      corpus.devices[key] = *top / path;
      if (!fs::is_regular_file(corpus.devices[key]))
        diags.error(devices.at(key), fmt::format("'{}' does not exist", path),
                    "an arch preset under configs/arch/");
    }
  std::string models;
  if (root.required("models", models, diags)) {
    corpus.models = *top / models;
    if (!fs::is_directory(corpus.models))
      diags.error(root.at("models"), fmt::format("'{}' is not a folder", models),
                  "configs/workloads/llm");
  }
  const YamlReader sources = root.at("sources");
  if (sources.expect_sequence(diags))
    for (const YamlReader& item : sources.items()) {
      if (!item.expect_map(diags)) continue;
      ServingSource s;
      std::string file;
      item.required("id", s.id, diags);
      item.required_enum("split", s.split, split_names(), diags);
      if (item.required("file", file, diags)) {
        s.file = folder / file;
        if (!fs::is_regular_file(s.file))
          diags.error(item.at("file"), fmt::format("'{}' does not exist", s.file.string()),
                      "a CSV beside the manifest");
      }
      item.optional("fp8_context_fmha", s.fp8_context_fmha, diags);
      if (item.optional("runtime", s.runtime, diags) && !enum_value(sv::runtime_names(), s.runtime))
        diags.error(item.at("runtime"),
                    fmt::format("runtime '{}' is not one coda schedules as", s.runtime),
                    "tensorrt_llm or vllm");
      item.reject_unknown_keys(diags);
      corpus.sources.push_back(std::move(s));
    }
  root.reject_unknown_keys(diags);
  if (diags.error_count() > before) return std::nullopt;
  for (ServingSource& s : corpus.sources) {
    read_rows(s, diags);
    for (ServingRow& r : s.rows) {
      r.fp8_context_fmha = s.fp8_context_fmha;
      r.runtime = s.runtime.empty() ? r.engine : s.runtime;
    }
  }
  if (diags.error_count() > before) return std::nullopt;
  return corpus;
}

std::vector<ServingCompared> compare_serving(const ServingCorpus& corpus,
                                             const ServingCompareOptions& options) {
  std::vector<ServingCompared> out;
  for (const ServingSource& s : corpus.sources)
    for (const ServingRow& r : s.rows) out.push_back({.row = &r, .split = s.split});
  std::map<std::string, std::vector<std::size_t>> groups;
  for (std::size_t i = 0; i < out.size(); ++i) groups[scenario_key(*out[i].row)].push_back(i);
  Pricers cache;
  for (const auto& group : groups) {
    const std::vector<std::size_t>& members = group.second;
    const ServingRow& r = *out[members.front()].row;
    const auto skip = [&](const std::string& why) {
      for (const std::size_t i : members) out[i].skipped = why;
    };
    const auto in = parse_whole_uint(r.input_len), len = parse_whole_uint(r.output_len);
    if (!in || !len || *in == 0 || *len == 0) {
      skip(
          fmt::format("lengths given as a dataset ({}, {}) whose distribution the corpus does "
                      "not describe",
                      r.input_len, r.output_len));
      continue;
    }
    const auto device = corpus.devices.find(r.device);
    if (device == corpus.devices.end()) {
      skip(fmt::format("device '{}' has no arch in the manifest", r.device));
      continue;
    }
    const fs::path model_file = corpus.models / (r.model + ".yaml");
    const std::optional<ServingTypes> types = serving_types(r);
    if (!types) {
      skip(fmt::format("types '{}' (KV cache '{}') are not ones coda serves a model in", r.dtype,
                       r.kv_dtype));
      continue;
    }
    Diagnostics diags;
    const std::string hw_key = device->second.string();
    if (!cache.hw.contains(hw_key)) {
      const auto spec = arch::load_arch(device->second, diags);
      if (!spec) {
        skip(diags.format_all());
        continue;
      }
      cache.hw[hw_key] = std::make_unique<arch::HardwareModel>(spec->spec);
    }
    const arch::HardwareModel& hw = *cache.hw[hw_key];
    const std::string pricer_key = fmt::format("{}|{}|{}|{}|{}|{}", hw_key, r.model, r.dtype,
                                               r.kv_dtype, r.fp8_context_fmha, r.tp);
    if (!cache.pricers.contains(pricer_key)) {
      auto model = workload::llm::load_llm_config(model_file, diags);
      if (!model) {
        skip(fmt::format("model '{}': {}", r.model, diags.format_all()));
        continue;
      }
      model->dtype = types->model;
      auto pricer =
          sv::IterationPricer::make(*model, hw, {.tp = r.tp, .quant = types->quant}, diags);
      if (!pricer) {
        skip(diags.format_all());
        continue;
      }
      cache.pricers[pricer_key] = std::make_unique<sv::IterationPricer>(std::move(*pricer));
    }
    sv::IterationPricer& pricer = *cache.pricers[pricer_key];
    sv::RequestSpec spec;
    spec.input = {.kind = sv::LengthKind::Fixed, .value = *in, .min = *in, .max = *in};
    spec.output = {.kind = sv::LengthKind::Fixed, .value = *len, .min = *len, .max = *len};
    spec.seed = options.seed;
    if (r.scenario == "offline" || r.scenario == "static_batch") {
      spec.arrivals = {.kind = sv::ArrivalKind::Offline};
    } else if (r.scenario == "poisson") {
      if (!r.rate) {
        skip("a poisson row without rate_rps");
        continue;
      }
      spec.arrivals = {.kind = sv::ArrivalKind::Poisson, .rate = *r.rate};
    } else {
      if (!r.concurrency) {
        skip("a closed-loop row without concurrency");
        continue;
      }
      spec.arrivals = {.kind = sv::ArrivalKind::Closed, .concurrency = *r.concurrency};
    }
    if (r.num_requests) {
      spec.count = *r.num_requests;
    } else if (r.concurrency) {
      spec.count = std::max(options.min_requests, options.requests_per_client * *r.concurrency);
    } else {
      skip("the source states no request count");
      continue;
    }
    sv::Deployment deployment;
    deployment.replicas = r.chips / r.tp;
    // TensorRT-LLM's capacity scheduler admits a request only with blocks for its whole
    // sequence (CapacitySchedulerPolicy GUARANTEED_NO_EVICT, the SchedulerConfig default and
    // trtllm-bench's --scheduler_policy default); other engines take blocks as they go (vLLM).
    // Its micro-batch scheduler runs the generation requests and whole contexts in one
    // iteration within max_num_tokens (batch_manager/microBatchScheduler.cpp, chunked context
    // off: the ExecutorConfig default and trtllm-bench's); vLLM 0.6's V0 scheduler runs
    // prefills first.
    // Engines coda has no scheduler of its own for (SGLang, NIM's 'other') run as vLLM's.
    sv::apply_runtime(deployment.scheduler,
                      enum_value(sv::runtime_names(), r.runtime).value_or(sv::Runtime::Vllm));
    if (r.max_batch) deployment.scheduler.max_batch = *r.max_batch;
    if (r.max_batched_tokens) deployment.scheduler.max_batched_tokens = *r.max_batched_tokens;
    if (r.chunked_prefill && *r.chunked_prefill)
      deployment.scheduler.batching = sv::Batching::Chunked;
    const auto result =
        sv::simulate(pricer, deployment, sv::make_requests(spec), spec.arrivals, {}, diags);
    if (!result) {
      skip(diags.format_all());
      continue;
    }
    for (const std::size_t i : members) {
      const std::optional<double> v = metric_of(result->summary, out[i].row->metric);
      if (v)
        out[i].predicted = v;
      else
        out[i].skipped = fmt::format("metric '{}' not computed", out[i].row->metric);
    }
  }
  return out;
}

}  // namespace coda::validation
