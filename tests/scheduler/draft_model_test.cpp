// Draft-model speculation in the continuous batcher, on real weights (../shared/testdata/models):
// tolstoy-mem (memorised War and Peace) is the target and tolstoy-gen (trained on the same book,
// the same vocabulary) its draft, which predicts much of the recital. Greedy output is the
// target's token for token with the draft and without, on the CPU backend and on Vulkan
// (lavapipe here), for concurrent streams whose draft KV catches up and rolls back separately;
// sampled output through the rejection rule keeps the recital the target is sure of; the draft
// proposes what the draft model alone generates. A hybrid draft (recurrent layers) does so too.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/runtime/host_model.h"
#include "engine/runtime/model.h"
#include "engine/runtime/runner.h"
#include "engine/tokenizer/tokenizer.h"
#include "server/scheduler/draft_model.h"
#include "server/scheduler/metrics.h"
#include "server/scheduler/scheduler.h"
#include "tests/engine/vk_test_context.h"
#include "tests/reference/llama_cpp_reference.h"
#include "tests/reference/model_reference.h"
#include "tests/scheduler/scheduler_run.h"

namespace vkllm::sched {
namespace {

using namespace test_run;

std::vector<std::vector<int32_t>> prompts(const tokenizer::Tokenizer& tok, size_t n) {
  const char* const openings[] = {
      "It was in July, 1805, and the speaker was the well-known Anna Pavlovna",
      "Well, Prince, so Genoa and Lucca",
  };
  std::vector<std::vector<int32_t>> out;
  for (size_t i = 0; i < n; ++i) out.push_back(tok.encode(openings[i], true, false));
  return out;
}

// Greedy (and, with `sampled`, sampled through the rejection rule) output with `draft` as the
// draft model equals plain decoding's; returns the drafted run.
Outcome expect_target_output(runtime::Runner& target, runtime::Runner& draft,
                             const tokenizer::Tokenizer& tok,
                             const std::vector<std::vector<int32_t>>& ps, const std::string& label,
                             int32_t n, bool sampled) {
  const SequenceOptions options = greedy_options(n);
  const Outcome plain = run(target, tok, ps, SpeculationMode::off, label + "-off", options);
  DraftModel drafter(draft);
  Outcome spec = run(target, tok, ps, SpeculationMode::draft, label + "-draft", options, &drafter);
  EXPECT_EQ(spec.tokens, plain.tokens);
  EXPECT_GT(spec.drafted, 0);
  // Finished sequences gave their draft KV back.
  EXPECT_EQ(drafter.sequences(), 0u);
  std::printf(
      "%s: %llu target steps plain, %llu with the draft (%llu draft steps), %.0f of %.0f "
      "drafted tokens accepted\n",
      label.c_str(), (unsigned long long)plain.steps, (unsigned long long)spec.steps,
      (unsigned long long)drafter.steps(), spec.accepted, spec.drafted);
  if (sampled) {
    // Sampling through the rejection rule (on the CPU): the recital is so certain (top_p keeps
    // one candidate) that it must come out the same.
    SequenceOptions s = options;
    s.sampling.temperature = 0.3f;
    s.sampling.repeat_penalty = 1.0f;
    s.sampling.seed = 7;
    const Outcome spec_sampled =
        run(target, tok, ps, SpeculationMode::draft, label + "-sampled", s, &drafter);
    EXPECT_EQ(spec_sampled.tokens, plain.tokens);
    EXPECT_GT(spec_sampled.drafted, 0);
  }
  spec.steps = plain.steps - std::min(plain.steps, spec.steps);  // steps saved
  return spec;
}

TEST(DraftModelSpeculation, OutputIsTheTargetsOnBothBackends) {
  const std::string target_path = model_path("tolstoy-mem-q4_k_m.gguf");
  const std::string draft_path = model_path("tolstoy-gen-q8_0.gguf");
  const gguf::GgufFile target_file = gguf::GgufFile::open(target_path);
  const gguf::GgufFile draft_file = gguf::GgufFile::open(draft_path);
  const auto tok = tokenizer::Tokenizer::from_gguf(target_file);
  {
    runtime::HostModel target(gguf::GgufFile::open(target_path));
    runtime::HostModel draft(gguf::GgufFile::open(draft_path));
    runtime::Runner target_runner(target, runner_options());
    runtime::Runner draft_runner(draft, runner_options());
    // tolstoy-gen (held-out perplexity 246) agrees with the recital now and then: most of its
    // drafts are rejected and rolled back, and two concurrent streams do so separately.
    expect_target_output(target_runner, draft_runner, *tok, prompts(*tok, 2), "cpu", 24, true);
    // The memoriser as its own draft: every drafted token is kept, and each saves a step.
    runtime::Runner self_runner(target, runner_options());
    const Outcome self =
        expect_target_output(target_runner, self_runner, *tok, prompts(*tok, 1), "self", 24, false);
    EXPECT_EQ(self.accepted, self.drafted);
    EXPECT_GE(double(self.steps), self.accepted * 0.9);
  }
  runtime::Model target(test::vk_context(), target_file);
  runtime::Model draft(test::vk_context(), draft_file);
  runtime::Runner target_runner(target, runner_options());
  runtime::Runner draft_runner(draft, runner_options());
  // Fewer tokens on lavapipe: a step there takes the time of ten on the CPU backend.
  expect_target_output(target_runner, draft_runner, *tok, prompts(*tok, 1), "vulkan", 8, false);
}

// The draft proposed is what the draft model generates greedily from the context, and after a
// rejection (the context moving on differently) the next proposal continues from the new context.
TEST(DraftModelSpeculation, ProposalsAreTheDraftModelsGreedyContinuation) {
  const std::string path = model_path("tolstoy-gen-q8_0.gguf");
  const gguf::GgufFile file = gguf::GgufFile::open(path);
  const auto tok = tokenizer::Tokenizer::from_gguf(file);
  runtime::HostModel host(gguf::GgufFile::open(path));
  runtime::Runner runner(host, runner_options());
  std::vector<int32_t> context = tok->encode("Prince Andrew looked at", true, false);
  // Plain greedy generation of 10 tokens.
  std::vector<int32_t> plain;
  {
    SchedulerOptions so;
    so.speculation.mode = SpeculationMode::off;
    Scheduler scheduler(runner, *tok, so);
    plain = generate(scheduler, {context}, greedy_options(10))[0];
  }
  ASSERT_EQ(plain.size(), 10u);
  DraftModel drafter(runner);
  const std::vector<std::vector<int32_t>> first =
      drafter.propose(std::vector<DraftRequest>{{1, context, 4}});
  EXPECT_EQ(first[0], std::vector<int32_t>(plain.begin(), plain.begin() + 4));
  // The target kept two of them and chose another third token: the draft's third token (written
  // provisionally) must not be seen; its proposal continues the new context.
  std::vector<int32_t> moved = context;
  moved.insert(moved.end(), plain.begin(), plain.begin() + 2);
  moved.push_back(tok->encode(" the", false, false).back());
  std::vector<int32_t> expected;
  {
    SchedulerOptions so;
    so.speculation.mode = SpeculationMode::off;
    Scheduler scheduler(runner, *tok, so);
    expected = generate(scheduler, {moved}, greedy_options(3))[0];
  }
  const auto second = drafter.propose(std::vector<DraftRequest>{{1, moved, 3}});
  EXPECT_EQ(second[0], expected);
  EXPECT_EQ(drafter.sequences(), 1u);
  drafter.forget(1);
  EXPECT_EQ(drafter.sequences(), 0u);
}

// A hybrid draft (recurrent layers; make-model's test shapes with tolstoy's vocabulary, random
// weights) drafts ahead from the state after the context, which it puts back before each further
// draft step and at the end: its proposals are its own greedy continuation, also after the
// context moved on differently, and tolstoy-mem's output with it as the draft is its own.
class HybridDraft : public ::testing::TestWithParam<std::string> {};

TEST_P(HybridDraft, ProposesItsGreedyContinuationAndKeepsTheTargetsOutput) {
  const std::string target_path = model_path("tolstoy-mem-q4_k_m.gguf");
  const gguf::GgufFile target_file = gguf::GgufFile::open(target_path);
  const auto tok = tokenizer::Tokenizer::from_gguf(target_file);
  model::MakeModelOptions o;
  o.arch = GetParam();
  o.shape = model::parse_model_shape("test");
  o.seed = 39;
  const std::vector<uint8_t> bytes = reference::make_model_bytes(
      o, reference::shared_testdata_dir() / "vocab" / "ggml-vocab-llama-spm.gguf");
  const gguf::GgufFile draft_file = gguf::GgufFile::parse(bytes);
  const runtime::HostModel draft(draft_file);
  ASSERT_TRUE(draft.spec().has_recurrent_state());
  runtime::Runner runner(draft, runner_options());

  std::vector<int32_t> context = tok->encode("Prince Andrew looked at", true, false);
  auto greedy = [&](const std::vector<int32_t>& from, int32_t n) {
    SchedulerOptions so;
    so.speculation.mode = SpeculationMode::off;
    Scheduler scheduler(runner, *tok, so);
    return generate(scheduler, {from}, greedy_options(n))[0];
  };
  const std::vector<int32_t> plain = greedy(context, 6);
  DraftModel drafter(runner);
  const auto first = drafter.propose(std::vector<DraftRequest>{{1, context, 4}});
  EXPECT_EQ(first[0], std::vector<int32_t>(plain.begin(), plain.begin() + 4));
  // The target kept one and chose another token: the next proposal continues the new context
  // from the state after it, not after the drafted rows.
  std::vector<int32_t> moved = context;
  moved.push_back(plain[0]);
  moved.push_back(tok->encode(" the", false, false).back());
  const auto second = drafter.propose(std::vector<DraftRequest>{{1, moved, 3}});
  EXPECT_EQ(second[0], greedy(moved, 3));
  drafter.forget(1);
  EXPECT_EQ(runner.pool().checkpoints().stats().held, 0u) << "the saved states were released";

  runtime::HostModel target(gguf::GgufFile::open(target_path));
  runtime::Runner target_runner(target, runner_options());
  expect_target_output(target_runner, runner, *tok, prompts(*tok, 2), "hybrid-" + GetParam(), 16,
                       false);
}

INSTANTIATE_TEST_SUITE_P(Hybrids, HybridDraft, ::testing::Values("lfm2", "qwen35", "granitehybrid"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace vkllm::sched
