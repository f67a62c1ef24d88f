#include "engine/tokenizer/bpe_tokenizer.h"

#include <algorithm>
#include <string_view>

#include "engine/tokenizer/byte_unicode.h"
#include "engine/tokenizer/utf8.h"

namespace vkllm::tokenizer {
namespace {

// Text with every byte that is not part of valid UTF-8 replaced by U+FFFD, as llama.cpp reads
// invalid input before pre-tokenizing it.
std::string sanitize_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 16);
  size_t pos = 0;
  while (pos < text.size()) {
    const int n = utf8::valid_sequence_length(text.substr(pos));
    if (n > 0) {
      out.append(text.substr(pos, static_cast<size_t>(n)));
      pos += static_cast<size_t>(n);
    } else {
      out.append("\xEF\xBF\xBD");
      ++pos;
    }
  }
  return out;
}

struct Candidate {
  int32_t rank;
  int32_t left, right;        // symbol positions
  int32_t left_id, right_id;  // the symbols' tokens when queued; a merge changes them
  bool operator>(const Candidate& o) const {
    return rank != o.rank ? rank > o.rank : left > o.left;
  }
};

}  // namespace

BpeTokenizer::BpeTokenizer(Vocab vocab, const std::vector<std::string>& merges)
    : Tokenizer(std::move(vocab)), pre_(vocab_.pre) {
  for (int b = 0; b < 256; ++b) {
    byte_token_[b] = vocab_.find(byte_unicode::char_of_byte(static_cast<uint8_t>(b)));
  }
  merges_.reserve(merges.size());
  std::string merged;
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const std::string& line = merges[rank];
    const size_t space = line.find(' ', 1);
    if (space == std::string::npos) {
      throw TokenizerError("tokenizer: tokenizer.ggml.merges[" + std::to_string(rank) + "] = '" +
                           line + "' is not two tokens separated by a space");
    }
    const std::string_view left(line.data(), space);
    const std::string_view right(line.data() + space + 1, line.size() - space - 1);
    merged.assign(left).append(right);
    const int32_t l = vocab_.find(left), r = vocab_.find(right), m = vocab_.find(merged);
    // A merge whose parts or result are not tokens could never produce a token; skip it.
    if (l < 0 || r < 0 || m < 0) continue;
    merges_.try_emplace(pair_key(l, r), Merge{static_cast<int32_t>(rank), m});
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
    sanitized = sanitize_utf8(text);
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
  // One symbol per byte (each byte is one character of the mapped text), linked as a list.
  const auto n = static_cast<int32_t>(word.size());
  std::vector<int32_t> ids(word.size()), prev(word.size()), next(word.size());
  for (int32_t i = 0; i < n; ++i) {
    ids[static_cast<size_t>(i)] = byte_token_[static_cast<uint8_t>(word[static_cast<size_t>(i)])];
    prev[static_cast<size_t>(i)] = i - 1;
    next[static_cast<size_t>(i)] = i + 1 < n ? i + 1 : -1;
  }
  std::vector<Candidate> queue;
  auto consider = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const int32_t l = ids[static_cast<size_t>(left)], r = ids[static_cast<size_t>(right)];
    if (l < 0 || r < 0) return;
    auto it = merges_.find(pair_key(l, r));
    if (it == merges_.end()) return;
    queue.push_back(Candidate{it->second.rank, left, right, l, r});
    std::push_heap(queue.begin(), queue.end(), std::greater<>());
  };
  for (int32_t i = 0; i + 1 < n; ++i) consider(i, i + 1);
  while (!queue.empty()) {
    std::pop_heap(queue.begin(), queue.end(), std::greater<>());
    const Candidate c = queue.back();
    queue.pop_back();
    const auto l = static_cast<size_t>(c.left), r = static_cast<size_t>(c.right);
    // Stale if either side has merged with something else since it was queued.
    if (ids[l] != c.left_id || ids[r] != c.right_id || next[l] != c.right) continue;
    ids[l] = merges_.find(pair_key(c.left_id, c.right_id))->second.merged;
    ids[r] = -2;  // gone
    next[l] = next[r];
    if (next[r] >= 0) prev[static_cast<size_t>(next[r])] = c.left;
    consider(prev[l], c.left);
    consider(c.left, next[l]);
  }
  for (int32_t i = n > 0 ? 0 : -1; i >= 0; i = next[static_cast<size_t>(i)]) {
    const int32_t id = ids[static_cast<size_t>(i)];
    if (id >= 0) {
      out.push_back(id);
      continue;
    }
    // A byte whose character is not in the vocabulary: llama.cpp falls back to single-byte
    // tokens of the character's text, if the vocabulary has any.
    for (char c : byte_unicode::char_of_byte(static_cast<uint8_t>(word[static_cast<size_t>(i)]))) {
      if (int32_t b = vocab_.find(std::string_view(&c, 1)); b >= 0) out.push_back(b);
    }
  }
}

}  // namespace vkllm::tokenizer
