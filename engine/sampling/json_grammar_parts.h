// The lexical pieces of JSON as grammar fragments: bounded whitespace, string characters (valid
// UTF-8, escapes without lone surrogates), numbers (optionally within integer bounds) and the
// string formats that have a grammar.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/sampling/grammar.h"

namespace vkllm::sampling::json_parts {

// Up to this many digits in an integer part (as llama.cpp's converter) or a fraction.
inline constexpr int kMaxDigits = 16;

// Whitespace between tokens: none, " ", or "\n"{1,2} then [ \t]{0,20}.
grammar::Frag ws();
// One character of a JSON string's content (one code point, possibly escaped).
grammar::Frag string_char();
// One character without escapes; never `"` or `\`.
grammar::Frag plain_char();
// One non-ASCII character (UTF-8), optionally not U+2028/U+2029 (what a regex "." skips).
grammar::Frag multibyte_char(bool except_line_separators);
// A string `"..."` of min..max characters (max < 0: unbounded).
grammar::Frag string_of(int min, int max);
// A string key that differs from every one of `names` (raw bytes, not JSON-escaped). The key is
// written without escapes so that the comparison is exact.
grammar::Frag key_excluding(const std::vector<std::string>& names);

// Integers in [lo, hi] (either open). Bounds beyond what kMaxDigits can write count as open.
grammar::Frag integer_in(std::optional<int64_t> lo, std::optional<int64_t> hi);
// Numbers (fraction, exponent up to two digits so that every value fits a double) without
// bounds; with integral bounds: no exponent.
grammar::Frag number();
grammar::Frag number_in(std::optional<int64_t> lo, std::optional<int64_t> hi);

// The value (without quotes) of a "format": date, time, date-time, uuid, email, ipv4.
// nullopt for formats without a grammar.
std::optional<grammar::Frag> string_format(const std::string& name);

}  // namespace vkllm::sampling::json_parts
