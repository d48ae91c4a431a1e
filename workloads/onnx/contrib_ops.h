// ONNX Runtime's contrib ops that coda imports (domain com.microsoft), given to libonnx's shape
// inference through a registry of coda's own that falls back to libonnx's: no schema is added to
// libonnx's process-wide registry.
//
// MatMulNBits (onnxruntime docs/ContribOperators.md, com.microsoft.MatMulNBits, since version 1):
// Y = A x dequantize(B)^T (+ bias), B an [N][K] weight quantized to `bits` bits in blocks of
// `block_size` along K, each block with a scale and optionally a zero point, packed low bits first
// into uint8 blobs: B [N, ceil(K / block_size), block_size x bits / 8]; scales [N, k_blocks] (or
// [N x k_blocks] in files of onnxruntime before 1.20); zero points packed as B ([N, ceil(k_blocks
// x bits / 8)] uint8) or unpacked in A's type ([N, k_blocks]); g_idx (deprecated) and bias [N].
// Its output is A's shape with the last dim N, in A's type. This is what onnxruntime's
// matmul_nbits_quantizer writes for a MatMul of a constant weight (GPTQ/RTN/HQQ int4, AWQ-style
// block-wise weight-only quantization) and what onnxruntime-genai's model builder writes for
// int4 LLMs.
#pragma once

#include <memory>
#include <string>

#include <onnx/defs/schema.h>

namespace coda::workload::onnx {

inline constexpr const char* kMicrosoftDomain = "com.microsoft";

class ContribSchemas final : public ::onnx::ISchemaRegistry {
 public:
  ContribSchemas();
  const ::onnx::OpSchema* GetSchema(const std::string& key, int max_inclusive_version,
                                    const std::string& domain) const override;

 private:
  std::unique_ptr<::onnx::OpSchema> matmul_nbits_;
};

}  // namespace coda::workload::onnx
