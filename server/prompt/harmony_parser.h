// Parses gpt-oss's Harmony output as it streams, the way Ollama's harmony parser does: the output
// is a series of messages `<|start|>ROLE<|channel|>CHANNEL [to=RECIPIENT] [<|constrain|>json]
// <|message|>TEXT<|end|>`, the first one already opened by the prompt (`<|start|>assistant`, or
// the prefilled last assistant message). The analysis channel is thinking; commentary and final
// are content; a message with a recipient (`to=functions.NAME`, or a built-in tool such as
// `browser.search`) is a tool call whose text is the arguments object; a message with an unknown
// or no channel is content. `<|return|>` and `<|call|>` end a message as `<|end|>` does (the
// server stops at them, as they end the turn).
//
// Where Ollama drops text (outside any message, or a header that never completes), vkllm keeps
// it as content; arguments that are not a JSON object are an error, as in Ollama.
#pragma once

#include <string>
#include <string_view>

#include "server/prompt/harmony_names.h"
#include "server/prompt/output_parser.h"

namespace vkllm::prompt {

class HarmonyParser {
 public:
  // prefill: "" (a new assistant message), "final" or "analysis" (the prompt ends inside the
  // last assistant message's final or analysis channel); names: the request's tools.
  HarmonyParser(std::string_view prefill, HarmonyFunctionNames names);

  // Appends what is decided to `out`; a possible tag at the end is held. Tool calls come out
  // when their message ends.
  void feed(std::string_view text, ParsedDelta& out);
  // End of output: the held text is decided, an unfinished tool call is parsed.
  void finish(ParsedDelta& out);

 private:
  enum class State { kBetweenMessages, kHeader, kBody };
  enum class Route { kContent, kThinking, kToolCall };

  void start_body(std::string_view header);
  void end_message(ParsedDelta& out);
  void emit(std::string_view text, ParsedDelta& out);

  HarmonyFunctionNames names_;
  State state_ = State::kHeader;
  Route route_ = Route::kContent;
  std::string held_;
  size_t implicit_role_ = 0;  // bytes at the start of held_ the prompt wrote (the implicit role)
  std::string tool_name_;     // recipient of the message being read as a tool call
  std::string tool_text_;
};

}  // namespace vkllm::prompt
