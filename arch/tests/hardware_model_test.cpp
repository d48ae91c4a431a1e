// Schema 2 (the general form): reading, validation with located errors, and what HardwareModel
// derives (peaks per precision, chip-wide bandwidths, ridge points, the systolic view).

#include "arch/hardware_model.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace coda::arch {
namespace {

// A small GPU-like chip: 4 SMs of 512 fp16 / 1024 int8 MACs per cycle, a 128-lane vector unit,
// 100 KiB of shared memory per SM at 64 B/cycle, a 4 MiB L2 and 1 TB/s of HBM, at 1 GHz.
constexpr std::string_view kGpu = R"(schema_version: 2
name: mini-gpu
clock: 1 GHz
cores: 4
compute:
  - name: tc
    kind: tensor_core
    macs_per_cycle: {fp16: 512, int8: 1024}
  - name: simd
    kind: vector
    ops_per_cycle: {fp32: 128}
memory:
  - {name: smem, capacity: 100 KiB, read_bandwidth: 64 B/cycle}
  - {name: l2, scope: chip, capacity: 4 MiB, read_bandwidth: 2 TB/s, write_bandwidth: 1 TB/s}
dram: {technology: hbm3, capacity: 16 GiB, bandwidth: 1 TB/s}
interconnect: {chips: 8, topology: ring, bandwidth: 100 GB/s, latency: 1 us}
)";

// A two-core NPU: each core has two 16x8 int8 weight-stationary arrays (int4 packs two MACs per
// PE) and one 256 KiB scratchpad for inputs and weights plus a 64 KiB accumulator.
constexpr std::string_view kNpu = R"(schema_version: 2
name: mini-npu
clock: 500 MHz
cores: 2
compute:
  - name: mxu
    kind: systolic
    count: 2
    array: {rows: 16, cols: 8, dataflow: weight_stationary}
    macs_per_pe: {int8: 1, int4: 2}
memory:
  - {name: spad, capacity: 256 KiB, holds: [inputs, weights]}
  - {name: acc, capacity: 64 KiB, holds: [outputs], double_buffered: false}
dram: {technology: lpddr4x, bandwidth: 8 GB/s}
)";

std::optional<ArchSpec> parse(std::string_view text, Diagnostics& diags) {
  const auto doc = YamlDocument::parse(text, "a.yaml", diags);
  return doc ? read_arch_spec(doc->root(), diags) : std::nullopt;
}

std::vector<std::string> errors_of(const std::string& text) {
  Diagnostics diags;
  EXPECT_FALSE(parse(text, diags));
  std::vector<std::string> out;
  for (const auto& d : diags.all()) out.push_back(format(d));
  return out;
}

std::string replaced(std::string_view text, std::string_view from, std::string_view to) {
  std::string out(text);
  const auto at = out.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return out.replace(at, from.size(), to);
}

HardwareModel model(std::string_view text) {
  Diagnostics diags;
  const auto spec = parse(text, diags);
  EXPECT_TRUE(spec) << diags.format_all();
  return HardwareModel(spec.value_or(ArchSpec{.clock = Hertz{1}}));
}

TEST(HardwareModel, GpuPeaksBandwidthsAndRidgePoints) {
  const HardwareModel hw = model(kGpu);
  ASSERT_NE(hw.matrix_unit(), nullptr);
  EXPECT_EQ(hw.matrix_unit()->kind, UnitKind::TensorCore);
  ASSERT_NE(hw.vector_unit(), nullptr);
  // 4 SMs x 512 MACs x 2 ops x 1e9 Hz = 4.096e12 fp16 ops/s; int8 twice that; bf16 absent.
  EXPECT_DOUBLE_EQ(hw.peak_ops_per_second(DataType::Fp16), 4.096e12);
  EXPECT_DOUBLE_EQ(hw.peak_ops_per_second(DataType::Int8), 8.192e12);
  EXPECT_DOUBLE_EQ(hw.peak_ops_per_second(DataType::Bf16), 0.0);
  EXPECT_EQ(hw.matrix_precisions(), (std::vector<DataType>{DataType::Fp16, DataType::Int8}));
  // Vector: 4 x 128 x 1e9 = 5.12e11 fp32 element ops/s.
  EXPECT_DOUBLE_EQ(hw.peak_vector_ops_per_second(DataType::Fp32), 5.12e11);

  ASSERT_EQ(hw.levels().size(), 3u);  // smem, l2, dram
  const LevelSummary& smem = hw.levels()[0];
  EXPECT_EQ(smem.instances, 4u);  // one per core
  // 64 B/cycle x 1e9 x 4 SMs = 2.56e11 B/s; no write bandwidth given: the read figure.
  EXPECT_DOUBLE_EQ(*smem.read_bytes_per_second, 2.56e11);
  EXPECT_DOUBLE_EQ(*smem.write_bytes_per_second, 2.56e11);
  const LevelSummary& l2 = hw.levels()[1];
  EXPECT_EQ(l2.instances, 1u);
  EXPECT_DOUBLE_EQ(*l2.write_bytes_per_second, 1e12);
  EXPECT_EQ(hw.levels()[2].name, "dram");
  EXPECT_DOUBLE_EQ(*hw.dram_bytes_per_second(), 1e12);
  // Ridge point at DRAM: 4.096e12 ops/s / 1e12 B/s = 4.096 ops per byte; at smem 16.
  EXPECT_DOUBLE_EQ(*hw.ridge_point(DataType::Fp16, hw.levels()[2]), 4.096);
  EXPECT_DOUBLE_EQ(*hw.ridge_point(DataType::Fp16, smem), 16.0);
  EXPECT_FALSE(hw.ridge_point(DataType::Bf16, smem));
  ASSERT_TRUE(hw.spec().interconnect);
  EXPECT_EQ(hw.spec().interconnect->chips, 8u);
  EXPECT_DOUBLE_EQ(hw.spec().interconnect->bandwidth.value, 100e9);
}

TEST(HardwareModel, NpuSystolicViewSplitsSharedBuffers) {
  const HardwareModel hw = model(kNpu);
  EXPECT_EQ(hw.rows(), 16u);
  EXPECT_EQ(hw.cols(), 8u);
  EXPECT_EQ(hw.arrays(), 4u);               // 2 cores x 2 arrays
  EXPECT_EQ(hw.processing_elements(), 512u);  // 16 x 8 x 4
  // Schema 2 has no one word size: each operand is priced at its own element type.
  EXPECT_FALSE(hw.word_bytes());
  // The scratchpad holds two roles and serves two arrays: 256 KiB / 2 / 2 = 64 KiB each.
  EXPECT_EQ(hw.sram_bytes(Operand::Ifmap), 65536u);
  EXPECT_EQ(hw.sram_bytes(Operand::Filter), 65536u);
  EXPECT_EQ(hw.working_bytes(Operand::Filter), 32768u);  // double-buffered by default
  ASSERT_NE(hw.operand_level(Operand::Filter), nullptr);
  EXPECT_EQ(hw.operand_level(Operand::Filter)->name, "spad");
  // The accumulator: 64 KiB / 1 role / 2 arrays, all of it working (not double-buffered).
  EXPECT_EQ(hw.sram_bytes(Operand::Ofmap), 32768u);
  EXPECT_EQ(hw.working_bytes(Operand::Ofmap), 32768u);
  ASSERT_NE(hw.operand_level(Operand::Ofmap), nullptr);
  EXPECT_EQ(hw.operand_level(Operand::Ofmap)->name, "acc");
  // int8: 16 x 8 PEs x 1 MAC x 4 arrays x 2 x 5e8 = 5.12e11; int4 packs two: 1.024e12.
  EXPECT_DOUBLE_EQ(hw.peak_ops_per_second(DataType::Int8), 5.12e11);
  EXPECT_DOUBLE_EQ(hw.peak_ops_per_second(DataType::Int4), 1.024e12);
  // 8 GB/s at 500 MHz = 16 B per cycle for the whole chip.
  EXPECT_DOUBLE_EQ(*hw.dram_bytes_per_cycle(), 16.0);
  EXPECT_EQ(hw.vector_unit(), nullptr);
}

TEST(HardwareModel, DescribesItsCompute) {
  Diagnostics diags;
  EXPECT_EQ(describe_compute(*parse(kNpu, diags)),
            "2 cores, each: 2x mxu 16x8 weight_stationary");
  EXPECT_EQ(describe_compute(*parse(kGpu, diags)),
            "4 cores, each: tc (tensor_core), simd (vector)");
}

TEST(HardwareModel, GlobalLoadLatencyInSecondsAtTheClock) {
  // Not stated: nullopt (not priced). 700 cycles at the 1 GHz clock: 700 ns; "354 ns" as is.
  EXPECT_FALSE(model(kGpu).global_load_latency_seconds());
  const std::string_view tc = "macs_per_cycle: {fp16: 512, int8: 1024}";
  const auto with = [&](std::string_view latency) {
    return model(replaced(kGpu, tc, fmt::format("{}\n    global_load_latency: {}", tc, latency)));
  };
  EXPECT_DOUBLE_EQ(with("700 cycles").global_load_latency_seconds().value(), 700e-9);
  EXPECT_DOUBLE_EQ(with("354 ns").global_load_latency_seconds().value(), 354e-9);
  EXPECT_FALSE(model(kNpu).global_load_latency_seconds());  // no tensor-core unit
  const std::vector<std::string> bad =
      errors_of(replaced(kGpu, tc, fmt::format("{}\n    global_load_latency: soon", tc)));
  EXPECT_EQ(bad, std::vector<std::string>{"a.yaml:9:26: error: compute[0].global_load_latency: "
                                          "cannot read \"soon\" as a latency; expected a number "
                                          "and a unit such as \"100 ns\""});
}

TEST(ArchSchema2, ZeroBandwidthIsLocated) {
  EXPECT_EQ(errors_of(replaced(kGpu, "hbm3, capacity: 16 GiB, bandwidth: 1 TB/s}",
                               "hbm3, capacity: 16 GiB, bandwidth: 0 TB/s}")),
            std::vector<std::string>{
                "a.yaml:15:55: error: dram.bandwidth: must be above zero; write \"unlimited\" "
                "for no bandwidth limit"});
  EXPECT_EQ(errors_of(replaced(kGpu, "read_bandwidth: 64 B/cycle", "read_bandwidth: 0 B/cycle")),
            std::vector<std::string>{
                "a.yaml:13:53: error: memory[0].read_bandwidth: must be above zero; leave the "
                "key out when the bandwidth is not a limit"});
}

TEST(ArchSchema2, UnknownPrecisionSuggestsTheClosest) {
  EXPECT_EQ(errors_of(replaced(kGpu, "{fp16: 512,", "{fp17: 512,")),
            std::vector<std::string>{
                "a.yaml:8:28: error: compute[0].macs_per_cycle.fp17: unknown precision 'fp17' "
                "(did you mean 'fp16'?); expected one of: fp32, tf32, bf16, fp16, fp8_e4m3, "
                "fp8_e5m2, int8, int4, int32"});
}

TEST(ArchSchema2, ALevelHoldingNoRoleIsAnError) {
  EXPECT_EQ(errors_of(replaced(kNpu, "holds: [outputs]", "holds: []")),
            std::vector<std::string>{
                "a.yaml:13:42: error: memory[1].holds: holds no tensor role, so no op can use "
                "it; list at least one of: inputs, weights, outputs (or leave the key out for "
                "all three)"});
  EXPECT_EQ(errors_of(replaced(kNpu, "holds: [outputs]", "holds: [output]")),
            std::vector<std::string>{
                "a.yaml:13:43: error: memory[1].holds[0]: \"output\" is not valid (did you "
                "mean 'outputs'?); expected one of: inputs, weights, outputs"});
}

TEST(ArchSchema2, CachesWeightsIsABooleanOnALevelHoldingWeights) {
  Diagnostics diags;
  const auto spec = parse(replaced(kNpu, "holds: [inputs, weights]}",
                                   "holds: [inputs, weights], caches_weights: true}"),
                          diags);
  ASSERT_TRUE(spec) << diags.format_all();
  EXPECT_TRUE(spec->memory[0].caches_weights);
  EXPECT_FALSE(spec->memory[1].caches_weights);  // default
  EXPECT_EQ(errors_of(replaced(kNpu, "holds: [inputs, weights]}",
                               "holds: [inputs, weights], caches_weights: yes}")),
            std::vector<std::string>{"a.yaml:12:79: error: memory[0].caches_weights: \"yes\" is "
                                     "not a boolean; write true or false"});
  EXPECT_EQ(errors_of(replaced(kNpu, "double_buffered: false}",
                               "double_buffered: false, caches_weights: true}")),
            std::vector<std::string>{
                "a.yaml:13:93: error: memory[1].caches_weights: 'acc' holds outputs but not "
                "weights, so it cannot cache them; add weights to its holds, or leave "
                "caches_weights out"});
  EXPECT_EQ(errors_of(replaced(kGpu, "read_bandwidth: 64 B/cycle}",
                               "read_bandwidth: 64 B/cycle, caches_weights: true}")),
            std::vector<std::string>{
                "a.yaml:13:81: error: memory[0].caches_weights: the matrix unit 'tc' is tensor "
                "cores; coda plans cached weights against a systolic array's buffers only; "
                "leave caches_weights out"});
}

TEST(ArchSchema2, AccumulationAndWeightPreloadAreArrayKeys) {
  // Defaults: SCALE-Sim's order and exposed loads.
  const HardwareModel plain = model(kNpu);
  EXPECT_EQ(plain.accumulation(), Accumulation::ColumnFold);
  EXPECT_EQ(plain.weight_preload(), WeightPreload::Exposed);
  const HardwareModel striped = model(replaced(
      kNpu, "dataflow: weight_stationary}",
      "dataflow: weight_stationary, accumulation: stripes, weight_preload: overlapped}"));
  EXPECT_EQ(striped.accumulation(), Accumulation::Stripes);
  EXPECT_EQ(striped.weight_preload(), WeightPreload::Overlapped);
  EXPECT_EQ(to_string(Accumulation::Stripes), "stripes");
  EXPECT_EQ(to_string(WeightPreload::Overlapped), "overlapped");
  // An unknown value lists the valid ones.
  const auto bad = errors_of(replaced(kNpu, "dataflow: weight_stationary}",
                                      "dataflow: weight_stationary, accumulation: stripe}"));
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_NE(bad[0].find("a.yaml:9:75: error: compute[0].array.accumulation"), std::string::npos)
      << bad[0];
  EXPECT_NE(bad[0].find("stripes"), std::string::npos) << bad[0];
  // An output-stationary array has neither partial sums over row folds nor stationary weights.
  EXPECT_EQ(errors_of(replaced(kNpu, "dataflow: weight_stationary}",
                               "dataflow: output_stationary, weight_preload: overlapped}")),
            std::vector<std::string>{
                "a.yaml:9:77: error: compute[0].array.weight_preload: applies to weight- and "
                "input-stationary arrays only (an output-stationary array finishes its outputs in "
                "the PEs and holds no weights); leave it out, or use dataflow: "
                "weight_stationary"});
  // Stripes are sized to the accumulator: without a core-level level holding outputs, an error.
  EXPECT_EQ(errors_of(replaced(replaced(kNpu, "dataflow: weight_stationary}",
                                        "dataflow: weight_stationary, accumulation: stripes}"),
                               "holds: [outputs]", "holds: [inputs]")),
            std::vector<std::string>{
                "a.yaml:9:75: error: compute[0].array.accumulation: stripes are sized to the "
                "accumulator level, and no core-level memory holds outputs; add a memory level "
                "with scope: core and holds: [outputs], or leave accumulation out"});
}

TEST(ArchSchema2, KindSpecificKeysAndMissingRates) {
  // A systolic unit needs its array and its per-PE rates; keys of another kind are unknown.
  const auto errors = errors_of(replaced(
      kNpu, "    array: {rows: 16, cols: 8, dataflow: weight_stationary}\n    macs_per_pe",
      "    macs_per_cycle"));
  ASSERT_EQ(errors.size(), 3u);
  EXPECT_EQ(errors[0],
            "a.yaml:6:5: error: compute[0]: missing required key 'array'; add array: {rows: 128, "
            "cols: 128, dataflow: weight_stationary}");
  EXPECT_EQ(errors[1],
            "a.yaml:6:5: error: compute[0]: missing required key 'macs_per_pe'; give a rate per "
            "precision, e.g. macs_per_pe: {fp16: 1024, int8: 2048}");
  EXPECT_EQ(errors[2],
            "a.yaml:9:5: error: compute[0].macs_per_cycle: unknown key (did you mean "
            "'macs_per_pe'?)");
}

TEST(ArchSchema2, DuplicateNamesAndDramLevelName) {
  const auto errors = errors_of(replaced(kGpu, "{name: l2,", "{name: smem,"));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0],
            "a.yaml:14:12: error: memory[1].name: a second memory level named 'smem'; names must "
            "be unique");
  EXPECT_EQ(errors_of(replaced(kGpu, "{name: l2,", "{name: dram,")),
            std::vector<std::string>{
                "a.yaml:14:12: error: memory[1].name: 'dram' is the name of the DRAM level; "
                "describe DRAM under the dram: key"});
}

TEST(ArchSchema2, EnergyLevelsMustExist) {
  const std::string text = std::string(kGpu) + "energy: {technology_nm: 7, per_byte: {l3: 5 pJ}}\n";
  EXPECT_EQ(errors_of(text), std::vector<std::string>{
                                 "a.yaml:17:43: error: energy.per_byte.l3: no memory level "
                                 "'l3' (did you mean 'l2'?); the levels are: smem, l2, dram"});
}

TEST(ArchSchema2, LinksNeedBytesPerSecond) {
  EXPECT_EQ(errors_of(replaced(kGpu, "bandwidth: 100 GB/s", "bandwidth: 100 B/cycle")),
            std::vector<std::string>{
                "a.yaml:16:53: error: interconnect.bandwidth: chip links run on their own clock: "
                "give bytes per second; e.g. \"450 GB/s\""});
}

}  // namespace
}  // namespace coda::arch
