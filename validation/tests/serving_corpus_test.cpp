#include "validation/serving_corpus.h"

#include <gtest/gtest.h>

#include <fstream>

#include "testing/temp_dir.h"

namespace coda::validation {
namespace {

// A manifest m.yaml in `dir` with no devices, models in configs/ and these `sources` entries
// (they start on its line 5).
void write_manifest(const testing::TempDir& dir, const std::string& sources) {
  std::filesystem::create_directories(dir.path() / "configs");
  std::ofstream(dir.path() / "m.yaml")
      << "schema_version: 1\ndevices: {}\nmodels: configs\nsources:\n"
      << sources;
}

TEST(ServingCorpus, TheCommittedCorpusReads) {
  Diagnostics diags;
  const auto corpus =
      load_serving_corpus("validation/published/serving/corpus_serving.yaml", diags);
  ASSERT_TRUE(corpus) << diags.format_all();
  // SPLIT.md: six sources, 227 calibration rows (v013 with its 30 Mixtral rows and its LLaMA v3
  // 70B rows at TP 1, 2, 4 and 8) and 90 validation rows.
  ASSERT_EQ(corpus->sources.size(), 6u);
  std::size_t calibration = 0, validation = 0;
  for (const ServingSource& s : corpus->sources)
    (s.split == Split::Calibration ? calibration : validation) += s.rows.size();
  EXPECT_EQ(calibration, 227u);
  EXPECT_EQ(validation, 90u);
  // The manifest schedules NIM's rows (engine 'other') as TensorRT-LLM's; others by engine.
  for (const ServingSource& s : corpus->sources)
    for (const ServingRow& r : s.rows)
      EXPECT_EQ(r.runtime, s.id == "nim_llm_benchmarking_perf" ? "tensorrt_llm" : r.engine);
}

// A runtime coda does not schedule as is an error at its line, naming the valid ones.
TEST(ServingCorpus, AnUnknownRuntimeIsLocated) {
  const testing::TempDir dir;
  write_manifest(dir, "  - id: s\n    file: s.csv\n    split: calibration\n    runtime: sglang\n");
  std::ofstream(dir.path() / "s.csv") << "source,device\n";
  Diagnostics diags;
  EXPECT_FALSE(load_serving_corpus(dir.path() / "m.yaml", diags));
  ASSERT_EQ(diags.error_count(), 1u) << diags.format_all();
  EXPECT_EQ(diags.all()[0].where.line, 8);
  EXPECT_NE(diags.all()[0].hint.find("tensorrt_llm or vllm"), std::string::npos)
      << diags.format_all();
}

TEST(ServingCorpus, BadRowsAreLocated) {
  const testing::TempDir dir;
  write_manifest(dir, "  - {id: s, file: s.csv, split: calibration}\n");
  std::ofstream(dir.path() / "s.csv")
      << "source,device,chips,tp,model,dtype,scenario,metric,value,unit\n"
         "s,h100_sxm,8,3,llama3_8b,fp8,offline,throughput_output_tokens_s,100,tokens/s\n"
         "s,h100_sxm,1,1,llama3_8b,fp8,bursty,tokens_per_joule,-1,x\n";
  Diagnostics diags;
  EXPECT_FALSE(load_serving_corpus(dir.path() / "m.yaml", diags));
  ASSERT_EQ(diags.error_count(), 4u) << diags.format_all();
  EXPECT_EQ(diags.all()[0].path, "row 2, column 'tp'");
  EXPECT_EQ(diags.all()[0].where.line, 2);
  EXPECT_EQ(diags.all()[1].path, "row 3, column 'scenario'");
  EXPECT_EQ(diags.all()[2].path, "row 3, column 'metric'");
  EXPECT_EQ(diags.all()[3].path, "row 3, column 'value'");
}

}  // namespace
}  // namespace coda::validation
