#include "engine/tokenizer/byte_unicode.h"

#include <array>

#include "engine/tokenizer/utf8.h"

namespace vkllm::tokenizer::byte_unicode {
namespace {

struct Tables {
  std::array<std::string, 256> char_of_byte;
  std::array<int, 324> byte_of_cp;  // every mapped code point is below 256 + 68

  Tables() {
    byte_of_cp.fill(-1);
    // Printable Latin-1 bytes stand for themselves; the others (controls, space, soft hyphen...)
    // get the code points 256, 257, ... in byte order.
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      const uint32_t cp = printable ? static_cast<uint32_t>(b) : next++;
      utf8::append(char_of_byte[static_cast<size_t>(b)], cp);
      byte_of_cp[cp] = b;
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

const std::string& char_of_byte(uint8_t b) {
  return tables().char_of_byte[b];
}

int byte_of_codepoint(uint32_t cp) {
  return cp < tables().byte_of_cp.size() ? tables().byte_of_cp[cp] : -1;
}

std::string encode(std::string_view raw) {
  std::string out;
  out.reserve(raw.size() * 2);
  for (char c : raw) out += char_of_byte(static_cast<uint8_t>(c));
  return out;
}

std::string decode(std::string_view mapped) {
  std::string out;
  out.reserve(mapped.size());
  size_t pos = 0;
  while (pos < mapped.size()) {
    const size_t start = pos;
    const uint32_t cp = utf8::decode(mapped, pos);
    const int b = byte_of_codepoint(cp);
    if (b >= 0 && utf8::valid_sequence_length(mapped.substr(start)) > 0) {
      out.push_back(static_cast<char>(b));
    } else {
      out.append(mapped.substr(start, pos - start));
    }
  }
  return out;
}

}  // namespace vkllm::tokenizer::byte_unicode
