#include "engine/tokenizer/spm_model_proto.h"

#include <array>
#include <cstring>
#include <unordered_set>

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
constexpr int kModelTypeBpe = 2;
}  // namespace trainer
namespace normalizer {
constexpr uint32_t kName = 1, kAddDummyPrefix = 3, kRemoveExtraWhitespaces = 4,
                   kEscapeWhitespaces = 5;
}

}  // namespace

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

}  // namespace vkllm::tokenizer
