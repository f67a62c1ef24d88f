// Bad vocabulary metadata gives a TokenizerError naming what is wrong, never a crash.
#include <gtest/gtest.h>

#include "engine/gguf/gguf_writer.h"
#include "engine/tokenizer/bpe_pretokenizer.h"
#include "engine/tokenizer/tokenizer.h"

namespace vkllm::tokenizer {
namespace {

using gguf::GgufFile;
using gguf::GgufWriter;

// A small valid byte-level BPE vocabulary: the 256 byte characters plus "ab" from one merge.
GgufWriter small_bpe() {
  GgufWriter w;
  w.set_string("tokenizer.ggml.model", "gpt2");
  w.set_string("tokenizer.ggml.pre", "gpt-2");
  std::vector<std::string> tokens;
  for (int b = 0x21; b <= 0x7E; ++b) tokens.emplace_back(1, static_cast<char>(b));
  tokens.push_back("\xC4\xA0");  // "Ġ", the space byte
  tokens.push_back("ab");
  w.set_strings("tokenizer.ggml.tokens", tokens);
  w.set_i32s("tokenizer.ggml.token_type", std::vector<int32_t>(tokens.size(), 1));
  w.set_strings("tokenizer.ggml.merges", {"a b"});
  return w;
}

std::string error_of(const GgufWriter& w) {
  const auto image = w.serialize();
  try {
    Tokenizer::from_gguf(GgufFile::parse(image));
  } catch (const TokenizerError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(VocabErrors, SmallVocabularyWorks) {
  const auto image = small_bpe().serialize();
  auto tok = Tokenizer::from_gguf(GgufFile::parse(image));
  const auto ids = tok->encode("ab a", false, false);
  ASSERT_EQ(ids.size(), 3u);
  EXPECT_EQ(tok->vocab().text(ids[0]), "ab");
  EXPECT_EQ(tok->decode(ids), "ab a");
}

TEST(VocabErrors, UnknownModel) {
  auto w = small_bpe();
  w.set_string("tokenizer.ggml.model", "rwkv-world");
  EXPECT_NE(error_of(w).find("unsupported tokenizer.ggml.model 'rwkv-world'"), std::string::npos)
      << error_of(w);
}

TEST(VocabErrors, UnknownPreTokenizer) {
  auto w = small_bpe();
  w.set_string("tokenizer.ggml.pre", "no-such-pre");
  const std::string e = error_of(w);
  EXPECT_NE(e.find("tokenizer.ggml.pre='no-such-pre'"), std::string::npos) << e;
  EXPECT_NE(e.find("llama-bpe"), std::string::npos) << e;  // lists the known ones
}

TEST(VocabErrors, MissingOrMismatchedArrays) {
  GgufWriter none;
  none.set_string("general.architecture", "llama");
  EXPECT_NE(error_of(none).find("no tokenizer.ggml.model"), std::string::npos);

  auto types = small_bpe();
  types.set_i32s("tokenizer.ggml.token_type", {1, 1, 1});
  EXPECT_NE(error_of(types).find("tokenizer.ggml.token_type has 3 entries"), std::string::npos)
      << error_of(types);

  GgufWriter no_merges;
  no_merges.set_string("tokenizer.ggml.model", "gpt2");
  no_merges.set_strings("tokenizer.ggml.tokens", {"a", "b"});
  EXPECT_NE(error_of(no_merges).find("no tokenizer.ggml.merges"), std::string::npos);

  auto bad_merge = small_bpe();
  bad_merge.set_strings("tokenizer.ggml.merges", {"ab"});
  EXPECT_NE(error_of(bad_merge).find("tokenizer.ggml.merges[0] = 'ab'"), std::string::npos)
      << error_of(bad_merge);
}

TEST(VocabErrors, OutOfRangeSpecialIdsAreIgnored) {
  auto w = small_bpe();
  w.set_u32("tokenizer.ggml.bos_token_id", 100000);
  w.set_bool("tokenizer.ggml.add_bos_token", true);
  const auto image = w.serialize();
  auto tok = Tokenizer::from_gguf(GgufFile::parse(image));
  EXPECT_EQ(tok->bos(), 11);  // llama.cpp's BPE default, which is in range here
  EXPECT_EQ(tok->encode("a", true, false).front(), 11);
}

TEST(VocabErrors, InvalidUtf8InputIsEncodedNotRejected) {
  const auto image = small_bpe().serialize();
  auto tok = Tokenizer::from_gguf(GgufFile::parse(image));
  // Invalid bytes are read as U+FFFD (as llama.cpp does); this vocabulary has no token for its
  // bytes, so they vanish, but the valid text around them is intact.
  const auto ids = tok->encode("ab\xFF\xC3 ab", false, false);
  EXPECT_EQ(tok->decode(ids), "ab ab");
}

TEST(PreTokenizer, KnowsTheRequiredNames) {
  for (const char* name :
       {"default", "llama-bpe", "llama3", "qwen2", "gpt-2", "falcon", "deepseek-llm",
        "deepseek-coder", "starcoder", "refact", "mpt", "gpt-neox", "gpt-4o"}) {
    EXPECT_NO_THROW(BpePreTokenizer{name}) << name;
  }
}

TEST(PreTokenizer, Qwen2SplitsDigitsAndContractions) {
  BpePreTokenizer pre("qwen2");
  std::vector<std::string_view> words;
  pre.split("I'VE got 123 apples\n\n  ok", words);
  const std::vector<std::string_view> expected{"I", "'VE",     " got", " ", "1",  "2",
                                               "3", " apples", "\n\n", " ", " ok"};
  EXPECT_EQ(words, expected);
}

// o200k (gpt-oss): contractions stay on their word, case changes split words, digits go in
// threes.
TEST(PreTokenizer, Gpt4oKeepsContractionsSplitsCamelCaseAndDigitTriples) {
  BpePreTokenizer pre("gpt-4o");
  std::vector<std::string_view> words;
  pre.split("I'VE got 12345 camelCase\n\n  ok", words);
  const std::vector<std::string_view> expected{"I'VE",   " got", " ",    "123", "45",
                                               " camel", "Case", "\n\n", " ",   " ok"};
  EXPECT_EQ(words, expected);
}

}  // namespace
}  // namespace vkllm::tokenizer
