// Byte-level BPE ("gpt2" vocabularies): regex pre-tokenization, bytes mapped to printable
// characters, then merges applied lowest rank first within each word.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/gguf/gguf_file.h"
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
  struct Merge {
    int32_t rank;
    int32_t merged;
  };
  static uint64_t pair_key(int32_t left, int32_t right) {
    return (uint64_t{static_cast<uint32_t>(left)} << 32) | static_cast<uint32_t>(right);
  }
  void encode_word(std::string_view word, std::vector<int32_t>& out) const;

  BpePreTokenizer pre_;
  std::unordered_map<uint64_t, Merge> merges_;
  int32_t byte_token_[256];  // the token of each byte's character, -1 if absent
};

}  // namespace vkllm::tokenizer
