#include "validation/corpus.h"

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "testing/temp_dir.h"

namespace coda::validation {
namespace {

namespace fs = std::filesystem;

// A repository in miniature: TOP/configs/arch/h100.yaml (only its existence matters to the
// reader), TOP/validation/published/gpu/a.csv with two made-up rows (not measurements, not
// published), and the manifest beside gpu/.
class CorpusTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(top() / "configs/arch");
    fs::create_directories(folder() / "gpu");
    std::ofstream(top() / "configs/arch/h100.yaml") << "schema_version: 2\n";
    std::ofstream(folder() / "gpu/a.csv")
        << "kernel,dtype,shape,impl,median_us,source,derivation\n"
           "gemm,fp16,m=64 n=64 k=64,wgmma,10,FIXTURE: not a publication,copied\n"
           "copy,fp32,bytes=1048576,,5,FIXTURE: not a publication,copied\n";
  }
  fs::path top() const { return tmp_.path(); }
  fs::path folder() const { return tmp_.path() / "validation/published"; }
  fs::path manifest(const std::string& text) const {
    std::ofstream(folder() / "corpus.yaml") << text;
    return folder() / "corpus.yaml";
  }
  // Every error the manifest gives, one formatted diagnostic per line, with the temporary
  // folder written as TOP.
  std::string errors(const std::string& text) const {
    Diagnostics diags;
    EXPECT_FALSE(load_corpus(manifest(text), diags));
    std::string out;
    for (const Diagnostic& d : diags.all()) {
      std::string line = format(d);
      for (auto at = line.find(top().string()); at != std::string::npos;
           at = line.find(top().string()))
        line.replace(at, top().string().size(), "TOP");
      out += line + "\n";
    }
    return out;
  }

  testing::TempDir tmp_;
};

constexpr const char* kEntry =
    "  - id: lab_h100\n"
    "    file: gpu/a.csv\n"
    "    arch: configs/arch/h100.yaml\n"
    "    split: calibration\n"
    "    classes: [gemm, copy]\n"
    "    citation: \"FIXTURE, Table 1\"\n";

TEST_F(CorpusTest, ReadsAGoodManifestAndItsFiles) {
  Diagnostics diags;
  const auto corpus = load_corpus(manifest(std::string("schema_version: 1\nsources:\n") + kEntry +
                                           "  - id: lab_h100_again\n"
                                           "    file: ./gpu/../gpu/a.csv\n"
                                           "    arch: configs/arch/h100.yaml\n"
                                           "    split: validation\n"
                                           "    classes: [copy]\n"
                                           "    citation: FIXTURE\n"),
                                  diags);
  ASSERT_TRUE(corpus) << diags.format_all();
  // The top is the nearest folder above the manifest with configs/: two levels up.
  EXPECT_EQ(corpus->root, top());
  ASSERT_EQ(corpus->entries.size(), 2u);
  const CorpusEntry& e = corpus->entries[0];
  EXPECT_EQ(e.id, "lab_h100");
  EXPECT_EQ(e.file, folder() / "gpu/a.csv");
  EXPECT_EQ(e.arch, top() / "configs/arch/h100.yaml");
  EXPECT_EQ(e.split, Split::Calibration);
  EXPECT_EQ(e.classes, (std::vector{CorpusClass::Gemm, CorpusClass::Copy}));
  EXPECT_EQ(e.citation, "FIXTURE, Table 1");
  EXPECT_EQ(e.where.line, 3);
  ASSERT_EQ(e.rows.size(), 2u);
  EXPECT_EQ(e.rows[0].kernel, Kernel::Gemm);
  EXPECT_EQ(e.rows[0].impl, Impl::Wgmma);
  EXPECT_EQ(e.rows[1].shape.bytes, 1048576u);
  EXPECT_EQ(corpus->entries[1].file, folder() / "gpu/a.csv");  // normalised
  EXPECT_EQ(corpus->entries[1].split, Split::Validation);
}

TEST_F(CorpusTest, UnknownKeySuggestsTheClosest) {
  EXPECT_EQ(errors(std::string("schema_version: 1\nsources:\n") + kEntry + "    citaton: x\n"),
            "TOP/validation/published/corpus.yaml:9:5: error: sources[0].citaton: unknown key "
            "(did you mean 'citation'?)\n");
}

TEST_F(CorpusTest, BadSplitAndClassListTheValidOnes) {
  EXPECT_EQ(errors("schema_version: 1\nsources:\n"
                   "  - {id: a, file: gpu/a.csv, arch: configs/arch/h100.yaml, split: calibraton,\n"
                   "     classes: [gemm, colective], citation: x}\n"),
            "TOP/validation/published/corpus.yaml:3:67: error: sources[0].split: \"calibraton\" "
            "is not valid (did you mean 'calibration'?); expected one of: calibration, "
            "validation\n"
            "TOP/validation/published/corpus.yaml:4:22: error: sources[0].classes[1]: "
            "\"colective\" is not valid (did you mean 'collective'?); expected one of: gemm, "
            "attention, row, copy, collective, llm, training, network\n");
}

TEST_F(CorpusTest, AFileListedTwiceNamesTheFirst) {
  EXPECT_EQ(errors(std::string("schema_version: 1\nsources:\n") + kEntry + kEntry),
            "TOP/validation/published/corpus.yaml:10:11: error: sources[1].file: 'gpu/a.csv' is "
            "listed twice (first at line 4); each file is one entry\n");
}

TEST_F(CorpusTest, ASourceIsOnOneSideOfTheSplit) {
  // The same source (id) on two devices: fine on one side, an error across the two.
  const std::string second_device =
      "  - {id: lab_h100, file: gpu/b.csv, arch: configs/arch/h100.yaml, split: calibration,\n"
      "     classes: [gemm], citation: x}\n";
  std::ofstream(folder() / "gpu/b.csv") << "kernel,dtype,shape,median_us,source\n";
  Diagnostics diags;
  EXPECT_TRUE(load_corpus(
      manifest(std::string("schema_version: 1\nsources:\n") + kEntry + second_device), diags))
      << diags.format_all();
  std::string other_side = second_device;
  other_side.replace(other_side.find("calibration"), 11, "validation");
  EXPECT_EQ(errors(std::string("schema_version: 1\nsources:\n") + kEntry + other_side),
            "TOP/validation/published/corpus.yaml:9:74: error: sources[1].split: source "
            "'lab_h100' is in validation here but in calibration at line 6; all the rows of a "
            "source go to one side of the split (SPLIT.md)\n");
}

TEST_F(CorpusTest, MissingFilesAreLocated) {
  EXPECT_EQ(errors("schema_version: 1\nsources:\n"
                   "  - {id: a, file: gpu/b.csv, arch: configs/arch/h200.yaml, split: validation,\n"
                   "     classes: [gemm], citation: x}\n"),
            "TOP/validation/published/corpus.yaml:3:19: error: sources[0].file: no such file: "
            "TOP/validation/published/gpu/b.csv; the path is relative to the manifest's folder\n"
            "TOP/validation/published/corpus.yaml:3:36: error: sources[0].arch: no such file: "
            "TOP/configs/arch/h200.yaml; the path is relative to the repository top (TOP)\n");
}

TEST_F(CorpusTest, ErrorsInANamedCsvAreLocatedInTheCsv) {
  std::ofstream(folder() / "gpu/a.csv") << "kernel,dtype,shape,median_us,source\n"
                                           "llm_prefill,fp16,batch=1 input_len=8 tp=1,9,FIXTURE\n";
  EXPECT_EQ(errors(std::string("schema_version: 1\nsources:\n") + kEntry),
            "TOP/validation/published/gpu/a.csv:2:1: error: row 2, column 'model': llm_prefill "
            "needs a model; name a coda LLM preset (configs/workloads/llm/) such as llama2_7b\n");
}

TEST_F(CorpusTest, AClusterIsResolvedAgainstTheTopAndMustExist) {
  fs::create_directories(top() / "configs/cluster");
  std::ofstream(top() / "configs/cluster/pod.yaml") << "schema_version: 1\n";
  Diagnostics diags;
  const auto corpus = load_corpus(
      manifest(std::string("schema_version: 1\nsources:\n") + kEntry +
               "    cluster: configs/cluster/./pod.yaml\n"),
      diags);
  ASSERT_TRUE(corpus) << diags.format_all();
  EXPECT_EQ(corpus->entries[0].cluster, top() / "configs/cluster/pod.yaml");
  EXPECT_EQ(corpus->entries[0].cluster_where.line, 9);
  EXPECT_EQ(corpus->entries[0].cluster_key, "sources[0].cluster");
  EXPECT_EQ(errors(std::string("schema_version: 1\nsources:\n") + kEntry +
                   "    cluster: configs/cluster/dgx.yaml\n"),
            "TOP/validation/published/corpus.yaml:9:14: error: sources[0].cluster: no such file: "
            "TOP/configs/cluster/dgx.yaml; the path is relative to the repository top (TOP), e.g. "
            "configs/cluster/dgx_h100_superpod.yaml\n");
}

TEST_F(CorpusTest, VersionAndMissingSources) {
  EXPECT_EQ(errors("schema_version: 2\nsourcs: []\n"),
            "TOP/validation/published/corpus.yaml:1:17: error: schema_version: unsupported "
            "version 2; this coda reads version 1\n"
            "TOP/validation/published/corpus.yaml:1:1: error: missing required key 'sources'; "
            "list the published CSV files, e.g. sources: [{id: ..., file: gpu/x.csv, ...}]\n"
            "TOP/validation/published/corpus.yaml:2:1: error: sourcs: unknown key (did you mean "
            "'sources'?)\n");
}

}  // namespace
}  // namespace coda::validation
