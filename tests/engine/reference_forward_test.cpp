// The scalar reference forward (tests/reference) against llama.cpp's outputs for the shared
// models: this pins down the reference itself (and ModelSpec, dequantization) before the Vulkan
// engine is compared with it.
#include "tests/reference/reference_forward.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <string>

#include "tests/reference/llama_cpp_reference.h"
#include "tests/support/param_name.h"

namespace vkllm::reference {
namespace {

class ReferenceVsLlamaCpp : public ::testing::TestWithParam<std::string> {};

TEST_P(ReferenceVsLlamaCpp, LogitsAndGreedyContinuationMatch) {
  const LlamaCppCase ref = load_llama_cpp_case(GetParam());
  auto file = gguf::GgufFile::open(ref.model_path);
  ReferenceModel model(file);
  auto rows = model.forward(ref.prompt_tokens, /*all_rows=*/false);
  const auto& last = rows.back();
  ASSERT_EQ(last.size(), ref.last_logits.size());
  const double diff = max_abs_diff(last, ref.last_logits);
  EXPECT_GE(cosine(last, ref.last_logits), ref.min_cosine) << "max abs diff " << diff;

  // Greedy continuation, identical up to the first near-tie.
  std::vector<float> logits = last;
  const float tie = near_tie_margin(ref, diff);
  for (size_t i = 0; i < ref.greedy_tokens.size(); ++i) {
    if (ref.greedy_margins[i] < tie) break;
    int32_t best =
        static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    ASSERT_EQ(best, ref.greedy_tokens[i]) << "step " << i;
    logits = model.forward(std::span(&best, 1)).back();
  }
}

INSTANTIATE_TEST_SUITE_P(SharedModels, ReferenceVsLlamaCpp,
                         ::testing::ValuesIn(llama_cpp_case_names()), test::ParamName());

}  // namespace
}  // namespace vkllm::reference
