#include "engine/sampling/regex_compiler.h"

#include <cctype>
#include <cstdio>

#include "engine/sampling/json_grammar_parts.h"
#include "engine/sampling/token_constraint.h"
#include "engine/sampling/utf8_ranges.h"

namespace vkllm::sampling {

namespace {

using grammar::alt;
using grammar::ByteSet;
using grammar::Frag;
using grammar::literal;
using grammar::repeat;
using grammar::seq;

constexpr int kRegexMaxRepeat = 100;
constexpr int kRegexMaxNesting = 100;  // groups in groups: the parser recurses once per level

// A set of characters: ASCII members bit by bit, non-ASCII ones all or none.
struct CharSet {
  ByteSet ascii;  // bits 0..127 only
  bool multibyte = false;
  bool except_line_separators = false;  // with multibyte: not U+2028/U+2029 (".")

  CharSet negated() const {
    CharSet n;
    for (size_t c = 0; c < 128; ++c) n.ascii[c] = !ascii[c];
    n.multibyte = !multibyte;
    return n;
  }
};

CharSet range(unsigned char lo, unsigned char hi) {
  CharSet s;
  for (unsigned c = lo; c <= hi; ++c) s.ascii.set(c);
  return s;
}

CharSet of(const char* chars) {
  CharSet s;
  for (const char* p = chars; *p; ++p) s.ascii.set(static_cast<unsigned char>(*p));
  return s;
}

CharSet unite(CharSet a, const CharSet& b) {
  a.ascii |= b.ascii;
  a.multibyte = a.multibyte || b.multibyte;
  return a;
}

// How a character of the decoded string is written inside a JSON string.
std::string json_escape(unsigned char c) {
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
    default: {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      return buf;
    }
  }
}

// The characters of `s` as output: JSON-escaped inside a string, or as they are (`raw`).
Frag emit(const CharSet& s, bool raw) {
  std::vector<Frag> choices;
  ByteSet plain;
  for (size_t c = 0; c < 128; ++c) {
    if (!s.ascii[c]) continue;
    if (raw || (c >= 0x20 && c != '"' && c != '\\')) {
      plain.set(c);
    } else {
      choices.push_back(literal(json_escape(static_cast<unsigned char>(c))));
    }
  }
  if (plain.any()) choices.push_back(grammar::cls(plain));
  if (s.multibyte) choices.push_back(json_parts::multibyte_char(s.except_line_separators));
  return alt(std::move(choices));
}

class RegexParser {
 public:
  RegexParser(const std::string& p, bool raw) : p_(p), raw_(raw) {}

  // The whole output matches (raw): anchors at the ends are redundant.
  Frag parse_whole() {
    size_t stop = p_.size();
    if (!p_.empty() && p_[0] == '^') pos_ = 1;
    if (stop > pos_ && p_[stop - 1] == '$' && !escaped_at(stop - 1)) --stop;
    stop_ = stop;
    Frag body = alternation(nullptr);
    if (pos_ != stop_) fail("unexpected ')'");
    return body;
  }

  Frag parse() {
    bool start = false, end = false;
    size_t stop = p_.size();
    if (!p_.empty() && p_[0] == '^') start = true, pos_ = 1;
    if (stop > pos_ && p_[stop - 1] == '$' && !escaped_at(stop - 1)) end = true, --stop;
    stop_ = stop;
    const Frag any = repeat(json_parts::string_char(), 0, -1);
    std::vector<Piece> first = pieces();
    if (!more()) {
      // No top-level '|'. A search finds a match anywhere: next to the "anything" around an
      // unanchored end, an optional piece changes nothing and a piece repeated m..n times is
      // the same as m times (.{0,100} at either end of a search matches every string; kept, its
      // automaton would cost seconds to build).
      if (!start) trim(first, true);
      if (!end) trim(first, false);
      return seq({start ? grammar::empty() : any, concat_of(first), end ? grammar::empty() : any});
    }
    if (peek() == ')') fail("unexpected ')'");
    if (start || end) fail("anchors next to a top-level '|' are not supported");
    std::vector<Frag> choices{concat_of(first)};
    while (more() && peek() == '|') {
      ++pos_;
      choices.push_back(concat());
    }
    if (pos_ != stop_) fail("unexpected ')'");
    return seq({any, alt(std::move(choices)), any});
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw FormatError((raw_ ? "invalid regex: " : "invalid JSON schema in format: \"pattern\": ") +
                      what);
  }
  Frag emit(const CharSet& s) const { return vkllm::sampling::emit(s, raw_); }

  bool escaped_at(size_t i) const {
    size_t n = 0;
    while (i > n && p_[i - n - 1] == '\\') ++n;
    return n % 2 == 1;
  }
  bool more() const { return pos_ < stop_; }
  char peek() const { return p_[pos_]; }

  // An atom with its repetition (min = max = 1 when it has none).
  struct Piece {
    Frag atom;
    int min = 1, max = 1;
    Frag frag() const { return min == 1 && max == 1 ? atom : repeat(atom, min, max); }
  };

  // Drops the optional pieces at the front (or back) and cuts the first remaining one's
  // repetition to its minimum.
  static void trim(std::vector<Piece>& ps, bool front) {
    while (!ps.empty() && (front ? ps.front() : ps.back()).min == 0) {
      ps.erase(front ? ps.begin() : ps.end() - 1);
    }
    if (!ps.empty()) {
      Piece& p = front ? ps.front() : ps.back();
      p.max = p.min;
    }
  }

  static Frag concat_of(const std::vector<Piece>& ps) {
    std::vector<Frag> parts;
    for (const Piece& p : ps) parts.push_back(p.frag());
    return seq(std::move(parts));
  }

  Frag alternation(bool* had_bar) {
    std::vector<Frag> choices{concat()};
    while (more() && peek() == '|') {
      ++pos_;
      if (had_bar) *had_bar = true;
      choices.push_back(concat());
    }
    return choices.size() == 1 ? choices[0] : alt(std::move(choices));
  }

  std::vector<Piece> pieces() {
    std::vector<Piece> ps;
    while (more() && peek() != '|' && peek() != ')') ps.push_back(quantified());
    return ps;
  }

  Frag concat() { return concat_of(pieces()); }

  int number() {
    int n = 0;
    const size_t start = pos_;
    while (more() && peek() >= '0' && peek() <= '9') {
      n = n * 10 + (peek() - '0');
      if (n > kRegexMaxRepeat)
        fail("repetition counts above " + std::to_string(kRegexMaxRepeat) + " are not supported");
      ++pos_;
    }
    if (pos_ == start) fail("malformed {n,m}");
    return n;
  }

  Piece quantified() {
    Piece p{atom()};
    if (!more()) return p;
    const char c = peek();
    if (c == '*') {
      p.min = 0, p.max = -1, ++pos_;
    } else if (c == '+') {
      p.min = 1, p.max = -1, ++pos_;
    } else if (c == '?') {
      p.min = 0, p.max = 1, ++pos_;
    } else if (c == '{') {
      ++pos_;
      p.min = number();
      p.max = p.min;
      if (more() && peek() == ',') {
        ++pos_;
        p.max = more() && peek() == '}' ? -1 : number();
      }
      if (!more() || peek() != '}') fail("malformed {n,m}");
      ++pos_;
      if (p.max >= 0 && p.max < p.min) fail("{n,m} with m < n");
    } else {
      return p;
    }
    if (more() && peek() == '?') ++pos_;  // lazy: the same strings
    // ECMA-262 has no repetition of a repetition (and a chain of them would nest deeply).
    if (more() && (peek() == '*' || peek() == '+' || peek() == '?' || peek() == '{')) {
      fail(std::string("nothing to repeat before '") + peek() + "'");
    }
    return p;
  }

  uint32_t hex(int digits) {
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      if (!more() || !std::isxdigit(static_cast<unsigned char>(peek())))
        fail("malformed \\x or \\u escape");
      const char c = p_[pos_++];
      v = v * 16 + static_cast<uint32_t>(std::isdigit(static_cast<unsigned char>(c))
                                             ? c - '0'
                                             : (c | 0x20) - 'a' + 10);
    }
    return v;
  }

  // An escape after '\': a class, or one code point (returned in *cp).
  bool escape(CharSet* set, uint32_t* cp) {
    if (!more()) fail("trailing backslash");
    const char c = p_[pos_++];
    switch (c) {
      case 'd':
        *set = range('0', '9');
        return true;
      case 'D':
        *set = range('0', '9').negated();
        return true;
      case 'w':
        *set = unite(unite(range('a', 'z'), range('A', 'Z')), unite(range('0', '9'), of("_")));
        return true;
      case 'W':
        *set = unite(unite(range('a', 'z'), range('A', 'Z')), unite(range('0', '9'), of("_")))
                   .negated();
        return true;
      case 's':
        *set = of(" \t\n\v\f\r");
        return true;
      case 'S':
        *set = of(" \t\n\v\f\r").negated(), set->multibyte = false;
        return true;  // no Unicode spaces
      case 'n':
        *cp = '\n';
        return false;
      case 't':
        *cp = '\t';
        return false;
      case 'r':
        *cp = '\r';
        return false;
      case 'f':
        *cp = '\f';
        return false;
      case 'v':
        *cp = '\v';
        return false;
      case '0':
        *cp = 0;
        return false;
      case 'x':
        *cp = hex(2);
        return false;
      case 'u':
        *cp = hex(4);
        return false;
      case 'b':
      case 'B':
        fail("word boundaries (\\b) are not supported");
      case 'p':
      case 'P':
        fail("Unicode property classes (\\p) are not supported");
      default:
        if (c >= '1' && c <= '9') fail("backreferences are not supported");
        if (std::isalnum(static_cast<unsigned char>(c))) fail(std::string("unknown escape \\") + c);
        *cp = static_cast<unsigned char>(c);
        return false;
    }
  }

  uint32_t code_point() {
    const auto lead = static_cast<unsigned char>(p_[pos_]);
    const size_t n = lead < 0x80 ? 1 : lead < 0xe0 ? 2 : lead < 0xf0 ? 3 : 4;
    if (pos_ + n > stop_) fail("invalid UTF-8");
    uint32_t cp = n == 1 ? lead : lead & (0xff >> (n + 1));
    for (size_t i = 1; i < n; ++i)
      cp = (cp << 6) | (static_cast<unsigned char>(p_[pos_ + i]) & 0x3f);
    pos_ += n;
    return cp;
  }

  Frag single(uint32_t cp) {
    if (cp < 0x80 && !raw_) {
      CharSet s;
      s.ascii.set(cp);
      return emit(s);
    }
    if (cp >= 0xd800 && cp <= 0xdfff) fail("surrogate code points are not supported");
    return literal(utf8_encode(cp));
  }

  Frag klass() {
    CharSet set;
    bool negate = false;
    if (more() && peek() == '^') negate = true, ++pos_;
    bool first = true;
    while (more() && (peek() != ']' || first)) {
      first = false;
      CharSet member;
      uint32_t lo;
      if (peek() == '\\') {
        ++pos_;
        if (escape(&member, &lo)) {
          set = unite(set, member);
          continue;
        }
      } else {
        lo = code_point();
      }
      uint32_t hi = lo;
      if (pos_ + 1 < stop_ && peek() == '-' && p_[pos_ + 1] != ']') {
        ++pos_;
        if (peek() == '\\') {
          ++pos_;
          if (escape(&member, &hi)) fail("a class escape cannot end a range");
        } else {
          hi = code_point();
        }
        if (hi < lo) fail("range out of order in a character class");
      }
      if (hi >= 0x80) fail("non-ASCII characters in a character class are not supported");
      set = unite(set, range(static_cast<unsigned char>(lo), static_cast<unsigned char>(hi)));
    }
    if (!more()) fail("unterminated character class");
    ++pos_;
    return emit(negate ? set.negated() : set);
  }

  Frag atom() {
    const char c = peek();
    if (c == '(') {
      ++pos_;
      if (++depth_ > kRegexMaxNesting) fail("groups nested more than 100 deep are not supported");
      if (more() && peek() == '?') {
        ++pos_;
        if (more() && peek() == ':') {
          ++pos_;
        } else if (more() && peek() == '<' && pos_ + 1 < stop_ && p_[pos_ + 1] != '=' &&
                   p_[pos_ + 1] != '!') {
          while (more() && peek() != '>') ++pos_;  // a named group: the name does not matter
          if (!more()) fail("unterminated group name");
          ++pos_;
        } else {
          fail("lookahead and lookbehind are not supported");
        }
      }
      Frag inner = alternation(nullptr);
      if (!more() || peek() != ')') fail("missing ')'");
      ++pos_;
      --depth_;
      return inner;
    }
    if (c == '[') {
      ++pos_;
      return klass();
    }
    if (c == '.') {
      ++pos_;
      CharSet dot = of("\n\r").negated();
      dot.except_line_separators = true;
      return emit(dot);
    }
    if (c == '\\') {
      ++pos_;
      CharSet set;
      uint32_t cp;
      return escape(&set, &cp) ? emit(set) : single(cp);
    }
    if (c == '^' || c == '$') fail("anchors are supported only at the start and the end");
    if (c == '*' || c == '+' || c == '?' || c == '{')
      fail(std::string("nothing to repeat before '") + c + "'");
    return single(code_point());
  }

  const std::string& p_;
  bool raw_;
  size_t pos_ = 0;
  size_t stop_ = 0;
  int depth_ = 0;
};

}  // namespace

namespace {

// A pattern arrives as JSON text, so it is UTF-8; bytes that are not (a fuzzer's 0xff) would
// become literal bytes no valid output can contain, leaving the matcher at dead ends.
void require_utf8(const std::string& pattern, bool raw) {
  size_t i = 0;
  while (i < pattern.size()) {
    const auto c = static_cast<unsigned char>(pattern[i]);
    const size_t n = c < 0x80           ? 1
                     : (c >> 5) == 0x6  ? 2
                     : (c >> 4) == 0xe  ? 3
                     : (c >> 3) == 0x1e ? 4
                                        : 0;
    bool ok = n > 0 && i + n <= pattern.size() && !(n == 2 && c < 0xc2) && !(c > 0xf4);
    for (size_t k = 1; ok && k < n; ++k) {
      ok = (static_cast<unsigned char>(pattern[i + k]) & 0xc0) == 0x80;
    }
    if (ok && n == 3) {
      const auto d = static_cast<unsigned char>(pattern[i + 1]);
      ok = !(c == 0xe0 && d < 0xa0) && !(c == 0xed && d >= 0xa0);  // overlong, surrogates
    }
    if (ok && n == 4) {
      const auto d = static_cast<unsigned char>(pattern[i + 1]);
      ok = !(c == 0xf0 && d < 0x90) && !(c == 0xf4 && d >= 0x90);
    }
    if (!ok) {
      throw FormatError((raw ? "invalid regex: " : "invalid JSON schema in format: \"pattern\": ") +
                        std::string("the pattern is not valid UTF-8 (byte ") + std::to_string(i) +
                        ")");
    }
    i += n;
  }
}

}  // namespace

Frag compile_pattern(const std::string& pattern) {
  require_utf8(pattern, false);
  return RegexParser(pattern, false).parse();
}

Frag compile_regex(const std::string& pattern) {
  require_utf8(pattern, true);
  return RegexParser(pattern, true).parse_whole();
}

}  // namespace vkllm::sampling
