// Steps recorded ahead (RunnerOptions::record_ahead): while a step runs, the Runner records the
// step where each sequence decodes one more token; a step with that shape runs the recording, any
// other records itself. Either way its logits must be exactly those of a Runner that records every
// step in its turn, through sequences joining and leaving, greedy-only steps, block boundaries,
// the context length where decode attention starts to split, and hidden-state steps.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/runtime/model.h"
#include "engine/runtime/runner.h"
#include "tests/engine/vk_test_context.h"
#include "tests/reference/llama_cpp_reference.h"
#include "tests/support/seeded.h"

namespace vkllm::runtime {
namespace {

std::vector<int32_t> random_tokens(std::mt19937& rng, size_t n) {
  std::uniform_int_distribution<int32_t> d(3, 31999);
  std::vector<int32_t> v(n);
  for (auto& t : v) t = d(rng);
  return v;
}

// Two Runners on one model, one recording ahead and one not, fed the same steps.
struct Pair {
  explicit Pair(Model& model) {
    RunnerOptions opts;
    opts.max_context = 512;
    opts.record_ahead = true;
    ahead = std::make_unique<Runner>(model, opts);
    opts.record_ahead = false;
    plain = std::make_unique<Runner>(model, opts);
  }
  std::unique_ptr<Runner> ahead, plain;
  std::vector<kv::BlockTable> ahead_tables, plain_tables;

  void add_sequence() {
    ahead_tables.emplace_back(ahead->pool(), ahead->block_size());
    plain_tables.emplace_back(plain->pool(), plain->block_size());
  }
  // One step: tokens[i] for sequence seqs[i]; both Runners must agree bit for bit.
  void step(const std::vector<size_t>& seqs, const std::vector<std::vector<int32_t>>& tokens,
            bool greedy_only = false) {
    std::vector<SequenceStep> a, p;
    for (size_t i = 0; i < seqs.size(); ++i) {
      a.push_back({&ahead_tables[seqs[i]], tokens[i], LogitsWanted::Last});
      p.push_back({&plain_tables[seqs[i]], tokens[i], LogitsWanted::Last});
    }
    const StepResult ra = ahead->step(a, greedy_only);
    const StepResult rp = plain->step(p, greedy_only);
    ASSERT_EQ(ra.greedy, rp.greedy);
    for (size_t i = 0; i < seqs.size(); ++i) {
      ASSERT_EQ(ra.logits[i].size(), greedy_only ? 0u : ahead->spec().n_vocab);
      ASSERT_TRUE(ra.logits[i] == rp.logits[i]) << "sequence " << seqs[i];
    }
  }
};

TEST(RunnerRecordAhead, StepsRecordedAheadGiveTheLogitsOfStepsRecordedInTurn) {
  test::Seeded<> s;
  SCOPED_TRACE("seed " + std::to_string(s.seed));
  const auto file =
      gguf::GgufFile::open(reference::shared_testdata_dir() / "models/ref-llama-f16.gguf");
  Model model(test::vk_context(), file);
  Pair r(model);
  auto decode = [&](const std::vector<size_t>& seqs, int steps, bool greedy_only = false) {
    for (int k = 0; k < steps; ++k) {
      std::vector<std::vector<int32_t>> t;
      for (size_t i = 0; i < seqs.size(); ++i) t.push_back(random_tokens(s.rng, 1));
      r.step(seqs, t, greedy_only);
    }
  };
  // Two prompts, then decode: every decode step after the first is recorded ahead.
  r.add_sequence();
  r.add_sequence();
  r.step({0, 1}, {random_tokens(s.rng, 13), random_tokens(s.rng, 20)});
  decode({0, 1}, 5);
  // A third sequence joins with its prompt (a step of another shape), then three decode; then
  // greedy-only steps (other outputs), and the third leaves.
  r.add_sequence();
  r.step({0, 1, 2}, {random_tokens(s.rng, 1), random_tokens(s.rng, 1), random_tokens(s.rng, 9)});
  decode({0, 1, 2}, 3);
  decode({0, 1, 2}, 2, /*greedy_only=*/true);
  decode({0, 1}, 2);
  // One long sequence decoding across block boundaries and past 256 positions, where decode
  // attention starts to split.
  r.add_sequence();
  r.step({3}, {random_tokens(s.rng, 250)});
  decode({3}, 12);
  // Hidden states (embedders) are not followed by a step recorded ahead, and agree too.
  for (int k = 0; k < 2; ++k) {
    const auto t = random_tokens(s.rng, 1);
    SequenceStep a{&r.ahead_tables[3], t, LogitsWanted::Last};
    SequenceStep p{&r.plain_tables[3], t, LogitsWanted::Last};
    EXPECT_TRUE(r.ahead->step_hidden(std::span(&a, 1)).hidden ==
                r.plain->step_hidden(std::span(&p, 1)).hidden);
  }
  EXPECT_EQ(r.ahead->steps(), r.plain->steps());
  EXPECT_EQ(r.plain->steps_recorded_ahead(), 0u);
  // Taken: every decode step but the first after a change of sequences or outputs (5 + 3 + 1 + 1
  // + 12; the steps after a prompt of its own were predicted).
  EXPECT_EQ(r.ahead->steps_recorded_ahead(), 22u);
}

}  // namespace
}  // namespace vkllm::runtime
