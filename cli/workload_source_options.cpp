#include "cli/workload_source_options.h"

#include <charconv>
#include <filesystem>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/options.h"
#include "core/enum_table.h"
#include "workloads/cnn/cnn_zoo.h"

namespace coda::cli {

void add_workload_source_options(CLI::App& cmd, WorkloadSourceArgs& args, CLI::Option* file,
                                 bool onnx_skip) {
  CLI::Option* llm =
      cmd.add_option("--llm", args.llm,
                     "An LLM to build: a coda model YAML (configs/workloads/llm/) or a Hugging "
                     "Face config.json, for --phase, --batch and --seq")
          ->check(CLI::ExistingFile);
  CLI::Option* cnn = cmd.add_option(
      "--cnn", args.cnn,
      fmt::format("A network of the CNN zoo: {}", fmt::join(workload::cnn::cnn_names(), ", ")));
  file->excludes(llm)->excludes(cnn);
  llm->excludes(cnn);
  cmd.add_option("--phase", args.phase, "LLM phase: prefill, decode or training")
      ->capture_default_str();
  cmd.add_option("--batch", args.batch, "Sequences (LLM) or images (CNN) per step")
      ->capture_default_str()
      ->check(kPositive);
  cmd.add_option("--seq", args.seq,
                 "LLM prompt length (prefill), tokens in the KV cache (decode) or sequence "
                 "length (training)")
      ->capture_default_str()
      ->check(kPositive);
  cmd.add_flag("--recompute", args.recompute, "LLM training: full activation recomputation");
  cmd.add_option("--train-precision", args.precision,
                 "LLM training: pure (all in --dtype), mixed (fp32 master weights in the "
                 "optimizer: Megatron-LM, DeepSpeed, FSDP), autocast (PyTorch AMP over fp32 "
                 "parameters) or fp8 (mixed, the linear layers' GEMMs in FP8 as Transformer "
                 "Engine runs them)")
      ->capture_default_str();
  cmd.add_option("--tp", args.tp, "LLM tensor-parallel ranks")->capture_default_str();
  cmd.add_option("--pp", args.pp, "LLM pipeline stages")->capture_default_str();
  cmd.add_option("--dp", args.dp, "LLM data-parallel replicas")->capture_default_str();
  cmd.add_option("--stage", args.stage, "Which LLM pipeline stage to build (0-based)")
      ->capture_default_str();
  cmd.add_flag("--sequence-parallel", args.sequence_parallel,
               "LLM training with --tp > 1: Megatron-LM's sequence parallelism");
  cmd.add_option("--cp", args.cp,
                 "LLM training: context-parallel ranks (one rank's graph: seq / cp tokens, K "
                 "and V all-gathered)")
      ->capture_default_str();
  cmd.add_option("--ep", args.ep,
                 "LLM training of a MoE model: expert-parallel ranks (one rank's graph: experts / "
                 "ep of each MoE layer, the tokens' rows exchanged by all-to-alls; ep divides "
                 "--tp x --dp x --cp; with --tp > 1 needs --sequence-parallel)")
      ->capture_default_str();
  cmd.add_option("--micro-batches", args.micro_batches, "LLM pipeline micro-batches per step")
      ->capture_default_str();
  add_quantization_options(cmd, args.quant, args.kv_dtype, args.fp8_context_fmha);
  cmd.add_option("--runtime", args.runtime,
                 "LLM: default (coda's kernels, fused further by --fusion) or hf_transformers "
                 "(Hugging Face transformers run eagerly: every PyTorch op of LlamaForCausalLM's "
                 "inference a kernel, or GPT2LMHeadModel's training step under autocast; price "
                 "it with --fusion eager and --launch eager)")
      ->capture_default_str();
  cmd.add_option("--image", args.image, "CNN input height and width")->capture_default_str();
  cmd.add_option("--dtype", args.dtype,
                 "Element type for --llm or --cnn (fp32, bf16, fp16, fp8_e4m3, int8, ...); for an "
                 "ONNX file, of its floating-point tensors (quantized integer weights keep "
                 "theirs)");
  cmd.add_option("--bind", args.bind, "ONNX: a dynamic dimension's value, NAME=VALUE");
  cmd.add_flag("--no-fuse-attention", args.no_fuse_attention,
               "ONNX: keep the exported attention (Q K^T, scaling, mask, softmax, P V) as its "
               "ops instead of recognising it as one attention op (the fuse-attention pass)");
  cmd.add_flag("--no-fuse-functions", args.no_fuse_functions,
               "ONNX: keep the exported pieces of RMSNorm, LayerNorm, GELU and SiLU (Pow, "
               "ReduceMean, Sqrt, Erf, Tanh, Sigmoid, ...) instead of importing each as one op, "
               "and the QDQ form's DequantizeLinears instead of running its contractions in int8");
  if (onnx_skip)
    cmd.add_flag("--skip-unsupported", args.skip_unsupported,
                 "ONNX: skip unsupported nodes (listed) instead of failing");
}

bool names_a_source(const WorkloadSourceArgs& args) {
  return !args.file.empty() || !args.llm.empty() || !args.cnn.empty();
}

namespace {

bool read_dtype(const WorkloadSourceArgs& args, std::optional<DataType>& out, Diagnostics& diags) {
  if (args.dtype.empty()) return true;
  out = parse_data_type(args.dtype);
  if (!out)
    diags.error({}, "--dtype", fmt::format("unknown element type '{}'", args.dtype),
                "expected one of: " + data_type_list());
  return out.has_value();
}

}  // namespace

std::optional<workload::WorkloadSource> workload_source(const WorkloadSourceArgs& args,
                                                        Diagnostics& diags) {
  namespace llm = workload::llm;
  if (!args.llm.empty()) {
    workload::LlmSource s;
    s.config = args.llm;
    const auto phase = enum_value(llm::phase_names(), args.phase);
    if (!phase) {
      diags.error({}, "--phase", fmt::format("unknown phase '{}'", args.phase),
                  "expected one of: " + enum_names(llm::phase_names()));
      return std::nullopt;
    }
    const auto precision = enum_value(llm::precision_names(), args.precision);
    if (!precision) {
      diags.error({}, "--train-precision", fmt::format("unknown training precision '{}'", args.precision),
                  "expected one of: " + enum_names(llm::precision_names()));
      return std::nullopt;
    }
    const auto runtime = enum_value(llm::runtime_names(), args.runtime);
    if (!runtime) {
      diags.error({}, "--runtime", fmt::format("unknown runtime '{}'", args.runtime),
                  "expected one of: " + enum_names(llm::runtime_names()));
      return std::nullopt;
    }
    s.phase = {.kind = *phase,
               .batch = args.batch,
               .seq_len = args.seq,
               .recompute = args.recompute,
               .precision = *precision,
               .quant = {},
               .runtime = *runtime};
    if (!read_quantization(args.quant, args.kv_dtype, args.fp8_context_fmha, s.phase.quant, diags))
      return std::nullopt;
    s.parallelism = {
        args.tp, args.pp, args.dp, args.stage, args.micro_batches, args.sequence_parallel,
        args.cp, args.ep};
    if (!read_dtype(args, s.dtype, diags)) return std::nullopt;
    return s;
  }
  if (!args.cnn.empty()) {
    workload::CnnSource s{.name = args.cnn, .batch = args.batch, .image = args.image, .dtype = {}};
    if (!read_dtype(args, s.dtype, diags)) return std::nullopt;
    return s;
  }
  workload::FileSource s;
  s.file = args.file;
  s.skip_unsupported = args.skip_unsupported;
  s.fuse_attention = !args.no_fuse_attention;
  s.fuse_functions = !args.no_fuse_functions;
  if (!read_dtype(args, s.dtype, diags)) return std::nullopt;
  for (const std::string& binding : args.bind) {
    const auto eq = binding.find('=');
    std::uint64_t value = 0;
    const char* first = binding.data() + (eq == std::string::npos ? 0 : eq + 1);
    const char* last = binding.data() + binding.size();
    const auto [end, ec] = std::from_chars(first, last, value);
    if (eq == std::string::npos || eq == 0 || ec != std::errc{} || end != last || value == 0) {
      diags.error({}, "--bind", fmt::format("cannot read '{}'", binding),
                  "write NAME=VALUE with a whole number of at least 1, e.g. batch=8");
      continue;
    }
    s.dim_bindings[binding.substr(0, eq)] = value;
  }
  if (diags.has_errors()) return std::nullopt;
  return s;
}

}  // namespace coda::cli
