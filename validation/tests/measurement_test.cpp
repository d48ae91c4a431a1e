#include "validation/measurement.h"

#include <cmath>
#include <sstream>

#include <gtest/gtest.h>

namespace coda::validation {
namespace {

// The schema of docs/validation.md, column by column.
constexpr const char* kHeader =
    "kernel,dtype,shape,m,n,k,batch,heads,seq,head_dim,rows,cols,elements,repetitions,warmup,"
    "median_us,min_us,max_us,operations,bytes,tflops,gbps,max_error,tolerance,passed,"
    "quant_error_per_tensor,quant_error_per_channel,buffer_sets,working_set_bytes,tiling,device,"
    "compute_capability,sm_count,sm_clock_mhz,mem_clock_mhz,l2_bytes,driver,cuda_runtime,ecc,date,"
    "source,note\n";

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
  // The median cell starts after the 54 characters of
  // "gemm_int8,int8,m=64 n=128 k=256,64,128,256,,,,,,,,5,1,".
  EXPECT_EQ(format(diags.all()[0]),
            "fixture.csv:2:55: error: row 2, column 'median_us': cannot read \"fast\"; expected a "
            "number or nothing");
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

}  // namespace
}  // namespace coda::validation
