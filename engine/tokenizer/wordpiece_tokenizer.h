// WordPiece ("bert" vocabularies) as llama.cpp runs it: accents stripped, lowercased, split at
// whitespace, punctuation and CJK ideographs, then greedy longest-match per word. Word-start
// pieces carry a leading U+2581 in the GGUF vocabulary (BERT's "##" continuations do not).
#pragma once

#include "engine/tokenizer/tokenizer.h"

namespace vkllm::tokenizer {

class WordPieceTokenizer final : public Tokenizer {
 public:
  explicit WordPieceTokenizer(Vocab vocab);

  // The normalised words encode() looks up (exposed for tests).
  static std::vector<std::string> split_words(std::string_view text);

 protected:
  void encode_fragment(std::string_view text, bool at_text_start,
                       std::vector<int32_t>& out) const override;
  std::string piece_of(int32_t id) const override;

 private:
  size_t max_token_length_ = 0;
};

}  // namespace vkllm::tokenizer
