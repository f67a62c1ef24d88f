// Speculative verification on hybrid models (Runner::keep_provisional, RunnerOptions::
// draft_states) on both backends (Vulkan: lavapipe here; make-model's test shapes of Qwen3.5's
// Gated DeltaNet, LFM2's short convolutions and Granite 4.0-H's Mamba-2): a provisional step takes
// every drafted token into the recurrent state, keeping the state after each token in a captured
// slot; a sequence that keeps only its first n tokens goes on from the state after them. Checked
// against the same tokens decoded one at a time: the provisional step's logits at the kept
// tokens, and every later step's, equal theirs within float tolerance (the recurrences run the
// same arithmetic; only the products' batch shapes differ), while a sequence that kept the
// rejected tokens' state (no keep_provisional) does not. Beside the provisional sequence, another
// sequence prefills in the same step, over the chunked forms (their thresholds lowered below the
// provisional step's length, which must still take the recurrent forms that keep states).
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <numeric>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/runtime/runner.h"
#include "tests/engine/backend_runner.h"
#include "tests/reference/model_reference.h"
#include "tests/support/fixture_model.h"

namespace vkllm::runtime {
namespace {

using test::Backend;

// The logits rows of one sequence's step (all of them when `all`, else the last).
std::vector<std::vector<float>> rows_of(const StepResult& r, size_t seq, uint32_t n_vocab) {
  std::vector<std::vector<float>> out;
  const std::vector<float>& l = r.logits.at(seq);
  for (size_t i = 0; i + n_vocab <= l.size(); i += n_vocab)
    out.emplace_back(l.begin() + i, l.begin() + i + n_vocab);
  return out;
}

std::vector<float> feed(Runner& r, kv::BlockTable& table, std::span<const int32_t> tokens) {
  SequenceStep s{&table, tokens, LogitsWanted::Last};
  return r.step(std::span(&s, 1)).logits.at(0);
}

// A provisional step of `tokens` that keeps the first `keep` (commits them, drops the rest).
std::vector<std::vector<float>> verify(Runner& r, kv::BlockTable& table,
                                       std::span<const int32_t> tokens, uint32_t keep,
                                       bool settle_state = true) {
  SequenceStep s{&table, tokens, LogitsWanted::All, /*provisional=*/true};
  const StepResult res = r.step(std::span(&s, 1));
  if (settle_state) {
    const KeptTokens kept{&table, keep};
    r.keep_provisional(std::span(&kept, 1));
  }
  table.commit(tokens.first(keep));
  table.trim_reserved();
  return rows_of(res, 0, r.spec().n_vocab);
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want,
                  const std::string& what) {
  const double cos = reference::cosine(got, want);
  EXPECT_GE(cos, 0.99999) << what << ": max abs diff " << reference::max_abs_diff(got, want);
}

class HybridSpeculation : public ::testing::TestWithParam<std::tuple<Backend, std::string>> {};

TEST_P(HybridSpeculation, AKeptPrefixLeavesTheStateOfItsOwnTokens) {
  const auto [backend, arch] = GetParam();
  model::MakeModelOptions mo;
  mo.arch = arch;
  mo.shape = model::parse_model_shape("test");
  mo.seed = 39;
  const std::vector<uint8_t> bytes = test::random_model_bytes(mo);
  const auto file = gguf::GgufFile::parse(bytes);
  RunnerOptions ro;
  ro.max_seqs = 3;
  ro.max_context = 128;
  ro.max_batch_tokens = 64;
  ro.max_logits_rows = 16;
  ro.kv_budget_bytes = 8u << 20;
  ro.warm_up = false;
  ro.draft_states = 5;
  // A 5-token step would take the chunked delta rule and scan: a provisional one must not.
  ro.delta_net_chunk_min = 4;
  ro.ssm_chunk_min_tokens = 4;
  const test::BackendRunner runner(backend, file, ro);
  Runner& r = *runner.runner;
  ASSERT_TRUE(r.spec().has_recurrent_state());
  const uint32_t bs = r.block_size();

  std::vector<int32_t> prompt(37);
  std::iota(prompt.begin(), prompt.end(), 11);
  const std::vector<int32_t> next{101, 57, 230, 9, 77, 140, 63, 12};  // what the sequence keeps
  const std::vector<int32_t> wrong{5, 250};                           // drafts it rejects
  std::vector<int32_t> side(20);  // another sequence's prompt, prefilled beside a verification
  std::iota(side.begin(), side.end(), 40);

  // The reference: the prompt, then each kept token decoded on its own.
  std::vector<std::vector<float>> want;
  std::vector<float> side_want;
  {
    kv::BlockTable t(r.pool(), bs);
    feed(r, t, prompt);
    for (int32_t tok : next) want.push_back(feed(r, t, std::span(&tok, 1)));
    kv::BlockTable s(r.pool(), bs);
    side_want = feed(r, s, side);
  }

  kv::BlockTable t(r.pool(), bs);
  feed(r, t, prompt);
  // [n0 n1 n2 w0 w1], beside the other sequence's prefill: keeps 3.
  {
    std::vector<int32_t> step(next.begin(), next.begin() + 3);
    step.insert(step.end(), wrong.begin(), wrong.end());
    kv::BlockTable s(r.pool(), bs);
    SequenceStep both[] = {{&t, step, LogitsWanted::All, /*provisional=*/true},
                           {&s, side, LogitsWanted::Last}};
    const StepResult res = r.step(both);
    const KeptTokens kept{&t, 3};
    r.keep_provisional(std::span(&kept, 1));
    t.commit(std::span<const int32_t>(step).first(3));
    t.trim_reserved();
    const auto rows = rows_of(res, 0, r.spec().n_vocab);
    ASSERT_EQ(rows.size(), 5u);
    for (int i = 0; i < 3; ++i)
      expect_close(rows[i], want[i], "verified token " + std::to_string(i));
    expect_close(res.logits.at(1), side_want, "the prefill beside it");
  }
  ASSERT_EQ(t.num_tokens(), prompt.size() + 3);
  // [n3 n4 n5] kept whole (the live state is already right), then [n6 w0] keeping 1.
  auto rows = verify(r, t, std::span(next).subspan(3, 3), 3);
  for (int i = 0; i < 3; ++i)
    expect_close(rows[i], want[3 + i], "whole draft " + std::to_string(i));
  const std::vector<int32_t> last{next[6], wrong[0]};
  rows = verify(r, t, last, 1);
  expect_close(rows[0], want[6], "a draft kept to its first token");
  const std::vector<float> got = feed(r, t, std::span(&next[7], 1));
  const double cos = reference::cosine(got, want[7]);
  std::printf("%s: after three verifications vs token by token: cosine %.7f, max abs diff %.3g\n",
              arch.c_str(), cos, reference::max_abs_diff(got, want[7]));
  EXPECT_GE(cos, 0.99999);

  // Without keep_provisional the state has taken in the rejected tokens: the test can tell.
  kv::BlockTable u(r.pool(), bs);
  feed(r, u, prompt);
  std::vector<int32_t> step(next.begin(), next.begin() + 3);
  step.insert(step.end(), wrong.begin(), wrong.end());
  verify(r, u, step, 3, /*settle_state=*/false);
  const std::vector<float> stale = feed(r, u, std::span(&next[3], 1));
  const double stale_cos = reference::cosine(stale, want[3]);
  std::printf("%s: the state with the rejected tokens in it: cosine %.4f\n", arch.c_str(),
              stale_cos);
  EXPECT_LT(stale_cos, 0.9999) << "the rejected tokens left no trace";

  // More drafted tokens than kept states: refused before anything is reserved.
  kv::BlockTable v(r.pool(), bs);
  feed(r, v, prompt);
  const std::vector<int32_t> seven{1, 2, 3, 4, 5, 6, 7};
  SequenceStep too_many{&v, seven, LogitsWanted::All, /*provisional=*/true};
  EXPECT_THROW(r.step(std::span(&too_many, 1)), std::invalid_argument);
  EXPECT_EQ(v.num_tokens(), prompt.size());
  const KeptTokens stranger{&v, 2};
  EXPECT_THROW(r.keep_provisional(std::span(&stranger, 1)), std::invalid_argument);
}

std::string case_label(const ::testing::TestParamInfo<std::tuple<Backend, std::string>>& info) {
  return test::backend_label(std::get<0>(info.param)) + std::get<1>(info.param);
}

INSTANTIATE_TEST_SUITE_P(Hybrids, HybridSpeculation,
                         ::testing::Combine(::testing::Values(Backend::Vulkan, Backend::Cpu),
                                            ::testing::Values("qwen35", "lfm2", "granitehybrid")),
                         case_label);

}  // namespace
}  // namespace vkllm::runtime
