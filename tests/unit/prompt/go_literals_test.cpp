// The quoting and UTF-8 pieces fmt (%q, %c), encoding/json and the template parser share: each
// checked against what Go's strconv.Quote, utf8.EncodeRune and encoding/json produce.
#include <gtest/gtest.h>

#include "server/prompt/go_template_literals.h"
#include "server/prompt/go_value.h"

namespace vkllm::prompt {
namespace {

TEST(GoLiterals, QuoteEscapesAsStrconvQuote) {
  EXPECT_EQ(go_quote("plain"), "\"plain\"");
  EXPECT_EQ(go_quote("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(go_quote("\a\b\f\n\r\t\v"), "\"\\a\\b\\f\\n\\r\\t\\v\"");
  EXPECT_EQ(go_quote(std::string("\x01\x1f\x7f", 3)), "\"\\x01\\x1f\\x7f\"");
  EXPECT_EQ(go_quote("é"), "\"é\"");  // printable UTF-8 passes through
}

TEST(GoLiterals, Utf8EncodesEveryLengthAndReplacesInvalidRunes) {
  auto enc = [](int64_t r) {
    std::string out;
    append_utf8(out, r);
    return out;
  };
  EXPECT_EQ(enc(0x41), "A");
  EXPECT_EQ(enc(0x7f), "\x7f");
  EXPECT_EQ(enc(0x80), "\xc2\x80");
  EXPECT_EQ(enc(0x7ff), "\xdf\xbf");
  EXPECT_EQ(enc(0x800), "\xe0\xa0\x80");
  EXPECT_EQ(enc(0xffff), "\xef\xbf\xbf");
  EXPECT_EQ(enc(0x10000), "\xf0\x90\x80\x80");
  EXPECT_EQ(enc(0x10ffff), "\xf4\x8f\xbf\xbf");
  const std::string replacement = "\xef\xbf\xbd";
  EXPECT_EQ(enc(0xd800), replacement);  // surrogate
  EXPECT_EQ(enc(0x110000), replacement);
  EXPECT_EQ(enc(-1), replacement);
  // The parser's escapes go through the same encoder.
  std::string unquoted;
  ASSERT_TRUE(go_unquote("\"\\u00e9\\U0001F600\"", unquoted));
  EXPECT_EQ(unquoted, "é\xf0\x9f\x98\x80");
}

TEST(GoLiterals, JsonStringSharesTheShortEscapesAndKeepsItsOwn) {
  EXPECT_EQ(go_json_string("\"\\\b\f\n\r\t"), "\"\\\"\\\\\\b\\f\\n\\r\\t\"");
  EXPECT_EQ(go_json_string(std::string("<&>\x01\x7f", 5)), "\"\\u003c\\u0026\\u003e\\u0001\x7f\"");
  EXPECT_EQ(go_short_escape('a'), nullptr);
  EXPECT_EQ(go_short_escape('\a'), nullptr);  // strconv's own; JSON writes \u0007
}

TEST(GoLiterals, CompoundLayoutPrintsEachPartWithTheGivenPrinter) {
  const Value list = Value::list({Value::integer(1), Value::string("x")});
  const Value map = Value::map({{"b", Value::integer(2)}, {"a", list}});
  const Value st = Value::structure("api.T", {{"Name", Value::string("n")}, {"M", map}});
  EXPECT_EQ(go_sprint_value(st), "{n map[a:[1 x] b:2]}");
  auto bracketed = [](const Value& v) {
    std::string out(1, '<');
    out += go_sprint_value(v);
    out += '>';
    return out;
  };
  EXPECT_EQ(go_sprint_compound(map, bracketed), "map[<a>:<[1 x]> <b>:<2>]");
}

}  // namespace
}  // namespace vkllm::prompt
