// Qwen3-Coder's and Qwen 3.5's answers as they stream, the way Ollama's qwen3-coder parser reads
// them: text is content until <tool_call>; what follows, up to </tool_call>, is one call in the
// XML form
//   <function=NAME>
//   <parameter=P>
//   value
//   </parameter>
//   </function>
// whose values are typed by the request's tool schema (qwen_tool_values.h). Whitespace around the
// tags is dropped, trailing whitespace is held until text follows it (so the answer never ends in
// it), and a tag cut anywhere by the stream is held until it is decided.
//
// Where Ollama fails the request (a call that is not the XML form) or drops text (a call never
// closed, a partial tag at the end), vkllm keeps it as content.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/prompt/prompt.h"

namespace vkllm::prompt {

class QwenToolCallParser {
 public:
  // tools: the request's tools array (their parameter types); null or empty for none.
  explicit QwenToolCallParser(nlohmann::ordered_json tools);

  // Appends decided content and complete calls (name and arguments only).
  void feed(std::string_view text, std::string& content, std::vector<ToolCall>& calls);
  // End of output: held text that is not trailing whitespace becomes content.
  void finish(std::string& content);

 private:
  nlohmann::ordered_json tools_;
  bool in_call_ = false;
  bool after_call_ = false;  // leading whitespace is still to be dropped
  std::string buf_;
};

}  // namespace vkllm::prompt
