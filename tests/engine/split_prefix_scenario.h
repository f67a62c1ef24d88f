// The prefix-reuse, preemption and eviction scenario both split modes (by layers, by rows) are
// checked with against the whole model: a shared two-block prompt reused from the prefix cache
// in later rounds, a second sequence beside the live one, a step the pool cannot hold (both
// runners throw alike), the live sequence preempted (its blocks cached, one free) and the step
// retried, evictions counted alike. `run.step(ta, tb, tokens, want)` steps both runners and
// compares them (each split test's own comparison); `tokens(n)` gives n fresh token ids.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "engine/runtime/runner.h"

namespace vkllm::runtime::test_scenarios {

template <typename Compare, typename Tokens>
void prefix_reuse_and_preemption(Compare& run, Runner& whole, Runner& split, Tokens tokens) {
  const std::vector<int32_t> shared = tokens(8);  // two blocks
  for (int round = 0; round < 3; ++round) {
    std::vector<int32_t> prompt = shared;
    for (int32_t t : tokens(1 + round)) prompt.push_back(t);
    std::vector<kv::BlockTable> ta, tb;
    ta.emplace_back(whole.pool(), whole.block_size());
    tb.emplace_back(split.pool(), split.block_size());
    const uint32_t ca = ta[0].reuse_prefix(prompt), cb = tb[0].reuse_prefix(prompt);
    ASSERT_EQ(ca, cb);
    if (round == 1) {
      EXPECT_EQ(ca, 8u) << "the shared prompt's two blocks come from cache";
    }
    run.step(ta, tb, {std::vector<int32_t>(prompt.begin() + ca, prompt.end())}, LogitsWanted::Last);
    run.step(ta, tb, {tokens(1)}, LogitsWanted::Last);
    if (round != 1) continue;
    // Beside the live sequence (3 blocks) a second one takes 4 blocks, then 4 more do not fit.
    std::vector<kv::BlockTable> oa, ob;
    oa.emplace_back(whole.pool(), whole.block_size());
    ob.emplace_back(split.pool(), split.block_size());
    run.step(oa, ob, {tokens(14)}, LogitsWanted::Last);
    const std::vector<int32_t> more = tokens(15);
    SequenceStep sa{&oa[0], more}, sb{&ob[0], more};
    EXPECT_THROW(whole.step(std::span(&sa, 1)), std::runtime_error);
    EXPECT_THROW(split.step(std::span(&sb, 1)), std::runtime_error);
    ta.clear();  // preempted: 2 blocks cached, 1 free
    tb.clear();
    run.step(oa, ob, {more}, LogitsWanted::Last);
  }
  EXPECT_GT(whole.pool().stats().evictions, 0u);
  EXPECT_EQ(whole.pool().stats().evictions, split.pool().stats().evictions);
}

}  // namespace vkllm::runtime::test_scenarios
