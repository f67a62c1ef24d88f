// UTF-8 helpers shared by the tokenizers and the incremental decoder.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace vkllm::tokenizer::utf8 {

// Length of the sequence a lead byte announces (1 for ASCII and for bytes that cannot start a
// sequence, so a scan always advances).
inline size_t sequence_length(uint8_t lead) {
  if (lead < 0xC0) return 1;
  if (lead < 0xE0) return 2;
  if (lead < 0xF0) return 3;
  if (lead < 0xF8) return 4;
  return 1;
}

// Length of the valid UTF-8 sequence at the start of s: 1-4, 0 if s starts with a sequence that
// is valid so far but cut short (more bytes could complete it), -1 if the first byte is invalid
// (stray continuation, overlong form, surrogate, beyond U+10FFFF).
int valid_sequence_length(std::string_view s);

bool is_valid(std::string_view s);

// Decodes one valid sequence at s[pos] and advances pos; invalid bytes decode as U+FFFD, one byte.
uint32_t decode(std::string_view s, size_t& pos);
void append(std::string& out, uint32_t codepoint);
std::vector<uint32_t> to_codepoints(std::string_view s);
// s with every byte that is not part of valid UTF-8 replaced by U+FFFD, as llama.cpp reads
// invalid input before pre-tokenizing it.
std::string sanitize(std::string_view s);

}  // namespace vkllm::tokenizer::utf8
