// SentencePiece BPE ("llama" vocabularies), run by the sentencepiece library on a model built
// from the GGUF vocabulary.
#pragma once

#include <memory>

#include "engine/tokenizer/tokenizer.h"

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace vkllm::tokenizer {

class SpmTokenizer final : public Tokenizer {
 public:
  explicit SpmTokenizer(Vocab vocab);
  ~SpmTokenizer() override;

 protected:
  void encode_fragment(std::string_view text, bool at_text_start,
                       std::vector<int32_t>& out) const override;
  std::string piece_of(int32_t id) const override;

 private:
  void encode_chunk(std::string_view text, std::vector<int32_t>& out) const;

  std::unique_ptr<sentencepiece::SentencePieceProcessor> processor_;
  // Whether no piece contains U+2581 after another character, so that a text can be cut in
  // front of every space that follows a non-space without changing the result (no merge can
  // cross such a cut). Long texts are then encoded in chunks, which keeps the merge queue small.
  bool can_split_at_spaces_ = false;
};

}  // namespace vkllm::tokenizer
