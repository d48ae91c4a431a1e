#pragma once
// One case of a case list (kernel x shape x dtype x repetitions) and the list itself, as values.
// Kept apart from the YAML reader (case_list.h) so CUDA translation units can use it without
// parsing yaml-cpp's headers.

#include <cstdint>
#include <vector>

#include "core/diagnostics.h"
#include "validation/kernel_catalog.h"

namespace coda::validation {

struct Case {
  Kernel kernel = Kernel::GemmNaive;
  DType dtype = DType::Fp32;
  Shape shape;
  std::uint32_t repetitions = 20;
  std::uint32_t warmup = 3;
  SourceLocation where;  // the case's entry in the list, for messages about it
};

struct CaseList {
  std::uint64_t seed = 1;
  std::uint32_t check_samples = 256;
  std::vector<Case> cases;
};

}  // namespace coda::validation
