#include "engine/tokenizer/spm_tokenizer.h"

#include <sentencepiece_processor.h>

#include <unordered_map>

#include "engine/tokenizer/spm_model_proto.h"
#include "engine/tokenizer/utf8.h"

namespace vkllm::tokenizer {
namespace {

// The next code point of text, with SentencePiece's space symbol read as the space it stands for.
uint32_t text_codepoint(std::string_view text, size_t& pos) {
  const uint32_t cp = utf8::decode(text, pos);
  return cp == 0x2581 ? uint32_t{' '} : cp;
}

}  // namespace

SpmTokenizer::SpmTokenizer(Vocab vocab)
    : Tokenizer(std::move(vocab)),
      processor_(std::make_unique<sentencepiece::SentencePieceProcessor>()) {
  const auto status = processor_->LoadFromSerializedProto(build_sentencepiece_model(vocab_));
  if (!status.ok()) {
    throw TokenizerError("tokenizer: sentencepiece rejected the GGUF vocabulary: " +
                         std::string(status.message()));
  }
  for (int32_t id = 0; id < vocab_.size(); ++id) {
    const TokenType t = vocab_.type(id);
    if (t != TokenType::kNormal && t != TokenType::kUserDefined && t != TokenType::kUnused) {
      continue;  // control, unknown and byte pieces never span two characters of text
    }
    const std::string& text = vocab_.text(id);
    size_t pos = 0;
    uint32_t prev = text_codepoint(text, pos);
    while (pos < text.size()) {
      const uint32_t cp = text_codepoint(text, pos);
      if (prev < 128 && cp < 128) {
        ascii_pairs_.set(prev * 128 + cp);
      } else {
        other_pairs_.insert((uint64_t{prev} << 32) | cp);
      }
      prev = cp;
    }
  }
  build_pieces();
}

SpmTokenizer::~SpmTokenizer() = default;

std::string SpmTokenizer::piece_of(int32_t id) const {
  return spm_piece_bytes(vocab_, id);
}

void SpmTokenizer::encode_fragment(std::string_view text, bool at_text_start,
                                   std::vector<int32_t>& out) const {
  std::string with_prefix;
  if (at_text_start && vocab_.add_space_prefix) {
    with_prefix.reserve(text.size() + 1);
    with_prefix.push_back(' ');
    with_prefix.append(text);
    text = with_prefix;
  }
  std::unordered_map<std::string_view, std::pair<size_t, size_t>> seen;
  size_t start = 0, pos = 0;
  uint32_t prev = text_codepoint(text, pos);
  while (start < text.size()) {
    // Extend the segment while its last character and the next one may be in one piece.
    size_t cut = pos;
    while (cut < text.size()) {
      size_t next_pos = cut;
      const uint32_t cp = text_codepoint(text, next_pos);
      const bool join = joinable(prev, cp);
      prev = cp;
      pos = next_pos;
      if (!join) break;
      cut = next_pos;
    }
    const std::string_view segment = text.substr(start, cut - start);
    start = cut;
    auto [it, inserted] = seen.try_emplace(segment);
    if (!inserted) {
      const auto [first, count] = it->second;
      out.reserve(out.size() + count);
      for (size_t i = 0; i < count; ++i) out.push_back(out[first + i]);
      continue;
    }
    const size_t first = out.size();
    encode_chunk(segment, out);
    it->second = {first, out.size() - first};
  }
}

bool SpmTokenizer::joinable(uint32_t a, uint32_t b) const {
  if (a < 128 && b < 128) return ascii_pairs_.test(a * 128 + b);
  return other_pairs_.count((uint64_t{a} << 32) | b) != 0;
}

void SpmTokenizer::encode_chunk(std::string_view text, std::vector<int32_t>& out) const {
  std::vector<int> ids;
  const auto status = processor_->Encode(text, &ids);
  if (!status.ok()) {
    throw TokenizerError("tokenizer: sentencepiece failed to encode: " +
                         std::string(status.message()));
  }
  out.insert(out.end(), ids.begin(), ids.end());
}

}  // namespace vkllm::tokenizer
