// Streaming decode: feeding ids one at a time must give exactly decode(all) and never a chunk
// that is invalid UTF-8 (the SPM byte tokens of an emoji arrive one per id; BPE tokens split
// CJK characters between them).
#include "engine/tokenizer/incremental_decoder.h"

#include <gtest/gtest.h>

#include <random>

#include "engine/tokenizer/utf8.h"
#include "tests/support/param_name.h"
#include "tests/unit/tokenizer/test_support.h"

namespace vkllm::tokenizer {
namespace {

const char* kMultilingual =
    "Hello 🦙 world! 🚀 (normal) 😶‍🌫️ ✅ — Привет, как дела? "
    "我想在apple工作1314151天～ "
    "こんにちは世界 안녕하세요 កាន់តែពិសេស Cửa Việt Äpfel ½ months "
    "👨‍👩‍👧‍👦 "
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 "
    "\t\n "
    " "
    "x";

struct StreamResult {
  std::string text;
  size_t held_back = 0;  // pushes that returned less than the token's bytes
};

StreamResult stream(const Tokenizer& tok, const std::vector<int32_t>& ids) {
  IncrementalDecoder dec(tok);
  StreamResult r;
  for (int32_t id : ids) {
    const std::string chunk = dec.push(id);
    EXPECT_TRUE(utf8::is_valid(chunk)) << "invalid UTF-8 chunk after id " << id;
    if (dec.pending_bytes() > 0) ++r.held_back;
    r.text += chunk;
  }
  r.text += dec.finish();
  return r;
}

class Incremental : public ::testing::TestWithParam<std::string> {};

TEST_P(Incremental, MultilingualTextStreamsLikeDecode) {
  const Tokenizer& tok = testing::vocab_tokenizer(GetParam());
  const auto ids = tok.encode(kMultilingual, true, false);
  const std::string whole = tok.decode(ids);
  ASSERT_TRUE(utf8::is_valid(whole));
  const StreamResult r = stream(tok, ids);
  EXPECT_EQ(r.text, whole);
  // Vocabularies that spell unknown characters with byte tokens (SPM byte fallback, byte-level
  // BPE) must have held back partial characters at some point for this text.
  const Vocab& v = tok.vocab();
  const bool byte_level = v.kind == VocabKind::kBpe ||
                          std::count(v.types.begin(), v.types.end(), TokenType::kByte) == 256;
  if (byte_level) {
    EXPECT_GT(r.held_back, 0u);
  }
}

TEST_P(Incremental, RandomUnicodeStreamsLikeDecode) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  // Code points from ASCII, Latin-1, Cyrillic, CJK, Hangul and the emoji planes.
  const std::pair<uint32_t, uint32_t> ranges[] = {{0x20, 0x7E},     {0xA0, 0xFF},
                                                  {0x400, 0x4FF},   {0x4E00, 0x9FFF},
                                                  {0xAC00, 0xD7A3}, {0x1F300, 0x1F6FF}};
  const Tokenizer& tok = testing::vocab_tokenizer(GetParam());
  for (int round = 0; round < 20; ++round) {
    std::string text;
    const int n = std::uniform_int_distribution<int>(1, 60)(rng);
    for (int i = 0; i < n; ++i) {
      const auto& [lo, hi] = ranges[std::uniform_int_distribution<size_t>(0, 5)(rng)];
      utf8::append(text, std::uniform_int_distribution<uint32_t>(lo, hi)(rng));
    }
    const auto ids = tok.encode(text, false, false);
    const std::string whole = tok.decode(ids);
    EXPECT_EQ(stream(tok, ids).text, whole) << "text: " << text;
    // Byte-level vocabularies are lossless for any valid UTF-8.
    const Vocab& v = tok.vocab();
    if (v.kind == VocabKind::kBpe ||
        std::count(v.types.begin(), v.types.end(), TokenType::kByte) == 256) {
      EXPECT_EQ(whole, text);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Vocabs, Incremental,
                         ::testing::Values("llama-spm", "phi-3", "gpt-2", "llama-bpe",
                                           "deepseek-llm", "bert-bge", "gemma4"),
                         test::ParamName());

TEST(IncrementalDecoder, ByteTokensAreHeldUntilTheCharacterIsComplete) {
  const Tokenizer& tok = testing::vocab_tokenizer("llama-spm");
  // U+20AC (euro sign) is E2 82 AC: three byte tokens in a vocabulary without it.
  const int32_t e2 = tok.vocab().find("<0xE2>"), x82 = tok.vocab().find("<0x82>"),
                xac = tok.vocab().find("<0xAC>");
  ASSERT_GE(e2, 0);
  IncrementalDecoder dec(tok, /*at_text_start=*/false);
  EXPECT_EQ(dec.push(e2), "");
  EXPECT_EQ(dec.push(x82), "");
  EXPECT_EQ(dec.push(xac), "\xE2\x82\xAC");
  // A lone continuation byte can never become valid: it comes out as U+FFFD at once.
  EXPECT_EQ(dec.push(x82), "\xEF\xBF\xBD");
  // An unfinished character at the end of the stream is flushed as U+FFFD.
  EXPECT_EQ(dec.push(e2), "");
  EXPECT_EQ(dec.finish(), "\xEF\xBF\xBD");
}

TEST(IncrementalDecoder, LeadingSpaceRule) {
  const Tokenizer& tok = testing::vocab_tokenizer("llama-spm");
  const auto ids = tok.encode("Hello world", false, false);
  ASSERT_EQ(ids.size(), 2u);
  IncrementalDecoder start(tok, /*at_text_start=*/true);
  EXPECT_EQ(start.push(ids[0]), "Hello");
  EXPECT_EQ(start.push(ids[1]), " world");
  // Continuing generated text keeps the word-start space of the first token.
  IncrementalDecoder cont(tok, /*at_text_start=*/false);
  EXPECT_EQ(cont.push(ids[0]), " Hello");
}

}  // namespace
}  // namespace vkllm::tokenizer
