#include "workloads/llm/quantization.h"

#include <charconv>

#include <fmt/format.h>

namespace coda::workload::llm {

std::string_view quantization_list() { return "none, w8a16, w4a16 (w4a16:gN), w8a8, fp8"; }

std::optional<Quantization> parse_quantization(std::string_view text, std::string& error) {
  Quantization q;
  if (text == "none") return q;
  if (text == "w8a16") {
    q.weights = DataType::Int8;
    return q;
  }
  if (text == "w8a8") {
    q.weights = q.activations = DataType::Int8;
    return q;
  }
  if (text == "fp8") {
    q.weights = q.activations = DataType::Fp8E4M3;
    return q;
  }
  if (text.starts_with("w4a16")) {
    q.weights = DataType::Int4;
    q.group = kDefaultQuantGroup;
    const std::string_view rest = text.substr(5);
    if (rest.empty()) return q;
    std::uint64_t group = 0;
    const char* last = rest.data() + rest.size();
    if (rest.starts_with(":g") && rest.size() > 2) {
      const auto [end, ec] = std::from_chars(rest.data() + 2, last, group);
      if (ec == std::errc{} && end == last && group > 0) {
        q.group = group;
        return q;
      }
    }
    error = fmt::format(
        "cannot read the group of '{}': write w4a16:gN with N at least 1, e.g. "
        "w4a16:g128",
        text);
    return std::nullopt;
  }
  error = fmt::format("unknown quantization scheme '{}'; expected one of: {}", text,
                      quantization_list());
  return std::nullopt;
}

std::string scheme_name(const Quantization& quant) {
  if (!quant.weights) return "none";
  if (quant.activations == DataType::Fp8E4M3 && quant.weights == DataType::Fp8E4M3) return "fp8";
  if (quant.activations == DataType::Int8 && quant.weights == DataType::Int8) return "w8a8";
  if (!quant.activations && quant.weights == DataType::Int8 && quant.group == 0) return "w8a16";
  if (!quant.activations && quant.weights == DataType::Int4 && quant.group > 0)
    return fmt::format("w4a16:g{}", quant.group);
  // A combination only the C++ API can make: its parts.
  return fmt::format("w{}{}{}", to_string(*quant.weights),
                     quant.activations ? fmt::format("a{}", to_string(*quant.activations)) : "",
                     quant.group > 0 ? fmt::format(":g{}", quant.group) : "");
}

std::string describe(const Quantization& quant) {
  std::string text;
  const auto part = [&](const std::string& p) { text += (text.empty() ? "" : " ") + p; };
  if (quant.weights) part("quant=" + scheme_name(quant));
  if (quant.kv_cache) part(fmt::format("kv_dtype={}", to_string(*quant.kv_cache)));
  if (quant.context_attention)
    part(fmt::format("context_attention={}", to_string(*quant.context_attention)));
  return text;
}

bool is_kv_cache_type(DataType type) {
  switch (type) {
    case DataType::Fp32:
    case DataType::Bf16:
    case DataType::Fp16:
    case DataType::Fp8E4M3:
    case DataType::Fp8E5M2:
    case DataType::Int8:
      return true;
    default:
      return false;
  }
}

std::string_view kv_cache_type_list() { return "fp32, bf16, fp16, fp8_e4m3, fp8_e5m2, int8"; }

}  // namespace coda::workload::llm
