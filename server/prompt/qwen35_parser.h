// Qwen 3.5's output as it streams, the way Ollama's qwen3.5 parser reads it: the prompt opened a
// think block (unless think is false or the model continues a prefilled answer), so the output
// starts as thinking (one stray leading <think> is dropped) until </think>, or until <tool_call>
// when the model forgets to close it; whitespace around the close is dropped; the rest is the
// answer with XML tool calls (QwenToolCallParser). Held text that is not trailing whitespace is
// kept at the end of the output (Ollama drops it).
#pragma once

#include <string>
#include <string_view>

#include "server/prompt/output_parser.h"
#include "server/prompt/qwen_tool_calls.h"

namespace vkllm::prompt {

class Qwen35Parser {
 public:
  // thinking: the request thinks (think absent or not false); assistant_prefill: the prompt
  // continues a last assistant message that has content.
  Qwen35Parser(bool thinking, bool assistant_prefill, nlohmann::ordered_json tools);

  void feed(std::string_view text, ParsedDelta& out);
  void finish(ParsedDelta& out);

 private:
  enum class State { kThinking, kAfterThinking, kAnswer };

  // One step over buf_; false when it needs more text.
  bool step(ParsedDelta& out);
  bool step_thinking(ParsedDelta& out);

  QwenToolCallParser answer_;
  State state_;
  bool may_open_ = false;      // a leading <think> may still come
  bool trim_leading_ = false;  // whitespace at the start of the thinking is dropped
  std::string buf_;
};

}  // namespace vkllm::prompt
