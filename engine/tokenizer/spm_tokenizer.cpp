#include "engine/tokenizer/spm_tokenizer.h"

#include <sentencepiece_processor.h>

#include "engine/tokenizer/spm_model_proto.h"

namespace vkllm::tokenizer {
namespace {

constexpr std::string_view kSpaceSymbol = "\xE2\x96\x81";  // U+2581, SentencePiece's space

// SentencePiece's piece for the space character, as the vocabulary writes it.
std::string unescape_spaces(std::string_view piece) {
  std::string out;
  out.reserve(piece.size());
  size_t pos = 0;
  while (pos < piece.size()) {
    if (piece.compare(pos, kSpaceSymbol.size(), kSpaceSymbol) == 0) {
      out.push_back(' ');
      pos += kSpaceSymbol.size();
    } else {
      out.push_back(piece[pos++]);
    }
  }
  return out;
}

int byte_of_piece(const std::string& t) {
  if (t.size() != 6 || t.compare(0, 3, "<0x") != 0 || t[5] != '>') return -1;
  try {
    return std::stoi(t.substr(3, 2), nullptr, 16);
  } catch (const std::exception&) {
    return -1;
  }
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
  can_split_at_spaces_ = true;
  for (const std::string& t : vocab_.tokens) {
    // A space symbol after the first character that is not itself a space symbol.
    size_t pos = t.find(kSpaceSymbol, 1);
    while (pos != std::string::npos) {
      if (pos < kSpaceSymbol.size() ||
          t.compare(pos - kSpaceSymbol.size(), kSpaceSymbol.size(), kSpaceSymbol) != 0) {
        can_split_at_spaces_ = false;
        break;
      }
      pos = t.find(kSpaceSymbol, pos + 1);
    }
    if (!can_split_at_spaces_) break;
  }
  build_pieces();
}

SpmTokenizer::~SpmTokenizer() = default;

std::string SpmTokenizer::piece_of(int32_t id) const {
  switch (vocab_.type(id)) {
    case TokenType::kByte:
      if (int b = byte_of_piece(vocab_.text(id)); b >= 0)
        return std::string(1, static_cast<char>(b));
      return vocab_.text(id);
    case TokenType::kUserDefined:
      return vocab_.text(id);
    default:
      return unescape_spaces(vocab_.text(id));
  }
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
  // Chunks of a few KB cut before a space that follows a non-space (see can_split_at_spaces_).
  constexpr size_t kChunk = 4096;
  if (!can_split_at_spaces_ || text.size() <= kChunk) {
    encode_chunk(text, out);
    return;
  }
  size_t start = 0;
  while (start < text.size()) {
    size_t cut = text.size();
    if (text.size() - start > kChunk) {
      cut = start + kChunk;
      while (cut < text.size() && !(text[cut] == ' ' && text[cut - 1] != ' ')) ++cut;
    }
    encode_chunk(text.substr(start, cut - start), out);
    start = cut;
  }
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
