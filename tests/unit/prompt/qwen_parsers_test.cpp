// Ollama's built-in parsers "qwen3.5" and "qwen3-coder" through OutputParser: thinking, content
// and XML tool calls typed by the tools' schemas, the same whether the text comes whole, token by
// token, byte by byte or cut at random (Ollama's parser tests' cases: model/parsers/qwen35_test.go,
// qwen3coder_test.go).
#include <gtest/gtest.h>

#include "output_parser_test_util.h"
#include "server/prompt/qwen_tool_values.h"

using namespace vkllm::prompt;
using namespace vkllm::prompt::testing;
using ojson = nlohmann::ordered_json;

namespace {

const ojson kTools = ojson::parse(R"([
  {"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{
    "location":{"type":"string"},"days":{"type":"integer"}}}}},
  {"type":"function","function":{"name":"calculate","parameters":{"type":"object","properties":{
    "x":{"type":"number"},"y":{"type":"integer"},"enabled":{"type":"boolean"},
    "items":{"type":"array"},"opts":{"type":"object"},"id":{"anyOf":[{"type":"integer"},{"type":"string"}]},
    "note":{"type":"string"}}}}}])");

ParserConfig qwen35(bool thinking, bool prefill = false) {
  ParserConfig c;
  c.builtin_parser = "qwen3.5";
  c.thinking = thinking;
  c.assistant_prefill = prefill;
  c.tools = kTools;
  return c;
}

ParserConfig coder() {
  ParserConfig c;
  c.builtin_parser = "qwen3-coder";
  c.tools = kTools;
  return c;
}

// The expected result, and the same result however the text is cut.
void check(const ParserConfig& config, std::string_view text, const Expected& want) {
  expect_result(run_whole(config, text), want);
  expect_streaming_matches(config, text);
}

}  // namespace

TEST(QwenParsers, Qwen35ThinkingThenAnswer) {
  // The prompt opened <think>: the output starts inside it; whitespace around </think> goes.
  check(qwen35(true), "Let me think...\n</think>\n\nThe answer.",
        {"The answer.", "Let me think...", {}});
  // A stray leading <think> is dropped with the whitespace after it.
  check(qwen35(true), "<think>\nLet me think...</think>Answer.",
        {"Answer.", "Let me think...", {}});
  // An output that closes at once has no thinking.
  check(qwen35(true), "</think>The final answer.", {"The final answer.", "", {}});
  // Unfinished thinking stays thinking (trailing whitespace dropped, a partial tag kept).
  check(qwen35(true), "Still thinking </thi", {"", "Still thinking </thi", {}});
  // A close tag split across pieces: text before it streams, the tag is held.
  Parsed split = run_pieces(qwen35(true), {"Reasoning text</thi", "nk>The final answer."});
  EXPECT_EQ(split.thinking, "Reasoning text");
  EXPECT_EQ(split.content, "The final answer.");
}

TEST(QwenParsers, Qwen35WithoutThinkingOrWithPrefillIsAllAnswer) {
  check(qwen35(false), "</think>Some content after spurious tag.",
        {"</think>Some content after spurious tag.", "", {}});
  check(qwen35(true, true), " and continued", {" and continued", "", {}});
}

TEST(QwenParsers, Qwen35ToolCallsAfterOrInsteadOfTheClose) {
  const Expected sf{"", "Need weather lookup", {{"get_weather", R"({"location":"SF"})"}}};
  check(qwen35(true),
        "Need weather lookup</think>\n\n<tool_call>\n<function=get_weather>\n<parameter=location>\n"
        "SF\n</parameter>\n</function>\n</tool_call>",
        sf);
  // Qwen 3.5 models sometimes start the call without closing the thinking.
  check(qwen35(true),
        "Need weather lookup\n<tool_call><function=get_weather><parameter=location>\nSF\n"
        "</parameter></function></tool_call>",
        sf);
  // A partial <tool_call> that turns into the close tag is thinking after all.
  Parsed fake = run_pieces(qwen35(true), {"Need weather lookup<tool_c", "</thi", "nk>"});
  EXPECT_EQ(fake.thinking, "Need weather lookup<tool_c");
  EXPECT_EQ(fake.content, "");
  EXPECT_TRUE(fake.calls.empty());
  // Thinking off: the answer's call, typed by the schema (days is an integer).
  check(qwen35(false),
        "<tool_call><function=get_weather><parameter=location>\nSan Francisco\n</parameter>"
        "<parameter=days>\n3\n</parameter></function></tool_call>",
        {"", "", {{"get_weather", R"({"location":"San Francisco","days":3})"}}});
}

TEST(QwenParsers, CoderContentAndCallsInAnyPieces) {
  // Content around calls, whitespace next to the tags dropped, two calls with running indexes.
  check(coder(),
        "Let me check.\n\n<tool_call>\n<function=get_weather>\n<parameter=location>\nParis\n"
        "</parameter>\n<parameter=days>\n2\n</parameter>\n</function>\n</tool_call>\n"
        "<tool_call>\n<function=get_weather>\n<parameter=location>\nRome\n</parameter>\n"
        "</function>\n</tool_call>\nDone. ",
        {"Let me check.Done.",
         "",
         {{"get_weather", R"({"location":"Paris","days":2})"},
          {"get_weather", R"({"location":"Rome"})"}}});
  // A near-tag is content; so is Unicode with its whitespace.
  check(coder(), "abc\n<tool_call fakeout", {"abc\n<tool_call fakeout", "", {}});
  check(coder(), "Hello\u3000<toolfakeout>abc 你好 🌍",
        {"Hello\u3000<toolfakeout>abc 你好 🌍", "", {}});
  // Trailing whitespace is held until text follows it.
  Parsed ws = run_pieces(coder(), {"a", "\n", "b", "\u00a0"});
  EXPECT_EQ(ws.content, "a\nb");
}

TEST(QwenParsers, CoderValuesKeepTheirTextAndTypes) {
  // Values typed by the schema; text kept exactly (&, <, >, quotes, newlines inside), one
  // newline trimmed at each end; names with spaces; a tool not in the request keeps strings.
  check(coder(),
        "<tool_call>\n<function=calculate>\n<parameter=x>\n3.14\n</parameter>\n<parameter=y>\n007\n"
        "</parameter>\n<parameter=enabled>\nTrue\n</parameter>\n<parameter=items>\n[\"a\", 2]\n"
        "</parameter>\n<parameter=opts>\n{\"z\": 1, \"a\": null}\n</parameter>\n<parameter=id>\n"
        "x-1\n</parameter>\n<parameter=note>\n\nls && echo \"a > b\" < c\n\n</parameter>\n"
        "</function>\n</tool_call>",
        {"",
         "",
         {{"calculate",
           R"({"x":3.14,"y":7,"enabled":true,"items":["a",2],"opts":{"a":null,"z":1},"id":"x-1",)"
           R"("note":"\nls && echo \"a > b\" < c\n"})"}}});
  check(coder(),
        "<tool_call><function=get current temperature><parameter=unit with spaces>\n42\n"
        "</parameter></function></tool_call>",
        {"", "", {{"get current temperature", R"({"unit with spaces":"42"})"}}});
}

TEST(QwenParsers, CoderKeepsWhatIsNotACall) {
  // Not the XML form: the text is content (Ollama fails the request).
  check(coder(), "<tool_call>{\"name\": \"x\"}</tool_call>",
        {"<tool_call>{\"name\": \"x\"}</tool_call>", "", {}});
  // A call the output never closes is content (Ollama drops it).
  check(coder(), "Sure.\n<tool_call>\n<function=get_weather>\n<parameter=location>\nPar",
        {"Sure.<tool_call>\n<function=get_weather>\n<parameter=location>\nPar", "", {}});
  // A parameter without its closing tag ends at the next one or at </function>.
  check(coder(),
        "<tool_call><function=get_weather><parameter=location>\nOslo\n<parameter=days>\n4\n"
        "</function></tool_call>",
        {"", "", {{"get_weather", R"({"location":"Oslo","days":4})"}}});
}

TEST(QwenParsers, TypedValuesAsOllamasParserTypesThem) {
  using V = std::vector<std::string>;
  EXPECT_EQ(qwen_typed_value("some-string", {}), "some-string");
  EXPECT_EQ(qwen_typed_value("NULL", V{"string"}), nullptr);
  EXPECT_EQ(qwen_typed_value("123", V{"number"}), 123);
  EXPECT_EQ(qwen_typed_value("100.0", V{"number"}), 100);
  EXPECT_EQ(qwen_typed_value("1.23e5", V{"number"}), 123000);
  EXPECT_EQ(qwen_typed_value("1.5e-3", V{"number"}), 0.0015);
  EXPECT_EQ(qwen_typed_value("-273.15", V{"number"}), -273.15);
  EXPECT_EQ(qwen_typed_value("inf", V{"number"}), "inf");
  EXPECT_EQ(qwen_typed_value("2147483648", V{"integer"}), 2147483648LL);
  EXPECT_EQ(qwen_typed_value("4.5", V{"integer"}), "4.5");
  EXPECT_EQ(qwen_typed_value("12345", V{"string"}), "12345");
  EXPECT_EQ(qwen_typed_value("yes", V{"boolean"}), false);  // a lone boolean that does not parse
  EXPECT_EQ(qwen_typed_value("yes", V{"boolean", "string"}), "yes");
  EXPECT_EQ(qwen_typed_value("123", V{"string", "number"}), 123);  // the most specific wins
  EXPECT_EQ(qwen_typed_value("[1", V{"array"}), "[1");
  EXPECT_EQ(qwen_typed_value("{\"a\":1}", V{"array", "object"}), ojson::parse("{\"a\":1}"));
}
