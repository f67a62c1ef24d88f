// Gemma 4's output as it streams, the way Ollama's gemma4 parser reads it: content until
// <|channel> (the thought channel: its "thought\n" name dropped, thinking until <channel|>) or
// <|tool_call> (a call "call:NAME{...}" until <tool_call|>, gemma4_tool_args.h); after a call,
// stray <tool_call|> and <|tool_response> markers are dropped. Thinking is reported only when the
// request thinks (otherwise the channel's text is dropped, as Ollama does); after tool results
// the prompt opened the channel, so the output starts as thinking. Whitespace before a tag and
// after a closing tag is dropped however the stream cuts it. Where Ollama drops a call whose
// arguments it cannot read, vkllm keeps its text as content.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "server/prompt/output_parser.h"

namespace vkllm::prompt {

class Gemma4Parser {
 public:
  // thinking: the parser thinks and the request asked to; after_tool_result: the prompt ends with
  // tool results (the thought channel is already open when thinking); tools: the request's.
  Gemma4Parser(bool thinking, bool after_tool_result, nlohmann::ordered_json tools);

  void feed(std::string_view text, ParsedDelta& out);
  void finish(ParsedDelta& out);

 private:
  enum class State { kContent, kThinking, kToolCall, kAfterToolCall };

  bool step(ParsedDelta& out, bool done);
  bool step_content(ParsedDelta& out, bool done);
  bool step_thinking(ParsedDelta& out, bool done);
  bool step_tool_call(ParsedDelta& out, bool done);
  bool step_after_tool_call(bool done);
  void add_thinking(ParsedDelta& out, std::string_view text) const;

  nlohmann::ordered_json tools_;
  bool thinking_;
  State state_ = State::kContent;
  bool strip_channel_name_ = false;  // "thought\n" may still follow <|channel>
  bool trim_leading_ = false;        // whitespace after <channel|> is dropped
  std::string buf_;
};

}  // namespace vkllm::prompt
