#include "engine/tokenizer/incremental_decoder.h"

#include "engine/tokenizer/utf8.h"

namespace vkllm::tokenizer {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

}  // namespace

IncrementalDecoder::IncrementalDecoder(const Tokenizer& tokenizer, bool at_text_start,
                                       bool render_special)
    : tokenizer_(tokenizer),
      at_text_start_(at_text_start && tokenizer.strips_leading_space()),
      render_special_(render_special) {}

std::string IncrementalDecoder::push(int32_t id) {
  std::string piece = tokenizer_.token_to_piece(id, render_special_);
  if (at_text_start_ && !piece.empty()) {
    if (piece[0] == ' ') piece.erase(0, 1);
    at_text_start_ = false;
  }
  pending_ += piece;
  std::string out;
  size_t pos = 0;
  while (pos < pending_.size()) {
    const int n = utf8::valid_sequence_length(std::string_view(pending_).substr(pos));
    if (n == 0) break;  // an unfinished character: wait for the next token
    if (n < 0) {
      out += kReplacement;
      ++pos;
      continue;
    }
    out.append(pending_, pos, static_cast<size_t>(n));
    pos += static_cast<size_t>(n);
  }
  pending_.erase(0, pos);
  return out;
}

std::string IncrementalDecoder::finish() {
  std::string out;
  if (!pending_.empty()) out = kReplacement;
  pending_.clear();
  return out;
}

}  // namespace vkllm::tokenizer
