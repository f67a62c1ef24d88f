#include "engine/tokenizer/tokenizer.h"

#include <algorithm>

#include "engine/tokenizer/bpe_tokenizer.h"
#include "engine/tokenizer/spm_bpe_tokenizer.h"
#include "engine/tokenizer/spm_tokenizer.h"
#include "engine/tokenizer/unigram_tokenizer.h"
#include "engine/tokenizer/wordpiece_tokenizer.h"

namespace vkllm::tokenizer {

std::unique_ptr<Tokenizer> Tokenizer::from_gguf(const gguf::GgufFile& file) {
  Vocab vocab = Vocab::from_gguf(file);
  if (vocab.kind == VocabKind::kBpe || vocab.kind == VocabKind::kSpmBpe) {
    if (!file.has("tokenizer.ggml.merges")) {
      throw TokenizerError("tokenizer: BPE vocabulary has no tokenizer.ggml.merges");
    }
    const auto merges = file.get_array<std::string>("tokenizer.ggml.merges");
    if (vocab.kind == VocabKind::kSpmBpe) {
      return std::make_unique<SpmBpeTokenizer>(std::move(vocab), merges);
    }
    return std::make_unique<BpeTokenizer>(std::move(vocab), merges);
  }
  return from_vocab(std::move(vocab));
}

std::unique_ptr<Tokenizer> Tokenizer::from_vocab(Vocab vocab) {
  switch (vocab.kind) {
    case VocabKind::kSpm:
      return std::make_unique<SpmTokenizer>(std::move(vocab));
    case VocabKind::kWordPiece:
      return std::make_unique<WordPieceTokenizer>(std::move(vocab));
    case VocabKind::kUnigram:
      return std::make_unique<UnigramTokenizer>(std::move(vocab));
    case VocabKind::kBpe:
    case VocabKind::kSpmBpe:
      break;
  }
  throw TokenizerError("tokenizer: a BPE vocabulary needs its merges (use from_gguf)");
}

Tokenizer::Tokenizer(Vocab vocab) : vocab_(std::move(vocab)), splitter_(vocab_) {}

Tokenizer::~Tokenizer() = default;

void Tokenizer::build_pieces() {
  pieces_.resize(static_cast<size_t>(vocab_.size()));
  for (int32_t id = 0; id < vocab_.size(); ++id) {
    if (!is_control(id)) pieces_[static_cast<size_t>(id)] = piece_of(id);
  }
}

bool Tokenizer::is_control(int32_t id) const {
  const TokenType t = vocab_.type(id);
  return t == TokenType::kControl || t == TokenType::kUnknown;
}

bool Tokenizer::is_end_of_generation(int32_t id) const {
  return std::binary_search(vocab_.end_of_generation.begin(), vocab_.end_of_generation.end(), id);
}

bool Tokenizer::strips_leading_space() const {
  switch (vocab_.kind) {
    case VocabKind::kSpm:
    case VocabKind::kUnigram:
      return vocab_.add_space_prefix;
    case VocabKind::kWordPiece:
      return true;
    case VocabKind::kBpe:
    case VocabKind::kSpmBpe:
      break;
  }
  return false;
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special,
                                       bool parse_special) const {
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 4);
  if (add_special && vocab_.add_bos) out.push_back(vocab_.bos);
  bool at_text_start = true;
  for (const Fragment& f : splitter_.split(text, parse_special)) {
    if (f.token >= 0) {
      out.push_back(f.token);
      at_text_start = true;
    } else {
      encode_fragment(f.text, at_text_start, out);
      at_text_start = false;
    }
  }
  if (add_special && vocab_.add_eos) out.push_back(vocab_.eos);
  return out;
}

std::string Tokenizer::token_to_piece(int32_t id, bool render_special) const {
  if (!vocab_.valid(id)) {
    throw TokenizerError("tokenizer: token id " + std::to_string(id) +
                         " is outside the vocabulary (size " + std::to_string(vocab_.size()) + ")");
  }
  if (is_control(id)) return render_special ? vocab_.text(id) : std::string();
  return pieces_[static_cast<size_t>(id)];
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool render_special) const {
  std::string out;
  bool at_text_start = strips_leading_space();
  for (int32_t id : ids) {
    const size_t before = out.size();
    out += token_to_piece(id, render_special);
    if (at_text_start && out.size() > before) {
      if (out[before] == ' ') out.erase(before, 1);
      at_text_start = false;
    }
  }
  return out;
}

}  // namespace vkllm::tokenizer
