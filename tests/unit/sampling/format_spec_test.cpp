// compile_format_spec: vLLM's regex and choice, forced tool calls, whitespace bounds, the work
// budget's 400, and the compile cache (the same spec compiles once, errors included, also when
// several requests ask at once).
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "engine/sampling/compiled_format.h"
#include "engine/sampling/grammar_matcher.h"
#include "engine/sampling/token_constraint.h"

namespace vkllm::sampling {
namespace {

using json = nlohmann::ordered_json;

bool accepts(const FormatSpec& spec, std::string_view text) {
  grammar::Matcher m(compile_format_spec(spec)->grammar());
  return m.advance(text) && m.complete();
}

std::string error_of(const FormatSpec& spec) {
  try {
    compile_format_spec(spec);
  } catch (const FormatError& e) {
    return e.what();
  }
  return "(compiled)";
}

TEST(FormatSpec, RegexMatchesTheWholeOutputUnescaped) {
  const auto spec = FormatSpec::of_regex(R"(^\d{3}-[A-Z]+ "ok"\n?$)");
  EXPECT_TRUE(accepts(spec, "123-AB \"ok\""));
  EXPECT_TRUE(accepts(spec, "123-AB \"ok\"\n"));
  EXPECT_FALSE(accepts(spec, "x123-AB \"ok\""));
  EXPECT_FALSE(accepts(spec, "123-AB \\\"ok\\\""));
  EXPECT_EQ(error_of(FormatSpec::of_regex("a(?=b)")),
            "invalid regex: lookahead and lookbehind are not supported");
}

// Found by fuzz_regex: bytes that are not UTF-8 became literals no output could match, and the
// matcher met a dead end. They are refused at compile time; UTF-8 text still compiles.
TEST(FormatSpec, PatternsThatAreNotUtf8AreRefused) {
  EXPECT_EQ(error_of(FormatSpec::of_regex("^\xff\xff$")),
            "invalid regex: the pattern is not valid UTF-8 (byte 1)");
  EXPECT_EQ(error_of(FormatSpec::of_regex("a\xc3")),
            "invalid regex: the pattern is not valid UTF-8 (byte 1)");
  EXPECT_TRUE(accepts(FormatSpec::of_regex("^caf\xc3\xa9$"), "caf\xc3\xa9"));
}

TEST(FormatSpec, ChoiceIsExactlyOneOfTheStrings) {
  const auto spec = FormatSpec::of_choice({"positive", "negative", "neutral"});
  for (const char* ok : {"positive", "negative", "neutral"}) EXPECT_TRUE(accepts(spec, ok));
  for (const char* bad : {"pos", "positive ", "Positive", ""}) EXPECT_FALSE(accepts(spec, bad));
  EXPECT_NE(error_of(FormatSpec::of_choice({})).find("invalid choice"), std::string::npos);
}

TEST(FormatSpec, JsonWhitespaceIsBoundedAsLlamaCppBoundsIt) {
  const auto spec = FormatSpec::of_json(json::parse(R"({"type":"object","properties":
      {"a":{"type":"integer"}},"required":["a"]})"));
  EXPECT_TRUE(accepts(spec, R"({"a":1})"));
  EXPECT_TRUE(accepts(spec, "{\n\n\t\"a\": 1 }"));
  EXPECT_TRUE(accepts(spec, "{\n" + std::string(20, ' ') + "\"a\":1}"));
  EXPECT_FALSE(accepts(spec, "{\n" + std::string(21, ' ') + "\"a\":1}"));
  EXPECT_FALSE(accepts(spec, "{\n\n\n\"a\":1}"));
  EXPECT_FALSE(accepts(spec, "{  \"a\":1}"));
  EXPECT_FALSE(accepts(spec, " {\"a\":1}"));  // the value starts at its first character
}

ToolCallsSpec weather_tools(std::string tag, std::string closer, bool parallel) {
  ToolCallsSpec s;
  s.tools.push_back({"get_weather", json::parse(R"({"type":"object","properties":
      {"city":{"type":"string"}},"required":["city"]})")});
  s.tools.push_back({"get_time", json()});
  s.tools.push_back({"odd", json::parse(R"({"type":"object","not":{}})")});  // unsupported
  s.syntax.tag = std::move(tag);
  s.syntax.closer = std::move(closer);
  s.parallel = parallel;
  return s;
}

TEST(FormatSpec, ToolCallsInTheModelsSyntax) {
  const auto qwen = FormatSpec::of_tool_calls(weather_tools("<tool_call>", "</tool_call>", true));
  const std::string call = R"({"name": "get_weather", "arguments": {"city": "Paris"}})";
  EXPECT_TRUE(accepts(qwen, "<tool_call>\n" + call + "\n</tool_call>"));
  EXPECT_TRUE(accepts(qwen, "<tool_call>" + call));
  EXPECT_TRUE(accepts(qwen, "<tool_call>" + call + "</tool_call>\n<tool_call>" +
                                R"({"name":"get_time","arguments":{"tz":"UTC"}})"));
  EXPECT_TRUE(accepts(qwen, R"(<tool_call>{"name":"odd","arguments":{"any":[1]}})"));
  EXPECT_FALSE(accepts(qwen, call));                        // no tag
  EXPECT_FALSE(accepts(qwen, "Sure! <tool_call>" + call));  // text first
  EXPECT_FALSE(accepts(qwen, R"(<tool_call>{"name":"get_weather","arguments":{}})"));
  EXPECT_FALSE(accepts(qwen, R"(<tool_call>{"name":"rm_rf","arguments":{}})"));
  EXPECT_FALSE(accepts(qwen, "<tool_call></tool_call>"));

  const auto one = FormatSpec::of_tool_calls(weather_tools("<tool_call>", "</tool_call>", false));
  EXPECT_TRUE(accepts(one, "<tool_call>" + call + "</tool_call>"));
  EXPECT_FALSE(accepts(one, "<tool_call>" + call + "<tool_call>" + call));

  auto llama = weather_tools("{", "", false);
  llama.syntax.arguments_key = "parameters";
  EXPECT_TRUE(accepts(FormatSpec::of_tool_calls(llama),
                      R"({"name": "get_weather", "parameters": {"city": "Oslo"}})"));
  EXPECT_FALSE(accepts(FormatSpec::of_tool_calls(llama), call));

  const auto list = FormatSpec::of_tool_calls(weather_tools("[", "", true));
  EXPECT_TRUE(accepts(list, "[" + call + ", " + call + "]"));
  EXPECT_NE(error_of(FormatSpec::of_tool_calls(ToolCallsSpec{})).find("at least one tool"),
            std::string::npos);
}

TEST(FormatSpec, ThinkingModelsMayThinkBeforeTheCall) {
  const std::string call = R"(<tool_call>{"name":"get_time","arguments":{}})";
  auto opened = weather_tools("<tool_call>", "</tool_call>", false);
  opened.thinking_open = "<think>";
  opened.thinking_close = "</think>";
  const auto may_think = FormatSpec::of_tool_calls(opened);
  EXPECT_TRUE(accepts(may_think, call));
  EXPECT_TRUE(accepts(may_think, "<think>The user wants </thin the time.</think>\n\n" + call));
  EXPECT_FALSE(accepts(may_think, "<think>no end" + call));
  EXPECT_FALSE(accepts(may_think, "I think " + call));
  opened.thinking_open.clear();  // the prompt opened it: the output starts inside
  const auto thinking = FormatSpec::of_tool_calls(opened);
  EXPECT_TRUE(accepts(thinking, "hmm</think>" + call));
  EXPECT_FALSE(accepts(thinking, call));
}

TEST(FormatSpec, WorkBudgetGivesA400NamingThePattern) {
  // Issue 41's pattern, searched for: the optional runs at the ends of a search match anything,
  // so it compiles to "any string", small and at once.
  const auto search =
      FormatSpec::of_json(json{{"type", "string"}, {"pattern", ".{0,100}.{0,100}.{0,90}"}});
  EXPECT_LT(compile_format_spec(search)->grammar().nodes.size(), 200u);
  EXPECT_TRUE(accepts(search, "\"anything at all\""));
  // Anchored, it must count: a budget error naming the pattern (and the same error again from
  // the cache).
  const auto anchored =
      FormatSpec::of_json(json{{"type", "string"}, {"pattern", "^.{0,100}.{0,100}.{0,90}$"}});
  const std::string want =
      "invalid JSON schema in format: \"pattern\" \"^.{0,100}.{0,100}.{0,90}$\" is too complex to "
      "compile (it exceeds the grammar compiler's work budget)";
  EXPECT_EQ(error_of(anchored), want);
  EXPECT_EQ(error_of(anchored), want);
}

TEST(FormatSpec, CacheCompilesEachSpecOnceEvenWhenAskedAtOnce) {
  const auto spec = FormatSpec::of_gbnf("root ::= \"cache-\" [0-9]{1,8}\n");
  std::vector<std::shared_ptr<const CompiledFormat>> got(6);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < got.size(); ++i) {
    threads.emplace_back([&, i] { got[i] = compile_format_spec(spec); });
  }
  for (auto& t : threads) t.join();
  for (const auto& g : got) EXPECT_EQ(g, got[0]);
  EXPECT_EQ(compile_format_spec(spec), got[0]);
  // Another spec is another grammar; the same JSON format through compile_format is cached too.
  EXPECT_NE(compile_format_spec(FormatSpec::of_gbnf("root ::= \"x\"\n")), got[0]);
  const json schema = json::parse(R"({"type":"boolean"})");
  EXPECT_EQ(compile_format(schema), compile_format(schema));
}

}  // namespace
}  // namespace vkllm::sampling
