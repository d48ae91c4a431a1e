#include "validation/measurement.h"

#include <cmath>
#include <sstream>

#include <gtest/gtest.h>

namespace coda::validation {
namespace {

// The schema of docs/validation.md, column by column.
constexpr const char* kHeader =
    "kernel,dtype,shape,impl,model,launch,runtime,m,n,k,batch,heads,seq,head_dim,rows,cols,"
    "elements,repetitions,"
    "warmup,median_us,min_us,max_us,operations,bytes,tflops,gbps,max_error,tolerance,passed,"
    "quant_error_per_tensor,quant_error_per_channel,buffer_sets,working_set_bytes,tiling,device,"
    "compute_capability,sm_count,sm_clock_mhz,mem_clock_mhz,l2_bytes,driver,cuda_runtime,ecc,date,"
    "software,source,derivation,note\n";

// A made-up row for the schema tests: these numbers were not measured on any device.
Measurement fixture_int8_row() {
  Measurement m;
  m.kernel = Kernel::GemmInt8;
  m.dtype = DType::Int8;
  m.shape = Shape{.m = 64, .n = 128, .k = 256};
  m.repetitions = 5;
  m.warmup = 1;
  m.median_us = 2.0;
  m.min_us = 1.5;
  m.max_us = 3.25;
  m.operations = 2.0 * 64 * 128 * 256;
  m.bytes = 64.0 * 256 + 128.0 * 256 + 64.0 * 128 * 4;
  m.max_error = 0;
  m.tolerance = 0;
  m.passed = true;
  m.quant_error_per_tensor = 0.0123;
  m.quant_error_per_channel = 0.000456;
  m.buffer_sets = 3;
  m.working_set_bytes = 12345;
  m.tiling = "block tile 64x64x64, 128 threads, smem 16384 B";
  m.device = {.name = "FIXTURE GPU",
              .compute_capability = "9.0",
              .sm_count = 2,
              .sm_clock_mhz = 1000,
              .mem_clock_mhz = 2000,
              .l2_bytes = 1048576,
              .driver = "0.0 (CUDA 13.0)",
              .cuda_runtime = "13.0",
              .ecc = "on"};
  m.date = "2000-01-01T00:00:00Z";
  m.source = "fixture: not a measurement";
  m.note = "a \"quoted\" note, with a comma";
  return m;
}

TEST(MeasurementCsv, HeaderIsTheDocumentedSchema) {
  std::ostringstream out;
  write_measurement_header(out);
  EXPECT_EQ(out.str(), kHeader);
}

TEST(MeasurementCsv, RowRoundTrips) {
  const Measurement m = fixture_int8_row();
  std::ostringstream out;
  write_measurement_header(out);
  write_measurement_row(out, m);
  // The derived columns: 2*64*128*256 = 4194304 ops / 2 us = 2.097152 TOP/s;
  // 64*256 + 128*256 + 64*128*4 = 81920 B / 2 us = 40.96 GB/s.
  EXPECT_NE(out.str().find(",4194304,81920,2.097152,40.96,"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find(",64,128,256,,,,,,,,5,1,"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("\"a \"\"quoted\"\" note, with a comma\""), std::string::npos);

  Diagnostics diags;
  const auto rows = read_measurements(out.str(), "fixture.csv", diags);
  ASSERT_TRUE(rows) << diags.format_all();
  ASSERT_EQ(rows->size(), 1u);
  const Measurement& r = (*rows)[0];
  EXPECT_EQ(r.kernel, m.kernel);
  EXPECT_EQ(r.dtype, m.dtype);
  EXPECT_EQ(r.shape, m.shape);
  EXPECT_EQ(r.repetitions, m.repetitions);
  EXPECT_EQ(r.warmup, m.warmup);
  EXPECT_EQ(r.median_us, m.median_us);
  EXPECT_EQ(r.min_us, m.min_us);
  EXPECT_EQ(r.max_us, m.max_us);
  EXPECT_EQ(r.operations, m.operations);
  EXPECT_EQ(r.bytes, m.bytes);
  EXPECT_EQ(r.max_error, m.max_error);
  EXPECT_EQ(r.passed, m.passed);
  EXPECT_EQ(r.quant_error_per_tensor, m.quant_error_per_tensor);
  EXPECT_EQ(r.quant_error_per_channel, m.quant_error_per_channel);
  EXPECT_EQ(r.buffer_sets, m.buffer_sets);
  EXPECT_EQ(r.working_set_bytes, m.working_set_bytes);
  EXPECT_EQ(r.tiling, m.tiling);
  EXPECT_EQ(r.device, m.device);
  EXPECT_EQ(r.date, m.date);
  EXPECT_EQ(r.source, m.source);
  EXPECT_EQ(r.note, m.note);
  EXPECT_EQ(r.line, 2);  // the header is line 1
}

TEST(MeasurementCsv, CaseThatDidNotRunHasEmptyTimes) {
  Measurement m;
  m.kernel = Kernel::Conv2dCudnn;
  m.shape = Shape{.batch = 1, .channels = 3, .height = 8, .width = 8, .filters = 4,
                  .filter_size = 3, .stride = 1, .pad = 1};
  m.note = "coda-bench was built without cuDNN";
  std::ostringstream out;
  write_measurement_header(out);
  write_measurement_row(out, m);
  // Conv fills m, n, k with its implicit-GEMM sizes: 1*8*8 pixels, 4 filters, 3*3*3.
  EXPECT_NE(out.str().find(",64,4,27,1,,,,,,,0,0,,,,"), std::string::npos) << out.str();
  Diagnostics diags;
  const auto rows = read_measurements(out.str(), "fixture.csv", diags);
  ASSERT_TRUE(rows) << diags.format_all();
  EXPECT_TRUE(std::isnan((*rows)[0].median_us));
  EXPECT_EQ((*rows)[0].shape, m.shape);
  EXPECT_FALSE((*rows)[0].quant_error_per_tensor);
}

TEST(MeasurementCsv, BadCellIsLocated) {
  std::ostringstream out;
  write_measurement_header(out);
  write_measurement_row(out, fixture_int8_row());
  std::string text = out.str();
  text.replace(text.find(",2,1.5,"), 7, ",fast,1.5,");
  Diagnostics diags;
  EXPECT_FALSE(read_measurements(text, "fixture.csv", diags));
  ASSERT_EQ(diags.error_count(), 1u) << diags.format_all();
  // The median cell starts after the 57 characters of
  // "gemm_int8,int8,m=64 n=128 k=256,,,,64,128,256,,,,,,,,5,1," (impl, model, launch empty).
  EXPECT_EQ(format(diags.all()[0]),
            "fixture.csv:2:59: error: row 2, column 'median_us': cannot read \"fast\"; expected a "
            "time in microseconds of at least 0.001 (1 ns), or nothing for a case that was not "
            "measured");
}

TEST(MeasurementCsv, UnknownAndMissingColumns) {
  Diagnostics diags;
  EXPECT_FALSE(read_measurements("kernel,dtyp\n", "f.csv", diags));
  ASSERT_GE(diags.error_count(), 2u);
  EXPECT_EQ(format(diags.all()[0]),
            "f.csv:1:8: error: column 'dtyp': unknown column; did you mean 'dtype'?");
  EXPECT_EQ(format(diags.all()[1]),
            "f.csv:1:1: error: header: missing column 'dtype'; see docs/validation.md for the "
            "schema");
}

// ---- published rows (validation/published/README.md) ------------------------------------
// The rows below are made up to exercise the schema: no number in them was measured or
// published.

constexpr const char* kPublishedHeader =
    "kernel,dtype,shape,impl,model,median_us,device,software,source,derivation,note\n";

std::optional<std::vector<Measurement>> read_published(const std::string& rows,
                                                       Diagnostics& diags) {
  return read_measurements(std::string(kPublishedHeader) + rows, "published.csv", diags);
}

// The single error a table gives, formatted as the user sees it.
std::string only_error(const std::string& rows) {
  Diagnostics diags;
  EXPECT_FALSE(read_published(rows, diags));
  EXPECT_EQ(diags.error_count(), 1u) << diags.format_all();
  return diags.all().empty() ? std::string{} : format(diags.all()[0]);
}

TEST(PublishedRows, EveryPublishedKernelReadsWithItsDefaults) {
  Diagnostics diags;
  const auto rows = read_published(
      "gemm,fp8_e4m3,m=8192 n=8192 k=8192,wgmma,,1000,H100 SXM5 80GB,cuBLAS 12.1,FIXTURE,"
      "copied,\n"
      "gemm,tf32,m=64 n=64 k=64 batch=16,mma_sync,,10,A100,,FIXTURE,,\n"
      "attention_fwd,bf16,batch=2 heads=32 seq=4096 head_dim=128 causal=1,fa3,,900,H100,"
      "FlashAttention-3,FIXTURE,t = 4*b*h*s^2*d/2 / (TFLOP/s from Fig. 5),\n"
      "attention_bwd,fp16,batch=2 heads=32 seq=4096 head_dim=128 causal=0 kv_heads=8,,,2000,"
      "H100,,FIXTURE,,\n"
      "attention_decode,fp16,batch=8 heads=32 kv_heads=8 seq=4096 head_dim=128,,,50,H100,,"
      "FIXTURE,,\n"
      "softmax,fp16,rows=4096 cols=4096,,,20,H100,,FIXTURE,,\n"
      "layer_norm,bf16,rows=4096 cols=4096,,,20,H100,,FIXTURE,,\n"
      "rms_norm,fp32,rows=4096 cols=4096,,,20,H100,,FIXTURE,,\n"
      "gelu,fp16,elements=1048576,,,5,H100,,FIXTURE,,\n"
      "silu,bf16,elements=1048576,,,5,H100,,FIXTURE,,\n"
      "copy,int8,bytes=1073741824,,,700,H100,,FIXTURE,,\n"
      "all_reduce,bf16,bytes=8589934592 ranks=8,nvls,,30000,H100,NCCL 2.18,FIXTURE,,\n"
      "all_gather,fp16,bytes=1048576 ranks=2,ring,,30,H100,,FIXTURE,,\n"
      "reduce_scatter,fp32,bytes=1048576 ranks=4,,,30,H100,,FIXTURE,,\n"
      "llm_prefill,fp16,batch=1 input_len=2048 tp=1,,llama2_7b,150000,H100,vLLM 0.4,FIXTURE,,\n"
      "llm_decode,int8,batch=8 input_len=128 output_len=128 tp=2,,llama3_8b,10000,H100,,"
      "FIXTURE,,\n"
      "llm_generate,fp8_e4m3,batch=8 input_len=128 output_len=128 tp=8,,llama2_70b,1e6,H100,,"
      "FIXTURE,,\n"
      "network,int8,batch=1,,resnet50,2500,RK3588,RKNN 1.6,FIXTURE,,\n",
      diags);
  ASSERT_TRUE(rows) << diags.format_all();
  ASSERT_EQ(rows->size(), 18u);
  const Measurement& gemm = (*rows)[0];
  EXPECT_EQ(gemm.kernel, Kernel::Gemm);
  EXPECT_EQ(gemm.dtype, DType::Fp8E4M3);
  EXPECT_EQ(gemm.impl, Impl::Wgmma);
  EXPECT_EQ(gemm.shape.batch, 1u);  // the default
  EXPECT_EQ(gemm.software, "cuBLAS 12.1");
  EXPECT_EQ(gemm.derivation, "copied");
  EXPECT_FALSE(gemm.checked);  // no `passed` column
  EXPECT_EQ((*rows)[1].shape.batch, 16u);
  EXPECT_EQ((*rows)[1].impl, Impl::MmaSync);
  EXPECT_EQ((*rows)[2].shape.causal, 1u);
  EXPECT_EQ((*rows)[2].shape.kv_heads, 32u);  // = heads
  EXPECT_EQ((*rows)[3].shape.causal, 0u);     // 0 is valid
  EXPECT_EQ((*rows)[3].shape.kv_heads, 8u);
  EXPECT_EQ((*rows)[3].impl, Impl::Default);
  EXPECT_EQ((*rows)[4].shape.kv_heads, 8u);
  EXPECT_EQ((*rows)[10].shape.bytes, 1073741824u);
  EXPECT_EQ((*rows)[11].shape.bytes, 8589934592u);  // 8 GiB: above 2^32, allowed for bytes
  EXPECT_EQ((*rows)[11].impl, Impl::Nvls);
  EXPECT_EQ((*rows)[14].model, "llama2_7b");
  EXPECT_EQ((*rows)[14].shape.input_len, 2048u);
  EXPECT_EQ((*rows)[16].shape.tp, 8u);
  EXPECT_EQ((*rows)[17].kernel, Kernel::Network);
  EXPECT_EQ((*rows)[17].model, "resnet50");
}

TEST(PublishedRows, NewColumnsRoundTripThroughTheWriter) {
  Measurement m;
  m.kernel = Kernel::AttentionFwd;
  m.dtype = DType::Bf16;
  m.shape = Shape{.batch = 2, .heads = 16, .seq = 1024, .head_dim = 64};
  m.shape.kv_heads = 16;
  m.impl = Impl::Fa2;
  m.median_us = 123.5;
  m.checked = false;
  m.software = "FlashAttention-2 v2.5.8, PyTorch 2.2";
  m.source = "FIXTURE: not a publication";
  m.derivation = "t = 4*b*h*s^2*d / (TFLOP/s from Fig. 4)";
  Measurement llm;
  llm.kernel = Kernel::LlmDecode;
  llm.dtype = DType::Fp16;
  llm.shape.batch = 4;
  llm.shape.input_len = 512;
  llm.shape.output_len = 256;
  llm.shape.tp = 2;
  llm.model = "mixtral_8x7b";
  llm.runtime = RowRuntime::HfTransformers;
  llm.checked = false;
  std::ostringstream out;
  write_measurement_header(out);
  write_measurement_row(out, m);
  write_measurement_row(out, llm);
  // Forward, not causal: 4 * 2 * 16 * 1024^2 * 64 = 8589934592 operations.
  EXPECT_NE(out.str().find("attention_fwd,bf16,batch=2 heads=16 seq=1024 head_dim=64 causal=0 "
                           "kv_heads=16,fa2,,,,,,,2,16,1024,64,"),
            std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find("llm_decode,fp16,batch=4 input_len=512 output_len=256 tp=2,,"
                           "mixtral_8x7b,,hf_transformers,,,,4,"),
            std::string::npos)
      << out.str();
  Diagnostics diags;
  const auto rows = read_measurements(out.str(), "round_trip.csv", diags);
  ASSERT_TRUE(rows) << diags.format_all();
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[0].shape, m.shape);
  EXPECT_EQ((*rows)[0].impl, Impl::Fa2);
  EXPECT_EQ((*rows)[0].software, m.software);
  EXPECT_EQ((*rows)[0].derivation, m.derivation);
  EXPECT_EQ((*rows)[1].shape, llm.shape);
  EXPECT_EQ((*rows)[1].model, llm.model);
  EXPECT_EQ((*rows)[1].runtime, RowRuntime::HfTransformers);
}

TEST(PublishedRows, OnlyLlmRowsNameARuntime) {
  // A runtime is the software of a whole-model LLM row; a kernel row naming one is an error at
  // its cell, and an unknown name says what is valid.
  const std::string header = "kernel,dtype,shape,model,runtime,median_us,source\n";
  Diagnostics ok;
  const auto rows = read_measurements(
      header +
          "llm_decode,bf16,batch=1 input_len=5 output_len=2 tp=1,llama2_7b,hf_transformers,"
          "10,FIXTURE\n",
      "runtime.csv", ok);
  ASSERT_TRUE(rows) << ok.format_all();
  EXPECT_EQ((*rows)[0].runtime, RowRuntime::HfTransformers);
  // "gemm,bf16,m=64 n=64 k=64,," is 26 characters: the runtime cell starts at column 27; the
  // prefill row's at column 55.
  Diagnostics diags;
  EXPECT_FALSE(read_measurements(
      header + "gemm,bf16,m=64 n=64 k=64,,hf_transformers,10,FIXTURE\n"
               "llm_prefill,bf16,batch=1 input_len=128 tp=1,llama2_7b,vllm,20,FIXTURE\n",
      "runtime.csv", diags));
  ASSERT_EQ(diags.error_count(), 2u) << diags.format_all();
  EXPECT_EQ(format(diags.all()[0]),
            "runtime.csv:2:27: error: row 2, column 'runtime': gemm takes no runtime; leave the "
            "cell empty; only llm_* rows name the software that ran them");
  EXPECT_EQ(format(diags.all()[1]),
            "runtime.csv:3:55: error: row 3, column 'runtime': cannot read \"vllm\"; expected "
            "hf_transformers (Hugging Face transformers run eagerly) or nothing (coda's kernels)");
}

TEST(PublishedRows, CodaBenchRowsLeaveTheNewCellsEmpty) {
  std::ostringstream out;
  write_measurement_row(out, fixture_int8_row());
  // kernel, dtype, shape, then empty impl, model, launch and runtime; software (after date)
  // empty too.
  EXPECT_EQ(out.str().rfind("gemm_int8,int8,m=64 n=128 k=256,,,,,64,", 0), 0u) << out.str();
  EXPECT_NE(out.str().find(",2000-01-01T00:00:00Z,,fixture: not a measurement,,"),
            std::string::npos)
      << out.str();
}

TEST(PublishedRows, UnknownImplSuggestsTheClosestAndListsTheKernels) {
  // The impl cell starts after "gemm,fp16,m=64 n=64 k=64," (25 characters).
  EXPECT_EQ(only_error("gemm,fp16,m=64 n=64 k=64,wgma,,10,,,FIXTURE,,\n"),
            "published.csv:2:26: error: row 2, column 'impl': \"wgma\" is not an implementation "
            "class of gemm (did you mean 'wgmma'?); expected one of: wgmma, mma_sync, or nothing "
            "(the arch's default)");
  // A class of another kernel is no class of this one.
  EXPECT_EQ(only_error("attention_fwd,fp16,batch=1 heads=1 seq=64 head_dim=64 causal=0,ring,,10,"
                       ",,FIXTURE,,\n"),
            "published.csv:2:64: error: row 2, column 'impl': \"ring\" is not an implementation "
            "class of attention_fwd; expected one of: fa2, fa3, triton, unfused, or nothing (the "
            "arch's default)");
}

TEST(PublishedRows, ImplOnAKernelThatTakesNone) {
  EXPECT_EQ(only_error("gelu,fp16,elements=64,fa2,,10,,,FIXTURE,,\n"),
            "published.csv:2:23: error: row 2, column 'impl': gelu takes no implementation "
            "class; leave the cell empty; only gemm, attention_fwd, attention_bwd, "
            "attention_fwd_bwd, attention_decode, softmax, layer_norm, rms_norm, all_reduce, "
            "all_gather, reduce_scatter, llm_decode, llm_generate, llm_train name one");
  // softmax takes the cluster class, and nothing else.
  EXPECT_EQ(only_error("softmax,fp16,rows=64 cols=64,fa2,,10,,,FIXTURE,,\n"),
            "published.csv:2:30: error: row 2, column 'impl': \"fa2\" is not an implementation "
            "class of softmax; expected one of: cluster, or nothing (the arch's default)");
}

TEST(PublishedRows, ModelMissingOrWhereNoneBelongs) {
  EXPECT_EQ(only_error("llm_prefill,fp16,batch=1 input_len=128 tp=1,,,10,,,FIXTURE,,\n"),
            "published.csv:2:46: error: row 2, column 'model': llm_prefill needs a model; name a "
            "coda LLM preset (configs/workloads/llm/) such as llama2_7b");
  EXPECT_EQ(only_error("gemm,fp16,m=64 n=64 k=64,,llama2_7b,10,,,FIXTURE,,\n"),
            "published.csv:2:27: error: row 2, column 'model': gemm takes no model; leave the "
            "cell empty; only llm_* and network rows name a model");
  EXPECT_EQ(only_error("network,int8,batch=1,,res net,10,,,FIXTURE,,\n"),
            "published.csv:2:23: error: row 2, column 'model': \"res net\" is not a plain name; "
            "letters, digits, '_', '-' and '.' only: a CNN-zoo name such as resnet50");
  // Without a model column the row is located at its start.
  Diagnostics diags;
  EXPECT_FALSE(read_measurements("kernel,dtype,shape,median_us,source\n"
                                 "network,int8,batch=1,10,FIXTURE\n",
                                 "no_model.csv", diags));
  ASSERT_EQ(diags.error_count(), 1u) << diags.format_all();
  EXPECT_EQ(format(diags.all()[0]),
            "no_model.csv:2:1: error: row 2, column 'model': network needs a model; name a "
            "CNN-zoo name such as resnet50");
}

// A whole-model row may say how its kernels were launched (launch: graph or eager); a kernel row
// only graph (timed back to back from a CUDA graph), and any other word is named with the valid
// ones.
TEST(PublishedRows, LaunchModeOnWholeModelRowsOnly) {
  const std::string header =
      "kernel,dtype,shape,model,launch,median_us,source\n";
  Diagnostics diags;
  const auto rows = read_measurements(
      header + "llm_prefill,fp16,batch=1 input_len=128 tp=1,llama2_7b,eager,10,FIXTURE\n"
               "llm_decode,bf16,batch=1 input_len=5 output_len=200 tp=1,llama2_7b,graph,10,FIXTURE\n"
               "network,int8,batch=1,resnet50,,10,FIXTURE\n",
      "launch.csv", diags);
  ASSERT_TRUE(rows) << diags.format_all();
  EXPECT_EQ((*rows)[0].launch, Launch::Eager);
  EXPECT_EQ((*rows)[1].launch, Launch::Graph);
  EXPECT_EQ((*rows)[2].launch, Launch::Default);

  // "gemm,fp16,m=64 n=64 k=64,," is 26 characters: the launch cell starts at column 27.
  Diagnostics gemm;
  EXPECT_FALSE(read_measurements(header + "gemm,fp16,m=64 n=64 k=64,,eager,10,FIXTURE\n",
                                 "launch.csv", gemm));
  ASSERT_EQ(gemm.error_count(), 1u) << gemm.format_all();
  EXPECT_EQ(format(gemm.all()[0]),
            "launch.csv:2:27: error: row 2, column 'launch': gemm takes no eager launch mode; "
            "leave the cell empty (a kernel timed on its own) or say graph (timed back to back "
            "from a CUDA graph); eager is for llm_* and network rows (whole models)");
  // A kernel timed back to back from a CUDA graph says graph.
  Diagnostics copy;
  const auto graph = read_measurements(header + "copy,int8,bytes=65536,,graph,1.3,FIXTURE\n",
                                       "launch.csv", copy);
  ASSERT_TRUE(graph) << copy.format_all();
  EXPECT_EQ((*graph)[0].launch, Launch::Graph);
  Diagnostics word;
  EXPECT_FALSE(read_measurements(
      header + "llm_prefill,fp16,batch=1 input_len=128 tp=1,llama2_7b,graphs,10,FIXTURE\n",
      "launch.csv", word));
  ASSERT_EQ(word.error_count(), 1u) << word.format_all();
  EXPECT_NE(format(word.all()[0]).find("column 'launch'"), std::string::npos) << word.format_all();
  EXPECT_NE(format(word.all()[0]).find("graph (a CUDA graph), eager"), std::string::npos);
}

TEST(PublishedRows, ShapeRulesOfTheNewKernels) {
  const std::string attention = "attention_fwd,fp16,";
  // The shape cell starts at column 20, after "attention_fwd,fp16,".
  EXPECT_EQ(only_error(attention +
                       "batch=1 heads=8 seq=64 head_dim=64 causal=2,,,10,,,FIXTURE,,\n"),
            "published.csv:2:20: error: row 2, column 'shape': 'causal' = 2 is neither 0 nor 1; "
            "causal=1 for a causal mask, causal=0 for none");
  EXPECT_EQ(only_error(attention +
                       "batch=1 heads=8 seq=64 head_dim=64 causal=0 kv_heads=3,,,10,,,FIXTURE,,\n"),
            "published.csv:2:20: error: row 2, column 'shape': 'kv_heads' = 3 does not divide "
            "'heads' = 8; each KV head serves heads / kv_heads query heads: kv_heads = heads for "
            "multi-head attention, 1 for multi-query");
  EXPECT_EQ(only_error(attention + "batch=1 heads=8 seq=64 head_dim=64,,,10,,,FIXTURE,,\n"),
            "published.csv:2:20: error: row 2, column 'shape': 'causal' is missing; attention_fwd "
            "takes: batch=N heads=N seq=N head_dim=N causal=N [kv_heads=N]");
  EXPECT_EQ(only_error("all_reduce,fp16,bytes=1024 ranks=1,,,10,,,FIXTURE,,\n"),
            "published.csv:2:17: error: row 2, column 'shape': 'ranks' = 1: a collective needs "
            "at least 2; ranks is the number of GPUs taking part, e.g. 8");
  EXPECT_EQ(only_error("gemm,int4,m=64 n=64 k=64,,,10,,,FIXTURE,,\n"),
            "published.csv:2:6: error: row 2, column 'dtype': cannot read \"int4\"; expected one "
            "of fp32, tf32, fp16, bf16, fp8_e4m3, int8");
  EXPECT_EQ(only_error("softmax,fp8_e4m3,rows=64 cols=64,,,10,,,FIXTURE,,\n"),
            "published.csv:2:9: error: row 2, column 'dtype': softmax does not run fp8_e4m3; "
            "expected one of: fp32, fp16, bf16");
  // A decode row's values inside its keys (MLA) are at most head_dim wide; absent, head_dim.
  const std::string decode = "attention_decode,bf16,";
  EXPECT_EQ(only_error(decode + "batch=1 heads=16 kv_heads=1 seq=64 head_dim=576 value_dim=600,,,"
                                "10,,,FIXTURE,,\n"),
            "published.csv:2:23: error: row 2, column 'shape': 'value_dim' = 600 is more than "
            "'head_dim' = 576; value_dim below head_dim means the values are the keys' first "
            "value_dim columns (MLA's latent cache: head_dim=576 value_dim=512); leave it out for "
            "values of their own");
  Diagnostics diags;
  const auto rows = read_published(
      decode + "batch=1 heads=16 kv_heads=1 seq=64 head_dim=576 value_dim=512,,,10,,,FIXTURE,,\n" +
          decode + "batch=1 heads=16 kv_heads=1 seq=64 head_dim=128,,,10,,,FIXTURE,,\n",
      diags);
  ASSERT_TRUE(rows) << diags.format_all();
  EXPECT_EQ((*rows)[0].shape.value_dim, 512u);
  EXPECT_EQ((*rows)[1].shape.value_dim, 128u);
}

TEST(DeviceCheck, ModelWordsOfADeviceName) {
  // Letters (1-3), digits (1-5), at most one more letter; memory and form-factor words are not
  // models ("SXM5", "HBM3", "80GB" has two letters after its digits).
  EXPECT_EQ(device_model_words("NVIDIA H100 80GB HBM3"), (std::vector<std::string>{"h100"}));
  EXPECT_EQ(device_model_words("A100-SXM4-80GB"), (std::vector<std::string>{"a100"}));
  EXPECT_EQ(device_model_words("Google TPU v5e"), (std::vector<std::string>{"v5e"}));
  EXPECT_EQ(device_model_words("Rockchip RK3588 NPU"), (std::vector<std::string>{"rk3588"}));
  EXPECT_EQ(device_model_words("AMD MI300X"), (std::vector<std::string>{"mi300x"}));
  EXPECT_TRUE(device_model_words("Jetson AGX Orin").empty());
  EXPECT_TRUE(device_model_words("").empty());
}

TEST(DeviceCheck, WarnsOncePerDeviceThatTheArchDoesNotName) {
  Measurement h200 = fixture_int8_row();
  h200.device.name = "NVIDIA H200";
  h200.line = 2;
  Measurement unnamed = h200;
  unnamed.device.name = "";
  unnamed.line = 4;
  const std::vector<Measurement> rows{h200, h200, unnamed};
  Diagnostics diags;
  warn_device_mismatch(rows, "google-tpu-v4", "Google TPU v4 chip, 2 TensorCores x 4 MXUs",
                       "t.csv", diags);
  ASSERT_EQ(diags.all().size(), 1u);
  EXPECT_EQ(format(diags.all()[0]),
            "t.csv:2: warning: column 'device': 'NVIDIA H200' (2 rows) does not look like the "
            "arch 'google-tpu-v4': neither its name nor its description says h200; price a "
            "device's rows on its own preset (configs/arch/), or keep this arch if it models "
            "that device");
  EXPECT_FALSE(diags.has_errors());

  Diagnostics same;
  warn_device_mismatch(rows, "nvidia-h200-sxm", "NVIDIA H200 SXM 141GB", "t.csv", same);
  EXPECT_TRUE(same.all().empty());
}

}  // namespace
}  // namespace coda::validation
