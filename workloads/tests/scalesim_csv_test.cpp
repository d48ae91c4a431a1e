#include <gtest/gtest.h>

#include "workloads/importers.h"

namespace coda::workload {
namespace {

constexpr const char* kConvHeader =
    "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, "
    "Strides,\n";
constexpr const char* kValidHeaders =
    "expected the conv header 'Layer name, IFMAP Height, IFMAP Width, Filter Height, "
    "Filter Width, Channels, Num Filter, Strides,' or the GEMM header 'Layer, M, N, K,'";
constexpr const char* kConvRowHint =
    "a row is 'Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, "
    "Num Filter, Strides,' (a trailing #comment is allowed)";
constexpr const char* kNumberHint = "write a whole number of at least 1, such as 3";

std::optional<Graph> read(const std::string& text, Diagnostics& diags) {
  return read_scalesim_csv(text, "t.csv", diags);
}

// The single diagnostic of reading `text`, formatted.
std::string only_error(const std::string& text) {
  Diagnostics diags;
  EXPECT_FALSE(read(text, diags));
  EXPECT_EQ(diags.error_count(), 1u) << diags.format_all();
  return diags.all().empty() ? "" : format(diags.all().front());
}

TEST(ScaleSimCsv, ConvFileUsesCeilOutputSize) {
  Diagnostics diags;
  const auto g = read(std::string(kConvHeader) +
                          "conv1, 224, 224, 7, 7, 3, 64, 2,\n"
                          "fc, 1, 1, 1, 1, 512, 1000, 1,\n",
                      diags);
  ASSERT_TRUE(g) << diags.format_all();
  EXPECT_TRUE(diags.all().empty());
  EXPECT_EQ(g->name, "t");
  ASSERT_EQ(g->ops.size(), 2u);
  EXPECT_EQ(g->ops[0].name, "conv1");
  EXPECT_EQ(g->ops[0].source, (SourceLocation{"t.csv", 2, 1}));
  // SCALE-Sim: E = ceil((224 - 7)/2) + 1 = 110 (floor would give 109).
  EXPECT_EQ(g->ops[0].space.dims[4].extent, 110u);
  EXPECT_EQ(g->ops[0].space.dims[5].extent, 110u);
  // M' = 110*110 ofmap pixels, N' = 64 filters, K' = 7*7*3.
  EXPECT_EQ(gemm_view(g->ops[0]), (GemmView{.batch = 1, .m = 12100, .n = 64, .k = 147}));
  EXPECT_EQ(gemm_view(g->ops[1]), (GemmView{.batch = 1, .m = 1, .n = 1000, .k = 512}));
}

TEST(ScaleSimCsv, GemmFile) {
  Diagnostics diags;
  const auto g = read("layer,m,n,k\nqkv, 512, 2304, 768,\n\nffn_down,512,768,3072\n", diags);
  ASSERT_TRUE(g) << diags.format_all();
  ASSERT_EQ(g->ops.size(), 2u);
  EXPECT_EQ(gemm_view(g->ops[0]), (GemmView{.batch = 1, .m = 512, .n = 2304, .k = 768}));
  EXPECT_EQ(gemm_view(g->ops[1]), (GemmView{.batch = 1, .m = 512, .n = 768, .k = 3072}));
  EXPECT_EQ(g->ops[1].source, (SourceLocation{"t.csv", 4, 1}));
}

TEST(ScaleSimCsv, ToleratesEmptyColumnsEmptyRowsAndComments) {
  // As in SCALE-Sim's Resnet50.csv (extra empty columns, an all-empty row) and mobilenet.csv
  // (a #dw comment after the last column), with CRLF line ends.
  Diagnostics diags;
  const auto g = read(std::string(kConvHeader) +
                          "conv1, 230, 230, 7, 7, 3, 64, 2,,,\r\n"
                          ",,,,,,,,,,\r\n"
                          "conv2, 58, 58, 3, 3, 64, 64, 1, #dw\r\n",
                      diags);
  ASSERT_TRUE(g) << diags.format_all();
  ASSERT_EQ(g->ops.size(), 2u);
  EXPECT_EQ(g->ops[1].source.line, 4);
}

TEST(ScaleSimCsv, ReadsLegacyFilesWithDerivedColumns) {
  // The head of SCALE-Sim's topologies/conv_nets/Resnet50.csv as it is stored: three derived
  // columns after 'Strides' in the header, an all-empty second row, values in those columns.
  Diagnostics diags;
  const auto g = read(
      "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, "
      "Strides,,,Eh,Ew,e2\n"
      ",,,,,,,,,,,,\n"
      "Conv1,224,224,7,7,3,64,2,,,110,110,12100\n"
      "CB2a_1,56,56,1,1,64,64,1,,,,,\n",
      diags);
  ASSERT_TRUE(g) << diags.format_all();
  ASSERT_EQ(g->ops.size(), 2u);
  // ceil((224 - 7) / 2) + 1 = 110, the file's own Eh: M' = 110 * 110.
  EXPECT_EQ(gemm_view(g->ops[0]), (GemmView{.batch = 1, .m = 12100, .n = 64, .k = 147}));
  ASSERT_EQ(diags.all().size(), 1u);
  EXPECT_EQ(format(diags.all()[0]),
            "t.csv:1:99: warning: header: the columns after 'Strides' ('Eh', 'Ew', 'e2') are not "
            "read; coda, like SCALE-Sim v2, reads only the leading columns");
  // A row wider than its header is still an error.
  Diagnostics wide;
  EXPECT_FALSE(read("Layer, M, N, K, note\nfc, 1, 2, 3, x, y\n", wide));
  EXPECT_EQ(wide.error_count(), 1u) << wide.format_all();
}

TEST(ScaleSimCsv, DpLayerIsOneGroupedConv) {
  // SCALE-Sim runs "DP" rows as Channels layers of 1 channel and Num Filter filters.
  Diagnostics diags;
  const auto g = read(std::string(kConvHeader) +
                          "Conv_DP1, 114, 114, 3, 3, 32, 1, 1, #dw,\n"
                          "Conv_DP2, 58, 58, 3, 3, 8, 2, 2,\n",
                      diags);
  ASSERT_TRUE(g) << diags.format_all();
  ASSERT_EQ(g->ops.size(), 2u);
  // 32 groups, each a 112x112 ofmap (ceil(111/1) + 1), 1 filter, k = 1*3*3.
  EXPECT_EQ(gemm_view(g->ops[0]), (GemmView{.batch = 32, .m = 12544, .n = 1, .k = 9}));
  EXPECT_EQ(mac_count(g->ops[0]), 32u * 12544u * 9u);  // 3,612,672
  // 8 groups of 2 filters; E = ceil(55/2) + 1 = 29.
  EXPECT_EQ(gemm_view(g->ops[1]), (GemmView{.batch = 8, .m = 29ULL * 29, .n = 2, .k = 9}));
}

TEST(ScaleSimCsv, TooFewColumns) {
  // "conv1, 224, 224, 7, 7, 3, 64," is 29 characters: the missing field is at column 30.
  EXPECT_EQ(only_error(std::string(kConvHeader) + "conv1, 224, 224, 7, 7, 3, 64,\n"),
            std::string("t.csv:2:30: error: row 2, column 'Strides': missing: the row has 7 of "
                        "the 8 columns; ") +
                kConvRowHint);
}

TEST(ScaleSimCsv, CommentOnlyAfterAllColumns) {
  // "#dw" stands where Num Filter should be; "conv1, 224, 224, 7, 7, 3, " is 26 characters.
  EXPECT_EQ(only_error(std::string(kConvHeader) + "conv1, 224, 224, 7, 7, 3, #dw, 2,\n"),
            std::string("t.csv:2:27: error: row 2, column 'Num Filter': \"#dw\" is not a whole "
                        "number; ") +
                kNumberHint);
}

TEST(ScaleSimCsv, ExtraColumn) {
  // "conv1, 224, 224, 7, 7, 3, 64, 2, " is 33 characters.
  EXPECT_EQ(only_error(std::string(kConvHeader) + "conv1, 224, 224, 7, 7, 3, 64, 2, 5,\n"),
            std::string("t.csv:2:34: error: row 2: unexpected extra column \"5\"; ") +
                kConvRowHint);
}

TEST(ScaleSimCsv, NonNumeric) {
  // "conv1, 224, " is 12 characters.
  EXPECT_EQ(only_error(std::string(kConvHeader) + "conv1, 224, abc, 7, 7, 3, 64, 2,\n"),
            std::string("t.csv:2:13: error: row 2, column 'IFMAP Width': \"abc\" is not a whole "
                        "number; ") +
                kNumberHint);
  EXPECT_EQ(only_error("Layer, M, N, K,\nfc, 1, 2.5, 4,\n"),
            std::string("t.csv:2:8: error: row 2, column 'N': \"2.5\" is not a whole number; ") +
                kNumberHint);
}

TEST(ScaleSimCsv, Negative) {
  // "conv1, 224, 224, 7, 7, " is 23 characters.
  EXPECT_EQ(only_error(std::string(kConvHeader) + "conv1, 224, 224, 7, 7, -3, 64, 2,\n"),
            std::string("t.csv:2:24: error: row 2, column 'Channels': \"-3\" is negative; ") +
                kNumberHint);
}

TEST(ScaleSimCsv, Zero) {
  // "conv1, 224, 224, 7, 7, 3, 64, " is 30 characters.
  EXPECT_EQ(only_error(std::string(kConvHeader) + "conv1, 224, 224, 7, 7, 3, 64, 0,\n"),
            std::string("t.csv:2:31: error: row 2, column 'Strides': must be at least 1, not 0; ") +
                kNumberHint);
}

TEST(ScaleSimCsv, FilterLargerThanIfmap) {
  // "conv1, 5, 5, " is 13 characters.
  EXPECT_EQ(only_error(std::string(kConvHeader) + "conv1, 5, 5, 7, 3, 3, 64, 1,\n"),
            "t.csv:2:14: error: row 2, column 'Filter Height': Filter Height 7 is larger than "
            "IFMAP Height 5; SCALE-Sim expects padding already added to IFMAP Height: write "
            "IFMAP Height + 2 x padding");
}

TEST(ScaleSimCsv, CollectsEveryError) {
  Diagnostics diags;
  EXPECT_FALSE(read(std::string(kConvHeader) +
                        "a, 224, 224, 7, 7, 3, 64, 0,\n"
                        "b, 224, x, 7, 7, 3, 64, 1,\n"
                        "c, 224, 224, 7, 7, 3, 64, 1,\n"
                        "d, 1, 1, 1,\n",
                    diags));
  ASSERT_EQ(diags.error_count(), 3u) << diags.format_all();
  EXPECT_EQ(diags.all()[0].where.line, 2);
  EXPECT_EQ(diags.all()[1].where.line, 3);
  EXPECT_EQ(diags.all()[2].where.line, 5);
}

TEST(ScaleSimCsv, EmptyFile) {
  EXPECT_EQ(only_error(""),
            std::string("t.csv:1:1: error: empty file: no header and no layers; ") +
                kValidHeaders);
  EXPECT_EQ(only_error("\n  \n,,,\n"),
            std::string("t.csv:1:1: error: empty file: no header and no layers; ") +
                kValidHeaders);
}

TEST(ScaleSimCsv, HeaderOnly) {
  EXPECT_EQ(only_error(std::string("\n") + kConvHeader + ",,,,\n"),
            "t.csv:2:1: error: header: no layer rows after the header; add one row per layer, "
            "e.g. 'conv1, 229, 229, 7, 7, 3, 64, 2,'");
  EXPECT_EQ(only_error("Layer, M, N, K,\n"),
            "t.csv:1:1: error: header: no layer rows after the header; add one row per GEMM, "
            "e.g. 'fc, 1, 1000, 512,'");
}

TEST(ScaleSimCsv, UnknownHeader) {
  EXPECT_EQ(only_error("Layer, H, W, R, S, C, K, Stride,\nconv1, 224, 224, 7, 7, 3, 64, 2,\n"),
            std::string("t.csv:1:1: error: header: not a SCALE-Sim topology header; ") +
                kValidHeaders);
}

}  // namespace
}  // namespace coda::workload
