#include "workloads/tensor.h"

namespace coda::workload {

std::string_view to_string(TensorKind kind) {
  switch (kind) {
    case TensorKind::Activation: return "activation";
    case TensorKind::Weight: return "weight";
    case TensorKind::KvCache: return "kv_cache";
    case TensorKind::Gradient: return "gradient";
    case TensorKind::OptimizerState: return "optimizer_state";
  }
  return "unknown";
}

std::uint64_t element_count(std::span<const std::uint64_t> shape) {
  std::uint64_t n = 1;
  for (const std::uint64_t extent : shape) n *= extent;
  return n;
}

Bytes storage_bytes(std::span<const std::uint64_t> shape, DataType dtype) {
  return Bytes{(element_count(shape) * bit_width(dtype) + 7) / 8};
}

}  // namespace coda::workload
