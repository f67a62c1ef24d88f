// The /api/chat and /api/generate body mapping shared by the routes and `vkllm debug render`.
#include <gtest/gtest.h>

#include "server/api/chat_request.h"
#include "server/http/exchange.h"
#include "tests/support/http_status.h"

using namespace vkllm;
using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

using vkllm::test::status_of;

TEST(ChatRequest, MessageFieldsAsOllamaNamesThem) {
  auto j = ojson::parse(R"({"role":"Assistant","content":"hi","thinking":"t","images":["aGVsbG8="],
    "tool_calls":[{"id":"call_1","function":{"name":"f","arguments":{"z":1,"a":2}}},
                  {"function":{"index":5,"name":"g"}}],
    "tool_name":"tn","tool_call_id":"id1"})");
  prompt::Message m = api::parse_message(j);
  EXPECT_EQ(m.role, "assistant");
  EXPECT_EQ(m.content, "hi");
  EXPECT_EQ(m.thinking, "t");
  EXPECT_EQ(m.images, std::vector<std::string>{"hello"});
  ASSERT_EQ(m.tool_calls.size(), 2u);
  EXPECT_EQ(m.tool_calls[0].id, "call_1");
  EXPECT_EQ(m.tool_calls[0].index, 0);
  EXPECT_EQ(m.tool_calls[0].arguments.dump(), R"({"z":1,"a":2})");  // order kept
  EXPECT_EQ(m.tool_calls[1].index, 5);
  EXPECT_EQ(m.tool_calls[1].arguments.dump(), "{}");
  EXPECT_EQ(m.tool_name, "tn");
  EXPECT_EQ(m.tool_call_id, "id1");
  // Keys match case-insensitively, as Go's encoding/json does; the plain json flavour works too.
  EXPECT_EQ(api::parse_message(json::parse(R"({"ROLE":"user","Content":"x"})")).content, "x");
}

TEST(ChatRequest, BadInputIs400) {
  EXPECT_EQ(status_of([] { api::parse_message(json::parse(R"({"role":"user","content":3})")); }),
            400u);
  EXPECT_EQ(status_of([] { api::parse_message(json::parse(R"({"images":["%%%"]})")); }), 400u);
  EXPECT_EQ(status_of([] { api::parse_message(json::parse(R"({"images":[1]})")); }), 400u);
  EXPECT_EQ(status_of([] {
              api::parse_message(json::parse(R"({"tool_calls":[{"function":{"arguments":"x"}}]})"));
            }),
            400u);
  EXPECT_EQ(status_of([] { api::parse_messages(json::parse(R"({"a":1})")); }), 400u);
  try {
    api::parse_message(json::parse(R"({"role":"user","content":3})"));
  } catch (const http::StatusError& e) {
    EXPECT_STREQ(e.what(),
                 "json: cannot unmarshal number into Go struct field ChatRequest.messages.content "
                 "of type string");
  }
}

TEST(ChatRequest, Base64AsGoDecodesIt) {
  EXPECT_EQ(api::decode_base64("aGVsbG8="), "hello");
  EXPECT_EQ(api::decode_base64("aGVs\r\nbG8="), "hello");
  EXPECT_EQ(api::decode_base64("aGk="), "hi");
  EXPECT_EQ(api::decode_base64("aA=="), "h");
  EXPECT_EQ(api::decode_base64(""), "");
  for (const char* bad : {"aGk", "a===", "aG=k", "aGk=x", "a", "####"}) {
    EXPECT_EQ(status_of([&] { api::decode_base64(bad); }), 400u) << bad;
  }
  try {
    api::decode_base64("aGVsbG8*");
  } catch (const http::StatusError& e) {
    EXPECT_STREQ(e.what(), "illegal base64 data at input byte 7");
  }
}

TEST(ChatRequest, ThinkChatAndGenerateInputs) {
  auto c = api::chat_input(ojson::parse(R"({"messages":[{"role":"user","content":"q"}],
    "tools":[{"type":"function","function":{"name":"f"}}],"think":"high","truncate":false})"));
  EXPECT_EQ(c.messages.size(), 1u);
  EXPECT_EQ(c.tools[0]["function"]["name"], "f");
  EXPECT_TRUE(c.think.set && c.think.enabled);
  EXPECT_EQ(c.think.level, "high");
  EXPECT_FALSE(c.truncate);
  auto t = api::parse_think<json>(nullptr);
  EXPECT_FALSE(t.set);
  json yes = true, no = false;
  EXPECT_EQ(api::parse_think(&yes).level, "medium");
  EXPECT_TRUE(api::parse_think(&no).set);
  EXPECT_FALSE(api::parse_think(&no).enabled);
  json max = "max";
  EXPECT_EQ(api::parse_think(&max).level, "max");
  // Any other level, or a value neither bool nor string, is a 400 with Ollama's text.
  json odd = "extreme", number = 1;
  try {
    api::parse_think(&odd);
    ADD_FAILURE() << "an unknown level was accepted";
  } catch (const http::StatusError& e) {
    EXPECT_EQ(e.status(), 400u);
    EXPECT_EQ(
        e.message(),
        R"(invalid think value: "extreme" (must be "high", "medium", "low", "max", true, or false))");
  }
  try {
    api::parse_think(&number);
    ADD_FAILURE() << "a number was accepted";
  } catch (const http::StatusError& e) {
    EXPECT_EQ(e.message(), "think must be a boolean or string");
  }

  auto g = api::generate_input(json::parse(
      R"({"prompt":"p","suffix":"s","system":"","template":"T","images":["aGk="],"context":[1,2],"think":true,"truncate":false})"));
  EXPECT_EQ(g.prompt, "p");
  EXPECT_EQ(g.suffix, "s");
  EXPECT_FALSE(g.system);  // "" is absent for Ollama's handler
  EXPECT_EQ(g.template_override, "T");
  EXPECT_EQ(g.images, std::vector<std::string>{"hi"});
  EXPECT_TRUE(g.has_context);
  EXPECT_TRUE(g.think.enabled);
  EXPECT_FALSE(g.truncate);
  EXPECT_TRUE(api::generate_input(json::parse(R"({"prompt":"p"})")).truncate);
}
