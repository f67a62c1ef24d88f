#include "engine/tokenizer/spm_bpe_tokenizer.h"

#include <cstdio>
#include <string_view>

#include "engine/tokenizer/utf8.h"

namespace vkllm::tokenizer {
namespace {

constexpr std::string_view kWordBoundary = "\xE2\x96\x81";  // U+2581, SentencePiece's space

std::string spaces_escaped(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 4);
  for (char c : text) {
    if (c == ' ') {
      out.append(kWordBoundary);
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::string spaces_unescaped(std::string_view piece) {
  std::string out;
  out.reserve(piece.size());
  for (size_t pos = 0; pos < piece.size();) {
    if (piece.substr(pos, kWordBoundary.size()) == kWordBoundary) {
      out.push_back(' ');
      pos += kWordBoundary.size();
    } else {
      out.push_back(piece[pos++]);
    }
  }
  return out;
}

// The byte a "<0xXX>" token stands for, -1 if the text is not of that form.
int byte_of_token_text(std::string_view t) {
  if (t.size() != 6 || t.substr(0, 3) != "<0x" || t[5] != '>') return -1;
  int value = 0;
  for (char c : t.substr(3, 2)) {
    value <<= 4;
    if (c >= '0' && c <= '9') {
      value |= c - '0';
    } else if (c >= 'A' && c <= 'F') {
      value |= c - 'A' + 10;
    } else if (c >= 'a' && c <= 'f') {
      value |= c - 'a' + 10;
    } else {
      return -1;
    }
  }
  return value;
}

}  // namespace

SpmBpeTokenizer::SpmBpeTokenizer(Vocab vocab, const std::vector<std::string>& merges)
    : Tokenizer(std::move(vocab)), merges_(vocab_, merges) {
  for (int b = 0; b < 256; ++b) {
    char text[7];
    std::snprintf(text, sizeof(text), "<0x%02X>", b);
    byte_token_[static_cast<size_t>(b)] = vocab_.find(text);
  }
  build_pieces();
}

std::string SpmBpeTokenizer::piece_of(int32_t id) const {
  const std::string& text = vocab_.text(id);
  switch (vocab_.type(id)) {
    case TokenType::kUserDefined:
      return text;
    case TokenType::kNormal:
    case TokenType::kByte: {
      // Ollama's converter, reading tokenizer.json, types the <0xXX> tokens as normal ones; its
      // runner still decodes them as bytes, and so does this.
      const int b = byte_of_token_text(text);
      if (b >= 0) return std::string(1, static_cast<char>(b));
      return vocab_.type(id) == TokenType::kNormal ? spaces_unescaped(text) : std::string();
    }
    default:  // unused tokens render as nothing, as in llama.cpp
      return {};
  }
}

void SpmBpeTokenizer::encode_fragment(std::string_view text, bool /*at_text_start*/,
                                      std::vector<int32_t>& out) const {
  // No dummy prefix: a fragment's leading space is just a ▁ like any other.
  const std::string escaped =
      spaces_escaped(utf8::is_valid(text) ? std::string(text) : utf8::sanitize(text));
  const std::string_view s = escaped;
  for (size_t pos = 0; pos < s.size();) {
    const bool newlines = s[pos] == '\n';
    size_t end = pos;
    while (end < s.size() && (s[end] == '\n') == newlines) ++end;
    const std::string_view run = s.substr(pos, end - pos);
    pos = end;
    // llama.cpp keeps a run of newlines whole when the vocabulary has it as one token (Gemma 4's
    // has them up to a length), whatever the merges would make of it.
    if (newlines) {
      if (int32_t id = vocab_.find(run); id >= 0) {
        out.push_back(id);
        continue;
      }
    }
    encode_run(run, out);
  }
}

void SpmBpeTokenizer::encode_run(std::string_view run, std::vector<int32_t>& out) const {
  // One symbol per UTF-8 character (the text is valid UTF-8 here).
  std::vector<int32_t> ids;
  std::vector<std::string_view> chars;
  ids.reserve(run.size());
  chars.reserve(run.size());
  for (size_t pos = 0; pos < run.size();) {
    const size_t n =
        std::min(utf8::sequence_length(static_cast<uint8_t>(run[pos])), run.size() - pos);
    chars.push_back(run.substr(pos, n));
    ids.push_back(vocab_.find(chars.back()));
    pos += n;
  }
  merges_.apply(ids);
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] == BpeMerges::kMerged) continue;
    if (ids[i] >= 0) {
      out.push_back(ids[i]);
      continue;
    }
    // A character that is no token: its bytes as <0xXX> tokens (none if the vocabulary lacks
    // them, as llama.cpp drops them).
    for (char c : chars[i]) {
      if (int32_t b = byte_token_[static_cast<uint8_t>(c)]; b >= 0) out.push_back(b);
    }
  }
}

}  // namespace vkllm::tokenizer
