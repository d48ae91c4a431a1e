// Fuzzes the coda-bench case-list reader: YamlDocument::parse + validation::read_case_list. A list
// the reader accepts must hold cases a kernel can run: every shape field it needs at least 1 (pad
// aside), a conv's output non-empty, repetitions at least 1, and finite, non-negative operation
// and byte counts.

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "core/yaml_reader.h"
#include "fuzz/fuzz_contract.h"
#include "validation/case_list.h"
#include "validation/kernel_catalog.h"

namespace {

void check_case(const coda::validation::Case& c) {
  namespace v = coda::validation;
  using coda::fuzz::require;
  const v::KernelInfo& ki = v::info(c.kernel);
  require(!ki.published_only && c.repetitions >= 1 && c.where.line >= 1);
  for (std::string_view key : v::shape_keys(ki.shape))
    require(v::shape_key_may_be_zero(key) || v::shape_value(c.shape, key) >= 1);
  if (ki.shape == v::ShapeKind::Conv)
    require(v::conv_out_extent(c.shape, c.shape.height) >= 1 &&
            v::conv_out_extent(c.shape, c.shape.width) >= 1);
  const auto sane = [](double x) { return !std::isnan(x) && x >= 0; };
  require(sane(v::operation_count(c.kernel, c.dtype, c.shape)) &&
          sane(v::minimum_bytes(c.kernel, c.dtype, c.shape)));
  require(!v::shape_text(ki.shape, c.shape).empty() || ki.shape == v::ShapeKind::None);
  (void)v::tiling_summary(c.kernel, c.shape);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  coda::Diagnostics diags;
  const auto doc = coda::YamlDocument::parse(coda::fuzz::as_text(data, size), "fuzz.yaml", diags);
  bool has_value = false;
  if (doc) {
    const auto list = coda::validation::read_case_list(doc->root(), diags);
    has_value = list.has_value();
    if (list) {
      coda::fuzz::require(!list->cases.empty() && list->check_samples >= 1);
      for (const coda::validation::Case& c : list->cases) check_case(c);
    }
  }
  coda::fuzz::check_contract(has_value, diags);
  return 0;
}
