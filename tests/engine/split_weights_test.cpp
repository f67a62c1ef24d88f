// Weights larger than one storage-buffer binding: with the engine's assumed range capped far below
// a fixture model's embedding, output and FFN tensors (DeviceOptions::max_binding_range, i.e.
// VKLLM_MAX_BINDING_RANGE), those tensors load split by rows and the forward pass still matches
// the scalar reference on prefill (every row) and decode.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "engine/gguf/gguf_writer.h"
#include "engine/model/model_maker.h"
#include "engine/runtime/generator.h"
#include "engine/runtime/model.h"
#include "engine/runtime/runner.h"
#include "engine/vulkan/context.h"
#include "tests/reference/llama_cpp_reference.h"
#include "tests/reference/reference_forward.h"
#include "tests/support/fixture_model.h"

namespace vkllm::runtime {
namespace {

using model::FileType;
using model::Weight;
using reference::cosine;
using reference::max_abs_diff;

constexpr uint32_t kVocab = test::kFixtureVocab;
// Below the fixture's 256-wide embedding, output and FFN tensors (Q4_K: 43-46 KB, Q6_K and the
// Q5_0/Q8_0 fallbacks 56-87 KB, F16 150-165 KB), and exactly one step's widest activations (16
// tokens of 2 x 320 floats).
constexpr uint64_t kRange = test::kCappedBindingRange;

class SplitWeights : public ::testing::TestWithParam<FileType> {};

TEST_P(SplitWeights, ForwardMatchesReferenceWithTensorsAboveTheBindingRange) {
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(static_cast<uint32_t>(seed));

  const std::vector<uint8_t> bytes =
      test::random_model_bytes(test::wide_llama_options(GetParam(), seed));
  const auto file = gguf::GgufFile::parse(bytes);

  vk::Context& ctx = test::capped_context();
  ASSERT_EQ(ctx.caps().max_storage_buffer_range, kRange);
  Model model(ctx, file);
  // The cap must actually split the tensors this test is about.
  for (Weight wt : {Weight::TokenEmbd, Weight::Output, Weight::FfnUp, Weight::FfnDown}) {
    const DeviceTensor& t = wt == Weight::Output ? model.output() : model.get(wt, 1);
    EXPECT_GT(t.parts.size(), 1u) << t.name;
    EXPECT_FALSE(t.data) << t.name << " has a whole-tensor slice although split";
    for (const RowPart& p : t.parts) EXPECT_LE(p.data.size, kRange) << t.name;
  }

  RunnerOptions opts;
  opts.max_batch_tokens = 16;
  opts.max_seqs = 2;
  opts.max_logits_rows = 16;
  opts.max_context = 64;
  opts.kv_budget_bytes = 8u << 20;
  Runner runner(model, opts);
  Generator gen(runner);
  reference::ReferenceModel ref(file, reference::ReferenceModel::EngineRounding{});

  const double min_cos = GetParam() == FileType::F16 ? 0.9999 : 0.999;
  std::uniform_int_distribution<int32_t> token(3, kVocab - 1);
  std::vector<int32_t> prompt(16);
  for (auto& t : prompt) t = token(rng);
  // Ids from both ends of the vocabulary, so the lookup reads every part of the embedding.
  prompt[0] = 3;
  prompt[1] = kVocab - 1;

  const std::vector<float> got = gen.feed(prompt, /*all_rows=*/true);
  const auto want = ref.forward(prompt, /*all_rows=*/true);
  ASSERT_EQ(got.size(), want.size() * kVocab);
  for (size_t r = 0; r < want.size(); ++r) {
    const std::span<const float> g(got.data() + r * kVocab, kVocab);
    EXPECT_GE(cosine(g, want[r]), min_cos)
        << "prefill row " << r << ", max abs diff " << max_abs_diff(g, want[r]);
  }
  std::vector<float> last = want.back();
  for (int step = 0; step < 3; ++step) {
    const std::vector<int32_t> one{test::argmax(last)};
    const std::vector<float> g = gen.feed(one);
    last = ref.forward(one, /*all_rows=*/false).back();
    EXPECT_GE(cosine(g, last), min_cos)
        << "decode step " << step << ", max abs diff " << max_abs_diff(g, last);
  }
}

INSTANTIATE_TEST_SUITE_P(Types, SplitWeights, ::testing::Values(FileType::F16, FileType::Q4_K_M),
                         [](const auto& info) {
                           return std::string(model::file_type_name(info.param));
                         });

}  // namespace
}  // namespace vkllm::runtime
