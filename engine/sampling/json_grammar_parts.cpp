#include "engine/sampling/json_grammar_parts.h"

#include <algorithm>
#include <map>

#include "engine/sampling/token_constraint.h"

namespace vkllm::sampling::json_parts {

using grammar::alt;
using grammar::byte_range;
using grammar::ByteSet;
using grammar::cls;
using grammar::empty;
using grammar::Frag;
using grammar::literal;
using grammar::opt;
using grammar::repeat;
using grammar::seq;

namespace {

ByteSet bytes_of(std::string_view s) {
  ByteSet set;
  for (unsigned char c : s) set.set(c);
  return set;
}

Frag digit() {
  return cls(byte_range('0', '9'));
}
Frag digits(int min, int max) {
  return repeat(digit(), min, max);
}
Frag hex() {
  return cls(byte_range('0', '9') | byte_range('a', 'f') | byte_range('A', 'F'));
}

// Characters as UTF-8 whose first byte is in `first`: the exact well-formed sequences (no
// overlongs, no surrogates, nothing past U+10FFFF), so the output always decodes.
Frag utf8_char(const ByteSet& first) {
  const Frag cont = cls(byte_range(0x80, 0xbf));
  struct Form {
    ByteSet lead;
    ByteSet second;
    int rest;
  };
  const Form forms[] = {
      {byte_range(0xc2, 0xdf), byte_range(0x80, 0xbf), 0},
      {byte_range(0xe0, 0xe0), byte_range(0xa0, 0xbf), 1},
      {byte_range(0xe1, 0xec) | byte_range(0xee, 0xef), byte_range(0x80, 0xbf), 1},
      {byte_range(0xed, 0xed), byte_range(0x80, 0x9f), 1},
      {byte_range(0xf0, 0xf0), byte_range(0x90, 0xbf), 2},
      {byte_range(0xf1, 0xf3), byte_range(0x80, 0xbf), 2},
      {byte_range(0xf4, 0xf4), byte_range(0x80, 0x8f), 2},
  };
  std::vector<Frag> choices;
  ByteSet ascii = byte_range(0x20, 0x7f) & first;
  ascii.reset('"');
  ascii.reset('\\');
  if (ascii.any()) choices.push_back(cls(ascii));
  for (const Form& f : forms) {
    const ByteSet lead = f.lead & first;
    if (lead.none()) continue;
    choices.push_back(seq({cls(lead), cls(f.second), repeat(cont, f.rest, f.rest)}));
  }
  return alt(std::move(choices));
}

// Bytes of a UTF-8 lead byte's character.
size_t char_length(unsigned char lead) {
  return lead < 0x80 ? 1 : lead < 0xe0 ? 2 : lead < 0xf0 ? 3 : 4;
}

bool at_char_boundary(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) i += char_length(static_cast<unsigned char>(s[i]));
  return i == s.size();
}

bool plain_text(const std::string& s) {
  return std::none_of(s.begin(), s.end(), [](char c) {
    const auto b = static_cast<unsigned char>(c);
    return b < 0x20 || b == '"' || b == '\\';
  });
}

Frag key_node(const std::vector<std::string>& names, const std::string& prefix) {
  std::vector<Frag> choices;
  const bool is_name = std::find(names.begin(), names.end(), prefix) != names.end();
  if (!is_name) choices.push_back(literal("\""));
  std::map<unsigned char, std::vector<std::string>> next;
  for (const std::string& n : names) {
    if (n.size() > prefix.size()) next[static_cast<unsigned char>(n[prefix.size()])].push_back(n);
  }
  ByteSet taken;
  for (auto& [c, sub] : next) {
    taken.set(c);
    choices.push_back(seq({literal(std::string(1, static_cast<char>(c))),
                           key_node(sub, prefix + static_cast<char>(c))}));
  }
  // Leaving every name behind: only at a character boundary, so the rest stays valid UTF-8.
  if (at_char_boundary(prefix)) {
    choices.push_back(seq({utf8_char(~taken), repeat(plain_char(), 0, -1), literal("\"")}));
  }
  return alt(std::move(choices));
}

uint64_t pow10(int n) {
  uint64_t v = 1;
  while (n-- > 0) v *= 10;
  return v;
}

int digit_count(uint64_t v) {
  int n = 1;
  while (v >= 10) v /= 10, ++n;
  return n;
}

// Decimal strings of lo.size() digits between lo and hi (same length, lo <= hi).
Frag fixed_range(const std::string& lo, const std::string& hi) {
  if (lo.empty()) return empty();
  const size_t n = lo.size() - 1;
  if (lo == std::string(lo.size(), '0') && hi == std::string(hi.size(), '9')) {
    return digits(static_cast<int>(lo.size()), static_cast<int>(lo.size()));
  }
  if (lo[0] == hi[0])
    return seq({literal(lo.substr(0, 1)), fixed_range(lo.substr(1), hi.substr(1))});
  std::vector<Frag> choices;
  choices.push_back(
      seq({literal(lo.substr(0, 1)), fixed_range(lo.substr(1), std::string(n, '9'))}));
  if (hi[0] - lo[0] > 1) {
    choices.push_back(
        seq({cls(byte_range(static_cast<uint8_t>(lo[0] + 1), static_cast<uint8_t>(hi[0] - 1))),
             digits(static_cast<int>(n), static_cast<int>(n))}));
  }
  choices.push_back(
      seq({literal(hi.substr(0, 1)), fixed_range(std::string(n, '0'), hi.substr(1))}));
  return alt(std::move(choices));
}

// Naturals without leading zeros in [a, b] (b open: up to kMaxDigits digits or a's length).
Frag natural_in(uint64_t a, std::optional<uint64_t> b) {
  std::vector<Frag> choices;
  if (b && a > *b) return alt({});
  const int first = digit_count(a);
  const int last = b ? digit_count(*b) : std::max(first, kMaxDigits);
  for (int len = first; len <= last; ++len) {
    const uint64_t lo = len == first ? a : pow10(len - 1);
    const uint64_t hi = b && len == last ? *b : pow10(len) - 1;
    if (lo <= hi) choices.push_back(fixed_range(std::to_string(lo), std::to_string(hi)));
  }
  return alt(std::move(choices));
}

void check_bound(std::optional<int64_t> v) {
  constexpr int64_t kLimit = 1000000000000000000;
  if (v && (*v > kLimit || *v < -kLimit)) {
    throw FormatError("invalid JSON schema in format: bounds beyond ±1e18 are not supported");
  }
}

Frag fraction() {
  return opt(seq({literal("."), digits(1, kMaxDigits)}));
}
Frag zero_fraction() {
  return opt(seq({literal("."), repeat(literal("0"), 1, kMaxDigits)}));
}

// Non-negative values m with h <= m <= l (l open if absent), integral h and l: integer part in
// [h, l-1] with any fraction, or exactly l with a zero fraction.
Frag magnitude_in(uint64_t h, std::optional<uint64_t> l) {
  if (!l) return seq({natural_in(h, std::nullopt), fraction()});
  std::vector<Frag> choices;
  if (*l >= 1 && h <= *l - 1) choices.push_back(seq({natural_in(h, *l - 1), fraction()}));
  if (h <= *l) choices.push_back(seq({literal(std::to_string(*l)), zero_fraction()}));
  return alt(std::move(choices));
}

}  // namespace

// As llama.cpp's generated JSON grammars bound it (its `space` rule): nothing, one space, or one
// or two newlines and an indent of up to 20 spaces or tabs. A model cannot spend its tokens on
// whitespace, and indented output still fits.
Frag ws() {
  return opt(
      alt({literal(" "), seq({repeat(literal("\n"), 1, 2), repeat(cls(bytes_of(" \t")), 0, 20)})}));
}

Frag multibyte_char(bool except_line_separators) {
  if (!except_line_separators) return utf8_char(byte_range(0x80, 0xff));
  ByteSet leads = byte_range(0x80, 0xff);
  leads.reset(0xe2);
  const Frag cont = cls(byte_range(0x80, 0xbf));
  // U+2028 and U+2029 are E2 80 A8 and E2 80 A9.
  return alt({utf8_char(leads), seq({literal("\xe2"), cls(byte_range(0x81, 0xbf)), cont}),
              seq({literal("\xe2\x80"), cls(byte_range(0x80, 0xa7) | byte_range(0xaa, 0xbf))})});
}

Frag plain_char() {
  return utf8_char(~ByteSet());
}

Frag string_char() {
  ByteSet not_d = byte_range('0', '9') | byte_range('a', 'f') | byte_range('A', 'F');
  not_d.reset('d');
  not_d.reset('D');
  // \uD800-\uDFFF alone are not characters; JSON parsers reject lone surrogates.
  const Frag u =
      seq({literal("u"),
           alt({seq({cls(not_d), hex()}), seq({cls(bytes_of("dD")), cls(byte_range('0', '7'))})}),
           hex(), hex()});
  const Frag escape = seq({literal("\\"), alt({cls(bytes_of("\"\\/bfnrt")), u})});
  return alt({plain_char(), escape});
}

Frag string_of(int min, int max) {
  return seq({literal("\""), repeat(string_char(), min, max), literal("\"")});
}

Frag key_excluding(const std::vector<std::string>& names) {
  std::vector<std::string> plain;
  for (const std::string& n : names) {
    if (plain_text(n)) plain.push_back(n);  // others never equal an escape-free key
  }
  return seq({literal("\""), key_node(plain, "")});
}

Frag integer_in(std::optional<int64_t> lo, std::optional<int64_t> hi) {
  check_bound(lo);
  check_bound(hi);
  std::vector<Frag> choices;
  if (!hi || *hi >= 0) {
    const uint64_t a = lo ? static_cast<uint64_t>(std::max<int64_t>(*lo, 0)) : 0;
    std::optional<uint64_t> b;
    if (hi) b.emplace(static_cast<uint64_t>(*hi));
    choices.push_back(natural_in(a, b));
  }
  if (!lo || *lo < 0) {
    const uint64_t h = hi && *hi < 0 ? static_cast<uint64_t>(-*hi) : 1;
    std::optional<uint64_t> l;
    if (lo) l.emplace(static_cast<uint64_t>(-*lo));
    choices.push_back(seq({literal("-"), natural_in(h, l)}));
  }
  return alt(std::move(choices));
}

Frag number() {
  const Frag exponent = opt(seq({cls(bytes_of("eE")), opt(cls(bytes_of("+-"))), digits(1, 2)}));
  return seq({integer_in(std::nullopt, std::nullopt), fraction(), exponent});
}

Frag number_in(std::optional<int64_t> lo, std::optional<int64_t> hi) {
  check_bound(lo);
  check_bound(hi);
  std::vector<Frag> choices;
  if (!hi || *hi >= 0) {
    const uint64_t a = lo ? static_cast<uint64_t>(std::max<int64_t>(*lo, 0)) : 0;
    std::optional<uint64_t> b;
    if (hi) b.emplace(static_cast<uint64_t>(*hi));
    choices.push_back(magnitude_in(a, b));
  }
  if (!lo || *lo < 0) {
    const uint64_t h = hi && *hi < 0 ? static_cast<uint64_t>(-*hi) : 0;
    std::optional<uint64_t> l;
    if (lo) l.emplace(static_cast<uint64_t>(-*lo));
    choices.push_back(seq({literal("-"), magnitude_in(h, l)}));
  }
  return alt(std::move(choices));
}

std::optional<Frag> string_format(const std::string& name) {
  const Frag date =
      seq({digits(4, 4), literal("-"),
           alt({seq({literal("0"), cls(byte_range('1', '9'))}),
                seq({literal("1"), cls(byte_range('0', '2'))})}),
           literal("-"),
           alt({seq({literal("0"), cls(byte_range('1', '9'))}), seq({cls(bytes_of("12")), digit()}),
                seq({literal("3"), cls(bytes_of("01"))})})});
  const Frag hour =
      alt({seq({cls(bytes_of("01")), digit()}), seq({literal("2"), cls(byte_range('0', '3'))})});
  const Frag minute = seq({cls(byte_range('0', '5')), digit()});
  const Frag time =
      seq({hour, literal(":"), minute, literal(":"), minute, opt(seq({literal("."), digits(1, 6)})),
           alt({literal("Z"), seq({cls(bytes_of("+-")), hour, literal(":"), minute})})});
  if (name == "date") return date;
  if (name == "time") return time;
  if (name == "date-time") return seq({date, literal("T"), time});
  if (name == "uuid") {
    return seq({repeat(hex(), 8, 8), literal("-"), repeat(hex(), 4, 4), literal("-"),
                repeat(hex(), 4, 4), literal("-"), repeat(hex(), 4, 4), literal("-"),
                repeat(hex(), 12, 12)});
  }
  if (name == "email") {
    const Frag atom = repeat(
        cls(byte_range('a', 'z') | byte_range('A', 'Z') | byte_range('0', '9') | bytes_of("_%+-")),
        1, -1);
    const Frag alnum = cls(byte_range('a', 'z') | byte_range('A', 'Z') | byte_range('0', '9'));
    const Frag label =
        seq({repeat(alnum, 1, -1), repeat(seq({literal("-"), repeat(alnum, 1, -1)}), 0, -1)});
    return seq({atom, repeat(seq({literal("."), atom}), 0, -1), literal("@"), label,
                repeat(seq({literal("."), label}), 1, -1)});
  }
  if (name == "ipv4") {
    const Frag octet = alt({seq({literal("25"), cls(byte_range('0', '5'))}),
                            seq({literal("2"), cls(byte_range('0', '4')), digit()}),
                            seq({literal("1"), digit(), digit()}),
                            seq({cls(byte_range('1', '9')), digit()}), digit()});
    return seq({octet, literal("."), octet, literal("."), octet, literal("."), octet});
  }
  return std::nullopt;
}

}  // namespace vkllm::sampling::json_parts
