// A tokenizer vocabulary as GGUF describes it (tokenizer.ggml.*): token texts, types, scores,
// special token ids, the add-BOS/EOS policy and (unigram) the normalizer settings, with
// llama.cpp's defaults per model type.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/gguf/gguf_file.h"

namespace vkllm::tokenizer {

// GGUF token types (the same numbering as SentencePiece's piece types).
enum class TokenType : int32_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

// kSpm: SentencePiece BPE ("llama"); kBpe: byte-level BPE ("gpt2"); kWordPiece: "bert";
// kUnigram: SentencePiece unigram with its normalizer ("t5": T5, XLM-RoBERTa); kSpmBpe: BPE
// merges over SentencePiece-style pieces (▁ for spaces, <0xXX> byte tokens: "gemma4", Gemma 4).
enum class VocabKind { kSpm, kBpe, kWordPiece, kUnigram, kSpmBpe };

struct Vocab {
  VocabKind kind = VocabKind::kSpm;
  std::string model;  // tokenizer.ggml.model
  std::string pre;    // tokenizer.ggml.pre ("default" when absent)
  std::vector<std::string> tokens;
  std::vector<TokenType> types;
  std::vector<float> scores;  // empty when the GGUF has none
  // Special-token split attributes: whitespace next to the token is dropped when it is split
  // out of text (llama.cpp sets these for Phi-3).
  std::vector<bool> lstrip, rstrip;
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>> token_to_id;

  int32_t bos = -1, eos = -1, eot = -1, eom = -1, unk = -1, pad = -1, sep = -1, cls = -1, mask = -1;
  bool add_bos = false, add_eos = false;
  bool add_space_prefix = true;  // SPM and unigram (default: true for SPM, false for unigram)
  // Unigram only: runs of whitespace collapse to one and the text's ends are trimmed
  // (tokenizer.ggml.remove_extra_whitespaces), and SentencePiece's compiled normalization rules
  // (tokenizer.ggml.precompiled_charsmap, e.g. NFKC; empty: none).
  bool remove_extra_whitespaces = false;
  std::string precompiled_charsmap;
  std::vector<int32_t> end_of_generation;  // sorted
  // Control, user-defined and unknown tokens, longest text first: the order in which they are
  // split out of text.
  std::vector<int32_t> special_tokens;

  int32_t size() const { return static_cast<int32_t>(tokens.size()); }
  bool valid(int32_t id) const { return id >= 0 && id < size(); }
  TokenType type(int32_t id) const { return types[static_cast<size_t>(id)]; }
  const std::string& text(int32_t id) const { return tokens[static_cast<size_t>(id)]; }
  int32_t find(std::string_view text) const;  // -1 if absent

  // Reads tokenizer.ggml.*; throws TokenizerError naming the key for missing or inconsistent
  // arrays and unknown model types.
  static Vocab from_gguf(const gguf::GgufFile& file);
};

}  // namespace vkllm::tokenizer
