// What a streaming client sees piece by piece (compat §1.6): text before a tag at once, partial
// tags held back, each call as soon as its JSON closes, ids and indexes per response.
#include <gtest/gtest.h>

#include "tests/unit/prompt/output_parser_test_util.h"

namespace vkllm::prompt::testing {
namespace {

TEST(OutputParserStreaming, ContentBeforeATagStreamsAndPartialTagsAreHeld) {
  OutputParser p(tools_config("<tool_call>", {"get_time"}));
  EXPECT_EQ(p.feed("Let me check").content, "Let me check");
  ParsedDelta d = p.feed(" that.\n<tool_");
  EXPECT_EQ(d.content, " that.\n");
  EXPECT_TRUE(p.feed("call>\n{\"name\": \"get_time\",").empty());
  d = p.feed(" \"arguments\": {\"tz\": \"CET\"}}");
  ASSERT_EQ(d.tool_calls.size(), 1u);  // before </tool_call> arrives
  EXPECT_EQ(d.tool_calls[0].name, "get_time");
  EXPECT_EQ(d.tool_calls[0].arguments.dump(), R"({"tz":"CET"})");
  EXPECT_EQ(d.tool_calls[0].index, 0);
  EXPECT_TRUE(d.content.empty());
  EXPECT_TRUE(p.feed("\n</tool_call>").empty());
  d = p.feed("\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}");
  ASSERT_EQ(d.tool_calls.size(), 1u);
  EXPECT_EQ(d.tool_calls[0].index, 1);
  EXPECT_TRUE(p.finish().empty());
}

TEST(OutputParserStreaming, APartialTagThatIsNotATagIsContentOnceDecided) {
  OutputParser p(tools_config("<tool_call>", {"get_time"}));
  EXPECT_EQ(p.feed("a <tool").content, "a ");
  EXPECT_EQ(p.feed("box> b").content, "<toolbox> b");
  EXPECT_EQ(p.feed(" <tool_ca").content, " ");
  EXPECT_EQ(p.finish().content, "<tool_ca");
}

TEST(OutputParserStreaming, ATagNotFollowedByACallIsReleasedWithoutWaitingForTheEnd) {
  OutputParser p(tools_config("<tool_call>", {"get_time"}));
  EXPECT_EQ(p.feed("Use <tool_call>").content, "Use ");
  // Prose after the tag cannot be a call: released at once, not held to the end.
  EXPECT_EQ(p.feed(" tags like this.").content, "<tool_call> tags like this.");
}

TEST(OutputParserStreaming, ThinkingStreamsAndHoldsOnlyAPossibleClosingTag) {
  OutputParser p(thinking_config("<think>", "</think>", false));
  ParsedDelta d = p.feed("<thi");
  EXPECT_TRUE(d.empty());
  d = p.feed("nk>\nFirst, ");
  EXPECT_EQ(d.thinking, "First, ");
  d = p.feed("add.</th");
  EXPECT_EQ(d.thinking, "add.");
  EXPECT_TRUE(d.content.empty());
  d = p.feed("ink>\n\nFour");
  EXPECT_TRUE(d.thinking.empty());
  EXPECT_EQ(d.content, "Four");
  EXPECT_EQ(p.feed(" <think>").content, " <think>");
  EXPECT_TRUE(p.finish().empty());
}

TEST(OutputParserStreaming, WithoutToolsToolTextIsContent) {
  ParserConfig cfg;
  cfg.tool_tag = "<tool_call>";  // no tool names: no tool parsing
  OutputParser p(cfg);
  std::string text = "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>";
  ParsedDelta d = p.feed(text);
  EXPECT_EQ(d.content, text);
  EXPECT_TRUE(d.tool_calls.empty());
}

TEST(OutputParserStreaming, IdsAreFreshPerCallAndPerParser) {
  auto cfg = tools_config("{", {"get_time"});
  std::string text =
      R"({"name": "get_time", "parameters": {}}; {"name": "get_time", "parameters": {}})";
  Parsed a = run_whole(cfg, text);
  Parsed b = run_whole(cfg, text);
  ASSERT_EQ(a.calls.size(), 2u);
  ASSERT_EQ(b.calls.size(), 2u);
  expect_ids_and_indexes(a);
  expect_ids_and_indexes(b);
  EXPECT_NE(a.calls[0].id, b.calls[0].id);
  EXPECT_NE(a.calls[1].id, b.calls[1].id);
}

TEST(OutputParserStreaming, MovedParserKeepsItsState) {
  OutputParser p(tools_config("<tool_call>", {"get_time"}));
  EXPECT_TRUE(p.feed("<tool_call>{\"name\": \"get_time\",").empty());
  OutputParser q(std::move(p));
  ParsedDelta d = q.feed(" \"arguments\": {}}");
  ASSERT_EQ(d.tool_calls.size(), 1u);
}

// Random mixes of tags, calls, broken JSON and prose (fresh each run): however they are cut,
// the result is the whole text's.
TEST(OutputParserStreaming, RandomOutputsGiveTheSameResultHoweverCut) {
  static const std::vector<std::string> kFragments = {
      "<tool_call>",
      "</tool_call>",
      "[TOOL_CALLS]",
      "[ARGS]",
      "<|python_tag|>",
      "<|tool_call|>",
      "Action: ```json\n[",
      "```",
      "<think>",
      "</think>",
      "{",
      "}",
      "[",
      "]",
      "\"",
      "\\",
      ",",
      " ",
      "\n",
      "get",
      "get_time",
      "hello",
      "{\"name\": \"get_time\", \"arguments\": {\"a\": 1}}",
      "{\"get\": {\"b\": \"}\"}}",
      "{\"name\": \"nope\", \"arguments\": {}}",
      "\xC3\xA9"};
  std::vector<ParserConfig> configs = {tools_config("{", {"get", "get_time"}),
                                       tools_config("<tool_call>", {"get_time"}),
                                       tools_config("[TOOL_CALLS]", {"get", "get_time"}),
                                       tools_config("Action: ```json\n[", {"get_time"}),
                                       thinking_config("<think>", "</think>", false),
                                       thinking_config("<think>", "</think>", true)};
  configs.push_back(configs[4]);
  configs.back().tool_tag = "<tool_call>";
  configs.back().tool_names = {"get", "get_time"};
  unsigned seed = std::random_device{}();
  SCOPED_TRACE("texts from seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  std::uniform_int_distribution<size_t> pick(0, kFragments.size() - 1), count(0, 24);
  for (int i = 0; i < 300 && !HasFailure(); ++i) {
    std::string text;
    for (size_t n = count(rng); n > 0; --n) text += kFragments[pick(rng)];
    SCOPED_TRACE(text);
    expect_streaming_matches(configs[i % configs.size()], text);
  }
}

}  // namespace
}  // namespace vkllm::prompt::testing
