#include "workloads/source.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <span>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/hash.h"
#include "workloads/cnn/cnn_zoo.h"
#include "workloads/importers.h"
#include "workloads/llm/hf_config.h"
#include "workloads/llm/llm_config.h"
#include "workloads/passes/builtin_passes.h"
#if CODA_WITH_ONNX
#include "workloads/onnx/onnx_plugin.h"
#endif

namespace coda::workload {
namespace {

template <class... F>
struct Overload : F... {
  using F::operator()...;
};
template <class... F>
Overload(F...) -> Overload<F...>;  // clang before 17 deduces no aggregate's arguments

std::optional<LoadedWorkload> load_file(const FileSource& source, Diagnostics& diags) {
  if (source.file.extension() != ".onnx" && source.dtype) {
    diags.error({source.file.string(), 0, 0}, "dtype",
                "an element type is given for a coda workload YAML, whose ops state their own",
                "dtype (--dtype) applies to ONNX files, --llm and --cnn; edit the YAML's dtypes");
    return std::nullopt;
  }
  if (source.file.extension() != ".onnx") {
    auto graph = load_workload(source.file, diags);
    if (!graph) return std::nullopt;
    return LoadedWorkload{std::move(*graph), {}};
  }
#if CODA_WITH_ONNX
  onnx::OnnxOptions options;
  options.skip_unsupported = source.skip_unsupported;
  options.dim_bindings = source.dim_bindings;
  options.fuse_functions = source.fuse_functions;
  options.float_dtype = source.dtype;
  auto imported = onnx::import_onnx_via_plugin(source.file, options, diags);
  if (!imported) return std::nullopt;
  LoadedWorkload out{std::move(imported->graph), {}};
  if (!imported->functions.empty()) {
    std::vector<std::string> counts;
    for (const auto& [name, count] : imported->functions)
      counts.push_back(fmt::format("{} {}", count, name));
    out.notes.push_back(
        fmt::format("fuse-functions: recognised {} (each pattern imported as one op)",
                    fmt::join(counts, ", ")));
  }
  if (!imported->skipped.empty())
    out.notes.push_back(fmt::format("skipped {} unsupported node{}: {}", imported->skipped.size(),
                                    imported->skipped.size() == 1 ? "" : "s",
                                    fmt::join(imported->skipped, ", ")));
  if (source.fuse_attention) {
    PassPipeline pipeline;
    pipeline.add<FuseAttention>();
    const PipelineResult ran = pipeline.run(out.graph);
    if (!ran.ok()) {
      for (const std::string& problem : ran.problems)
        diags.error({source.file.string(), 0, 0}, "fuse_attention", problem,
                    "load it without the pass (--no-fuse-attention, or fuse_attention: false in "
                    "a sweep) and report the model");
      return std::nullopt;
    }
    for (const PassReport& report : ran.reports)
      for (const std::string& note : report.notes) out.notes.push_back(report.pass + ": " + note);
  }
  return out;
#else
  diags.error({source.file.string(), 0, 0}, "", "this coda was built without the ONNX importer",
              "rebuild with -DCODA_WITH_ONNX=ON (scripts/setup.sh installs libonnx-dev)");
  return std::nullopt;
#endif
}

// " quant=SCHEME kv_dtype=TYPE ...", or nothing for an unquantized model (so that the hashes of
// sources written before quantization existed stay as they were).
std::string quant_text(const llm::Quantization& quant) {
  const std::string text = llm::describe(quant);
  return text.empty() ? text : " " + text;
}

std::optional<LoadedWorkload> load_llm(const LlmSource& source, Diagnostics& diags) {
  auto config = source.config.extension() == ".json" ? llm::load_hf_config(source.config, diags)
                                                     : llm::load_llm_config(source.config, diags);
  if (!config) return std::nullopt;
  if (source.dtype) config->dtype = *source.dtype;
  const llm::Parallelism& p = source.parallelism;
  if (p.ep > 1 && p.cp > 0 && (p.tp * p.dp * p.cp) % p.ep != 0) {  // a stage's ranks (the step
    // model checks the same of a layout: sim/training_step.h)
    diags.error(
        {}, "parallelism.ep",
        fmt::format("ep {} does not divide tp {} x dp {} x cp {}: the expert-parallel ranks "
                    "are a stage's ranks",
                    p.ep, p.tp, p.dp, p.cp),
        "give --tp, --dp and --cp whose product ep divides (Megatron-Core's requirement)");
    return std::nullopt;
  }
  auto graph = llm::try_build_llm(*config, source.phase, source.parallelism, diags);
  if (!graph) return std::nullopt;
  const llm::Parallelism& par = source.parallelism;
  const llm::LlmHeadline head = llm::llm_headline(*config, source.phase.seq_len);
  const llm::LlmStepStats stats = llm::llm_step_stats(*config, source.phase, par);
  LoadedWorkload out{std::move(*graph), {}};
  out.notes.push_back(fmt::format(
      "{}: {} parameters ({} active per token), KV cache {} per token, {} for this step "
      "({} per rank); {} phase, batch {}, sequence {}, TP {} PP {} (stage {}, layers {}..{}, "
      "bubble {:.1f}%) DP {}{}",
      config->name, head.parameters, head.active_parameters,
      to_string(llm::kv_cache_bytes_per_token(*config, source.phase.quant)),
      to_string(stats.kv_cache_bytes), to_string(stats.kv_cache_bytes_per_rank),
      llm::to_string(source.phase.kind), source.phase.batch, source.phase.seq_len, par.tp, par.pp,
      par.stage, stats.first_layer, stats.first_layer + stats.stage_layers - 1,
      100.0 * stats.pipeline_bubble_fraction, par.dp, quant_text(source.phase.quant)));
  return out;
}

std::optional<LoadedWorkload> load_cnn(const CnnSource& source, Diagnostics& diags) {
  cnn::CnnOptions options;
  options.batch = source.batch;
  options.height = options.width = source.image;
  if (source.dtype) options.dtype = *source.dtype;
  auto graph = cnn::build_cnn(source.name, options, diags);
  if (!graph) return std::nullopt;
  return LoadedWorkload{std::move(*graph), {}};
}

// A file's bytes; empty when it cannot be read (the load that follows reports why).
std::string file_bytes(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return {};
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string dtype_text(const std::optional<DataType>& dtype) {
  return dtype ? std::string(to_string(*dtype)) : std::string("own");
}

// clang-format off
constexpr std::string_view kLlmKeys[] = {"phase", "batch", "seq", "dtype", "tp", "pp", "dp",
                                         "stage", "micro_batches", "recompute",
                                         "sequence_parallel", "train_precision", "quant",
                                         "kv_dtype", "runtime", "cp", "ep"};
// clang-format on
constexpr std::string_view kCnnKeys[] = {"batch", "image", "dtype"};
constexpr std::string_view kFileKeys[] = {"bind", "skip_unsupported", "fuse_attention",
                                          "fuse_functions", "dtype"};

bool has_key(std::span<const std::string_view> keys, std::string_view key) {
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

// A key of some kind of source (so that one of another kind is named as such).
bool source_key(std::string_view key) {
  return has_key(kLlmKeys, key) || has_key(kCnnKeys, key) || has_key(kFileKeys, key);
}

std::optional<DataType> read_dtype(const YamlReader& item, Diagnostics& diags,
                                   std::string_view key = "dtype") {
  std::string text;
  if (!item.optional(key, text, diags)) return std::nullopt;
  const auto dtype = parse_data_type(text);
  if (!dtype)
    diags.error(item.at(key), fmt::format("unknown element type '{}'", text),
                "one of " + data_type_list());
  return dtype;
}

// The quantization scheme (`quant:`) and the KV cache's type (`kv_dtype:`) of an LLM entry.
void read_quantization(const YamlReader& item, llm::Quantization& quant, Diagnostics& diags) {
  std::string scheme;
  if (item.optional("quant", scheme, diags)) {
    std::string error;
    if (const auto q = llm::parse_quantization(scheme, error))
      llm::set_scheme(quant, *q);
    else
      diags.error(item.at("quant"), error);
  }
  quant.kv_cache = read_dtype(item, diags, "kv_dtype");
}

std::filesystem::path resolved(const std::filesystem::path& base, const std::string& path) {
  const std::filesystem::path p(path);
  return (p.is_absolute() ? p : base / p).lexically_normal();
}

void require_file(const YamlReader& item, std::string_view key,
                  const std::filesystem::path& file, Diagnostics& diags) {
  std::error_code ec;  // an unusable path (a name over 255 bytes) is no file either
  if (!std::filesystem::is_regular_file(file, ec))
    diags.error(item.at(key),
                fmt::format("no such file '{}'", file.string()),
                "paths are relative to the file that names them");
}

}  // namespace

std::optional<LoadedWorkload> load_source(const WorkloadSource& source, Diagnostics& diags) {
  return std::visit(Overload{[&](const FileSource& s) { return load_file(s, diags); },
                             [&](const LlmSource& s) { return load_llm(s, diags); },
                             [&](const CnnSource& s) { return load_cnn(s, diags); }},
                    source);
}

std::string describe(const WorkloadSource& source) {
  return std::visit(
      Overload{
          [](const FileSource& s) {
            std::string text = s.file.string();
            if (s.file.extension() != ".onnx") return text;  // the options are ONNX's
            for (const auto& [name, value] : s.dim_bindings)
              text += fmt::format(" {}={}", name, value);
            if (s.skip_unsupported) text += " skip_unsupported";
            // Named when on (the default since 2026-12-05), so that a sweep store made before
            // the pass existed, whose points priced the exported ops, does not resume.
            if (s.fuse_attention) text += " fuse_attention";
            // Likewise since 2026-12-05 (later): a store whose points priced the pieces does
            // not resume.
            if (s.fuse_functions) text += " fuse_functions";
            if (s.dtype) text += fmt::format(" dtype={}", to_string(*s.dtype));
            return text;
          },
          [](const LlmSource& s) {
            const llm::Parallelism& p = s.parallelism;
            // The precision only when not the default, so that the hashes of sources written
            // before it existed stay as they were.
            return fmt::format(
                       "llm {} phase={} batch={} seq={} dtype={} recompute={} tp={} pp={} dp={} "
                       "stage={} micro_batches={} sequence_parallel={}{}",
                       s.config.string(), llm::to_string(s.phase.kind), s.phase.batch,
                       s.phase.seq_len, dtype_text(s.dtype), s.phase.recompute ? 1 : 0, p.tp, p.pp,
                       p.dp, p.stage, p.micro_batches, p.sequence_parallel ? 1 : 0,
                       s.phase.precision == llm::Precision::Mixed
                           ? std::string()
                           : fmt::format(" train_precision={}",
                                         llm::to_string(s.phase.precision))) +
                   quant_text(s.phase.quant) +
                   // Likewise the runtime (since 2026-12-06) and context and expert parallelism
                   // (2026-12-07).
                   (s.phase.runtime == llm::Runtime::Default
                        ? std::string()
                        : fmt::format(" runtime={}", llm::to_string(s.phase.runtime))) +
                   (p.cp == 1 ? std::string() : fmt::format(" cp={}", p.cp)) +
                   (p.ep == 1 ? std::string() : fmt::format(" ep={}", p.ep));
          },
          [](const CnnSource& s) {
            return fmt::format("cnn {} batch={} image={} dtype={}", s.name, s.batch, s.image,
                               dtype_text(s.dtype));
          }},
      source);
}

std::vector<std::filesystem::path> source_files(const WorkloadSource& source) {
  if (const auto* f = std::get_if<FileSource>(&source)) return {f->file};
  if (const auto* l = std::get_if<LlmSource>(&source)) return {l->config};
  return {};
}

std::uint64_t source_hash(const WorkloadSource& source) {
  // A file with no options: its bytes alone, as run.json and sweep stores hashed files before
  // there were other sources (a store made then still resumes).
  std::string text = describe(source);
  const auto* plain = std::get_if<FileSource>(&source);
  if (plain != nullptr && text == plain->file.string()) return fnv1a64(file_bytes(plain->file));
  for (const std::filesystem::path& file : source_files(source)) text += "\n" + file_bytes(file);
  return fnv1a64(text);
}

std::optional<WorkloadSource> read_workload_source(const YamlReader& item,
                                                   const std::filesystem::path& base,
                                                   Diagnostics& diags) {
  const std::size_t errors_before = diags.error_count();
  const int kinds = (item.has("file") ? 1 : 0) + (item.has("llm") ? 1 : 0) +
                    (item.has("cnn") ? 1 : 0);
  if (kinds != 1) {
    diags.error(item,
                kinds == 0 ? "no workload source" : "more than one workload source",
                "give exactly one of file: (a layer list, SCALE-Sim CSV, trace or ONNX model), "
                "llm: (a coda model YAML or Hugging Face config.json) or cnn: (a CNN zoo name)");
    return std::nullopt;
  }
  const std::string_view kind = item.has("file") ? "file" : item.has("llm") ? "llm" : "cnn";
  const std::span<const std::string_view> allowed =
      kind == "file" ? std::span<const std::string_view>(kFileKeys)
      : kind == "llm" ? std::span<const std::string_view>(kLlmKeys)
                      : std::span<const std::string_view>(kCnnKeys);
  for (const std::string& key : item.keys())
    if (source_key(key) && !has_key(allowed, key))
      diags.error(item.at(key),
                  fmt::format("'{}' does not apply to a {} source", key, kind),
                  fmt::format("a {} source takes: {}", kind, fmt::join(allowed, ", ")));

  WorkloadSource out;
  if (kind == "file") {
    FileSource s;
    std::string file;
    if (item.required("file", file, diags)) {
      s.file = resolved(base, file);
      require_file(item, "file", s.file, diags);
    }
    if (item.has("bind") && item.at("bind").expect_map(diags)) {
      const YamlReader bind = item.at("bind");
      for (const std::string& name : bind.keys()) {
        std::uint64_t value = 0;
        if (bind.at(name).read(value, diags)) {
          if (value == 0)
            diags.error(bind.at(name),
                        "a dimension's value must be at least 1", "e.g. batch: 8");
          s.dim_bindings[name] = value;
        }
      }
    }
    item.optional("skip_unsupported", s.skip_unsupported, diags);
    item.optional("fuse_attention", s.fuse_attention, diags);
    item.optional("fuse_functions", s.fuse_functions, diags);
    s.dtype = read_dtype(item, diags);
    out = std::move(s);
  } else if (kind == "llm") {
    LlmSource s;
    std::string config;
    if (item.required("llm", config, diags)) {
      s.config = resolved(base, config);
      require_file(item, "llm", s.config, diags);
    }
    item.optional_enum("phase", s.phase.kind, llm::phase_names(), diags);
    item.optional("batch", s.phase.batch, diags);
    item.required("seq", s.phase.seq_len, diags);  // no default: a prompt, a context or a length
    item.optional("recompute", s.phase.recompute, diags);
    item.optional_enum("train_precision", s.phase.precision, llm::precision_names(), diags);
    read_quantization(item, s.phase.quant, diags);
    item.optional_enum("runtime", s.phase.runtime, llm::runtime_names(), diags);
    s.dtype = read_dtype(item, diags);
    item.optional("tp", s.parallelism.tp, diags);
    item.optional("pp", s.parallelism.pp, diags);
    item.optional("dp", s.parallelism.dp, diags);
    item.optional("stage", s.parallelism.stage, diags);
    item.optional("micro_batches", s.parallelism.micro_batches, diags);
    item.optional("sequence_parallel", s.parallelism.sequence_parallel, diags);
    item.optional("cp", s.parallelism.cp, diags);
    item.optional("ep", s.parallelism.ep, diags);
    out = std::move(s);
  } else {
    CnnSource s;
    const auto names = cnn::cnn_names();
    if (item.required("cnn", s.name, diags) &&
        std::find(names.begin(), names.end(), s.name) == names.end())
      diags.error(item.at("cnn"), fmt::format("unknown network '{}'", s.name),
                  fmt::format("one of {}", fmt::join(names, ", ")));
    item.optional("batch", s.batch, diags);
    item.optional("image", s.image, diags);
    s.dtype = read_dtype(item, diags);
    out = std::move(s);
  }
  if (diags.error_count() != errors_before) return std::nullopt;
  return out;
}

}  // namespace coda::workload
