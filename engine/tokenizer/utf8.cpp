#include "engine/tokenizer/utf8.h"

namespace vkllm::tokenizer::utf8 {

int valid_sequence_length(std::string_view s) {
  if (s.empty()) return 0;
  const auto b0 = static_cast<uint8_t>(s[0]);
  if (b0 < 0x80) return 1;
  size_t need;
  uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte (RFC 3629 table)
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 3;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 4;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return -1;
  }
  for (size_t i = 1; i < need; ++i) {
    if (i >= s.size()) return 0;
    const auto b = static_cast<uint8_t>(s[i]);
    const uint8_t l = i == 1 ? lo : 0x80, h = i == 1 ? hi : 0xBF;
    if (b < l || b > h) return -1;
  }
  return static_cast<int>(need);
}

bool is_valid(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    if (static_cast<uint8_t>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    const int n = valid_sequence_length(s.substr(i));
    if (n <= 0) return false;
    i += static_cast<size_t>(n);
  }
  return true;
}

uint32_t decode(std::string_view s, size_t& pos) {
  const int n = valid_sequence_length(s.substr(pos));
  if (n <= 0) {
    ++pos;
    return 0xFFFD;
  }
  const auto* p = reinterpret_cast<const uint8_t*>(s.data() + pos);
  pos += static_cast<size_t>(n);
  switch (n) {
    case 1:
      return p[0];
    case 2:
      return (uint32_t{p[0] & 0x1Fu} << 6) | (p[1] & 0x3Fu);
    case 3:
      return (uint32_t{p[0] & 0x0Fu} << 12) | (uint32_t{p[1] & 0x3Fu} << 6) | (p[2] & 0x3Fu);
    default:
      return (uint32_t{p[0] & 0x07u} << 18) | (uint32_t{p[1] & 0x3Fu} << 12) |
             (uint32_t{p[2] & 0x3Fu} << 6) | (p[3] & 0x3Fu);
  }
}

void append(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::vector<uint32_t> to_codepoints(std::string_view s) {
  std::vector<uint32_t> cps;
  cps.reserve(s.size());
  size_t pos = 0;
  while (pos < s.size()) cps.push_back(decode(s, pos));
  return cps;
}

std::string sanitize(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 16);
  size_t pos = 0;
  while (pos < s.size()) {
    const int n = valid_sequence_length(s.substr(pos));
    if (n > 0) {
      out.append(s.substr(pos, static_cast<size_t>(n)));
      pos += static_cast<size_t>(n);
    } else {
      out.append("\xEF\xBF\xBD");
      ++pos;
    }
  }
  return out;
}

}  // namespace vkllm::tokenizer::utf8
