// Prompt lookup, greedy verification and the draft gate (server/scheduler/speculation.h); the
// sampled rule and the scheduler on real weights are in tests/scheduler.
#include "server/scheduler/speculation.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

namespace vkllm::sched {
namespace {

using Tokens = std::vector<int32_t>;

TEST(NgramDraft, ProposesWhatFollowedTheMostRecentEarlierOccurrence) {
  // "5 6" occurs twice before the end; the later occurrence was followed by 9.
  const Tokens ctx{1, 5, 6, 7, 8, 2, 5, 6, 9, 4, 3, 5, 6};
  EXPECT_EQ(ngram_draft(ctx, 3, 3, 1), (Tokens{9, 4, 3}));
  EXPECT_EQ(ngram_draft(ctx, 1, 3, 1), (Tokens{9}));
  // The longest suffix wins: "1 2 3" occurred at the start, followed by 4 7, though "2 3" last
  // occurred followed by 9 1.
  const Tokens longer{1, 2, 3, 4, 7, 2, 3, 9, 1, 2, 3};
  EXPECT_EQ(ngram_draft(longer, 2, 3, 1), (Tokens{4, 7}));
  // With n_max 2, "2 3" last occurred followed by 9.
  EXPECT_EQ(ngram_draft(longer, 2, 2, 1), (Tokens{9, 1}));
  // A draft never runs past the context's end.
  EXPECT_EQ(ngram_draft(Tokens{4, 4, 4}, 8, 3, 1), (Tokens{4}));
}

TEST(NgramDraft, FindsNothingWithoutARepeat) {
  EXPECT_TRUE(ngram_draft(Tokens{1, 2, 3, 4, 5}, 4, 3, 1).empty());
  EXPECT_TRUE(ngram_draft(Tokens{}, 4, 3, 1).empty());
  EXPECT_TRUE(ngram_draft(Tokens{7}, 4, 3, 1).empty());
  EXPECT_TRUE(ngram_draft(Tokens{1, 2, 1}, 0, 3, 1).empty());
  // Only unigrams repeat here, and n_min 2 refuses them.
  EXPECT_TRUE(ngram_draft(Tokens{1, 2, 3, 1}, 4, 3, 2).empty());
}

TEST(VerifyGreedy, KeepsTheAgreeingPrefixAndTheTargetsNextToken) {
  // All accepted: the last row's argmax comes on top.
  Verified v = verify_greedy(Tokens{5, 6, 7}, Tokens{5, 6, 7, 8});
  EXPECT_EQ(v.tokens, (Tokens{5, 6, 7, 8}));
  EXPECT_EQ(v.accepted, 3u);
  // The second draft token is wrong: the target's choice replaces it and nothing after counts.
  v = verify_greedy(Tokens{5, 6, 7}, Tokens{5, 9, 7, 8});
  EXPECT_EQ(v.tokens, (Tokens{5, 9}));
  EXPECT_EQ(v.accepted, 1u);
  v = verify_greedy(Tokens{5}, Tokens{4, 4});
  EXPECT_EQ(v.tokens, (Tokens{4}));
  EXPECT_EQ(v.accepted, 0u);
  EXPECT_THROW(verify_greedy(Tokens{5, 6}, Tokens{5, 6}), std::invalid_argument);
}

TEST(DraftGate, PausesWhileDraftsAreRejectedAndProbesAgain) {
  DraftGate gate;
  EXPECT_GE(gate.budget(8), 1u);
  for (int i = 0; i < 4; ++i) gate.record(8, 8);
  EXPECT_EQ(gate.budget(8), 8u);  // a sequence whose drafts are kept drafts in full
  int rejected_steps = 0;
  while (gate.budget(8) > 0 && rejected_steps < 100) {
    gate.record(8, 0);
    ++rejected_steps;
  }
  EXPECT_LT(rejected_steps, 10);  // a few wasted steps, then the gate closes
  int paused = 1;
  while (gate.budget(8) == 0 && paused < 1000) ++paused;
  EXPECT_GT(paused, 8);
  EXPECT_LT(paused, 1000);  // and opens again for a probe
}

TEST(SpeculationMode, ParsesTheSettingsValues) {
  EXPECT_EQ(parse_speculation_mode("ngram"), SpeculationMode::ngram);
  EXPECT_EQ(parse_speculation_mode("auto"), SpeculationMode::automatic);
  EXPECT_EQ(parse_speculation_mode("off"), SpeculationMode::off);
  EXPECT_THROW(parse_speculation_mode("draft"), std::invalid_argument);
}

TEST(SpeculationMode, AutoIsPromptLookupOnTheCpuAndOffOnGpus) {
  const SpeculationOptions automatic;  // the default
  EXPECT_EQ(speculation_for(automatic, /*model_on_cpu=*/true).mode, SpeculationMode::ngram);
  EXPECT_EQ(speculation_for(automatic, /*model_on_cpu=*/false).mode, SpeculationMode::off);
  // An explicit choice holds wherever the model runs.
  for (const SpeculationMode m : {SpeculationMode::ngram, SpeculationMode::off}) {
    SpeculationOptions o;
    o.mode = m;
    EXPECT_EQ(speculation_for(o, true).mode, m);
    EXPECT_EQ(speculation_for(o, false).mode, m);
  }
  // A model with a draft model drafts with it on any device, unless speculation is off.
  for (const SpeculationMode m : {SpeculationMode::automatic, SpeculationMode::ngram}) {
    SpeculationOptions o;
    o.mode = m;
    EXPECT_EQ(speculation_for(o, true, /*has_draft_model=*/true).mode, SpeculationMode::draft);
    EXPECT_EQ(speculation_for(o, false, true).mode, SpeculationMode::draft);
  }
  SpeculationOptions off;
  off.mode = SpeculationMode::off;
  EXPECT_EQ(speculation_for(off, false, true).mode, SpeculationMode::off);
}

}  // namespace
}  // namespace vkllm::sched
