#include "server/api/json_request.h"

#include <gtest/gtest.h>

#include "server/http/exchange.h"
#include "tests/support/http_status.h"

using namespace vkllm::api;
using vkllm::http::StatusError;

namespace {

using vkllm::test::status_of;

TEST(JsonRequest, EmptyBodyIsMissingRequestBody) {
  for (const char* body : {"", "  \n"}) {
    try {
      parse_json_object(body);
      FAIL() << "no error for empty body";
    } catch (const StatusError& e) {
      EXPECT_EQ(e.status(), 400u);
      EXPECT_STREQ(e.what(), "missing request body");
    }
  }
}

TEST(JsonRequest, MalformedOrNonObjectJsonIs400) {
  for (const char* body : {"{", "{\"model\":}", "nope", "[1,2]", "\"str\"", "{\"a\":1} trailing"}) {
    EXPECT_EQ(status_of([&] { parse_json_object(body); }), 400u) << body;
  }
  EXPECT_EQ(status_of([] { parse_json_object("{\"model\":\"x\"}"); }), 0u);
}

TEST(JsonRequest, FieldsMatchCaseInsensitivelyExactFirst) {
  const auto j = parse_json_object(R"({"Model":"a","STREAM":false,"name":"n","model":"b"})");
  EXPECT_EQ(string_field(j, "model"), "b");
  EXPECT_EQ(bool_field(j, "stream"), false);
  const auto k = parse_json_object(R"({"Model":"a"})");
  EXPECT_EQ(string_field(k, "model"), "a");
  EXPECT_EQ(find_field(k, "missing"), nullptr);
}

TEST(JsonRequest, WrongTypesAre400AndNullIsAbsent) {
  const auto j = parse_json_object(R"({"model":5,"stream":"yes","insecure":null})");
  EXPECT_EQ(status_of([&] { string_field(j, "model"); }), 400u);
  EXPECT_EQ(status_of([&] { bool_field(j, "stream"); }), 400u);
  EXPECT_EQ(bool_field(j, "insecure"), std::nullopt);
}

TEST(JsonRequest, ModelFallsBackToLegacyName) {
  EXPECT_EQ(model_field(parse_json_object(R"({"name":"old"})")), "old");
  EXPECT_EQ(model_field(parse_json_object(R"({"name":"old","model":"new"})")), "new");
  EXPECT_EQ(model_field(parse_json_object(R"({"name":"old","model":""})")), "old");
  EXPECT_EQ(model_field(parse_json_object(R"({})")), "");
}

}  // namespace

namespace {

TEST(JsonRequest, DeepNestingIs400NotAStackOverflow) {
  // 60,000 levels inside a field, as in the /api/show options crash.
  const std::string deep =
      "{\"model\":\"m\",\"options\":" + std::string(60000, '[') + std::string(60000, ']') + "}";
  try {
    parse_json_object(deep);
    FAIL() << "accepted 60,000 levels";
  } catch (const StatusError& e) {
    EXPECT_EQ(e.status(), 400u);
    EXPECT_NE(std::string(e.what()).find("nested too deeply"), std::string::npos) << e.what();
  }
  // Deep but reasonable documents still parse.
  const std::string ok = "{\"a\":" + std::string(100, '[') + "1" + std::string(100, ']') + "}";
  EXPECT_TRUE(parse_json_object(ok).contains("a"));
}

}  // namespace
