#pragma once
// A design-space sweep as a user writes it (configs/sweeps/*.yaml, docs/sweeps.md): a base arch,
// the workloads to run on every point, axes that set values at paths into the arch YAML, how the
// points are sampled, constraints and objectives. The reader validates everything it can before a
// point runs (every error located, with a did-you-mean); a point whose values make an invalid
// arch is not an error of the spec but an infeasible point (dse/sweep.h).

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "arch/arch_spec.h"
#include "core/data_type.h"
#include "core/diagnostics.h"
#include "core/yaml_reader.h"
#include "mapper/fusion.h"
#include "mapper/search.h"
#include "workloads/source.h"

namespace coda::dse {

struct SweepWorkload {
  std::string name;
  // A workload file, an LLM or a CNN of the zoo (workloads/source.h), paths resolved against the
  // spec's folder.
  workload::WorkloadSource source;
  std::optional<DataType> precision;
  // nullopt: the arch's calibration.fusion (what its vendor compiler fuses), else None, as
  // `coda run` without --fusion.
  std::optional<mapper::FusionMode> fusion;
  bool search_mapper = false;  // mapper: search (the heuristic loop-nest search) vs fixed
  // With search_mapper, the spec's `search:` keys: objective, strategy, evaluations (per op,
  // mapper::kCommandEvaluations as coda run's default), patience and seed; one thread per search
  // (the sweep's points run on the worker threads).
  mapper::SearchGoal search_goal;
  mapper::SearchSettings search_settings{.budget = {.max_evaluations = mapper::kCommandEvaluations}};
  SourceLocation where;
};

// One step of a path into the arch YAML: a map key or a sequence index.
using PathStep = std::variant<std::string, std::size_t>;

// A workload parameter an axis may vary (docs/sweeps.md, "Workload axes"): its path is
// "workload." and the name, and it applies to every workload of the spec that has it.
//   batch           an LLM's phase batch, a CNN's batch
//   seq             an LLM's phase sequence length (prompt, or the KV cache in decode)
//   phase           an LLM's phase: prefill, decode, training
//   tp, pp, dp, micro_batches   an LLM's parallel layout
//   image           a CNN's input size
//   dtype           an LLM's or a CNN's element type; a workload file's run precision
//   fusion          every workload's fusion mode (none, epilogue, all)
//   quant, kv_dtype an LLM's inference quantization scheme and KV-cache type (docs/llm.md)
enum class WorkloadParam : std::uint8_t {
  Batch,
  Seq,
  Phase,
  Tp,
  Pp,
  Dp,
  MicroBatches,
  Image,
  Dtype,
  Fusion,
  Quant,
  KvDtype,
  Runtime
};

struct SweepAxis {
  std::string path;              // as written: "compute[0].array.rows", "workload.batch"
  std::vector<PathStep> steps;   // parsed (arch axes)
  std::vector<std::string> values;  // YAML scalar text, in order: "64", "256 KiB"
  SourceLocation where;          // the axis key in the spec
  std::optional<WorkloadParam> workload;  // a workload axis; nullopt: an arch path
  // An arch axis: the base arch's value at `path` (the base design's; results.json's "base").
  std::optional<std::string> base;
};

enum class SamplingMethod : std::uint8_t { Grid, Random, LatinHypercube };
std::string_view to_string(SamplingMethod method);  // "grid", "random", "latin_hypercube"

struct SamplingSpec {
  SamplingMethod method = SamplingMethod::Grid;
  std::uint64_t points = 0;  // random and latin_hypercube only
  std::uint64_t seed = 0;
};

struct SweepConstraints {
  std::optional<double> max_area_mm2;
  std::optional<double> max_power_w;
  bool fits_memory = false;  // RunResult.memory.status must be "fits"
};

enum class SweepObjective : std::uint8_t {
  Latency, Throughput, Energy, Edp, PerfPerWatt, PerfPerMm2
};
// "latency", "throughput", "energy", "edp", "perf_per_watt", "perf_per_mm2"
std::string_view to_string(SweepObjective objective);
// Whether larger is better (throughput, perf_per_watt, perf_per_mm2).
bool maximised(SweepObjective objective);

struct SweepSpec {
  std::uint32_t schema_version = 1;
  std::string name;
  std::string description;
  std::filesystem::path file;  // the spec itself
  std::filesystem::path arch;  // the base arch, resolved against the spec's folder
  std::vector<SweepWorkload> workloads;
  std::vector<SweepAxis> axes;
  SamplingSpec sampling;
  SweepConstraints constraints;
  std::vector<SweepObjective> objectives{SweepObjective::Latency};
  // The engine every point runs on: "analytical" (closed forms) or "systemc" (tile-level; each
  // run in its own worker process, so points still run on every core).
  std::string engine = "analytical";
  // FNV-1a 64 of the spec's canonical YAML, the base arch's merged YAML and each workload
  // (workload::source_hash): a store made for another hash belongs to another sweep.
  std::uint64_t hash = 0;
};

// Reads and validates a spec; nullopt with every problem in `diags`. Checks every axis path
// against the base arch (after `extends:`), so a misspelt path is an error here, not a
// thousand infeasible points.
std::optional<SweepSpec> read_sweep_spec(const YamlReader& root, Diagnostics& diags);
std::optional<SweepSpec> load_sweep_spec(const std::filesystem::path& file, Diagnostics& diags);

// "compute[0].array.rows" -> {"compute", 0, "array", "rows"}; nullopt with `why` when malformed.
std::optional<std::vector<PathStep>> parse_arch_path(std::string_view path, std::string& why);

// The scalar at `path` (parse_arch_path's form) of a merged arch document, as its text; nullopt
// with `why` (and `hint`, e.g. "did you mean 'bandwidth'?") when the path is malformed or names
// no scalar there. The Python API's Arch.get.
std::optional<std::string> arch_value(const YamlDocument& doc, std::string_view path,
                                      std::string& why, std::string& hint);
// Sets that scalar to `value` (read as YAML: "4 TB/s", "128", "true"), as a sweep's arch axis
// does; false with `why` and `hint` as arch_value says. The caller validates the document
// afterwards (arch::read_arch_spec). The Python API's Arch.with_values.
bool set_arch_value(YamlDocument& doc, std::string_view path, const std::string& value,
                    std::string& why, std::string& hint);

// A point: one value index per axis.
using SweepPoint = std::vector<std::size_t>;

// The sweep's points in index order. Grid: the cartesian product with the first axis varying
// slowest (nested loops in the spec's axis order). Random: each point draws each axis's value
// uniformly, one draw per axis, point after point from one stream. Latin hypercube: each axis is
// cut into `points` equal strata of [0, 1), every stratum is used by exactly one point (a seeded
// shuffle per axis), and the point takes the value at that position of the axis's list. Both are
// seeded with std::mt19937_64(seed).
//
// Made as they are asked for, so a sweep's memory does not grow with its points: a grid point is
// its index in mixed radix; a random point is the stream's draws from (index x axes) on (the
// sequence keeps its place in the stream, moves forward by discarding draws and starts again
// from the seed when asked for an earlier point, so asking in index order costs one pass);
// only the Latin hypercube keeps a table, 4 bytes per axis per point, as its strata are a
// shuffle of them all. at() moves the stream: one sequence per thread (copies are cheap; a
// Latin hypercube's copies share its table).
class PointSequence {
 public:
  PointSequence() = default;  // no points
  explicit PointSequence(const SweepSpec& spec);
  std::uint64_t size() const { return size_; }
  // Point `index` (< size()).
  SweepPoint at(std::uint64_t index);

 private:
  SamplingMethod method_ = SamplingMethod::Grid;
  std::vector<std::size_t> extents_;  // values per axis
  std::uint64_t size_ = 0;
  std::uint64_t seed_ = 0;
  std::mt19937_64 rng_;  // random: at the first draw of point next_
  std::uint64_t next_ = 0;
  std::shared_ptr<const std::vector<std::uint32_t>> table_;  // latin: [point x axes + axis]
};

// Every point at once (tests, small callers): PointSequence's points 0 .. size - 1.
std::vector<SweepPoint> enumerate_points(const SweepSpec& spec);
// Grid size, or nullopt when it would exceed `limit`.
std::optional<std::uint64_t> grid_size(const SweepSpec& spec, std::uint64_t limit);

// The Latin-hypercube stratum each point takes on each axis ([axis][point]); exposed so a test
// can check that every stratum is used once.
std::vector<std::vector<std::size_t>> latin_hypercube_strata(std::size_t axes,
                                                             std::uint64_t points,
                                                             std::uint64_t seed);

// The arch of one point: the base arch YAML (extends resolved) with each axis's value set at
// its path, read with arch::read_arch_spec. nullopt with the reader's diagnostics when the
// values make an invalid arch. `arch_hash` receives the modified document's content hash.
// Reads the arch files on every call; a sweep uses PointArchBuilder, which reads them once.
std::optional<arch::ArchSpec> apply_point(const SweepSpec& spec, const SweepPoint& point,
                                          Diagnostics& diags, std::uint64_t* arch_hash = nullptr);

// apply_point without reading the arch files again: holds one copy of the base arch document and
// the node each axis names in it. build() sets every axis's value in that copy (each point sets
// all of them, so nothing of the previous point remains) and reads it with
// arch::read_arch_spec: the same document, arch, hash and diagnostics as apply_point. Not
// thread-safe: one per worker thread. `spec` must outlive it.
class PointArchBuilder {
 public:
  // nullopt with the reasons in `diags` when the base arch cannot be read or an axis path is
  // not a scalar of it (the spec reader checked both; the files may have changed since).
  static std::optional<PointArchBuilder> create(const SweepSpec& spec, Diagnostics& diags);
  std::optional<arch::ArchSpec> build(const SweepPoint& point, Diagnostics& diags,
                                      std::uint64_t* arch_hash = nullptr);
  // The document as the last build() left it, as YAML (extends resolved).
  std::string text() const { return doc_.text(); }

 private:
  PointArchBuilder(const SweepSpec& spec, YamlDocument doc, std::vector<YAML::Node> targets)
      : spec_(&spec), doc_(std::move(doc)), targets_(std::move(targets)) {}
  const SweepSpec* spec_;
  YamlDocument doc_;
  std::vector<YAML::Node> targets_;  // per axis: the scalar it sets, a handle into doc_
};

// Point `index`'s whole arch as YAML (extends resolved, the point's values set, validated),
// headed by comments naming the sweep and the values: a file `coda run --arch` loads, what
// `coda sweep --export-design` writes. nullopt with the reason in `diags` when the sweep has no
// such point or its values make an invalid arch.
std::optional<std::string> point_arch_yaml(const SweepSpec& spec, std::uint64_t index,
                                           Diagnostics& diags);

// Whether any axis of the spec varies the workloads.
bool has_workload_axes(const SweepSpec& spec);

// `w` as `point` has it: each workload axis's value set in its source, precision or fusion.
// False with `why` when a value does not apply to the workload (the spec reader checks every
// value against every workload, so a spec it accepted never fails here).
bool apply_workload_axes(const SweepSpec& spec, const SweepPoint& point, SweepWorkload& w,
                         std::string& why);

// The point's values as "path=value" pairs, in axis order.
std::vector<std::pair<std::string, std::string>> point_values(const SweepSpec& spec,
                                                              const SweepPoint& point);

}  // namespace coda::dse
