// The continuous batcher with a hybrid model (LFM2's make-model test fixture: a short-convolution
// layer and an attention layer), on the CPU backend: concurrent greedy streams, mixing prefill
// chunks and decode steps, equal their solo runs token for token (no recurrent state leaks
// between sequences or survives a finished one into the next owner of its slot), also when a
// tiny KV cache preempts sequences and they recompute from their first token. The prompts that
// repeat earlier ones find their blocks in the prefix cache, which a recurrent model must not
// reuse (its state would be missing), and ngram speculation, which a recurrent state cannot take
// back, stays off.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/runtime/host_model.h"
#include "engine/runtime/runner.h"
#include "engine/tokenizer/tokenizer.h"
#include "server/scheduler/metrics.h"
#include "tests/reference/model_reference.h"
#include "tests/scheduler/scheduler_run.h"

namespace vkllm::sched {
namespace {

using namespace test_run;

struct Lfm2Fixture {
  std::vector<uint8_t> bytes;
  std::optional<gguf::GgufFile> file;
  std::optional<runtime::HostModel> model;
  std::unique_ptr<tokenizer::Tokenizer> tok;
};

// Made once per test process; the model reads the file, which reads the bytes: never moved.
const Lfm2Fixture& lfm2() {
  static const std::unique_ptr<Lfm2Fixture> f = [] {
    auto x = std::make_unique<Lfm2Fixture>();
    model::MakeModelOptions o;
    o.arch = "lfm2";
    o.shape = model::parse_model_shape("test");
    o.seed = 36;
    x->bytes = reference::make_model_bytes(
        o, reference::shared_testdata_dir() / "vocab" / "ggml-vocab-llama-spm.gguf");
    x->file.emplace(gguf::GgufFile::parse(x->bytes));
    x->model.emplace(*x->file);
    x->tok = tokenizer::Tokenizer::from_gguf(*x->file);
    return x;
  }();
  return *f;
}

std::vector<std::vector<int32_t>> prompts(const tokenizer::Tokenizer& tok) {
  const std::string fox =
      "The quick brown fox jumps over the lazy dog, and the dog, who had seen this happen "
      "every morning for years, only sighed. ";
  std::string long_text;
  for (int i = 0; i < 5; ++i) long_text += fox;  // past one 128-token prefill chunk
  return {tok.encode("Once upon a time", true, false), tok.encode(long_text, true, false),
          tok.encode("A short convolution carries the last two inputs", true, false),
          tok.encode(fox + fox, true, false)};
}

TEST(HybridModelScheduler, ConcurrentStreamsEqualSoloRunsAlsoWhenPreempted) {
  const Lfm2Fixture& f = lfm2();
  ASSERT_TRUE(f.model->spec().has_recurrent_state());
  const auto ps = prompts(*f.tok);
  ASSERT_GT(ps[1].size(), runner_options().max_batch_tokens);
  const SequenceOptions greedy = greedy_options(12);

  runtime::Runner runner(*f.model, runner_options());
  std::vector<std::vector<int32_t>> solo;
  for (const auto& p : ps)
    solo.push_back(run(runner, *f.tok, {p}, SpeculationMode::off, "hybrid-solo", greedy).tokens[0]);

  // The same prompts again, all at once and twice each (their blocks are cached by now), with
  // ngram speculation asked for.
  std::vector<std::vector<int32_t>> twice = ps, want = solo;
  twice.insert(twice.end(), ps.begin(), ps.end());
  want.insert(want.end(), solo.begin(), solo.end());
  const Outcome together =
      run(runner, *f.tok, twice, SpeculationMode::ngram, "hybrid-together", greedy);
  EXPECT_EQ(together.tokens, want);
  EXPECT_EQ(together.drafted, 0) << "speculation with a recurrent state";
  EXPECT_EQ(metrics().value("vkllm_prefix_cache_hit_tokens_total", {{"model", "hybrid-together"}}),
            0);

  // A KV cache of 14 blocks (224 tokens) beside the 8 states: the four sequences need 21.
  runtime::RunnerOptions tiny = runner_options();
  const uint64_t block = runner.kv_bytes() / runner.pool().num_blocks();  // ~ one block's K/V
  tiny.kv_budget_bytes = uint64_t(8) * 2 * 256 * 4 + 14 * block;
  runtime::Runner small(*f.model, tiny);
  ASSERT_LT(small.pool().num_blocks(), 16u);
  const Outcome preempted = run(small, *f.tok, ps, SpeculationMode::off, "hybrid-tiny", greedy);
  EXPECT_EQ(preempted.tokens, solo);
  EXPECT_GT(metrics().value("vkllm_preemptions_total", {{"model", "hybrid-tiny"}}), 0);
}

}  // namespace
}  // namespace vkllm::sched
