#include "server/prompt/go_space.h"

namespace vkllm::prompt {

namespace {

bool is_go_space_rune(char32_t r) {
  switch (r) {
    case U'\t':
    case U'\n':
    case U'\v':
    case U'\f':
    case U'\r':
    case U' ':
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
      return true;
    default:
      return r >= 0x2000 && r <= 0x200A;
  }
}

size_t utf8_sequence_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if ((lead & 0xE0) == 0xC0) return 2;
  if ((lead & 0xF0) == 0xE0) return 3;
  if ((lead & 0xF8) == 0xF0) return 4;
  return 0;  // a continuation byte or an invalid lead
}

// The rune starting at s[i]; `length` 0 when the sequence is invalid, and `cut` when it is
// valid so far but runs past the end of s.
char32_t utf8_decode_at(std::string_view s, size_t i, size_t& length, bool& cut) {
  cut = false;
  const auto lead = static_cast<unsigned char>(s[i]);
  length = utf8_sequence_length(lead);
  if (length <= 1) return length == 1 ? lead : 0;
  char32_t r = lead & (0x7F >> length);
  for (size_t k = 1; k < length; ++k) {
    if (i + k >= s.size()) {
      cut = true;
      length = 0;
      return 0;
    }
    const auto c = static_cast<unsigned char>(s[i + k]);
    if ((c & 0xC0) != 0x80) {
      length = 0;
      return 0;
    }
    r = (r << 6) | (c & 0x3F);
  }
  return r;
}

// Start of the last rune of s[0, end): the last byte that is not a continuation byte (at most
// three continuation bytes back).
size_t utf8_last_rune_start(std::string_view s, size_t end) {
  size_t i = end - 1;
  for (int k = 0; k < 3 && i > 0 && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80; ++k) --i;
  return i;
}

}  // namespace

size_t go_leading_space(std::string_view s, bool* incomplete) {
  if (incomplete) *incomplete = false;
  size_t i = 0;
  while (i < s.size()) {
    size_t n = 0;
    bool cut = false;
    const char32_t r = utf8_decode_at(s, i, n, cut);
    if (cut && incomplete) *incomplete = true;
    if (n == 0 || !is_go_space_rune(r)) break;
    i += n;
  }
  return i;
}

size_t go_trailing_space(std::string_view s) {
  size_t end = s.size();
  while (end > 0) {
    const size_t start = utf8_last_rune_start(s, end);
    size_t n = 0;
    bool cut = false;
    const char32_t r = utf8_decode_at(s, start, n, cut);
    if (n != end - start || !is_go_space_rune(r)) break;
    end = start;
  }
  return s.size() - end;
}

size_t go_held_tail(std::string_view s) {
  if (s.empty()) return 0;
  const size_t start = utf8_last_rune_start(s, s.size());
  size_t n = 0;
  bool cut = false;
  utf8_decode_at(s, start, n, cut);
  if (!cut) return go_trailing_space(s);
  return s.size() - start + go_trailing_space(s.substr(0, start));
}

std::string go_trim_left_space(std::string_view s) {
  return std::string(s.substr(go_leading_space(s)));
}

std::string go_trim_right_space(std::string_view s) {
  return std::string(s.substr(0, s.size() - go_trailing_space(s)));
}

std::string go_trim_space(std::string_view s) {
  return go_trim_right_space(s.substr(go_leading_space(s)));
}

}  // namespace vkllm::prompt
