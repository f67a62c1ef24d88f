#include "engine/tokenizer/spm_model_proto.h"

#include <array>
#include <cstring>
#include <unordered_set>
#include <vector>

#include "engine/tokenizer/tokenizer_error.h"

namespace vkllm::tokenizer {
namespace {

// Protobuf wire format: each field is a varint key (field number << 3 | wire type).
enum WireType : uint32_t { kVarint = 0, kFixed32 = 5, kLengthDelimited = 2 };

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}
void put_key(std::string& out, uint32_t field, WireType type) {
  put_varint(out, (field << 3) | type);
}
void put_bytes(std::string& out, uint32_t field, std::string_view bytes) {
  put_key(out, field, kLengthDelimited);
  put_varint(out, bytes.size());
  out.append(bytes);
}
void put_int(std::string& out, uint32_t field, int64_t v) {
  put_key(out, field, kVarint);
  put_varint(out, static_cast<uint64_t>(v));  // negative int32 is sign-extended to 64 bits
}
void put_float(std::string& out, uint32_t field, float v) {
  put_key(out, field, kFixed32);
  char b[4];
  std::memcpy(b, &v, 4);  // little-endian host (x86-64, aarch64)
  out.append(b, 4);
}

// sentencepiece_model.proto field numbers.
namespace model_proto {
constexpr uint32_t kPieces = 1, kTrainerSpec = 2, kNormalizerSpec = 3;
}
namespace piece {
constexpr uint32_t kPiece = 1, kScore = 2, kType = 3;
}
namespace trainer {
constexpr uint32_t kModelType = 3, kByteFallback = 35, kUnkId = 40, kBosId = 41, kEosId = 42,
                   kPadId = 43;
constexpr int kModelTypeUnigram = 1, kModelTypeBpe = 2;
}  // namespace trainer
namespace normalizer {
constexpr uint32_t kName = 1, kPrecompiledCharsmap = 2, kAddDummyPrefix = 3,
                   kRemoveExtraWhitespaces = 4, kEscapeWhitespaces = 5;
}

constexpr std::string_view kSpaceSymbol = "\xE2\x96\x81";  // U+2581, SentencePiece's space

}  // namespace

std::string spm_piece_bytes(const Vocab& vocab, int32_t id) {
  const std::string& text = vocab.text(id);
  switch (vocab.type(id)) {
    case TokenType::kByte:
      if (int b = byte_of_piece(text); b >= 0) return std::string(1, static_cast<char>(b));
      return text;
    case TokenType::kUserDefined:
      return text;
    default:
      break;
  }
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    if (text.compare(pos, kSpaceSymbol.size(), kSpaceSymbol) == 0) {
      out.push_back(' ');
      pos += kSpaceSymbol.size();
    } else {
      out.push_back(text[pos++]);
    }
  }
  return out;
}

int byte_of_piece(const std::string& t) {
  if (t.size() != 6 || t.compare(0, 3, "<0x") != 0 || t[5] != '>') return -1;
  int v = 0;
  for (int i = 3; i < 5; ++i) {
    const char c = t[static_cast<size_t>(i)];
    v *= 16;
    if (c >= '0' && c <= '9')
      v += c - '0';
    else if (c >= 'A' && c <= 'F')
      v += c - 'A' + 10;
    else
      return -1;
  }
  return v;
}

std::string build_sentencepiece_model(const Vocab& vocab) {
  if (!vocab.valid(vocab.unk)) {
    throw TokenizerError(
        "tokenizer: SPM vocabulary has no unknown token (tokenizer.ggml.unknown_token_id)");
  }
  const int32_t n = vocab.size();
  std::array<bool, 256> have_byte{};
  for (int32_t id = 0; id < n; ++id) {
    if (vocab.type(id) != TokenType::kByte) continue;
    if (int b = byte_of_piece(vocab.text(id)); b >= 0) have_byte[static_cast<size_t>(b)] = true;
  }
  bool byte_fallback = true;
  for (bool h : have_byte) byte_fallback = byte_fallback && h;

  std::string out;
  out.reserve(static_cast<size_t>(n) * 24);
  std::unordered_set<std::string_view> used;
  used.reserve(static_cast<size_t>(n));
  std::string entry;
  for (int32_t id = 0; id < n; ++id) {
    std::string text = vocab.text(id);
    TokenType type = vocab.type(id);
    if (id == vocab.unk) {
      type = TokenType::kUnknown;
    } else if (type == TokenType::kUnknown) {
      type = TokenType::kControl;  // SentencePiece allows exactly one unknown piece
    } else if (type == TokenType::kByte && (!byte_fallback || byte_of_piece(text) < 0)) {
      type = TokenType::kControl;  // byte pieces only work with the full set of 256
    }
    if (text.empty() || used.count(text)) {
      text = "\x01vkllm-unreachable-" + std::to_string(id);
      type = TokenType::kControl;
    } else {
      used.insert(vocab.text(id));
    }
    entry.clear();
    put_bytes(entry, piece::kPiece, text);
    put_float(entry, piece::kScore,
              vocab.scores.empty() ? 0.0f : vocab.scores[static_cast<size_t>(id)]);
    put_int(entry, piece::kType, static_cast<int>(type));
    put_bytes(out, model_proto::kPieces, entry);
  }

  std::string trainer_spec;
  put_int(trainer_spec, trainer::kModelType, trainer::kModelTypeBpe);
  put_int(trainer_spec, trainer::kByteFallback, byte_fallback ? 1 : 0);
  put_int(trainer_spec, trainer::kUnkId, vocab.unk);
  put_int(trainer_spec, trainer::kBosId, vocab.valid(vocab.bos) ? vocab.bos : -1);
  put_int(trainer_spec, trainer::kEosId, vocab.valid(vocab.eos) ? vocab.eos : -1);
  put_int(trainer_spec, trainer::kPadId, vocab.valid(vocab.pad) ? vocab.pad : -1);
  put_bytes(out, model_proto::kTrainerSpec, trainer_spec);

  std::string normalizer_spec;
  put_bytes(normalizer_spec, normalizer::kName, "identity");
  put_int(normalizer_spec, normalizer::kAddDummyPrefix, 0);
  put_int(normalizer_spec, normalizer::kRemoveExtraWhitespaces, 0);
  put_int(normalizer_spec, normalizer::kEscapeWhitespaces, 1);
  put_bytes(out, model_proto::kNormalizerSpec, normalizer_spec);
  return out;
}

std::string build_unigram_normalizer_model(const Vocab& vocab,
                                           std::vector<std::string>& piece_texts) {
  piece_texts.clear();
  std::string out, entry;
  const auto add_piece = [&](const std::string& text, TokenType type) {
    entry.clear();
    put_bytes(entry, piece::kPiece, text);
    put_float(entry, piece::kScore, 0.0f);
    put_int(entry, piece::kType, static_cast<int>(type));
    put_bytes(out, model_proto::kPieces, entry);
    piece_texts.push_back(
        type == TokenType::kByte ? std::string(1, static_cast<char>(byte_of_piece(text))) : text);
  };
  // Unknown text (all of it but the user-defined pieces) falls back to its UTF-8 bytes; the
  // normal piece only keeps the unknown piece's score finite.
  add_piece("\x01vkllm-unknown", TokenType::kUnknown);
  add_piece("\x01vkllm-normal", TokenType::kNormal);
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) {
    add_piece(std::string("<0x") + kHex[b >> 4] + kHex[b & 15] + ">", TokenType::kByte);
  }
  std::unordered_set<std::string_view> used;
  for (int32_t id = 0; id < vocab.size(); ++id) {
    const std::string& text = vocab.text(id);
    if (vocab.type(id) != TokenType::kUserDefined || text.empty() || byte_of_piece(text) >= 0 ||
        !used.insert(text).second) {
      continue;
    }
    add_piece(text, TokenType::kUserDefined);
  }

  std::string trainer_spec;
  put_int(trainer_spec, trainer::kModelType, trainer::kModelTypeUnigram);
  put_int(trainer_spec, trainer::kByteFallback, 1);
  put_int(trainer_spec, trainer::kUnkId, 0);
  put_int(trainer_spec, trainer::kBosId, -1);
  put_int(trainer_spec, trainer::kEosId, -1);
  put_int(trainer_spec, trainer::kPadId, -1);
  put_bytes(out, model_proto::kTrainerSpec, trainer_spec);

  // llama.cpp's UGM normalizer puts one space before every word when it merges whitespace,
  // whatever add_space_prefix says: SentencePiece's dummy prefix does the same there.
  std::string normalizer_spec;
  if (vocab.precompiled_charsmap.empty()) {
    put_bytes(normalizer_spec, normalizer::kName, "identity");
  } else {
    put_bytes(normalizer_spec, normalizer::kName, "precompiled");
    put_bytes(normalizer_spec, normalizer::kPrecompiledCharsmap, vocab.precompiled_charsmap);
  }
  put_int(normalizer_spec, normalizer::kAddDummyPrefix,
          vocab.add_space_prefix || vocab.remove_extra_whitespaces ? 1 : 0);
  put_int(normalizer_spec, normalizer::kRemoveExtraWhitespaces,
          vocab.remove_extra_whitespaces ? 1 : 0);
  put_int(normalizer_spec, normalizer::kEscapeWhitespaces, 1);
  put_bytes(out, model_proto::kNormalizerSpec, normalizer_spec);
  return out;
}

}  // namespace vkllm::tokenizer
