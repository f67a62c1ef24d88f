#include "server/prompt/go_template_literals.h"

#include <cctype>

namespace vkllm::prompt {

const char* go_short_escape(unsigned char c) {
  switch (c) {
    case '"':
      return "\\\"";
    case '\\':
      return "\\\\";
    case '\b':
      return "\\b";
    case '\f':
      return "\\f";
    case '\n':
      return "\\n";
    case '\r':
      return "\\r";
    case '\t':
      return "\\t";
    default:
      return nullptr;
  }
}

std::string go_quote(const std::string& s) {
  static const char* hex = "0123456789abcdef";
  std::string out = "\"";
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (const char* e = go_short_escape(c)) {
      out += e;
    } else if (c == '\a') {
      out += "\\a";
    } else if (c == '\v') {
      out += "\\v";
    } else if (c < 0x20 || c == 0x7f) {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

void append_utf8(std::string& out, int64_t r) {
  if (r < 0 || r > 0x10FFFF || (r >= 0xD800 && r <= 0xDFFF)) r = 0xFFFD;
  if (r < 0x80) {
    out += static_cast<char>(r);
  } else if (r < 0x800) {
    out += static_cast<char>(0xC0 | (r >> 6));
    out += static_cast<char>(0x80 | (r & 0x3F));
  } else if (r < 0x10000) {
    out += static_cast<char>(0xE0 | (r >> 12));
    out += static_cast<char>(0x80 | ((r >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (r & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (r >> 18));
    out += static_cast<char>(0x80 | ((r >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((r >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (r & 0x3F));
  }
}

// Go's strconv.Unquote for "..." and '...' bodies; false on a bad escape.
bool go_unquote(std::string_view q, std::string& out) {
  out.clear();
  char quote = q.front();
  std::string_view s = q.substr(1, q.size() - 2);
  for (size_t i = 0; i < s.size();) {
    char c = s[i];
    if (c != '\\') {
      if (c == quote) return false;
      out += c;
      ++i;
      continue;
    }
    if (i + 1 >= s.size()) return false;
    char e = s[i + 1];
    i += 2;
    auto hex = [&](int n, uint32_t& v) {
      if (i + n > s.size()) return false;
      v = 0;
      for (int k = 0; k < n; ++k) {
        char h = s[i + k];
        if (!std::isxdigit(static_cast<unsigned char>(h))) return false;
        v = v * 16 +
            (std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (std::tolower(h) - 'a' + 10));
      }
      i += n;
      return true;
    };
    uint32_t v = 0;
    switch (e) {
      case 'a':
        out += '\a';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'v':
        out += '\v';
        break;
      case '\\':
        out += '\\';
        break;
      case '"':
      case '\'':
        if (e != quote) return false;
        out += e;
        break;
      case 'x':
        if (!hex(2, v)) return false;
        out += static_cast<char>(v);
        break;
      case 'u':
        if (!hex(4, v)) return false;
        append_utf8(out, v);
        break;
      case 'U':
        if (!hex(8, v)) return false;
        if (v > 0x10FFFF) return false;
        append_utf8(out, v);
        break;
      default:
        if (e >= '0' && e <= '7') {
          if (i + 2 > s.size()) return false;
          v = e - '0';
          for (int k = 0; k < 2; ++k) {
            char o = s[i + k];
            if (o < '0' || o > '7') return false;
            v = v * 8 + (o - '0');
          }
          if (v > 255) return false;
          i += 2;
          out += static_cast<char>(v);
          break;
        }
        return false;
    }
  }
  return true;
}

// Decodes the first UTF-8 rune of s (for character constants).
bool go_single_rune(const std::string& s, int64_t& r) {
  if (s.empty()) return false;
  auto c = static_cast<unsigned char>(s[0]);
  size_t n = c < 0x80             ? 1
             : (c & 0xE0) == 0xC0 ? 2
             : (c & 0xF0) == 0xE0 ? 3
             : (c & 0xF8) == 0xF0 ? 4
                                  : 0;
  if (n == 0 || n != s.size()) return false;
  if (n == 1) {
    r = c;
    return true;
  }
  int64_t v = c & (0x7F >> n);
  for (size_t k = 1; k < n; ++k) v = (v << 6) | (static_cast<unsigned char>(s[k]) & 0x3F);
  r = v;
  return true;
}

// Go integer literal (base prefixes, underscores); false when not an integer or out of range.
bool go_parse_int(std::string text, int64_t& out, bool& overflow) {
  overflow = false;
  bool neg = false;
  if (!text.empty() && (text[0] == '+' || text[0] == '-')) {
    neg = text[0] == '-';
    text.erase(0, 1);
  }
  int base = 10;
  if (text.size() > 1 && text[0] == '0') {
    char p = static_cast<char>(std::tolower(text[1]));
    if (p == 'x')
      base = 16;
    else if (p == 'o')
      base = 8;
    else if (p == 'b')
      base = 2;
    if (base != 10)
      text.erase(0, 2);
    else
      base = 8;  // leading 0: octal
  }
  std::string digits;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '_') continue;
    digits += text[i];
  }
  if (digits.empty()) return false;
  unsigned __int128 v = 0;
  for (char c : digits) {
    int d = std::isdigit(static_cast<unsigned char>(c))   ? c - '0'
            : std::isalpha(static_cast<unsigned char>(c)) ? std::tolower(c) - 'a' + 10
                                                          : 99;
    if (d >= base) return false;
    v = v * base + d;
    if (v > (static_cast<unsigned __int128>(1) << 64)) overflow = true;
  }
  if (overflow) return true;
  if (neg) {
    if (v > static_cast<unsigned __int128>(INT64_MAX) + 1) {
      overflow = true;
      return true;
    }
    out = static_cast<int64_t>(-static_cast<__int128>(v));
  } else {
    if (v > static_cast<unsigned __int128>(INT64_MAX)) {
      overflow = true;
      return true;
    }
    out = static_cast<int64_t>(v);
  }
  return true;
}

}  // namespace vkllm::prompt
