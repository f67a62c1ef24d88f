// Split-K GEMMs leave partial sums for the kernels after them (RoPE, the KV-cache writes, the
// GLU, the normalizing reduction) instead of summing them in a pass of their own; with Q, K and V
// kept apart (their weight types differ), three products' partials are live at once. A Runner
// whose GEMMs split K must give the logits of one whose GEMMs never do (--tune coopmat_split=0),
// up to the order of f32 sums: a tighter check of the split sums than the reference-model bounds
// give. Only tensor-core GPUs split; elsewhere the test is skipped.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/model/model_maker.h"
#include "engine/runtime/model.h"
#include "engine/runtime/runner.h"
#include "engine/vulkan/context.h"
#include "tests/engine/vk_test_context.h"
#include "tests/support/fixture_model.h"

namespace vkllm::runtime {
namespace {

// The model and a Runner on a device whose tuning sets the tensor-core GEMM's split-K target
// (KernelTuning::matmul.cm_split_per_cu; -1: the default rule, 0: never split).
struct SplitRunner {
  SplitRunner(const gguf::GgufFile& file, int32_t split_per_cu)
      : ctx(device_options(split_per_cu)), model(ctx, file) {
    RunnerOptions opts;
    opts.max_batch_tokens = 64;
    opts.max_seqs = 2;
    opts.max_context = 128;
    opts.max_logits_rows = 64;
    opts.kv_budget_bytes = 16u << 20;
    runner = std::make_unique<Runner>(model, opts);
  }
  static vk::DeviceOptions device_options(int32_t split_per_cu) {
    vk::DeviceOptions o;
    o.log_summary = false;
    o.tuning.matmul.cm_split_per_cu = split_per_cu;
    return o;
  }
  vk::Context ctx;
  Model model;
  std::unique_ptr<Runner> runner;
};

TEST(RunnerSplitK, SplitGemmsGiveTheLogitsOfUnsplitOnes) {
  if (!test::vk_context().device().caps().nv_f16_mma_16())
    GTEST_SKIP() << "no tensor-core GEMM on this device, so nothing splits";
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(static_cast<uint32_t>(seed));

  // 1024 wide so that the GEMMs split K; layer 1's attn_v is Q6_K (the Q4_K_M mix's more-bits
  // layers), so no layer's Q|K|V is stacked and Q, K and V are three products.
  model::MakeModelOptions o;
  o.arch = "llama";
  o.shape = model::parse_model_shape("1024x2x16x4");
  o.shape.n_ff = 2816;
  o.file_type = model::FileType::Q4_K_M;
  o.seed = seed;
  const std::vector<uint8_t> bytes = test::random_model_bytes(o);
  const auto file = gguf::GgufFile::parse(bytes);
  SplitRunner splitting(file, -1), never(file, 0);
  Runner* split = splitting.runner.get();
  Runner* unsplit = never.runner.get();

  std::uniform_int_distribution<int32_t> token(3, test::kFixtureVocab - 1);
  kv::BlockTable split_table(split->pool(), split->block_size());
  kv::BlockTable unsplit_table(unsplit->pool(), unsplit->block_size());
  // Steps of 17, 33 and 64 tokens (each past the matvec), all rows' logits compared.
  for (const size_t n : {17u, 33u, 64u}) {
    std::vector<int32_t> tokens(n);
    for (auto& t : tokens) t = token(rng);
    SequenceStep a{&split_table, tokens, LogitsWanted::All};
    SequenceStep b{&unsplit_table, tokens, LogitsWanted::All};
    const StepResult ra = split->step(std::span(&a, 1));
    const StepResult rb = unsplit->step(std::span(&b, 1));
    ASSERT_EQ(ra.logits[0].size(), rb.logits[0].size());
    float range = 0.f, worst = 0.f;
    for (size_t i = 0; i < rb.logits[0].size(); ++i) {
      range = std::max(range, std::abs(rb.logits[0][i]));
      worst = std::max(worst, std::abs(ra.logits[0][i] - rb.logits[0][i]));
    }
    EXPECT_LE(worst, 1e-3f * range) << "step of " << n << " tokens";
  }
}

}  // namespace
}  // namespace vkllm::runtime
