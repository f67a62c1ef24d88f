#include "engine/tokenizer/wordpiece_tokenizer.h"

#include <algorithm>

#include "engine/tokenizer/unicode.h"
#include "engine/tokenizer/utf8.h"

namespace vkllm::tokenizer {
namespace {

constexpr std::string_view kWordStart = "\xE2\x96\x81";  // U+2581

}  // namespace

WordPieceTokenizer::WordPieceTokenizer(Vocab vocab) : Tokenizer(std::move(vocab)) {
  for (const std::string& t : vocab_.tokens)
    max_token_length_ = std::max(max_token_length_, t.size());
  build_pieces();
}

std::vector<std::string> WordPieceTokenizer::split_words(std::string_view text) {
  std::vector<std::string> words(1);
  size_t pos = 0;
  while (pos < text.size()) {
    const uint32_t cp = unicode::base_letter(utf8::decode(text, pos));
    const uint8_t flags = unicode::flags(cp);
    if (flags & unicode::kWhitespace) {
      if (!words.back().empty()) words.emplace_back();
      continue;
    }
    if (cp == 0 || cp == 0xFFFD || (flags & unicode::kControl)) continue;
    const uint32_t lower = unicode::to_lower(cp);
    if ((flags & unicode::kPunctuation) || (cp < 0x7F && (flags & unicode::kSymbol)) ||
        unicode::is_cjk_ideograph(cp)) {
      if (!words.back().empty()) words.emplace_back();
      utf8::append(words.back(), lower);
      words.emplace_back();
    } else {
      utf8::append(words.back(), lower);
    }
  }
  if (words.back().empty()) words.pop_back();
  return words;
}

void WordPieceTokenizer::encode_fragment(std::string_view text, bool /*at_text_start*/,
                                         std::vector<int32_t>& out) const {
  std::string word;
  for (const std::string& w : split_words(text)) {
    word.assign(kWordStart).append(w);
    const size_t first = out.size();
    bool complete = true;
    for (size_t i = 0; i < word.size();) {
      // Longest vocabulary piece starting at i.
      int32_t id = -1;
      size_t len = std::min(word.size() - i, max_token_length_);
      for (; len > 0; --len) {
        id = vocab_.find(std::string_view(word).substr(i, len));
        if (id >= 0) break;
      }
      if (id < 0) {
        complete = false;
        break;
      }
      out.push_back(id);
      i += len;
    }
    if (!complete) {
      // A word that cannot be spelt with the vocabulary becomes one unknown token.
      out.resize(first);
      if (vocab_.valid(vocab_.unk)) out.push_back(vocab_.unk);
    }
  }
}

std::string WordPieceTokenizer::piece_of(int32_t id) const {
  const std::string& t = vocab_.text(id);
  if (t.compare(0, kWordStart.size(), kWordStart) != 0) return t;
  std::string piece(1, ' ');
  piece.append(t, kWordStart.size());
  return piece;
}

}  // namespace vkllm::tokenizer
