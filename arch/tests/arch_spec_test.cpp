#include "arch/arch_spec.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "arch/hardware_model.h"

namespace coda::arch {
namespace {

constexpr std::string_view kValid = R"(schema_version: 1
name: t
clock: 1 GHz
array: {rows: 16, cols: 8, dataflow: weight_stationary}
sram: {ifmap: 4 KiB, filter: 2 KiB, ofmap: 1 KiB}
dram: {bandwidth: 32 GB/s}
)";

std::optional<ArchSpec> parse(std::string_view text, Diagnostics& diags) {
  const auto doc = YamlDocument::parse(text, "a.yaml", diags);
  return doc ? read_arch_spec(doc->root(), diags) : std::nullopt;
}

std::vector<std::string> errors_of(std::string_view text) {
  Diagnostics diags;
  EXPECT_FALSE(parse(text, diags));
  std::vector<std::string> out;
  for (const auto& d : diags.all()) out.push_back(format(d));
  return out;
}

TEST(ArchSpec, ReadsAValidSpecAndDerivesTheModel) {
  Diagnostics diags;
  const auto spec = parse(kValid, diags);
  ASSERT_TRUE(spec) << diags.format_all();
  // The shorthand reads as one core with one systolic unit and three single-role memories.
  ASSERT_EQ(spec->compute.size(), 1u);
  ASSERT_TRUE(spec->compute[0].array);
  EXPECT_EQ(spec->compute[0].array->rows, 16u);
  EXPECT_EQ(spec->compute[0].array->cols, 8u);
  EXPECT_EQ(spec->compute[0].array->dataflow, Dataflow::WeightStationary);
  EXPECT_EQ(spec->word_size, Bytes{1});  // default
  ASSERT_EQ(spec->memory.size(), 3u);
  EXPECT_EQ(spec->memory[1].holds, bits(Holds::Weights));
  const HardwareModel hw(*spec);
  EXPECT_EQ(hw.rows(), 16u);
  EXPECT_EQ(hw.dataflow(), Dataflow::WeightStationary);
  EXPECT_EQ(hw.processing_elements(), 128u);
  EXPECT_EQ(hw.word_bytes(), 1u);  // schema 1 counts words; 1 B by default
  EXPECT_EQ(hw.sram_bytes(Operand::Ifmap), 4096u);
  EXPECT_EQ(hw.working_bytes(Operand::Ifmap), 2048u);  // double-buffered by default: half
  // 32 GB/s at 1 GHz = 32 bytes per cycle
  ASSERT_TRUE(hw.dram_bytes_per_cycle());
  EXPECT_DOUBLE_EQ(*hw.dram_bytes_per_cycle(), 32.0);
}

TEST(ArchSpec, UnlimitedBandwidthAndWordSize) {
  Diagnostics diags;
  auto text = std::string(kValid);
  text.replace(text.find("32 GB/s"), 7, "unlimited");
  text += "word_size: 2 B\n";
  const auto spec = parse(text, diags);
  ASSERT_TRUE(spec) << diags.format_all();
  const HardwareModel hw(*spec);
  EXPECT_FALSE(hw.dram_bytes_per_cycle());
  EXPECT_EQ(hw.word_bytes(), 2u);
  EXPECT_EQ(hw.sram_bytes(Operand::Filter), 2048u);     // 2 KiB: 1024 words of 2 bytes
  EXPECT_EQ(hw.working_bytes(Operand::Filter), 1024u);  // half: 512 whole words
}

TEST(ArchSpec, UnknownKeyWithDidYouMean) {
  auto text = std::string(kValid);
  text.replace(text.find("ofmap: 1 KiB"), 12, "ofmap: 1 KiB, filtre: 1 KiB");
  EXPECT_EQ(errors_of(text), std::vector<std::string>{
                                 "a.yaml:5:51: error: sram.filtre: unknown key (did you mean "
                                 "'filter'?)"});
}

// Legal but absurd values (issue 23: a 65536x65536 array, a 1 TiB SRAM, a 1000 THz clock passed
// without a word): each a warning at its key, and the spec is still read and priced as written.
// A real part (kValid, and every bundled preset: PresetsTest) draws none.
TEST(ArchSpec, ImplausibleValuesAreWarnedAboutAndStillRead) {
  Diagnostics clean;
  ASSERT_TRUE(parse(kValid, clean));
  EXPECT_EQ(clean.all().size(), 0u);
  const std::string absurd =
      "schema_version: 2\nname: absurd\nclock: 1000 THz\ncompute:\n"
      "  - {name: mxu, kind: systolic, array: {rows: 65536, cols: 65536, dataflow: "
      "weight_stationary}, macs_per_pe: {int8: 1}}\nmemory:\n"
      "  - {name: spad, capacity: 1 TiB, holds: [inputs, weights, outputs]}\n"
      "dram: {bandwidth: 1000 TB/s}\n";
  Diagnostics diags;
  const auto spec = parse(absurd, diags);
  ASSERT_TRUE(spec) << diags.format_all();
  EXPECT_EQ(diags.error_count(), 0u);
  std::vector<std::string> found;
  for (const auto& d : diags.all()) found.push_back(format(d));
  const std::string hint =
      "; legal, and priced as written; check the unit (docs/arch.md, \"Plausibility\")";
  EXPECT_EQ(found, (std::vector<std::string>{
                       "a.yaml:3:8: warning: clock: 1000000 GHz is above any real device's clock "
                       "(10 GHz)" + hint,
                       "a.yaml:5:3: warning: compute: unit 'mxu': a 65536x65536 array has "
                       "4294967296 PEs, more than any real array (2^20)" + hint,
                       "a.yaml:7:3: warning: memory: level 'spad': 1048576 MiB per core is more "
                       "on-chip memory than any real core has (1 GiB)" + hint,
                       "a.yaml:8:7: warning: dram: 1000 TB/s of DRAM bandwidth is above any real "
                       "memory system's (100 TB/s)" + hint}));
}

TEST(ArchSpec, BadUnitIsLocated) {
  auto text = std::string(kValid);
  text.replace(text.find("4 KiB"), 5, "4 KB/s");
  EXPECT_EQ(errors_of(text),
            std::vector<std::string>{
                "a.yaml:5:15: error: sram.ifmap: cannot read \"4 KB/s\" as a size; expected a "
                "number and a unit such as \"256 KiB\" or \"1.5 MB\"; \"K\" is ambiguous: write "
                "kB (1000 bytes) or KiB (1024 bytes)"});
}

TEST(ArchSpec, MissingFieldsAreAllReported) {
  const auto errors = errors_of("schema_version: 1\nname: t\narray: {rows: 4}\n");
  ASSERT_EQ(errors.size(), 5u);
  EXPECT_EQ(errors[0], "a.yaml:1:1: error: missing required key 'clock'");
  EXPECT_EQ(errors[1], "a.yaml:3:8: error: array: missing required key 'cols'");
  EXPECT_EQ(errors[2], "a.yaml:3:8: error: array: missing required key 'dataflow'");
  EXPECT_EQ(errors[3],
            "a.yaml:1:1: error: missing required key 'sram'; add sram: {ifmap: 64 KiB, filter: "
            "64 KiB, ofmap: 64 KiB}");
  EXPECT_EQ(errors[4],
            "a.yaml:1:1: error: missing required key 'dram'; add dram: {bandwidth: 16 B/cycle} "
            "or dram: {bandwidth: unlimited}");
}

TEST(ArchSpec, ZeroSizesAndDimsAreErrors) {
  auto text = std::string(kValid);
  text.replace(text.find("rows: 16"), 8, "rows: 0");
  text.replace(text.find("2 KiB"), 5, "0 B");
  text.replace(text.find("32 GB/s"), 7, "0 B/cycle");
  const auto errors = errors_of(text);
  ASSERT_EQ(errors.size(), 3u);
  EXPECT_EQ(errors[0],
            "a.yaml:4:15: error: array.rows: must be at least 1; an array has at least one row "
            "and one column, e.g. 32");
  EXPECT_EQ(errors[1],
            "a.yaml:5:30: error: sram.filter: must be non-zero; use a size such as \"64 KiB\"");
  EXPECT_EQ(errors[2],
            "a.yaml:6:19: error: dram.bandwidth: must be above zero; write \"unlimited\" for no "
            "bandwidth limit");
}

TEST(ArchSpec, BadDataflowSuggestsTheClosest) {
  auto text = std::string(kValid);
  text.replace(text.find("weight_stationary"), 17, "weight_stationery");
  EXPECT_EQ(errors_of(text),
            std::vector<std::string>{
                "a.yaml:4:38: error: array.dataflow: \"weight_stationery\" is not valid (did you "
                "mean 'weight_stationary'?); expected one of: output_stationary, "
                "weight_stationary, input_stationary"});
}

TEST(ArchSpec, DramModelDefaultsToCodaAndReadsScaleSim) {
  Diagnostics diags;
  const auto coda = parse(kValid, diags);
  ASSERT_TRUE(coda) << diags.format_all();
  EXPECT_EQ(coda->dram.model, DramModel::Coda);
  auto text = std::string(kValid);
  text.replace(text.find("{bandwidth: 32 GB/s}"), 20, "{model: scalesim, bandwidth: 10 B/cycle}");
  const auto scalesim = parse(text, diags);
  ASSERT_TRUE(scalesim) << diags.format_all();
  EXPECT_EQ(scalesim->dram.model, DramModel::ScaleSim);
}

TEST(ArchSpec, ScaleSimDramModelNeedsWhatSCALESimHas) {
  const auto with_dram = [](std::string_view dram, std::string_view extra = "") {
    auto text = std::string(kValid);
    text.replace(text.find("{bandwidth: 32 GB/s}"), 20, dram);
    return text + std::string(extra);
  };
  EXPECT_EQ(errors_of(with_dram("{model: scalesim, bandwidth: unlimited}")),
            std::vector<std::string>{
                "a.yaml:6:36: error: dram.bandwidth: model: scalesim needs a finite bandwidth "
                "(SCALE-Sim's Bandwidth, words per cycle); give e.g. \"10 B/cycle\"; for "
                "SCALE-Sim's CALC mode write bandwidth: unlimited without model: scalesim"});
  // 32 GB/s at 1 GHz is 32 words of 1 B a cycle, a whole number; 3 B/cycle of 2 B words is not.
  EXPECT_EQ(errors_of(with_dram("{model: scalesim, bandwidth: 3 B/cycle}", "word_size: 2 B\n")),
            std::vector<std::string>{
                "a.yaml:6:36: error: dram.bandwidth: 1.5 words per cycle is not a whole number "
                "of words, which SCALE-Sim's ports move; give a multiple of the 2-byte word per "
                "cycle, e.g. \"4 B/cycle\""});
  auto single = with_dram("{model: scalesim, bandwidth: 10 B/cycle}");
  single.replace(single.find("ofmap: 1 KiB}"), 13, "ofmap: 1 KiB, double_buffered: false}");
  EXPECT_EQ(errors_of(single),
            std::vector<std::string>{
                "a.yaml:6:15: error: dram.model: SCALE-Sim's USER mode needs double-buffered "
                "SRAMs; set sram.double_buffered: true, or use model: coda"});
  // SCALE-Sim has neither stripes nor shadow weights: its demand rows would not be the array's.
  auto striped = with_dram("{model: scalesim, bandwidth: 10 B/cycle}");
  striped.replace(striped.find("dataflow: weight_stationary}"), 28,
                  "dataflow: weight_stationary, weight_preload: overlapped}");
  EXPECT_EQ(errors_of(striped),
            std::vector<std::string>{
                "a.yaml:6:15: error: dram.model: SCALE-Sim's USER mode times an array that "
                "accumulates whole column folds and exposes its weight preload; leave "
                "array.accumulation and array.weight_preload at their defaults (column_fold, "
                "exposed), or use model: coda"});
  EXPECT_EQ(errors_of(with_dram("{model: scalesin, bandwidth: 10 B/cycle}")),
            std::vector<std::string>{
                "a.yaml:6:15: error: dram.model: \"scalesin\" is not valid (did you mean "
                "'scalesim'?); expected one of: coda, scalesim"});
}

TEST(ArchSpec, ScaleSimDramModelIsOnlyForSchemaOneArrays) {
  constexpr std::string_view kV2 = R"(schema_version: 2
name: t
clock: 1 GHz
compute:
  - name: mxu
    kind: systolic
    array: {rows: 8, cols: 8, dataflow: output_stationary}
    macs_per_cycle: {int8: 64}
memory:
  - {name: sram, capacity: 64 KiB, read_bandwidth: 64 B/cycle}
dram: {model: scalesim, bandwidth: 10 B/cycle}
)";
  // Other keys of this small arch may draw errors of their own; the model's is located.
  const auto errors = errors_of(kV2);
  const std::string expected =
      "a.yaml:11:15: error: dram.model: model: scalesim reproduces SCALE-Sim's three-SRAM "
      "systolic array, which this schema_version 2 arch does not describe; describe the "
      "array in the schema_version 1 form (array, sram, dram; docs/arch.md), or leave "
      "model out for coda's own DRAM model";
  EXPECT_NE(std::find(errors.begin(), errors.end(), expected), errors.end())
      << ::testing::PrintToString(errors);
}

TEST(ArchSpec, SchemaVersionIsChecked) {
  auto text = std::string(kValid);
  text.replace(text.find("schema_version: 1"), 17, "schema_version: 3");
  EXPECT_EQ(errors_of(text),
            std::vector<std::string>{
                "a.yaml:1:17: error: schema_version: unsupported schema_version 3; this coda "
                "reads schema_version 2 (the general form) and 1 (the systolic shorthand)"});
}

TEST(ArchPresets, EveryBundledPresetIsValid) {
  std::size_t count = 0;
  for (const auto& entry : std::filesystem::directory_iterator("configs/arch")) {
    if (entry.path().extension() != ".yaml") continue;
    Diagnostics diags;
    EXPECT_TRUE(load_arch(entry.path(), diags)) << diags.format_all();
    EXPECT_EQ(diags.all().size(), 0u) << entry.path();
    ++count;
  }
  EXPECT_GE(count, 5u);
}

TEST(ArchPresets, ExtendsInheritsFromThePreset) {
  Diagnostics diags;
  const auto ws = load_arch("configs/arch/scalesim_32x32_ws.yaml", diags);
  const auto os = load_arch("configs/arch/scalesim_32x32_os.yaml", diags);
  ASSERT_TRUE(ws && os) << diags.format_all();
  EXPECT_EQ(ws->spec.compute[0].array->dataflow, Dataflow::WeightStationary);
  EXPECT_EQ(ws->spec.memory, os->spec.memory);
  EXPECT_EQ(ws->spec.compute[0].array->rows, 32u);
  EXPECT_NE(ws->content_hash, os->content_hash);
  // TPU v1: 34 GB/s at 700 MHz = 48.57 bytes per cycle.
  const auto tpu = load_arch("configs/arch/tpu_v1_256x256_ws.yaml", diags);
  ASSERT_TRUE(tpu);
  EXPECT_DOUBLE_EQ(*HardwareModel(tpu->spec).dram_bytes_per_cycle(), 34e9 / 700e6);
}

// ---- calibration: optional knobs of the GPU closed forms (docs/arch.md, "Calibration") ------

constexpr std::string_view kGpu = R"(schema_version: 2
name: g
clock: 1 GHz
cores: 2
compute:
  - {name: tc, kind: tensor_core, macs_per_cycle: {fp16: 256}}
  - {name: v, kind: vector, ops_per_cycle: {fp32: 32}}
dram: {bandwidth: 100 GB/s}
)";

TEST(ArchCalibration, AbsentSectionKeepsEveryDefault) {
  Diagnostics diags;
  const auto spec = parse(kGpu, diags);
  ASSERT_TRUE(spec) << diags.format_all();
  EXPECT_EQ(spec->calibration, CalibrationSpec{});
}

TEST(ArchCalibration, ReadsKnobsWithUnits) {
  Diagnostics diags;
  const auto spec = parse(std::string(kGpu) + R"(calibration:
  launch_overhead: 2.5 us
  compute_fraction: {fp16: 0.8, fp32: 0.5}
  dram_fraction: 0.9
  source: fitted on a fixture
)", diags);
  ASSERT_TRUE(spec) << diags.format_all();
  ASSERT_TRUE(spec->calibration.launch_overhead);
  EXPECT_DOUBLE_EQ(spec->calibration.launch_overhead->value, 2.5e-6);
  EXPECT_EQ(spec->calibration.compute_fraction,
            (std::map<DataType, double>{{DataType::Fp16, 0.8}, {DataType::Fp32, 0.5}}));
  EXPECT_EQ(spec->calibration.dram_fraction, 0.9);
  EXPECT_EQ(spec->calibration.source, "fitted on a fixture");
}

TEST(ArchCalibration, BadKnobsAreLocatedWithWhatWouldBeValid) {
  // Lines: the calibration section starts on line 9 of the document.
  const auto errors = errors_of(std::string(kGpu) + R"(calibration:
  launch_overhead: 4 s
  compute_fraction: {fp16: 1.2, int8: 0.5, fp61: 0.5}
  dram_fraction: 0
  dram_fractoin: 0.5
)");
  ASSERT_EQ(errors.size(), 6u) << ::testing::PrintToString(errors);
  EXPECT_EQ(errors[0], "a.yaml:10:20: error: calibration.launch_overhead: 4 s is not a kernel "
                       "launch overhead; give the time from launch to kernel start, between 0 "
                       "and 1 ms, e.g. 4 us");
  EXPECT_EQ(errors[1], "a.yaml:11:28: error: calibration.compute_fraction.fp16: 1.2 is not a "
                       "fraction of the peak rate in (0, 1]; e.g. 0.85 for 85% of the peak; 1 is "
                       "the default (the peak itself)");
  EXPECT_EQ(errors[2], "a.yaml:11:39: error: calibration.compute_fraction.int8: no compute unit "
                       "of this arch runs int8; the units run: fp32, fp16");
  EXPECT_EQ(errors[3].substr(0, 72),
            "a.yaml:11:50: error: calibration.compute_fraction.fp61: unknown precisio");
  EXPECT_EQ(errors[4], "a.yaml:12:18: error: calibration.dram_fraction: 0 is not a fraction of "
                       "the DRAM bandwidth in (0, 1]; e.g. 0.85 for 85% of the peak; 1 is the "
                       "default (the peak itself)");
  EXPECT_EQ(errors[5].substr(0, 93),
            "a.yaml:13:3: error: calibration.dram_fractoin: unknown key (did you mean "
            "'dram_fraction'?)");
}

TEST(ArchSpec, DramBackgroundIsReadAndNeedsTheDramItScales) {
  Diagnostics diags;
  const auto spec = parse(std::string(kGpu) + "energy: {dram_standby_per_bandwidth: 5.92 pJ}\n",
                          diags);
  ASSERT_TRUE(spec) << diags.format_all();
  ASSERT_TRUE(spec->energy.dram_standby_per_bandwidth);
  EXPECT_NEAR(spec->energy.dram_standby_per_bandwidth->value, 5.92e-12, 1e-24);
  // kGpu states no dram.capacity, so a per-GB figure has nothing to scale; line 9 is energy.
  EXPECT_EQ(errors_of(std::string(kGpu) + "energy: {dram_idle_per_gb: 8 mW}\n"),
            std::vector<std::string>{
                "a.yaml:9:28: error: energy.dram_idle_per_gb: needs dram.capacity: the idle "
                "power is this figure x the capacity in GB; state dram.capacity (e.g. \"8 GB\") "
                "or drop this key"});
  EXPECT_EQ(errors_of(std::string(kGpu) + "energy: {dram_idle_per_gb: -1 mW}\n").size(), 1u);
}

TEST(ArchCalibration, ReadsTheVendorCompilersFusion) {
  Diagnostics diags;
  const auto spec = parse(std::string(kGpu) + "calibration: {fusion: all}\n", diags);
  ASSERT_TRUE(spec) << diags.format_all();
  EXPECT_EQ(spec->calibration.fusion, FusionMode::All);
  // It is written back the way it was read (coda validate --fit writes calibration sections).
  EXPECT_EQ(calibration_yaml(spec->calibration, 2), "calibration:\n  fusion: all\n");
  const auto errors = errors_of(std::string(kGpu) + "calibration: {fusion: everything}\n");
  ASSERT_EQ(errors.size(), 1u) << ::testing::PrintToString(errors);
  EXPECT_EQ(errors[0],
            "a.yaml:9:23: error: calibration.fusion: \"everything\" is not valid; "
            "expected one of: none, eager, epilogue, all");
}

TEST(ArchCalibration, ReadsTheNormKernels) {
  Diagnostics diags;
  const auto spec = parse(std::string(kGpu) + "calibration: {norm_kernel: torch}\n", diags);
  ASSERT_TRUE(spec) << diags.format_all();
  EXPECT_EQ(HardwareModel(*spec).norm_impl(), NormImpl::Torch);
  EXPECT_EQ(calibration_yaml(spec->calibration, 2), "calibration:\n  norm_kernel: torch\n");
  const auto plain = parse(kGpu, diags);
  ASSERT_TRUE(plain) << diags.format_all();
  EXPECT_EQ(HardwareModel(*plain).norm_impl(), NormImpl::Fused);  // absent: fused
  const auto errors = errors_of(std::string(kGpu) + "calibration: {norm_kernel: apex}\n");
  ASSERT_EQ(errors.size(), 1u) << ::testing::PrintToString(errors);
  EXPECT_EQ(errors[0], "a.yaml:9:28: error: calibration.norm_kernel: \"apex\" is not valid; "
                       "expected one of: fused, torch");
}

TEST(ArchCalibration, ReadsTheDecodeAttentionClassAndTheLlmStepCost) {
  Diagnostics diags;
  const auto spec = parse(std::string(kGpu) + R"(calibration:
  decode_attention: per_head
  decode_kv_reread: 0
  llm_step_fixed_cost: 150 us
)", diags);
  ASSERT_TRUE(spec) << diags.format_all();
  EXPECT_EQ(spec->calibration.decode_attention, DecodeAttention::PerHead);
  EXPECT_EQ(spec->calibration.decode_kv_reread, 0.0);  // 0 is valid: every re-read hits L2
  const HardwareModel hw(*spec);
  EXPECT_EQ(hw.decode_attention(), DecodeAttention::PerHead);
  EXPECT_EQ(parse_decode_attention("fa2_forward"), DecodeAttention::Fa2Forward);
  EXPECT_EQ(to_string(DecodeAttention::Fa2Forward), "fa2_forward");
  EXPECT_EQ(parse_decode_attention("mmha"), std::nullopt);
  EXPECT_DOUBLE_EQ(hw.llm_step_fixed_seconds(), 150e-6);
  EXPECT_EQ(calibration_yaml(spec->calibration, 2),
            "calibration:\n  decode_attention: per_head\n  decode_kv_reread: 0\n"
            "  llm_step_fixed_cost: 150 us\n");
  // Absent: grouped, every re-read from DRAM (per_head's own loads), no step cost.
  const auto plain = parse(kGpu, diags);
  ASSERT_TRUE(plain) << diags.format_all();
  const HardwareModel defaults(*plain);
  EXPECT_EQ(defaults.decode_attention(), DecodeAttention::Grouped);
  EXPECT_EQ(defaults.decode_kv_reread(), 1.0);
  EXPECT_EQ(defaults.llm_step_fixed_seconds(), 0.0);
  const auto errors = errors_of(std::string(kGpu) + R"(calibration:
  decode_attention: mmha
  decode_kv_reread: 1.5
  llm_step_fixed_cost: 2 ms
)");
  ASSERT_EQ(errors.size(), 3u) << ::testing::PrintToString(errors);
  EXPECT_EQ(errors[0],
            "a.yaml:10:21: error: calibration.decode_attention: \"mmha\" is not "
            "valid; expected one of: grouped, per_head, fa2_forward");
  EXPECT_EQ(errors[1], "a.yaml:11:21: error: calibration.decode_kv_reread: 1.5 is not a share "
                       "of the K and V re-reads; give 0 (every re-read hits L2) to 1 (every "
                       "re-read reaches DRAM)");
  EXPECT_EQ(errors[2], "a.yaml:12:24: error: calibration.llm_step_fixed_cost: 2 ms is not an LLM "
                       "step's fixed cost; give the runtime's host work per generation step, "
                       "between 0 and 1 ms, e.g. 4 us");
}

// A Hopper-like GPU: tensor cores with both instruction paths, and chip links.
constexpr std::string_view kHopperLike = R"(schema_version: 2
name: h
clock: 2 GHz
cores: 4
compute:
  - {name: tc, kind: tensor_core, macs_per_cycle: {fp16: 1000, fp8_e4m3: 2000}, instruction_paths: [mma_sync, wgmma]}
  - {name: v, kind: vector, ops_per_cycle: {fp32: 100, fp16: 200}}
dram: {bandwidth: 1 TB/s}
interconnect: {chips: 8, topology: switch, bandwidth: 100 GB/s, latency: 2 us}
)";

TEST(ArchCalibration, ReadsTheKernelRateParameters) {
  Diagnostics diags;
  const auto spec = parse(std::string(kHopperLike) + R"(calibration:
  sustained_clock: 1.5 GHz
  training_clock: 1.2 GHz
  tensor_issue:
    wgmma: {fp16: 0.8, fp8_e4m3: 0.7}
    mma_sync: {fp16: 0.5}
  gemm_path: mma_sync
  attention: fa2
  attention_backward: 0.6
  fixed_cost: {gemm: 5 us, vector: 2 us, collective: 20 us}
  link_fraction: 0.75
)",
                          diags);
  ASSERT_TRUE(spec) << diags.format_all();
  const CalibrationSpec& c = spec->calibration;
  EXPECT_EQ(c.sustained_clock->value, 1.5e9);
  EXPECT_EQ(c.training_clock->value, 1.2e9);
  // A training step's view runs the tensor cores at the training clock, other runs at the
  // sustained one.
  EXPECT_EQ(training_step_view(*spec).calibration.sustained_clock->value, 1.2e9);
  EXPECT_EQ(c.tensor_issue.at(TensorPath::Wgmma).at(DataType::Fp8E4M3), 0.7);
  EXPECT_EQ(c.tensor_issue.at(TensorPath::MmaSync).at(DataType::Fp16), 0.5);
  EXPECT_EQ(c.gemm_path, TensorPath::MmaSync);
  EXPECT_EQ(c.attention, AttentionImpl::Fa2);
  EXPECT_EQ(c.attention_backward, 0.6);
  EXPECT_DOUBLE_EQ(c.fixed_cost.at(KernelKind::Collective).value, 20e-6);
  EXPECT_EQ(c.link_fraction, 0.75);

  // The achievable rates (HardwareModel), by hand:
  const HardwareModel hw(*spec);
  // fp16 through wgmma: 1000 MACs x 0.8 issue x 1.5 / 2 GHz sustained = 600 per cycle of `clock`.
  EXPECT_DOUBLE_EQ(hw.achievable_macs_per_cycle(DataType::Fp16, TensorPath::Wgmma), 600.0);
  // through mma_sync, the calibration's GEMM path: 1000 x 0.5 x 0.75 = 375.
  EXPECT_DOUBLE_EQ(hw.achievable_macs_per_cycle(DataType::Fp16), 375.0);
  // fp8 through mma_sync lists no issue efficiency: 2000 x 1 x 0.75 = 1500.
  EXPECT_DOUBLE_EQ(hw.achievable_macs_per_cycle(DataType::Fp8E4M3, TensorPath::MmaSync), 1500.0);
  // The vector unit does not see the tensor cores' clock or issue: 200 fp16 ops per cycle.
  EXPECT_DOUBLE_EQ(hw.achievable_vector_ops_per_cycle(DataType::Fp16), 200.0);
  // Fixed costs: stated per kind; the kinds without one take the default of an arch with tensor
  // cores (no launch_overhead stated): 4 us.
  EXPECT_DOUBLE_EQ(hw.kernel_fixed_seconds(KernelKind::Gemm), 5e-6);
  EXPECT_DOUBLE_EQ(hw.kernel_fixed_seconds(KernelKind::Copy), 4e-6);
  EXPECT_DOUBLE_EQ(hw.achievable_link_bytes_per_second(), 75e9);
  EXPECT_DOUBLE_EQ(hw.attention_backward_share(), 0.6);
  EXPECT_EQ(hw.attention_impl(), AttentionImpl::Fa2);
}

TEST(ArchCalibration, DefaultsFollowTheInstructionPaths) {
  Diagnostics diags;
  const auto hopper = parse(kHopperLike, diags);
  const auto ampere = parse(kGpu, diags);
  ASSERT_TRUE(hopper && ampere) << diags.format_all();
  // With wgmma: library GEMMs use it and attention is FlashAttention-3's kind; without: mma.sync
  // and FlashAttention-2's.
  EXPECT_EQ(HardwareModel(*hopper).gemm_path(), TensorPath::Wgmma);
  EXPECT_EQ(HardwareModel(*hopper).attention_impl(), AttentionImpl::Fa3);
  EXPECT_EQ(HardwareModel(*ampere).gemm_path(), TensorPath::MmaSync);
  EXPECT_EQ(HardwareModel(*ampere).attention_impl(), AttentionImpl::Fa2);
  // No calibration: every rate is the peak, and DRAM its stated bandwidth.
  const HardwareModel hw(*hopper);
  EXPECT_DOUBLE_EQ(hw.achievable_macs_per_cycle(DataType::Fp16), 1000.0);
  EXPECT_DOUBLE_EQ(*hw.achievable_dram_bytes_per_second(), 1e12);
  // launch_overhead alone sets every kind's fixed cost.
  const auto launch = parse(std::string(kGpu) + "calibration: {launch_overhead: 3 us}\n", diags);
  ASSERT_TRUE(launch) << diags.format_all();
  EXPECT_DOUBLE_EQ(HardwareModel(*launch).kernel_fixed_seconds(KernelKind::Vector), 3e-6);
}

// The training clock is checked as the sustained clock is: above zero, at most `clock` (kGpu: 1
// GHz).
TEST(ArchCalibration, TheTrainingClockIsAClockUnderLoad) {
  const auto errors = errors_of(std::string(kGpu) + "calibration:\n  training_clock: 2 GHz\n");
  ASSERT_EQ(errors.size(), 1u) << ::testing::PrintToString(errors);
  EXPECT_EQ(errors[0],
            "a.yaml:10:19: error: calibration.training_clock: 2 GHz is not a sustained "
            "clock of a 1 GHz part; give the clock under load, above zero and at most "
            "`clock`");
}

TEST(ArchCalibration, KernelRateParametersAreCheckedAgainstTheHardware) {
  // kGpu's tensor cores have only mma_sync (the default instruction_paths) and no interconnect.
  const auto errors = errors_of(std::string(kGpu) + R"(calibration:
  tensor_issue: {wgmma: {fp16: 0.9}, mma_sync: {int8: 0.5}, wgmm: {fp16: 1}}
  attention: fa3
  sustained_clock: 3 GHz
  fixed_cost: {gem: 1 us}
  link_fraction: 0.5
)");
  // In the order the section is read: fixed costs, issue efficiencies, the clock, the choices,
  // the fractions.
  ASSERT_EQ(errors.size(), 7u) << ::testing::PrintToString(errors);
  EXPECT_EQ(errors[0], "a.yaml:13:21: error: calibration.fixed_cost.gem: unknown kernel kind 'gem' "
                       "(did you mean 'gemm'?); expected one of: gemm, attention, vector, copy, "
                       "collective");
  EXPECT_EQ(errors[1], "a.yaml:10:25: error: calibration.tensor_issue.wgmma: this arch's tensor "
                       "cores have no wgmma path; their instruction_paths: mma_sync");
  EXPECT_EQ(errors[2], "a.yaml:10:55: error: calibration.tensor_issue.mma_sync.int8: no "
                       "tensor-core unit of this arch runs int8; the tensor cores run: fp16");
  EXPECT_EQ(errors[3], "a.yaml:10:67: error: calibration.tensor_issue.wgmm: unknown instruction "
                       "path 'wgmm' (did you mean 'wgmma'?); expected one of: mma_sync, wgmma");
  EXPECT_EQ(errors[4], "a.yaml:12:20: error: calibration.sustained_clock: 3 GHz is not a "
                       "sustained clock of a 1 GHz part; give the clock under load, above zero "
                       "and at most `clock`");
  EXPECT_EQ(errors[5], "a.yaml:11:14: error: calibration.attention: this arch's tensor cores "
                       "have no wgmma path; their instruction_paths: mma_sync");
  EXPECT_EQ(errors[6], "a.yaml:14:18: error: calibration.link_fraction: this arch has no "
                       "interconnect; add interconnect: or leave link_fraction out");
}

// The triton attention class needs its share of fa2's matrix rate: there is no default.
TEST(ArchCalibration, TritonAttentionStatesItsShare) {
  Diagnostics diags;
  const auto spec =
      parse(std::string(kGpu) + "calibration: {attention: triton, attention_triton: 0.5}\n", diags);
  ASSERT_TRUE(spec) << diags.format_all();
  const HardwareModel hw(*spec);
  EXPECT_EQ(hw.attention_impl(), AttentionImpl::Triton);
  EXPECT_EQ(hw.attention_triton_share(), 0.5);
  EXPECT_NE(calibration_yaml(spec->calibration, 2).find("  attention_triton: 0.5\n"),
            std::string::npos);
  const auto missing = errors_of(std::string(kGpu) + "calibration: {attention: triton}\n");
  ASSERT_EQ(missing.size(), 1u) << ::testing::PrintToString(missing);
  EXPECT_EQ(missing[0], "a.yaml:9:26: error: calibration.attention: attention: triton needs "
                        "attention_triton (its share of fa2's matrix rate); state "
                        "calibration.attention_triton, or choose fa2 or fa3");
}

// unaligned_gemm is a share of the datasheet tensor-core rate: 2048 MACs/cycle x 0.125 = 256.
TEST(ArchCalibration, UnalignedGemmIsAShareOfTheDatasheetRate) {
  Diagnostics diags;
  const auto spec = parse(std::string(kGpu) + "calibration: {unaligned_gemm: 0.125}\n", diags);
  ASSERT_TRUE(spec) << diags.format_all();
  const HardwareModel hw(*spec);
  const auto* unit = hw.matrix_unit();
  ASSERT_NE(unit, nullptr);
  const double datasheet = unit->rates.at(DataType::Fp16) * unit->count;
  EXPECT_EQ(hw.unaligned_macs_per_cycle(DataType::Fp16), datasheet * 0.125);
  EXPECT_NE(calibration_yaml(spec->calibration, 2).find("  unaligned_gemm: 0.125\n"),
            std::string::npos);
  const HardwareModel none(*parse(std::string(kGpu), diags));
  EXPECT_EQ(none.unaligned_macs_per_cycle(DataType::Fp16), std::nullopt);
  const auto bad = errors_of(std::string(kGpu) + "calibration: {unaligned_gemm: 1.5}\n");
  ASSERT_EQ(bad.size(), 1u) << ::testing::PrintToString(bad);
  EXPECT_NE(bad[0].find("calibration.unaligned_gemm"), std::string::npos) << bad[0];
}

TEST(ArchCalibration, RasterGroupIsACountOfTilesOnTensorCores) {
  Diagnostics diags;
  const auto spec = parse(std::string(kGpu) + "calibration: {raster_group: 8}\n", diags);
  ASSERT_TRUE(spec) << diags.format_all();
  EXPECT_EQ(spec->calibration.raster_group, 8u);
  // Printed back as read (calibration_yaml, which --fit writes).
  EXPECT_NE(calibration_yaml(spec->calibration, 2).find("  raster_group: 8\n"), std::string::npos);
  const auto zero = errors_of(std::string(kGpu) + "calibration: {raster_group: 0}\n");
  ASSERT_EQ(zero.size(), 1u) << ::testing::PrintToString(zero);
  EXPECT_EQ(zero[0], "a.yaml:9:29: error: calibration.raster_group: 0 is not a raster group; "
                     "give the m-tiles a GEMM walks before the next n-tile, at least 1, e.g. 8");
}

TEST(ArchCalibration, ClusterMulticastNeedsTheWgmmaPath) {
  Diagnostics diags;
  const auto spec =
      parse(std::string(kHopperLike) + "calibration: {cluster_multicast: 2}\n", diags);
  ASSERT_TRUE(spec) << diags.format_all();
  EXPECT_EQ(spec->calibration.cluster_multicast, 2u);
  EXPECT_NE(calibration_yaml(spec->calibration, 2).find("  cluster_multicast: 2\n"),
            std::string::npos);
  // kGpu's tensor core lists no instruction path (mma_sync only): nothing to multicast with.
  const auto no_wgmma = errors_of(std::string(kGpu) + "calibration: {cluster_multicast: 2}\n");
  ASSERT_EQ(no_wgmma.size(), 1u) << ::testing::PrintToString(no_wgmma);
  EXPECT_EQ(no_wgmma[0],
            "a.yaml:9:34: error: calibration.cluster_multicast: only tensor cores with the wgmma "
            "path multicast within a cluster; list wgmma in the tensor core's instruction_paths, "
            "or leave cluster_multicast out");
  const auto zero = errors_of(std::string(kHopperLike) + "calibration: {cluster_multicast: 0}\n");
  ASSERT_EQ(zero.size(), 1u) << ::testing::PrintToString(zero);
  EXPECT_NE(zero[0].find("0 is not a cluster size"), std::string::npos) << zero[0];
}

TEST(ArchCalibration, RowClusterNeedsThreadBlockClusters) {
  Diagnostics diags;
  const auto spec = parse(std::string(kHopperLike) + "calibration: {row_cluster: 16}\n", diags);
  ASSERT_TRUE(spec) << diags.format_all();
  EXPECT_EQ(spec->calibration.row_cluster, 16u);
  EXPECT_EQ(HardwareModel(*spec).row_cluster(), 16u);
  EXPECT_NE(calibration_yaml(spec->calibration, 2).find("  row_cluster: 16\n"), std::string::npos);
  // Absent: a row in one SM.
  const auto plain = parse(kHopperLike, diags);
  ASSERT_TRUE(plain) << diags.format_all();
  EXPECT_EQ(HardwareModel(*plain).row_cluster(), 1u);
  // kGpu's tensor core lists no instruction path (mma_sync only): no clusters.
  const auto no_wgmma = errors_of(std::string(kGpu) + "calibration: {row_cluster: 4}\n");
  ASSERT_EQ(no_wgmma.size(), 1u) << ::testing::PrintToString(no_wgmma);
  EXPECT_EQ(no_wgmma[0],
            "a.yaml:9:28: error: calibration.row_cluster: only GPUs with thread-block clusters "
            "(the wgmma generation) spread a row over several SMs; list wgmma in the tensor "
            "core's instruction_paths, or leave row_cluster out");
  for (const char* bad : {"0", "17"}) {
    const auto errors =
        errors_of(std::string(kHopperLike) + "calibration: {row_cluster: " + bad + "}\n");
    ASSERT_EQ(errors.size(), 1u) << ::testing::PrintToString(errors);
    EXPECT_NE(errors[0].find(std::string(bad) + " is not a cluster size"), std::string::npos)
        << errors[0];
  }
}

TEST(ArchCalibration, InstructionPathsAreAListWithoutRepeats) {
  const auto errors = errors_of(R"(schema_version: 2
name: g
clock: 1 GHz
compute:
  - {name: tc, kind: tensor_core, macs_per_cycle: {fp16: 256}, instruction_paths: [wgmma, wgmma, hmma]}
dram: {bandwidth: 100 GB/s}
)");
  ASSERT_EQ(errors.size(), 2u) << ::testing::PrintToString(errors);
  EXPECT_EQ(errors[0], "a.yaml:5:91: error: compute[0].instruction_paths[1]: 'wgmma' is listed twice");
  EXPECT_EQ(errors[1].substr(0, 59), "a.yaml:5:98: error: compute[0].instruction_paths[2]: \"hmma\"");
}

TEST(HardwareModelCopy, ACopyPointsIntoItsOwnSpec) {
  Diagnostics diags;
  const auto spec = parse(kHopperLike, diags);
  ASSERT_TRUE(spec) << diags.format_all();
  auto original = std::make_unique<HardwareModel>(*spec);
  const HardwareModel copy = *original;
  const ComputeUnitSpec* unit = copy.matrix_unit();
  original.reset();  // the copy must not point into the destroyed original
  ASSERT_NE(unit, nullptr);
  EXPECT_EQ(unit, &copy.spec().compute[0]);
  EXPECT_EQ(unit->name, "tc");
  EXPECT_EQ(copy.vector_unit(), &copy.spec().compute[1]);
}

}  // namespace
}  // namespace coda::arch

namespace coda::arch {
namespace {

constexpr std::string_view kNcclGpu = R"(schema_version: 2
name: h
clock: 2 GHz
compute:
  - {name: tc, kind: tensor_core, macs_per_cycle: {fp16: 1000}}
dram: {bandwidth: 1 TB/s}
interconnect:
  chips: 8
  topology: switch
  bandwidth: 100 GB/s
  nccl:
)";

TEST(ArchInterconnect, ReadsNcclsTunerPairs) {
  Diagnostics diags;
  const auto spec = parse(std::string(kNcclGpu) + R"(    ring:
      ll: {base: 6.6 us, hop: 0.6 us, bandwidth: 0.5, max: 87.7 GB/s}
      simple: {base: 8.4 us, hop: 3.4 us}
    nvls: {simple: {base: 0 us, hop: 25 us, bandwidth: 0.8}}
)", diags);
  ASSERT_TRUE(spec) << diags.format_all();
  const NcclSpec& nccl = *spec->interconnect->nccl;
  const NcclProtocolSpec& ll = nccl.at(NcclAlgorithm::Ring).at(NcclProtocol::Ll);
  EXPECT_DOUBLE_EQ(ll.base.value, 6.6e-6);
  EXPECT_DOUBLE_EQ(ll.hop.value, 0.6e-6);
  EXPECT_DOUBLE_EQ(ll.bandwidth, 0.5);
  EXPECT_DOUBLE_EQ(ll.max->value, 87.7e9);
  const NcclProtocolSpec& simple = nccl.at(NcclAlgorithm::Ring).at(NcclProtocol::Simple);
  EXPECT_DOUBLE_EQ(simple.bandwidth, 1.0);  // the default: all of the Simple ring's bandwidth
  EXPECT_FALSE(simple.max);
  EXPECT_DOUBLE_EQ(nccl.at(NcclAlgorithm::Nvls).at(NcclProtocol::Simple).hop.value, 25e-6);
  EXPECT_FALSE(nccl.contains(NcclAlgorithm::Tree));
}

TEST(ArchInterconnect, NcclPairsAreChecked) {
  const auto errors = errors_of(std::string(kNcclGpu) + R"(    rng: {ll: {base: 1 us, hop: 1 us}}
    tree: {ll: {base: -1 us, hop: 1 us, bandwidth: 1.5}, simpel: {base: 1 us, hop: 1 us}}
    nvls: {ll: {base: 1 us, hop: 1 us}}
)");
  // NOLINTNEXTLINE(bugprone-suspicious-missing-comma): long messages split over lines
  EXPECT_EQ(errors,
            (std::vector<std::string>{
                "a.yaml:12:10: error: interconnect.nccl.rng: unknown NCCL algorithm 'rng' (did "
                "you mean 'ring'?); expected one of: ring, tree, nvls",
                "a.yaml:13:23: error: interconnect.nccl.tree.ll.base: \"-1 us\" is negative; "
                "expected a duration such as \"100 ns\"",
                "a.yaml:13:52: error: interconnect.nccl.tree.ll.bandwidth: 1.5 is not a fraction "
                "of the Simple ring's bus bandwidth in (0, 1]; e.g. 0.85 for 85% of the peak; 1 "
                "is the default (the peak itself)",
                "a.yaml:13:66: error: interconnect.nccl.tree.simpel: unknown NCCL protocol "
                "'simpel' (did you mean 'simple'?); expected one of: ll, ll128, simple",
                "a.yaml:14:16: error: interconnect.nccl.nvls.ll: NVLS runs the simple protocol "
                "only; state nvls: {simple: {...}}"}));
}

TEST(ArchInterconnect, NvlsStatesItsChannelsAndLoopTime) {
  Diagnostics diags;
  const auto spec =
      parse(std::string(kNcclGpu) +
                "    nvls: {simple: {base: 0 us, hop: 25 us, channels: 16, loop: 6.5 us}}\n",
            diags);
  ASSERT_TRUE(spec) << diags.format_all();
  const NcclProtocolSpec& nvls =
      spec->interconnect->nccl->at(NcclAlgorithm::Nvls).at(NcclProtocol::Simple);
  EXPECT_EQ(nvls.channels, 16u);
  EXPECT_DOUBLE_EQ(nvls.loop.value, 6.5e-6);
  const auto errors = errors_of(std::string(kNcclGpu) +
                                "    ring: {simple: {base: 1 us, hop: 1 us, channels: 8}}\n"
                                "    nvls: {simple: {base: 0 us, hop: 25 us, loop: 1 us}}\n");
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_NE(errors[0].find("ring.simple.channels: only NVLS states its channels and loop time"),
            std::string::npos)
      << errors[0];
  EXPECT_NE(errors[1].find("nvls.simple.loop: a loop time needs the NVLS channels that loop"),
            std::string::npos)
      << errors[1];
}

TEST(ArchHostLink, ReadsTheBandwidthAndTheCopyOverhead) {
  Diagnostics diags;
  const auto spec =
      parse(std::string(kGpu) + "host_link: {bandwidth: 64 GB/s, copy_overhead: 6 us}\n", diags);
  ASSERT_TRUE(spec) << diags.format_all();
  ASSERT_TRUE(spec->host_link);
  EXPECT_DOUBLE_EQ(spec->host_link->bandwidth.value, 64e9);
  EXPECT_DOUBLE_EQ(spec->host_link->copy_overhead.value, 6e-6);
  Diagnostics none;
  const auto bare = parse(kGpu, none);
  ASSERT_TRUE(bare) << none.format_all();
  EXPECT_FALSE(bare->host_link);
}

TEST(ArchHostLink, BadHostLinksAreLocated) {
  EXPECT_EQ(errors_of(std::string(kGpu) + "host_link: {copy_overhead: -1 us, lanes: 16}\n"),
            (std::vector<std::string>{
                "a.yaml:9:12: error: host_link: missing required key 'bandwidth'; give the link's "
                "bandwidth per direction, e.g. \"64 GB/s\"",
                "a.yaml:9:28: error: host_link.copy_overhead: \"-1 us\" is negative; expected a "
                "duration such as \"100 ns\"",
                "a.yaml:9:35: error: host_link.lanes: unknown key; valid keys here: bandwidth, "
                "copy_overhead"}));
  EXPECT_EQ(errors_of(std::string(kGpu) + "host_link: {bandwidth: 8 B/cycle}\n"),
            (std::vector<std::string>{
                "a.yaml:9:24: error: host_link.bandwidth: the host link runs on its own clock: "
                "give bytes per second; e.g. \"64 GB/s\"",
                "a.yaml:9:12: error: host_link: missing required key 'copy_overhead'; give what "
                "one copy costs to issue, e.g. \"6 us\" (0 us to price bytes alone)"}));
}

}  // namespace
}  // namespace coda::arch
