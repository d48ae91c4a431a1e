#include "dse/sweep.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sqlite3.h>
#include <numeric>
#include <random>
#include <set>

#include "arch/hardware_model.h"
#include "core/sweep_metrics.h"
#include "dse/sweep_spec.h"
#include "dse/sweep_store.h"
#include "testing/temp_dir.h"
#include "workloads/importers.h"

namespace coda::dse {
namespace {

// Specs are parsed under a name in configs/sweeps/, so their relative paths resolve as a bundled
// spec's would (tests run from the repository top).
constexpr const char* kSpecName = "configs/sweeps/test_spec.yaml";

std::optional<SweepSpec> parse_spec(const std::string& text, Diagnostics& diags) {
  const auto doc = YamlDocument::parse(text, kSpecName, diags);
  if (!doc) return std::nullopt;
  return read_sweep_spec(doc->root(), diags);
}

// The first error a bad spec gives, in compiler format.
std::string first_error(const std::string& text) {
  Diagnostics diags;
  const auto spec = parse_spec(text, diags);
  EXPECT_FALSE(spec);
  return diags.all().empty() ? std::string("(no diagnostic)") : format(diags.all().front());
}

const std::string kHeader =
    "schema_version: 1\n"
    "name: t\n"
    "arch: ../arch/tpu_like_128x128_ws.yaml\n"
    "workloads: [{name: r18, file: ../workloads/resnet18.yaml}]\n";

TEST(SweepSpec, ReadsAGoodSpecCompletely) {
  Diagnostics diags;
  const auto spec = parse_spec(
      "schema_version: 1\n"
      "name: array-sram-bw\n"
      "arch: ../arch/tpu_like_128x128_ws.yaml\n"
      "workloads:\n"
      "  - {name: resnet50, file: ../workloads/resnet50.yaml}\n"
      "  - {name: bert, file: ../workloads/bert_base_seq512.yaml, precision: int8, fusion: "
      "epilogue, mapper: fixed}\n"
      "axes:\n"
      "  array.rows: [64, 128, 256]\n"
      "  sram.ifmap: {from: 256 KiB, to: 4 MiB, factor: 2}\n"
      "  dram.bandwidth: [10 B/cycle, 20 B/cycle]\n"
      "  array.cols: {from: 64, to: 256, step: 64}\n"
      "sampling: {method: latin_hypercube, points: 12, seed: 7}\n"
      "constraints: {max_area_mm2: 100, max_power_w: 5, fits_memory: true}\n"
      "objectives: [latency, energy, perf_per_mm2]\n",
      diags);
  ASSERT_TRUE(spec) << diags.format_all();
  EXPECT_EQ(spec->name, "array-sram-bw");
  EXPECT_EQ(spec->arch, "configs/arch/tpu_like_128x128_ws.yaml");
  ASSERT_EQ(spec->workloads.size(), 2u);
  EXPECT_EQ(spec->workloads[0].name, "resnet50");
  EXPECT_EQ(std::get<workload::FileSource>(spec->workloads[0].source).file,
            "configs/workloads/resnet50.yaml");
  EXPECT_FALSE(spec->workloads[0].precision);
  EXPECT_EQ(spec->workloads[1].precision, DataType::Int8);
  EXPECT_EQ(spec->workloads[1].fusion, mapper::FusionMode::Epilogue);
  EXPECT_FALSE(spec->workloads[1].search_mapper);
  ASSERT_EQ(spec->axes.size(), 4u);
  EXPECT_EQ(spec->axes[0].path, "array.rows");
  EXPECT_EQ(spec->axes[0].values, (std::vector<std::string>{"64", "128", "256"}));
  // 256 KiB x 2^i up to 4 MiB: 256 KiB, 512 KiB, 1 MiB, 2 MiB, 4 MiB (written in the largest
  // IEC unit that divides them).
  EXPECT_EQ(spec->axes[1].values,
            (std::vector<std::string>{"256 KiB", "512 KiB", "1 MiB", "2 MiB", "4 MiB"}));
  EXPECT_EQ(spec->axes[2].values, (std::vector<std::string>{"10 B/cycle", "20 B/cycle"}));
  // 64 + 64 i up to 256.
  EXPECT_EQ(spec->axes[3].values, (std::vector<std::string>{"64", "128", "192", "256"}));
  EXPECT_EQ(spec->axes[0].where, (SourceLocation{kSpecName, 8, 3}));
  // The base arch's values at the axes' paths (configs/arch/tpu_like_128x128_ws.yaml, which
  // extends tpu_v1_256x256_ws.yaml): results.json records them as each axis's "base".
  EXPECT_EQ(spec->axes[0].base, "128");
  EXPECT_EQ(spec->axes[1].base, "6 MiB");
  EXPECT_EQ(spec->axes[2].base, "34 GB/s");  // from the preset it extends
  EXPECT_EQ(spec->axes[3].base, "128");
  EXPECT_EQ(spec->sampling.method, SamplingMethod::LatinHypercube);
  EXPECT_EQ(spec->sampling.points, 12u);
  EXPECT_EQ(spec->sampling.seed, 7u);
  EXPECT_EQ(spec->constraints.max_area_mm2, 100.0);
  EXPECT_EQ(spec->constraints.max_power_w, 5.0);
  EXPECT_TRUE(spec->constraints.fits_memory);
  EXPECT_EQ(spec->objectives, (std::vector<SweepObjective>{SweepObjective::Latency,
                                                           SweepObjective::Energy,
                                                           SweepObjective::PerfPerMm2}));
  EXPECT_NE(spec->hash, 0u);
}

// A workload can be an LLM built for the sweep (workloads/source.h): its graph is the builder's,
// the spec's hash covers its parameters, and a key of another kind of source is located.
TEST(SweepSpec, AnLlmWorkloadIsBuiltAndItsParametersAreHashed) {
  const auto spec_with = [](const std::string& workload) {
    return "schema_version: 1\nname: t\narch: ../arch/tpu_like_128x128_ws.yaml\n"
           "workloads: [{name: gpt2, " + workload + "}]\naxes:\n  array.rows: [64, 128]\n";
  };
  Diagnostics diags;
  const auto spec = parse_spec(
      spec_with("llm: ../workloads/llm/gpt2_small.yaml, phase: decode, batch: 2, seq: 127"), diags);
  ASSERT_TRUE(spec) << diags.format_all();
  const auto& llm = std::get<workload::LlmSource>(spec->workloads[0].source);
  EXPECT_EQ(llm.config, "configs/workloads/llm/gpt2_small.yaml");
  const auto inputs = load_sweep_inputs(*spec, diags);
  ASSERT_TRUE(inputs) << diags.format_all();
  const auto built = workload::load_source(llm, diags);
  ASSERT_TRUE(built) << diags.format_all();
  EXPECT_EQ(inputs->graphs.at(0).ops.size(), built->graph.ops.size());
  const auto other = parse_spec(
      spec_with("llm: ../workloads/llm/gpt2_small.yaml, phase: decode, batch: 4, seq: 127"), diags);
  ASSERT_TRUE(other) << diags.format_all();
  EXPECT_NE(other->hash, spec->hash);
  // Column 65: the value of seq in
  // "workloads: [{name: gpt2, file: ../workloads/resnet18.yaml, seq: 8}]".
  EXPECT_EQ(first_error(spec_with("file: ../workloads/resnet18.yaml, seq: 8")),
            "configs/sweeps/test_spec.yaml:4:65: error: workloads[0].seq: 'seq' does not apply "
            "to a file source; a file source takes: bind, skip_unsupported, fuse_attention, "
            "fuse_functions, dtype");
}

// A workload's mapping search takes coda run's default budget (20,000 evaluations per op, not
// the library's 100,000) and the spec's search: keys; search: without mapper: search is an error.
TEST(SweepSpec, ASearchedWorkloadStatesItsSearch) {
  const auto spec_with = [](const std::string& workload) {
    return "schema_version: 1\nname: t\narch: ../arch/tpu_like_128x128_ws.yaml\n"
           "workloads: [{name: r18, file: ../workloads/resnet18.yaml, " + workload +
           "}]\naxes:\n  array.rows: [64, 128]\n";
  };
  Diagnostics diags;
  const auto plain = parse_spec(spec_with("mapper: search"), diags);
  ASSERT_TRUE(plain) << diags.format_all();
  EXPECT_EQ(plain->workloads[0].search_settings.budget.max_evaluations, 20'000U);
  EXPECT_EQ(plain->workloads[0].search_settings.strategy, mapper::Strategy::Heuristic);
  const auto stated = parse_spec(
      spec_with("mapper: search, search: {objective: energy, strategy: random, evaluations: 500, "
                "patience: 50, seed: 3}"),
      diags);
  ASSERT_TRUE(stated) << diags.format_all();
  const SweepWorkload& w = stated->workloads[0];
  EXPECT_EQ(w.search_goal.objective, mapper::Objective::Energy);
  EXPECT_EQ(w.search_settings.strategy, mapper::Strategy::Random);
  EXPECT_EQ(w.search_settings.budget.max_evaluations, 500U);
  EXPECT_EQ(w.search_settings.budget.patience, 50U);
  EXPECT_EQ(w.search_settings.seed, 3U);
  EXPECT_NE(stated->hash, plain->hash);
  EXPECT_NE(first_error(spec_with("search: {evaluations: 500}")).find(
                "workloads[0].search: search settings need mapper: search"),
            std::string::npos);
  EXPECT_NE(first_error(spec_with("mapper: search, search: {budget: 5}")).find("budget"),
            std::string::npos);
}

TEST(SweepSpec, DefaultsAndFallingRanges) {
  Diagnostics diags;
  const auto spec = parse_spec(kHeader +
                                   "axes:\n"
                                   "  array.rows: {from: 256, to: 64, step: -96}\n"
                                   "  clock: {from: 1 GHz, to: 250 MHz, factor: 0.5}\n",
                               diags);
  ASSERT_TRUE(spec) << diags.format_all();
  // 256, 160, 64 (256 - 2 x 96 = 64 reaches `to` exactly).
  EXPECT_EQ(spec->axes[0].values, (std::vector<std::string>{"256", "160", "64"}));
  // 1000, 500, 250 MHz.
  EXPECT_EQ(spec->axes[1].values, (std::vector<std::string>{"1000 MHz", "500 MHz", "250 MHz"}));
  EXPECT_EQ(spec->sampling.method, SamplingMethod::Grid);
  EXPECT_EQ(spec->objectives, std::vector<SweepObjective>{SweepObjective::Latency});
}

TEST(SweepSpec, BadSpecsGiveLocatedDiagnostics) {
  // Line numbers: kHeader is lines 1-4, so "axes:" is line 5 and the first axis line 6.
  // Columns are 1-based: in "  array.rows: {from: 64, to: 256, step: -64}" the step's value
  // "-64" starts at column 41; in "  sram.ifmap: {from: 4 MiB, to: 1 MiB, factor: 2}" the
  // factor's "2" is at column 48.
  EXPECT_EQ(first_error(kHeader + "axes: {array.rows: [64]}\nobjective: [latency]\n"),
            "configs/sweeps/test_spec.yaml:6:1: error: objective: unknown key (did you mean "
            "'objectives'?)");
  EXPECT_EQ(first_error(kHeader + "axes:\n  array.rowz: [64]\n"),
            "configs/sweeps/test_spec.yaml:6:3: error: axes.array.rowz: the base arch has no key "
            "'rowz' in 'array'; did you mean 'rows'?");
  EXPECT_EQ(first_error(kHeader + "axes:\n  compute[0].array.rows: [64]\n"),
            "configs/sweeps/test_spec.yaml:6:3: error: axes.compute[0].array.rows: the base arch "
            "has no key 'compute' in the document; keys there: schema_version, name, "
            "description, sources, clock, word_size, array, sram, dram");
  EXPECT_EQ(first_error(kHeader + "axes:\n  sram: [64]\n"),
            "configs/sweeps/test_spec.yaml:6:3: error: axes.sram: 'sram' is a map in the base "
            "arch; an axis sets one value; name a key inside it, e.g. 'array.rows' or "
            "'memory[0].capacity'");
  EXPECT_EQ(first_error(kHeader + "axes:\n  array.rows: []\n"),
            "configs/sweeps/test_spec.yaml:6:15: error: axes.array.rows: the list of values is "
            "empty; write at least one value, e.g. [64, 128]");
  EXPECT_EQ(first_error(kHeader + "axes:\n  array.rows: {from: 64, to: 256, step: -64}\n"),
            "configs/sweeps/test_spec.yaml:6:41: error: axes.array.rows.step: step -64 does not "
            "move from 64 towards 256; write a step above zero, e.g. the distance between two "
            "values");
  EXPECT_EQ(first_error(kHeader + "axes:\n  sram.ifmap: {from: 4 MiB, to: 1 MiB, factor: 2}\n"),
            "configs/sweeps/test_spec.yaml:6:48: error: axes.sram.ifmap.factor: factor 2 does not "
            "move from 4 MiB towards 1 MiB; a falling range needs a factor between 0 and 1");
  EXPECT_EQ(first_error(kHeader + "axes: {array.rows: [64]}\nobjectives: [latency, speed]\n"),
            "configs/sweeps/test_spec.yaml:6:23: error: objectives[1]: \"speed\" is not valid; "
            "expected one of: latency, throughput, energy, edp, perf_per_watt, perf_per_mm2");
  EXPECT_EQ(first_error(kHeader +
                        "axes: {array.rows: [64]}\nsampling: {method: random, points: 0}\n"),
            "configs/sweeps/test_spec.yaml:6:36: error: sampling.points: points must be at least "
            "1, not 0");
  EXPECT_EQ(first_error(kHeader + "axes: {array.rows: [64]}\nsampling: {method: grid, points: 4}\n"),
            "configs/sweeps/test_spec.yaml:6:34: error: sampling.points: a grid runs every "
            "combination; points is for random and latin_hypercube; remove points:, or write "
            "method: random or latin_hypercube");
  EXPECT_EQ(first_error("schema_version: 1\nname: t\narch: ../arch/none.yaml\n"
                        "workloads: [{name: r18, file: ../workloads/resnet18.yaml}]\n"
                        "axes: {array.rows: [64]}\n"),
            "configs/sweeps/test_spec.yaml:3:7: error: arch: no such file "
            "'configs/arch/none.yaml'; the path is relative to the sweep spec's folder");
}

// A spec over `axes` with the header's arch and workload.
SweepSpec spec_with(const std::string& axes_and_more) {
  Diagnostics diags;
  auto spec = parse_spec(kHeader + axes_and_more, diags);
  EXPECT_TRUE(spec) << diags.format_all();
  return spec.value_or(SweepSpec{});
}

TEST(ArchValues, SetsAndReadsOneValueByPathInACopyOnly) {
  Diagnostics diags;
  auto doc = YamlDocument::load("configs/arch/scalesim_32x32_os.yaml", diags);
  ASSERT_TRUE(doc) << diags.format_all();
  YamlDocument copy = doc->clone();
  std::string why, hint;
  ASSERT_TRUE(set_arch_value(copy, "array.rows", "64", why, hint)) << why;
  EXPECT_EQ(arch_value(copy, "array.rows", why, hint), "64");
  EXPECT_EQ(arch_value(*doc, "array.rows", why, hint), "32");  // the preset says 32
  const auto spec = arch::read_arch_spec(copy.root(), diags);
  ASSERT_TRUE(spec) << diags.format_all();
  EXPECT_EQ(spec->compute.at(0).array->rows, 64u);
  EXPECT_NE(copy.content_hash(), doc->content_hash());

  EXPECT_FALSE(arch_value(*doc, "dram.bandwith", why, hint));
  EXPECT_EQ(hint, "did you mean 'bandwidth'?");
  EXPECT_FALSE(set_arch_value(copy, "array", "64", why, hint));  // a map, not one value
  EXPECT_NE(why.find("'array' is a map"), std::string::npos) << why;
  EXPECT_FALSE(set_arch_value(copy, "array..rows", "64", why, hint));
  EXPECT_NE(why.find("empty key"), std::string::npos) << why;
}

TEST(SweepPoints, GridIsTheCartesianProductFirstAxisSlowest) {
  const SweepSpec spec =
      spec_with("axes:\n  array.rows: [32, 64]\n  array.cols: [16, 32, 48]\n");
  // 2 x 3 = 6 points; the last axis turns fastest, like nested loops in spec order.
  const std::vector<SweepPoint> expected{{0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1}, {1, 2}};
  EXPECT_EQ(enumerate_points(spec), expected);
  EXPECT_EQ(point_values(spec, {1, 2}),
            (std::vector<std::pair<std::string, std::string>>{{"array.rows", "64"},
                                                              {"array.cols", "48"}}));
}

TEST(SweepPoints, LatinHypercubeUsesEveryStratumOnce) {
  // 3 axes of 8 values and 8 points: each axis's 8 strata each hold one point, and with as many
  // values as strata, stratum s is value s, so every value of every axis appears exactly once.
  const SweepSpec spec = spec_with(
      "axes:\n"
      "  array.rows: {from: 8, to: 64, step: 8}\n"
      "  array.cols: {from: 8, to: 64, step: 8}\n"
      "  sram.ifmap: {from: 1 KiB, to: 128 KiB, factor: 2}\n"
      "sampling: {method: latin_hypercube, points: 8, seed: 42}\n");
  const auto points = enumerate_points(spec);
  ASSERT_EQ(points.size(), 8u);
  for (std::size_t a = 0; a < 3; ++a) {
    std::set<std::size_t> used;
    for (const SweepPoint& p : points) used.insert(p[a]);
    EXPECT_EQ(used.size(), 8u) << "axis " << a;
  }
  const auto strata = latin_hypercube_strata(3, 8, 42);
  for (const auto& axis : strata) {
    std::vector<std::size_t> sorted = axis;
    std::sort(sorted.begin(), sorted.end());
    std::vector<std::size_t> all(8);
    std::iota(all.begin(), all.end(), 0);
    EXPECT_EQ(sorted, all);
  }
  // Seeded: the same seed gives the same points.
  EXPECT_EQ(enumerate_points(spec), points);
}

TEST(SweepPoints, RandomIsSeededAndInRange) {
  const SweepSpec spec = spec_with(
      "axes:\n  array.rows: [8, 16, 32]\n  array.cols: [8, 16]\n"
      "sampling: {method: random, points: 20, seed: 3}\n");
  const auto points = enumerate_points(spec);
  ASSERT_EQ(points.size(), 20u);
  for (const SweepPoint& p : points) {
    EXPECT_LT(p[0], 3u);
    EXPECT_LT(p[1], 2u);
  }
  EXPECT_EQ(enumerate_points(spec), points);
}

TEST(SweepPoints, RandomDrawsOneValueAnAxisFromOneStream) {
  // The definition, drawn here by hand: point i takes draws i x axes .. i x axes + axes - 1 of
  // std::mt19937_64(seed), each the top 53 bits as a double in [0, 1) times the axis's values,
  // rounded down. A PointSequence asked in any order gives the same points.
  const SweepSpec spec = spec_with(
      "axes:\n  array.rows: [8, 16, 32]\n  array.cols: [8, 16]\n  sram.ifmap: [1 MiB, 2 MiB, "
      "4 MiB, 8 MiB, 16 MiB]\nsampling: {method: random, points: 50, seed: 7}\n");
  std::mt19937_64 rng(7);
  const std::size_t extents[] = {3, 2, 5};
  std::vector<SweepPoint> expected;
  for (int i = 0; i < 50; ++i) {
    SweepPoint p;
    for (const std::size_t n : extents)
      p.push_back(std::min(static_cast<std::size_t>(static_cast<double>(rng() >> 11) * 0x1.0p-53 *
                                                    static_cast<double>(n)),
                           n - 1));
    expected.push_back(p);
  }
  EXPECT_EQ(enumerate_points(spec), expected);
  PointSequence sequence(spec);
  ASSERT_EQ(sequence.size(), 50u);
  for (const std::uint64_t i : {49U, 3U, 3U, 17U, 0U, 48U, 25U})
    EXPECT_EQ(sequence.at(i), expected[static_cast<std::size_t>(i)]) << i;
}

TEST(SweepPoints, EverySamplingGivesTheSamePointsInAnyOrder) {
  // Grid (mixed radix), random (the stream restarts for an earlier point) and Latin hypercube
  // (its table): each point asked out of order, and from a copy, equals enumerate_points'.
  for (const char* sampling : {"", "sampling: {method: random, points: 40, seed: 3}\n",
                               "sampling: {method: latin_hypercube, points: 40, seed: 3}\n"}) {
    SCOPED_TRACE(sampling);
    const SweepSpec spec =
        spec_with(std::string("axes:\n  array.rows: [8, 16, 32, 64]\n  array.cols: [8, 16, 32]\n"
                              "  sram.ifmap: [1 MiB, 2 MiB, 4 MiB]\n") +
                  sampling);
    const auto all = enumerate_points(spec);
    PointSequence sequence(spec);
    ASSERT_EQ(sequence.size(), all.size());
    for (std::uint64_t i = sequence.size(); i-- > 0;)
      EXPECT_EQ(sequence.at(i), all[static_cast<std::size_t>(i)]) << i;
    PointSequence copy = sequence;
    EXPECT_EQ(copy.at(5), all[5]);
    EXPECT_EQ(copy.at(4), all[4]);
  }
  // The grid's last axis turns fastest: point 13 of 4 x 3 x 3 is (1, 1, 1).
  const SweepSpec grid = spec_with(
      "axes:\n  array.rows: [8, 16, 32, 64]\n  array.cols: [8, 16, 32]\n"
      "  sram.ifmap: [1 MiB, 2 MiB, 4 MiB]\n");
  EXPECT_EQ(PointSequence(grid).at(13), (SweepPoint{1, 1, 1}));
}

TEST(SweepApply, APathChangesExactlyThatValue) {
  const SweepSpec spec = spec_with("axes:\n  array.rows: [64]\n  sram.ifmap: [1 MiB]\n");
  Diagnostics diags;
  const auto base = arch::load_arch("configs/arch/tpu_like_128x128_ws.yaml", diags);
  std::uint64_t hash = 0;
  const auto point = apply_point(spec, {0, 0}, diags, &hash);
  ASSERT_TRUE(base && point) << diags.format_all();
  EXPECT_NE(hash, base->content_hash);
  // Everything else is the base's: set the two values on the base and compare whole specs.
  arch::ArchSpec expected = base->spec;
  expected.compute.at(0).array->rows = 64;
  const auto ifmap = std::find_if(expected.memory.begin(), expected.memory.end(),
                                  [](const auto& level) { return level.name == "ifmap"; });
  ASSERT_NE(ifmap, expected.memory.end());
  ifmap->capacity = Bytes{1U << 20};
  EXPECT_EQ(*point, expected);
  // The peak halves: 128x128 -> 64x128 MACs at 700 MHz, 2 ops per MAC:
  // 2 x 128 x 128 x 700e6 = 22.9376e12 -> 2 x 64 x 128 x 700e6 = 11.4688e12 ops/s.
  const arch::HardwareModel base_hw(base->spec);
  const arch::HardwareModel hw(*point);
  const DataType precision = base_hw.matrix_precisions().front();
  EXPECT_DOUBLE_EQ(base_hw.peak_ops_per_second(precision), 22.9376e12);
  EXPECT_DOUBLE_EQ(hw.peak_ops_per_second(precision), 11.4688e12);
}

// Point `index` of `spec` as the executor runs it (inputs loaded once, a PointArchBuilder).
SweepPointRecord run_point(const SweepSpec& spec, std::uint64_t index) {
  Diagnostics diags;
  const auto inputs = load_sweep_inputs(spec, diags);
  auto archs = PointArchBuilder::create(spec, diags);
  EXPECT_TRUE(inputs && archs) << diags.format_all();
  if (!inputs || !archs) return {};
  return evaluate_point(spec, *inputs, *archs, index, PointSequence(spec).at(index));
}

TEST(SweepApply, TheBuilderGivesApplyPointsArchForEveryPointInAnyOrder) {
  // One builder reused over every point (and back to the first): each point sets every axis,
  // so nothing of the point before remains; an invalid value (rows 0) gives apply_point's
  // diagnostics and the next point is valid again.
  const SweepSpec spec =
      spec_with("axes:\n  array.rows: [0, 32, 64]\n  sram.ifmap: [1 MiB, 2 MiB]\n");
  Diagnostics diags;
  auto builder = PointArchBuilder::create(spec, diags);
  ASSERT_TRUE(builder) << diags.format_all();
  auto points = enumerate_points(spec);
  points.push_back(points.front());
  points.push_back(points.at(3));
  for (const SweepPoint& point : points) {
    Diagnostics fresh_diags, built_diags;
    std::uint64_t fresh_hash = 0, built_hash = 0;
    const auto fresh = apply_point(spec, point, fresh_diags, &fresh_hash);
    const auto built = builder->build(point, built_diags, &built_hash);
    EXPECT_EQ(fresh, built);
    EXPECT_EQ(fresh_hash, built_hash);
    EXPECT_EQ(fresh_diags.format_all(), built_diags.format_all());
    EXPECT_EQ(built.has_value(), point[0] != 0) << built_diags.format_all();
  }
}

TEST(SweepApply, AnInvalidArchIsAnInfeasiblePointWithTheReason) {
  const SweepSpec spec = spec_with("axes:\n  array.rows: [0, 64]\n");
  const SweepPointRecord bad = run_point(spec, 0);
  ASSERT_EQ(bad.rows.size(), 1u);
  EXPECT_EQ(bad.rows[0].status, RowStatus::Infeasible);
  EXPECT_FALSE(bad.rows[0].feasible);
  // tpu_like_128x128_ws.yaml line 10 is "  rows: 128", the value at column 9.
  EXPECT_EQ(bad.rows[0].reason,
            "configs/arch/tpu_like_128x128_ws.yaml:10:9: error: array.rows: must be at least 1; "
            "an array has at least one row and one column, e.g. 32");
  EXPECT_EQ(bad.values, (std::vector<std::uint32_t>{0}));  // array.rows' first value, "0"
  EXPECT_EQ(bad.rows[0].values, bad.values);
  const SweepPointRecord good = run_point(spec, 1);
  EXPECT_EQ(good.rows.at(0).status, RowStatus::Ok);
  EXPECT_GT(good.rows.at(0).latency_s, 0.0);
  EXPECT_FALSE(good.rows.at(0).run_summary.empty());
}

TEST(SweepApply, ObjectivesAndVerdictsFollowFromTheRun) {
  const SweepSpec spec = spec_with(
      "axes:\n  array.rows: [128]\n"
      "constraints: {max_area_mm2: 1000, max_power_w: 0.001, fits_memory: true}\n");
  const SweepRow row = run_point(spec, 0).rows.at(0);
  ASSERT_EQ(row.status, RowStatus::Ok) << row.reason;
  // throughput = 1 / latency, edp = energy x latency.
  EXPECT_DOUBLE_EQ(row.throughput_per_s, 1.0 / row.latency_s);
  EXPECT_DOUBLE_EQ(row.edp_js, row.energy_j * row.latency_s);
  EXPECT_DOUBLE_EQ(row.power_w, row.energy_j / row.latency_s);
  EXPECT_EQ(row.area_verdict, Verdict::Pass);   // tens of mm2 < 1000
  EXPECT_EQ(row.power_verdict, Verdict::Fail);  // watts > 1 mW
  // The preset states no DRAM capacity: "unknown capacity" is not "fits".
  EXPECT_EQ(row.memory_status, results::FitStatus::UnknownCapacity);
  EXPECT_EQ(row.memory_verdict, Verdict::Fail);
  EXPECT_FALSE(row.feasible);
}

TEST(SweepStore, InterruptedAndResumedEqualsUninterrupted) {
  const testing::TempDir tmp;
  const SweepSpec spec = spec_with("axes:\n  array.rows: [0, 32, 64]\n  sram.ifmap: [1 MiB, 2 MiB]\n");
  std::string why;
  Diagnostics diags;
  std::vector<SweepRow> whole;
  {
    auto store =
        SweepStore::create(tmp.path() / "whole.db", spec.hash, spec.name, store_axes(spec), why);
    ASSERT_TRUE(store) << why;
    const auto outcome = run_sweep(spec, *store, {.threads = 2}, diags);
    ASSERT_TRUE(outcome) << diags.format_all();
    EXPECT_EQ(outcome->ran, 6u);  // 3 x 2
    EXPECT_EQ(outcome->infeasible, 2u);  // rows = 0, with either SRAM
    whole = store->rows();
  }
  {
    auto store =
        SweepStore::create(tmp.path() / "parts.db", spec.hash, spec.name, store_axes(spec), why);
    ASSERT_TRUE(store) << why;
    const auto first = run_sweep(spec, *store, {.threads = 2, .limit = 4}, diags);
    ASSERT_TRUE(first) << diags.format_all();
    EXPECT_EQ(first->ran, 4u);
    EXPECT_EQ(first->remaining, 2u);
  }
  auto store = SweepStore::open(tmp.path() / "parts.db", spec.hash, why);
  ASSERT_TRUE(store) << why;
  EXPECT_EQ(store->done_points(), (std::set<std::uint64_t>{0, 1, 2, 3}));
  const auto rest = run_sweep(spec, *store, {.threads = 1}, diags);
  ASSERT_TRUE(rest) << diags.format_all();
  EXPECT_EQ(rest->already_done, 4u);
  EXPECT_EQ(rest->ran, 2u);
  ASSERT_EQ(whole.size(), 6u);
  EXPECT_EQ(store->rows(), whole);
  // The exports come from the rows: header, then one line per point x workload.
  const std::string csv = export_csv(spec, whole);
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "point,workload,array.rows,sram.ifmap,status,feasible,latency_s,area_mm2,power_w,"
            "memory,reason");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 7);
}

// A row where coda itself failed is status "error", never "infeasible": the store, the wire
// codec and the exports keep it apart, and a status no coda writes is refused by the codec.
TEST(SweepStore, AnErrorRowStaysAnErrorThroughTheStoreTheCodecAndTheExports) {
  EXPECT_EQ(parse_row_status("error"), RowStatus::Error);
  EXPECT_EQ(parse_row_status("infeasible"), RowStatus::Infeasible);
  EXPECT_FALSE(parse_row_status("failed"));
  const SweepSpec spec = spec_with("axes:\n  array.rows: [32, 64]\n");
  SweepPointRecord record;
  record.index = 1;
  record.values = {1};  // "64"
  SweepRow row;
  row.point = 1;
  row.values = record.values;
  row.workload_name = "r18";
  row.status = RowStatus::Error;
  row.reason = "internal error: boom";
  record.rows = {row};
  const std::vector<SweepPointRecord> records{record};
  const auto decoded = decode_records(encode_records(records));
  ASSERT_TRUE(decoded);
  EXPECT_EQ(decoded->front().rows.front().status, RowStatus::Error);
  // "error" -> "errox" (same length): a status the codec does not know.
  std::vector<std::uint8_t> bytes = encode_records(records);
  const std::string text(bytes.begin(), bytes.end());
  const std::size_t at = text.find("error");
  ASSERT_NE(at, std::string::npos);
  bytes[at + 4] = 'x';
  EXPECT_FALSE(decode_records(bytes));

  const testing::TempDir tmp;
  std::string why;
  auto store = SweepStore::create(tmp.path() / "s.db", spec.hash, spec.name, store_axes(spec), why);
  ASSERT_TRUE(store) << why;
  ASSERT_TRUE(store->write_points(records, why)) << why;
  EXPECT_EQ(store->rows().front().values, record.values);
  ASSERT_EQ(store->rows().size(), 1U);
  EXPECT_EQ(store->rows().front().status, RowStatus::Error);
  const std::string csv = export_csv(spec, store->rows());
  EXPECT_EQ(csv.substr(csv.find('\n') + 1), "1,r18,64,error,no,,,,,internal error: boom\n");
  EXPECT_NE(export_json(spec, store->rows()).find(R"("status": "error")"), std::string::npos);
}

// A constraint's verdict and the memory status are closed sets: the codec carries their names,
// an unset memory status as empty text (a row that did not run), and refuses a name it does not
// know.
TEST(SweepStore, VerdictsAndTheMemoryStatusTravelByNameAndAnUnknownNameIsRefused) {
  for (Verdict v : {Verdict::Unchecked, Verdict::Unknown, Verdict::Pass, Verdict::Fail})
    EXPECT_EQ(parse_verdict(to_string(v)), v);
  EXPECT_FALSE(parse_verdict("ok"));
  SweepPointRecord record;
  record.index = 3;
  SweepRow ran;
  ran.point = 3;
  ran.memory_status = results::FitStatus::DoesNotFit;
  ran.area_verdict = Verdict::Pass;
  ran.power_verdict = Verdict::Unknown;
  ran.memory_verdict = Verdict::Fail;
  SweepRow infeasible = ran;
  infeasible.status = RowStatus::Infeasible;
  infeasible.memory_status = std::nullopt;
  infeasible.memory_verdict = Verdict::Unchecked;
  record.rows = {ran, infeasible};
  const std::vector<SweepPointRecord> records{record};
  const auto decoded = decode_records(encode_records(records));
  ASSERT_TRUE(decoded);
  EXPECT_EQ(*decoded, records);
  // "unknown" (the power verdict) -> "unknowx": a verdict the codec does not know.
  std::vector<std::uint8_t> bytes = encode_records(records);
  const std::string text(bytes.begin(), bytes.end());
  const std::size_t at = text.find("unknown");  // the first: the ran row's power verdict
  ASSERT_NE(at, std::string::npos);
  bytes[at + 6] = 'x';
  EXPECT_FALSE(decode_records(bytes));
  // In the CSV: the ran row's memory status, the other's empty.
  const SweepSpec spec = spec_with("axes:\n  array.rows: [32, 64]\n");
  const std::string csv = export_csv(spec, record.rows);
  EXPECT_NE(csv.find(",does not fit,"), std::string::npos) << csv;
}

// The spec's objectives are results::kSweepMetrics's first entries, in SweepObjective's order,
// and an ok row's JSON metrics carry the table's keys in its order (the same names as the CSV's
// columns: perf_per_watt_tops_per_w, not perf_per_watt).
TEST(SweepExports, FollowTheOneMetricTable) {
  for (std::size_t i = 0; i < results::kSweepObjectiveCount; ++i) {
    const auto objective = static_cast<SweepObjective>(i);
    EXPECT_EQ(to_string(objective), results::kSweepMetrics[i].objective);
    EXPECT_EQ(maximised(objective), !results::kSweepMetrics[i].minimised);
  }
  const SweepRow row{.values = {1}, .status = RowStatus::Ok, .latency_s = 1,
                     .throughput_per_s = 2, .energy_j = 3, .edp_js = 4, .perf_per_watt = 5,
                     .perf_per_mm2 = 6, .area_mm2 = 7, .power_w = 8};
  const SweepSpec spec = spec_with("axes:\n  array.rows: [32, 64]\n");
  const auto json = nlohmann::ordered_json::parse(json_row(spec, row));
  EXPECT_EQ(json.at("values"), (nlohmann::ordered_json{{"array.rows", "64"}}));
  std::vector<std::string> keys;
  double expected = 1;
  for (const auto& [key, value] : json.at("metrics").items()) {
    keys.push_back(key);
    EXPECT_EQ(value.get<double>(), expected++) << key;
  }
  std::vector<std::string> table(results::kSweepMetrics.size());
  std::transform(results::kSweepMetrics.begin(), results::kSweepMetrics.end(), table.begin(),
                 [](const results::SweepMetricInfo& m) { return std::string(m.key); });
  EXPECT_EQ(keys, table);
  EXPECT_EQ(keys[4], "perf_per_watt_tops_per_w");
}

TEST(SweepStore, RefusesAnotherSpecsStore) {
  const testing::TempDir tmp;
  std::string why;
  ASSERT_TRUE(SweepStore::create(tmp.path() / "s.db", 0x1234, "a", {}, why)) << why;
  EXPECT_FALSE(SweepStore::create(tmp.path() / "s.db", 0x1234, "a", {}, why));
  EXPECT_NE(why.find("exists"), std::string::npos) << why;
  EXPECT_FALSE(SweepStore::open(tmp.path() / "s.db", 0x9999, why));
  EXPECT_EQ(why, "'" + (tmp.path() / "s.db").string() +
                     "' holds a sweep of another spec (hash 0000000000001234; this spec, with its "
                     "arch and workload files, hashes to 0000000000009999): resuming would mix "
                     "their results");
}

TEST(SweepStore, HoldsValueIndicesAsIntegersBesideTheAxesTextsAndRefusesAnOlderSchema) {
  const testing::TempDir tmp;
  const SweepSpec spec =
      spec_with("axes:\n  array.rows: [32, 64]\n  sram.ifmap: [1 MiB, 2 MiB]\n");
  const auto file = tmp.path() / "s.db";
  std::string why;
  {
    auto store = SweepStore::create(file, spec.hash, spec.name, store_axes(spec), why);
    ASSERT_TRUE(store) << why;
    SweepPointRecord record;
    record.index = 2;
    record.values = {1, 0};
    record.rows.resize(1);
    record.rows[0].point = 2;
    record.rows[0].values = record.values;
    ASSERT_TRUE(store->write_point(record, why)) << why;
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(file.c_str(), &db), SQLITE_OK);
  // Plain SQL joins the point's integers to the axes' texts: point 2 is rows 64, 1 MiB of SRAM.
  std::vector<std::string> got;
  const auto collect = [](void* out, int, char** cells, char**) {
    static_cast<std::vector<std::string>*>(out)->emplace_back(cells[0]);
    return 0;
  };
  ASSERT_EQ(sqlite3_exec(db,
                         "SELECT a.path || '=' || a.text || ' ' || typeof(v.value) FROM "
                         "point_values v JOIN axes a ON a.axis = v.axis AND a.value = v.value "
                         "WHERE v.point = 2 ORDER BY v.axis",
                         collect, &got, nullptr),
            SQLITE_OK);
  EXPECT_EQ(got, (std::vector<std::string>{"array.rows=64 integer", "sram.ifmap=1 MiB integer"}));
  // A store of schema 2 (values as JSON text) is refused, never misread.
  ASSERT_EQ(sqlite3_exec(db, "UPDATE meta SET value = '2' WHERE key = 'schema'", nullptr, nullptr,
                         nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  EXPECT_FALSE(SweepStore::open(file, spec.hash, why));
  EXPECT_EQ(why, "'" + file.string() +
                     "' was written by another version of coda (store schema 2, this coda writes "
                     "3): run the sweep again into a new --out folder");
}

// An LLM on the H200 preset, decode: a workload axis builds each point's model in memory.
const std::string kLlmHeader =
    "schema_version: 1\n"
    "name: t\n"
    "arch: ../arch/nvidia_h200_sxm.yaml\n"
    "workloads: [{name: llama, llm: ../workloads/llm/llama2_7b.yaml, phase: decode, batch: 1, "
    "seq: 1024}]\n";

TEST(SweepWorkloadAxes, EachPointRunsItsOwnBatchAndSequence) {
  const SweepSpec spec = [] {
    Diagnostics diags;
    auto s = parse_spec(kLlmHeader + "axes:\n  workload.batch: [1, 16]\n  workload.seq: "
                                     "[1024, 4096]\n  workload.tp: [1, 3]\n",
                        diags);
    EXPECT_TRUE(s) << diags.format_all();
    return s.value_or(SweepSpec{});
  }();
  ASSERT_TRUE(has_workload_axes(spec));
  // Point 2 is batch 1, seq 4096, tp 1; point 6 batch 16, seq 4096, tp 1 (the last axis turns
  // fastest). The KV cache read in a decode step grows with batch x context, so point 6 takes
  // longer than point 2, which takes longer than point 0 (seq 1024).
  const SweepPointRecord p0 = run_point(spec, 0), p2 = run_point(spec, 2), p6 = run_point(spec, 6);
  ASSERT_EQ(p0.rows.at(0).status, RowStatus::Ok) << p0.rows[0].reason;
  ASSERT_EQ(p6.rows.at(0).status, RowStatus::Ok) << p6.rows[0].reason;
  EXPECT_LT(p0.rows[0].latency_s, p2.rows[0].latency_s);
  EXPECT_LT(p2.rows[0].latency_s, p6.rows[0].latency_s);
  // Each run records the workload it ran: the point's source, not the spec's.
  const auto summary = nlohmann::json::parse(p6.rows[0].run_summary);
  EXPECT_NE(summary.at("workload").get<std::string>().find("b16.s4096"), std::string::npos)
      << summary.at("workload");
  // tp 3 does not divide LLaMA-2-7B's 32 heads: that point's row is infeasible, with the
  // builder's reason; nothing crashes.
  const SweepPointRecord p1 = run_point(spec, 1);
  EXPECT_EQ(p1.rows.at(0).status, RowStatus::Infeasible);
  EXPECT_NE(p1.rows[0].reason.find("tp 3 does not divide the 32 heads"), std::string::npos)
      << p1.rows[0].reason;
}

TEST(SweepWorkloadAxes, AValueOrParameterThatDoesNotApplyIsLocated) {
  EXPECT_EQ(first_error(kHeader + "axes:\n  workload.seq: [128]\n"),
            "configs/sweeps/test_spec.yaml:6:18: error: axes.workload.seq[0]: workload 'r18' has "
            "no such parameter: it applies to LLM workloads; a workload axis applies to every "
            "workload of the spec");
  EXPECT_EQ(first_error(kLlmHeader + "axes:\n  workload.phase: [decode, serve]\n"),
            // "  workload.phase: [decode, serve]": 'serve' starts at column 28.
            "configs/sweeps/test_spec.yaml:6:28: error: axes.workload.phase[1]: unknown phase "
            "'serve': one of prefill, decode, training; a workload axis applies to every "
            "workload of the spec");
  EXPECT_EQ(first_error(kLlmHeader + "axes:\n  workload.heads: [8]\n"),
            "configs/sweeps/test_spec.yaml:6:3: error: axes.workload.heads: 'workload.heads' is "
            "not a workload parameter an axis can vary; one of workload.batch, workload.seq, "
            "workload.phase, workload.tp, workload.pp, workload.dp, workload.micro_batches, "
            "workload.image, workload.dtype, workload.fusion, workload.quant, "
            "workload.kv_dtype, workload.runtime");
  EXPECT_EQ(first_error(kLlmHeader + "axes:\n  workload.quant: [w4a16:g0]\n"),
            // "  workload.quant: [w4a16:g0]": the value starts at column 20.
            "configs/sweeps/test_spec.yaml:6:20: error: axes.workload.quant[0]: cannot read the "
            "group of 'w4a16:g0': write w4a16:gN with N at least 1, e.g. w4a16:g128; a workload "
            "axis applies to every workload of the spec");
}

// LLaMA-2-7B decode at batch 1 on H200 reads its weights each step: W4A16 reads about a
// quarter of bf16's bytes, FP8 half, so the three points' latencies fall in that order; the
// KV cache in fp8 halves the cache's bytes (kv_dtype axis).
TEST(SweepWorkloadAxes, QuantizationAndKvCacheTypeAreAxes) {
  const SweepSpec spec = [] {
    Diagnostics diags;
    auto s = parse_spec(kLlmHeader +
                            "axes:\n  workload.quant: [none, fp8, w4a16]\n"
                            "  workload.kv_dtype: [bf16, fp8_e4m3]\n",
                        diags);
    EXPECT_TRUE(s) << diags.format_all();
    return s.value_or(SweepSpec{});
  }();
  // Points: (none, bf16) 0, (none, fp8) 1, (fp8, bf16) 2, ..., (w4a16, bf16) 4.
  const SweepPointRecord none = run_point(spec, 0), fp8 = run_point(spec, 2),
                         w4 = run_point(spec, 4), kv8 = run_point(spec, 1);
  for (const SweepPointRecord* p : {&none, &fp8, &w4, &kv8})
    ASSERT_EQ(p->rows.at(0).status, RowStatus::Ok) << p->rows[0].reason;
  EXPECT_LT(w4.rows[0].latency_s, fp8.rows[0].latency_s);
  EXPECT_LT(fp8.rows[0].latency_s, none.rows[0].latency_s);
  EXPECT_LT(kv8.rows[0].latency_s, none.rows[0].latency_s);
}

// The runtime is an axis: Hugging Face transformers' eager kernels (docs/llm.md "Runtimes") make
// a LLaMA-2-7B decode step slower than coda's fused ones on the same chip, unfused both
// (workload.fusion: none): RMSNorm's fp32 passes, RoPE's five ops and the whole KV cache copied
// by torch.cat only add DRAM traffic and kernels.
TEST(SweepWorkloadAxes, TheRuntimeIsAnAxis) {
  const SweepSpec spec = [] {
    Diagnostics diags;
    auto s = parse_spec(kLlmHeader +
                            "axes:\n  workload.runtime: [default, hf_transformers]\n"
                            "  workload.fusion: [none]\n",
                        diags);
    EXPECT_TRUE(s) << diags.format_all();
    return s.value_or(SweepSpec{});
  }();
  const SweepPointRecord coda = run_point(spec, 0), hf = run_point(spec, 1);
  ASSERT_EQ(coda.rows.at(0).status, RowStatus::Ok) << coda.rows[0].reason;
  ASSERT_EQ(hf.rows.at(0).status, RowStatus::Ok) << hf.rows[0].reason;
  EXPECT_LT(coda.rows[0].latency_s, hf.rows[0].latency_s);
  EXPECT_EQ(first_error(kLlmHeader + "axes:\n  workload.runtime: [vllm]\n"),
            // "  workload.runtime: [vllm]": the value starts at column 22.
            "configs/sweeps/test_spec.yaml:6:22: error: axes.workload.runtime[0]: unknown "
            "runtime 'vllm': one of default, hf_transformers; a workload axis applies to every "
            "workload of the spec");
}

TEST(SweepPlan, RunsTheMissingPointsInIndexOrderUpToTheLimit) {
  // 10 points, 1 and 3 stored, limit 4: the first four missing ones are 0, 2, 4, 5; 10 - 2 - 4
  // = 4 remain.
  std::vector<bool> stored(10, false);
  stored[1] = stored[3] = true;
  const SweepPlan plan = plan_sweep(10, stored, 4);
  EXPECT_EQ(todo_list(plan), (std::vector<std::uint64_t>{0, 2, 4, 5}));
  EXPECT_EQ(plan.to_run, 4u);
  EXPECT_EQ(plan.already_done, 2u);
  EXPECT_EQ(plan.remaining, 4u);
  EXPECT_EQ(todo_list(plan_sweep(3, {}, std::nullopt)), (std::vector<std::uint64_t>{0, 1, 2}));
  // A shorter list leaves the rest missing; a cursor hands out the same points one at a time.
  const SweepPlan short_list = plan_sweep(5, {true, false, true}, std::nullopt);
  TodoCursor cursor(short_list);
  EXPECT_EQ(cursor.next(), 1u);
  EXPECT_EQ(cursor.next(), 3u);
  EXPECT_EQ(cursor.next(), 4u);
  EXPECT_EQ(cursor.next(), std::nullopt);
  EXPECT_EQ(cursor.handed(), 3u);
  // Asked for 8 threads with 3 points: 3; asked for 0 threads: at least 1.
  EXPECT_EQ(worker_threads(8, 3), 3u);
  EXPECT_GE(worker_threads(0, 100), 1u);
}

TEST(SweepRunSummary, HoldsTheTotalsAndOneArrayPerOp) {
  results::RunResult run;
  run.arch = "a";
  run.workload = "w\"1";  // quoted and escaped
  run.provenance.engine = "analytical";
  run.clock = Hertz{1e9};
  run.processing_elements = 64;
  run.area = SquareMillimetres{2.5};
  results::OpResult op;
  op.name = "gemm";
  op.unit = results::OpUnit::Systolic;
  op.cost = {Cycles{100}, Cycles{80}, Cycles{20}, 4096, Bytes{1}, Bytes{2},
             Bytes{3}, Bytes{4}, Joules{0.125}};
  op.bound = results::Bound::Memory;
  op.arithmetic_intensity = 0.5;
  op.compute_utilization = 0.75;
  op.mapping_efficiency = 1;
  run.ops = {op};
  run.total = op.cost;
  EXPECT_EQ(run_summary(run),
            R"({"summary_version":1,"arch":"a","workload":"w\"1","engine":"analytical",)"
            R"("mapper":"fixed","fusion_mode":"none","clock_hz":1000000000,)"
            R"("processing_elements":64,"area_mm2":2.5,"total":{"cycles":100,)"
            R"("compute_cycles":80,"stall_cycles":20,"macs":4096,"sram_reads":1,"sram_writes":2,)"
            R"("dram_reads":3,"dram_writes":4,"energy_j":0.125},"memory":{"status":)"
            R"("unknown capacity","needed_bytes":0,"available_bytes":0,"weights_bytes":0,)"
            R"("kv_cache_bytes":0,"optimizer_state_bytes":0,"activations_bytes":0,)"
            R"("on_chip_bytes":0},"skipped":0,"fused_groups":0,"op_columns":["name","unit",)"
            R"("cycles","compute_cycles","stall_cycles","macs","sram_reads","sram_writes",)"
            R"("dram_reads","dram_writes","energy_j","bound","arithmetic_intensity",)"
            R"("compute_utilization","mapping_efficiency"],"ops":[["gemm","systolic",100,80,20,)"
            R"(4096,1,2,3,4,0.125,"memory",0.5,0.75,1]]})");
  // It is JSON: it parses, and the op's cycles are where op_columns says.
  const auto parsed = nlohmann::json::parse(run_summary(run));
  EXPECT_EQ(parsed["ops"][0][2], 100);
}

TEST(SweepStore, RecordsSurviveEncodingBitForBit) {
  SweepPointRecord record;
  record.index = 7;
  record.values = {1, 0, 4};
  record.arch_hash = "00000000deadbeef";
  SweepRow row;  // a row's point, values and arch hash are its record's
  row.point = 7;
  row.values = record.values;
  row.arch_hash = record.arch_hash;
  row.latency_s = 0.1 + 0.2;  // 0.30000000000000004: not a short decimal
  row.energy_j = 1e-300;
  row.feasible = true;
  row.run_summary = "{}";
  record.rows = {row, row};
  record.rows[1].workload = 1;
  record.rows[1].status = RowStatus::Infeasible;
  const std::vector<SweepPointRecord> records{record, SweepPointRecord{}};
  const auto decoded = decode_records(encode_records(records));
  ASSERT_TRUE(decoded);
  EXPECT_EQ(*decoded, records);
  const std::vector<std::uint8_t> junk{0x01, 0x02, 0xff};
  EXPECT_FALSE(decode_records(junk));
}

// decode_records takes only exactly what encode_records writes: every proper prefix of an
// encoding, the encoding with a byte more, and counts that the bytes cannot hold fail (rather
// than read past the end or allocate for the count).
TEST(SweepStore, RecordDecodingRejectsTruncatedAndPaddedBytes) {
  SweepPointRecord record;
  record.index = 3;
  record.values = {2};
  record.rows.resize(2);
  record.rows[1].run_summary = "{}";
  const std::vector<SweepPointRecord> records{record};
  const std::vector<std::uint8_t> bytes = encode_records(records);
  for (std::size_t size = 0; size < bytes.size(); ++size)
    EXPECT_FALSE(decode_records(std::span(bytes.data(), size))) << "prefix of " << size;
  std::vector<std::uint8_t> padded = bytes;
  padded.push_back(0);
  EXPECT_FALSE(decode_records(padded));
  // The record count is the u64 after the 4-byte magic: 2^40 records in a few bytes.
  std::vector<std::uint8_t> huge = encode_records({});
  ASSERT_EQ(huge.size(), 12U);
  huge[4 + 5] = 1;
  EXPECT_FALSE(decode_records(huge));
  // A feasible flag other than 0 or 1 is not a flag (it is the u64 before run_summary's).
  std::vector<std::uint8_t> flag = bytes;
  const std::size_t summary_length_at = flag.size() - 2 - 8;  // "{}" and its length
  flag[summary_length_at - 8] = 2;
  EXPECT_FALSE(decode_records(flag));
  flag[summary_length_at - 8] = 1;
  const auto decoded = decode_records(flag);
  ASSERT_TRUE(decoded);
  EXPECT_TRUE(decoded->front().rows[1].feasible);
}

TEST(SweepStore, ABatchIsOneTransaction) {
  const testing::TempDir tmp;
  std::string why;
  auto store = SweepStore::create(tmp.path() / "s.db", 1, "s", {}, why);
  ASSERT_TRUE(store) << why;
  SweepPointRecord a;
  a.index = 4;
  a.rows.resize(1);
  // Point 4 twice: the second insert breaks the primary key, and the whole batch rolls back.
  EXPECT_FALSE(store->write_points(std::vector<SweepPointRecord>{a, a}, why));
  EXPECT_TRUE(store->done_points().empty());
  SweepPointRecord b = a;
  b.index = 5;
  EXPECT_TRUE(store->write_points(std::vector<SweepPointRecord>{a, b}, why)) << why;
  EXPECT_EQ(store->done_points(), (std::set<std::uint64_t>{4, 5}));
  // As flags for a sweep of 7 points, and of 5 (point 5 is past its end).
  EXPECT_EQ(store->stored_points(7),
            (std::vector<bool>{false, false, false, false, true, true, false}));
  EXPECT_EQ(store->stored_points(5), (std::vector<bool>{false, false, false, false, true}));
}

TEST(SweepWriter, WritesEveryPointPutAndReportsProgress) {
  const testing::TempDir tmp;
  std::string why;
  auto store = SweepStore::create(tmp.path() / "s.db", 1, "s", {}, why);
  ASSERT_TRUE(store) << why;
  std::vector<SweepProgress> seen;
  {
    SweepWriter writer(*store, 20, [&seen](const SweepProgress& p) { seen.push_back(p); });
    for (std::uint64_t i = 0; i < 20; ++i) {
      SweepPointRecord r;
      r.index = i;
      r.rows.resize(1);
      if (i % 4 == 0) r.rows[0].status = RowStatus::Infeasible;  // 0, 4, 8, 12, 16
      ASSERT_TRUE(writer.put(std::move(r), why)) << why;
    }
    ASSERT_TRUE(writer.finish(why)) << why;
    EXPECT_EQ(writer.written(), 20u);
    EXPECT_EQ(writer.infeasible(), 5u);
  }
  EXPECT_EQ(store->done_points().size(), 20u);
  // One call per commit; the last one has every point.
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.back().done, 20u);
  EXPECT_EQ(seen.back().total, 20u);
  EXPECT_EQ(seen.back().infeasible, 5u);
}

}  // namespace
}  // namespace coda::dse
