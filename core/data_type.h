#pragma once
// Element types of tensors and of the arithmetic an op does. Bits per element, not bytes: int4 is
// half a byte, so storage sizes are computed as ceil(elements * bits / 8).

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

namespace coda {

enum class DataType : std::uint8_t { Fp32, Tf32, Bf16, Fp16, Fp8E4M3, Fp8E5M2, Int8, Int4, Int32 };

// Storage bits per element. tf32 is stored in 32 bits (it is a compute format of fp32 data).
std::uint32_t bit_width(DataType type);
std::string_view to_string(DataType type);  // "fp32", "tf32", "bf16", "fp16", "fp8_e4m3", ...
std::optional<DataType> parse_data_type(std::string_view text);
// Every name and its type, in enum order, for readers' EnumTable and error hints.
std::span<const std::pair<std::string_view, DataType>> data_type_names();
// The names comma-separated ("fp32, tf32, ..."), for "expected one of" hints.
std::string data_type_list();

}  // namespace coda
