#include "engine/sampling/gbnf_compiler.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/sampling/token_constraint.h"
#include "engine/sampling/utf8_ranges.h"

namespace vkllm::sampling {

namespace {

using grammar::Frag;

constexpr int kGbnfMaxNesting = 100;  // parentheses in parentheses: the parser recurses per level
constexpr int kGbnfMaxRepeat = 1000;  // {m,n} bounds (each copy is states of its own)
constexpr char kPrefix[] = "invalid grammar: ";

struct Expr {
  enum class Type { seq, alt, literal, chars, ref, repeat };
  Type type = Type::seq;
  std::vector<Expr> kids;  // seq, alt; repeat: one
  std::string bytes;       // literal
  CodePointRanges chars;   // chars
  size_t rule = 0;         // ref
  int min = 0, max = 0;    // repeat; max < 0: unbounded
};

bool is_word(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_';
}

class GbnfParser {
 public:
  explicit GbnfParser(std::string_view t) : t_(t) {}

  void parse() {
    skip_space(true);
    while (!at_end()) {
      rule();
      skip_space(true);
    }
  }

  std::vector<std::string> names;
  std::vector<std::optional<Expr>> bodies;
  std::vector<size_t> first_use;  // where each rule is first named

  [[noreturn]] void fail(const std::string& what, size_t at) const {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < at && i < t_.size(); ++i) {
      if (t_[i] == '\n') {
        ++line, column = 1;
      } else {
        ++column;
      }
    }
    throw FormatError(kPrefix + what + " at " + std::to_string(line) + ":" +
                      std::to_string(column));
  }

 private:
  bool at_end() const { return pos_ >= t_.size(); }
  char peek() const { return t_[pos_]; }

  void skip_space(bool newline_ok) {
    while (!at_end()) {
      const char c = peek();
      if (c == '#') {
        while (!at_end() && peek() != '\n') ++pos_;
      } else if (c == ' ' || c == '\t' || (newline_ok && (c == '\n' || c == '\r'))) {
        ++pos_;
      } else {
        break;
      }
    }
  }

  std::string word() {
    const size_t start = pos_;
    while (!at_end() && is_word(peek())) ++pos_;
    if (pos_ == start) fail("expected a rule name", start);
    return std::string(t_.substr(start, pos_ - start));
  }

  size_t rule_id(const std::string& name, size_t at) {
    auto [it, inserted] = ids_.emplace(name, names.size());
    if (inserted) {
      names.push_back(name);
      bodies.emplace_back();
      first_use.push_back(at);
    }
    return it->second;
  }

  void rule() {
    const size_t at = pos_;
    const std::string name = word();
    skip_space(false);
    if (t_.substr(pos_, 3) != "::=") fail("expected ::= after \"" + name + "\"", pos_);
    pos_ += 3;
    skip_space(true);
    Expr body = alternates(false, 0);
    const size_t id = rule_id(name, at);
    if (bodies[id]) fail("rule \"" + name + "\" is defined twice", at);
    bodies[id] = std::move(body);
    skip_space(false);
    if (!at_end() && peek() != '\n' && peek() != '\r') {
      fail(std::string("unexpected '") + peek() + "'", pos_);
    }
  }

  Expr alternates(bool nested, int depth) {
    Expr a;
    a.type = Expr::Type::alt;
    a.kids.push_back(sequence(nested, depth));
    while (!at_end() && peek() == '|') {
      ++pos_;
      skip_space(true);
      a.kids.push_back(sequence(nested, depth));
    }
    if (a.kids.size() == 1) return std::move(a.kids[0]);
    return a;
  }

  Expr sequence(bool nested, int depth) {
    Expr s;
    bool repeated = false;  // the last element is already a repetition
    while (!at_end()) {
      const size_t at = pos_;
      const char c = peek();
      if (c == '"') {
        ++pos_;
        s.kids.push_back(literal());
        repeated = false;
      } else if (c == '[') {
        ++pos_;
        s.kids.push_back(char_class());
        repeated = false;
      } else if (c == '.') {
        ++pos_;
        Expr any;
        any.type = Expr::Type::chars;
        any.chars = {{0, kMaxCodePoint}};
        s.kids.push_back(std::move(any));
        repeated = false;
      } else if (c == '(') {
        ++pos_;
        if (depth + 1 > kGbnfMaxNesting) fail("parentheses nested more than 100 deep", at);
        skip_space(true);
        Expr inner = alternates(true, depth + 1);
        if (at_end() || peek() != ')') fail("expected ')'", pos_);
        ++pos_;
        s.kids.push_back(std::move(inner));
        repeated = false;
      } else if (is_word(c)) {
        Expr ref;
        ref.type = Expr::Type::ref;
        const std::string name = word();
        ref.rule = rule_id(name, at);
        s.kids.push_back(std::move(ref));
        repeated = false;
      } else if (c == '*' || c == '+' || c == '?' || c == '{') {
        if (s.kids.empty()) fail(std::string("nothing to repeat before '") + c + "'", at);
        if (repeated) fail("a repetition of a repetition needs parentheses", at);
        int min = 0, max = -1;
        ++pos_;
        if (c == '+') min = 1;
        if (c == '?') max = 1;
        if (c == '{') bounds(&min, &max, at);
        Expr rep;
        rep.type = Expr::Type::repeat;
        rep.min = min;
        rep.max = max;
        rep.kids.push_back(std::move(s.kids.back()));
        s.kids.back() = std::move(rep);
        repeated = true;
      } else if (c == '<' || c == '!') {
        fail("token references (<...>) are not supported", at);
      } else {
        break;
      }
      skip_space(nested);
    }
    if (s.kids.size() == 1) return std::move(s.kids[0]);
    return s;
  }

  int number(size_t at) {
    int n = 0;
    const size_t start = pos_;
    while (!at_end() && peek() >= '0' && peek() <= '9') {
      n = n * 10 + (peek() - '0');
      if (n > kGbnfMaxRepeat) {
        fail("repetition counts above " + std::to_string(kGbnfMaxRepeat) + " are not supported",
             at);
      }
      ++pos_;
    }
    if (pos_ == start) fail("malformed {m,n}", at);
    return n;
  }

  void bounds(int* min, int* max, size_t at) {
    skip_space(false);
    if (!at_end() && peek() == ',') {
      *min = 0;
    } else {
      *min = number(at);
    }
    skip_space(false);
    *max = *min;
    if (!at_end() && peek() == ',') {
      ++pos_;
      skip_space(false);
      *max = !at_end() && peek() == '}' ? -1 : number(at);
      skip_space(false);
    }
    if (at_end() || peek() != '}') fail("malformed {m,n}", at);
    ++pos_;
    if (*max >= 0 && *max < *min) fail("{m,n} with n < m", at);
  }

  uint32_t hex(int digits, size_t at) {
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      if (at_end() || !std::isxdigit(static_cast<unsigned char>(peek()))) {
        fail("malformed \\x, \\u or \\U escape", at);
      }
      const char c = t_[pos_++];
      v = v * 16 + static_cast<uint32_t>(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
    }
    return v;
  }

  // One character of a literal or a class: an escape or a UTF-8 code point.
  uint32_t character() {
    const size_t at = pos_;
    if (peek() == '\\') {
      ++pos_;
      if (at_end()) fail("trailing backslash", at);
      const char c = t_[pos_++];
      switch (c) {
        case 'x':
          return hex(2, at);
        case 'u':
          return hex(4, at);
        case 'U':
          return hex(8, at);
        case 't':
          return '\t';
        case 'n':
          return '\n';
        case 'r':
          return '\r';
        default:
          if (std::isalnum(static_cast<unsigned char>(c))) {
            fail(std::string("unknown escape \\") + c, at);
          }
          return static_cast<unsigned char>(c);
      }
    }
    const auto lead = static_cast<unsigned char>(peek());
    const size_t n = lead < 0x80 ? 1 : lead < 0xc0 ? 0 : lead < 0xe0 ? 2 : lead < 0xf0 ? 3 : 4;
    if (n == 0 || pos_ + n > t_.size()) fail("invalid UTF-8", at);
    uint32_t cp = n == 1 ? lead : lead & (0xff >> (n + 1));
    for (size_t i = 1; i < n; ++i) {
      const auto b = static_cast<unsigned char>(t_[pos_ + i]);
      if ((b & 0xc0) != 0x80) fail("invalid UTF-8", at);
      cp = (cp << 6) | (b & 0x3f);
    }
    pos_ += n;
    return cp;
  }

  Expr literal() {
    const size_t at = pos_ - 1;
    Expr e;
    e.type = Expr::Type::literal;
    while (!at_end() && peek() != '"') {
      const size_t char_at = pos_;
      const uint32_t cp = character();
      if (cp > kMaxCodePoint || (cp >= 0xd800 && cp <= 0xdfff)) {
        fail("a literal holds a code point that is not a character", char_at);
      }
      e.bytes += utf8_encode(cp);
    }
    if (at_end()) fail("unterminated literal", at);
    ++pos_;
    return e;
  }

  Expr char_class() {
    const size_t at = pos_ - 1;
    Expr e;
    e.type = Expr::Type::chars;
    bool negate = false;
    if (!at_end() && peek() == '^') negate = true, ++pos_;
    CodePointRanges ranges;
    while (!at_end() && peek() != ']') {
      const uint32_t lo = character();
      uint32_t hi = lo;
      if (pos_ + 1 < t_.size() && peek() == '-' && t_[pos_ + 1] != ']') {
        ++pos_;
        hi = character();
        if (hi < lo) fail("range out of order in a character class", at);
      }
      ranges.emplace_back(lo, hi);
    }
    if (at_end()) fail("unterminated character class", at);
    ++pos_;
    e.chars = negate ? complement(ranges) : normalized(std::move(ranges));
    return e;
  }

  std::string_view t_;
  size_t pos_ = 0;
  std::map<std::string, size_t> ids_;
};

bool nullable(const Expr& e, const std::vector<char>& rules) {
  switch (e.type) {
    case Expr::Type::seq:
      for (const Expr& k : e.kids) {
        if (!nullable(k, rules)) return false;
      }
      return true;
    case Expr::Type::alt:
      for (const Expr& k : e.kids) {
        if (nullable(k, rules)) return true;
      }
      return false;
    case Expr::Type::literal:
      return e.bytes.empty();
    case Expr::Type::chars:
      return false;
    case Expr::Type::ref:
      return rules[e.rule] != 0;
    case Expr::Type::repeat:
      return e.min == 0 || nullable(e.kids[0], rules);
  }
  return false;
}

// Rules are defined without their empty string (grammar.h requires it); a reference to a rule
// that has one is optional instead.
Frag frag(const Expr& e, const std::vector<char>& nullable_rules) {
  switch (e.type) {
    case Expr::Type::seq:
    case Expr::Type::alt: {
      std::vector<Frag> parts;
      for (const Expr& k : e.kids) parts.push_back(frag(k, nullable_rules));
      return e.type == Expr::Type::seq ? grammar::seq(std::move(parts))
                                       : grammar::alt(std::move(parts));
    }
    case Expr::Type::literal:
      return grammar::literal(e.bytes);
    case Expr::Type::chars:
      return code_points(e.chars);
    case Expr::Type::ref: {
      const Frag call = grammar::call(static_cast<int32_t>(e.rule));
      return nullable_rules[e.rule] ? grammar::opt(call) : call;
    }
    case Expr::Type::repeat:
      return grammar::repeat(frag(e.kids[0], nullable_rules), e.min, e.max);
  }
  return grammar::empty();
}

}  // namespace

grammar::Grammar compile_gbnf(std::string_view text, uint64_t work_budget) {
  GbnfParser p(text);
  p.parse();
  size_t root = p.names.size();
  for (size_t r = 0; r < p.names.size(); ++r) {
    if (!p.bodies[r]) p.fail("rule \"" + p.names[r] + "\" is not defined", p.first_use[r]);
    if (p.names[r] == "root") root = r;
  }
  if (root == p.names.size()) throw FormatError(std::string(kPrefix) + "no rule \"root\"");

  std::vector<char> empty(p.names.size(), 0);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < p.names.size(); ++r) {
      if (!empty[r] && nullable(*p.bodies[r], empty)) empty[r] = 1, changed = true;
    }
  }
  grammar::GrammarBuilder gb(kPrefix, work_budget);
  for (const std::string& name : p.names) gb.declare(name);
  for (size_t r = 0; r < p.names.size(); ++r) {
    gb.define(static_cast<int32_t>(r), frag(*p.bodies[r], empty), "rule \"" + p.names[r] + "\"",
              empty[r] != 0);
  }
  return gb.finish(static_cast<int32_t>(root));
}

}  // namespace vkllm::sampling
