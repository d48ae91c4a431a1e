// Fuzzes the sweep spec reader: YamlDocument::parse + dse::read_sweep_spec. The input is the
// spec's text, named as if it stood in configs/sweeps/ of the source tree, so relative paths
// resolve as for the bundled specs (arch: ../arch/tpu_like_128x128_ws.yaml, workloads in
// ../workloads/) and the reader checks the axis paths against a real base arch. The spec is read
// from memory: nothing is written. For a spec the reader accepts, every axis has a parsed path and
// values, the points enumerate within range, and the first point gives an arch or diagnostics.

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/yaml_reader.h"
#include "fuzz/fuzz_contract.h"
#include "dse/sweep_spec.h"

namespace {

// Enumerating a larger sweep only costs time; the reader's checks are what is fuzzed.
constexpr std::uint64_t kMaxEnumerated = 4096;

void check_spec(const coda::dse::SweepSpec& spec) {
  using coda::fuzz::require;
  require(!spec.name.empty() && !spec.workloads.empty() && !spec.axes.empty() &&
          !spec.objectives.empty());
  for (const coda::dse::SweepAxis& axis : spec.axes)
    require(!axis.steps.empty() && !axis.values.empty() && axis.where.line >= 1);
  const bool grid = spec.sampling.method == coda::dse::SamplingMethod::Grid;
  require(grid ? spec.sampling.points == 0 : spec.sampling.points >= 1);
  const auto size = grid ? coda::dse::grid_size(spec, kMaxEnumerated) : spec.sampling.points;
  if (!size || *size > kMaxEnumerated) return;
  const auto points = coda::dse::enumerate_points(spec);
  require(points.size() == *size);
  for (const coda::dse::SweepPoint& point : points) {
    require(point.size() == spec.axes.size());
    for (std::size_t a = 0; a < point.size(); ++a)
      require(point[a] < spec.axes[a].values.size());
  }
  // A point whose values make an invalid arch is infeasible, not a crash: either way it is
  // reported with a location.
  coda::Diagnostics point_diags;
  const auto arch = coda::dse::apply_point(spec, points.front(), point_diags);
  coda::fuzz::check_contract(arch.has_value(), point_diags);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  coda::Diagnostics diags;
  const std::string name = std::string(CODA_SOURCE_DIR) + "/configs/sweeps/fuzz.yaml";
  const auto doc = coda::YamlDocument::parse(coda::fuzz::as_text(data, size), name, diags);
  bool has_value = false;
  if (doc) {
    const auto spec = coda::dse::read_sweep_spec(doc->root(), diags);
    has_value = spec.has_value();
    if (spec) check_spec(*spec);
  }
  coda::fuzz::check_contract(has_value, diags);
  return 0;
}
