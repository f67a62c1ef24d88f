// SpmTokenizer cuts text where no piece can span two neighbouring characters and encodes each
// distinct segment once. That must give exactly what SentencePiece gives for the whole text:
// compared here on random slices of the book and random multilingual strings.
#include <gtest/gtest.h>
#include <sentencepiece_processor.h>

#include <random>

#include "engine/tokenizer/spm_model_proto.h"
#include "engine/tokenizer/utf8.h"
#include "tests/support/param_name.h"
#include "tests/unit/tokenizer/test_support.h"

namespace vkllm::tokenizer {
namespace {

class SpmSegmentation : public ::testing::TestWithParam<std::string> {};

TEST_P(SpmSegmentation, MatchesSentencePieceOnWholeText) {
  const Tokenizer& tok = testing::vocab_tokenizer(GetParam());
  sentencepiece::SentencePieceProcessor sp;
  ASSERT_TRUE(sp.LoadFromSerializedProto(build_sentencepiece_model(tok.vocab())).ok());
  const std::string book =
      testing::read_file(testing::shared_dir() / "testdata" / "text" / "war-and-peace.txt");
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  auto check = [&](const std::string& text) {
    std::vector<int> expected;
    ASSERT_TRUE(sp.Encode(" " + text, &expected).ok());
    const auto ids = tok.encode(text, false, false);
    ASSERT_EQ(ids, std::vector<int32_t>(expected.begin(), expected.end())) << "text: " << text;
  };
  for (int i = 0; i < 40; ++i) {
    const size_t len = std::uniform_int_distribution<size_t>(1, 3000)(rng);
    size_t start = std::uniform_int_distribution<size_t>(0, book.size() - len)(rng);
    while (start > 0 && (static_cast<uint8_t>(book[start]) & 0xC0) == 0x80) --start;
    std::string slice = book.substr(start, len);
    while (!slice.empty() && !utf8::is_valid(slice)) slice.pop_back();
    check(slice);
  }
  const std::pair<uint32_t, uint32_t> ranges[] = {{0x20, 0x7E},     {0x20, 0x2F},
                                                  {0xA0, 0x17F},    {0x400, 0x4FF},
                                                  {0x4E00, 0x9FFF}, {0x1F300, 0x1F6FF}};
  for (int i = 0; i < 100; ++i) {
    std::string text;
    const int n = std::uniform_int_distribution<int>(1, 80)(rng);
    for (int k = 0; k < n; ++k) {
      const auto& [lo, hi] = ranges[std::uniform_int_distribution<size_t>(0, 5)(rng)];
      utf8::append(text, std::uniform_int_distribution<uint32_t>(lo, hi)(rng));
    }
    check(text);
  }
}

INSTANTIATE_TEST_SUITE_P(Vocabs, SpmSegmentation,
                         ::testing::Values("llama-spm", "phi-3", "baichuan"), test::ParamName());

}  // namespace
}  // namespace vkllm::tokenizer
