#include "engine/tokenizer/bpe_tokenizer.h"

#include <algorithm>
#include <string_view>
#include <unordered_map>

#include "engine/tokenizer/byte_unicode.h"
#include "engine/tokenizer/utf8.h"

namespace vkllm::tokenizer {

BpeTokenizer::BpeTokenizer(Vocab vocab, const std::vector<std::string>& merges)
    : Tokenizer(std::move(vocab)), pre_(vocab_.pre), merges_(vocab_, merges) {
  for (int b = 0; b < 256; ++b) {
    byte_token_[b] = vocab_.find(byte_unicode::char_of_byte(static_cast<uint8_t>(b)));
  }
  build_pieces();
}

std::string BpeTokenizer::piece_of(int32_t id) const {
  // User-defined tokens are stored as plain text; the others in the byte-to-character mapping.
  if (vocab_.type(id) == TokenType::kUserDefined) return vocab_.text(id);
  return byte_unicode::decode(vocab_.text(id));
}

void BpeTokenizer::encode_fragment(std::string_view text, bool /*at_text_start*/,
                                   std::vector<int32_t>& out) const {
  std::string sanitized;
  if (!utf8::is_valid(text)) {
    sanitized = utf8::sanitize(text);
    text = sanitized;
  }
  std::vector<std::string_view> words;
  pre_.split(text, words);
  // Words repeat a lot in real text: remember where each one's ids already are in out.
  std::unordered_map<std::string_view, std::pair<size_t, size_t>> seen;
  seen.reserve(std::min<size_t>(words.size(), 1 << 16));
  for (std::string_view word : words) {
    auto [it, inserted] = seen.try_emplace(word);
    if (!inserted) {
      const auto [start, count] = it->second;
      out.reserve(out.size() + count);
      for (size_t i = 0; i < count; ++i) out.push_back(out[start + i]);
      continue;
    }
    const size_t start = out.size();
    encode_word(word, out);
    it->second = {start, out.size() - start};
  }
}

void BpeTokenizer::encode_word(std::string_view word, std::vector<int32_t>& out) const {
  if (pre_.ignore_merges()) {
    if (int32_t id = vocab_.find(byte_unicode::encode(word)); id >= 0) {
      out.push_back(id);
      return;
    }
  }
  // One symbol per byte (each byte is one character of the mapped text).
  std::vector<int32_t> ids(word.size());
  for (size_t i = 0; i < word.size(); ++i) ids[i] = byte_token_[static_cast<uint8_t>(word[i])];
  merges_.apply(ids);
  for (size_t i = 0; i < ids.size(); ++i) {
    const int32_t id = ids[i];
    if (id == BpeMerges::kMerged) continue;
    if (id >= 0) {
      out.push_back(id);
      continue;
    }
    // A byte whose character is not in the vocabulary: llama.cpp falls back to single-byte
    // tokens of the character's text, if the vocabulary has any.
    for (char c : byte_unicode::char_of_byte(static_cast<uint8_t>(word[i]))) {
      if (int32_t b = vocab_.find(std::string_view(&c, 1)); b >= 0) out.push_back(b);
    }
  }
}

}  // namespace vkllm::tokenizer
