#include "engine/tokenizer/unigram_tokenizer.h"

#include <sentencepiece_processor.h>

#include <algorithm>
#include <cfloat>

#include "engine/tokenizer/spm_model_proto.h"

namespace vkllm::tokenizer {
namespace {

// Length of the UTF-8 sequence a lead byte starts (1 for a stray continuation byte), as llama.cpp.
size_t utf8_sequence_length(char lead) {
  static constexpr size_t kLengths[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kLengths[static_cast<unsigned char>(lead) >> 4];
}

// The best segmentation of the text up to a position: its last piece and where that starts.
struct BestPath {
  int32_t id;
  size_t start;
  double score;
};

}  // namespace

UnigramTokenizer::UnigramTokenizer(Vocab vocab)
    : Tokenizer(std::move(vocab)),
      normalizer_(std::make_unique<sentencepiece::SentencePieceProcessor>()) {
  if (!vocab_.valid(vocab_.unk)) {
    throw TokenizerError(
        "tokenizer: unigram vocabulary has no unknown token (tokenizer.ggml.unknown_token_id)");
  }
  const auto status = normalizer_->LoadFromSerializedProto(
      build_unigram_normalizer_model(vocab_, normalizer_pieces_));
  if (!status.ok()) {
    throw TokenizerError("tokenizer: sentencepiece rejected the unigram normalizer: " +
                         std::string(status.message()));
  }
  float min_score = FLT_MAX;
  for (int32_t id = 0; id < vocab_.size(); ++id) {
    const TokenType t = vocab_.type(id);
    const float score = vocab_.scores.empty() ? 0.0f : vocab_.scores[static_cast<size_t>(id)];
    if (t == TokenType::kNormal) min_score = std::min(min_score, score);
    if ((t == TokenType::kNormal || t == TokenType::kUserDefined || t == TokenType::kUnused) &&
        !vocab_.text(id).empty()) {
      sorted_pieces_.push_back(id);
    }
  }
  unknown_score_ = min_score - 10.0f;
  // Where two pieces have the same text, the later id wins (llama.cpp's trie keeps the last).
  std::stable_sort(sorted_pieces_.begin(), sorted_pieces_.end(),
                   [&](int32_t a, int32_t b) { return vocab_.text(a) < vocab_.text(b); });
  std::vector<int32_t> unique;
  unique.reserve(sorted_pieces_.size());
  for (size_t i = 0; i < sorted_pieces_.size(); ++i) {
    if (i + 1 < sorted_pieces_.size() &&
        vocab_.text(sorted_pieces_[i]) == vocab_.text(sorted_pieces_[i + 1])) {
      continue;
    }
    unique.push_back(sorted_pieces_[i]);
  }
  sorted_pieces_ = std::move(unique);
  one_byte_piece_.assign(256, -1);
  two_byte_range_.assign(256 * 256, {0, 0});
  for (size_t i = 0; i < sorted_pieces_.size(); ++i) {
    const std::string& t = vocab_.text(sorted_pieces_[i]);
    const auto b0 = static_cast<unsigned char>(t[0]);
    if (t.size() == 1) {
      one_byte_piece_[b0] = sorted_pieces_[i];
      continue;
    }
    auto& [lo, hi] = two_byte_range_[b0 * 256u + static_cast<unsigned char>(t[1])];
    if (lo == hi) lo = static_cast<uint32_t>(i);
    hi = static_cast<uint32_t>(i + 1);
  }
  build_pieces();
}

UnigramTokenizer::~UnigramTokenizer() = default;

std::string UnigramTokenizer::piece_of(int32_t id) const {
  return spm_piece_bytes(vocab_, id);
}

std::string UnigramTokenizer::normalize(std::string_view text) const {
  std::vector<int> ids;
  const auto status = normalizer_->Encode(text, &ids);
  if (!status.ok()) {
    throw TokenizerError("tokenizer: sentencepiece failed to normalize: " +
                         std::string(status.message()));
  }
  std::string out;
  out.reserve(text.size() + 8);
  for (int id : ids) out += normalizer_pieces_.at(static_cast<size_t>(id));
  return out;
}

template <typename F>
void UnigramTokenizer::for_each_piece_at(std::string_view text, size_t start, F&& f) const {
  // Pieces that share the first d bytes with the text are contiguous in sorted_pieces_; each
  // further byte narrows the range. A piece exactly d + 1 bytes long sorts first in its range.
  const auto b0 = static_cast<unsigned char>(text[start]);
  if (one_byte_piece_[b0] >= 0) f(one_byte_piece_[b0], size_t{1});
  if (start + 1 >= text.size()) return;
  const auto [first, last] =
      two_byte_range_[b0 * 256u + static_cast<unsigned char>(text[start + 1])];
  auto lo = sorted_pieces_.begin() + first, hi = sorted_pieces_.begin() + last;
  for (size_t d = 1; start + d < text.size() && lo != hi; ++d) {
    const int c = static_cast<unsigned char>(text[start + d]);
    const auto byte_at = [&](int32_t id) {
      const std::string& t = vocab_.text(id);
      return t.size() > d ? static_cast<int>(static_cast<unsigned char>(t[d])) : -1;
    };
    lo = std::partition_point(lo, hi, [&](int32_t id) { return byte_at(id) < c; });
    hi = std::partition_point(lo, hi, [&](int32_t id) { return byte_at(id) == c; });
    if (lo != hi && vocab_.text(*lo).size() == d + 1) f(*lo, d + 1);
  }
}

void UnigramTokenizer::encode_fragment(std::string_view text, bool /*at_text_start*/,
                                       std::vector<int32_t>& out) const {
  const std::string normalized = normalize(text);
  const size_t n = normalized.size();
  if (n == 0) return;
  // Viterbi over byte positions, one code point at a time (llama.cpp's llm_tokenizer_ugm).
  std::vector<BestPath> best(n + 1, BestPath{vocab_.unk, 0, -DBL_MAX});
  best[0].score = 0;
  for (size_t start = 0; start < n;) {
    const size_t char_len = std::min(utf8_sequence_length(normalized[start]), n - start);
    const double here = best[start].score;
    bool whole_char = false;
    for_each_piece_at(normalized, start, [&](int32_t id, size_t len) {
      if (len == char_len) whole_char = true;
      // User-defined pieces score 0, above every normal piece's log probability.
      const double score = vocab_.type(id) == TokenType::kUserDefined || vocab_.scores.empty()
                               ? 0.0
                               : double{vocab_.scores[static_cast<size_t>(id)]};
      BestPath& end = best[start + len];
      if (here + score > end.score) end = BestPath{id, start, here + score};
    });
    if (!whole_char) {  // the character as the unknown token
      BestPath& end = best[start + char_len];
      if (here + unknown_score_ > end.score) {
        end = BestPath{vocab_.unk, start, here + double{unknown_score_}};
      }
    }
    start += char_len;
  }
  // Back from the end; a run of unknown characters becomes one unknown token.
  const size_t first = out.size();
  bool prev_unknown = false;
  for (size_t end = n; end > 0;) {
    const BestPath& p = best[end];
    const bool unknown = p.id == vocab_.unk;
    if (!(prev_unknown && unknown)) out.push_back(p.id);
    prev_unknown = unknown;
    end = p.start;
  }
  std::reverse(out.begin() + static_cast<std::ptrdiff_t>(first), out.end());
}

}  // namespace vkllm::tokenizer
