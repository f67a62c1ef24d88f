// Splits a model's generated text, as it streams, into content, thinking and tool calls the way
// Ollama does for Go-template models (compat §5.5; §1.6 for streaming): text between thinking
// tags goes to `thinking`; after the tool-call tag, complete JSON tool calls naming a known tool
// become ToolCalls as soon as each one is complete; anything else is content. Feeding the text in
// any pieces gives the same result as feeding it whole. Models whose output is Harmony (gpt-oss)
// are parsed by HarmonyParser instead (ParserConfig::harmony), and models naming one of Ollama's
// built-in parsers by theirs (ParserConfig::builtin_parser: Qwen35Parser, QwenToolCallParser,
// Gemma4Parser, Lfm2Parser, MinistralParser).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "server/prompt/prompt.h"

namespace vkllm::prompt {

struct ParsedDelta {
  std::string content;
  std::string thinking;
  std::vector<ToolCall> tool_calls;  // complete calls, with fresh ids and running indexes
  // Output that cannot be answered (Harmony tool-call arguments that are not a JSON object):
  // the request fails with this message, as Ollama's does.
  std::string error;
  bool empty() const {
    return content.empty() && thinking.empty() && tool_calls.empty() && error.empty();
  }
};

class OutputParser {
 public:
  explicit OutputParser(ParserConfig config);
  ~OutputParser();
  OutputParser(OutputParser&&) noexcept;

  // Text that can be decided now; text that may still turn into a tag or tool call is held.
  ParsedDelta feed(std::string_view text);
  // End of generation: whatever was held, decided (an unfinished tool call becomes content).
  ParsedDelta finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace vkllm::prompt
