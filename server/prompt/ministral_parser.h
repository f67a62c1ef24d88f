// Mistral 3's output as it streams, the way Ollama's ministral parser reads it: content until
// [TOOL_CALLS] (then NAME[ARGS]{json}: one call per tag, the arguments a JSON object ended by its
// matching brace) or [THINK] (thinking until [/THINK], reported whatever the request's think, as
// Ollama does). Whitespace before a tag, after [/THINK] and at the very end of the answer is
// dropped however the stream cuts it. Where Ollama fails the request (a call naming a tool the
// request did not offer, arguments that are not a JSON object) or drops text (a call or tag cut
// off by the end of the output), vkllm keeps the text as content.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "server/prompt/output_parser.h"

namespace vkllm::prompt {

class MinistralParser {
 public:
  // tool_names: the request's tools.
  explicit MinistralParser(std::vector<std::string> tool_names);

  void feed(std::string_view text, ParsedDelta& out);
  void finish(ParsedDelta& out);

 private:
  enum class State { kContent, kThinking, kToolName, kToolArgs };

  bool step(ParsedDelta& out);
  void emit_call(std::string_view args, ParsedDelta& out);

  std::vector<std::string> tool_names_;
  State state_ = State::kContent;
  bool trim_leading_ = false;  // after [/THINK]
  std::string name_;           // the call's name while its arguments come
  std::string buf_;
};

}  // namespace vkllm::prompt
