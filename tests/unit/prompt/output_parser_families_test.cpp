// Tool-call parsing on outputs recorded in the shapes each model family writes (compat §5.5),
// each checked whole and streamed in pieces.
#include <gtest/gtest.h>

#include "tests/unit/prompt/output_parser_test_util.h"

namespace vkllm::prompt::testing {
namespace {

const std::vector<std::string> kFamilyTools = {"get_current_weather", "get_time", "internet_search",
                                               "run_code"};

void check_family(const ParserConfig& config, std::string_view text, const Expected& want) {
  SCOPED_TRACE(std::string(text));
  expect_result(run_whole(config, text), want);
  expect_streaming_matches(config, text);
}

// Llama 3.1/3.2/3.3: the template writes calls as bare JSON, so the tag is "{"; the model also
// emits <|python_tag|> before a call.
TEST(OutputParserFamilies, Llama3) {
  auto cfg = tools_config("{", kFamilyTools);
  check_family(
      cfg,
      R"j({"name": "get_current_weather", "parameters": {"location": "Paris, France", "unit": "celsius"}})j",
      {"", "", {{"get_current_weather", R"j({"location": "Paris, France", "unit": "celsius"})j"}}});
  check_family(
      cfg,
      R"j(<|python_tag|>{"name": "get_current_weather", "parameters": {"location": "Paris"}})j",
      {"", "", {{"get_current_weather", R"j({"location": "Paris"})j"}}});
  // Llama 3.2 puts several calls in a row, separated by semicolons, sometimes with "type".
  check_family(
      cfg,
      "\n"
      R"j({"type": "function", "name": "get_current_weather", "parameters": {"location": "Tokyo"}}; {"name": "get_time", "parameters": {"timezone": "Asia/Tokyo"}})j",
      {"\n",
       "",
       {{"get_current_weather", R"j({"location": "Tokyo"})j"},
        {"get_time", R"j({"timezone": "Asia/Tokyo"})j"}}});
  // An array of calls opens the answer just as well.
  check_family(
      cfg,
      R"j([{"name": "get_time", "parameters": {"timezone": "UTC"}}, {"name": "get_current_weather", "parameters": {"location": "Oslo"}}])j",
      {"",
       "",
       {{"get_time", R"j({"timezone": "UTC"})j"},
        {"get_current_weather", R"j({"location": "Oslo"})j"}}});
  // Parameters written as a JSON string.
  check_family(cfg, R"j({"name": "get_time", "parameters": "{\"timezone\": \"Europe/Rome\"}"})j",
               {"", "", {{"get_time", R"j({"timezone": "Europe/Rome"})j"}}});
  // Text before the marker streams as content.
  check_family(
      cfg,
      "Let me look that up.\n\n"
      R"j(<|python_tag|>{"name": "get_current_weather", "parameters": {"location": "Berlin"}})j",
      {"Let me look that up.\n\n", "", {{"get_current_weather", R"j({"location": "Berlin"})j"}}});
}

// With the tag "{", JSON that does not open the answer, JSON that is no call and calls of
// unknown tools are plain content.
TEST(OutputParserFamilies, Llama3NotCalls) {
  auto cfg = tools_config("{", kFamilyTools);
  for (std::string_view text : {
           std::string_view(R"j(The object {"name": "get_time", "parameters": {}} is a call.)j"),
           std::string_view(R"j({"answer": 42, "unit": "km"})j"),
           std::string_view(R"j(["get_time", {"a": 1}])j"),
           std::string_view(R"j({"name": "send_email", "parameters": {"to": "bob"}})j"),
           std::string_view(R"j({"name": "get_time", "parameters": 7})j"),
           std::string_view("No tools needed: 2 + 2 = 4."),
       }) {
    check_family(cfg, text, {std::string(text), "", {}});
  }
}

// Qwen 2.5 and Qwen 3: each call in its own <tool_call> block.
TEST(OutputParserFamilies, Qwen) {
  auto cfg = tools_config("<tool_call>", kFamilyTools);
  check_family(
      cfg,
      "<tool_call>\n"
      R"j({"name": "get_current_weather", "arguments": {"location": "Paris", "unit": "celsius"}})j"
      "\n</tool_call>",
      {"", "", {{"get_current_weather", R"j({"location": "Paris", "unit": "celsius"})j"}}});
  check_family(cfg,
               "I'll check both for you.\n<tool_call>\n"
               R"j({"name": "get_current_weather", "arguments": {"location": "Paris"}})j"
               "\n</tool_call>\n<tool_call>\n"
               R"j({"name": "get_time", "arguments": {"timezone": "Europe/Paris"}})j"
               "\n</tool_call>",
               {"I'll check both for you.\n",
                "",
                {{"get_current_weather", R"j({"location": "Paris"})j"},
                 {"get_time", R"j({"timezone": "Europe/Paris"})j"}}});
  // Braces, quotes and the closing tag inside argument strings.
  check_family(
      cfg,
      "<tool_call>\n"
      R"j({"name": "run_code", "arguments": {"code": "if (x) { print(\"}</tool_call>\") }", "lang": "c"}})j"
      "\n</tool_call>",
      {"",
       "",
       {{"run_code", R"j({"code": "if (x) { print(\"}</tool_call>\") }", "lang": "c"})j"}}});
  // An unknown tool: the whole block is content.
  std::string_view unknown =
      "<tool_call>\n"
      R"j({"name": "book_flight", "arguments": {"to": "Oslo"}})j"
      "\n</tool_call>";
  check_family(cfg, unknown, {std::string(unknown), "", {}});
  // Cut off in the middle of a call: content at the end.
  std::string_view cut =
      "Sure.\n<tool_call>\n"
      R"j({"name": "get_time", "arguments": {"time)j";
  check_family(cfg, cut, {std::string(cut), "", {}});
  // Text after the calls is content again.
  check_family(cfg,
               "<tool_call>\n"
               R"j({"name": "get_time", "arguments": {}})j"
               "\n</tool_call>\nDone.",
               {"Done.", "", {{"get_time", "{}"}}});
}

// Mistral: a JSON array after [TOOL_CALLS] (v0.3), or name[ARGS]{...} per call (newer models),
// with call ids in some versions.
TEST(OutputParserFamilies, Mistral) {
  auto cfg = tools_config("[TOOL_CALLS]", kFamilyTools);
  check_family(
      cfg,
      R"j([TOOL_CALLS] [{"name": "get_current_weather", "arguments": {"location": "Paris, France", "format": "celsius"}}, {"name": "get_time", "arguments": {"timezone": "CET"}}])j",
      {"",
       "",
       {{"get_current_weather", R"j({"location": "Paris, France", "format": "celsius"})j"},
        {"get_time", R"j({"timezone": "CET"})j"}}});
  check_family(
      cfg,
      R"j([TOOL_CALLS][{"name": "get_time", "arguments": {"timezone": "CET"}, "id": "a1b2c3d4e"}])j",
      {"", "", {{"get_time", R"j({"timezone": "CET"})j"}}});
  check_family(
      cfg, R"j([TOOL_CALLS]get_current_weather[ARGS]{"location": "Paris", "format": "celsius"})j",
      {"", "", {{"get_current_weather", R"j({"location": "Paris", "format": "celsius"})j"}}});
  check_family(
      cfg,
      R"j([TOOL_CALLS]get_current_weather[ARGS]{"location": "Paris"}[TOOL_CALLS]get_time[ARGS]{"timezone": "CET"})j",
      {"",
       "",
       {{"get_current_weather", R"j({"location": "Paris"})j"},
        {"get_time", R"j({"timezone": "CET"})j"}}});
  check_family(cfg, R"j([TOOL_CALLS]get_time[CALL_ID]x9Yz12345[ARGS]{"timezone":"UTC"})j",
               {"", "", {{"get_time", R"j({"timezone":"UTC"})j"}}});
  // A name that is not a tool: content.
  std::string_view unknown = R"j([TOOL_CALLS]book_flight[ARGS]{"to": "Oslo"})j";
  check_family(cfg, unknown, {std::string(unknown), "", {}});
}

// Command R: a ```json block of {"tool_name", "parameters"} objects after "Action:".
TEST(OutputParserFamilies, CommandR) {
  auto cfg = tools_config("Action: ```json\n[", kFamilyTools);
  check_family(cfg,
               "Action: ```json\n[\n    {\n        \"tool_name\": \"internet_search\",\n"
               "        \"parameters\": {\n            \"query\": \"weather in Paris\"\n        }\n"
               "    }\n]\n```",
               {"", "", {{"internet_search", R"j({"query": "weather in Paris"})j"}}});
  check_family(
      cfg,
      "Plan: First I will search for the weather, then check the time.\n"
      "Action:```json\n[\n    {\n        \"tool_name\": \"internet_search\",\n"
      "        \"parameters\": {\"query\": \"Paris weather\"}\n    },\n    {\n"
      "        \"tool_name\": \"get_time\",\n        \"parameters\": {\"timezone\": \"CET\"}\n"
      "    }\n]\n```",
      {"Plan: First I will search for the weather, then check the time.\n",
       "",
       {{"internet_search", R"j({"query": "Paris weather"})j"},
        {"get_time", R"j({"timezone": "CET"})j"}}});
  // directly_answer is not one of the request's tools.
  std::string_view direct =
      "Action: ```json\n[\n    {\n        \"tool_name\": \"directly_answer\",\n"
      "        \"parameters\": {}\n    }\n]\n```";
  check_family(cfg, direct, {std::string(direct), "", {}});
}

// Granite 3.x: <|tool_call|> and a JSON array.
TEST(OutputParserFamilies, Granite) {
  auto cfg = tools_config("<|tool_call|>", kFamilyTools);
  check_family(
      cfg,
      R"j(<|tool_call|>[{"name": "get_current_weather", "arguments": {"location": "Boston, MA"}}, {"name": "get_time", "arguments": {"timezone": "EST"}}])j",
      {"",
       "",
       {{"get_current_weather", R"j({"location": "Boston, MA"})j"},
        {"get_time", R"j({"timezone": "EST"})j"}}});
}

// Phi-4 mini: <|tool_call|>[...]<|/tool_call|>.
TEST(OutputParserFamilies, Phi4) {
  auto cfg = tools_config("<|tool_call|>", kFamilyTools);
  check_family(
      cfg,
      R"j(<|tool_call|>[{"type": "function", "name": "get_current_weather", "arguments": {"location": "Seattle", "unit": "fahrenheit"}}]<|/tool_call|>)j",
      {"", "", {{"get_current_weather", R"j({"location": "Seattle", "unit": "fahrenheit"})j"}}});
  check_family(
      cfg,
      "Checking now. "
      R"j(<|tool_call|>[{"name": "get_time", "parameters": {"timezone": "PST"}}]<|/tool_call|>)j"
      " One moment.",
      {"Checking now. One moment.", "", {{"get_time", R"j({"timezone": "PST"})j"}}});
}

// Shapes Ollama's generic search accepts: OpenAI's nested function object with arguments as a
// string, {"<tool>": {...}}, and calls nested inside other objects and arrays.
TEST(OutputParserFamilies, GenericShapes) {
  auto cfg = tools_config("{", kFamilyTools);
  check_family(
      cfg,
      R"j({"type": "function", "function": {"name": "get_time", "arguments": "{\"timezone\": \"CET\", \"format\": \"24h\"}"}})j",
      {"", "", {{"get_time", R"j({"timezone": "CET", "format": "24h"})j"}}});
  check_family(cfg, R"j({"get_time": {"timezone": "CET"}})j",
               {"", "", {{"get_time", R"j({"timezone": "CET"})j"}}});
  check_family(
      cfg,
      R"j({"tool_calls": [{"name": "get_time", "arguments": {"timezone": "CET"}}, {"name": "internet_search", "arguments": {"query": "news", "max": 3}}]})j",
      {"",
       "",
       {{"get_time", R"j({"timezone": "CET"})j"},
        {"internet_search", R"j({"query": "news", "max": 3})j"}}});
  // Argument key order is the model's, not sorted.
  check_family(
      cfg,
      R"j({"name": "run_code", "arguments": {"z": 1, "a": [2, {"y": 3, "b": 4}], "m": null}})j",
      {"", "", {{"run_code", R"j({"z": 1, "a": [2, {"y": 3, "b": 4}], "m": null})j"}}});
}

// A tool whose name is a prefix of another's is told apart by what follows.
TEST(OutputParserFamilies, PrefixToolNames) {
  auto cfg = tools_config("[TOOL_CALLS]", {"get", "get_time"});
  check_family(cfg, R"j([TOOL_CALLS]get[ARGS]{"key": "a"}[TOOL_CALLS]get_time[ARGS]{})j",
               {"", "", {{"get", R"j({"key": "a"})j"}, {"get_time", "{}"}}});
}

}  // namespace
}  // namespace vkllm::prompt::testing
