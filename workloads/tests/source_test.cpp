// One loader for every workload source (workloads/source.h): an LLM or a CNN loads the graph its
// builder makes, a file loads as load_workload reads it, the description and hash cover every
// parameter that shapes the graph, and a sweep's YAML entry is read with located errors.

#include "workloads/source.h"

#include <gtest/gtest.h>

#include "testing/temp_dir.h"
#include "workloads/cnn/cnn_zoo.h"
#include "workloads/importers.h"
#include "workloads/llm/llm_config.h"

namespace coda::workload {
namespace {

LlmSource gpt2_decode() {
  LlmSource s;
  s.config = "configs/workloads/llm/gpt2_small.yaml";
  s.phase = {.kind = llm::PhaseKind::Decode, .batch = 4, .seq_len = 511, .recompute = false};
  return s;
}

TEST(WorkloadSource, AnLlmLoadsTheGraphItsBuilderMakesWithItsHeadline) {
  Diagnostics diags;
  const auto loaded = load_source(gpt2_decode(), diags);
  ASSERT_TRUE(loaded) << diags.format_all();
  const auto config = llm::load_llm_config("configs/workloads/llm/gpt2_small.yaml", diags);
  ASSERT_TRUE(config) << diags.format_all();
  const auto built = llm::try_build_llm(*config, gpt2_decode().phase, {}, diags);
  ASSERT_TRUE(built) << diags.format_all();
  EXPECT_EQ(loaded->graph.ops.size(), built->ops.size());
  EXPECT_EQ(loaded->graph.name, built->name);
  ASSERT_EQ(loaded->notes.size(), 1U);
  EXPECT_NE(loaded->notes[0].find("decode phase, batch 4, sequence 511"), std::string::npos)
      << loaded->notes[0];
  // The source's element type replaces the model's: int8 weights are a quarter of fp32's bytes
  // and half of the preset's fp16 (gpt2_small.yaml states fp16).
  LlmSource int8 = gpt2_decode();
  int8.dtype = DataType::Int8;
  const auto quantized = load_source(int8, diags);
  ASSERT_TRUE(quantized) << diags.format_all();
  EXPECT_EQ(quantized->graph.tensors.front().dtype, DataType::Int8);
}

TEST(WorkloadSource, ACnnAndAFileLoadAsTheirOwnReadersDo) {
  Diagnostics diags;
  const auto cnn = load_source(CnnSource{.name = "resnet18", .batch = 2, .image = 224, .dtype = {}},
                               diags);
  ASSERT_TRUE(cnn) << diags.format_all();
  const auto zoo = cnn::build_cnn("resnet18", {.batch = 2}, diags);
  ASSERT_TRUE(zoo) << diags.format_all();
  EXPECT_EQ(cnn->graph.ops.size(), zoo->ops.size());
  EXPECT_TRUE(cnn->notes.empty());
  const auto file = load_source(FileSource{.file = "configs/workloads/resnet18.yaml"}, diags);
  const auto direct = load_workload("configs/workloads/resnet18.yaml", diags);
  ASSERT_TRUE(file && direct) << diags.format_all();
  EXPECT_EQ(file->graph.ops.size(), direct->ops.size());
  EXPECT_TRUE(source_files(CnnSource{.name = "resnet18"}).empty());
  // An element type applies to an ONNX file's float tensors; a YAML layer list states its own,
  // so giving one there is an error, not a type silently left unused.
  Diagnostics yaml;
  EXPECT_FALSE(load_source(
      FileSource{.file = "configs/workloads/resnet18.yaml", .dtype = DataType::Fp16}, yaml));
  EXPECT_NE(yaml.format_all().find("dtype: an element type is given for a coda workload YAML"),
            std::string::npos)
      << yaml.format_all();
}

TEST(WorkloadSource, TheDescriptionAndHashCoverEveryParameter) {
  EXPECT_EQ(describe(gpt2_decode()),
            "llm configs/workloads/llm/gpt2_small.yaml phase=decode batch=4 seq=511 dtype=own "
            "recompute=0 tp=1 pp=1 dp=1 stage=0 micro_batches=1 sequence_parallel=0");
  EXPECT_EQ(describe(CnnSource{.name = "resnet50", .batch = 8, .image = 224,
                               .dtype = DataType::Fp16}),
            "cnn resnet50 batch=8 image=224 dtype=fp16");
  LlmSource other = gpt2_decode();
  other.phase.batch = 8;
  EXPECT_NE(source_hash(other), source_hash(gpt2_decode()));
  // A training precision other than the default is named (and changes the hash); the default
  // leaves the text, and so the hashes of earlier stores, as they were.
  LlmSource autocast = gpt2_decode();
  autocast.phase.kind = llm::PhaseKind::Training;
  LlmSource mixed = autocast;
  autocast.phase.precision = llm::Precision::Autocast;
  EXPECT_TRUE(describe(autocast).ends_with(" sequence_parallel=0 train_precision=autocast"))
      << describe(autocast);
  EXPECT_TRUE(describe(mixed).ends_with(" sequence_parallel=0")) << describe(mixed);
  // Likewise a runtime other than the default.
  LlmSource hf = gpt2_decode();
  hf.phase.runtime = llm::Runtime::HfTransformers;
  EXPECT_TRUE(describe(hf).ends_with(" sequence_parallel=0 runtime=hf_transformers"))
      << describe(hf);
  // And context parallelism other than 1.
  LlmSource cp = mixed;
  cp.parallelism.cp = 2;
  EXPECT_TRUE(describe(cp).ends_with(" sequence_parallel=0 cp=2")) << describe(cp);
  EXPECT_NE(source_hash(cp), source_hash(mixed));
  EXPECT_EQ(source_hash(gpt2_decode()), source_hash(gpt2_decode()));
  // An ONNX file's element type is named when given (and changes the hash).
  EXPECT_EQ(describe(FileSource{.file = "m.onnx",
                                .fuse_attention = false,
                                .fuse_functions = false,
                                .dtype = DataType::Fp16}),
            "m.onnx dtype=fp16");
  // A file's bytes count: the same path with other contents is another workload.
  const coda::testing::TempDir dir;
  const auto path = dir.write("g.csv", "Layer, M, N, K,\nfc, 2, 3, 4,\n");
  const std::uint64_t before = source_hash(FileSource{.file = path});
  dir.write("g.csv", "Layer, M, N, K,\nfc, 2, 3, 5,\n");
  EXPECT_NE(source_hash(FileSource{.file = path}), before);
}

std::optional<WorkloadSource> read(const std::string& text, Diagnostics& diags) {
  const auto doc = YamlDocument::parse(text, "spec.yaml", diags);
  if (!doc) return std::nullopt;
  return read_workload_source(doc->root(), "configs/workloads", diags);
}

TEST(WorkloadSource, ASweepEntryNamesOneSourceAndOnlyItsKeys) {
  Diagnostics diags;
  const auto llm = read("{llm: llm/llama2_7b.yaml, phase: decode, batch: 2, seq: 2047, "
                        "dtype: int8, tp: 2}", diags);
  ASSERT_TRUE(llm) << diags.format_all();
  const auto& s = std::get<LlmSource>(*llm);
  EXPECT_EQ(s.config, "configs/workloads/llm/llama2_7b.yaml");  // against the base folder
  EXPECT_EQ(s.phase.kind, llm::PhaseKind::Decode);
  EXPECT_EQ(s.phase.batch, 2U);
  EXPECT_EQ(s.phase.seq_len, 2047U);
  EXPECT_EQ(s.dtype, DataType::Int8);
  EXPECT_EQ(s.parallelism.tp, 2U);
  EXPECT_EQ(s.phase.precision, llm::Precision::Mixed);
  const auto training = read("{llm: llm/gpt2_small.yaml, phase: training, seq: 64, "
                             "train_precision: autocast}", diags);
  ASSERT_TRUE(training) << diags.format_all();
  EXPECT_EQ(std::get<LlmSource>(*training).phase.precision, llm::Precision::Autocast);
  const auto hf = read(
      "{llm: llm/llama2_7b.yaml, phase: decode, seq: 64, "
      "runtime: hf_transformers}",
      diags);
  ASSERT_TRUE(hf) << diags.format_all();
  EXPECT_EQ(std::get<LlmSource>(*hf).phase.runtime, llm::Runtime::HfTransformers);

  const auto onnx = read("{file: resnet18.yaml, dtype: fp16}", diags);
  ASSERT_TRUE(onnx) << diags.format_all();
  EXPECT_EQ(std::get<FileSource>(*onnx).dtype, DataType::Fp16);

  const auto cnn = read("{cnn: mobilenet_v2, batch: 4}", diags);
  ASSERT_TRUE(cnn) << diags.format_all();
  EXPECT_EQ(std::get<CnnSource>(*cnn).batch, 4U);

  const auto only_error = [](const std::string& text) {
    Diagnostics d;
    EXPECT_FALSE(read(text, d));
    return d.all().empty() ? std::string() : format(d.all().front());
  };
  EXPECT_EQ(only_error("{file: resnet18.yaml, phase: decode}"),
            "spec.yaml:1:30: error: phase: 'phase' does not apply to a file source; a file "
            "source takes: bind, skip_unsupported, fuse_attention, fuse_functions, dtype");
  EXPECT_EQ(only_error("{file: resnet18.yaml, cnn: resnet18}"),
            "spec.yaml:1:1: error: more than one workload source; give exactly one of file: (a "
            "layer list, SCALE-Sim CSV, trace or ONNX model), llm: (a coda model YAML or Hugging "
            "Face config.json) or cnn: (a CNN zoo name)");
  EXPECT_EQ(only_error("{llm: llm/llama2_7b.yaml, phase: decode}"),
            "spec.yaml:1:1: error: missing required key 'seq'");
  EXPECT_NE(only_error("{llm: llm/llama2_7b.yaml, seq: 8, phase: decoding}")
                .find("\"decoding\" is not valid; expected one of: prefill, decode, training"),
            std::string::npos);
  EXPECT_NE(only_error("{llm: llm/llama2_7b.yaml, seq: 8, train_precision: amp}")
                .find("\"amp\" is not valid; expected one of: pure, mixed, autocast"),
            std::string::npos);
  EXPECT_NE(only_error("{llm: llm/llama2_7b.yaml, seq: 8, runtime: vllm}")
                .find("\"vllm\" is not valid; expected one of: default, hf_transformers"),
            std::string::npos);
  EXPECT_NE(only_error("{cnn: resnet19}").find("unknown network 'resnet19'; one of"),
            std::string::npos);
  EXPECT_NE(only_error("{file: absent.yaml}").find("no such file 'configs/workloads/absent.yaml'"),
            std::string::npos);
}

}  // namespace
}  // namespace coda::workload
