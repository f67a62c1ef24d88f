// Go literal syntax: quoted strings both ways (strconv.Unquote for the template parser,
// strconv.Quote's form for fmt's %q), character constants, integer literals with base prefixes
// and underscores, and the UTF-8 and escape pieces fmt and encoding/json share.
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

// `s` double-quoted with Go's escapes (\" \\ \a \b \f \n \r \t \v, \xNN for other control bytes).
std::string go_quote(const std::string& s);
// Appends the rune's UTF-8 bytes; a negative, surrogate or too large rune is U+FFFD, as in Go.
void append_utf8(std::string& out, int64_t rune);
// The two-character escape strconv.Quote and encoding/json both use for c (\" \\ \b \f \n \r \t),
// nullptr for any other byte.
const char* go_short_escape(unsigned char c);

}  // namespace vkllm::prompt
