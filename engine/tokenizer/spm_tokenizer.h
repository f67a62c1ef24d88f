// SentencePiece BPE ("llama" vocabularies), run by the sentencepiece library on a model built
// from the GGUF vocabulary.
#pragma once

#include <bitset>
#include <memory>
#include <unordered_set>

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
  // Whether some piece SentencePiece can produce from text has code point a followed by b
  // (U+2581 counted as a space). Where it has none, no piece can span that place, so the text
  // is cut there without changing the result; the short segments of real text repeat a lot and
  // each distinct one goes through SentencePiece once per encode call.
  bool joinable(uint32_t a, uint32_t b) const;

  std::unique_ptr<sentencepiece::SentencePieceProcessor> processor_;
  std::bitset<128 * 128> ascii_pairs_;
  std::unordered_set<uint64_t> other_pairs_;
};

}  // namespace vkllm::tokenizer
