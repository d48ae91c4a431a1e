#pragma once
// Every workload source in one place (issue 19): a workload file (coda layer list, SCALE-Sim
// topology, coda trace, ONNX model), an LLM built from a coda model YAML or a Hugging Face
// config.json for a phase and a parallelism, or a network of the CNN zoo. `coda run`, `coda map`,
// `coda workload` and sweeps all load through load_source, so an LLM or an ONNX model runs
// without a trace exported first. A library of its own (coda::workload_sources) because the
// ONNX importer it calls is optional (CODA_WITH_ONNX) and needs libonnx; it reaches it through
// the module coda-onnx.so (workloads/onnx/onnx_plugin.h), loaded on the first ONNX file.

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/data_type.h"
#include "core/diagnostics.h"
#include "core/yaml_reader.h"
#include "workloads/graph.h"
#include "workloads/llm/llm_builder.h"

namespace coda::workload {

// A workload file, read by its extension; `dim_bindings`, `skip_unsupported`, `fuse_attention`
// and `fuse_functions` apply to ONNX models (their dynamic dimensions by name; unsupported nodes
// left out and listed; attention recognised; norms and activations recognised).
struct FileSource {
  std::filesystem::path file;
  std::map<std::string, std::uint64_t, std::less<>> dim_bindings;
  bool skip_unsupported = false;
  // ONNX: run the fuse-attention pass on the import (workloads/passes/builtin_passes.h), so an
  // exporter's Q K^T, scaling, mask, softmax and P V become one attention op that --fusion
  // prices fused or not; false keeps the exported ops as they are.
  bool fuse_attention = true;
  // ONNX: import the decompositions exporters write for RMSNorm, LayerNorm, GELU and SiLU as one
  // op each (workloads/onnx/function_patterns.h), and the QDQ form's contractions in int8; false
  // keeps the exported ops as they are.
  bool fuse_functions = true;
  // ONNX: price every floating-point tensor in this type instead of the model's (an fp32 export
  // run in fp16 on an NPU); integer tensors, such as int4 or int8 quantized weights, keep
  // theirs. nullopt: the model's own types.
  std::optional<DataType> dtype;
};

// An LLM: a coda model YAML (configs/workloads/llm/) or a Hugging Face config.json (by its
// extension), built for one phase on one rank of a parallel layout (llm_builder.h).
struct LlmSource {
  std::filesystem::path config;
  llm::LlmPhase phase;
  llm::Parallelism parallelism;
  std::optional<DataType> dtype;  // nullopt: the model's own
};

// A network of the CNN zoo (cnn_zoo.h) at a batch and a square input size.
struct CnnSource {
  std::string name;
  std::uint64_t batch = 1;
  std::uint64_t image = 224;
  std::optional<DataType> dtype;  // nullopt: the zoo's (int8)
};

using WorkloadSource = std::variant<FileSource, LlmSource, CnnSource>;

struct LoadedWorkload {
  Graph graph;
  // What a command prints about the load (an LLM's parameters, KV cache and layout; the ONNX
  // nodes skipped); library code does not print.
  std::vector<std::string> notes;
};

// Loads `source`; nullopt with every problem in `diags`.
std::optional<LoadedWorkload> load_source(const WorkloadSource& source, Diagnostics& diags);

// One line naming the source and every parameter that shapes its graph, e.g.
// "llm configs/workloads/llm/llama2_7b.yaml phase=decode batch=1 seq=2047 dtype=int8 ...", an
// ONNX model's path with its bindings, any other file's path alone: what run.json records.
std::string describe(const WorkloadSource& source);

// The files the source reads (a workload file, an LLM config; none for the CNN zoo), whose
// bytes a run's provenance and a sweep's hash cover.
std::vector<std::filesystem::path> source_files(const WorkloadSource& source);

// FNV-1a 64 over describe(source) and the bytes of source_files(source): equal when the graph
// would be the same. A file with no options hashes as its bytes alone (the hash run.json and
// sweep stores used before other sources existed).
std::uint64_t source_hash(const WorkloadSource& source);

// Reads a source written in YAML (a sweep's workload entry), relative paths resolved against
// `base` (the spec's folder). Exactly one of `file`, `llm` or `cnn`; with `llm`: phase (prefill,
// decode, training), batch, seq, dtype, tp, pp, dp, stage, micro_batches, recompute,
// sequence_parallel, train_precision (pure, mixed, autocast), quant (none, w8a16, w4a16[:gN],
// w8a8, fp8), kv_dtype; with `cnn`: batch, image, dtype; with `file`: bind (a map of dimension
// names to values, ONNX) and skip_unsupported. A key of another kind of source is an error. The
// keys it reads are recorded as known, so the caller's reject_unknown_keys covers the rest.
std::optional<WorkloadSource> read_workload_source(const YamlReader& item,
                                                   const std::filesystem::path& base,
                                                   Diagnostics& diags);

}  // namespace coda::workload
