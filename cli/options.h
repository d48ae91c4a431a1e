#pragma once
// Command-line values shared by several subcommands.

#include <filesystem>
#include <fstream>
#include <optional>
#include <ostream>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "core/data_type.h"
#include "sim/driver.h"
#include "sim/systemc/systemc_engine.h"
#include "workloads/llm/hf_config.h"
#include "workloads/llm/llm_config.h"
#include "workloads/llm/quantization.h"

namespace coda::cli {

// A value above 0, for counts and sizes on the command line. CLI11's PositiveNumber says
// "Value 0 not in range 0.000000 to 1797693134862315708...(309 digits)"; this says what is valid.
inline const CLI::Validator kPositive(
    [](const std::string& text) -> std::string {
      double value = 0;
      if (!CLI::detail::lexical_cast(text, value)) return fmt::format("'{}' is not a number", text);
      if (value > 0) return {};
      return fmt::format("{} is not allowed: give a number above 0 (e.g. 1)", text);
    },
    "POSITIVE");

// Every engine coda has: the analytical one and the SystemC one (which lives in its own library,
// so the driver alone knows only the first).
inline sim::EngineRegistry all_engines() {
  sim::EngineRegistry engines;
  sim::register_builtin_engines(engines);
  sim::systemc::register_systemc_engine(engines);
  return engines;
}

// Reads --precision: empty text leaves `out` unset. An unknown name prints the error with every
// valid name and returns false (the caller exits with status 2).
inline bool read_precision(const std::string& text, std::optional<DataType>& out,
                           std::ostream& err) {
  if (text.empty()) return true;
  out = parse_data_type(text);
  if (out) return true;
  err << fmt::format("error: --precision: unknown precision '{}'; expected one of: {}\n", text,
                     data_type_list());
  return false;
}

// --llm: a coda model YAML, or a Hugging Face config.json (by its extension).
inline std::optional<workload::llm::LlmConfig> load_llm_option(const std::string& file,
                                                               Diagnostics& diags) {
  const std::filesystem::path path(file);
  return path.extension() == ".json" ? workload::llm::load_hf_config(path, diags)
                                     : workload::llm::load_llm_config(path, diags);
}

// --dtype over the model's own type: empty text keeps it. An unknown name prints the error with
// every valid name and returns false (the caller exits with status 2).
inline bool read_model_dtype(const std::string& text, workload::llm::LlmConfig& model,
                             std::ostream& err) {
  if (text.empty()) return true;
  const std::optional<DataType> dtype = parse_data_type(text);
  if (!dtype) {
    err << fmt::format("error: --dtype: unknown element type '{}'; expected one of: {}\n", text,
                       data_type_list());
    return false;
  }
  model.dtype = *dtype;
  return true;
}

// --quant and --kv-dtype: an LLM's inference quantization (workloads/llm/quantization.h).
inline void add_quantization_options(CLI::App& cmd, std::string& quant, std::string& kv_dtype,
                                     bool& fp8_context_fmha) {
  cmd.add_option("--quant", quant,
                 fmt::format("LLM inference quantization: {} (weights in int8, int4 with a scale "
                             "per group of N (128), or int8/fp8 weights and GEMM inputs)",
                             workload::llm::quantization_list()));
  cmd.add_option("--kv-dtype", kv_dtype,
                 fmt::format("LLM KV-cache element type ({}); default the model's",
                             workload::llm::kv_cache_type_list()));
  cmd.add_flag("--fp8-context-fmha", fp8_context_fmha,
               "LLM prefill attention in fp8 e4m3 (TensorRT-LLM's FP8 context FMHA; with an fp8 "
               "--kv-dtype)");
}

// Reads --quant and --kv-dtype into `quant` (empty text leaves a part as it is); false with the
// problem in `diags`.
inline bool read_quantization(const std::string& scheme, const std::string& kv_dtype,
                              bool fp8_context_fmha, workload::llm::Quantization& quant,
                              Diagnostics& diags) {
  bool ok = true;
  if (fp8_context_fmha) quant.context_attention = DataType::Fp8E4M3;
  if (!scheme.empty()) {
    std::string error;
    const std::optional<workload::llm::Quantization> q =
        workload::llm::parse_quantization(scheme, error);
    if (q) {
      workload::llm::set_scheme(quant, *q);
    } else {
      diags.error({}, "--quant", error);
      ok = false;
    }
  }
  if (!kv_dtype.empty()) {
    quant.kv_cache = parse_data_type(kv_dtype);
    if (!quant.kv_cache) {
      diags.error({}, "--kv-dtype", fmt::format("unknown element type '{}'", kv_dtype),
                  fmt::format("one of: {}", workload::llm::kv_cache_type_list()));
      ok = false;
    }
  }
  return ok;
}

// Writes `text` to `path` (binary, so bytes are kept as they are); on failure prints the error to
// `err` and returns false.
inline bool write_file(const std::filesystem::path& path, const std::string& text,
                       std::ostream& err) {
  std::ofstream file(path, std::ios::binary);
  file << text;
  if (!file) {
    err << fmt::format("error: cannot write '{}'\n", path.string());
    return false;
  }
  return true;
}

}  // namespace coda::cli
