// UTF-8 scanning, GPT-2's byte mapping and the Unicode tables WordPiece relies on.
#include <gtest/gtest.h>

#include <set>

#include "engine/tokenizer/byte_unicode.h"
#include "engine/tokenizer/unicode.h"
#include "engine/tokenizer/utf8.h"
#include "engine/tokenizer/wordpiece_tokenizer.h"

namespace vkllm::tokenizer {
namespace {

TEST(Utf8, SequenceValidity) {
  EXPECT_EQ(utf8::valid_sequence_length("a"), 1);
  EXPECT_EQ(utf8::valid_sequence_length("\xC3\xA9"), 2);
  EXPECT_EQ(utf8::valid_sequence_length("\xE2\x82\xAC"), 3);
  EXPECT_EQ(utf8::valid_sequence_length("\xF0\x9F\xA6\x99"), 4);
  EXPECT_EQ(utf8::valid_sequence_length("\xF0\x9F\xA6"), 0);  // cut short: may still complete
  EXPECT_EQ(utf8::valid_sequence_length("\xE2"), 0);
  EXPECT_EQ(utf8::valid_sequence_length("\x82"), -1);              // stray continuation
  EXPECT_EQ(utf8::valid_sequence_length("\xC0\xAF"), -1);          // overlong
  EXPECT_EQ(utf8::valid_sequence_length("\xED\xA0\x80"), -1);      // surrogate
  EXPECT_EQ(utf8::valid_sequence_length("\xF4\x90\x80\x80"), -1);  // above U+10FFFF
  EXPECT_EQ(utf8::valid_sequence_length("\xE2\x41"), -1);
  EXPECT_TRUE(utf8::is_valid("héllo 🦙"));
  EXPECT_FALSE(utf8::is_valid("h\xFFllo"));
  std::string s;
  for (uint32_t cp : {0x41u, 0xE9u, 0x20ACu, 0x1F999u}) utf8::append(s, cp);
  EXPECT_EQ(utf8::to_codepoints(s), (std::vector<uint32_t>{0x41, 0xE9, 0x20AC, 0x1F999}));
}

TEST(ByteUnicode, MappingIsABijectionThatKeepsPrintableBytes) {
  std::set<std::string> seen;
  for (int b = 0; b < 256; ++b) {
    const std::string& c = byte_unicode::char_of_byte(static_cast<uint8_t>(b));
    EXPECT_TRUE(seen.insert(c).second) << b;
    size_t pos = 0;
    EXPECT_EQ(byte_unicode::byte_of_codepoint(utf8::decode(c, pos)), b);
  }
  EXPECT_EQ(byte_unicode::char_of_byte('a'), "a");
  EXPECT_EQ(byte_unicode::char_of_byte(' '), "\xC4\xA0");   // U+0120 'Ġ'
  EXPECT_EQ(byte_unicode::char_of_byte('\n'), "\xC4\x8A");  // U+010A 'Ċ'
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  EXPECT_EQ(byte_unicode::decode(byte_unicode::encode(all)), all);
}

TEST(Unicode, PropertiesFromTheTables) {
  EXPECT_EQ(unicode::base_letter(0xE9), 0x65u);    // é -> e
  EXPECT_EQ(unicode::base_letter(0xC4), 0x41u);    // Ä -> A
  EXPECT_EQ(unicode::base_letter(0x1EC7), 0x65u);  // ệ -> e (two marks)
  EXPECT_EQ(unicode::base_letter(0x4E00), 0x4E00u);
  EXPECT_EQ(unicode::to_lower('Q'), uint32_t{'q'});
  EXPECT_EQ(unicode::to_lower(0x3A3), 0x3C3u);  // Σ -> σ
  EXPECT_EQ(unicode::to_lower(0x41F), 0x43Fu);  // П -> п
  EXPECT_TRUE(unicode::flags(',') & unicode::kPunctuation);
  EXPECT_TRUE(unicode::flags(0x3001) & unicode::kPunctuation);  // 、
  EXPECT_TRUE(unicode::flags('$') & unicode::kSymbol);
  EXPECT_TRUE(unicode::flags(0x3000) & unicode::kWhitespace);
  EXPECT_TRUE(unicode::flags('\t') & unicode::kWhitespace);
  EXPECT_TRUE(unicode::flags(0x200B) & unicode::kControl);  // zero width space is Cf
  EXPECT_TRUE(unicode::flags(0x5B57) & unicode::kLetter);
  EXPECT_TRUE(unicode::flags(0x0301) & unicode::kMark);
  EXPECT_EQ(unicode::flags(0x0378), 0);  // unassigned
  EXPECT_TRUE(unicode::is_cjk_ideograph(0x6211));
  EXPECT_FALSE(unicode::is_cjk_ideograph(0x3042));  // hiragana
}

TEST(WordPiece, SplitsLikeBertsBasicTokenizer) {
  const auto words = WordPieceTokenizer::split_words("  Héllo, WORLD!\t我想 x\xE2\x80\x8By ");
  const std::vector<std::string> expected{"hello", ",", "world", "!", "我", "想", "xy"};
  EXPECT_EQ(words, expected);
}

}  // namespace
}  // namespace vkllm::tokenizer
