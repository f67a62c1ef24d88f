// LFM2's output as it streams, the way Ollama's lfm2 / lfm2-thinking parsers read it: when the
// request thinks (lfm2-thinking only) an answer that begins with <think> is thinking until
// </think>, one that does not is a direct answer; the rest is content, with tool calls between
// <|tool_call_start|> and <|tool_call_end|> in Python style (lfm2_tool_calls.h). With tools
// offered, an answer that is nothing but such calls without the wrapper tags is read as the
// calls (Ollama's fallback for models that forget them; vkllm holds such an answer until the
// end to decide). Whitespace around the tags is dropped however the stream cuts it. Where Ollama
// drops text (a call list it cannot read, a call never closed), vkllm keeps it as content.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "server/prompt/output_parser.h"

namespace vkllm::prompt {

class Lfm2Parser {
 public:
  // thinking: the parser thinks and the request asked to; assistant_prefill: the prompt continues
  // an answer (no thinking opens); tool_names: the request's tools.
  Lfm2Parser(bool thinking, bool assistant_prefill, std::vector<std::string> tool_names);

  void feed(std::string_view text, ParsedDelta& out);
  void finish(ParsedDelta& out);

 private:
  enum class State { kLookingForThinking, kThinking, kContent, kToolCalls };

  bool step(ParsedDelta& out, bool done);
  bool step_thinking(ParsedDelta& out, bool done);
  bool step_content(ParsedDelta& out, bool done);
  bool step_tool_calls(ParsedDelta& out, bool done);
  // Whether held content may still be a bare call list (starts "[name(" or "name(" of a tool).
  bool may_be_bare_call(std::string_view text) const;

  std::vector<std::string> tool_names_;
  State state_;
  bool trim_leading_ = false;  // after <think>, </think> or a call list
  bool at_answer_start_ = true;
  bool bare_call_ = false;  // holding the whole answer: it may be a bare call list
  bool any_calls_ = false;
  std::string buf_;
};

}  // namespace vkllm::prompt
