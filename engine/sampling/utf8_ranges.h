// Sets of Unicode code points as grammar fragments over UTF-8 bytes: exactly the well-formed
// encodings of the set's members (no surrogates, nothing past U+10FFFF), for character classes
// that reach beyond ASCII (GBNF's [^"\\] or [\u4e00-\u9fff]).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "engine/sampling/grammar.h"

namespace vkllm::sampling {

inline constexpr uint32_t kMaxCodePoint = 0x10ffff;

// Inclusive ranges; any order, may overlap.
using CodePointRanges = std::vector<std::pair<uint32_t, uint32_t>>;

// Sorted, merged, clipped to [0, kMaxCodePoint].
CodePointRanges normalized(CodePointRanges ranges);
// Every code point not in `ranges` (normalized).
CodePointRanges complement(const CodePointRanges& ranges);
// One code point of the set (surrogates left out); the set must not be empty.
grammar::Frag code_points(const CodePointRanges& ranges);
std::string utf8_encode(uint32_t cp);

}  // namespace vkllm::sampling
