// Anthropic Messages JSON ↔ the shared generation types: request mapping (system, blocks, tool
// results, tools, tool_choice, thinking, sampling fields, errors) and the response shapes the
// fixture model cannot produce end to end (thinking then tool_use blocks, the streamed event
// sequence, stop reasons, errors in Anthropic's shape).
#include <gtest/gtest.h>

#include "server/api/anthropic_request.h"
#include "server/api/anthropic_response.h"
#include "server/api/openai_request.h"
#include "server/http/error_reply.h"
#include "tests/support/http_status.h"

using namespace vkllm;
using J = nlohmann::ordered_json;
using vkllm::test::status_of;

namespace {

api::AnthropicRequest messages(const std::string& body) {
  return api::parse_messages_request(api::parse_openai_body(body));
}

// The SSE text as (event name, data) pairs; every event's name equals its data's type.
std::vector<std::pair<std::string, J>> events_of(const std::string& sse) {
  std::vector<std::pair<std::string, J>> out;
  size_t at = 0;
  while (at < sse.size()) {
    const size_t end = sse.find("\n\n", at);
    EXPECT_NE(end, std::string::npos);
    const std::string e = sse.substr(at, end - at);
    const size_t nl = e.find('\n');
    EXPECT_EQ(e.rfind("event: ", 0), 0u);
    EXPECT_EQ(e.compare(nl + 1, 6, "data: "), 0);
    J data = J::parse(e.substr(nl + 7));
    EXPECT_EQ(data["type"], e.substr(7, nl - 7));
    out.emplace_back(e.substr(7, nl - 7), std::move(data));
    at = end + 2;
  }
  return out;
}

}  // namespace

TEST(AnthropicRequest, SystemBlocksToolUseAndToolResults) {
  const auto r = messages(R"({"model":"m","max_tokens":64,
    "system":[{"type":"text","text":"You are terse."},{"type":"text","text":"Be kind.","cache_control":{"type":"ephemeral"}}],
    "messages":[
      {"role":"user","content":[{"type":"text","text":"look"},
        {"type":"image","source":{"type":"base64","media_type":"image/png","data":"aGk="}}]},
      {"role":"assistant","content":[{"type":"thinking","thinking":"hmm","signature":"s"},
        {"type":"text","text":"Checking."},
        {"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"z":1,"a":"Paris"}}]},
      {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"sunny"}]},
        {"type":"text","text":"and tomorrow?"}]}],
    "tools":[{"name":"get_weather","description":"Weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}}}}],
    "temperature":0.5,"top_p":0.9,"top_k":20,"stop_sequences":["END"],"metadata":{"user_id":"u"},
    "stream":true})");
  EXPECT_TRUE(r.stream);
  const auto& req = r.request;
  EXPECT_EQ(req.options["num_predict"], 64);
  EXPECT_EQ(req.options["temperature"], 0.5);
  EXPECT_EQ(req.options["top_k"], 20);
  EXPECT_EQ(req.options["stop"], J::array({"END"}));
  EXPECT_EQ(r.stop_sequences, std::vector<std::string>{"END"});
  const auto& m = req.chat.messages;
  ASSERT_EQ(m.size(), 5u);
  EXPECT_EQ(m[0].role, "system");
  EXPECT_EQ(m[0].content, "You are terse.\nBe kind.");
  EXPECT_EQ(m[1].content, "look");
  EXPECT_EQ(m[1].images, std::vector<std::string>{"hi"});
  EXPECT_EQ(m[2].role, "assistant");
  EXPECT_EQ(m[2].thinking, "hmm");
  EXPECT_EQ(m[2].content, "Checking.");
  ASSERT_EQ(m[2].tool_calls.size(), 1u);
  EXPECT_EQ(m[2].tool_calls[0].arguments.dump(), R"({"z":1,"a":"Paris"})");  // order kept
  EXPECT_EQ(m[3].role, "tool");  // the tool result comes before the user's text
  EXPECT_EQ(m[3].tool_call_id, "toolu_1");
  EXPECT_EQ(m[3].tool_name, "get_weather");
  EXPECT_EQ(m[3].content, "sunny");
  EXPECT_EQ(m[4].content, "and tomorrow?");
  ASSERT_EQ(req.chat.tools.size(), 1u);
  EXPECT_EQ(req.chat.tools[0]["type"], "function");
  EXPECT_EQ(req.chat.tools[0]["function"]["name"], "get_weather");
  EXPECT_EQ(req.chat.tools[0]["function"]["parameters"]["type"], "object");
  EXPECT_TRUE(req.think_if_capable);
  EXPECT_FALSE(req.chat.think.set);
}

TEST(AnthropicRequest, ToolChoiceAndThinking) {
  const std::string tools =
      R"("tools":[{"name":"a","input_schema":{"type":"object"}},{"name":"b","input_schema":{"type":"object"}}])";
  auto r = messages(R"({"model":"m","max_tokens":8,"messages":[{"role":"user","content":"x"}],)" +
                    tools + R"(,"tool_choice":{"type":"none"}})");
  EXPECT_TRUE(r.request.chat.tools.is_null());
  r = messages(R"({"model":"m","max_tokens":8,"messages":[{"role":"user","content":"x"}],)" +
               tools + R"(,"tool_choice":{"type":"tool","name":"b"}})");
  ASSERT_EQ(r.request.chat.tools.size(), 1u);
  EXPECT_EQ(r.request.chat.tools[0]["function"]["name"], "b");
  EXPECT_TRUE(r.tool_required);
  r = messages(R"({"model":"m","max_tokens":8,"messages":[{"role":"user","content":"x"}],)" +
               tools + R"(,"tool_choice":{"type":"any"}})");
  EXPECT_EQ(r.request.chat.tools.size(), 2u);
  EXPECT_TRUE(r.tool_required);
  r = messages(R"({"model":"m","max_tokens":8000,"messages":[{"role":"user","content":"x"}],
    "thinking":{"type":"enabled","budget_tokens":2048}})");
  EXPECT_TRUE(r.request.chat.think.set && r.request.chat.think.enabled);
  EXPECT_EQ(r.request.chat.think.level, "low");
  r = messages(R"({"model":"m","max_tokens":8,"messages":[{"role":"user","content":"x"}],
    "thinking":{"type":"disabled"}})");
  EXPECT_TRUE(r.request.chat.think.set);
  EXPECT_FALSE(r.request.chat.think.enabled);
  r = messages(R"({"model":"m","max_tokens":8,"messages":[{"role":"user","content":"x"}],
    "output_config":{"effort":"max"}})");
  EXPECT_EQ(r.request.chat.think.level, "max");
  EXPECT_EQ(api::think_level_for_budget(1024), "low");
  EXPECT_EQ(api::think_level_for_budget(8192), "medium");
  EXPECT_EQ(api::think_level_for_budget(32000), "high");
  // count_tokens needs no max_tokens.
  const auto c = api::parse_count_tokens_request(
      api::parse_openai_body(R"({"model":"m","messages":[{"role":"user","content":"x"}]})"));
  EXPECT_EQ(c.request.chat.messages.size(), 1u);
}

TEST(AnthropicRequest, BadInputIs400UnknownModelNameIs404) {
  auto bad = [](const std::string& body) { return status_of([&] { messages(body); }); };
  EXPECT_EQ(bad(R"({"max_tokens":8,"messages":[{"role":"user","content":"x"}]})"), 400u);
  EXPECT_EQ(bad(R"({"model":"m","messages":[{"role":"user","content":"x"}]})"), 400u);
  EXPECT_EQ(bad(R"({"model":"m","max_tokens":0,"messages":[{"role":"user","content":"x"}]})"),
            400u);
  EXPECT_EQ(bad(R"({"model":"m","max_tokens":8})"), 400u);
  EXPECT_EQ(bad(R"({"model":"m","max_tokens":8,"messages":[]})"), 400u);
  EXPECT_EQ(bad(R"({"model":"m","max_tokens":8,"messages":[{"role":"system","content":"x"}]})"),
            400u);
  EXPECT_EQ(bad(R"({"model":"m","max_tokens":8,"messages":[{"role":"user","content":[
    {"type":"image","source":{"type":"url","url":"https://x/y.png"}}]}]})"),
            400u);
  EXPECT_EQ(bad(R"({"model":"m","max_tokens":8,"messages":[{"role":"user","content":[
    {"type":"document","source":{}}]}]})"),
            400u);
  EXPECT_EQ(bad(R"({"model":"m","max_tokens":8,"messages":[{"role":"user","content":"x"}],
    "tools":[{"type":"web_search_20250305","name":"web_search"}]})"),
            400u);
  EXPECT_EQ(bad(R"({"model":"m","max_tokens":8,"messages":[{"role":"user","content":"x"}],
    "tools":[{"name":"a","input_schema":{}}],"tool_choice":{"type":"tool","name":"zzz"}})"),
            400u);
  EXPECT_EQ(bad(R"({"model":"m","max_tokens":8,"messages":[{"role":"user","content":"x"}],
    "thinking":{"type":"enabled"}})"),
            400u);
  EXPECT_EQ(bad(R"({"model":"m","max_tokens":8,"messages":[{"role":"user","content":"x"}],
    "stop_sequences":"END"})"),
            400u);
  EXPECT_EQ(
      bad(R"({"model":"bad name!","max_tokens":8,"messages":[{"role":"user","content":"x"}]})"),
      404u);
  try {
    messages(R"({"model":"m","messages":[{"role":"user","content":"x"}]})");
  } catch (const http::StatusError& e) {
    EXPECT_EQ(e.message(), "max_tokens: Field required");
  }
}

TEST(AnthropicResponse, MessageWithThinkingTextAndToolUse) {
  const auto meta = api::anthropic_meta("m", {"END"});
  requests::GenerationChunk total;
  total.done = true;
  total.done_reason = "stop";
  total.thinking = "hmm";
  total.content = "Let me check.";
  prompt::ToolCall call;
  call.name = "get_weather";
  call.arguments = J::parse(R"({"city":"Paris"})");
  total.tool_calls.push_back(call);
  total.prompt_eval_count = 7;
  total.prompt_cached_count = 20;
  total.eval_count = 9;
  const J j = api::anthropic_message_json(meta, total);
  EXPECT_EQ(j["id"].get<std::string>().rfind("msg_", 0), 0u);
  EXPECT_EQ(j["type"], "message");
  EXPECT_EQ(j["role"], "assistant");
  ASSERT_EQ(j["content"].size(), 3u);
  EXPECT_EQ(j["content"][0]["type"], "thinking");
  EXPECT_EQ(j["content"][0]["thinking"], "hmm");
  EXPECT_EQ(j["content"][1], J::parse(R"({"type":"text","text":"Let me check."})"));
  EXPECT_EQ(j["content"][2]["type"], "tool_use");
  EXPECT_EQ(j["content"][2]["id"].get<std::string>().rfind("toolu_", 0), 0u);
  EXPECT_EQ(j["content"][2]["input"], J::parse(R"({"city":"Paris"})"));
  EXPECT_EQ(j["stop_reason"], "tool_use");
  EXPECT_TRUE(j["stop_sequence"].is_null());
  EXPECT_EQ(j["usage"], J::parse(R"({"input_tokens":7,"cache_creation_input_tokens":0,
    "cache_read_input_tokens":20,"output_tokens":9})"));
}

TEST(AnthropicResponse, StopReasons) {
  const auto meta = api::anthropic_meta("m", {"END"});
  requests::GenerationChunk done;
  done.done = true;
  done.done_reason = "length";
  EXPECT_EQ(api::anthropic_stop_json(meta, done, false)["stop_reason"], "max_tokens");
  done.done_reason = "stop";
  done.stop_sequence = "END";
  EXPECT_EQ(api::anthropic_stop_json(meta, done, false),
            J::parse(R"({"stop_reason":"stop_sequence","stop_sequence":"END"})"));
  done.stop_sequence = "<|eot_id|>";  // a template's stop ends the turn
  EXPECT_EQ(api::anthropic_stop_json(meta, done, false),
            J::parse(R"({"stop_reason":"end_turn","stop_sequence":null})"));
}

TEST(AnthropicResponse, StreamedEventSequence) {
  api::AnthropicEvents events(api::anthropic_meta("m", {}));
  requests::GenerationChunk a, b, c, d, done;
  a.thinking = "let me ";
  b.thinking = "see";
  c.content = "It is";
  prompt::ToolCall call;
  call.name = "get_weather";
  call.arguments = J::parse(R"({"city":"Paris"})");
  d.tool_calls.push_back(call);
  done.done = true;
  done.done_reason = "stop";
  done.prompt_eval_count = 11;
  done.prompt_cached_count = 4;
  done.eval_count = 5;
  std::string sse;
  for (auto* chunk : {&a, &b, &c, &d, &done}) sse += events.next(*chunk);
  const auto ev = events_of(sse);
  std::vector<std::string> names;
  for (const auto& [n, data] : ev) names.push_back(n);
  const std::vector<std::string> want{"message_start",       "ping",
                                      "content_block_start", "content_block_delta",
                                      "content_block_delta", "content_block_stop",
                                      "content_block_start", "content_block_delta",
                                      "content_block_stop",  "content_block_start",
                                      "content_block_delta", "content_block_stop",
                                      "message_delta",       "message_stop"};
  EXPECT_EQ(names, want);
  EXPECT_EQ(ev[0].second["message"]["content"], J::array());
  EXPECT_EQ(ev[2].second["content_block"]["type"], "thinking");
  EXPECT_EQ(ev[2].second["index"], 0);
  EXPECT_EQ(ev[3].second["delta"], J::parse(R"({"type":"thinking_delta","thinking":"let me "})"));
  EXPECT_EQ(ev[6].second["content_block"], J::parse(R"({"type":"text","text":""})"));
  EXPECT_EQ(ev[6].second["index"], 1);
  EXPECT_EQ(ev[7].second["delta"], J::parse(R"({"type":"text_delta","text":"It is"})"));
  EXPECT_EQ(ev[9].second["content_block"]["type"], "tool_use");
  EXPECT_EQ(ev[9].second["content_block"]["input"], J::object());
  EXPECT_EQ(ev[9].second["index"], 2);
  EXPECT_EQ(ev[10].second["delta"],
            J::parse(R"({"type":"input_json_delta","partial_json":"{\"city\":\"Paris\"}"})"));
  EXPECT_EQ(ev[12].second["delta"]["stop_reason"], "tool_use");
  EXPECT_EQ(ev[12].second["usage"]["input_tokens"], 11);
  EXPECT_EQ(ev[12].second["usage"]["cache_read_input_tokens"], 4);
  EXPECT_EQ(ev[12].second["usage"]["output_tokens"], 5);
}

TEST(AnthropicResponse, ErrorShapes) {
  EXPECT_EQ(
      http::error_json(http::ErrorShape::anthropic, http::StatusError(404, "model 'x' not found")),
      J::parse(R"({"type":"error","error":{"type":"not_found_error",
              "message":"model 'x' not found"}})"));
  EXPECT_EQ(http::anthropic_error_type(400), "invalid_request_error");
  EXPECT_EQ(http::anthropic_error_type(401), "authentication_error");
  EXPECT_EQ(http::anthropic_error_type(503), "overloaded_error");
  EXPECT_EQ(http::anthropic_error_type(500), "api_error");
  EXPECT_EQ(http::stream_error(http::ErrorShape::anthropic, http::StatusError(500, "boom")),
            "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\","
            "\"message\":\"boom\"}}\n\n");
}
