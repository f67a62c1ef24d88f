// Byte-level BPE ("gpt2" vocabularies): regex pre-tokenization, bytes mapped to printable
// characters, then merges applied lowest rank first within each word.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/tokenizer/bpe_merges.h"
#include "engine/tokenizer/bpe_pretokenizer.h"
#include "engine/tokenizer/tokenizer.h"

namespace vkllm::tokenizer {

class BpeTokenizer final : public Tokenizer {
 public:
  // merges: tokenizer.ggml.merges ("left right" per line, in rank order).
  BpeTokenizer(Vocab vocab, const std::vector<std::string>& merges);

 protected:
  void encode_fragment(std::string_view text, bool at_text_start,
                       std::vector<int32_t>& out) const override;
  std::string piece_of(int32_t id) const override;

 private:
  void encode_word(std::string_view word, std::vector<int32_t>& out) const;

  BpePreTokenizer pre_;
  BpeMerges merges_;
  int32_t byte_token_[256];  // the token of each byte's character, -1 if absent
};

}  // namespace vkllm::tokenizer
