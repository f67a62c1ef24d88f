// SentencePiece-style BPE ("gemma4" vocabularies, Gemma 4): BPE merges over raw UTF-8 text whose
// spaces are written as U+2581 (▁), with SentencePiece's <0xXX> byte tokens for characters the
// vocabulary lacks. As llama.cpp's "gemma4" pre-tokenizer: the text is cut only into runs of
// newlines and runs of everything else, and a newline run that is a token stays whole.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/tokenizer/bpe_merges.h"
#include "engine/tokenizer/tokenizer.h"

namespace vkllm::tokenizer {

class SpmBpeTokenizer final : public Tokenizer {
 public:
  // merges: tokenizer.ggml.merges ("left right" per entry, in rank order).
  SpmBpeTokenizer(Vocab vocab, const std::vector<std::string>& merges);

 protected:
  void encode_fragment(std::string_view text, bool at_text_start,
                       std::vector<int32_t>& out) const override;
  std::string piece_of(int32_t id) const override;

 private:
  void encode_run(std::string_view run, std::vector<int32_t>& out) const;

  BpeMerges merges_;
  std::array<int32_t, 256> byte_token_;  // the <0xXX> token of each byte, -1 if absent
};

}  // namespace vkllm::tokenizer
