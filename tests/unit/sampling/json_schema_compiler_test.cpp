// The format compiler at the byte level: which texts each format accepts as complete values,
// and the 400 texts for what it does not support.
#include "engine/sampling/json_schema_compiler.h"

#include <gtest/gtest.h>

#include <string>

#include "engine/sampling/grammar_matcher.h"
#include "engine/sampling/token_constraint.h"

namespace vkllm::sampling {
namespace {

using json = nlohmann::ordered_json;

grammar::Grammar compile(const std::string& format) {
  return compile_json_grammar(format == "json" ? json("json") : json::parse(format));
}

bool schema_accepts(const grammar::Grammar& g, std::string_view text) {
  grammar::Matcher m(g);
  return m.advance(text) && m.complete();
}

bool viable_prefix(const grammar::Grammar& g, std::string_view text) {
  grammar::Matcher m(g);
  return m.advance(text);
}

std::string schema_error_of(const std::string& format) {
  try {
    compile(format);
  } catch (const FormatError& e) {
    return e.what();
  }
  return "(compiled)";
}

TEST(JsonFormat, AcceptsAnyObjectAndNothingElse) {
  const auto g = compile("json");
  for (const char* ok : {"{}", "{\"a\":[1,-2.5e3,\"x\\u00e9\\n\",true,false,null,{\"b\":{}}]}",
                         "{\n  \"k\": \"v\",\n  \"n\": [ 0.5 , 3 ]\n}",
                         "{\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\":0}"}) {
    EXPECT_TRUE(schema_accepts(g, ok)) << ok;
  }
  for (const char* bad :
       {"[1]", "\"s\"", "1", "{} ", " {}", "\n{}", "{\"a\":1,}", "{\"a\" 1}", "{'a':1}",
        "{\"a\":01}", "{\"\\ud800\":1}", "{\"\xc3\x28\":1}", "{\"\xed\xa0\x80\":1}", "{\"a\":1}}",
        "{\"a\":tru}", "{\"a\":\"\x01\"}"}) {
    EXPECT_FALSE(schema_accepts(g, bad)) << bad;
  }
  EXPECT_TRUE(viable_prefix(g, "{\"a\":[1,{\"b\":\"c"));
  EXPECT_FALSE(viable_prefix(g, "{\"a\":]"));
}

TEST(JsonFormat, WhitespaceRunsAreBounded) {
  const auto g = compile("json");
  EXPECT_TRUE(schema_accepts(g, "{\n" + std::string(20, ' ') + "}"));
  EXPECT_FALSE(viable_prefix(g, "{\n" + std::string(21, ' ')));
  EXPECT_FALSE(viable_prefix(g, "{  "));
  EXPECT_FALSE(viable_prefix(g, "  {"));
}

TEST(JsonSchema, PropertiesInSchemaOrderAndRequired) {
  const auto g = compile(R"({"type":"object","properties":{"name":{"type":"string"},
      "age":{"type":"integer"}},"required":["name"]})");
  EXPECT_TRUE(schema_accepts(g, R"({"name":"x"})"));
  EXPECT_TRUE(schema_accepts(g, R"({"name":"x","age":3})"));
  EXPECT_TRUE(schema_accepts(g, R"({ "name" : "x" , "age" : -3 })"));
  EXPECT_FALSE(schema_accepts(g, R"({"age":3})"));
  EXPECT_FALSE(schema_accepts(g, R"({"age":3,"name":"x"})"));
  EXPECT_FALSE(schema_accepts(g, R"({"name":"x","extra":1})"));
  EXPECT_FALSE(schema_accepts(g, R"({"name":"x","age":3.5})"));
  EXPECT_FALSE(schema_accepts(g, "{}"));
}

TEST(JsonSchema, OptionalPropertiesMaySkip) {
  const auto g = compile(R"({"properties":{"a":{"type":"null"},"b":{"type":"null"},
      "c":{"type":"null"}}})");
  for (const char* ok :
       {"{}", R"({"b":null})", R"({"a":null,"c":null})", R"({"a":null,"b":null,"c":null})"}) {
    EXPECT_TRUE(schema_accepts(g, ok)) << ok;
  }
  for (const char* bad :
       {R"({,"b":null})", R"({"b":null,})", R"({"a":null"b":null})", R"({"c":null,"a":null})"}) {
    EXPECT_FALSE(schema_accepts(g, bad)) << bad;
  }
}

TEST(JsonSchema, AdditionalProperties) {
  const auto open =
      compile(R"({"properties":{"name":{"type":"string"}},"additionalProperties":true})");
  EXPECT_TRUE(schema_accepts(open, R"({"name":"x","extra":[1,{}]})"));
  EXPECT_TRUE(schema_accepts(open, "{\"nam\":1,\"names\":2,\"\xc3\xa9\":3}"));
  EXPECT_FALSE(schema_accepts(open, R"({"name":"x","name":"y"})"));  // no duplicate of a named key
  EXPECT_FALSE(schema_accepts(open, R"({"name":1})"));
  const auto typed = compile(R"({"properties":{"a":{"type":"string"}},
      "additionalProperties":{"type":"integer"}})");
  EXPECT_TRUE(schema_accepts(typed, R"({"a":"s","b":1,"c":2})"));
  EXPECT_FALSE(schema_accepts(typed, R"({"a":"s","b":"t"})"));
  const auto any = compile(R"({"type":"object"})");
  EXPECT_TRUE(schema_accepts(any, R"({"x":{"y":[null]}})"));
  const auto none = compile(R"({"type":"object","additionalProperties":false})");
  EXPECT_TRUE(schema_accepts(none, "{}"));
  EXPECT_FALSE(schema_accepts(none, R"({"x":1})"));
}

TEST(JsonSchema, PropertyOrderFollowsOrderedInput) {
  const auto g = compile_json_grammar(json::parse(R"({"properties":{"z":{"type":"integer"},
      "a":{"type":"integer"}},"required":["z","a"]})"));
  EXPECT_TRUE(schema_accepts(g, R"({"z":1,"a":2})"));
  EXPECT_FALSE(schema_accepts(g, R"({"a":2,"z":1})"));
}

TEST(JsonSchema, EnumConstAndTypes) {
  const auto g = compile(R"({"enum":["a",1,null,{"x":[1]},true]})");
  for (const char* ok : {"\"a\"", "1", "null", R"({"x":[1]})", "true"})
    EXPECT_TRUE(schema_accepts(g, ok)) << ok;
  for (const char* bad : {"\"b\"", "2", "false", "{}"}) EXPECT_FALSE(schema_accepts(g, bad)) << bad;
  const auto typed = compile(R"({"type":"string","enum":["a",1]})");
  EXPECT_TRUE(schema_accepts(typed, "\"a\""));
  EXPECT_FALSE(schema_accepts(typed, "1"));
  const auto c = compile(R"({"const":"only"})");
  EXPECT_TRUE(schema_accepts(c, "\"only\""));
  EXPECT_FALSE(schema_accepts(c, "\"onl\""));
  const auto nullable = compile(R"({"type":["string","null"]})");
  EXPECT_TRUE(schema_accepts(nullable, "null"));
  EXPECT_TRUE(schema_accepts(nullable, "\"s\""));
  EXPECT_FALSE(schema_accepts(nullable, "1"));
  const auto b = compile(
      R"({"type":"boolean","title":"t","description":"d","default":true,"examples":[true]})");
  EXPECT_TRUE(schema_accepts(b, "false"));
  EXPECT_FALSE(schema_accepts(b, "0"));
}

TEST(JsonSchema, Arrays) {
  const auto g =
      compile(R"({"type":"array","items":{"type":"integer"},"minItems":2,"maxItems":3})");
  EXPECT_TRUE(schema_accepts(g, "[1,2]"));
  EXPECT_TRUE(schema_accepts(g, "[ 1 , 2 , 3 ]"));
  EXPECT_FALSE(schema_accepts(g, "[1]"));
  EXPECT_FALSE(schema_accepts(g, "[1,2,3,4]"));
  EXPECT_FALSE(schema_accepts(g, "[1,\"a\"]"));
  const auto open = compile(R"({"type":"array","items":{"type":"null"}})");
  EXPECT_TRUE(schema_accepts(open, "[]"));
  EXPECT_TRUE(schema_accepts(open, "[null,null,null,null,null]"));
  const auto tuple =
      compile(R"({"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}],
      "items":false})");
  EXPECT_TRUE(schema_accepts(tuple, "[\"a\",1]"));
  EXPECT_TRUE(schema_accepts(tuple, "[\"a\"]"));
  EXPECT_FALSE(schema_accepts(tuple, "[\"a\",1,2]"));
  EXPECT_FALSE(schema_accepts(tuple, "[1]"));
  const auto rest =
      compile(R"({"prefixItems":[{"type":"string"}],"items":{"type":"boolean"},"minItems":1})");
  EXPECT_TRUE(schema_accepts(rest, "[\"a\",true,false]"));
  EXPECT_FALSE(schema_accepts(rest, "[]"));
}

TEST(JsonSchema, AnyOfAndRefs) {
  const auto g = compile(R"({"anyOf":[{"type":"string"},{"type":"object","properties":
      {"a":{"type":"integer"}},"required":["a"]}]})");
  EXPECT_TRUE(schema_accepts(g, "\"s\""));
  EXPECT_TRUE(schema_accepts(g, R"({"a":1})"));
  EXPECT_FALSE(schema_accepts(g, "{}"));
  const auto tree =
      compile(R"({"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},
      "kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["v"]}},
      "$ref":"#/$defs/node"})");
  EXPECT_TRUE(
      schema_accepts(tree, R"({"v":1,"kids":[{"v":2},{"v":3,"kids":[{"v":4,"kids":[]}]}]})"));
  EXPECT_FALSE(schema_accepts(tree, R"({"v":1,"kids":[{"w":2}]})"));
  const auto defs = compile(R"({"definitions":{"d":{"type":"string","format":"date"}},
      "type":"object","properties":{"when":{"$ref":"#/definitions/d"}},"required":["when"]})");
  EXPECT_TRUE(schema_accepts(defs, R"({"when":"2024-02-29"})"));
}

TEST(JsonSchema, StringLengthsCountCharacters) {
  const auto g = compile(R"({"type":"string","minLength":2,"maxLength":3})");
  EXPECT_TRUE(schema_accepts(g, "\"ab\""));
  EXPECT_TRUE(
      schema_accepts(g, "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\""));  // 3 characters, 9 bytes
  EXPECT_TRUE(schema_accepts(g, "\"\\n\\u0041\""));
  EXPECT_FALSE(schema_accepts(g, "\"a\""));
  EXPECT_FALSE(schema_accepts(g, "\"abcd\""));
  // A long bound is cut to 256 characters: still only valid strings.
  const auto longer = compile(R"({"type":"string","maxLength":100000})");
  EXPECT_TRUE(schema_accepts(longer, "\"" + std::string(256, 'x') + "\""));
  EXPECT_FALSE(schema_accepts(longer, "\"" + std::string(257, 'x') + "\""));
}

TEST(JsonSchema, StringFormats) {
  struct Case {
    const char* format;
    std::vector<const char*> ok, bad;
  };
  const Case cases[] = {
      {"date",
       {"2024-02-29", "1999-12-31"},
       {"2024-13-01", "2024-1-01", "2024-00-10", "2024-01-32"}},
      {"time", {"23:59:59Z", "00:00:00.123+05:30"}, {"24:00:00Z", "12:00:00", "12:60:00Z"}},
      {"date-time", {"2024-02-29T12:00:00Z"}, {"2024-02-29 12:00:00Z", "2024-02-29T12:00Z"}},
      {"uuid",
       {"123e4567-e89b-12d3-a456-426614174000"},
       {"123e4567e89b12d3a456426614174000", "g23e4567-e89b-12d3-a456-426614174000"}},
      {"email", {"a.b+c@example.co.uk", "x@y.z"}, {"a@b", "@b.c", "a b@c.d", "a@-b.c"}},
      {"ipv4", {"192.168.0.1", "255.255.255.255", "0.0.0.0"}, {"256.1.1.1", "1.2.3", "01.2.3.4"}},
  };
  for (const Case& c : cases) {
    const auto g = compile(std::string(R"({"type":"string","format":")") + c.format + "\"}");
    for (const char* ok : c.ok)
      EXPECT_TRUE(schema_accepts(g, std::string("\"") + ok + "\"")) << c.format << " " << ok;
    for (const char* bad : c.bad)
      EXPECT_FALSE(schema_accepts(g, std::string("\"") + bad + "\"")) << c.format << " " << bad;
  }
}

TEST(JsonSchema, FormatsWithoutGrammarAreAnnotations) {
  // JSON Schema 2020-12: "format" asserts nothing unless a validator opts in.
  const auto uri = compile(R"({"type":"string","format":"uri"})");
  EXPECT_TRUE(schema_accepts(uri, R"("https://example.com/x")"));
  EXPECT_TRUE(schema_accepts(uri, R"("anything")"));
  const auto sized = compile(R"({"type":"string","format":"email","maxLength":3})");
  EXPECT_TRUE(schema_accepts(sized, R"("abc")"));
  EXPECT_FALSE(schema_accepts(sized, R"("abcd")"));
}

TEST(JsonSchema, PydanticStyleSchema) {
  const auto g = compile_json_grammar(json::parse(R"({"$defs":{"Color":{"enum":["red","green"],
      "title":"Color","type":"string"}},"properties":{"name":{"title":"Name","type":"string"},
      "age":{"anyOf":[{"type":"integer"},{"type":"null"}],"default":null,"title":"Age"},
      "color":{"$ref":"#/$defs/Color"},"tags":{"items":{"type":"string"},"title":"Tags",
      "type":"array"},"homepage":{"format":"uri","maxLength":2083,"minLength":1,"type":"string",
      "title":"Homepage"}},"required":["name","color","tags","homepage"],"title":"Person",
      "type":"object"})"));
  EXPECT_TRUE(schema_accepts(
      g, R"({"name":"Ann","age":null,"color":"red","tags":[],"homepage":"https://a.b"})"));
  EXPECT_TRUE(schema_accepts(g, R"({"name":"Ann","color":"green","tags":["x"],"homepage":"h"})"));
  EXPECT_FALSE(schema_accepts(g, R"({"name":"Ann","color":"blue","tags":[],"homepage":"h"})"));
  EXPECT_FALSE(schema_accepts(g, R"({"name":"Ann","color":"red","tags":[],"homepage":""})"));
}

TEST(JsonSchema, IntegerRangesAreExact) {
  struct Range {
    const char* keywords;
    int64_t lo, hi;
  };
  const Range ranges[] = {
      {R"("minimum":0)", 0, INT64_MAX},
      {R"("minimum":-7,"maximum":123)", -7, 123},
      {R"("minimum":-1050,"maximum":-95)", -1050, -95},
      {R"("exclusiveMinimum":9,"exclusiveMaximum":1000)", 10, 999},
      {R"("maximum":42)", INT64_MIN, 42},
      {R"("minimum":1.5,"maximum":7.5)", 2, 7},
      {R"("minimum":5,"maximum":5)", 5, 5},
  };
  for (const Range& r : ranges) {
    const auto g = compile(std::string(R"({"type":"integer",)") + r.keywords + "}");
    for (int64_t v = -1200; v <= 1200; ++v) {
      ASSERT_EQ(schema_accepts(g, std::to_string(v)), v >= r.lo && v <= r.hi)
          << r.keywords << " " << v;
    }
    EXPECT_FALSE(schema_accepts(g, "007"));
    EXPECT_FALSE(schema_accepts(g, "1.5"));
  }
  EXPECT_TRUE(schema_accepts(compile(R"({"type":"integer"})"), "-9999999999999999"));
}

TEST(JsonSchema, NumberRangesWithIntegralBounds) {
  const auto g = compile(R"({"type":"number","minimum":-3,"maximum":2})");
  for (int k = -500; k <= 500; ++k) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f", k / 100.0);
    const double v = std::stod(buf);
    const std::string text = v < 0 && std::string(buf) == "-0.00" ? "0.00" : buf;
    ASSERT_EQ(schema_accepts(g, text), v >= -3 && v <= 2) << text;
  }
  EXPECT_FALSE(schema_accepts(g, "1e0"));
  const auto nonneg = compile(R"({"type":"number","minimum":0})");
  EXPECT_TRUE(schema_accepts(nonneg, "12345.678"));
  EXPECT_FALSE(schema_accepts(nonneg, "-0.5"));
  EXPECT_TRUE(schema_accepts(compile(R"({"type":"number"})"), "-1.25E+10"));
}

TEST(JsonSchema, Patterns) {
  struct Case {
    const char* pattern;
    std::vector<std::string> ok, bad;  // decoded string values
  };
  const Case cases[] = {
      {R"(^[A-Z]{3}-\d{2,4}$)", {"ABC-12", "XYZ-1234"}, {"AB-12", "ABC-1", "xABC-12"}},
      {R"(^(foo|bar)+$)", {"foo", "barfoo"}, {"", "fob"}},
      {R"(ab+c)", {"abc", "xxabbbc yy", "\"abc\n"}, {"ac", "ab"}},
      {R"(^a.c$)",
       {"abc",
        "a\xc3\xa9"
        "c",
        "a\"c"},
       {"a\nc", "ac"}},
      {R"(^[^a-c]*$)", {"xyz", "\xc3\xa9", "", "\x01"}, {"xaz"}},
      {R"(^\w+@\w+\.com$)", {"me@host.com"}, {"me@host.org", "m e@host.com"}},
      {R"(^["\\]$)", {"\"", "\\"}, {"\\\"", "a"}},
      {R"(^(?:x|y)?z{2}(?<tail>!)?$)", {"zz", "xzz!"}, {"xyzz", "z"}},
      {R"(^\x41\u00e9\t$)", {"A\xc3\xa9\t"}, {"A\xc3\xa9 "}},
  };
  for (const Case& c : cases) {
    const auto g = compile_json_grammar(json{{"type", "string"}, {"pattern", c.pattern}});
    for (const auto& ok : c.ok)
      EXPECT_TRUE(schema_accepts(g, json(ok).dump())) << c.pattern << " " << ok;
    for (const auto& bad : c.bad)
      EXPECT_FALSE(schema_accepts(g, json(bad).dump())) << c.pattern << " " << bad;
  }
  for (const char* bad : {R"((?=a))", R"(\b)", R"((a)\1)", R"(a^b)", R"(^a|b$)", "[\xc3\xa9]",
                          R"(\p{L})", R"(a{1000})", R"((a)", R"([a)"}) {
    std::string err = "(compiled)";
    try {
      compile_json_grammar(json{{"type", "string"}, {"pattern", bad}});
    } catch (const FormatError& e) {
      err = e.what();
    }
    EXPECT_NE(err.find("\"pattern\""), std::string::npos) << bad << ": " << err;
  }
}

TEST(JsonSchema, UnsupportedKeywordsAreNamed) {
  for (const char* kw : {"not", "if", "patternProperties", "propertyNames", "minProperties",
                         "contains", "multipleOf", "dependentRequired"}) {
    const std::string schema = std::string(R"({"type":"string",")") + kw + R"(":"x"})";
    const std::string err = schema_error_of(schema);
    EXPECT_NE(err.find(std::string("\"") + kw + "\""), std::string::npos) << err;
  }
  EXPECT_NE(schema_error_of(R"({"type":"array","uniqueItems":true})").find("uniqueItems"),
            std::string::npos);
  EXPECT_EQ(schema_error_of(R"({"type":"array","uniqueItems":false})"), "(compiled)");

  EXPECT_NE(schema_error_of(R"({"type":"blob"})").find("\"blob\""), std::string::npos);
  EXPECT_NE(schema_error_of(R"({"type":"number","minimum":0.5})").find("minimum"),
            std::string::npos);
}

TEST(JsonSchema, InvalidSchemasAreClearErrors) {
  EXPECT_NE(schema_error_of("\"xml\"").find("expected \"json\" or a valid JSON Schema object"),
            std::string::npos);
  EXPECT_NE(schema_error_of("[1]").find("expected \"json\""), std::string::npos);
  EXPECT_NE(schema_error_of(R"({"$ref":"http://x/y"})").find("local"), std::string::npos);
  EXPECT_NE(schema_error_of(R"({"$ref":"#/$defs/missing"})").find("does not resolve"),
            std::string::npos);
  EXPECT_NE(schema_error_of(R"({"$ref":"#"})").find("allows no value"), std::string::npos);
  EXPECT_NE(schema_error_of(R"({"anyOf":[{"$ref":"#"},{"type":"null"}]})").find("refers to itself"),
            std::string::npos);
  EXPECT_NE(
      schema_error_of(R"({"type":"integer","minimum":5,"maximum":3})").find("allows no value"),
      std::string::npos);
  EXPECT_NE(schema_error_of(R"({"type":"string","minLength":100000})").find("minLength"),
            std::string::npos);
  EXPECT_NE(schema_error_of(R"({"properties":{"a":{}},"required":["b"]})").find("\"b\""),
            std::string::npos);
  EXPECT_NE(schema_error_of(R"({"type":"object","properties":[]})").find("properties"),
            std::string::npos);
  std::string deep = R"({"type":"integer"})";
  for (int i = 0; i < 100; ++i) deep = R"({"type":"array","items":)" + deep + "}";
  EXPECT_NE(schema_error_of(deep).find("deeply"), std::string::npos);
}

}  // namespace
}  // namespace vkllm::sampling
