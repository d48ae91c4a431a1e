#include "core/data_type.h"

#include <array>

#include "core/enum_table.h"

namespace coda {
namespace {

constexpr std::array<std::pair<std::string_view, DataType>, 9> kNames{{
    {"fp32", DataType::Fp32},
    {"tf32", DataType::Tf32},
    {"bf16", DataType::Bf16},
    {"fp16", DataType::Fp16},
    {"fp8_e4m3", DataType::Fp8E4M3},
    {"fp8_e5m2", DataType::Fp8E5M2},
    {"int8", DataType::Int8},
    {"int4", DataType::Int4},
    {"int32", DataType::Int32},
}};

}  // namespace

std::uint32_t bit_width(DataType type) {
  switch (type) {
    case DataType::Fp32:
    case DataType::Tf32:
    case DataType::Int32: return 32;
    case DataType::Bf16:
    case DataType::Fp16: return 16;
    case DataType::Fp8E4M3:
    case DataType::Fp8E5M2:
    case DataType::Int8: return 8;
    case DataType::Int4: return 4;
  }
  return 0;
}

std::string_view to_string(DataType type) { return enum_name(kNames, type, "unknown"); }

std::optional<DataType> parse_data_type(std::string_view text) { return enum_value(kNames, text); }

std::span<const std::pair<std::string_view, DataType>> data_type_names() { return kNames; }

std::string data_type_list() { return enum_names(kNames); }

}  // namespace coda
