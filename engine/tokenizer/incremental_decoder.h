// Turns a stream of token ids into text for streaming: each push returns only complete UTF-8
// characters, holding back the bytes of a character that later tokens finish (byte-fallback
// tokens <0xE2><0x82><0xAC>, or BPE tokens that split a character). Invalid byte sequences come
// out as U+FFFD, so the output is always valid UTF-8; for ids that decode to valid UTF-8 the
// concatenated output equals Tokenizer::decode of all of them.
#pragma once

#include <cstdint>
#include <string>

#include "engine/tokenizer/tokenizer.h"

namespace vkllm::tokenizer {

class IncrementalDecoder {
 public:
  // at_text_start: the ids begin a text, so the leading word-start space of SPM/WordPiece is
  // dropped as decode() does; false when continuing after a prompt (generated text keeps it).
  explicit IncrementalDecoder(const Tokenizer& tokenizer, bool at_text_start = true,
                              bool render_special = false);

  // The text that became complete with this token (possibly empty).
  std::string push(int32_t id);
  // Whatever is still held back (an unfinished character) as U+FFFD; call at end of stream.
  std::string finish();
  // Bytes held back waiting for the rest of a character.
  size_t pending_bytes() const { return pending_.size(); }

 private:
  const Tokenizer& tokenizer_;
  bool at_text_start_;
  bool render_special_;
  std::string pending_;
};

}  // namespace vkllm::tokenizer
