#include "engine/tokenizer/unicode.h"

#include <algorithm>

#include "engine/tokenizer/unicode_tables.h"

namespace vkllm::tokenizer::unicode {
namespace {

uint32_t lookup(const unicode_data::CodepointMap* table, size_t n, uint32_t cp) {
  const auto* end = table + n;
  const auto* it = std::lower_bound(
      table, end, cp, [](const unicode_data::CodepointMap& m, uint32_t c) { return m.from < c; });
  return (it != end && it->from == cp) ? it->to : cp;
}

}  // namespace

uint8_t flags(uint32_t cp) {
  using unicode_data::FlagRange;
  const auto* begin = unicode_data::kFlagRanges;
  const auto* end = begin + unicode_data::kFlagRangeCount;
  const auto* it =
      std::upper_bound(begin, end, cp, [](uint32_t c, const FlagRange& r) { return c < r.first; });
  if (it == begin) return 0;
  --it;
  return cp <= it->last ? it->flags : 0;
}

uint32_t base_letter(uint32_t cp) {
  if (cp < 0xC0) return cp;
  return lookup(unicode_data::kBaseLetters, unicode_data::kBaseLetterCount, cp);
}

uint32_t to_lower(uint32_t cp) {
  if (cp < 0x80) return (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp;
  return lookup(unicode_data::kLowercase, unicode_data::kLowercaseCount, cp);
}

bool is_cjk_ideograph(uint32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
         (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
         (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

}  // namespace vkllm::tokenizer::unicode
