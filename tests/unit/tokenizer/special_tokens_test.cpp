// Special tokens, BOS/EOS policy and end-of-generation ids, on the shared vocabularies.
#include <gtest/gtest.h>

#include <algorithm>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"
#include "tests/unit/tokenizer/test_support.h"

namespace vkllm::tokenizer {
namespace {

std::vector<int32_t> concat(std::initializer_list<std::vector<int32_t>> parts) {
  std::vector<int32_t> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

TEST(SpecialTokens, Llama3ChatMarkupIsSplitOutOnlyWithParseSpecial) {
  const Tokenizer& tok = testing::vocab_tokenizer("llama-bpe");
  const Vocab& v = tok.vocab();
  const int32_t start = v.find("<|start_header_id|>"), end = v.find("<|end_header_id|>"),
                eot = v.find("<|eot_id|>");
  ASSERT_EQ(start, 128006);
  ASSERT_EQ(end, 128007);
  ASSERT_EQ(eot, 128009);
  const std::string text = "<|start_header_id|>user<|end_header_id|>\n\nHi there<|eot_id|>";
  const auto ids = tok.encode(text, /*add_special=*/true, /*parse_special=*/true);
  const auto expected = concat({{128000, start},
                                tok.encode("user", false, false),
                                {end},
                                tok.encode("\n\nHi there", false, false),
                                {eot}});
  EXPECT_EQ(ids, expected);
  // Without parse_special the markup is ordinary text.
  const auto plain = tok.encode(text, false, false);
  for (int32_t id : {start, end, eot}) EXPECT_EQ(std::count(plain.begin(), plain.end(), id), 0);
  EXPECT_EQ(tok.decode(plain), text);
  // Control tokens render only on request.
  EXPECT_EQ(tok.decode(ids), "user\n\nHi there");
  EXPECT_EQ(tok.decode(ids, /*render_special=*/true), "<|begin_of_text|>" + text);
}

TEST(SpecialTokens, Llama3EndOfGeneration) {
  const Tokenizer& tok = testing::vocab_tokenizer("llama-bpe");
  EXPECT_EQ(tok.bos(), 128000);
  EXPECT_EQ(tok.eos(), 128009);
  EXPECT_EQ(tok.eot(), 128009);
  EXPECT_TRUE(tok.add_bos());
  EXPECT_FALSE(tok.add_eos());
  for (int32_t id : {128001, 128008, 128009}) EXPECT_TRUE(tok.is_end_of_generation(id)) << id;
  for (int32_t id : {128000, 128006, 128007, 0, 1000}) {
    EXPECT_FALSE(tok.is_end_of_generation(id)) << id;
  }
}

TEST(SpecialTokens, SpmAddsBosAndDummyPrefixAfterSpecials) {
  const Tokenizer& tok = testing::vocab_tokenizer("llama-spm");
  EXPECT_TRUE(tok.add_bos());
  EXPECT_FALSE(tok.add_eos());
  const auto hello = tok.encode("Hello", false, false);
  EXPECT_EQ(tok.encode("Hello", true, false), concat({{tok.bos()}, hello}));
  // "</s>" in text: a control token, split out only with parse_special; the text after it gets
  // the dummy-prefix space again, as at the start of the text.
  const auto ids = tok.encode("Hello</s>Hello", false, true);
  EXPECT_EQ(ids, concat({hello, {tok.eos()}, hello}));
  EXPECT_EQ(tok.decode(tok.encode("Hello world", true, false)), "Hello world");
  EXPECT_EQ(tok.token_to_piece(tok.bos()), "");
  EXPECT_EQ(tok.token_to_piece(tok.bos(), true), "<s>");
  EXPECT_TRUE(tok.is_end_of_generation(tok.eos()));
}

TEST(SpecialTokens, Phi3EndOfSentenceIsControlAndStripsFollowingSpace) {
  const Tokenizer& tok = testing::vocab_tokenizer("phi-3");
  const Vocab& v = tok.vocab();
  const int32_t end_of_s = v.find("</s>"), end = v.find("<|end|>");
  // The GGUF lists "</s>" as user-defined; llama.cpp makes every end-of-generation text a
  // control token, so it is plain text unless special tokens are parsed.
  ASSERT_EQ(v.type(end_of_s), TokenType::kControl);
  ASSERT_EQ(v.type(end), TokenType::kControl);
  const auto a = tok.encode("a", false, false);
  const auto plain_s = tok.encode("a</s>   a", false, false);
  EXPECT_EQ(std::count(plain_s.begin(), plain_s.end(), end_of_s), 0);
  EXPECT_EQ(tok.decode(plain_s), "a</s>   a");
  // Parsed as special it is split out, and (Phi-3) the whitespace after it is dropped, so the
  // next word starts with the dummy-prefix space only.
  EXPECT_EQ(tok.encode("a</s>   a", false, true), concat({a, {end_of_s}, a}));
  EXPECT_TRUE(tok.is_end_of_generation(end_of_s));
  EXPECT_EQ(tok.token_to_piece(end_of_s), "");
  // <|end|> is control: text without parse_special, a token with it (and it ends a turn).
  const auto plain = tok.encode("a<|end|>", false, false);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), end), 0);
  EXPECT_EQ(tok.encode("a<|end|>\n a", false, true), concat({a, {end}, a}));
  EXPECT_TRUE(tok.is_end_of_generation(end));
  EXPECT_TRUE(tok.is_end_of_generation(v.find("<|endoftext|>")));
}

// Harmony's vocabulary (o200k_harmony) has <|end|>, <|return|> and <|call|>: a message ends at
// <|end|>, generation at <|return|> (final answer) or <|call|> (tool call). llama.cpp drops
// <|end|> from the end-of-generation set when both others exist; without them (Phi-3) it stays.
// Phi-3's vocabulary with two placeholders renamed stands in for the 200k-token one.
TEST(SpecialTokens, HarmonyEndIsNotEndOfGenerationWhenReturnAndCallExist) {
  const auto src_bytes = testing::read_file(testing::vocab_dir() / "ggml-vocab-phi-3.gguf");
  const auto src = gguf::GgufFile::parse(
      std::span(reinterpret_cast<const uint8_t*>(src_bytes.data()), src_bytes.size()));
  auto tokens = src.get_array<std::string>("tokenizer.ggml.tokens");
  for (auto [from, to] :
       {std::pair{"<|placeholder1|>", "<|return|>"}, std::pair{"<|placeholder2|>", "<|call|>"}}) {
    const auto it = std::find(tokens.begin(), tokens.end(), from);
    ASSERT_NE(it, tokens.end()) << from;
    *it = to;
  }
  gguf::GgufWriter w;
  w.copy_metadata(src, "tokenizer.");
  w.set_strings("tokenizer.ggml.tokens", tokens);
  const std::vector<uint8_t> bytes = w.serialize();
  const auto file = gguf::GgufFile::parse(bytes);
  const auto tok = Tokenizer::from_gguf(file);
  const Vocab& v = tok->vocab();
  const int32_t end = v.find("<|end|>"), ret = v.find("<|return|>"), call = v.find("<|call|>");
  ASSERT_GE(end, 0);
  EXPECT_FALSE(tok->is_end_of_generation(end));
  EXPECT_TRUE(tok->is_end_of_generation(ret));
  EXPECT_TRUE(tok->is_end_of_generation(call));
  EXPECT_TRUE(tok->is_end_of_generation(v.find("<|endoftext|>")));
  // Still a special token: split out of text when special tokens are parsed.
  const auto ids = tok->encode("a<|end|>", false, true);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), end), 1);
  // The unchanged Phi-3 vocabulary keeps <|end|> as an end of generation.
  EXPECT_TRUE(testing::vocab_tokenizer("phi-3").is_end_of_generation(end));
}

TEST(SpecialTokens, BertWrapsInClsAndSep) {
  const Tokenizer& tok = testing::vocab_tokenizer("bert-bge");
  const Vocab& v = tok.vocab();
  ASSERT_EQ(v.text(tok.bos()), "[CLS]");
  ASSERT_EQ(v.text(tok.eos()), "[SEP]");
  const auto body = tok.encode("Hello, World!", false, false);
  EXPECT_EQ(tok.encode("Hello, World!", true, false), concat({{tok.bos()}, body, {tok.eos()}}));
  EXPECT_EQ(tok.decode(body), "hello , world !");
}

TEST(SpecialTokens, Gpt2AddsNothingByDefault) {
  const Tokenizer& tok = testing::vocab_tokenizer("gpt-2");
  EXPECT_FALSE(tok.add_bos());
  EXPECT_FALSE(tok.add_eos());
  EXPECT_EQ(tok.encode("Hello", true, false), tok.encode("Hello", false, false));
  const int32_t eot = tok.vocab().find("<|endoftext|>");
  EXPECT_EQ(tok.encode("a<|endoftext|>", false, true).back(), eot);
  EXPECT_TRUE(tok.is_end_of_generation(eot));
}

TEST(SpecialTokens, TokenToPieceRejectsIdsOutsideTheVocabulary) {
  const Tokenizer& tok = testing::vocab_tokenizer("gpt-2");
  EXPECT_THROW(tok.token_to_piece(-1), TokenizerError);
  EXPECT_THROW(tok.token_to_piece(tok.vocab_size()), TokenizerError);
  const std::vector<int32_t> bad{0, tok.vocab_size() + 5};
  EXPECT_THROW(tok.decode(bad), TokenizerError);
}

}  // namespace
}  // namespace vkllm::tokenizer
