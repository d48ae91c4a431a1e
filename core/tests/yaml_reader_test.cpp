#include "core/yaml_reader.h"

#include <gtest/gtest.h>

#include "testing/temp_dir.h"

namespace coda {
namespace {

using testing::TempDir;

TEST(YamlReader, ReadsTypedValuesAndUnits) {
  Diagnostics diags;
  auto doc = YamlDocument::parse("rows: 32\nsize: 64 KiB\nclock: 1 GHz\nname: npu\nok: true\n",
                                 "t.yaml", diags);
  ASSERT_TRUE(doc);
  const YamlReader root = doc->root();
  std::uint32_t rows = 0;
  Bytes size;
  Hertz clock;
  std::string name;
  bool ok = false;
  EXPECT_TRUE(root.required("rows", rows, diags));
  EXPECT_TRUE(root.required("size", size, diags));
  EXPECT_TRUE(root.required("clock", clock, diags));
  EXPECT_TRUE(root.required("name", name, diags));
  EXPECT_TRUE(root.optional("ok", ok, diags));
  root.reject_unknown_keys(diags);
  EXPECT_FALSE(diags.has_errors()) << diags.format_all();
  EXPECT_EQ(rows, 32u);
  EXPECT_EQ(size, Bytes{65536});
  EXPECT_DOUBLE_EQ(clock.value, 1e9);
  EXPECT_EQ(name, "npu");
  EXPECT_TRUE(ok);
}

TEST(YamlReader, UnknownKeyHasLocationAndDidYouMean) {
  Diagnostics diags;
  auto doc = YamlDocument::parse("sram:\n  ifmap: 64 KiB\n  filtr: 64 KiB\n", "a.yaml", diags);
  ASSERT_TRUE(doc);
  const YamlReader sram = doc->root().at("sram");
  Bytes ifmap, filter;
  sram.required("ifmap", ifmap, diags);
  sram.optional("filter", filter, diags);
  sram.reject_unknown_keys(diags);
  ASSERT_EQ(diags.error_count(), 1u);
  EXPECT_EQ(format(diags.all()[0]),
            "a.yaml:3:3: error: sram.filtr: unknown key (did you mean 'filter'?)");
}

TEST(YamlReader, UnknownKeyFarFromAnyListsValidKeys) {
  Diagnostics diags;
  auto doc = YamlDocument::parse("rows: 4\nbanana: 1\n", "a.yaml", diags);
  ASSERT_TRUE(doc);
  std::uint32_t rows = 0;
  const YamlReader root = doc->root();  // a reader remembers the keys asked of it
  root.required("rows", rows, diags);
  root.reject_unknown_keys(diags);
  ASSERT_EQ(diags.error_count(), 1u);
  EXPECT_EQ(format(diags.all()[0]),
            "a.yaml:2:1: error: banana: unknown key; valid keys here: rows");
}

TEST(YamlReader, CollectsEveryErrorWithItsLocation) {
  Diagnostics diags;
  auto doc = YamlDocument::parse("rows: -3\nsize: 64\nclock: fast\n", "b.yaml", diags);
  ASSERT_TRUE(doc);
  const YamlReader root = doc->root();
  std::uint32_t rows = 0;
  Bytes size;
  Hertz clock;
  std::string missing;
  root.required("rows", rows, diags);
  root.required("size", size, diags);
  root.required("clock", clock, diags);
  root.required("name", missing, diags);
  ASSERT_EQ(diags.error_count(), 4u) << diags.format_all();
  EXPECT_EQ(format(diags.all()[0]),
            "b.yaml:1:7: error: rows: \"-3\" must not be negative; write an integer such as 32");
  EXPECT_EQ(format(diags.all()[1]),
            "b.yaml:2:7: error: size: \"64\" has no unit; write a size with its unit, such as "
            "\"256 KiB\"");
  EXPECT_NE(format(diags.all()[2]).find("b.yaml:3:8: error: clock: cannot read \"fast\""),
            std::string::npos);
  EXPECT_EQ(format(diags.all()[3]), "b.yaml:1:1: error: missing required key 'name'");
}

TEST(YamlReader, EnumChoicesSuggestTheClosest) {
  enum class Flow { Os, Ws };
  constexpr std::pair<std::string_view, Flow> kFlows[] = {{"output_stationary", Flow::Os},
                                                          {"weight_stationary", Flow::Ws}};
  Diagnostics diags;
  auto doc = YamlDocument::parse("dataflow: wieght_stationary\n", "c.yaml", diags);
  ASSERT_TRUE(doc);
  Flow flow = Flow::Os;
  EXPECT_FALSE(doc->root().required_enum("dataflow", flow, EnumTable<Flow>(kFlows), diags));
  ASSERT_EQ(diags.error_count(), 1u);
  EXPECT_EQ(format(diags.all()[0]),
            "c.yaml:1:11: error: dataflow: \"wieght_stationary\" is not valid (did you mean "
            "'weight_stationary'?); expected one of: output_stationary, weight_stationary");
}

TEST(YamlReader, SyntaxErrorIsLocated) {
  Diagnostics diags;
  EXPECT_FALSE(YamlDocument::parse("a: [1, 2\nb: 3\n", "bad.yaml", diags));
  ASSERT_EQ(diags.error_count(), 1u);
  EXPECT_EQ(diags.all()[0].where.file, "bad.yaml");
  EXPECT_GT(diags.all()[0].where.line, 0);
  EXPECT_NE(diags.all()[0].message.find("invalid YAML"), std::string::npos);
}

TEST(YamlReader, ExtendsDeepMergesAndKeepsEachValuesFile) {
  TempDir dir;
  dir.write("base.yaml", "name: base\nsram:\n  ifmap: 64 KiB\n  filter: 64 KiB\nrows: 32\n");
  const auto child = dir.write("child.yaml", "extends: base.yaml\nname: child\nsram:\n  filter: 1 MiB\n  filtr: 2 MiB\n");
  Diagnostics diags;
  auto doc = YamlDocument::load(child, diags);
  ASSERT_TRUE(doc) << diags.format_all();
  EXPECT_EQ(doc->files().size(), 2u);
  const YamlReader root = doc->root();
  std::string name;
  std::uint32_t rows = 0;
  Bytes ifmap, filter;
  root.required("name", name, diags);
  root.required("rows", rows, diags);
  const YamlReader sram = root.at("sram");
  sram.required("ifmap", ifmap, diags);
  sram.required("filter", filter, diags);
  sram.reject_unknown_keys(diags);
  root.reject_unknown_keys(diags);
  EXPECT_EQ(name, "child");
  EXPECT_EQ(rows, 32u);                    // inherited
  EXPECT_EQ(ifmap, Bytes{64 * 1024ULL});      // inherited inside a merged map
  EXPECT_EQ(filter, Bytes{1024 * 1024ULL});   // overridden
  ASSERT_EQ(diags.error_count(), 1u);
  const Diagnostic& d = diags.all()[0];
  EXPECT_EQ(d.where.file, child.string());  // the typo is in the child, line 5
  EXPECT_EQ(d.where.line, 5);
  EXPECT_EQ(d.path, "sram.filtr");
  // An inherited value's location is in the preset it came from.
  EXPECT_EQ(sram.at("ifmap").location().file, (child.parent_path() / "base.yaml").string());
  EXPECT_EQ(sram.at("ifmap").location().line, 3);
}

TEST(YamlReader, ExtendsCycleAndMissingFileAreErrors) {
  TempDir dir;
  dir.write("a.yaml", "extends: b.yaml\n");
  const auto b = dir.write("b.yaml", "extends: a.yaml\n");
  Diagnostics diags;
  EXPECT_FALSE(YamlDocument::load(b, diags));
  ASSERT_EQ(diags.error_count(), 1u);
  EXPECT_NE(diags.all()[0].message.find("cycle in extends: b.yaml -> a.yaml -> b.yaml"),
            std::string::npos);

  const auto c = dir.write("c.yaml", "extends: nowhere.yaml\n");
  Diagnostics diags2;
  EXPECT_FALSE(YamlDocument::load(c, diags2));
  ASSERT_EQ(diags2.error_count(), 1u);
  EXPECT_EQ(diags2.all()[0].where.line, 1);
  EXPECT_NE(diags2.all()[0].message.find("cannot open"), std::string::npos);
}

TEST(YamlReader, ContentHashIgnoresFormattingButNotValues) {
  Diagnostics diags;
  const auto a = YamlDocument::parse("rows: 32   # comment\ncols: 32\n", "a", diags);
  const auto b = YamlDocument::parse("rows:   32\ncols: 32\n", "b", diags);
  const auto c = YamlDocument::parse("rows: 32\ncols: 16\n", "c", diags);
  EXPECT_EQ(a->content_hash(), b->content_hash());
  EXPECT_NE(a->content_hash(), c->content_hash());
}

TEST(YamlReader, DidYouMeanOnlyForCloseWords) {
  constexpr std::string_view kKeys[] = {"rows", "cols", "dataflow", "clock"};
  EXPECT_EQ(did_you_mean("dataflwo", kKeys), "dataflow");
  EXPECT_EQ(did_you_mean("row", kKeys), "rows");
  EXPECT_FALSE(did_you_mean("bandwidth", kKeys));
}

}  // namespace
}  // namespace coda
