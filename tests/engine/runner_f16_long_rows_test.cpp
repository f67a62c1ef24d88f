// F16 products of long rows (K >= kF16LongRowCols) or many rows (>= kF16WideRows) leave the matvec
// after kF16LongRowMatvecMaxBatch tokens where the workgroup-scope GEMM runs them
// (runtime/runner.h): a decode step of several sequences must give each the logits it gets decoded
// alone (every product on the matvec), up to the GEMM's f16 activations. On lavapipe both run the
// matvec.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/model/model_maker.h"
#include "engine/runtime/model.h"
#include "engine/runtime/runner.h"
#include "tests/engine/vk_test_context.h"
#include "tests/support/fixture_model.h"

namespace vkllm::runtime {
namespace {

TEST(RunnerF16LongRows, BatchedDecodeGivesEachSequenceItsOwnLogits) {
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(static_cast<uint32_t>(seed));
  // The down projection's rows are n_ff wide, and gate and up have n_ff rows each: past both
  // thresholds.
  model::MakeModelOptions o;
  o.arch = "llama";
  o.shape = model::parse_model_shape("256x2x4x2");
  o.shape.n_ff = std::max(kF16LongRowCols, kF16WideRows);
  o.file_type = model::FileType::F16;
  o.seed = seed;
  const std::vector<uint8_t> bytes = test::random_model_bytes(o);
  const auto file = gguf::GgufFile::parse(bytes);
  Model model(test::vk_context(), file);

  std::uniform_int_distribution<int32_t> token(3, test::kFixtureVocab - 1);
  // One runner: a decode step of one sequence is the matvec's whatever the runner's limits.
  RunnerOptions opts;
  opts.max_batch_tokens = 128;
  opts.max_seqs = 16;
  opts.max_context = 64;
  opts.max_logits_rows = 64;
  opts.kv_budget_bytes = 32u << 20;
  Runner runner(model, opts);
  // Decode steps of 6 and 8 sequences (past the long rows' matvec limit) and 4 (within it).
  for (const uint32_t n : {kF16LongRowMatvecMaxBatch + 1, 8u, kF16LongRowMatvecMaxBatch - 1}) {
    SCOPED_TRACE(std::to_string(n) + " sequences");
    std::vector<std::vector<int32_t>> prompts(n), next(n);
    // Two tables per prompt: the first n decode together, the other n each alone. All 2n
    // prompts prefill in one step (a prefill's rows do not depend on the other sequences).
    std::vector<kv::BlockTable> tables;
    tables.reserve(2 * n);
    std::vector<SequenceStep> prefill;
    for (uint32_t s = 0; s < n; ++s) {
      // Short prompts of different lengths: on lavapipe the time goes to the products' FLOPs.
      prompts[s].resize(1 + s % 3);
      for (auto& t : prompts[s]) t = token(rng);
      next[s] = {token(rng)};
    }
    for (uint32_t s = 0; s < 2 * n; ++s) {
      tables.emplace_back(runner.pool(), runner.block_size());
      prefill.push_back({&tables[s], prompts[s % n], LogitsWanted::None});
    }
    runner.step(prefill);
    std::vector<SequenceStep> decode;
    for (uint32_t s = 0; s < n; ++s) decode.push_back({&tables[s], next[s], LogitsWanted::Last});
    const StepResult together = runner.step(decode);
    ASSERT_EQ(together.logits.size(), n);
    for (uint32_t s = 0; s < n; ++s) {
      SequenceStep step{&tables[n + s], next[s], LogitsWanted::Last};
      const StepResult own = runner.step(std::span(&step, 1));
      ASSERT_EQ(own.logits[0].size(), together.logits[s].size());
      float range = 0.f, worst = 0.f;
      for (size_t i = 0; i < own.logits[0].size(); ++i) {
        range = std::max(range, std::abs(own.logits[0][i]));
        worst = std::max(worst, std::abs(together.logits[s][i] - own.logits[0][i]));
      }
      // f16 activations on the GEMM: relative errors near 1e-3 per product.
      EXPECT_LE(worst, 1e-2f * range) << "sequence " << s;
    }
  }
}

}  // namespace
}  // namespace vkllm::runtime
