// SentencePiece unigram ("t5" vocabularies: T5, XLM-RoBERTa), as llama.cpp's UGM tokenizer runs
// it. The sentencepiece library normalizes the text (the vocabulary's precompiled charsmap, e.g.
// NFKC, and its whitespace settings); the best segmentation is then found here, summing scores
// in double precision as llama.cpp (and Hugging Face's tokenizers) do: sentencepiece's own
// search sums in float, which breaks exact ties ("---" as "-" "--" or "--" "-") differently once
// the sums grow, so its tokens drift from llama.cpp's on long texts.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/tokenizer/tokenizer.h"

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace vkllm::tokenizer {

class UnigramTokenizer final : public Tokenizer {
 public:
  explicit UnigramTokenizer(Vocab vocab);
  ~UnigramTokenizer() override;

 protected:
  // Each fragment is normalized on its own, its dummy-prefix space included, as llama.cpp's UGM
  // tokenizer does (also after a special token).
  void encode_fragment(std::string_view text, bool at_text_start,
                       std::vector<int32_t>& out) const override;
  std::string piece_of(int32_t id) const override;

 private:
  std::string normalize(std::string_view text) const;
  // Calls f(id, length) for every piece that starts `text` at `start`, shortest first.
  template <typename F>
  void for_each_piece_at(std::string_view text, size_t start, F&& f) const;

  std::unique_ptr<sentencepiece::SentencePieceProcessor> normalizer_;
  std::vector<std::string> normalizer_pieces_;  // the text of each normalizer piece id
  // Normal, user-defined and unused pieces, sorted by their bytes (one id per text).
  std::vector<int32_t> sorted_pieces_;
  // The search's first two steps, looked up: the one-byte piece of each byte (-1: none) and the
  // range of sorted_pieces_ that starts with each two bytes (first byte * 256 + second).
  std::vector<int32_t> one_byte_piece_;
  std::vector<std::pair<uint32_t, uint32_t>> two_byte_range_;
  float unknown_score_ = 0;  // the lowest normal score minus 10, as sentencepiece
};

}  // namespace vkllm::tokenizer
