// Go literal syntax for the template parser: quoted strings (strconv.Unquote), character
// constants and integer literals with base prefixes and underscores.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace vkllm::prompt {

// The body of a "..." or '...' literal (quotes included in q); false on a bad escape.
bool go_unquote(std::string_view q, std::string& out);
// The single UTF-8 rune s holds (a character constant); false if s is not exactly one rune.
bool go_single_rune(const std::string& s, int64_t& r);
// A Go integer literal; false when text is not one, overflow set when it does not fit int64.
bool go_parse_int(std::string text, int64_t& out, bool& overflow);

}  // namespace vkllm::prompt
