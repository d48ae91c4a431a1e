#include "core/csv.h"

#include <gtest/gtest.h>

namespace coda {
namespace {

std::vector<std::string> texts(const std::vector<CsvCell>& cells) {
  std::vector<std::string> out;
  out.reserve(cells.size());
  for (const CsvCell& c : cells) out.push_back(c.text);
  return out;
}

TEST(SplitCsvRecord, QuotedCellsAsRfc4180) {
  // Record 1: a quoted cell with a comma and a doubled quote; record 2 spans two lines.
  const std::string text = "a,\"b, \"\"c\"\"\",d\r\n\"x\ny\",z\n";
  std::size_t pos = 0;
  int line = 1;
  std::vector<CsvCell> cells;
  ASSERT_TRUE(split_csv_record(text, pos, line, cells));
  EXPECT_EQ(texts(cells), (std::vector<std::string>{"a", "b, \"c\"", "d"}));
  EXPECT_EQ(cells[1].column, 3);
  EXPECT_EQ(cells[2].column, 14);
  EXPECT_EQ(line, 2);
  ASSERT_TRUE(split_csv_record(text, pos, line, cells));
  EXPECT_EQ(texts(cells), (std::vector<std::string>{"x\ny", "z"}));
  EXPECT_EQ(line, 4);
  EXPECT_EQ(pos, text.size());
}

TEST(SplitCsvRecord, AnUnterminatedQuoteFails) {
  std::size_t pos = 0;
  int line = 1;
  std::vector<CsvCell> cells;
  EXPECT_FALSE(split_csv_record("a,\"b", pos, line, cells));
}

TEST(CsvCell, QuotesOnlyWhatNeedsIt) {
  EXPECT_EQ(csv_cell("plain"), "plain");
  EXPECT_EQ(csv_cell("a, b"), "\"a, b\"");
  EXPECT_EQ(csv_cell("say \"hi\""), "\"say \"\"hi\"\"\"");
  // What it writes, split_csv_record reads back.
  const std::string row = csv_cell("x,\"y\"\nz") + "," + csv_cell("w") + "\n";
  std::size_t pos = 0;
  int line = 1;
  std::vector<CsvCell> cells;
  ASSERT_TRUE(split_csv_record(row, pos, line, cells));
  EXPECT_EQ(texts(cells), (std::vector<std::string>{"x,\"y\"\nz", "w"}));
}

TEST(CsvNumbers, TheWholeCellOrNothing) {
  EXPECT_EQ(parse_whole_uint("512"), 512u);
  EXPECT_FALSE(parse_whole_uint("512 "));
  EXPECT_FALSE(parse_whole_uint("-1"));
  EXPECT_FALSE(parse_whole_uint(""));
  EXPECT_DOUBLE_EQ(*parse_finite_double("0.25"), 0.25);
  EXPECT_DOUBLE_EQ(*parse_finite_double("-3e2"), -300);
  EXPECT_FALSE(parse_finite_double("inf"));
  EXPECT_FALSE(parse_finite_double("1.5x"));
}

}  // namespace
}  // namespace coda
