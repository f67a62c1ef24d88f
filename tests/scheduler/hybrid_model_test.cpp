// The continuous batcher with hybrid models (make-model's test fixtures of LFM2, short
// convolutions + attention, Qwen3.5, Gated DeltaNet + gated attention, its MoE variant (experts
// and a gated shared expert after each block), and the Mamba-2 hybrids Granite 4.0-H and
// Nemotron-H and its MoE variant), on the CPU backend:
// 16 concurrent greedy streams, mixing prefill chunks and decode steps, equal their solo runs
// token for token (no recurrent state leaks between sequences or survives a finished one into
// the next owner of its slot), also when a tiny KV cache preempts sequences and they recompute.
// Prompts that repeat earlier ones, and a chat's second turn, resume from state checkpoints
// (kv::StateCheckpoints): the second turn computes only what follows the first turn's last full
// block, and answers as a cold cache does. A cancelled stream gives its state slot back. Drafts
// are verified against a recurrent state that keeps the state after each drafted token
// (RunnerOptions::draft_states): with drafts accepted whole, in part and not at all, the greedy
// output stays the solo runs'; a runner that keeps no such states drafts nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/runtime/host_model.h"
#include "engine/runtime/kv_footprint.h"
#include "engine/runtime/runner.h"
#include "engine/tokenizer/tokenizer.h"
#include "server/scheduler/metrics.h"
#include "tests/reference/model_reference.h"
#include "tests/scheduler/scheduler_run.h"

namespace vkllm::sched {
namespace {

using namespace test_run;

struct HybridFixture {
  std::vector<uint8_t> bytes;
  std::optional<gguf::GgufFile> file;
  std::optional<runtime::HostModel> model;
  std::unique_ptr<tokenizer::Tokenizer> tok;
};

// Made once per architecture and test process; the model reads the file, which reads the bytes:
// never moved.
const HybridFixture& hybrid(const std::string& arch) {
  static std::map<std::string, std::unique_ptr<HybridFixture>> made;
  auto& x = made[arch];
  if (!x) {
    x = std::make_unique<HybridFixture>();
    model::MakeModelOptions o;
    o.arch = arch;
    o.shape = model::parse_model_shape("test");
    o.seed = 36;
    x->bytes = reference::make_model_bytes(
        o, reference::shared_testdata_dir() / "vocab" / "ggml-vocab-llama-spm.gguf");
    x->file.emplace(gguf::GgufFile::parse(x->bytes));
    x->model.emplace(*x->file);
    x->tok = tokenizer::Tokenizer::from_gguf(*x->file);
  }
  return *x;
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

runtime::RunnerOptions hybrid_runner() {
  runtime::RunnerOptions o = runner_options();
  o.max_seqs = 16;
  return o;
}

class HybridModelScheduler : public ::testing::TestWithParam<std::string> {};

TEST_P(HybridModelScheduler, ConcurrentStreamsEqualSoloRunsAlsoWhenPreempted) {
  const std::string arch = GetParam();
  const HybridFixture& f = hybrid(arch);
  ASSERT_TRUE(f.model->spec().has_recurrent_state());
  const auto ps = prompts(*f.tok);
  ASSERT_GT(ps[1].size(), runner_options().max_batch_tokens);
  const SequenceOptions greedy = greedy_options(12);

  runtime::Runner runner(*f.model, hybrid_runner());
  ASSERT_GT(runner.pool().checkpoints().size(), 0u);
  std::vector<std::vector<int32_t>> solo;
  for (const auto& p : ps)
    solo.push_back(
        run(runner, *f.tok, {p}, SpeculationMode::off, arch + "-solo", greedy).tokens[0]);

  // The same prompts again, 16 streams at once (each prompt 4 times; their blocks and state
  // checkpoints are cached by now), with ngram speculation asked for.
  std::vector<std::vector<int32_t>> many, want;
  for (int i = 0; i < 4; ++i) {
    many.insert(many.end(), ps.begin(), ps.end());
    want.insert(want.end(), solo.begin(), solo.end());
  }
  const std::string together = arch + "-together";
  const Outcome all = run(runner, *f.tok, many, SpeculationMode::ngram, together, greedy);
  EXPECT_EQ(all.tokens, want);
  EXPECT_EQ(all.drafted, 0) << "speculation without kept states (RunnerOptions::draft_states)";
  EXPECT_GT(metrics().value("vkllm_prefix_cache_hit_tokens_total", {{"model", together}}), 0)
      << "the repeated prompts resume from checkpoints";

  // A KV cache of 14 blocks (224 tokens) beside the 16 states and 8 checkpoints: the four
  // sequences need 21 blocks.
  runtime::RunnerOptions tiny = hybrid_runner();
  const model::ModelSpec& spec = f.model->spec();
  const uint64_t block = runtime::kv_bytes_per_token(spec, kv::CacheType::F16) * 16;
  uint64_t slot = 0;
  for (uint64_t x : spec.recurrent_state_floats()) slot += 4 * x;
  const uint64_t after_states = 8 * slot + 14 * block + block / 2;
  tiny.kv_budget_bytes = 16 * slot + after_states;
  tiny.state_checkpoint_share = 8.5 * double(slot) / double(after_states);
  runtime::Runner small(*f.model, tiny);
  ASSERT_EQ(small.pool().num_blocks(), 14u);
  ASSERT_EQ(small.pool().checkpoints().size(), 8u);
  const std::string preempting = arch + "-tiny";
  const Outcome preempted = run(small, *f.tok, ps, SpeculationMode::off, preempting, greedy);
  EXPECT_EQ(preempted.tokens, solo);
  EXPECT_GT(metrics().value("vkllm_preemptions_total", {{"model", preempting}}), 0);
}

// Drafts the continuation each prompt's solo run produced, the last token of every other draft
// made wrong: the target accepts whole drafts, drafts up to a token, and (as the wrong token may
// come first) none, so the recurrent state is kept after every possible count of tokens.
class ScriptedDrafter final : public Drafter {
 public:
  ScriptedDrafter(const std::vector<std::vector<int32_t>>& prompts,
                  const std::vector<std::vector<int32_t>>& answers, uint32_t n_vocab)
      : prompts_(prompts), answers_(answers), n_vocab_(n_vocab) {}

  std::vector<std::vector<int32_t>> propose(std::span<const DraftRequest> requests) override {
    std::vector<std::vector<int32_t>> out;
    for (const DraftRequest& r : requests) {
      std::vector<int32_t>& d = out.emplace_back();
      for (size_t i = 0; i < prompts_.size(); ++i) {
        const auto& p = prompts_[i];
        const auto& a = answers_[i];
        // The context is the prompt, then the answer so far.
        if (r.context.size() < p.size() || r.context.size() > p.size() + a.size()) continue;
        const auto ctx = r.context;
        if (!std::equal(p.begin(), p.end(), ctx.begin()) ||
            !std::equal(ctx.begin() + p.size(), ctx.end(), a.begin()))
          continue;
        const size_t done = ctx.size() - p.size();
        for (size_t j = done; j < a.size() && d.size() < r.max_tokens; ++j) d.push_back(a[j]);
        if (!d.empty() && ++proposals_ % 2 == 0) d.back() = (d.back() + 1) % int32_t(n_vocab_);
        break;
      }
    }
    return out;
  }
  void forget(uint64_t) override {}

 private:
  const std::vector<std::vector<int32_t>>& prompts_;
  const std::vector<std::vector<int32_t>>& answers_;
  uint32_t n_vocab_;
  uint64_t proposals_ = 0;
};

TEST_P(HybridModelScheduler, DraftsAreVerifiedAgainstTheRecurrentState) {
  const std::string arch = GetParam();
  const HybridFixture& f = hybrid(arch);
  const auto ps = prompts(*f.tok);
  const std::vector<std::vector<int32_t>> three{ps[1], ps[0], ps[2]};
  const SequenceOptions greedy = greedy_options(24);
  runtime::RunnerOptions o = hybrid_runner();
  o.draft_states = 2 * SpeculationOptions{}.draft_max;
  runtime::Runner runner(*f.model, o);
  std::vector<std::vector<int32_t>> solo;
  for (const auto& p : three)
    solo.push_back(
        run(runner, *f.tok, {p}, SpeculationMode::off, arch + "-solo", greedy).tokens[0]);
  ScriptedDrafter drafter(three, solo, f.model->spec().n_vocab);
  const std::string label = arch + "-drafting";
  const Outcome drafted =
      run(runner, *f.tok, three, SpeculationMode::draft, label, greedy, &drafter);
  EXPECT_EQ(drafted.tokens, solo);
  EXPECT_GT(drafted.accepted, 0) << "no draft was accepted";
  EXPECT_LT(drafted.accepted, drafted.drafted) << "no draft was rejected";
  std::printf("%s: %.0f drafted tokens, %.0f accepted, %llu steps for 3 x %zu tokens\n",
              arch.c_str(), drafted.drafted, drafted.accepted,
              static_cast<unsigned long long>(drafted.steps), solo[0].size());
  // A runner that keeps no states after drafted tokens gets no drafts.
  runtime::Runner plain(*f.model, hybrid_runner());
  const Outcome none =
      run(plain, *f.tok, three, SpeculationMode::draft, arch + "-nodraft", greedy, &drafter);
  EXPECT_EQ(none.tokens, solo);
  EXPECT_EQ(none.drafted, 0);
}

// One stream to its end: its tokens and the prompt tokens the prefix cache served.
struct Turn {
  std::vector<int32_t> tokens;
  uint32_t cached = 0;
};
Turn run_turn(runtime::Runner& runner, const tokenizer::Tokenizer& tok,
              const std::vector<int32_t>& prompt, const SequenceOptions& options) {
  Scheduler scheduler(runner, tok, SchedulerOptions{});
  boost::asio::io_context io;
  Turn t;
  auto stream = std::make_shared<TokenStream>(io.get_executor());
  SequenceHandle handle = scheduler.submit({prompt, options, stream, {}});
  boost::asio::co_spawn(
      io,
      [stream, &t]() -> boost::asio::awaitable<void> {
        for (;;) {
          for (TokenEvent& ev : co_await stream->next()) {
            EXPECT_TRUE(ev.error.empty()) << ev.error;
            t.tokens.insert(t.tokens.end(), ev.tokens.begin(), ev.tokens.end());
            t.cached = ev.cached_tokens;
            if (ev.finish != FinishReason::none) co_return;
          }
        }
      },
      boost::asio::detached);
  io.run();
  handle.release();
  return t;
}

TEST_P(HybridModelScheduler, ASecondChatTurnComputesOnlyWhatFollowsTheFirstTurnsLastBlock) {
  const HybridFixture& f = hybrid(GetParam());
  const auto ps = prompts(*f.tok);
  const SequenceOptions greedy = greedy_options(20);
  runtime::Runner runner(*f.model, hybrid_runner());
  const uint32_t bs = runner.block_size();

  const Turn first = run_turn(runner, *f.tok, ps[3], greedy);
  ASSERT_EQ(first.tokens.size(), 20u);
  EXPECT_EQ(first.cached, 0u);
  std::vector<int32_t> second = ps[3];
  second.insert(second.end(), first.tokens.begin(), first.tokens.end());
  const auto question = f.tok->encode(" Why did the dog sigh?", false, false);
  second.insert(second.end(), question.begin(), question.end());
  // The first turn computed its prompt and all but its last token; a rolling checkpoint followed
  // its answer block by block.
  const uint32_t computed = static_cast<uint32_t>(ps[3].size() + first.tokens.size() - 1);
  const Turn resumed = run_turn(runner, *f.tok, second, greedy);
  EXPECT_EQ(resumed.cached, computed / bs * bs);
  EXPECT_LT(second.size() - resumed.cached, question.size() + 1 + bs);

  runtime::Runner cold(*f.model, hybrid_runner());
  const Turn fresh = run_turn(cold, *f.tok, second, greedy);
  EXPECT_EQ(fresh.cached, 0u);
  EXPECT_EQ(resumed.tokens, fresh.tokens);
}

TEST_P(HybridModelScheduler, ACancelledStreamGivesItsStateSlotBack) {
  const HybridFixture& f = hybrid(GetParam());
  runtime::Runner runner(*f.model, hybrid_runner());
  const uint32_t slots = runner.pool().state_slots().size();
  {
    Scheduler scheduler(runner, *f.tok, SchedulerOptions{});
    boost::asio::io_context io;
    auto stream = std::make_shared<TokenStream>(io.get_executor());
    SequenceHandle handle = scheduler.submit({prompts(*f.tok)[1], greedy_options(400), stream, {}});
    FinishReason finish = FinishReason::none;
    size_t tokens = 0;
    boost::asio::co_spawn(
        io,
        [&]() -> boost::asio::awaitable<void> {
          for (;;) {
            for (TokenEvent& ev : co_await stream->next()) {
              tokens += ev.tokens.size();
              if (tokens > 0) handle.cancel();  // the client went away
              if (ev.finish != FinishReason::none) {
                finish = ev.finish;
                co_return;
              }
            }
          }
        },
        boost::asio::detached);
    io.run();
    EXPECT_EQ(finish, FinishReason::cancelled);
    EXPECT_LT(tokens, 400u);
  }
  EXPECT_EQ(runner.pool().state_slots().available(), slots);
  EXPECT_EQ(runner.pool().stats().used, 0u);
}

INSTANTIATE_TEST_SUITE_P(Hybrids, HybridModelScheduler,
                         ::testing::Values("lfm2", "qwen35", "qwen35moe", "granitehybrid",
                                           "nemotron_h", "nemotron_h_moe"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace vkllm::sched
