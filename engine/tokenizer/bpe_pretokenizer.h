// Splits text into the words byte-level BPE merges within, with the regex sequence llama.cpp
// uses for each tokenizer.ggml.pre. Each regex splits every piece from the previous one further;
// the text between matches stays a piece of its own.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace vkllm::tokenizer {

class BpePreTokenizer {
 public:
  // Throws TokenizerError for a pre-tokenizer name it does not know.
  explicit BpePreTokenizer(std::string_view pre);
  ~BpePreTokenizer();
  BpePreTokenizer(BpePreTokenizer&&) noexcept;

  // Appends the words of text (valid UTF-8) as views into it.
  void split(std::string_view text, std::vector<std::string_view>& words) const;
  // Whether the BPE merges may be skipped for words that are whole tokens (Llama 3 family).
  bool ignore_merges() const { return ignore_merges_; }

  // The pre-tokenizer names accepted (for error messages and tests).
  static std::vector<std::string> known_names();

 private:
  struct Regex;
  std::vector<std::unique_ptr<Regex>> regexes_;
  bool ignore_merges_ = false;
};

}  // namespace vkllm::tokenizer
