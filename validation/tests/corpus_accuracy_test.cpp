// A loose regression bound on coda's accuracy against the published corpus
// (validation/published/), so that a change that breaks the model fails CI. The figures
// themselves are bench/accuracy.sh's, never asserted exactly here: the bounds below sit well
// above what the committed presets reach, and a broken parameter or model term (an efficiency
// off by 1.5x anywhere, a unit slip, a dropped fixed cost) crosses them.

#include <gtest/gtest.h>

#include "validation/corpus.h"
#include "validation/corpus_compare.h"

namespace coda::validation {
namespace {

const CorpusGroup& group(const std::vector<CorpusGroup>& groups, const std::string& name) {
  for (const CorpusGroup& g : groups)
    if (g.name == name) return g;
  ADD_FAILURE() << "no group " << name;
  static const CorpusGroup kNone;
  return kNone;
}

TEST(CorpusAccuracy, ThePresetsStayWithinTheRegressionBounds) {
  Diagnostics diags;
  const auto corpus = load_corpus("validation/published/corpus.yaml", diags);
  ASSERT_TRUE(corpus) << diags.format_all();
  std::string why;
  const auto report =
      compare_corpus(*corpus, {.fit = false, .pricing = {.llm_dir = "configs/workloads/llm"}}, why);
  ASSERT_TRUE(report) << why;
  // At the commit that set these bounds (2026-12-01): validation MAPE 23.3%, median 14.3%,
  // Spearman 0.985 over 170 rows; calibration MAPE 13.0%, median 9.4%, Spearman 0.996 over 359
  // rows (bench/accuracy.sh). Bounds: MAPE 30% and median 20% on the validation split, 20% and
  // 15% on the calibration split, and a Spearman of at least 0.95 on both.
  // 2026-12-03: the validation split gained 96 training rows (llmfoundry_mpt, llm_train: MAPE
  // 30.6%, median 31.5% with every attention as fa2; 20.1% and 14.5% with the A100 rows in the
  // triton class); with them the split reads MAPE 18.7%, median 13.6%, Spearman 0.997 over 266
  // rows. The median bound moved to 25% with that class (not with a change of the model), and
  // the class has its own: MAPE below 40%. Later that day the class gained 13 H100 rows across
  // nodes (dp 16-64 on the DGX H100 cluster): 109 rows, MAPE 21.7%, median 20.6%; the split 279
  // rows, 19.4%, 13.8%. Bounds unchanged.
  // 2026-12-05: the H100 rows in the triton class (the H100 preset's attention_triton, chosen on
  // fa2_readme's H100 FlashAttention v1 rows): training 123 rows, 15.1%, median 13.2%; the split
  // 799 rows, 19.6%, 13.2%. Bounds unchanged.
  const CorpusGroup& validation = group(report->by_split, "validation");
  const CorpusGroup& calibration = group(report->by_split, "calibration");
  const CorpusGroup& training = group(report->by_class, "validation / training");
  EXPECT_GE(validation.stats.count, 150u);
  EXPECT_LT(validation.stats.mape, 0.30);
  EXPECT_LT(validation.stats.median, 0.25);
  EXPECT_GE(training.stats.count, 90u);
  EXPECT_LT(training.stats.mape, 0.40);
  EXPECT_GT(validation.stats.spearman, 0.95);
  EXPECT_GE(calibration.stats.count, 300u);
  EXPECT_LT(calibration.stats.mape, 0.20);
  EXPECT_LT(calibration.stats.median, 0.15);
  EXPECT_GT(calibration.stats.spearman, 0.95);
}

}  // namespace
}  // namespace coda::validation
