#include "dse/sweep_spec.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <random>
#include <system_error>
#include <utility>

#include <fmt/format.h>

#include "core/check.h"
#include "core/enum_table.h"
#include "core/hash.h"
#include "sim/driver.h"
#include "workloads/llm/quantization.h"

namespace coda::dse {
namespace {

// Points a grid or a sample may have; beyond it a sweep is a mistake (a range with a tiny step).
constexpr std::uint64_t kMaxPoints = 10'000'000;
constexpr std::size_t kMaxAxisValues = 100'000;

constexpr std::array<std::pair<std::string_view, SamplingMethod>, 3> kMethods{{
    {"grid", SamplingMethod::Grid},
    {"random", SamplingMethod::Random},
    {"latin_hypercube", SamplingMethod::LatinHypercube},
}};

constexpr std::array<std::pair<std::string_view, SweepObjective>, 6> kObjectives{{
    {"latency", SweepObjective::Latency},
    {"throughput", SweepObjective::Throughput},
    {"energy", SweepObjective::Energy},
    {"edp", SweepObjective::Edp},
    {"perf_per_watt", SweepObjective::PerfPerWatt},
    {"perf_per_mm2", SweepObjective::PerfPerMm2},
}};

SourceLocation location_of(const std::string& file, const YAML::Mark& mark) {
  if (mark.is_null()) return {file, 1, 1};
  return {file, mark.line + 1, mark.column + 1};
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

std::filesystem::path resolve(const std::filesystem::path& spec_file, const std::string& path) {
  const std::filesystem::path p(path);
  if (p.is_absolute()) return p.lexically_normal();
  return (spec_file.parent_path() / p).lexically_normal();
}

// ---- quantities for ranges ----

enum class QuantityKind : std::uint8_t { Number, Bytes, BytesPerSecond, BytesPerCycle, Hertz };

struct Quantity {
  QuantityKind kind = QuantityKind::Number;
  double value = 0;  // in bytes, bytes per second, bytes per cycle or hertz
};

std::string_view describe(QuantityKind kind) {
  switch (kind) {
    case QuantityKind::Number: return "a plain number";
    case QuantityKind::Bytes: return "a size";
    case QuantityKind::BytesPerSecond: return "a bandwidth per second";
    case QuantityKind::BytesPerCycle: return "a bandwidth per cycle";
    case QuantityKind::Hertz: return "a frequency";
  }
  return "a value";
}

std::optional<Quantity> parse_quantity(std::string_view text, std::string& why) {
  const std::string_view s = trim(text);
  double number = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), number);
  if (ec == std::errc{} && end == s.data() + s.size() && std::isfinite(number))
    return Quantity{QuantityKind::Number, number};
  if (s.find('/') != std::string_view::npos) {
    const auto bw = parse_bandwidth(s, why);
    if (!bw) return std::nullopt;
    if (const auto* per_s = std::get_if<BytesPerSecond>(&*bw))
      return Quantity{QuantityKind::BytesPerSecond, per_s->value};
    return Quantity{QuantityKind::BytesPerCycle, std::get<BytesPerCycle>(*bw).value};
  }
  std::string ignored;
  if (const auto bytes = parse_bytes(s, ignored))
    return Quantity{QuantityKind::Bytes, static_cast<double>(bytes->value)};
  if (const auto hz = parse_frequency(s, ignored)) return Quantity{QuantityKind::Hertz, hz->value};
  why = fmt::format("cannot read \"{}\" as a number, a size (\"256 KiB\"), a bandwidth "
                    "(\"20 B/cycle\", \"34 GB/s\") or a frequency (\"700 MHz\")",
                    s);
  return std::nullopt;
}

bool integral(double v) { return v == std::floor(v) && std::fabs(v) < 9e15; }

std::string format_quantity(QuantityKind kind, double value, bool integers) {
  switch (kind) {
    case QuantityKind::Number:
      return integers ? fmt::format("{}", static_cast<std::int64_t>(std::llround(value)))
                      : fmt::format("{:.12g}", value);
    case QuantityKind::Bytes: {
      const auto bytes = static_cast<std::uint64_t>(std::llround(value));
      constexpr std::array<std::pair<std::uint64_t, std::string_view>, 3> kUnits{
          {{1ULL << 30, "GiB"}, {1ULL << 20, "MiB"}, {1ULL << 10, "KiB"}}};
      for (const auto& [size, name] : kUnits)
        if (bytes >= size && bytes % size == 0) return fmt::format("{} {}", bytes / size, name);
      return fmt::format("{} B", bytes);
    }
    case QuantityKind::BytesPerSecond: return fmt::format("{:.12g} GB/s", value / 1e9);
    case QuantityKind::BytesPerCycle: return fmt::format("{:.12g} B/cycle", value);
    case QuantityKind::Hertz: return fmt::format("{:.12g} MHz", value / 1e6);
  }
  return {};
}

// A range {from, to, factor} or {from, to, step} -> the values it names, as YAML text.
std::optional<std::vector<std::string>> read_range(const YamlReader& range, Diagnostics& diags) {
  const std::size_t errors_before = diags.error_count();
  std::string from_text, to_text;
  range.required("from", from_text, diags);
  range.required("to", to_text, diags);
  const bool has_step = range.has("step");
  const bool has_factor = range.has("factor");
  std::string step_text;
  double factor = 0;
  if (has_step) range.at("step").read(step_text, diags);
  if (has_factor) range.at("factor").read(factor, diags);
  range.reject_unknown_keys(diags);
  if (has_step == has_factor) {
    diags.error(range,
                has_step ? "a range takes step or factor, not both"
                         : "a range needs a step (linear) or a factor (geometric)",
                "write e.g. {from: 64, to: 256, step: 64} or {from: 256 KiB, to: 4 MiB, "
                "factor: 2}");
    return std::nullopt;
  }
  if (diags.error_count() != errors_before) return std::nullopt;

  std::string why;
  const auto from = parse_quantity(from_text, why);
  if (!from) {
    diags.error(range.at("from"), why);
    return std::nullopt;
  }
  const auto to = parse_quantity(to_text, why);
  if (!to) {
    diags.error(range.at("to"), why);
    return std::nullopt;
  }
  if (to->kind != from->kind) {
    diags.error(range.at("to"),
                fmt::format("\"{}\" is {}, but from: \"{}\" is {}", to_text, describe(to->kind),
                            from_text, describe(from->kind)),
                "write both ends in the same kind of unit");
    return std::nullopt;
  }
  std::vector<double> values;
  bool integers = integral(from->value) && integral(to->value);
  const double span = to->value - from->value;
  if (has_step) {
    const auto step = parse_quantity(step_text, why);
    if (!step) {
      diags.error(range.at("step"), why);
      return std::nullopt;
    }
    if (step->kind != from->kind) {
      diags.error(range.at("step"),
                  fmt::format("\"{}\" is {}, but from: \"{}\" is {}", step_text,
                              describe(step->kind), from_text, describe(from->kind)),
                  "write the step in the same kind of unit as from and to");
      return std::nullopt;
    }
    // parse_quantity reads no sign for units, so a negative step is a plain number.
    const double step_value = step->value;
    if (step_value == 0 || (span != 0 && (span > 0) != (step_value > 0))) {
      diags.error(range.at("step"),
                  fmt::format("step {} does not move from {} towards {}", step_text, from_text,
                              to_text),
                  span < 0 ? "a falling range needs a negative step"
                           : "write a step above zero, e.g. the distance between two values");
      return std::nullopt;
    }
    integers = integers && integral(step_value);
    const double count = std::floor(span / step_value + 1e-9) + 1;
    if (count > static_cast<double>(kMaxAxisValues)) {
      diags.error(range,
                  fmt::format("the range has {:.0f} values, more than {}", count, kMaxAxisValues),
                  "use a larger step");
      return std::nullopt;
    }
    for (std::size_t i = 0; i < static_cast<std::size_t>(count); ++i)
      values.push_back(from->value + static_cast<double>(i) * step_value);
  } else {
    const bool rising = span > 0;
    if (from->value <= 0 || factor <= 0 || factor == 1 || (span != 0 && rising != (factor > 1))) {
      diags.error(range.at("factor"),
                  from->value <= 0
                      ? fmt::format("a geometric range cannot start at {}", from_text)
                      : fmt::format("factor {} does not move from {} towards {}", factor,
                                    from_text, to_text),
                  from->value <= 0 ? "start above zero, or use step:"
                  : span < 0       ? "a falling range needs a factor between 0 and 1"
                                   : "write a factor above 1, e.g. 2");
      return std::nullopt;
    }
    const double count =
        std::floor(std::log(to->value / from->value) / std::log(factor) + 1e-9) + 1;
    if (count > static_cast<double>(kMaxAxisValues)) {
      diags.error(range,
                  fmt::format("the range has {:.0f} values, more than {}", count, kMaxAxisValues),
                  "use a larger factor");
      return std::nullopt;
    }
    integers = integers && integral(factor);
    double v = from->value;
    for (std::size_t i = 0; i < static_cast<std::size_t>(count); ++i, v *= factor)
      values.push_back(v);
  }
  std::vector<std::string> texts;
  texts.reserve(values.size());
  for (const double v : values) {
    if (from->kind == QuantityKind::Bytes && !integral(v)) {
      diags.error(range,
                  fmt::format("the range reaches {} bytes, not a whole number", v),
                  "choose from, step or factor so every value is whole bytes");
      return std::nullopt;
    }
    texts.push_back(format_quantity(from->kind, v, integers));
  }
  return texts;
}

// ---- paths into the arch YAML ----

std::string path_prefix(const std::vector<PathStep>& steps, std::size_t count) {
  std::string text;
  for (std::size_t i = 0; i < count; ++i) {
    if (const auto* key = std::get_if<std::string>(&steps[i]))
      text += (text.empty() ? "" : ".") + *key;
    else
      text += fmt::format("[{}]", std::get<std::size_t>(steps[i]));
  }
  return text.empty() ? "the document" : fmt::format("'{}'", text);
}

std::string_view kind_of(const YAML::Node& node) {
  if (node.IsMap()) return "a map";
  if (node.IsSequence()) return "a list";
  if (node.IsScalar()) return "a value";
  return "empty";
}

// Whether `steps` name a scalar of `root`; otherwise `why` and `hint` say what is there.
bool check_path(const YAML::Node& root, const std::vector<PathStep>& steps, std::string& why,
                std::string& hint) {
  YAML::Node node(root);
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const YAML::Node& here = node;
    if (const auto* key = std::get_if<std::string>(&steps[i])) {
      if (!here.IsMap()) {
        why = fmt::format("{} is {} in the base arch, not a map with key '{}'",
                          path_prefix(steps, i), kind_of(here), *key);
        return false;
      }
      const YAML::Node child = here[*key];
      if (!child.IsDefined()) {
        std::vector<std::string> keys;
        for (const auto& entry : here) keys.push_back(entry.first.Scalar());
        const std::vector<std::string_view> views(keys.begin(), keys.end());
        const auto guess = did_you_mean(*key, views);
        why = fmt::format("the base arch has no key '{}' in {}", *key, path_prefix(steps, i));
        hint = guess ? fmt::format("did you mean '{}'?", *guess)
                     : fmt::format("keys there: {}", fmt::join(keys, ", "));
        return false;
      }
      node.reset(child);
    } else {
      const std::size_t index = std::get<std::size_t>(steps[i]);
      if (!here.IsSequence()) {
        why = fmt::format("{} is {} in the base arch, not a list", path_prefix(steps, i),
                          kind_of(here));
        return false;
      }
      if (index >= here.size()) {
        why = fmt::format("index {} is out of range: {} has {} item{}", index,
                          path_prefix(steps, i), here.size(), here.size() == 1 ? "" : "s");
        return false;
      }
      node.reset(here[index]);
    }
  }
  if (!node.IsScalar()) {
    why = fmt::format("{} is {} in the base arch; an axis sets one value",
                      path_prefix(steps, steps.size()), kind_of(node));
    hint = "name a key inside it, e.g. 'array.rows' or 'memory[0].capacity'";
    return false;
  }
  return true;
}

// The node `steps` name under `root` (check_path has said they name one), as a handle into
// the document: assigning to it sets the document's value.
YAML::Node node_at(const YAML::Node& root, const std::vector<PathStep>& steps) {
  YAML::Node node(root);  // reset() rebinds a handle; operator= would overwrite its node
  for (const PathStep& step : steps) {
    if (const auto* key = std::get_if<std::string>(&step))
      node.reset(node[*key]);
    else
      node.reset(node[std::get<std::size_t>(step)]);
  }
  return node;
}

// A workload's `search:` map (with mapper: search): objective, strategy, evaluations, patience,
// seed, as coda run's --objective, --search, --evaluations, --patience and --seed.
void read_search(const YamlReader& search, SweepWorkload& w, Diagnostics& diags) {
  if (!search.expect_map(diags)) return;
  if (!w.search_mapper) {
    diags.error(search, "search settings need mapper: search",
                "add mapper: search to this workload, or remove search:");
    return;
  }
  search.optional_enum("objective", w.search_goal.objective, mapper::objective_names(), diags);
  search.optional_enum("strategy", w.search_settings.strategy, mapper::strategy_names(), diags);
  mapper::SearchBudget& budget = w.search_settings.budget;
  if (search.optional("evaluations", budget.max_evaluations, diags) && budget.max_evaluations == 0)
    diags.error(search.at("evaluations"),
                "a search needs at least 1 evaluation per op", "e.g. evaluations: 20000");
  search.optional("patience", budget.patience, diags);
  search.optional("seed", w.search_settings.seed, diags);
  search.reject_unknown_keys(diags);
}

std::optional<SweepWorkload> read_workload(const YamlReader& item, const std::string& spec_file,
                                           Diagnostics& diags) {
  const std::size_t errors_before = diags.error_count();
  if (!item.expect_map(diags)) return std::nullopt;
  SweepWorkload w;
  w.where = item.location();
  item.required("name", w.name, diags);
  auto source = workload::read_workload_source(
      item, std::filesystem::path(spec_file).parent_path(), diags);
  if (source) w.source = std::move(*source);
  std::string precision, fusion, mapper = "fixed";
  if (item.optional("precision", precision, diags)) {
    w.precision = parse_data_type(precision);
    if (!w.precision)
      diags.error(item.at("precision"),
                  fmt::format("unknown precision '{}'", precision),
                  "one of fp32, tf32, bf16, fp16, fp8_e4m3, fp8_e5m2, int8, int4, int32");
  }
  if (item.optional("fusion", fusion, diags)) {
    const auto mode = mapper::parse_fusion_mode(fusion);
    if (mode)
      w.fusion = *mode;
    else
      diags.error(item.at("fusion"),
                  fmt::format("unknown fusion mode '{}'", fusion), "one of none, epilogue, all");
  }
  if (item.optional("mapper", mapper, diags)) {
    if (mapper == "search")
      w.search_mapper = true;
    else if (mapper != "fixed")
      diags.error(item.at("mapper"),
                  fmt::format("unknown mapper '{}'", mapper), "one of fixed, search");
  }
  if (item.has("search")) read_search(item.at("search"), w, diags);
  item.reject_unknown_keys(diags);
  if (diags.error_count() != errors_before) return std::nullopt;
  return w;
}

constexpr std::array<std::pair<std::string_view, WorkloadParam>, 13> kWorkloadParams{{
    {"batch", WorkloadParam::Batch},
    {"seq", WorkloadParam::Seq},
    {"phase", WorkloadParam::Phase},
    {"tp", WorkloadParam::Tp},
    {"pp", WorkloadParam::Pp},
    {"dp", WorkloadParam::Dp},
    {"micro_batches", WorkloadParam::MicroBatches},
    {"image", WorkloadParam::Image},
    {"dtype", WorkloadParam::Dtype},
    {"fusion", WorkloadParam::Fusion},
    {"quant", WorkloadParam::Quant},
    {"kv_dtype", WorkloadParam::KvDtype},
    {"runtime", WorkloadParam::Runtime},
}};
constexpr std::string_view kWorkloadPrefix = "workload.";

// `text` as a whole number of at least 1.
bool positive(const std::string& text, std::uint64_t& out, std::string& why) {
  const char* end = text.data() + text.size();
  const auto [at, ec] = std::from_chars(text.data(), end, out);
  if (ec != std::errc() || at != end || out == 0) {
    why = fmt::format("'{}' is not a whole number of at least 1", text);
    return false;
  }
  return true;
}

// Sets one workload parameter of `w` from its text; false with `why` when the text is not a
// value of it or the workload has no such parameter.
bool set_workload_param(WorkloadParam param, const std::string& text, SweepWorkload& w,
                        std::string& why) {
  auto* llm = std::get_if<workload::LlmSource>(&w.source);
  auto* cnn = std::get_if<workload::CnnSource>(&w.source);
  const auto kinds = [&](std::string_view which) {
    why = fmt::format("workload '{}' has no such parameter: it applies to {}", w.name, which);
    return false;
  };
  switch (param) {
    case WorkloadParam::Batch:
      if (llm) return positive(text, llm->phase.batch, why);
      if (cnn) return positive(text, cnn->batch, why);
      return kinds("LLM and CNN workloads");
    case WorkloadParam::Seq:
      return llm ? positive(text, llm->phase.seq_len, why) : kinds("LLM workloads");
    case WorkloadParam::Tp:
      return llm ? positive(text, llm->parallelism.tp, why) : kinds("LLM workloads");
    case WorkloadParam::Pp:
      return llm ? positive(text, llm->parallelism.pp, why) : kinds("LLM workloads");
    case WorkloadParam::Dp:
      return llm ? positive(text, llm->parallelism.dp, why) : kinds("LLM workloads");
    case WorkloadParam::MicroBatches:
      return llm ? positive(text, llm->parallelism.micro_batches, why) : kinds("LLM workloads");
    case WorkloadParam::Image:
      return cnn ? positive(text, cnn->image, why) : kinds("CNN workloads");
    case WorkloadParam::Phase: {
      if (!llm) return kinds("LLM workloads");
      const auto kind = enum_value(workload::llm::phase_names(), text);
      if (!kind) why = fmt::format("unknown phase '{}': one of prefill, decode, training", text);
      if (kind) llm->phase.kind = *kind;
      return kind.has_value();
    }
    case WorkloadParam::Dtype: {
      const auto type = parse_data_type(text);
      if (!type) {
        why = fmt::format("unknown element type '{}'", text);
        return false;
      }
      if (llm)
        llm->dtype = *type;
      else if (cnn)
        cnn->dtype = *type;
      else
        w.precision = *type;
      return true;
    }
    case WorkloadParam::Quant: {
      if (!llm) return kinds("LLM workloads");
      const std::optional<workload::llm::Quantization> quant =
          workload::llm::parse_quantization(text, why);
      if (quant) workload::llm::set_scheme(llm->phase.quant, *quant);
      return quant.has_value();
    }
    case WorkloadParam::KvDtype: {
      if (!llm) return kinds("LLM workloads");
      const auto type = parse_data_type(text);
      if (!type) why = fmt::format("unknown element type '{}'", text);
      if (type) llm->phase.quant.kv_cache = *type;
      return type.has_value();
    }
    case WorkloadParam::Runtime: {
      if (!llm) return kinds("LLM workloads");
      const auto runtime = enum_value(workload::llm::runtime_names(), text);
      if (!runtime)
        why = fmt::format("unknown runtime '{}': one of {}", text,
                          enum_names(workload::llm::runtime_names()));
      if (runtime) llm->phase.runtime = *runtime;
      return runtime.has_value();
    }
    case WorkloadParam::Fusion: {
      const auto mode = mapper::parse_fusion_mode(text);
      if (!mode) why = fmt::format("unknown fusion mode '{}': one of none, epilogue, all", text);
      if (mode) w.fusion = *mode;
      return mode.has_value();
    }
  }
  return false;
}

void read_axes(const YamlReader& axes, const YAML::Node& arch_root, SweepSpec& spec,
               Diagnostics& diags) {
  if (!axes.expect_map(diags)) return;
  if (axes.node().size() == 0) {
    diags.error(axes, "no axes", "write e.g. array.rows: [64, 128]");
    return;
  }
  const std::string file = axes.location().file;
  for (const auto& entry : axes.node()) {
    const std::string path = entry.first.Scalar();
    const SourceLocation key_at = location_of(file, entry.first.Mark());
    const YamlReader value = axes.at(path);
    SweepAxis axis{path, {}, {}, key_at, std::nullopt};
    std::string why, hint;
    const bool workload_axis = path.starts_with(kWorkloadPrefix);
    const auto steps = workload_axis ? std::nullopt : parse_arch_path(path, why);
    if (workload_axis) {
      axis.workload = enum_value(kWorkloadParams, path.substr(kWorkloadPrefix.size()));
      if (!axis.workload) {
        std::string names;
        for (const auto& [name, param] : kWorkloadParams)
          names += fmt::format("{}workload.{}", names.empty() ? "" : ", ", name);
        diags.error(key_at, value.path(),
                    fmt::format("'{}' is not a workload parameter an axis can vary", path),
                    "one of " + names);
      }
    } else if (!steps) {
      diags.error(key_at, value.path(), why,
                  "write keys and list indices, e.g. compute[0].array.rows");
    } else if (!arch_root.IsNull() && !check_path(arch_root, *steps, why, hint)) {
      diags.error(key_at, value.path(), why, hint);
    } else {
      axis.steps = *steps;
      if (!arch_root.IsNull()) axis.base = node_at(arch_root, *steps).Scalar();
    }
    if (value.is_sequence()) {
      for (const YamlReader& item : value.items()) {
        if (!item.is_scalar() || item.node().Scalar().empty()) {
          diags.error(item, "an axis value must be one scalar",
                      "write e.g. 128 or \"256 KiB\"");
          continue;
        }
        axis.values.push_back(item.node().Scalar());
      }
      if (value.node().size() == 0)
        diags.error(value, "the list of values is empty",
                    "write at least one value, e.g. [64, 128]");
    } else if (value.is_map()) {
      if (auto values = read_range(value, diags)) {
        axis.values = std::move(*values);
        if (axis.values.empty())
          diags.error(value, "the range has no values");
      }
    } else {
      diags.error(value,
                  "an axis is a list of values or a range",
                  "write e.g. [64, 128, 256] or {from: 256 KiB, to: 4 MiB, factor: 2}");
    }
    // A workload axis's every value must apply to every workload (read before the axes).
    if (axis.workload)
      for (std::size_t i = 0; i < axis.values.size(); ++i)
        for (const SweepWorkload& w : spec.workloads) {
          SweepWorkload copy = w;
          if (!set_workload_param(*axis.workload, axis.values[i], copy, why)) {
            diags.error(value.is_sequence() ? value.items()[i] : value, why,
                        "a workload axis applies to every workload of the spec");
            break;
          }
        }
    spec.axes.push_back(std::move(axis));
  }
}

void read_sampling(const YamlReader& sampling, SamplingSpec& out, Diagnostics& diags) {
  if (!sampling.expect_map(diags)) return;
  const bool method_read =
      sampling.required_enum("method", out.method, EnumTable<SamplingMethod>(kMethods), diags);
  const bool has_points = sampling.has("points");
  if (has_points) {
    std::int64_t points = 0;
    if (sampling.at("points").read(points, diags)) {
      if (points <= 0)
        diags.error(sampling.at("points"),
                    fmt::format("points must be at least 1, not {}", points));
      else if (static_cast<std::uint64_t>(points) > kMaxPoints)
        diags.error(sampling.at("points"),
                    fmt::format("{} points is more than {}", points, kMaxPoints));
      else
        out.points = static_cast<std::uint64_t>(points);
    }
  }
  sampling.optional("seed", out.seed, diags);
  sampling.reject_unknown_keys(diags);
  if (!method_read) return;  // an unknown method says so; nothing to check points against
  if (out.method == SamplingMethod::Grid && has_points)
    diags.error(sampling.at("points"),
                "a grid runs every combination; points is for random and latin_hypercube",
                "remove points:, or write method: random or latin_hypercube");
  if (out.method != SamplingMethod::Grid && !has_points)
    diags.error(sampling,
                fmt::format("method {} needs points:", to_string(out.method)),
                "write e.g. {method: latin_hypercube, points: 32, seed: 1}");
}

void read_constraints(const YamlReader& c, SweepConstraints& out, Diagnostics& diags) {
  if (!c.expect_map(diags)) return;
  for (const auto& [key, field] : {std::pair{"max_area_mm2", &out.max_area_mm2},
                                   std::pair{"max_power_w", &out.max_power_w}}) {
    double v = 0;
    if (!c.optional(key, v, diags)) continue;
    if (v <= 0)
      diags.error(c.at(key), fmt::format("must be above 0, not {}", v));
    else
      *field = v;
  }
  c.optional("fits_memory", out.fits_memory, diags);
  c.reject_unknown_keys(diags);
}

}  // namespace

std::string_view to_string(SamplingMethod method) {
  for (const auto& [name, value] : kMethods)
    if (value == method) return name;
  return "?";
}

std::string_view to_string(SweepObjective objective) {
  for (const auto& [name, value] : kObjectives)
    if (value == objective) return name;
  return "?";
}

bool maximised(SweepObjective objective) {
  return objective == SweepObjective::Throughput || objective == SweepObjective::PerfPerWatt ||
         objective == SweepObjective::PerfPerMm2;
}

std::optional<std::vector<PathStep>> parse_arch_path(std::string_view path, std::string& why) {
  std::vector<PathStep> steps;
  std::size_t i = 0;
  bool want_key = true;  // at the start and after a '.'
  while (i < path.size()) {
    if (path[i] == '[') {
      const std::size_t close = path.find(']', i);
      if (close == std::string_view::npos || close == i + 1 || steps.empty()) {
        why = fmt::format("'{}': '[' must follow a key and hold an index, as in compute[0]", path);
        return std::nullopt;
      }
      std::size_t index = 0;
      const auto [end, ec] = std::from_chars(path.data() + i + 1, path.data() + close, index);
      if (ec != std::errc{} || end != path.data() + close) {
        why = fmt::format("'{}': '{}' is not a list index", path, path.substr(i + 1, close - i - 1));
        return std::nullopt;
      }
      steps.emplace_back(index);
      i = close + 1;
      want_key = false;
    } else if (path[i] == '.') {
      if (want_key) {
        why = fmt::format("'{}': empty key", path);
        return std::nullopt;
      }
      want_key = true;
      ++i;
    } else {
      if (!want_key) {
        why = fmt::format("'{}': expected '.' or '[' after ']'", path);
        return std::nullopt;
      }
      const std::size_t end = path.find_first_of(".[", i);
      const std::size_t stop = end == std::string_view::npos ? path.size() : end;
      steps.emplace_back(std::string(path.substr(i, stop - i)));
      i = stop;
      want_key = false;
    }
  }
  if (steps.empty() || want_key) {
    why = fmt::format("'{}': empty path", path);
    return std::nullopt;
  }
  return steps;
}

std::optional<SweepSpec> read_sweep_spec(const YamlReader& root, Diagnostics& diags) {
  const std::size_t errors_before = diags.error_count();
  if (!root.expect_map(diags)) return std::nullopt;
  SweepSpec spec;
  spec.file = root.location().file;
  if (root.required("schema_version", spec.schema_version, diags) && spec.schema_version != 1) {
    diags.error(root.at("schema_version").location(), "schema_version",
                fmt::format("unsupported schema_version {}", spec.schema_version),
                "this coda reads sweep specs with schema_version: 1");
    return std::nullopt;
  }
  root.required("name", spec.name, diags);
  root.optional("description", spec.description, diags);
  if (root.optional("engine", spec.engine, diags) && spec.engine != "analytical" &&
      spec.engine != "systemc")
    diags.error(root.at("engine").location(), "engine",
                fmt::format("unknown engine '{}'", spec.engine),
                "write analytical (the closed forms) or systemc (the tile-level SystemC engine)");

  // The base arch, read and validated, so axis paths can be checked against it.
  std::string arch_text;
  std::optional<YamlDocument> arch_doc;
  if (root.required("arch", arch_text, diags)) {
    spec.arch = resolve(spec.file, arch_text);
    std::error_code ec;  // an unusable path (a name over 255 bytes) is no file either
    if (!std::filesystem::is_regular_file(spec.arch, ec)) {
      diags.error(root.at("arch").location(), "arch",
                  fmt::format("no such file '{}'", spec.arch.string()),
                  "the path is relative to the sweep spec's folder");
    } else {
      arch_doc = YamlDocument::load(spec.arch, diags);
      if (arch_doc) arch::read_arch_spec(arch_doc->root(), diags);
    }
  }

  if (root.has("workloads") && root.at("workloads").expect_sequence(diags)) {
    const YamlReader list = root.at("workloads");
    if (list.node().size() == 0)
      diags.error(list.location(), "workloads", "the list of workloads is empty",
                  "write e.g. - {name: resnet50, file: ../workloads/resnet50.yaml}");
    for (const YamlReader& item : list.items()) {
      auto w = read_workload(item, spec.file.string(), diags);
      if (!w) continue;
      const bool duplicate = std::any_of(spec.workloads.begin(), spec.workloads.end(),
                                         [&](const SweepWorkload& o) { return o.name == w->name; });
      if (duplicate)
        diags.error(item.at("name"),
                    fmt::format("workload name '{}' is used twice", w->name),
                    "give each workload its own name");
      else
        spec.workloads.push_back(std::move(*w));
    }
  } else if (!root.has("workloads")) {
    diags.error(root.location(), "", "missing required key 'workloads'",
                "write e.g. workloads: [{name: resnet50, file: ../workloads/resnet50.yaml}]");
  }

  if (root.has("axes"))
    read_axes(root.at("axes"), arch_doc ? arch_doc->root().node() : YAML::Node(), spec, diags);
  else
    diags.error(root.location(), "", "missing required key 'axes'",
                "write e.g. axes: {array.rows: [64, 128]}");

  if (root.has("sampling")) read_sampling(root.at("sampling"), spec.sampling, diags);
  if (root.has("constraints")) read_constraints(root.at("constraints"), spec.constraints, diags);
  if (root.has("objectives") && root.at("objectives").expect_sequence(diags)) {
    spec.objectives.clear();
    const YamlReader list = root.at("objectives");
    if (list.node().size() == 0)
      diags.error(list.location(), "objectives", "the list of objectives is empty",
                  "write e.g. [latency, energy]");
    for (const YamlReader& item : list.items()) {
      SweepObjective objective{};
      if (!item.read_enum(objective, EnumTable<SweepObjective>(kObjectives), diags)) continue;
      if (std::find(spec.objectives.begin(), spec.objectives.end(), objective) !=
          spec.objectives.end())
        diags.error(item,
                    fmt::format("objective '{}' is listed twice", to_string(objective)));
      else
        spec.objectives.push_back(objective);
    }
  }
  root.reject_unknown_keys(diags);

  if (diags.error_count() == errors_before && spec.sampling.method == SamplingMethod::Grid &&
      !grid_size(spec, kMaxPoints))
    diags.error(root.at("axes").location(), "axes",
                fmt::format("the grid has more than {} points", kMaxPoints),
                "use fewer values, or sampling: {method: latin_hypercube, points: N}");
  if (diags.error_count() != errors_before) return std::nullopt;

  YAML::Emitter canonical;
  canonical << root.node();
  std::string hashed(canonical.c_str(), canonical.size());
  hashed += fmt::format("\narch {:016x}", arch_doc->content_hash());
  for (const SweepWorkload& w : spec.workloads)
    hashed += fmt::format("\nworkload {:016x}", workload::source_hash(w.source));
  spec.hash = fnv1a64(hashed);
  return spec;
}

std::optional<SweepSpec> load_sweep_spec(const std::filesystem::path& file, Diagnostics& diags) {
  const auto doc = YamlDocument::load(file, diags);
  if (!doc) return std::nullopt;
  return read_sweep_spec(doc->root(), diags);
}

std::optional<std::uint64_t> grid_size(const SweepSpec& spec, std::uint64_t limit) {
  std::uint64_t size = 1;
  for (const SweepAxis& axis : spec.axes) {
    const std::uint64_t n = axis.values.size();
    if (n == 0) return 0;
    if (size > limit / n) return std::nullopt;
    size *= n;
  }
  return size;
}

namespace {

// A uniform double in [0, 1) from the generator's top 53 bits: the same on every platform,
// unlike std::uniform_real_distribution.
double unit_draw(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

std::size_t index_draw(std::mt19937_64& rng, std::size_t n) {
  const auto i = static_cast<std::size_t>(unit_draw(rng) * static_cast<double>(n));
  return std::min(i, n - 1);
}

// Strata ([axis][point]) and the position inside each stratum ([axis][point], in [0, 1)).
void latin_hypercube(std::size_t axes, std::uint64_t points, std::uint64_t seed,
                     std::vector<std::vector<std::size_t>>& strata,
                     std::vector<std::vector<double>>& positions) {
  std::mt19937_64 rng(seed);
  const auto n = static_cast<std::size_t>(points);
  strata.assign(axes, {});
  positions.assign(axes, {});
  for (std::size_t a = 0; a < axes; ++a) {
    std::vector<std::size_t>& perm = strata[a];
    perm.resize(n);
    for (std::size_t i = 0; i < n; ++i) perm[i] = i;
    for (std::size_t i = n; i > 1; --i) std::swap(perm[i - 1], perm[index_draw(rng, i)]);
    positions[a].resize(n);
    for (std::size_t i = 0; i < n; ++i)
      positions[a][i] = (static_cast<double>(perm[i]) + unit_draw(rng)) / static_cast<double>(n);
  }
}

}  // namespace

std::vector<std::vector<std::size_t>> latin_hypercube_strata(std::size_t axes,
                                                             std::uint64_t points,
                                                             std::uint64_t seed) {
  std::vector<std::vector<std::size_t>> strata;
  std::vector<std::vector<double>> positions;
  latin_hypercube(axes, points, seed, strata, positions);
  return strata;
}

PointSequence::PointSequence(const SweepSpec& spec)
    : method_(spec.sampling.method), seed_(spec.sampling.seed), rng_(spec.sampling.seed) {
  for (const SweepAxis& axis : spec.axes) {
    extents_.push_back(axis.values.size());
    if (axis.values.empty()) return;  // no points (size_ 0)
  }
  if (method_ == SamplingMethod::Grid) {
    size_ = grid_size(spec, kMaxPoints).value_or(0);
    return;
  }
  size_ = spec.sampling.points;
  if (method_ != SamplingMethod::LatinHypercube) return;
  const std::size_t axes = extents_.size();
  std::vector<std::vector<std::size_t>> strata;
  std::vector<std::vector<double>> positions;
  latin_hypercube(axes, size_, seed_, strata, positions);
  auto table = std::make_shared<std::vector<std::uint32_t>>();
  table->reserve(static_cast<std::size_t>(size_) * axes);
  for (std::size_t i = 0; i < static_cast<std::size_t>(size_); ++i)
    for (std::size_t a = 0; a < axes; ++a) {
      const std::size_t n = extents_[a];
      table->push_back(static_cast<std::uint32_t>(
          std::min(static_cast<std::size_t>(positions[a][i] * static_cast<double>(n)), n - 1)));
    }
  table_ = std::move(table);
}

SweepPoint PointSequence::at(std::uint64_t index) {
  CODA_CHECK(index < size_);
  const std::size_t axes = extents_.size();
  SweepPoint point(axes, 0);
  switch (method_) {
    case SamplingMethod::Grid:  // mixed radix, the last axis the fastest digit
      for (std::size_t a = axes; a-- > 0;) {
        point[a] = static_cast<std::size_t>(index % extents_[a]);
        index /= extents_[a];
      }
      break;
    case SamplingMethod::Random:
      if (index < next_) {
        rng_.seed(seed_);
        next_ = 0;
      }
      rng_.discard((index - next_) * axes);
      for (std::size_t a = 0; a < axes; ++a) point[a] = index_draw(rng_, extents_[a]);
      next_ = index + 1;
      break;
    case SamplingMethod::LatinHypercube:
      for (std::size_t a = 0; a < axes; ++a)
        point[a] = (*table_)[static_cast<std::size_t>(index) * axes + a];
      break;
  }
  return point;
}

std::vector<SweepPoint> enumerate_points(const SweepSpec& spec) {
  PointSequence sequence(spec);
  std::vector<SweepPoint> points;
  points.reserve(static_cast<std::size_t>(sequence.size()));
  for (std::uint64_t i = 0; i < sequence.size(); ++i) points.push_back(sequence.at(i));
  return points;
}

std::optional<arch::ArchSpec> apply_point(const SweepSpec& spec, const SweepPoint& point,
                                          Diagnostics& diags, std::uint64_t* arch_hash) {
  auto builder = PointArchBuilder::create(spec, diags);
  if (!builder) return std::nullopt;
  return builder->build(point, diags, arch_hash);
}

std::optional<std::string> point_arch_yaml(const SweepSpec& spec, std::uint64_t index,
                                           Diagnostics& diags) {
  PointSequence points(spec);
  if (index >= points.size()) {
    diags.error({spec.file.string(), 0, 0}, "point",
                fmt::format("the sweep '{}' has no point {}", spec.name, index),
                fmt::format("its points are 0 to {}", points.size() - 1));
    return std::nullopt;
  }
  const SweepPoint point = points.at(index);
  auto builder = PointArchBuilder::create(spec, diags);
  if (!builder || !builder->build(point, diags)) return std::nullopt;
  std::string head = fmt::format(
      "# Point {} of the sweep '{}' ({}), written by coda sweep "
      "--export-design:\n# the base arch {} with",
      index, spec.name, spec.file.string(), spec.arch.string());
  for (const auto& [path, value] : point_values(spec, point))
    head += fmt::format(" {}={}", path, value);
  return head + ".\n" + builder->text();
}

namespace {

// The node at `path` of `doc`, a handle into it; nullopt with `why` and `hint` as check_path.
std::optional<YAML::Node> scalar_at(const YamlDocument& doc, std::string_view path,
                                    std::string& why, std::string& hint) {
  const auto steps = parse_arch_path(path, why);
  if (!steps) return std::nullopt;
  const YAML::Node root = doc.root().node();
  if (!check_path(root, *steps, why, hint)) return std::nullopt;
  return node_at(root, *steps);
}

}  // namespace

std::optional<std::string> arch_value(const YamlDocument& doc, std::string_view path,
                                      std::string& why, std::string& hint) {
  const auto node = scalar_at(doc, path, why, hint);
  if (!node) return std::nullopt;
  return node->Scalar();
}

bool set_arch_value(YamlDocument& doc, std::string_view path, const std::string& value,
                    std::string& why, std::string& hint) {
  auto node = scalar_at(doc, path, why, hint);
  if (!node) return false;
  *node = YAML::Node(value);
  return true;
}

std::optional<PointArchBuilder> PointArchBuilder::create(const SweepSpec& spec,
                                                         Diagnostics& diags) {
  auto doc = YamlDocument::load(spec.arch, diags);
  if (!doc) return std::nullopt;
  const YAML::Node root = doc->root().node();
  std::vector<YAML::Node> targets;
  for (const SweepAxis& axis : spec.axes) {
    if (axis.workload) {  // no node of the arch: build() skips it
      targets.emplace_back();
      continue;
    }
    std::string why, hint;
    if (!check_path(root, axis.steps, why, hint)) {
      diags.error(axis.where, fmt::format("axes.{}", axis.path), why, hint);
      return std::nullopt;
    }
    targets.push_back(node_at(root, axis.steps));
  }
  return PointArchBuilder(spec, std::move(*doc), std::move(targets));
}

std::optional<arch::ArchSpec> PointArchBuilder::build(const SweepPoint& point, Diagnostics& diags,
                                                      std::uint64_t* arch_hash) {
  for (std::size_t a = 0; a < targets_.size() && a < point.size(); ++a)
    if (!spec_->axes[a].workload)  // keeps the mark: errors point into the arch file
      targets_[a] = spec_->axes[a].values.at(point[a]);
  if (arch_hash != nullptr) *arch_hash = doc_.content_hash();
  return arch::read_arch_spec(doc_.root(), diags);
}

bool has_workload_axes(const SweepSpec& spec) {
  return std::any_of(spec.axes.begin(), spec.axes.end(),
                     [](const SweepAxis& a) { return a.workload.has_value(); });
}

bool apply_workload_axes(const SweepSpec& spec, const SweepPoint& point, SweepWorkload& w,
                         std::string& why) {
  for (std::size_t a = 0; a < spec.axes.size() && a < point.size(); ++a)
    if (spec.axes[a].workload &&
        !set_workload_param(*spec.axes[a].workload, spec.axes[a].values.at(point[a]), w, why))
      return false;
  return true;
}

std::vector<std::pair<std::string, std::string>> point_values(const SweepSpec& spec,
                                                              const SweepPoint& point) {
  std::vector<std::pair<std::string, std::string>> values;
  for (std::size_t a = 0; a < spec.axes.size() && a < point.size(); ++a)
    values.emplace_back(spec.axes[a].path, spec.axes[a].values.at(point[a]));
  return values;
}

}  // namespace coda::dse
