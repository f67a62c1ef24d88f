// gpt-oss's Harmony output, parsed as Ollama's harmony parser does (harmony/harmonyparser.go and
// its tests: TestHeaderParsing's headers, TestFunctionConvertToValidChars/ConvertAndAdd's
// names): analysis is thinking, final and commentary without a recipient are content, a
// recipient makes a tool call, unknown channels are content. Every case must also give the same
// result fed token by token, byte by byte and cut at random points.
#include <gtest/gtest.h>

#include "server/prompt/harmony_names.h"
#include "server/prompt/prompt.h"
#include "tests/unit/prompt/output_parser_test_util.h"

using namespace vkllm::prompt;
using namespace vkllm::prompt::testing;

namespace {

ParserConfig harmony(std::vector<std::string> tools = {}, std::string prefill = "") {
  ParserConfig c;
  c.harmony = true;
  c.special_tokens = true;
  c.tool_names = std::move(tools);
  c.harmony_prefill = std::move(prefill);
  return c;
}

void check(const ParserConfig& config, const std::string& text, const Expected& want) {
  SCOPED_TRACE(text);
  expect_result(run_whole(config, text), want);
  expect_streaming_matches(config, text);
}

}  // namespace

TEST(HarmonyParser, AnalysisIsThinkingAndFinalIsContent) {
  // The prompt ends with <|start|>assistant: the output starts in that message's header.
  const std::string text =
      "<|channel|>analysis<|message|>User greets. Reply politely.<|end|>"
      "<|start|>assistant<|channel|>final<|message|>Hello! How can I help?";
  check(harmony(), text, {"Hello! How can I help?", "User greets. Reply politely.", {}});
  // <|return|> ends the final message (the server stops there: it ends the turn).
  check(harmony(), text + "<|return|>",
        {"Hello! How can I help?", "User greets. Reply politely.", {}});
  // A partial end tag at the very end was text after all.
  check(harmony(), "<|channel|>final<|message|>1 <|en", {"1 <|en", "", {}});
}

TEST(HarmonyParser, CommentaryToAFunctionIsAToolCall) {
  // The tool was sent as "get-weather": the prompt showed get_weather, the call maps back.
  const std::string text =
      "<|channel|>analysis<|message|>Need the weather.<|end|>"
      "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json"
      "<|message|>{\"city\": \"Paris\", \"days\": [1, 2]}<|call|>";
  check(harmony({"get-weather"}), text,
        {"", "Need the weather.", {{"get-weather", R"({"city":"Paris","days":[1,2]})"}}});
  // The server stops at <|call|> (end of generation): the call is read at the end.
  check(harmony({"get-weather"}), text.substr(0, text.size() - 8),
        {"", "Need the weather.", {{"get-weather", R"({"city":"Paris","days":[1,2]})"}}});
  // Built-in tools are called on the analysis channel, by their own names.
  check(harmony({"browser.search"}),
        "<|channel|>analysis to=browser.search <|constrain|>json<|message|>{\"query\":\"x\"}"
        "<|call|>",
        {"", "", {{"browser.search", R"({"query":"x"})"}}});
  // Two calls in one output (each message ends with <|call|>) come out in order.
  check(harmony({"a", "b"}),
        "<|channel|>commentary to=functions.a<|message|>{}<|call|>"
        "<|start|>assistant<|channel|>commentary to=functions.b<|message|>{\"x\":1}<|call|>",
        {"", "", {{"a", "{}"}, {"b", R"({"x":1})"}}});
}

TEST(HarmonyParser, HeadersInEveryOrderOllamaAccepts) {
  // TestHeaderParsing: the recipient before or after the channel, as the role (`to=` first),
  // with or without a space before <|constrain|>.
  for (const char* header :
       {"assistant<|channel|>analysis to=functions.get_weather",
        "assistant to=functions.get_weather<|channel|>analysis",
        "to=functions.get_weather<|channel|>analysis",
        "assistant to=functions.get_weather abc<|channel|>analysis",
        "assistant<|channel|>commentary to=functions.get_weather <|constrain|>json",
        "assistant to=functions.get_weather<|channel|>commentary <|constrain|>json",
        "assistant<|channel|>commentary to=functions.get_weather<|constrain|>json",
        "assistant to=functions.get_weather<|channel|>commentary<|constrain|>json"}) {
    check(harmony({"get_weather"}),
          std::string("<|channel|>final<|message|>Checking.<|end|><|start|>") + header +
              "<|message|>{\"city\":\"Oslo\"}<|call|>",
          {"Checking.", "", {{"get_weather", R"({"city":"Oslo"})"}}});
  }
}

TEST(HarmonyParser, ChannelsWithoutRecipientOrUnknownAreContent) {
  check(harmony(), "<|channel|>commentary<|message|>Let me look that up.<|end|>",
        {"Let me look that up.", "", {}});
  check(harmony(), "<|channel|>scratchpad<|message|>odd<|end|><|start|>assistant<|message|>plain",
        {"oddplain", "", {}});
}

TEST(HarmonyParser, APrefilledMessageIsContinued) {
  check(harmony({}, "final"), "3, 4.<|end|>", {"3, 4.", "", {}});
  check(harmony({}, "analysis"),
        " more thought<|end|><|start|>assistant<|channel|>final<|message|>Done",
        {"Done", " more thought", {}});
}

TEST(HarmonyParser, TextOutsideHarmonyIsKept) {
  // Ollama drops these; vkllm keeps every byte as content.
  check(harmony(), "Just plain text, no Harmony.", {"Just plain text, no Harmony.", "", {}});
  check(harmony(),
        "<|channel|>final<|message|>A<|end|>stray<|start|>assistant<|channel|>final<|message|>B",
        {"AstrayB", "", {}});
}

TEST(HarmonyParser, ArgumentsThatAreNotAnObjectFailTheRequest) {
  for (const char* args : {"{\"city\": ", "[1, 2]", ""}) {
    OutputParser p(harmony({"f"}));
    ParsedDelta a =
        p.feed(std::string("<|channel|>commentary to=functions.f <|constrain|>json<|message|>") +
               args + "<|call|>");
    ParsedDelta b = p.finish();
    EXPECT_TRUE(a.tool_calls.empty() && b.tool_calls.empty()) << args;
    const std::string error = a.error + b.error;
    EXPECT_TRUE(error.starts_with("error parsing tool call: raw='" + std::string(args) + "'"))
        << error;
  }
}

TEST(HarmonyParser, FunctionNamesBecomeIdentifiers) {
  // TestFunctionConvertToValidChars and TestFunctionConvertAndAdd.
  const std::vector<std::pair<std::string, std::string>> single = {{"get weather", "get_weather"},
                                                                   {"get-weather", "get_weather"},
                                                                   {"get.weather", "get_weather"},
                                                                   {"get weather!", "get_weather"},
                                                                   {"a🫠bc", "abc"},
                                                                   {"🫠", "unnamed"},
                                                                   {"123", "_123"},
                                                                   {"$", "$"},
                                                                   {"𝓸𝓵𝓵𝓪𝓶𝓪", "𝓸𝓵𝓵𝓪𝓶𝓪"},
                                                                   {"ⓞⓛⓛⓐⓜⓐ123", "_123"}};
  for (const auto& [in, want] : single) EXPECT_EQ(HarmonyFunctionNames().add(in), want) << in;

  HarmonyFunctionNames names;
  const std::vector<std::string> in = {
      "a", "a", "b", "a", "get weather", "get_weather", "browser.open", "python", "not.a.built-in"};
  const std::vector<std::string> want = {
      "a",      "a_2",           "b", "a_3", "get_weather", "get_weather_2", "browser.open",
      "python", "not_a_built_in"};
  for (size_t i = 0; i < in.size(); ++i) EXPECT_EQ(names.add(in[i]), want[i]) << i;
  EXPECT_EQ(names.user_name("get_weather_2"), "get_weather");
  EXPECT_EQ(names.user_name("never_seen"), "never_seen");
}

TEST(HarmonyParser, ConfigFollowsTheLastMessage) {
  ModelPrompt m;
  m.architecture = "gpt-oss";
  PromptBuilder b(m);
  const auto tools = nlohmann::ordered_json::parse(
      R"j([{"type": "function", "function": {"name": "get-weather"}}])j");
  ParserConfig c = b.parser_config(tools, {}, "", nullptr);
  EXPECT_TRUE(c.harmony);
  EXPECT_TRUE(c.special_tokens);
  EXPECT_EQ(c.harmony_prefill, "");
  EXPECT_EQ(c.tool_names, std::vector<std::string>{"get-weather"});
  Message last{"assistant", "partial", "", {}, {}, "", ""};
  EXPECT_EQ(b.parser_config(tools, {}, "", &last).harmony_prefill, "final");
  last.content.clear();
  last.thinking = "hmm";
  EXPECT_EQ(b.parser_config(tools, {}, "", &last).harmony_prefill, "analysis");
  last.role = "user";
  EXPECT_EQ(b.parser_config(tools, {}, "", &last).harmony_prefill, "");
}
