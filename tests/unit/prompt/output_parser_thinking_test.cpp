// Thinking separation (compat §5.5) alone and together with tool calls, whole and streamed.
#include <gtest/gtest.h>

#include "tests/unit/prompt/output_parser_test_util.h"

namespace vkllm::prompt::testing {
namespace {

void check_thinking(const ParserConfig& config, std::string_view text, const Expected& want) {
  SCOPED_TRACE(std::string(text));
  expect_result(run_whole(config, text), want);
  expect_streaming_matches(config, text);
}

TEST(OutputParserThinking, SplitsTheBlock) {
  auto cfg = thinking_config("<think>", "</think>", false);
  // Whitespace after either tag is dropped; the thinking keeps its own trailing newline.
  check_thinking(cfg,
                 "<think>\nThe user asks for 2 + 2. That is 4.\n</think>\n\nThe answer is **4**.",
                 {"The answer is **4**.", "The user asks for 2 + 2. That is 4.\n", {}});
  check_thinking(cfg, "\n\n<think>hmm</think>ok", {"ok", "hmm", {}});
  // No block at the start: all content, leading whitespace kept, later tags untouched.
  check_thinking(cfg, "  The answer is 4. <think>not thinking</think>",
                 {"  The answer is 4. <think>not thinking</think>", "", {}});
  // Only one block; a second one is content.
  check_thinking(cfg, "<think>a</think>b<think>c</think>", {"b<think>c</think>", "a", {}});
  // Something that starts like the closing tag but is not one stays thinking.
  check_thinking(cfg, "<think>if a </thin b or </think c</think>done",
                 {"done", "if a </thin b or </think c", {}});
  // Generation stopped while thinking.
  check_thinking(cfg, "<think>\nStill going", {"", "Still going", {}});
  check_thinking(cfg, "<think>Partial close </thi", {"", "Partial close </thi", {}});
  // Only the start of the opening tag, or only whitespace: content.
  check_thinking(cfg, "<thi", {"<thi", "", {}});
  check_thinking(cfg, "\n \n", {"\n \n", "", {}});
  check_thinking(cfg, "", {"", "", {}});
}

TEST(OutputParserThinking, StartsInsideWhenThePromptOpenedTheBlock) {
  auto cfg = thinking_config("<think>", "</think>", true);
  check_thinking(cfg, "\nOkay, 17 * 3 = 51.\n</think>\n\n51", {"51", "Okay, 17 * 3 = 51.\n", {}});
  check_thinking(cfg, "</think>\n\nDirect answer.", {"Direct answer.", "", {}});
}

TEST(OutputParserThinking, OtherFamiliesMarkers) {
  // Command A's markers, and multi-byte ones (cut inside their UTF-8 sequences when streamed).
  check_thinking(thinking_config("<|START_THINKING|>", "<|END_THINKING|>", false),
                 "<|START_THINKING|>Plan the reply.<|END_THINKING|>Hello!",
                 {"Hello!", "Plan the reply.", {}});
  check_thinking(
      thinking_config("\xE2\x97\x81think\xE2\x96\xB7", "\xE2\x97\x81/think\xE2\x96\xB7", false),
      "\xE2\x97\x81think\xE2\x96\xB7 \xC3\xA9tude \xE2\x97\x81/think\xE2\x96\xB7 "
      "R\xC3\xA9sum\xC3\xA9",
      {"R\xC3\xA9sum\xC3\xA9", "\xC3\xA9tude ", {}});
}

TEST(OutputParserThinking, TagsStayInContentWhenThinkingIsOff) {
  ParserConfig cfg = thinking_config("<think>", "</think>", false);
  cfg.thinking = false;
  std::string_view text = "<think>\nreasoning\n</think>\n\nAnswer.";
  check_thinking(cfg, text, {std::string(text), "", {}});
  cfg.starts_in_thinking = true;
  check_thinking(cfg, text, {std::string(text), "", {}});
}

TEST(OutputParserThinking, WithToolCalls) {
  ParserConfig cfg = thinking_config("<think>", "</think>", false);
  cfg.tool_tag = "<tool_call>";
  cfg.tool_names = {"get_current_weather", "get_time"};
  // Qwen 3: think, then call.
  check_thinking(
      cfg,
      "<think>\nThe user wants the weather in Paris; I should call get_current_weather.\n"
      "</think>\n\n<tool_call>\n"
      R"j({"name": "get_current_weather", "arguments": {"location": "Paris"}})j"
      "\n</tool_call>",
      {"",
       "The user wants the weather in Paris; I should call get_current_weather.\n",
       {{"get_current_weather", R"j({"location": "Paris"})j"}}});
  // A call written inside the thinking is thinking, not a call.
  check_thinking(cfg,
                 "<think>I could send <tool_call>"
                 R"j({"name": "get_time", "arguments": {}})j"
                 "</tool_call> but no.</think>It is late.",
                 {"It is late.",
                  "I could send <tool_call>"
                  R"j({"name": "get_time", "arguments": {}})j"
                  "</tool_call> but no.",
                  {}});
  // Thinking, an answer, then two calls; the prompt opened the block.
  cfg.starts_in_thinking = true;
  check_thinking(cfg,
                 "Two lookups needed.</think>Let me check.\n<tool_call>\n"
                 R"j({"name": "get_time", "arguments": {"timezone": "CET"}})j"
                 "\n</tool_call>\n<tool_call>\n"
                 R"j({"name": "get_current_weather", "arguments": {"location": "Oslo"}})j"
                 "\n</tool_call>",
                 {"Let me check.\n",
                  "Two lookups needed.",
                  {{"get_time", R"j({"timezone": "CET"})j"},
                   {"get_current_weather", R"j({"location": "Oslo"})j"}}});
}

TEST(OutputParserThinking, WithJsonTagToolCalls) {
  // A "{"-tag model that thinks: the answer after the block starts with the call.
  ParserConfig cfg = thinking_config("<think>", "</think>", false);
  cfg.tool_tag = "{";
  cfg.tool_names = {"get_time"};
  check_thinking(cfg,
                 "<think>Need the time.</think>\n"
                 R"j({"name": "get_time", "parameters": {"timezone": "UTC"}})j",
                 {"", "Need the time.", {{"get_time", R"j({"timezone": "UTC"})j"}}});
}

}  // namespace
}  // namespace vkllm::prompt::testing
