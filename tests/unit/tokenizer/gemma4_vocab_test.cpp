// The SentencePiece-style BPE tokenizer ("gemma4", Gemma 4) against llama.cpp: the test vocabulary
// `vkllm dev make-vocab --kind gemma4` writes (tests/reference/gemma4tok) on llama.cpp's recorded
// ids for ASCII, space and newline runs, accented, CJK and emoji text (byte fallback), and Gemma
// 4's special tokens in text; decoding; the end-of-generation set and the forced BOS.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"
#include "engine/tokenizer/gemma4_vocab.h"
#include "engine/tokenizer/tokenizer.h"
#include "tests/unit/tokenizer/test_support.h"

namespace vkllm::tokenizer {
namespace {

std::filesystem::path gemma4tok_dir() {
  return std::filesystem::path(VKLLM_SOURCE_DIR) / "tests" / "reference" / "gemma4tok";
}

const Tokenizer& gemma4_tokenizer() {
  return testing::vocab_tokenizer("gemma4");
}

TEST(Gemma4Vocab, FixtureIsWhatMakeVocabWrites) {
  const std::string file = testing::read_file(gemma4tok_dir() / "gemma4-vocab.gguf");
  const std::vector<uint8_t> built = build_gemma4_test_vocab_gguf();
  EXPECT_EQ(file, std::string(built.begin(), built.end()))
      << "re-record with tests/reference/tools/record_gemma4_tokens.sh";
  EXPECT_EQ(gemma4_tokenizer().vocab().kind, VocabKind::kSpmBpe);
}

TEST(Gemma4Vocab, IdsMatchLlamaCpp) {
  const auto doc = nlohmann::json::parse(testing::read_file(gemma4tok_dir() / "tokens.json"));
  const Tokenizer& tok = gemma4_tokenizer();
  ASSERT_GE(doc.at("cases").size(), 20u);
  for (const auto& c : doc.at("cases")) {
    const auto text = c.at("text").get<std::string>();
    const auto special = tok.encode(text, true, true);
    EXPECT_EQ(special, c.at("special").get<std::vector<int32_t>>())
        << "add_special, parse_special: " << text;
    EXPECT_EQ(tok.encode(text, false, false), c.at("plain").get<std::vector<int32_t>>())
        << "plain: " << text;
    // llama_token_to_piece's text of the ids: control tokens render as nothing.
    EXPECT_EQ(tok.decode(c.at("special").get<std::vector<int32_t>>()),
              c.at("pieces").get<std::string>())
        << "decode: " << text;
    // Plain encoding loses nothing (every character is a piece or byte tokens) but a literal ▁,
    // which is the vocabulary's space.
    if (text.find("\xE2\x96\x81") == std::string::npos) {
      EXPECT_EQ(tok.decode(tok.encode(text, false, false)), text) << "round trip: " << text;
    }
  }
  EXPECT_EQ(tok.bos(), doc.at("bos").get<int32_t>());
  EXPECT_EQ(tok.add_bos(), doc.at("add_bos").get<bool>());
}

TEST(Gemma4Vocab, EndOfGenerationAsLlamaCpp) {
  const auto doc = nlohmann::json::parse(testing::read_file(gemma4tok_dir() / "tokens.json"));
  const Tokenizer& tok = gemma4_tokenizer();
  std::vector<int32_t> eog;
  for (int32_t id = 0; id < tok.vocab_size(); ++id) {
    if (tok.is_end_of_generation(id)) eog.push_back(id);
  }
  EXPECT_EQ(eog, doc.at("eog").get<std::vector<int32_t>>());
  const Vocab& v = tok.vocab();
  // A generation stops at <turn|> (and after a tool call at <|tool_response>), not at </s>.
  EXPECT_TRUE(tok.is_end_of_generation(v.find("<turn|>")));
  EXPECT_TRUE(tok.is_end_of_generation(v.find("<|tool_response>")));
  EXPECT_FALSE(tok.is_end_of_generation(v.find("</s>")));
  EXPECT_FALSE(tok.is_control(v.find("</s>")));
  EXPECT_EQ(tok.token_to_piece(v.find("<turn|>")), "");
  EXPECT_EQ(tok.token_to_piece(v.find("<turn|>"), true), "<turn|>");
  // The chat parser reads the user-defined markers, so they always render.
  EXPECT_EQ(tok.token_to_piece(v.find("<|tool_call>")), "<|tool_call>");
}

TEST(Gemma4Vocab, BosIsAddedWhateverTheFileSays) {
  gguf::GgufWriter w;
  add_gemma4_test_vocab(w);
  w.set_bool("tokenizer.ggml.add_bos_token", false);
  w.set_string("tokenizer.ggml.pre", "default");
  const std::vector<uint8_t> bytes = w.serialize();
  const auto tok = Tokenizer::from_gguf(gguf::GgufFile::parse(bytes));
  EXPECT_EQ(tok->vocab().pre, "gemma4");
  EXPECT_EQ(tok->encode("Hello", true, true), gemma4_tokenizer().encode("Hello", true, true));
  EXPECT_EQ(tok->encode("Hello", true, true).front(), tok->bos());
}

// Ollama's converter writes the same vocabulary as "llama" with pre-tokenizer "gemma4", leaves the
// chat markers control tokens and (from tokenizer.json) the byte tokens normal ones: it tokenizes
// and renders as llama.cpp's file does.
TEST(Gemma4Vocab, OllamaLayoutTokenizesTheSame) {
  gguf::GgufWriter w;
  add_gemma4_test_vocab(w);
  w.set_string("tokenizer.ggml.model", "llama");
  w.set_string("tokenizer.ggml.pre", "gemma4");
  const Vocab& fixture = gemma4_tokenizer().vocab();
  std::vector<int32_t> types(fixture.types.size());
  for (size_t i = 0; i < types.size(); ++i) {
    types[i] = fixture.tokens[i] == "</s>" ? 3 : static_cast<int32_t>(fixture.types[i]);
    if (types[i] == 4) types[i] = 3;  // user-defined -> control
    if (types[i] == 6) types[i] = 1;  // byte -> normal (read from tokenizer.json)
  }
  w.set_i32s("tokenizer.ggml.token_type", types);
  const std::vector<uint8_t> bytes = w.serialize();
  const auto tok = Tokenizer::from_gguf(gguf::GgufFile::parse(bytes));
  EXPECT_EQ(tok->vocab().kind, VocabKind::kSpmBpe);
  const auto doc = nlohmann::json::parse(testing::read_file(gemma4tok_dir() / "tokens.json"));
  for (const auto& c : doc.at("cases")) {
    const auto text = c.at("text").get<std::string>();
    EXPECT_EQ(tok->encode(text, true, true), c.at("special").get<std::vector<int32_t>>()) << text;
    EXPECT_EQ(tok->encode(text, false, false), c.at("plain").get<std::vector<int32_t>>()) << text;
    EXPECT_EQ(tok->decode(c.at("special").get<std::vector<int32_t>>()),
              c.at("pieces").get<std::string>())
        << text;
  }
  for (int32_t id = 0; id < tok->vocab_size(); ++id) {
    EXPECT_EQ(tok->is_end_of_generation(id), gemma4_tokenizer().is_end_of_generation(id)) << id;
  }
}

TEST(Gemma4Vocab, InvalidUtf8BecomesReplacementCharacterBytes) {
  const Tokenizer& tok = gemma4_tokenizer();
  const Vocab& v = tok.vocab();
  // As llama.cpp: the stray byte reads as U+FFFD, which this vocabulary spells in byte tokens.
  const auto ids = tok.encode("a\xFF", false, false);
  const std::vector<int32_t> expected = {v.find("a"), v.find("<0xEF>"), v.find("<0xBF>"),
                                         v.find("<0xBD>")};
  EXPECT_EQ(ids, expected);
}

}  // namespace
}  // namespace vkllm::tokenizer
