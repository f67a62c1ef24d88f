// Separates a model's thinking block from its answer as the text streams, the way Ollama's
// thinking parser does (compat §5.5): the block counts only when the output opens with the tag
// (after whitespace), whitespace right after either tag is dropped, and there is one block.
#pragma once

#include <string>
#include <string_view>

namespace vkllm::prompt {

class ThinkingSplitter {
 public:
  ThinkingSplitter(std::string open_tag, std::string close_tag, bool starts_inside);

  // Appends what is decided to `thinking` and `content`; a possible tag at the end is held.
  void feed(std::string_view text, std::string& thinking, std::string& content);
  // End of output: a held partial tag is text after all.
  void finish(std::string& thinking, std::string& content);

 private:
  enum class State { kBeforeOpen, kAfterOpen, kThinking, kAfterClose, kDone };

  std::string open_, close_;
  State state_;
  std::string held_;
};

}  // namespace vkllm::prompt
