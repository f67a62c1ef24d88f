// The Unicode properties WordPiece pre-processing needs, from generated tables.
#pragma once

#include <cstdint>

namespace vkllm::tokenizer::unicode {

enum CodepointFlag : uint8_t {
  kWhitespace = 1,   // White_Space property
  kPunctuation = 2,  // general category P*
  kSymbol = 4,       // S*
  kControl = 8,      // Cc, Cf, Cs, Co (unassigned code points have no flags)
  kLetter = 16,      // L*
  kNumber = 32,      // N*
  kMark = 64,        // M*
};

uint8_t flags(uint32_t cp);
// The first code point of cp's canonical decomposition: the base letter of a precomposed
// accented letter ('é' -> 'e'), cp itself if it does not decompose.
uint32_t base_letter(uint32_t cp);
uint32_t to_lower(uint32_t cp);  // simple (one code point) lowercase mapping
// The CJK ideograph blocks BERT's basic tokenizer splits into single-character words.
bool is_cjk_ideograph(uint32_t cp);

}  // namespace vkllm::tokenizer::unicode
