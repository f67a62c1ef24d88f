// Go's unicode.IsSpace over UTF-8 text, for the built-in renderers and parsers that trim the way
// Ollama's Go code does (strings.TrimSpace, TrimLeftFunc/TrimRightFunc with unicode.IsSpace): the
// ASCII spaces, U+0085, U+00A0 and Unicode's space separators (U+1680, U+2000..U+200A, U+2028,
// U+2029, U+202F, U+205F, U+3000).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace vkllm::prompt {

// Bytes of whitespace at the start of s. `incomplete` is set when what follows them is the start
// of a UTF-8 sequence cut short at the end of s (streamed text: it may still be a space).
size_t go_leading_space(std::string_view s, bool* incomplete = nullptr);
// Bytes of whitespace at the end of s (an invalid or cut sequence is not whitespace).
size_t go_trailing_space(std::string_view s);
// Bytes at the end of s that streamed text must hold back because more text may still change
// what they are: a UTF-8 sequence cut short, and the whitespace before it.
size_t go_held_tail(std::string_view s);

std::string go_trim_space(std::string_view s);
std::string go_trim_left_space(std::string_view s);
std::string go_trim_right_space(std::string_view s);

}  // namespace vkllm::prompt
