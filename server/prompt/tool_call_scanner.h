// Finds tool calls in a model's answer as it streams (compat §5.5, Ollama's generic parser made
// to read the output of the llama 3.x, qwen, mistral, command-r, granite and phi-4 families).
//
// Before the tool-call tag everything is content. After it the scanner reads calls one after the
// other: a balanced JSON object holding a call (`name`/`tool_name` with `arguments`/`parameters`
// as an object or a JSON string, or `{"<tool>": {...}}`, found recursively through nested objects
// and arrays), or a known tool name followed by its arguments object (mistral's
// `name[ARGS]{...}`). Separators, brackets and the families' closing tags between calls are
// skipped. Text that cannot be a call ends the calls: if no call came from the tag, the tag and
// what follows are content after all. With the JSON tags `{` and `[` calls are only looked for
// while the answer so far is whitespace, as Ollama does (an answer opening with either counts).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "server/prompt/prompt.h"

namespace vkllm::prompt {

class ToolCallScanner {
 public:
  ToolCallScanner(std::string tag, std::vector<std::string> tool_names);

  // Appends decided content and complete calls (name and arguments only); text that may still
  // be a tag or a call is held.
  void feed(std::string_view text, std::string& content, std::vector<ToolCall>& calls);
  // End of output: what waited for more text is decided; an unfinished call becomes content.
  void finish(std::string& content, std::vector<ToolCall>& calls);

 private:
  enum class Match { kNo, kPartial, kFull };
  // Where a balanced-object scan stopped, so a long object is not rescanned on every piece.
  struct ObjectScan {
    size_t start = std::string::npos;
    size_t pos = 0;
    int depth = 0;
    bool in_string = false, escaped = false;
  };

  void look_for_tag(std::string& content);
  // Reads calls from cursor_ on; true when it needs more text, false when the text there cannot
  // be a call.
  bool read_calls(std::vector<ToolCall>& calls);
  void give_up_region(std::string& content);
  // Length of the complete object starting at `start`, 0 when it is not complete yet.
  size_t object_end(size_t start);
  Match match_tag(size_t pos, std::string_view tag, size_t& length) const;
  Match match_name(size_t pos, size_t& length) const;
  void collect_calls(const nlohmann::ordered_json& value, std::vector<ToolCall>& calls) const;
  bool known(std::string_view name) const;

  std::string tag_;
  bool json_tag_;  // tag_ is "{" or "["
  std::vector<std::string> names_;
  std::vector<std::string> tags_;        // tag_ and the families' markers
  std::vector<std::string> skippables_;  // between calls

  bool finishing_ = false;  // no more text: a partial match is no match
  bool calling_ = false;
  bool json_allowed_;      // the answer so far is whitespace
  std::string buf_;        // held text; while calling, it starts at the region's tag
  size_t region_tag_ = 0;  // length of the tag that opened the region
  size_t cursor_ = 0;      // while calling: next unread byte of buf_
  int region_calls_ = 0;
  ObjectScan scan_;
};

}  // namespace vkllm::prompt
