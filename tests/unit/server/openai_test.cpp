// OpenAI JSON ↔ the shared generation types: request mapping (compat §2.1, §2.2, §2.5) and the
// response shapes the fixture model cannot produce end to end (thinking, tool calls, errors
// after a stream began).
#include <gtest/gtest.h>

#include "server/api/openai_request.h"
#include "server/api/openai_response.h"
#include "server/api/openai_responses.h"
#include "server/http/error_reply.h"
#include "server/http/exchange.h"
#include "tests/support/http_status.h"

using namespace vkllm;
using api::parse_openai_body;
using J = nlohmann::ordered_json;

namespace {

api::OpenAiRequest chat(const std::string& body) {
  return api::parse_chat_completion_request(parse_openai_body(body));
}

using vkllm::test::status_of;

}  // namespace

TEST(OpenAiRequest, ChatMessagesPartsImagesAndToolCalls) {
  const auto r = chat(R"({"model":"m","messages":[
    {"role":"Developer","content":"sys"},
    {"role":"user","content":[{"type":"text","text":"look"},
                              {"type":"image_url","image_url":{"url":"data:image/png;base64,aGk="}}]},
    {"role":"assistant","content":null,"reasoning":"hmm","tool_calls":[
      {"id":"call_1","type":"function","function":{"name":"get","arguments":"{\"z\":1,\"a\":[2]}"}}]},
    {"role":"tool","tool_call_id":"call_1","content":"42"}]})")
                     .request;
  const auto& m = r.chat.messages;
  ASSERT_EQ(m.size(), 5u);  // each part is a message of its own
  EXPECT_EQ(m[0].role, "system");
  EXPECT_EQ(m[1].content, "look");
  EXPECT_EQ(m[2].role, "user");
  ASSERT_EQ(m[2].images.size(), 1u);
  EXPECT_EQ(m[2].images[0], "hi");
  EXPECT_EQ(m[3].thinking, "hmm");
  ASSERT_EQ(m[3].tool_calls.size(), 1u);
  EXPECT_EQ(m[3].tool_calls[0].arguments.dump(), R"({"z":1,"a":[2]})");  // order kept
  EXPECT_EQ(m[4].tool_name, "get");  // looked up by tool_call_id
  EXPECT_EQ(m[4].tool_call_id, "call_1");
}

TEST(OpenAiRequest, SamplingFieldsAndOllamaOptions) {
  auto r = chat(R"({"model":"m","messages":[{"role":"user","content":"x"}]})").request;
  EXPECT_EQ(r.options["temperature"], 1.0);  // OpenAI's defaults, not the model's
  EXPECT_EQ(r.options["top_p"], 1.0);
  r = chat(R"({"model":"m","messages":[{"role":"user","content":"x"}],"max_tokens":5,
              "max_completion_tokens":7,"seed":3,"presence_penalty":0.5,"stop":["a",1,"b"],
              "options":{"num_ctx":64,"temperature":0.2,"num_predict":99,"top_k":3}})")
          .request;
  EXPECT_EQ(r.options["num_ctx"], 64);
  EXPECT_EQ(r.options["top_k"], 3);
  EXPECT_DOUBLE_EQ(r.options["temperature"].get<double>(), 0.2);  // options fill what is absent
  EXPECT_EQ(r.options["num_predict"], 7);                         // explicit fields win
  EXPECT_EQ(r.options["seed"], 3);
  EXPECT_EQ(r.options["stop"], J::parse(R"(["a","b"])"));  // non-strings dropped
  r = chat(R"({"model":"m","messages":[{"role":"user","content":"x"}],"temperature":0,
              "options":{"temperature":0.7}})")
          .request;
  EXPECT_EQ(r.options["temperature"], 0);
}

TEST(OpenAiRequest, FormatToolsThinkingLogprobs) {
  auto r = chat(R"({"model":"m","messages":[{"role":"user","content":"x"}],
    "response_format":{"type":"json_schema","json_schema":{"schema":{"type":"object","properties":{"z":{},"a":{}}}}},
    "tools":[{"type":"function","function":{"name":"a"}},{"type":"function","function":{"name":"b"}}],
    "tool_choice":{"type":"function","function":{"name":"b"}},
    "reasoning_effort":"minimal","logprobs":true,"top_logprobs":3})")
               .request;
  // The client's property order is the order the model generates them in.
  EXPECT_EQ(r.format.dump(), R"({"type":"object","properties":{"z":{},"a":{}}})");
  ASSERT_EQ(r.chat.tools.size(), 1u);
  EXPECT_EQ(r.chat.tools[0]["function"]["name"], "b");
  EXPECT_TRUE(r.chat.think.set && r.chat.think.enabled);
  EXPECT_EQ(r.chat.think.level, "low");
  EXPECT_TRUE(r.logprobs);
  EXPECT_EQ(r.top_logprobs, 3);
  r = chat(R"({"model":"m","messages":[{"role":"user","content":"x"}],"tool_choice":"none",
    "tools":[{"type":"function","function":{"name":"a"}}],"reasoning":{"effort":"none"},
    "response_format":{"type":"json_object"}})")
          .request;
  EXPECT_TRUE(r.chat.tools.is_null());
  EXPECT_TRUE(r.chat.think.set);
  EXPECT_FALSE(r.chat.think.enabled);
  EXPECT_EQ(r.format, "json");
  r = chat(R"({"model":"m","messages":[{"role":"user","content":"x"}],"reasoning_effort":"xhigh"})")
          .request;
  EXPECT_EQ(r.chat.think.level, "max");
  r = chat(R"({"model":"m","messages":[{"role":"user","content":"x"}],"reasoning_effort":"odd"})")
          .request;
  EXPECT_EQ(r.chat.think.level, "medium");  // unknown levels: the default (Ollama v0.40)
}

TEST(OpenAiRequest, BadInputIs400Or404) {
  auto bad = [](const std::string& body) { return status_of([&] { chat(body); }); };
  EXPECT_EQ(bad(R"({"model":"m","messages":[]})"), 400u);
  EXPECT_EQ(bad(R"({"messages":[{"role":"user","content":"x"}]})"), 400u);
  EXPECT_EQ(bad(R"({"model":"m","messages":[{"role":"user","content":null}]})"), 400u);
  EXPECT_EQ(bad(R"({"model":"m","messages":[{"role":"user","content":5}]})"), 400u);
  EXPECT_EQ(bad(R"({"model":"m","messages":[{"role":"user","content":[{"type":"video"}]}]})"),
            400u);
  EXPECT_EQ(
      bad(R"({"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":"ftp://x"}]}]})"),
      400u);
  EXPECT_EQ(bad(R"({"model":"m","messages":[{"role":"user","content":"x"}],"max_tokens":"5"})"),
            400u);
  EXPECT_EQ(bad(R"({"model":"m","messages":[{"role":"user","content":"x"}],"top_logprobs":21})"),
            400u);
  EXPECT_EQ(bad(R"({"model":"m","messages":[{"role":"user","content":"x"}],"options":[]})"), 400u);
  EXPECT_EQ(bad(R"({"model":"a b","messages":[{"role":"user","content":"x"}]})"), 404u);
  EXPECT_EQ(status_of([] { parse_openai_body("[1]"); }), 400u);
  EXPECT_EQ(status_of([] { parse_openai_body(""); }), 400u);
}

TEST(OpenAiRequest, Completions) {
  auto r = api::parse_completion_request(parse_openai_body(
      R"({"model":"m","prompt":"Once","suffix":"end","top_p":0,"logprobs":2,"stop":"x","stream":true})"));
  EXPECT_EQ(r.request.kind, requests::GenerationRequest::Kind::generate);
  EXPECT_EQ(r.request.generate.prompt, "Once");
  EXPECT_EQ(r.request.generate.suffix, "end");
  EXPECT_EQ(r.request.options["top_p"], 1.0);  // 0 means absent here
  EXPECT_TRUE(r.request.logprobs);
  EXPECT_EQ(r.request.top_logprobs, 2);
  EXPECT_TRUE(r.stream);
  EXPECT_EQ(status_of([] {
              api::parse_completion_request(
                  parse_openai_body(R"({"model":"m","prompt":"x","stop":["a",1]})"));
            }),
            400u);
}

TEST(OpenAiRequest, ResponsesItemsAndTools) {
  const auto r = api::parse_responses_request(parse_openai_body(R"({"model":"m",
    "instructions":"be brief",
    "input":[{"role":"user","content":[{"type":"input_text","text":"a"},{"type":"input_text","text":"b"}]},
             {"type":"reasoning","encrypted_content":"thought"},
             {"type":"function_call","call_id":"c1","name":"ns.f","arguments":"{\"q\":1}"},
             {"type":"function_call","call_id":"c2","name":"g","arguments":"{}"},
             {"type":"function_call_output","call_id":"c2","output":"done"}],
    "tools":[{"type":"function","name":"g","parameters":{"type":"object"}},
             {"type":"namespace","name":"ns","tools":[{"type":"function","name":"f"}]},
             {"type":"web_search"}],
    "max_output_tokens":9,"reasoning":{"effort":"high"},
    "text":{"format":{"type":"json_schema","name":"x","schema":{"type":"object"}}}})"));
  const auto& m = r.request.chat.messages;
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(m[0].role, "system");
  EXPECT_EQ(m[1].content, "ab");
  EXPECT_EQ(m[2].role, "assistant");
  EXPECT_EQ(m[2].thinking, "thought");
  ASSERT_EQ(m[2].tool_calls.size(), 2u);  // consecutive calls are one assistant turn
  EXPECT_EQ(m[2].tool_calls[1].index, 1);
  EXPECT_EQ(m[3].role, "tool");
  EXPECT_EQ(m[3].tool_name, "g");
  const auto& tools = r.request.chat.tools;
  ASSERT_EQ(tools.size(), 2u);
  EXPECT_EQ(tools[0]["function"]["name"], "g");
  EXPECT_EQ(tools[1]["function"]["name"], "ns.f");
  EXPECT_EQ(r.request.options["num_predict"], 9);
  EXPECT_EQ(r.request.chat.think.level, "high");
  EXPECT_EQ(r.request.format, J::parse(R"({"type":"object"})"));
  EXPECT_EQ(r.echo["max_output_tokens"], 9);
  EXPECT_EQ(r.echo["instructions"], "be brief");
}

TEST(OpenAiResponse, ChatDeltasSplitThinkingAndCarryWholeToolCalls) {
  const auto meta = api::openai_meta("chatcmpl-", "m");
  requests::GenerationChunk c;
  c.thinking = "let me see";
  c.content = "ok";
  prompt::ToolCall call;
  call.name = "get";
  call.arguments = J::parse(R"({"b":1,"a":2})");
  c.tool_calls.push_back(call);
  bool first = true;
  const auto chunks = api::chat_delta_chunks(meta, c, first);
  ASSERT_EQ(chunks.size(), 2u);
  EXPECT_FALSE(first);
  const auto& d0 = chunks[0]["choices"][0]["delta"];
  EXPECT_EQ(d0["role"], "assistant");
  EXPECT_EQ(d0["reasoning"], "let me see");
  EXPECT_FALSE(d0.contains("content"));
  const auto& d1 = chunks[1]["choices"][0]["delta"];
  EXPECT_FALSE(d1.contains("role"));
  EXPECT_EQ(d1["content"], "ok");
  const auto& tc = d1["tool_calls"][0];
  EXPECT_EQ(tc["type"], "function");
  EXPECT_EQ(tc["function"]["arguments"], R"({"b":1,"a":2})");
  EXPECT_EQ(tc["id"].get<std::string>().rfind("call_", 0), 0u);

  requests::GenerationChunk total;
  total.content = "x";
  total.tool_calls.push_back(call);
  total.done = true;
  total.done_reason = "stop";
  total.prompt_eval_count = 5;
  total.eval_count = 2;
  const auto full = api::chat_completion_json(meta, total);
  EXPECT_EQ(full["choices"][0]["finish_reason"], "tool_calls");
  EXPECT_EQ(full["usage"]["total_tokens"], 7);
  total.done_reason = "length";
  EXPECT_EQ(api::openai_finish_reason(total, true), "length");
}

namespace {

// The JSON objects of "data: {...}" events, and whether the stream ended with [DONE].
std::vector<J> sse_objects(const std::string& text, bool& done) {
  std::vector<J> out;
  done = false;
  size_t at = 0;
  while ((at = text.find("data: ", at)) != std::string::npos) {
    const size_t end = text.find("\n\n", at);
    const std::string payload = text.substr(at + 6, end - at - 6);
    if (payload == "[DONE]") {
      done = true;
    } else {
      out.push_back(J::parse(payload));
    }
    at = end;
  }
  return out;
}

}  // namespace

TEST(OpenAiResponse, ChatStreamSendsTheRoleOnceAndFinishesWithToolCallsUsageAndDone) {
  api::ChatCompletionEvents events(api::openai_meta("chatcmpl-", "m"), /*usage=*/true);
  requests::GenerationChunk a;
  a.content = "Hel";
  requests::GenerationChunk b;
  b.content = "lo";
  prompt::ToolCall call;
  call.name = "get";
  call.arguments = J::object();
  b.tool_calls.push_back(call);
  requests::GenerationChunk last;
  last.done = true;
  last.done_reason = "stop";
  last.prompt_eval_count = 3;
  last.eval_count = 2;
  bool done = false;
  const auto first = sse_objects(events.next(a), done);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0]["choices"][0]["delta"]["role"], "assistant");
  EXPECT_FALSE(done);
  const auto second = sse_objects(events.next(b), done);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_FALSE(second[0]["choices"][0]["delta"].contains("role"));
  const auto end = sse_objects(events.next(last), done);
  EXPECT_TRUE(done);
  ASSERT_EQ(end.size(), 2u);
  EXPECT_EQ(end[0]["choices"][0]["finish_reason"], "tool_calls");  // a call came earlier
  EXPECT_EQ(end[1]["usage"]["total_tokens"], 5);
  EXPECT_EQ(end[0]["id"], first[0]["id"]);

  // A stream that ends before any text still opens with the role; no usage unless asked.
  api::ChatCompletionEvents quiet(api::openai_meta("chatcmpl-", "m"), false);
  const auto only = sse_objects(quiet.next(last), done);
  EXPECT_TRUE(done);
  ASSERT_EQ(only.size(), 2u);
  EXPECT_EQ(only[0]["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(only[1]["choices"][0]["finish_reason"], "stop");
}

TEST(OpenAiResponse, CompletionStreamSendsTextThenFinishThenUsageAndDone) {
  api::CompletionEvents events(api::openai_meta("cmpl-", "m"), /*usage=*/true);
  requests::GenerationChunk a;
  a.content = "text";
  requests::GenerationChunk last;
  last.done = true;
  last.done_reason = "length";
  last.prompt_eval_count = 1;
  last.eval_count = 4;
  bool done = false;
  const auto first = sse_objects(events.next(a), done);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0]["choices"][0]["text"], "text");
  EXPECT_TRUE(first[0]["choices"][0]["finish_reason"].is_null());
  const auto end = sse_objects(events.next(last), done);
  EXPECT_TRUE(done);
  ASSERT_EQ(end.size(), 2u);
  EXPECT_EQ(end[0]["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(end[1]["usage"]["total_tokens"], 5);
}

TEST(OpenAiResponse, ErrorEnvelopeAndSseEvent) {
  EXPECT_EQ(
      http::error_json(http::ErrorShape::openai, http::StatusError(404, "model 'x' not found"))
          .dump(),
      R"({"error":{"message":"model 'x' not found","type":"not_found_error","param":null,"code":null}})");
  EXPECT_EQ(http::openai_error_type(400), "invalid_request_error");
  EXPECT_EQ(http::openai_error_type(503), "api_error");
  EXPECT_EQ(http::stream_error(http::ErrorShape::openai, http::StatusError(500, "device lost")),
            "data: {\"error\":{\"message\":\"device lost\",\"type\":\"api_error\",\"param\":null,"
            "\"code\":null}}\n\n");
}

TEST(OpenAiResponses, ThinkingThenToolCallEvents) {
  api::ResponsesStream rs(api::openai_meta("resp_", "m"), J::object());
  std::vector<std::string> types;
  auto take = [&](const std::vector<api::ResponsesStream::Event>& evs) {
    for (const auto& e : evs) {
      EXPECT_EQ(e.data["sequence_number"], static_cast<int64_t>(types.size()));
      EXPECT_EQ(e.data["type"], e.type);
      EXPECT_EQ(e.sse().rfind("event: " + e.type + "\ndata: {", 0), 0u);
      types.push_back(e.type);
    }
  };
  take(rs.start());
  requests::GenerationChunk a;
  a.thinking = "hmm";
  take(rs.feed(a));
  requests::GenerationChunk b;
  b.content = "\n";  // whitespace before a tool call makes no message item
  take(rs.feed(b));
  requests::GenerationChunk c;
  prompt::ToolCall call;
  call.name = "get";
  call.arguments = J::parse(R"({"q":1})");
  c.tool_calls.push_back(call);
  take(rs.feed(c));
  requests::GenerationChunk done;
  done.done = true;
  done.prompt_eval_count = 3;
  done.eval_count = 4;
  take(rs.finish(done));
  const std::vector<std::string> want = {"response.created",
                                         "response.in_progress",
                                         "response.output_item.added",
                                         "response.reasoning_summary_text.delta",
                                         "response.reasoning_summary_text.done",
                                         "response.output_item.done",
                                         "response.output_item.added",
                                         "response.function_call_arguments.delta",
                                         "response.function_call_arguments.done",
                                         "response.output_item.done",
                                         "response.completed"};
  EXPECT_EQ(types, want);
  const J r = rs.response();
  EXPECT_EQ(r["status"], "completed");
  ASSERT_EQ(r["output"].size(), 2u);
  EXPECT_EQ(r["output"][0]["type"], "reasoning");
  EXPECT_EQ(r["output"][0]["summary"][0]["text"], "hmm");
  EXPECT_EQ(r["output"][1]["type"], "function_call");
  EXPECT_EQ(r["output"][1]["arguments"], R"({"q":1})");
  EXPECT_EQ(r["output"][1]["status"], "completed");
  EXPECT_EQ(r["usage"]["total_tokens"], 7);
  const auto err = rs.error(http::StatusError(500, "boom"));
  EXPECT_EQ(err.type, "error");
  EXPECT_EQ(err.data["error"]["type"], "api_error");  // SDKs raise on an `error` key
  EXPECT_EQ(err.data["message"], "boom");
}
