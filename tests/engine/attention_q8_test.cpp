// Decode after a context long enough for split-K attention, with the int8-dot products forced on:
// the split reduction writes the attention output's q8 copy itself (no quantize pass before the
// output projection), and the logits still match the scalar reference forward.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "engine/gguf/gguf_writer.h"
#include "engine/model/model_maker.h"
#include "engine/runtime/generator.h"
#include "engine/runtime/model.h"
#include "engine/runtime/runner.h"
#include "tests/engine/vk_test_context.h"
#include "tests/reference/llama_cpp_reference.h"
#include "tests/reference/reference_forward.h"
#include "tests/support/fixture_model.h"

namespace vkllm::runtime {
namespace {

constexpr uint32_t kVocab = test::kFixtureVocab;

TEST(AttentionQ8, SplitKDecodeWithInt8ProductsMatchesReference) {
  if (!test::vk_context().caps().integer_dot_product) GTEST_SKIP() << "no integer dot product";
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(static_cast<uint32_t>(seed));
  // head_dim 64: two q8 blocks per head.
  const std::vector<uint8_t> bytes =
      test::random_model_bytes(test::wide_llama_options(model::FileType::Q8_0, seed));
  const auto file = gguf::GgufFile::parse(bytes);

  Model model(test::vk_context(), file);
  RunnerOptions opts;
  opts.max_batch_tokens = 64;
  opts.max_seqs = 1;
  opts.max_context = 512;
  opts.kv_budget_bytes = 8u << 20;
  opts.int8_dot = vk::Int8Dot::On;
  opts.fused_rope_kv = true;
  Runner runner(model, opts);
  Generator gen(runner);
  reference::ReferenceModel ref(file, reference::ReferenceModel::EngineRounding{});

  // 300 tokens of context: decode steps then split the KV length (at least 128 positions per
  // split) and run the reduction that writes the q8 copy.
  std::uniform_int_distribution<int32_t> token(3, kVocab - 1);
  std::vector<int32_t> context(300);
  for (auto& t : context) t = token(rng);
  gen.feed(context);
  auto want = ref.forward(context, /*all_rows=*/false);
  for (int step = 0; step < 3; ++step) {
    const std::vector<int32_t> next{token(rng)};
    const std::vector<float> got = gen.feed(next);
    want = ref.forward(next, /*all_rows=*/false);
    ASSERT_EQ(got.size(), want.back().size());
    EXPECT_GE(reference::cosine(got, want.back()), 0.999)
        << "decode step " << step << ", max abs diff " << reference::max_abs_diff(got, want.back());
  }
}

}  // namespace
}  // namespace vkllm::runtime
