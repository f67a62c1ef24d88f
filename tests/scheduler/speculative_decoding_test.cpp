// Speculative decoding end to end in the continuous batcher, on real weights
// (../shared/testdata/models): tolstoy-mem (a model that memorised War and Peace) recites a
// passage its prompt quotes, so prompt lookup drafts tokens the model accepts. Greedy output is
// the same token for token with and without speculation, on the CPU backend and on Vulkan
// (lavapipe here), alone and as 8 concurrent streams, in fewer steps; with sampling,
// tolstoy-gen's token frequencies through the acceptance rule match plain sampling's.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/runtime/generator.h"
#include "engine/runtime/host_model.h"
#include "engine/runtime/model.h"
#include "engine/runtime/runner.h"
#include "engine/sampling/sampler.h"
#include "engine/tokenizer/tokenizer.h"
#include "server/scheduler/metrics.h"
#include "server/scheduler/scheduler.h"
#include "server/scheduler/speculation.h"
#include "tests/engine/vk_test_context.h"
#include "tests/reference/llama_cpp_reference.h"
#include "tests/scheduler/scheduler_run.h"

namespace vkllm::sched {
namespace {

using namespace test_run;

// The model's recitals of the openings (`recital` tokens, all in one batch), then prompts that
// quote each and start it again: the continuation repeats what the prompt holds, which is what
// prompt lookup finds.
std::vector<std::vector<int32_t>> quoting_prompts(runtime::Runner& runner,
                                                  const tokenizer::Tokenizer& tok,
                                                  const std::vector<std::string>& openings,
                                                  int32_t recital) {
  std::vector<std::vector<int32_t>> prompts;
  for (const auto& opening : openings) prompts.push_back(tok.encode(opening, true, false));
  const Outcome recitals = run(runner, tok, prompts, SpeculationMode::off, "recital" + openings[0],
                               greedy_options(recital));
  for (size_t i = 0; i < prompts.size(); ++i) {
    prompts[i].insert(prompts[i].end(), recitals.tokens[i].begin(), recitals.tokens[i].end());
    const std::vector<int32_t> again = tok.encode(" " + openings[i], false, false);
    prompts[i].insert(prompts[i].end(), again.begin(), again.end());
  }
  return prompts;
}

void expect_same_with_fewer_steps(runtime::Runner& runner, const tokenizer::Tokenizer& tok,
                                  const std::vector<std::vector<int32_t>>& prompts,
                                  const std::string& label, int32_t n) {
  const SequenceOptions options = greedy_options(n);
  const auto t0 = std::chrono::steady_clock::now();
  const Outcome plain = run(runner, tok, prompts, SpeculationMode::off, label + "-off", options);
  const auto t1 = std::chrono::steady_clock::now();
  const Outcome spec = run(runner, tok, prompts, SpeculationMode::ngram, label + "-ngram", options);
  const auto t2 = std::chrono::steady_clock::now();
  EXPECT_EQ(spec.tokens, plain.tokens);
  EXPECT_EQ(plain.drafted, 0);
  EXPECT_GT(spec.drafted, 0);
  // The recital is in the prompt: most drafted tokens are right, and the steps they save show.
  EXPECT_GT(spec.accepted, 0.5 * spec.drafted);
  EXPECT_LT(spec.steps, plain.steps * 3 / 4);
  // Sampled, the verification runs on the CPU through the rejection rule: the memorised text is
  // so certain (top_p keeps one candidate) that it must come out the same.
  SequenceOptions sampled = options;
  sampled.sampling.temperature = 0.3f;
  sampled.sampling.repeat_penalty = 1.0f;
  sampled.sampling.seed = 7;
  const Outcome spec_sampled =
      run(runner, tok, prompts, SpeculationMode::ngram, label + "-sampled", sampled);
  EXPECT_EQ(spec_sampled.tokens, plain.tokens);
  EXPECT_GT(spec_sampled.accepted, 0.5 * spec_sampled.drafted);
  using ms = std::chrono::duration<double, std::milli>;
  std::printf(
      "%s: %llu steps plain (%.0f ms), %llu speculative (%.0f ms), %.0f of %.0f drafted "
      "tokens accepted\n",
      label.c_str(), (unsigned long long)plain.steps, ms(t1 - t0).count(),
      (unsigned long long)spec.steps, ms(t2 - t1).count(), spec.accepted, spec.drafted);
}

const char* const kOpenings[] = {
    "It was in July, 1805, and the speaker was the well-known Anna Pavlovna",
    "The Emperor",
    "Prince Andrew",
    "Natasha",
    "Pierre",
    "Well, Prince, so Genoa and Lucca",
    "The French",
    "Count Rostov",
};

TEST(SpeculativeDecoding, GreedyRecitalIsTheSameInFewerStepsOnBothBackends) {
  const std::string path = model_path("tolstoy-mem-q4_k_m.gguf");
  const gguf::GgufFile file = gguf::GgufFile::open(path);
  const auto tok = tokenizer::Tokenizer::from_gguf(file);
  runtime::HostModel host(gguf::GgufFile::open(path));
  runtime::Runner cpu(host, runner_options());
  const std::vector<std::vector<int32_t>> prompt = quoting_prompts(cpu, *tok, {kOpenings[0]}, 40);
  expect_same_with_fewer_steps(cpu, *tok, prompt, "cpu", 32);

  runtime::Model model(test::vk_context(), file);
  runtime::Runner vk(model, runner_options());
  // Fewer tokens on lavapipe: a step there takes the time of ten on the CPU backend.
  expect_same_with_fewer_steps(vk, *tok, prompt, "vulkan", 12);
}

TEST(SpeculativeDecoding, EightConcurrentStreamsEqualTheirSoloRuns) {
  const std::string path = model_path("tolstoy-mem-q4_k_m.gguf");
  const gguf::GgufFile file = gguf::GgufFile::open(path);
  const auto tok = tokenizer::Tokenizer::from_gguf(file);
  runtime::HostModel host(gguf::GgufFile::open(path));
  runtime::Runner runner(host, runner_options());
  const std::vector<std::vector<int32_t>> prompts = quoting_prompts(
      runner, *tok, std::vector<std::string>(std::begin(kOpenings), std::end(kOpenings)), 24);
  const SequenceOptions options = greedy_options(16);
  // Each stream's drafts, acceptance and rollback must not disturb the others' (rows of one
  // step, blocks of one pool): the batch equals each sequence run alone. Alone with speculation
  // (a few steps each) as GreedyRecitalIsTheSame... shows that equals plain decoding.
  const Outcome together = run(runner, *tok, prompts, SpeculationMode::ngram, "eight", options);
  // Some openings lead the memoriser elsewhere the second time: drafts are only partly kept.
  EXPECT_GT(together.accepted, 0);
  for (size_t i = 0; i < prompts.size(); ++i) {
    const Outcome solo = run(runner, *tok, {prompts[i]}, SpeculationMode::ngram,
                             "solo" + std::to_string(i), options);
    EXPECT_EQ(together.tokens[i], solo.tokens[0]) << "stream " << i;
  }
  std::printf("8 streams: %llu steps, %.0f of %.0f drafted tokens accepted\n",
              (unsigned long long)together.steps, together.accepted, together.drafted);
}

// Total variation distance between a sample's token frequencies (n draws) and a distribution.
double total_variation(const std::map<int32_t, int>& sample, int n,
                       const std::vector<sampling::Candidate>& exact) {
  std::map<int32_t, double> diff;
  for (const auto& c : exact) diff[c.id] = c.p;
  for (const auto& [t, count] : sample) diff[t] -= double(count) / n;
  double tv = 0;
  for (const auto& [t, d] : diff) tv += std::abs(d);
  return tv / 2;
}

// The rejection rule on tolstoy-gen's real logits, with Ollama's default sampler (penalties,
// top_k 40, top_p 0.9) at temperature 1: over kTrials seeded samplers, the first token chosen
// through a one-token draft, how often the draft is kept, and the token after a kept draft are
// distributed as Sampler::distribution() says plain sampling draws them, for a draft the model
// likes and for one it does not. Sampling noise at kTrials is a total variation of about 0.02
// here; the stated tolerance is 0.05 (times sqrt(kTrials / kept draws) for the
// second token). Keeping every draft, or never, would miss the kept share by 1 - p(draft) or
// p(draft) (the test prints them).
TEST(SpeculativeDecoding, SampledTokensKeepTheTargetDistribution) {
  constexpr int kTrials = 5000;
  constexpr double kTolerance = 0.05;
  const std::string path = model_path("tolstoy-gen-q8_0.gguf");
  const gguf::GgufFile file = gguf::GgufFile::open(path);
  const auto tok = tokenizer::Tokenizer::from_gguf(file);
  runtime::HostModel host(gguf::GgufFile::open(path));
  runtime::Runner runner(host, runner_options());
  const std::vector<int32_t> context =
      tok->encode("and the French, and the French, and the", true, false);
  const uint32_t n_vocab = runner.spec().n_vocab;
  sampling::SamplingParams params;
  params.temperature = 1.0f;
  auto fresh_sampler = [&](int seed) {
    params.seed = seed;
    sampling::Sampler s(params);
    for (int32_t t : context) s.accept(t);
    return s;
  };
  const std::vector<float> first = runtime::Generator(runner).feed(context);
  const std::vector<sampling::Candidate> p1 = fresh_sampler(0).distribution(first);
  ASSERT_GE(p1.size(), 2u);
  // The model's favourite and its second choice.
  for (const int32_t draft : {p1[0].id, p1[1].id}) {
    SCOPED_TRACE("draft " + std::to_string(draft));
    std::vector<int32_t> with_draft = context;
    with_draft.push_back(draft);
    // Rows after the context and after the context + draft, as a verification step has them.
    const std::vector<float> rows = runtime::Generator(runner).feed(with_draft, true);
    const std::span<const float> last_two =
        std::span(rows).subspan((with_draft.size() - 2) * n_vocab, 2 * n_vocab);
    sampling::Sampler after = fresh_sampler(0);
    after.accept(draft);
    const std::vector<sampling::Candidate> p2 = after.distribution(last_two.last(n_vocab));
    std::map<int32_t, int> firsts, seconds;
    int kept = 0;
    for (int i = 0; i < kTrials; ++i) {
      sampling::Sampler spec = fresh_sampler(i + 1);
      const Verified v = verify_sampled(spec, std::span(&draft, 1), last_two, n_vocab);
      ++firsts[v.tokens[0]];
      if (v.accepted == 1) {
        ++seconds[v.tokens[1]];
        ++kept;
      }
    }
    const double p_draft =
        std::find_if(p1.begin(), p1.end(), [&](auto& c) { return c.id == draft; })->p;
    EXPECT_LT(total_variation(firsts, kTrials, p1), kTolerance);
    EXPECT_NEAR(double(kept) / kTrials, p_draft, kTolerance);
    ASSERT_GT(kept, 0);
    EXPECT_LT(total_variation(seconds, kept, p2), kTolerance * std::sqrt(double(kTrials) / kept));
    std::printf("draft %d: p %.3f, kept %.3f; first-token TV %.4f, second-token TV %.4f (%d)\n",
                draft, p_draft, double(kept) / kTrials, total_variation(firsts, kTrials, p1),
                total_variation(seconds, kept, p2), kept);
  }
}

}  // namespace
}  // namespace vkllm::sched
