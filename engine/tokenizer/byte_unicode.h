// GPT-2's reversible byte <-> printable-character mapping used by byte-level BPE vocabularies:
// every byte is written as one Unicode character so that token texts are printable.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace vkllm::tokenizer::byte_unicode {

// The UTF-8 text of the character standing for byte b.
const std::string& char_of_byte(uint8_t b);
// The byte a character stands for, or -1 if the code point is not one of the 256.
int byte_of_codepoint(uint32_t cp);
// Maps every byte of raw to its character ("hello world" -> "helloĠworld").
std::string encode(std::string_view raw);
// The inverse; characters outside the mapping are copied through unchanged.
std::string decode(std::string_view mapped);

}  // namespace vkllm::tokenizer::byte_unicode
