#pragma once
// The case list coda-bench runs: kernel x shape x dtype x repetitions, read from YAML with located
// diagnostics (file:line:col, the field, what would be valid). See docs/validation.md.
//
//   schema_version: 1
//   repetitions: 20        # timed runs per case (the median is reported); a case may override
//   warmup: 3              # untimed runs before them
//   seed: 1                # inputs are pseudo-random from this seed
//   check_samples: 256     # output entries (or rows) checked against the CPU reference
//   cases:
//     - {kernel: gemm_wmma, dtype: fp16, m: 4096, n: 4096, k: 4096}
//     - {kernel: softmax_online, rows: 4096, cols: 4096, repetitions: 50}

#include <cstdint>
#include <filesystem>
#include <optional>
#include <vector>

#include "core/diagnostics.h"
#include "core/yaml_reader.h"
#include "validation/case.h"

namespace coda::validation {

inline constexpr std::uint32_t kCaseListSchemaVersion = 1;

// Reads a parsed case list. Never throws on bad input: every problem is a Diagnostic, and the
// result is nullopt when there was any error.
std::optional<CaseList> read_case_list(const YamlReader& root, Diagnostics& diags);
// Reads a case list file (no `extends:` is expected, but it is honoured as for every coda YAML).
std::optional<CaseList> load_case_list(const std::filesystem::path& file, Diagnostics& diags);

}  // namespace coda::validation
