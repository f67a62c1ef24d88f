// The unigram ("t5") tokenizer against llama.cpp: the XLM-RoBERTa-style fixture vocabulary in
// tests/reference/unigram (trained with SentencePiece, NFKC charsmap) on llama.cpp's recorded
// tokens, a hand-made vocabulary for the segmentation rules (best score, exact ties, unknown
// runs, user-defined pieces, T5's BOS/EOS defaults), and bad charsmaps.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>

#include "engine/gguf/gguf_writer.h"
#include "engine/tokenizer/tokenizer.h"
#include "tests/unit/tokenizer/test_support.h"

namespace vkllm::tokenizer {
namespace {

using gguf::GgufFile;
using gguf::GgufWriter;

std::filesystem::path unigram_dir() {
  return std::filesystem::path(VKLLM_SOURCE_DIR) / "tests" / "reference" / "unigram";
}

TEST(Unigram, FixtureMatchesLlamaCpp) {
  const auto doc = nlohmann::json::parse(testing::read_file(unigram_dir() / "tokens.json"));
  const auto file = GgufFile::open(unigram_dir() / doc.at("vocab").get<std::string>());
  auto tok = Tokenizer::from_gguf(file);
  EXPECT_EQ(tok->vocab().kind, VocabKind::kUnigram);
  ASSERT_GE(doc.at("cases").size(), 15u);
  for (const auto& c : doc.at("cases")) {
    const auto text = c.at("text").get<std::string>();
    EXPECT_EQ(tok->encode(text, true, true), c.at("special").get<std::vector<int32_t>>())
        << "add_special, parse_special: " << text;
    EXPECT_EQ(tok->encode(text, false, false), c.at("plain").get<std::vector<int32_t>>())
        << "plain: " << text;
  }
}

TEST(Unigram, DecodeGivesNormalizedTextBack) {
  const auto file = GgufFile::open(unigram_dir() / "xlmr-unigram-vocab.gguf");
  auto tok = Tokenizer::from_gguf(file);
  const std::string line = "\"What do you think of this?\" said he, unrolling a piece of stuff.";
  const auto ids = tok->encode(line, true, true);
  EXPECT_EQ(ids.front(), tok->bos());  // <s> ... </s>, as XLM-R's tokenizer
  EXPECT_EQ(ids.back(), tok->eos());
  EXPECT_EQ(tok->decode(ids), line);
  // NFKC folds full-width letters, and extra whitespace is dropped.
  EXPECT_EQ(tok->decode(tok->encode("  ＰＩＥＲＲＥ   said  ", false, false)), "PIERRE said");
}

// A vocabulary small enough to work segmentations out by hand; llama.cpp (tok_ref) gives the
// same ids for every case below.
GgufWriter tiny_unigram() {
  GgufWriter w;
  w.set_string("tokenizer.ggml.model", "t5");
  w.set_strings("tokenizer.ggml.tokens", {"<pad>", "</s>", "<unk>", "\xE2\x96\x81", "-", "--",
                                          "\xE2\x96\x81"
                                          "a",
                                          "b",
                                          "\xE2\x96\x81"
                                          "ab",
                                          "<sep>"});
  w.set_f32s("tokenizer.ggml.scores", {0, 0, 0, -2, -3, -6, -0.4f, -0.5f, -1, 0});
  w.set_i32s("tokenizer.ggml.token_type", {3, 3, 2, 1, 1, 1, 1, 1, 1, 4});
  w.set_bool("tokenizer.ggml.add_space_prefix", true);
  w.set_bool("tokenizer.ggml.remove_extra_whitespaces", true);
  return w;
}

std::unique_ptr<Tokenizer> tokenizer_of(const GgufWriter& w, std::vector<uint8_t>& image) {
  image = w.serialize();
  return Tokenizer::from_gguf(GgufFile::parse(image));
}

TEST(Unigram, SegmentationRules) {
  std::vector<uint8_t> image;
  auto tok = tokenizer_of(tiny_unigram(), image);
  using Ids = std::vector<int32_t>;
  // Highest total score: "▁a" + "b" (-0.9) beats "▁ab" (-1); T5's default: no BOS, </s> (1) last.
  EXPECT_EQ(tok->encode("ab", true, false), (Ids{6, 7, 1}));
  // "-" "--" and "--" "-" tie exactly; the longer last piece wins, as in llama.cpp.
  EXPECT_EQ(tok->encode("---", false, false), (Ids{3, 4, 5}));
  // Unknown characters run together into one <unk>; whitespace runs collapse.
  EXPECT_EQ(tok->encode("xyz   b", false, false), (Ids{3, 2, 3, 7}));
  EXPECT_EQ(tok->encode("x ---  ab", false, false), (Ids{3, 2, 3, 4, 5, 6, 7}));
  // User-defined pieces are matched in the text (each fragment gets its own prefix space).
  EXPECT_EQ(tok->encode("a<sep>b", false, false), (Ids{6, 9, 3, 7}));
  EXPECT_EQ(tok->encode("   ", true, false), (Ids{1}));
  EXPECT_EQ(tok->decode(Ids{6, 3, 7, 4, 5}), "a b---");
}

std::string error_of(const GgufWriter& w) {
  std::vector<uint8_t> image;
  try {
    tokenizer_of(w, image);
  } catch (const TokenizerError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Unigram, BadCharsmapsAreRefused) {
  auto w = tiny_unigram();
  auto bytes = std::make_shared<gguf::Array>();
  bytes->element_type = gguf::ValueType::U8;
  for (uint8_t b : {200, 0, 0, 0, 1, 2}) bytes->items.push_back(gguf::Value{b});
  w.set("tokenizer.ggml.precompiled_charsmap", gguf::Value{bytes});
  EXPECT_NE(error_of(w).find("tokenizer.ggml.precompiled_charsmap is truncated (6 bytes)"),
            std::string::npos)
      << error_of(w);
  w.set_strings("tokenizer.ggml.precompiled_charsmap", {"A", "B"});
  EXPECT_NE(error_of(w).find("precompiled_charsmap is an array of string, not an array of bytes"),
            std::string::npos)
      << error_of(w);
  GgufWriter no_unknown;  // two pieces: T5's default unknown id (2) is not in it
  no_unknown.set_string("tokenizer.ggml.model", "t5");
  no_unknown.set_strings("tokenizer.ggml.tokens", {"\xE2\x96\x81"
                                                   "a",
                                                   "b"});
  EXPECT_NE(error_of(no_unknown).find("unigram vocabulary has no unknown token"), std::string::npos)
      << error_of(no_unknown);
}

}  // namespace
}  // namespace vkllm::tokenizer
