#include "engine/sampling/utf8_ranges.h"

#include <algorithm>

namespace vkllm::sampling {

using grammar::alt;
using grammar::byte_range;
using grammar::ByteSet;
using grammar::cls;
using grammar::Frag;
using grammar::seq;

namespace {

// Byte strings of one length between lo and hi (inclusive, byte by byte lexicographic), whose
// bytes after the first are continuation bytes: the encodings of the code points between them.
Frag between(const std::string& lo, const std::string& hi, size_t i) {
  if (i == lo.size()) return grammar::empty();
  const auto a = static_cast<uint8_t>(lo[i]), b = static_cast<uint8_t>(hi[i]);
  if (a == b) return seq({grammar::literal(lo.substr(i, 1)), between(lo, hi, i + 1)});
  const size_t rest = lo.size() - i - 1;
  const std::string min_rest(rest, '\x80'), max_rest(rest, '\xbf');
  const Frag any_rest =
      grammar::repeat(cls(byte_range(0x80, 0xbf)), static_cast<int>(rest), static_cast<int>(rest));
  if (lo.compare(i + 1, rest, min_rest) == 0 && hi.compare(i + 1, rest, max_rest) == 0) {
    return seq({cls(byte_range(a, b)), any_rest});
  }
  std::vector<Frag> choices;
  std::string lo_top = lo.substr(0, i + 1) + max_rest;
  choices.push_back(between(lo, lo_top, i));
  if (b - a > 1)
    choices.push_back(seq({cls(byte_range(uint8_t(a + 1), uint8_t(b - 1))), any_rest}));
  std::string hi_bottom = hi.substr(0, i + 1) + min_rest;
  choices.push_back(between(hi_bottom, hi, i));
  return alt(std::move(choices));
}

}  // namespace

std::string utf8_encode(uint32_t cp) {
  std::string out;
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xc0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xe0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  }
  return out;
}

CodePointRanges normalized(CodePointRanges ranges) {
  CodePointRanges out;
  for (auto& [lo, hi] : ranges) hi = std::min(hi, kMaxCodePoint);
  std::erase_if(ranges, [](const auto& r) { return r.first > r.second; });
  std::sort(ranges.begin(), ranges.end());
  for (const auto& r : ranges) {
    if (!out.empty() && r.first <= out.back().second + 1) {
      out.back().second = std::max(out.back().second, r.second);
    } else {
      out.push_back(r);
    }
  }
  return out;
}

CodePointRanges complement(const CodePointRanges& ranges) {
  CodePointRanges out;
  uint32_t next = 0;
  for (const auto& [lo, hi] : normalized(ranges)) {
    if (lo > next) out.emplace_back(next, lo - 1);
    next = hi + 1;
  }
  if (next <= kMaxCodePoint) out.emplace_back(next, kMaxCodePoint);
  return out;
}

Frag code_points(const CodePointRanges& ranges) {
  // Split at the surrogates and where the encoded length changes.
  constexpr std::pair<uint32_t, uint32_t> kPieces[] = {
      {0, 0x7f}, {0x80, 0x7ff}, {0x800, 0xd7ff}, {0xe000, 0xffff}, {0x10000, kMaxCodePoint}};
  ByteSet ascii;
  std::vector<Frag> choices;
  for (const auto& [lo, hi] : normalized(ranges)) {
    for (const auto& [plo, phi] : kPieces) {
      const uint32_t a = std::max(lo, plo), b = std::min(hi, phi);
      if (a > b) continue;
      if (b < 0x80) {
        ascii |= byte_range(static_cast<uint8_t>(a), static_cast<uint8_t>(b));
      } else {
        choices.push_back(between(utf8_encode(a), utf8_encode(b), 0));
      }
    }
  }
  if (ascii.any()) choices.insert(choices.begin(), cls(ascii));
  return alt(std::move(choices));
}

}  // namespace vkllm::sampling
