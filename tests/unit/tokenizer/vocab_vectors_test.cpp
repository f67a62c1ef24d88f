// llama.cpp's tokenizer test vectors (generated from the Hugging Face tokenizers) for every
// vocabulary present: the ids must match exactly.
#include <gtest/gtest.h>

#include "tests/support/param_name.h"
#include "tests/unit/tokenizer/test_support.h"

namespace vkllm::tokenizer {
namespace {

using testing::read_vectors;
using testing::vocab_tokenizer;

std::string printable(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\n')
      out += "\\n";
    else if (c == '\t')
      out += "\\t";
    else
      out += c;
  }
  return out;
}

class VocabVectors : public ::testing::TestWithParam<std::string> {};

TEST_P(VocabVectors, EncodeMatchesLlamaCpp) {
  const auto vectors = read_vectors(GetParam());
  ASSERT_GE(vectors.size(), 40u);
  const Tokenizer& tok = vocab_tokenizer(GetParam());
  size_t failures = 0;
  for (const auto& v : vectors) {
    const auto ids = tok.encode(v.text, /*add_special=*/false, /*parse_special=*/false);
    EXPECT_EQ(ids, v.ids) << "text: \"" << printable(v.text) << "\"";
    if (ids != v.ids && ++failures > 5) break;
  }
}

INSTANTIATE_TEST_SUITE_P(AllVocabs, VocabVectors,
                         ::testing::ValuesIn(testing::vocab_names_with_vectors()),
                         test::ParamName());

// The parameterised suite silently shrinks if files go missing; pin what the shared data holds.
TEST(VocabVectorsPresent, AllSharedVectorSetsAreFound) {
  const auto names = testing::vocab_names_with_vectors();
  for (const char* expected : {"llama-spm", "llama-bpe", "bert-bge", "gpt-2", "phi-3", "falcon",
                               "mpt", "starcoder", "refact", "deepseek-llm", "deepseek-coder"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end()) << expected;
  }
}

}  // namespace
}  // namespace vkllm::tokenizer
