#pragma once
// The published serving corpus (validation/published/serving/: README.md has the row schema and
// each source's provenance, SPLIT.md the split) and coda serve's predictions of it: each row's
// scenario (device, TP and replicas, model and type, arrivals, lengths, scheduler limits where
// the source states them) simulated with sim/serving, and the metric the row measured read from
// the result.
//
// Manifest (corpus_serving.yaml):
//   schema_version: 1
//   devices: {h100_sxm: configs/arch/nvidia_h100_sxm.yaml, ...}  # relative to the repository top
//   models: configs/workloads/llm                                  # <model>.yaml in it
//   sources:
//     - {id: trtllm_perf_overview_v013, file: trtllm_perf_overview_v013.csv, split: calibration}

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/diagnostics.h"
#include "validation/corpus.h"

namespace coda::validation {

struct ServingRow {
  std::string source;
  std::string device;
  std::uint64_t chips = 1;
  std::uint64_t tp = 1;
  std::string model;
  std::string dtype;     // fp16, bf16, or fp8 (FP8 weights and GEMM inputs of a bf16 model)
  std::string kv_dtype;  // the KV cache's: fp16, bf16, fp8; empty: as dtype
  // The source's FP8 engines ran the prefill attention in fp8 (ServingSource::fp8_context_fmha).
  bool fp8_context_fmha = false;
  std::string engine;
  // Whose scheduler the rows ran under: the manifest's `runtime` for the source, else `engine`.
  std::string runtime;
  std::string scenario;  // offline | poisson | closed | static_batch
  std::optional<double> rate;
  std::optional<std::uint64_t> concurrency;
  std::optional<std::uint64_t> num_requests;
  std::string input_len;  // tokens, or a dataset's name
  std::string output_len;
  std::optional<std::uint64_t> max_batch;
  std::optional<std::uint64_t> max_batched_tokens;
  std::optional<bool> chunked_prefill;
  std::string metric;  // throughput_output_tokens_s, ttft_p50_ms, ...
  double value = 0;
  std::string unit;
  SourceLocation where;  // file and line
};

struct ServingSource {
  std::string id;
  std::filesystem::path file;
  Split split = Split::Validation;
  // The manifest's fp8_context_fmha: the source's FP8 rows ran TensorRT-LLM's FP8 context FMHA
  // (stated by the source's build script); false when not stated.
  bool fp8_context_fmha = false;
  // The manifest's runtime: the engine whose scheduler a source's rows ran under where their
  // `engine` does not name it (NVIDIA NIM's TensorRT-LLM profiles); empty: the rows' engine.
  std::string runtime;
  std::vector<ServingRow> rows;
};

struct ServingCorpus {
  std::filesystem::path root;                            // the repository top
  std::map<std::string, std::filesystem::path> devices;  // resolved against root
  std::filesystem::path models;                          // resolved against root
  std::vector<ServingSource> sources;
};

// Reads the manifest and every CSV it names; nullopt when anything is wrong (every problem, with
// file:line, is in `diags`).
std::optional<ServingCorpus> load_serving_corpus(const std::filesystem::path& manifest,
                                                 Diagnostics& diags);

// The metrics a row may measure, and whether each is a throughput (else a latency in ms).
bool known_serving_metric(const std::string& metric);

struct ServingCompareOptions {
  // Requests simulated where the source states no count (closed-loop rows): this many per
  // client, at least `min_requests`.
  std::uint64_t requests_per_client = 10;
  std::uint64_t min_requests = 200;
  std::uint64_t seed = 1;
};

struct ServingCompared {
  const ServingRow* row = nullptr;
  Split split = Split::Validation;
  std::optional<double> predicted;  // in the row's unit; nullopt: skipped
  std::string skipped;              // why, when skipped
  double error() const { return predicted ? (*predicted - row->value) / row->value : 0; }
};

// Every row of the corpus, predicted (rows of one scenario share one simulation) or skipped with
// the reason (lengths given as a dataset, a model or device the manifest does not map, a
// deployment coda cannot simulate).
std::vector<ServingCompared> compare_serving(const ServingCorpus& corpus,
                                             const ServingCompareOptions& options);

}  // namespace coda::validation
