// Running the continuous batcher to the end on a real Runner, for the scheduler tests with real
// weights (speculative_decoding_test.cpp, draft_model_test.cpp): the models under
// ../shared/testdata, the runner limits they share, and one run's tokens, steps and speculation
// counts.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include "engine/runtime/runner.h"
#include "engine/tokenizer/tokenizer.h"
#include "server/scheduler/draft_model.h"
#include "server/scheduler/metrics.h"
#include "server/scheduler/scheduler.h"
#include "tests/reference/llama_cpp_reference.h"

namespace vkllm::sched::test_run {

inline std::string model_path(const char* name) {
  return (reference::shared_testdata_dir() / "models" / name).string();
}

inline runtime::RunnerOptions runner_options() {
  runtime::RunnerOptions o;
  o.max_seqs = 8;
  o.max_context = 512;
  o.max_batch_tokens = 128;
  o.max_logits_rows = 64;  // room for drafts beside every sequence's row (as the server sizes it)
  o.kv_budget_bytes = 16u << 20;
  o.warm_up = false;  // only the pipelines the test runs
  return o;
}

inline SequenceOptions greedy_options(int32_t n) {
  SequenceOptions o;
  o.sampling.temperature = 0;
  o.num_predict = n;
  o.num_ctx = 512;
  return o;
}

// Runs the prompts as concurrent sequences to the end; the generated tokens of each.
inline std::vector<std::vector<int32_t>> generate(Scheduler& scheduler,
                                                  const std::vector<std::vector<int32_t>>& prompts,
                                                  const SequenceOptions& options) {
  boost::asio::io_context io;
  std::vector<std::vector<int32_t>> out(prompts.size());
  // All submitted at once, so they overlap however the threads are scheduled (the preemption
  // tests need them to).
  std::vector<SequenceRequest> requests;
  std::vector<std::shared_ptr<TokenStream>> streams;
  for (size_t i = 0; i < prompts.size(); ++i) {
    streams.push_back(std::make_shared<TokenStream>(io.get_executor()));
    requests.push_back({prompts[i], options, streams.back(), {}});
  }
  std::vector<SequenceHandle> handles = scheduler.submit_all(std::move(requests));
  for (size_t i = 0; i < prompts.size(); ++i) {
    auto stream = streams[i];
    boost::asio::co_spawn(
        io,
        [stream, &tokens = out[i]]() -> boost::asio::awaitable<void> {
          for (;;) {
            for (TokenEvent& ev : co_await stream->next()) {
              EXPECT_TRUE(ev.error.empty()) << ev.error;
              tokens.insert(tokens.end(), ev.tokens.begin(), ev.tokens.end());
              if (ev.finish != FinishReason::none) co_return;
            }
          }
        },
        boost::asio::detached);
  }
  io.run();
  for (auto& h : handles) h.release();
  return out;
}

struct Outcome {
  std::vector<std::vector<int32_t>> tokens;
  uint64_t steps = 0;
  double drafted = 0, accepted = 0;
};

// One scheduler over `runner` with speculation `mode` (SpeculationMode::draft with `drafter`),
// its runner steps and the drafted / accepted tokens /metrics counted under `label`.
inline Outcome run(runtime::Runner& runner, const tokenizer::Tokenizer& tok,
                   const std::vector<std::vector<int32_t>>& prompts, SpeculationMode mode,
                   const std::string& label, const SequenceOptions& options,
                   Drafter* drafter = nullptr) {
  SchedulerOptions so;
  so.model_label = label;
  so.speculation.mode = mode;
  so.draft_model = drafter;
  const uint64_t steps_before = runner.steps();
  Outcome r;
  {
    Scheduler scheduler(runner, tok, so);
    r.tokens = generate(scheduler, prompts, options);
  }
  r.steps = runner.steps() - steps_before;
  const MetricLabels by{{"model", label}, {"draft", drafter ? "model" : "ngram"}};
  r.drafted = metrics().value("vkllm_speculative_drafted_tokens_total", by);
  r.accepted = metrics().value("vkllm_speculative_accepted_tokens_total", by);
  return r;
}

}  // namespace vkllm::sched::test_run
