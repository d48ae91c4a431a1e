#include "validation/measurement.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <fstream>
#include <ostream>
#include <span>
#include <sstream>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/csv.h"
#include "core/text.h"
#include "core/yaml_reader.h"  // did_you_mean

namespace coda::validation {
namespace {

std::string num(double v) { return std::isnan(v) ? std::string{} : fmt::format("{}", v); }
std::string opt(const std::optional<double>& v) { return v ? num(*v) : std::string{}; }
std::string field_of(const Measurement& m, std::string_view key) {
  for (std::string_view k : shape_keys(info(m.kernel).shape)) {
    if (k == key) return fmt::format("{}", shape_value(m.shape, key));
  }
  return {};
}

// Implicit-GEMM dimensions of a conv: M = N*P*Q, N = K, K = C*R*S.
std::uint64_t conv_gemm(const Shape& s, char dim) {
  if (dim == 'm') return s.batch * conv_out_extent(s, s.height) * conv_out_extent(s, s.width);
  if (dim == 'n') return s.filters;
  return s.channels * s.filter_size * s.filter_size;
}
// The m, n, k columns: a GEMM's own (batched or not), a conv's implicit-GEMM sizes.
std::string mnk(const Measurement& m, char dim) {
  if (info(m.kernel).shape == ShapeKind::Conv) return fmt::format("{}", conv_gemm(m.shape, dim));
  return field_of(m, std::string_view(&dim, 1));
}

bool parse_u64(std::string_view text, std::uint64_t& out) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc{} && end == text.data() + text.size();
}
bool parse_u32(std::string_view text, std::uint32_t& out) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc{} && end == text.data() + text.size();
}
bool parse_double(std::string_view text, double& out) {
  if (text.empty()) {
    out = kNotMeasured;
    return true;
  }
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc{} && end == text.data() + text.size();
}
bool parse_opt(std::string_view text, std::optional<double>& out) {
  if (text.empty()) {
    out.reset();
    return true;
  }
  double v = 0;
  if (!parse_double(text, v)) return false;
  out = v;
  return true;
}

// The columns a hand-written table cannot do without (docs/validation.md, "Published tables").
constexpr std::array<std::string_view, 5> kRequired{"kernel", "dtype", "shape", "median_us",
                                                    "source"};
bool is_required(std::string_view name) {
  return std::find(kRequired.begin(), kRequired.end(), name) != kRequired.end();
}

// A problem with a row: {message, hint}.
using Problem = std::pair<std::string, std::string>;

std::optional<Problem> check_dtype(Measurement& m, std::string_view /*cell*/) {
  const KernelInfo& k = info(m.kernel);
  if (std::find(k.dtypes.begin(), k.dtypes.end(), m.dtype) != k.dtypes.end()) return std::nullopt;
  std::string valid;
  for (DType d : k.dtypes) valid += (valid.empty() ? "" : ", ") + std::string(dtype_name(d));
  return Problem{fmt::format("{} does not run {}", k.name, dtype_name(m.dtype)),
                 fmt::format("expected one of: {}", valid)};
}

// Shape fields above this are rejected as typos (a 2^32-element dimension is beyond any case);
// the products are bounded too, so nothing downstream overflows 64 bits. A buffer's `bytes`
// may reach 2^40 (1 TiB): nccl-tests sweep collectives up to several GiB.
constexpr std::uint64_t kMaxShapeValue = std::uint64_t{1} << 32;
constexpr std::uint64_t kMaxShapeBytes = std::uint64_t{1} << 40;
constexpr double kMaxOperations = 1e18;
constexpr double kMaxBytes = 1e16;

// The shape's keys must be the kernel's (optional ones may be left out and then take their
// defaults), each at least 1 (pad and causal: 0 too), and the work it names small enough to
// model; causal and recompute are 0 or 1, kv_heads divides heads, a collective has at least 2
// ranks.
std::optional<Problem> check_shape(Measurement& m, std::string_view text) {
  const KernelInfo& k = info(m.kernel);
  const std::span<const std::string_view> keys = shape_keys(k.shape);
  std::string valid;
  for (std::string_view key : keys) {
    const bool optional = shape_key_optional(k.shape, key);
    valid += fmt::format("{}{}{}=N{}", valid.empty() ? "" : " ", optional ? "[" : "", key,
                         optional ? "]" : "");
  }
  const std::string hint = keys.empty() ? std::string("leave the cell empty")
                                        : fmt::format("{} takes: {}", k.name, valid);
  std::vector<std::string_view> given;
  while (!text.empty()) {
    const auto space = text.find(' ');
    const std::string_view item = text.substr(0, space);
    text = space == std::string_view::npos ? std::string_view{} : text.substr(space + 1);
    const std::string_view key = item.substr(0, item.find('='));
    if (std::find(keys.begin(), keys.end(), key) == keys.end())
      return Problem{fmt::format("'{}' is not a shape field of {}", key, k.name), hint};
    if (std::find(given.begin(), given.end(), key) != given.end())
      return Problem{fmt::format("'{}' is given twice", key), hint};
    given.push_back(key);
  }
  for (std::string_view key : keys) {
    if (!shape_key_optional(k.shape, key) &&
        std::find(given.begin(), given.end(), key) == given.end())
      return Problem{fmt::format("'{}' is missing", key), hint};
  }
  fill_shape_defaults(k.shape, m.shape, given);
  for (std::string_view key : keys) {
    const std::uint64_t v = shape_value(m.shape, key);
    if (v == 0 && !shape_key_may_be_zero(key))
      return Problem{fmt::format("'{}' must be at least 1", key), hint};
    const std::uint64_t limit = key == "bytes" ? kMaxShapeBytes : kMaxShapeValue;
    if (v > limit)
      return Problem{fmt::format("'{}' = {} is larger than the supported {}", key, v, limit),
                     hint};
  }
  const Shape& s = m.shape;
  if (k.shape == ShapeKind::Conv &&
      (conv_out_extent(s, s.height) == 0 || conv_out_extent(s, s.width) == 0))
    return Problem{"the filter is larger than the padded input",
                   "filter_size <= height + 2 pad and width + 2 pad"};
  if (k.shape == ShapeKind::LlmTraining && s.recompute > 1)
    return Problem{fmt::format("'recompute' = {} is neither 0 nor 1", s.recompute),
                   "recompute=1 for full activation recomputation (checkpointing), 0 for none"};
  if (k.shape == ShapeKind::LlmTraining && s.autocast > 1)
    return Problem{fmt::format("'autocast' = {} is neither 0 nor 1", s.autocast),
                   "autocast=1 for PyTorch autocast over fp32 parameters, 0 (or absent) for "
                   "mixed precision with fp32 master weights"};
  if (k.shape == ShapeKind::LlmTraining && (s.fp8 > 1 || s.sp > 1 || s.param_overlap > 1))
    return Problem{fmt::format("'fp8' = {}, 'sp' = {}, 'param_overlap' = {}: each is 0 or 1", s.fp8,
                               s.sp, s.param_overlap),
                   "fp8=1 for Transformer Engine's FP8 linear layers, sp=1 for sequence "
                   "parallelism, param_overlap=1 for the weights' all-gather under the forward"};
  if (k.shape == ShapeKind::LlmTraining && s.fp8 == 1 && s.autocast == 1)
    return Problem{"'fp8' and 'autocast' are both 1",
                   "a row trains under one precision recipe: fp8 (over mixed precision) or "
                   "autocast"};
  if (k.shape == ShapeKind::LlmTraining && s.zero > 3)
    return Problem{fmt::format("'zero' = {} is no ZeRO stage", s.zero),
                   "zero=0 (DDP), 1 (sharded optimizer state), 2 (and gradients) or 3 (and "
                   "weights: FSDP FULL_SHARD)"};
  if (k.shape == ShapeKind::LlmTraining && s.grad_bits != 16 && s.grad_bits != 32)
    return Problem{fmt::format("'grad_bits' = {} is neither 16 nor 32", s.grad_bits),
                   "the bits gradients are reduced in: 16 (bf16/fp16) or 32 (fp32)"};
  if (k.shape == ShapeKind::AttentionGqa && s.causal > 1)
    return Problem{fmt::format("'causal' = {} is neither 0 nor 1", s.causal),
                   "causal=1 for a causal mask, causal=0 for none"};
  if ((k.shape == ShapeKind::AttentionGqa || k.shape == ShapeKind::DecodeGqa) &&
      s.heads % s.kv_heads != 0)
    return Problem{fmt::format("'kv_heads' = {} does not divide 'heads' = {}", s.kv_heads,
                               s.heads),
                   "each KV head serves heads / kv_heads query heads: kv_heads = heads for "
                   "multi-head attention, 1 for multi-query"};
  if (k.shape == ShapeKind::DecodeGqa && s.value_dim > s.head_dim)
    return Problem{
        fmt::format("'value_dim' = {} is more than 'head_dim' = {}", s.value_dim, s.head_dim),
        "value_dim below head_dim means the values are the keys' first value_dim "
        "columns (MLA's latent cache: head_dim=576 value_dim=512); leave it out for "
        "values of their own"};
  if (k.shape == ShapeKind::Collective && s.ranks < 2)
    return Problem{fmt::format("'ranks' = {}: a collective needs at least 2", s.ranks),
                   "ranks is the number of GPUs taking part, e.g. 8"};
  const double ops = operation_count(m.kernel, m.dtype, s);
  const double bytes = minimum_bytes(m.kernel, m.dtype, s);
  if (ops > kMaxOperations || bytes > kMaxBytes)
    return Problem{fmt::format("{:.3g} operations and {:.3g} bytes are beyond what coda models "
                               "(at most {:.0e} and {:.0e})",
                               ops, bytes, kMaxOperations, kMaxBytes),
                   hint};
  return std::nullopt;
}

// The implementation class, read once the kernel is known: empty is the arch's default; any
// other value must be one of the kernel's.
std::optional<Problem> check_impl(Measurement& m, std::string_view text) {
  m.impl = Impl::Default;
  if (text.empty()) return std::nullopt;
  const KernelInfo& k = info(m.kernel);
  if (k.impls.empty()) {
    std::vector<std::string_view> with;
    for (const KernelInfo& other : kernel_catalog())
      if (!other.impls.empty()) with.push_back(other.name);
    return Problem{fmt::format("{} takes no implementation class", k.name),
                   fmt::format("leave the cell empty; only {} name one", fmt::join(with, ", "))};
  }
  std::vector<std::string_view> names;
  for (Impl i : k.impls) {
    if (impl_name(i) == text) {
      m.impl = i;
      return std::nullopt;
    }
    names.push_back(impl_name(i));
  }
  std::string valid;
  for (std::string_view n : names) valid += (valid.empty() ? "" : ", ") + std::string(n);
  const auto close = did_you_mean(text, names);
  return Problem{fmt::format("\"{}\" is not an implementation class of {}{}", text, k.name,
                             close ? fmt::format(" (did you mean '{}'?)", *close) : ""),
                 fmt::format("expected one of: {}, or nothing (the arch's default)", valid)};
}

// llm_* and network rows name their model; no other row does. The reader checks only that it
// is a plain name (the predictor resolves it against the presets).
std::optional<Problem> check_model(Measurement& m, std::string_view text) {
  const KernelInfo& k = info(m.kernel);
  const std::string_view example = k.shape == ShapeKind::Network
                                       ? "a CNN-zoo name such as resnet50"
                                       : "a coda LLM preset (configs/workloads/llm/) such as "
                                         "llama2_7b";
  if (!takes_model(m.kernel)) {
    if (text.empty()) return std::nullopt;
    return Problem{fmt::format("{} takes no model", k.name),
                   "leave the cell empty; only llm_* and network rows name a model"};
  }
  if (text.empty())
    return Problem{fmt::format("{} needs a model", k.name), fmt::format("name {}", example)};
  const bool plain = std::all_of(text.begin(), text.end(), [](char ch) {
    return std::isalnum(static_cast<unsigned char>(ch)) != 0 || ch == '_' || ch == '-' ||
           ch == '.';
  });
  if (!plain)
    return Problem{fmt::format("\"{}\" is not a plain name", text),
                   fmt::format("letters, digits, '_', '-' and '.' only: {}", example)};
  return std::nullopt;
}

// How a row's kernels were launched (check_launch says which rows may say what).
std::string read_launch(Measurement& m, std::string_view t) {
  for (const Launch l : {Launch::Default, Launch::Graph, Launch::Eager})
    if (launch_name(l) == t) {
      m.launch = l;
      return {};
    }
  return "graph (a CUDA graph), eager (kernels launched one by one from the host) or nothing";
}
// A kernel row may say `graph` (timed back to back from a CUDA graph); `eager` is for whole
// models (a kernel timed on its own is the default).
std::optional<Problem> check_launch(Measurement& m, std::string_view text) {
  if (text.empty() || takes_model(m.kernel) || m.launch == Launch::Graph) return std::nullopt;
  m.launch = Launch::Default;
  return Problem{fmt::format("{} takes no eager launch mode", info(m.kernel).name),
                 "leave the cell empty (a kernel timed on its own) or say graph (timed back to "
                 "back from a CUDA graph); eager is for llm_* and network rows (whole models)"};
}

// The software of an llm_* row (RowRuntime); check_runtime says which rows may name one.
std::string read_runtime(Measurement& m, std::string_view t) {
  for (const RowRuntime r : {RowRuntime::Default, RowRuntime::HfTransformers})
    if (runtime_name(r) == t) {
      m.runtime = r;
      return {};
    }
  return "hf_transformers (Hugging Face transformers run eagerly) or nothing (coda's kernels)";
}
std::optional<Problem> check_runtime(Measurement& m, std::string_view text) {
  if (text.empty() || (takes_model(m.kernel) && info(m.kernel).shape != ShapeKind::Network))
    return std::nullopt;
  m.runtime = RowRuntime::Default;
  return Problem{fmt::format("{} takes no runtime", info(m.kernel).name),
                 "leave the cell empty; only llm_* rows name the software that ran them"};
}

using Writer = std::string (*)(const Measurement&);
// Returns an empty string on success, else what was expected.
using Reader = std::string (*)(Measurement&, std::string_view);
// What the cells say together, once every cell of the row has been read without error (so the
// kernel is known): the cell's text (empty when the column is absent) -> {message, hint} on a
// problem. May complete the row (shape defaults, the implementation class).
using Check = std::optional<Problem> (*)(Measurement&, std::string_view);

struct Column {
  std::string_view name;
  Writer write;
  Reader read;             // nullptr: not read cell by cell (derived, or read by `check`)
  Check check = nullptr;   // runs after the row's cells were read
};

std::string read_kernel(Measurement& m, std::string_view t) {
  for (const KernelInfo& k : kernel_catalog()) {
    if (k.name == t) {
      m.kernel = k.kernel;
      return {};
    }
  }
  return "a kernel name such as gemm_wmma";
}
std::string read_dtype(Measurement& m, std::string_view t) {
  std::string valid;
  for (DType d : all_dtypes()) {
    if (dtype_name(d) == t) {
      m.dtype = d;
      return {};
    }
    valid += (valid.empty() ? "" : ", ") + std::string(dtype_name(d));
  }
  return "one of " + valid;
}
// "m=4096 n=4096 k=4096" -> the shape fields.
std::string read_shape(Measurement& m, std::string_view t) {
  m.shape = Shape{};
  while (!t.empty()) {
    const auto space = t.find(' ');
    const std::string_view item = t.substr(0, space);
    t = space == std::string_view::npos ? std::string_view{} : t.substr(space + 1);
    const auto eq = item.find('=');
    std::uint64_t* field = eq == std::string_view::npos ? nullptr
                                                        : shape_field(m.shape, item.substr(0, eq));
    if (!field || !parse_u64(item.substr(eq + 1), *field))
      return "space-separated key=value shape fields such as \"m=64 n=64 k=64\"";
  }
  return {};
}

// Counts: an empty cell is "not stated" and keeps the default (0; buffer_sets 1), as a
// hand-written table has no clocks or repetitions.
#define CODA_U32(member)                                                        \
  [](Measurement& m, std::string_view t) -> std::string {                       \
    return t.empty() || parse_u32(t, m.member) ? std::string{}                  \
                                               : "a non-negative integer or nothing"; \
  }
#define CODA_U64(member)                                                        \
  [](Measurement& m, std::string_view t) -> std::string {                       \
    return t.empty() || parse_u64(t, m.member) ? std::string{}                  \
                                               : "a non-negative integer or nothing"; \
  }
#define CODA_DOUBLE(member)                                                     \
  [](Measurement& m, std::string_view t) -> std::string {                       \
    return parse_double(t, m.member) ? std::string{} : "a number or nothing";   \
  }
// A time in microseconds: empty when the case was not measured, else finite and at least 1 ns
// (0.001 us; no GPU kernel or step takes less). Zero, negative, NaN, infinite and smaller
// values are errors: they were silently "not measured", or compared (1e-30 gave a 1.5e34 %
// error).
#define CODA_TIME(member)                                                                   \
  [](Measurement& m, std::string_view t) -> std::string {                                   \
    constexpr std::string_view kTime =                                                      \
        "a time in microseconds of at least 0.001 (1 ns), or nothing for a case that was not " \
        "measured";                                                                          \
    if (!parse_double(t, m.member)) return std::string(kTime);                              \
    if (t.empty() || (std::isfinite(m.member) && m.member >= 0.001)) return {};             \
    return std::string(kTime);                                                              \
  }
#define CODA_TEXT(member)                                                       \
  [](Measurement& m, std::string_view t) -> std::string {                       \
    if (const auto problem = text_field_problem(t))                             \
      return fmt::format("text ({}: {})", problem->message, problem->hint);     \
    m.member = std::string(t);                                                  \
    return {};                                                                  \
  }

const std::array<Column, 48> kColumns{{
    {"kernel", [](const Measurement& m) { return std::string(info(m.kernel).name); }, read_kernel},
    {"dtype", [](const Measurement& m) { return std::string(dtype_name(m.dtype)); }, read_dtype,
     check_dtype},
    {"shape", [](const Measurement& m) { return shape_text(info(m.kernel).shape, m.shape); },
     read_shape, check_shape},
    {"impl", [](const Measurement& m) { return std::string(impl_name(m.impl)); }, nullptr,
     check_impl},
    {"model", [](const Measurement& m) { return m.model; }, CODA_TEXT(model), check_model},
    {"launch", [](const Measurement& m) { return std::string(launch_name(m.launch)); },
     read_launch, check_launch},
    {"runtime", [](const Measurement& m) { return std::string(runtime_name(m.runtime)); },
     read_runtime, check_runtime},
    {"m", [](const Measurement& m) { return mnk(m, 'm'); }, nullptr},
    {"n", [](const Measurement& m) { return mnk(m, 'n'); }, nullptr},
    {"k", [](const Measurement& m) { return mnk(m, 'k'); }, nullptr},
    {"batch", [](const Measurement& m) { return field_of(m, "batch"); }, nullptr},
    {"heads", [](const Measurement& m) { return field_of(m, "heads"); }, nullptr},
    {"seq", [](const Measurement& m) { return field_of(m, "seq"); }, nullptr},
    {"head_dim", [](const Measurement& m) { return field_of(m, "head_dim"); }, nullptr},
    {"rows", [](const Measurement& m) { return field_of(m, "rows"); }, nullptr},
    {"cols", [](const Measurement& m) { return field_of(m, "cols"); }, nullptr},
    {"elements", [](const Measurement& m) { return field_of(m, "elements"); }, nullptr},
    {"repetitions", [](const Measurement& m) { return fmt::format("{}", m.repetitions); },
     CODA_U32(repetitions)},
    {"warmup", [](const Measurement& m) { return fmt::format("{}", m.warmup); }, CODA_U32(warmup)},
    {"median_us", [](const Measurement& m) { return num(m.median_us); }, CODA_TIME(median_us)},
    {"min_us", [](const Measurement& m) { return num(m.min_us); }, CODA_TIME(min_us)},
    {"max_us", [](const Measurement& m) { return num(m.max_us); }, CODA_TIME(max_us)},
    {"operations", [](const Measurement& m) { return num(m.operations); },
     CODA_DOUBLE(operations)},
    {"bytes", [](const Measurement& m) { return num(m.bytes); }, CODA_DOUBLE(bytes)},
    {"tflops", [](const Measurement& m) { return num(achieved_tflops(m)); }, nullptr},
    {"gbps", [](const Measurement& m) { return num(achieved_gbps(m)); }, nullptr},
    {"max_error", [](const Measurement& m) { return num(m.max_error); }, CODA_DOUBLE(max_error)},
    {"tolerance", [](const Measurement& m) { return num(m.tolerance); }, CODA_DOUBLE(tolerance)},
    {"passed",
     [](const Measurement& m) {
       return std::string(!m.checked ? "" : m.passed ? "true" : "false");
     },
     [](Measurement& m, std::string_view t) -> std::string {
       if (!t.empty() && t != "true" && t != "false")
         return "true, false or nothing (no correctness check recorded)";
       m.checked = !t.empty();
       m.passed = t == "true";
       return {};
     }},
    {"quant_error_per_tensor", [](const Measurement& m) { return opt(m.quant_error_per_tensor); },
     [](Measurement& m, std::string_view t) -> std::string {
       return parse_opt(t, m.quant_error_per_tensor) ? std::string{} : "a number or nothing";
     }},
    {"quant_error_per_channel",
     [](const Measurement& m) { return opt(m.quant_error_per_channel); },
     [](Measurement& m, std::string_view t) -> std::string {
       return parse_opt(t, m.quant_error_per_channel) ? std::string{} : "a number or nothing";
     }},
    {"buffer_sets", [](const Measurement& m) { return fmt::format("{}", m.buffer_sets); },
     CODA_U32(buffer_sets)},
    {"working_set_bytes",
     [](const Measurement& m) { return fmt::format("{}", m.working_set_bytes); },
     CODA_U64(working_set_bytes)},
    {"tiling", [](const Measurement& m) { return m.tiling; }, CODA_TEXT(tiling)},
    {"device", [](const Measurement& m) { return m.device.name; }, CODA_TEXT(device.name)},
    {"compute_capability", [](const Measurement& m) { return m.device.compute_capability; },
     CODA_TEXT(device.compute_capability)},
    {"sm_count", [](const Measurement& m) { return fmt::format("{}", m.device.sm_count); },
     CODA_U32(device.sm_count)},
    {"sm_clock_mhz", [](const Measurement& m) { return fmt::format("{}", m.device.sm_clock_mhz); },
     CODA_U32(device.sm_clock_mhz)},
    {"mem_clock_mhz",
     [](const Measurement& m) { return fmt::format("{}", m.device.mem_clock_mhz); },
     CODA_U32(device.mem_clock_mhz)},
    {"l2_bytes", [](const Measurement& m) { return fmt::format("{}", m.device.l2_bytes); },
     CODA_U64(device.l2_bytes)},
    {"driver", [](const Measurement& m) { return m.device.driver; }, CODA_TEXT(device.driver)},
    {"cuda_runtime", [](const Measurement& m) { return m.device.cuda_runtime; },
     CODA_TEXT(device.cuda_runtime)},
    {"ecc", [](const Measurement& m) { return m.device.ecc; }, CODA_TEXT(device.ecc)},
    {"date", [](const Measurement& m) { return m.date; }, CODA_TEXT(date)},
    {"software", [](const Measurement& m) { return m.software; }, CODA_TEXT(software)},
    {"source", [](const Measurement& m) { return m.source; }, CODA_TEXT(source)},
    {"derivation", [](const Measurement& m) { return m.derivation; }, CODA_TEXT(derivation)},
    {"note", [](const Measurement& m) { return m.note; }, CODA_TEXT(note)},
}};

#undef CODA_U32
#undef CODA_U64
#undef CODA_DOUBLE
#undef CODA_TIME
#undef CODA_TEXT

std::vector<std::string_view> column_names() {
  std::vector<std::string_view> names;
  names.reserve(kColumns.size());
  for (const Column& c : kColumns) names.push_back(c.name);
  return names;
}

}  // namespace

std::string_view launch_name(Launch launch) {
  switch (launch) {
    case Launch::Default: return "";
    case Launch::Graph: return "graph";
    case Launch::Eager: return "eager";
  }
  return "";
}

std::string_view runtime_name(RowRuntime runtime) {
  switch (runtime) {
    case RowRuntime::Default: return "";
    case RowRuntime::HfTransformers: return "hf_transformers";
  }
  return "";
}

double achieved_tflops(const Measurement& m) {
  if (m.operations <= 0 || std::isnan(m.median_us) || m.median_us <= 0) return kNotMeasured;
  return m.operations / (m.median_us * 1e-6) / 1e12;
}

double achieved_gbps(const Measurement& m) {
  if (m.bytes <= 0 || std::isnan(m.median_us) || m.median_us <= 0) return kNotMeasured;
  return m.bytes / (m.median_us * 1e-6) / 1e9;
}

std::vector<std::string_view> measurement_columns() { return column_names(); }

void write_measurement_header(std::ostream& out) {
  for (std::size_t i = 0; i < kColumns.size(); ++i) {
    if (i > 0) out << ',';
    out << kColumns[i].name;
  }
  out << '\n';
}

void write_measurement_row(std::ostream& out, const Measurement& m) {
  for (std::size_t i = 0; i < kColumns.size(); ++i) {
    if (i > 0) out << ',';
    out << csv_cell(kColumns[i].write(m));
  }
  out << '\n';
}

std::vector<std::string_view> required_measurement_columns() {
  return {kRequired.begin(), kRequired.end()};
}

std::optional<std::vector<Measurement>> read_measurements(std::string_view text,
                                                          const std::string& file,
                                                          Diagnostics& diags) {
  const auto errors_before = diags.error_count();
  std::size_t pos = 0;
  int line = 1;
  std::vector<CsvCell> cells;
  if (!split_csv_record(text, pos, line, cells) || (cells.size() == 1 && cells[0].text.empty())) {
    diags.error({file, 1, 1}, "header", "no header line",
                fmt::format("the first line names the columns: {}", kColumns[0].name));
    return std::nullopt;
  }
  const std::size_t header_cells = cells.size();
  const std::vector<std::string_view> names = column_names();
  // Which column of the file each schema column is in.
  std::vector<int> index(kColumns.size(), -1);
  for (std::size_t i = 0; i < cells.size(); ++i) {
    bool known = false;
    for (std::size_t c = 0; c < kColumns.size(); ++c) {
      if (kColumns[c].name != cells[i].text) continue;
      known = true;
      if (index[c] >= 0) {
        const CsvCell& first = cells[static_cast<std::size_t>(index[c])];
        diags.error({file, 1, cells[i].column}, fmt::format("column '{}'", cells[i].text),
                    fmt::format("named twice (first at column {})", first.column),
                    "remove one of them: a row could not say which cell is meant");
      } else {
        index[c] = static_cast<int>(i);
      }
    }
    if (!known) {
      const auto close = did_you_mean(cells[i].text, names);
      diags.error({file, 1, cells[i].column}, fmt::format("column '{}'", cells[i].text),
                  "unknown column",
                  close ? fmt::format("did you mean '{}'?", *close) : std::string{});
    }
  }
  for (std::size_t c = 0; c < kColumns.size(); ++c) {
    if (index[c] < 0 && is_required(kColumns[c].name))
      diags.error({file, 1, 1}, "header", fmt::format("missing column '{}'", kColumns[c].name),
                  "see docs/validation.md for the schema");
  }
  if (diags.error_count() != errors_before) return std::nullopt;

  const auto passed_column = static_cast<std::size_t>(
      std::find(names.begin(), names.end(), "passed") - names.begin());
  std::vector<Measurement> rows;
  int row = 1;
  while (pos < text.size()) {
    const int row_line = line;
    ++row;
    if (!split_csv_record(text, pos, line, cells)) {
      diags.error({file, row_line, 1}, fmt::format("row {}", row), "unterminated quoted cell");
      break;
    }
    if (cells.size() == 1 && cells[0].text.empty()) continue;  // blank line
    const std::string where = fmt::format("row {}", row);
    if (cells.size() != header_cells) {
      diags.error({file, row_line, 1}, where,
                  fmt::format("{} cells; the header has {}", cells.size(), header_cells),
                  "every row has one cell per header column (empty for not applicable)");
      continue;
    }
    Measurement m;
    m.line = row_line;
    bool ok = true;
    for (std::size_t c = 0; c < kColumns.size(); ++c) {
      if (index[c] < 0 || !kColumns[c].read) continue;
      const CsvCell& cell = cells[static_cast<std::size_t>(index[c])];
      const std::string expected = kColumns[c].read(m, cell.text);
      if (!expected.empty()) {
        diags.error({file, row_line, cell.column},
                    fmt::format("{}, column '{}'", where, kColumns[c].name),
                    fmt::format("cannot read \"{}\"", cell.text),
                    fmt::format("expected {}", expected));
        ok = false;
      }
    }
    if (!ok) continue;
    if (index[passed_column] < 0) m.checked = false;  // no column: no check recorded
    // What the cells say together: the dtype one the kernel runs, the shape its own, the
    // implementation class and the model as the kernel takes them. An absent column is checked
    // as an empty cell, located at the row's start.
    for (std::size_t c = 0; c < kColumns.size(); ++c) {
      if (!kColumns[c].check) continue;
      const CsvCell* cell = index[c] >= 0 ? &cells[static_cast<std::size_t>(index[c])] : nullptr;
      if (const auto problem = kColumns[c].check(m, cell ? cell->text : std::string_view{})) {
        diags.error({file, row_line, cell ? cell->column : 1},
                    fmt::format("{}, column '{}'", where, kColumns[c].name), problem->first,
                    problem->second);
        ok = false;
      }
    }
    if (ok) rows.push_back(std::move(m));
  }
  if (diags.error_count() != errors_before) return std::nullopt;
  return rows;
}

std::optional<std::vector<Measurement>> load_measurements(const std::filesystem::path& file,
                                                          Diagnostics& diags) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in) {
    diags.error({file.string(), 0, 0}, "", "cannot read the file");
    return std::nullopt;
  }
  return read_measurements(text.str(), file.string(), diags);
}

namespace {

std::vector<std::string> lowercase_words(std::string_view text) {
  std::vector<std::string> words;
  std::string word;
  for (const char c : text) {
    if (std::isalnum(static_cast<unsigned char>(c)) != 0) {
      word += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (!word.empty()) {
      words.push_back(std::move(word));
      word.clear();
    }
  }
  if (!word.empty()) words.push_back(std::move(word));
  return words;
}

// One to three letters, then one to five digits, then at most one letter.
bool looks_like_model(std::string_view w) {
  std::size_t i = 0;
  while (i < w.size() && std::isalpha(static_cast<unsigned char>(w[i])) != 0) ++i;
  if (i == 0 || i > 3) return false;
  const std::size_t digits_begin = i;
  while (i < w.size() && std::isdigit(static_cast<unsigned char>(w[i])) != 0) ++i;
  const std::size_t digits = i - digits_begin;
  if (digits == 0 || digits > 5) return false;
  if (i < w.size() && std::isalpha(static_cast<unsigned char>(w[i])) != 0) ++i;
  if (i != w.size()) return false;
  constexpr std::array<std::string_view, 7> kNotModels{"sxm",  "hbm",  "pcie",  "ddr",
                                                       "lpddr", "gddr", "nvlink"};
  const std::string_view letters = w.substr(0, digits_begin);
  return std::find(kNotModels.begin(), kNotModels.end(), letters) == kNotModels.end();
}

}  // namespace

std::vector<std::string> device_model_words(std::string_view device) {
  std::vector<std::string> models;
  for (std::string& w : lowercase_words(device)) {
    if (looks_like_model(w) && std::find(models.begin(), models.end(), w) == models.end())
      models.push_back(std::move(w));
  }
  return models;
}

void warn_device_mismatch(const std::vector<Measurement>& rows, std::string_view arch_name,
                          std::string_view arch_description, const std::string& file,
                          Diagnostics& diags) {
  std::vector<std::string> arch_words = lowercase_words(arch_name);
  for (std::string& w : lowercase_words(arch_description)) arch_words.push_back(std::move(w));
  std::vector<std::string> judged;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const std::string& device = rows[i].device.name;
    if (device.empty() || std::find(judged.begin(), judged.end(), device) != judged.end()) continue;
    judged.push_back(device);
    const std::vector<std::string> models = device_model_words(device);
    if (models.empty()) continue;
    const bool named = std::any_of(models.begin(), models.end(), [&](const std::string& m) {
      return std::find(arch_words.begin(), arch_words.end(), m) != arch_words.end();
    });
    if (named) continue;
    const auto count = std::count_if(rows.begin(), rows.end(),
                                     [&](const Measurement& r) { return r.device.name == device; });
    diags.warning({file, rows[i].line, 0}, "column 'device'",
                  fmt::format("'{}' ({} row{}) does not look like the arch '{}': neither its name "
                              "nor its description says {}",
                              device, count, count == 1 ? "" : "s", arch_name,
                              fmt::join(models, " or ")),
                  "price a device's rows on its own preset (configs/arch/), or keep this arch if "
                  "it models that device");
  }
}

}  // namespace coda::validation
