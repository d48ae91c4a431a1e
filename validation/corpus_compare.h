#pragma once
// The published corpus against coda (validation/published/, read by validation/corpus.h): every
// row priced on its entry's arch, the error reported per split (calibration, validation), per
// class, per source, per arch and pooled; optionally the archs' calibration knobs fitted on the
// calibration split alone, with both splits priced again. bench/accuracy.sh prints it;
// docs/validation.md, "The published corpus", says how to read it.
//
// Fitting: archs that share one SM design (the same core count, clock and matrix unit: H100 and
// H200 are one GH100) form a family and share one fit, each keeping the rest of its calibration
// (H200 its own DRAM); a family is fitted on its calibration rows only, and the validation rows
// are never looked at by the fit.
//
// Pure library code: nothing is printed; deterministic for the same corpus.

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "arch/arch_spec.h"
#include "arch/cluster_spec.h"
#include "validation/compare.h"
#include "validation/corpus.h"

namespace coda::validation {

struct CorpusRow {
  std::size_t entry = 0;  // index into Corpus::entries
  std::size_t arch = 0;   // index into CorpusReport::archs
  ComparedRow row;        // prediction with the archs as given; calibrated when fitting
};

struct CorpusArch {
  std::string path;       // as the manifest resolved it
  arch::ArchSpec spec;
  std::size_t family = 0;  // index into CorpusReport::families
};

struct CorpusFamily {
  std::vector<std::size_t> archs;  // indices into CorpusReport::archs
  std::size_t fit_rows = 0;        // calibration rows the fit used
  std::optional<FitResult> fit;    // when fitting
};

struct CorpusGroup {
  std::string name;                // "validation", "validation / gemm", "calibration / fa3_paper"
  Split split = Split::Validation;
  std::vector<std::size_t> rows;   // indices into CorpusReport::rows (compared or not)
  ErrorStats stats;                // with the archs as given
  ErrorStats calibrated;           // with the fitted knobs (when fitting)
};

struct CorpusReport {
  std::vector<CorpusArch> archs;
  std::vector<CorpusFamily> families;
  std::vector<CorpusRow> rows;
  std::vector<CorpusGroup> by_split;   // calibration, validation
  std::vector<CorpusGroup> by_class;   // per split, the classes with a row (all_classes order)
  std::vector<CorpusGroup> by_source;  // per split, in manifest order
  std::vector<CorpusGroup> by_arch;    // per split
  std::vector<CorpusGroup> by_kernel;  // per split, the kernels with a row
};

struct CorpusOptions {
  bool fit = false;          // fit each family on its calibration rows
  // Fit only the whole-model knobs (in_model_fixed_cost, llm_step_fixed_cost,
  // eager_issue_time, decode_kv_reread) on the whole-model rows, the kernels' knobs held at the
  // archs' values (stage 2 alone).
  bool fit_whole_models_only = false;
  // Fit only these knobs (FitOptions::only_knobs), in every stage; empty: all of them. A name
  // that selects no knob of any family fitted is an error.
  std::vector<std::string> fit_knobs;
  PublishedPricing pricing;  // llm_* rows' models (cache: set by compare_corpus when null)
};

// Whether the cluster an entry names (`cluster:`) is made of the entry's arch (its chip: is the
// same file); when not, a located error at the entry's `cluster:`.
bool check_cluster_chip(const arch::LoadedCluster& cluster, const CorpusEntry& entry,
                        Diagnostics& diags);

// nullopt with `why` when an arch or a cluster the manifest names cannot be read, or a cluster is
// not made of its entry's arch (the diagnostics in `why`).
std::optional<CorpusReport> compare_corpus(const Corpus& corpus, const CorpusOptions& options,
                                           std::string& why);

// The report as text (a table per split of class, source and arch statistics: count, MAPE,
// median, Spearman, worst row; then the rows coda could not price), as JSON (every row with its
// split, source, arch, measurement, prediction and error; every group) and, per fitted family,
// the calibration as arch YAML (calibration_yaml) with its provenance.
std::string corpus_report_text(const CorpusReport& report, const Corpus& corpus);
std::string corpus_report_json(const CorpusReport& report, const Corpus& corpus);
std::string family_calibration_yaml(const CorpusReport& report, std::size_t family);

}  // namespace coda::validation
