// UTF-8 checks (core/text.h): byte sequences from RFC 3629's table and its examples.
#include "core/text.h"

#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/yaml_reader.h"

namespace coda {
namespace {

TEST(TextField, ControlCharactersAndBadBytesAreProblems) {
  EXPECT_EQ(text_field_problem("tabs\tand\r\nline breaks, caf\xC3\xA9"), std::nullopt);
  const auto esc = text_field_problem("\x1B[31mred");  // a terminal escape sequence
  ASSERT_TRUE(esc.has_value());
  EXPECT_EQ(esc->message, "control character U+001B at byte 1");
  const auto del = text_field_problem("ab\x7F");
  ASSERT_TRUE(del.has_value());
  EXPECT_EQ(del->message, "control character U+007F at byte 3");
  const auto nul = text_field_problem(std::string_view("a\0b", 3));
  ASSERT_TRUE(nul.has_value());
  EXPECT_EQ(nul->message, "control character U+0000 at byte 2");
  const auto latin1 = text_field_problem("Stra\xDF" "e");  // bad bytes are reported first
  ASSERT_TRUE(latin1.has_value());
  EXPECT_EQ(latin1->message, "not UTF-8 text: byte 5 (0xDF) starts no UTF-8 character");
}

TEST(Utf8, WellFormedTextHasNoInvalidByte) {
  EXPECT_EQ(first_invalid_utf8(""), std::nullopt);
  EXPECT_EQ(first_invalid_utf8("plain ASCII"), std::nullopt);
  EXPECT_EQ(first_invalid_utf8("caf\xC3\xA9"), std::nullopt);             // U+00E9, 2 bytes
  EXPECT_EQ(first_invalid_utf8("\xE2\x82\xAC 5"), std::nullopt);          // U+20AC, 3 bytes
  EXPECT_EQ(first_invalid_utf8("\xF0\x9F\x98\x80"), std::nullopt);        // U+1F600, 4 bytes
  EXPECT_EQ(first_invalid_utf8("\xF4\x8F\xBF\xBF"), std::nullopt);        // U+10FFFF, the last
}

TEST(Utf8, EachIllFormedSequenceIsFoundAtItsFirstByte) {
  EXPECT_EQ(first_invalid_utf8("caf\xE9"), 3u);               // Latin-1 e-acute: a lead with no tail
  EXPECT_EQ(first_invalid_utf8("caf\xE9!"), 3u);              // ... followed by ASCII
  EXPECT_EQ(first_invalid_utf8("a\x80"), 1u);                 // a lone continuation byte
  EXPECT_EQ(first_invalid_utf8("\xC0\xAF"), 0u);              // overlong '/' (C0, C1 never lead)
  EXPECT_EQ(first_invalid_utf8("\xE0\x80\xAF"), 0u);          // overlong 3-byte form
  EXPECT_EQ(first_invalid_utf8("\xED\xA0\x80"), 0u);          // U+D800, a surrogate
  EXPECT_EQ(first_invalid_utf8("\xF4\x90\x80\x80"), 0u);      // U+110000, past the last
  EXPECT_EQ(first_invalid_utf8("\xF5\x80\x80\x80"), 0u);      // F5..FF never lead
  EXPECT_EQ(first_invalid_utf8("ok \xF0\x9F\x98"), 3u);       // a 4-byte sequence cut short
}

TEST(Utf8, JsonTextReplacesWhatItCannotWrite) {
  // nlohmann's dump() throws type_error 316 on invalid UTF-8 (coda run --out aborted with exit
  // 134 on a Latin-1 arch name); dump_json writes U+FFFD (EF BF BD) in its place.
  const nlohmann::json j = {{"name", std::string("caf\xE9")}};
  EXPECT_THROW((void)j.dump(), nlohmann::json::type_error);
  EXPECT_EQ(dump_json(j), "{\"name\":\"caf\xEF\xBF\xBD\"}");
}

TEST(Utf8, AYamlStringThatIsNotUtf8IsALocatedError) {
  Diagnostics diags;
  const auto doc = YamlDocument::parse("name: \"caf\xE9\"\n", "latin1.yaml", diags);
  ASSERT_TRUE(doc) << diags.format_all();
  std::string name;
  EXPECT_FALSE(doc->root().required("name", name, diags));
  EXPECT_NE(diags.format_all().find("latin1.yaml:1:7: error: name: not UTF-8 text: byte 4 (0xE9) "
                                    "starts no UTF-8 character"),
            std::string::npos)
      << diags.format_all();
}

}  // namespace
}  // namespace coda
