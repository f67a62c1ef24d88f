// The merge table of a BPE vocabulary (tokenizer.ggml.merges) and the merge loop both BPE
// tokenizers run within one word: adjacent symbols merge lowest rank first (leftmost on ties), as
// llama.cpp's BPE session does. Byte-level BPE ("gpt2") starts from one symbol per byte, the
// SentencePiece-style BPE of Gemma 4 from one symbol per UTF-8 character.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/tokenizer/vocab.h"

namespace vkllm::tokenizer {

class BpeMerges {
 public:
  // merges: "left right" per entry, in rank order. A merge whose parts or result are not tokens
  // could never produce a token and is skipped. Throws TokenizerError for an entry without a
  // separating space.
  BpeMerges(const Vocab& vocab, const std::vector<std::string>& merges);

  // Merges the symbols in place: ids[i] is the token of symbol i (-1 for a symbol that is no
  // token: it never merges). Afterwards each surviving symbol holds its final token (or -1) and
  // every symbol merged into its left neighbour holds kMerged; survivors keep their order.
  void apply(std::vector<int32_t>& ids) const;

  static constexpr int32_t kMerged = -2;

 private:
  struct Merge {
    int32_t rank;
    int32_t merged;
  };
  static uint64_t pair_key(int32_t left, int32_t right) {
    return (uint64_t{static_cast<uint32_t>(left)} << 32) | static_cast<uint32_t>(right);
  }

  std::unordered_map<uint64_t, Merge> merges_;
};

}  // namespace vkllm::tokenizer
