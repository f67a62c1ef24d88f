// decode(encode(text)) over all of War and Peace for every vocabulary.
//
// Byte-level BPE (gpt2 vocabularies) and SentencePiece with byte fallback are lossless: decode
// gives the text back byte for byte (SPM's dummy-prefix space is dropped again by decode because
// the ids begin the text). Vocabularies that are lossy by design are compared after the
// normalisation they apply, stated per case below:
//  - WordPiece (bert-bge) lowercases, strips accents (the base letter of each precomposed
//    character), turns every whitespace run into one space and puts spaces around punctuation,
//    so the test compares both sides with all whitespace removed, the original lowercased and
//    accent-stripped with the same per-code-point tables, and additionally requires that the
//    decoded text is a fixed point (encoding it again gives the same ids).
//  - SPM without byte tokens (baichuan) maps characters outside its vocabulary to <unk>, which
//    decodes to nothing; War and Peace is covered by its vocabulary, which the test checks by
//    requiring no <unk> at all, and then the round trip is exact.
// Under AddressSanitizer the instrumented BPE code is several times slower, so the sanitizer
// build uses the first 400 KB of the book instead of all 3.2 MB.
#include <gtest/gtest.h>

#include <algorithm>

#include "engine/tokenizer/unicode.h"
#include "engine/tokenizer/utf8.h"
#include "engine/tokenizer/wordpiece_tokenizer.h"
#include "tests/support/param_name.h"
#include "tests/unit/tokenizer/test_support.h"

namespace vkllm::tokenizer {
namespace {

const std::string& book() {
  static const std::string text = [] {
    std::string t =
        testing::read_file(testing::shared_dir() / "testdata" / "text" / "war-and-peace.txt");
    if (testing::built_with_address_sanitizer()) {
      size_t cut = 400 * 1024;
      while (cut < t.size() && (static_cast<uint8_t>(t[cut]) & 0xC0) == 0x80) ++cut;
      t.resize(std::min(cut, t.size()));
    }
    return t;
  }();
  return text;
}

std::string without_whitespace(std::string_view s) {
  std::string out;
  size_t pos = 0;
  while (pos < s.size()) {
    const uint32_t cp = utf8::decode(s, pos);
    if (!(unicode::flags(cp) & unicode::kWhitespace)) utf8::append(out, cp);
  }
  return out;
}

std::string lower_base_letters(std::string_view s) {
  std::string out;
  size_t pos = 0;
  while (pos < s.size())
    utf8::append(out, unicode::to_lower(unicode::base_letter(utf8::decode(s, pos))));
  return out;
}

// Index of the first differing byte, for a readable failure message.
std::string first_difference(const std::string& a, const std::string& b) {
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  const size_t from = i < 40 ? 0 : i - 40;
  return "first difference at byte " + std::to_string(i) + ": expected \"" + a.substr(from, 80) +
         "\" got \"" + b.substr(from, 80) + "\"";
}

class RoundTrip : public ::testing::TestWithParam<std::string> {};

TEST_P(RoundTrip, WarAndPeace) {
  const Tokenizer& tok = testing::vocab_tokenizer(GetParam());
  const std::string& text = book();
  ASSERT_GT(text.size(), 300'000u);
  const auto ids = tok.encode(text, /*add_special=*/true, /*parse_special=*/false);
  ASSERT_GT(ids.size(), text.size() / 10);
  const std::string decoded = tok.decode(ids);
  const Vocab& v = tok.vocab();
  if (v.kind == VocabKind::kWordPiece) {
    const std::string expected = without_whitespace(lower_base_letters(text));
    const std::string got = without_whitespace(decoded);
    EXPECT_EQ(std::count(ids.begin(), ids.end(), v.unk), 0);
    EXPECT_TRUE(expected == got) << first_difference(expected, got);
    std::vector<int32_t> body(ids.begin() + (tok.add_bos() ? 1 : 0),
                              ids.end() - (tok.add_eos() ? 1 : 0));
    EXPECT_TRUE(tok.encode(decoded, false, false) == body) << "decoded text is not a fixed point";
    return;
  }
  if (v.unk >= 0) {
    EXPECT_EQ(std::count(ids.begin(), ids.end(), v.unk), 0) << "<unk> produced";
  }
  EXPECT_EQ(decoded.size(), text.size());
  EXPECT_TRUE(decoded == text) << first_difference(text, decoded);
}

INSTANTIATE_TEST_SUITE_P(AllVocabs, RoundTrip, ::testing::ValuesIn(testing::all_vocab_names()),
                         test::ParamName());

}  // namespace
}  // namespace vkllm::tokenizer
