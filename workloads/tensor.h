#pragma once
// Tensors of a Graph: a name, a shape, an element type and what the tensor is for (activations,
// weights, KV cache, gradients, optimizer state), which memory planning and reports use.

#include <compare>
#include <span>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/units.h"
#include "workloads/data_type.h"

namespace coda::workload {

struct TensorId {
  std::uint32_t value = 0;
  friend constexpr auto operator<=>(TensorId, TensorId) = default;
};

struct OpId {
  std::uint32_t value = 0;
  friend constexpr auto operator<=>(OpId, OpId) = default;
};

enum class TensorKind : std::uint8_t { Activation, Weight, KvCache, Gradient, OptimizerState };
std::string_view to_string(TensorKind kind);  // "activation", "weight", "kv_cache", ...

struct Tensor {
  std::string name;
  std::vector<std::uint64_t> shape;  // outermost first; {} is a scalar
  DataType dtype = DataType::Int8;
  TensorKind kind = TensorKind::Activation;
  friend bool operator==(const Tensor&, const Tensor&) = default;
};

std::uint64_t element_count(std::span<const std::uint64_t> shape);
// ceil(elements * bits / 8).
Bytes storage_bytes(std::span<const std::uint64_t> shape, DataType dtype);
inline Bytes storage_bytes(const Tensor& t) { return storage_bytes(t.shape, t.dtype); }

}  // namespace coda::workload
