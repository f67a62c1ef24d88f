// The continuous batcher's policy (server/scheduler/step_planner.h) on a real KV block pool, with
// no runner: each step is planned, "executed" as the runner would record it (the rows' tokens
// committed to their block tables, one chosen token per logits row) and applied.
#include "server/scheduler/step_planner.h"

#include "server/scheduler/image_inputs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <span>
#include <string>
#include <vector>

namespace vkllm::sched {
namespace {

using Tokens = std::vector<int32_t>;
constexpr int32_t kEndOfGeneration = 2;

// n distinct tokens from `first` on (distinct prompts share no prefix blocks).
Tokens tokens_from(int32_t first, size_t n) {
  Tokens t(n);
  std::iota(t.begin(), t.end(), first);
  return t;
}

PlannerOptions options(uint32_t step_tokens, uint32_t max_running = 8) {
  PlannerOptions o;
  o.max_running = max_running;
  o.step_tokens = step_tokens;
  o.max_context = 4096;
  o.max_logits_rows = 8;
  o.block_size = 4;
  o.speculation.mode = SpeculationMode::off;
  o.is_end_of_generation = [](int32_t t) { return t == kEndOfGeneration; };
  return o;
}

// A planner over a pool of `blocks` KV blocks, and the steps it plans.
class Harness {
 public:
  // A hybrid model's pool has recurrent-state slots and perhaps checkpoint slots.
  Harness(uint32_t blocks, PlannerOptions o, uint32_t state_slots = 0, uint32_t checkpoints = 0)
      : pool(blocks, state_slots, checkpoints), planner(pool, std::move(o)) {}

  Sequence* submit(Tokens prompt, SequenceOptions so = {}) {
    auto seq = std::make_unique<Sequence>(SequenceRequest{std::move(prompt), so, nullptr, {}});
    seq->id = next_id_++;
    Sequence* raw = seq.get();
    planner.enqueue(std::move(seq));
    return raw;
  }

  // Plans a step, runs its rows as the runner would (computed tokens committed; choose(s) the
  // token of every row that wants logits) and applies the result.
  void step(const std::function<int32_t(const Sequence&)>& choose) {
    planner.plan(plan, SchedulerClock::now());
    output.chosen.assign(plan.rows.size(), Verified{});
    output.logprobs.assign(plan.rows.size(), std::nullopt);
    for (size_t i = 0; i < plan.rows.size(); ++i) {
      Sequence& s = *plan.rows[i].seq;
      kv::BlockTable& t = *s.table;
      if (t.pending_restore()) t.restored();  // the runner copies the checkpoint in
      if (t.state_slot()) {
        EXPECT_TRUE(t.state_current()) << "a state without its tokens";
      }
      t.commit(std::span<const int32_t>(s.tokens).subspan(s.computed, plan.rows[i].n));
      if (plan.rows[i].checkpoint != kv::Checkpoint::none) {
        if (auto slot = t.begin_checkpoint())
          t.end_checkpoint(*slot, plan.rows[i].checkpoint == kv::Checkpoint::rolling);
      }
      if (plan.rows[i].wants_logits) output.chosen[i] = Verified{{choose(s)}, 0};
    }
    planner.apply(plan, output, SchedulerClock::now(), applied);
  }
  void step(int32_t token = 100) {
    step([token](const Sequence&) { return token; });
  }

  // The tokens the plan gives `s` (0: no row).
  uint32_t rows_of(const Sequence* s) const {
    for (const auto& r : plan.rows) {
      if (r.seq == s) return r.n;
    }
    return 0;
  }
  bool finished_in_plan(const Sequence* s, FinishReason reason) const {
    return std::any_of(plan.finished.begin(), plan.finished.end(),
                       [&](const auto& f) { return f.seq.get() == s && f.reason == reason; });
  }

  kv::BlockPool pool;
  StepPlanner planner;
  StepPlan plan;
  StepOutput output;
  AppliedStep applied;

 private:
  uint64_t next_id_ = 0;
};

TEST(StepPlanner, AdmitsWhileFreeBlocksLastAndRefusesWhatCannotFitAlone) {
  Harness h(/*blocks=*/8, options(64));         // 32 tokens of KV
  Sequence* a = h.submit(tokens_from(10, 20));  // 5 blocks
  h.step();
  EXPECT_EQ(h.plan.admitted, std::vector<Sequence*>{a});
  EXPECT_EQ(h.rows_of(a), 20u);
  EXPECT_EQ(a->state, SequenceState::decoding);
  // 3 blocks left; 12 tokens need 3, plus a spare one for `a` to grow into.
  Sequence* b = h.submit(tokens_from(40, 12));
  h.step();
  EXPECT_TRUE(h.plan.admitted.empty());
  EXPECT_EQ(b->state, SequenceState::waiting);
  EXPECT_FALSE(b->table.has_value());  // a waiting sequence holds no blocks
  EXPECT_EQ(h.planner.waiting(), 1u);

  // `a` leaves: `b` fits now.
  a->cancelled->store(true);
  h.step();
  EXPECT_TRUE(h.finished_in_plan(a, FinishReason::cancelled));
  EXPECT_EQ(h.plan.admitted, std::vector<Sequence*>{b});
  EXPECT_EQ(h.rows_of(b), 12u);
  EXPECT_EQ(b->state, SequenceState::decoding);

  // More than the whole cache, with nothing else holding blocks: refused with the reason.
  b->cancelled->store(true);
  Sequence* huge = h.submit(tokens_from(100, 40));
  h.planner.plan(h.plan, SchedulerClock::now());
  ASSERT_TRUE(h.finished_in_plan(huge, FinishReason::error));
  const auto& refused = h.plan.finished.back();
  EXPECT_NE(refused.error.find("use a smaller num_ctx"), std::string::npos) << refused.error;
  EXPECT_TRUE(h.plan.rows.empty());
  EXPECT_TRUE(h.planner.idle());
  EXPECT_EQ(h.pool.available(), 8u);  // every block back
}

TEST(StepPlanner, PrefixCacheHitsCountAsFreeBlocks) {
  Harness h(/*blocks=*/9, options(64));
  const Tokens shared = tokens_from(10, 24);  // 6 full blocks
  Sequence* a = h.submit(shared);
  h.step();  // `a` computes its prompt (its 6 full blocks join the prefix cache) and decodes
  ASSERT_EQ(a->state, SequenceState::decoding);
  ASSERT_EQ(h.pool.available(), 3u);

  // A different 28-token prompt needs 7 blocks (+1 spare for `a`): it waits (and `a` takes
  // one more block, 2 are left).
  Sequence* other = h.submit(tokens_from(500, 28));
  h.step();
  EXPECT_TRUE(h.plan.admitted.empty());
  EXPECT_EQ(other->state, SequenceState::waiting);
  // Its lookup counts once it is admitted (a waiting sequence looks again each step).
  EXPECT_EQ(h.plan.prefix_lookups, 0u);
  EXPECT_EQ(h.plan.prefix_hit_tokens, 0u);

  // The same 24 tokens and 4 more: the 6 cached blocks are free to it, 1 block + 1 spare fit.
  other->cancelled->store(true);
  Tokens longer = shared;
  for (int32_t t : {900, 901, 902, 903}) longer.push_back(t);
  Sequence* hit = h.submit(longer);
  h.step();
  EXPECT_TRUE(h.finished_in_plan(other, FinishReason::cancelled));
  EXPECT_EQ(h.plan.admitted, std::vector<Sequence*>{hit});
  EXPECT_EQ(hit->cached_tokens, 24u);
  EXPECT_EQ(h.plan.prefix_hit_tokens, 24u);
  EXPECT_EQ(h.rows_of(hit), 4u);  // only the uncached tokens are computed
}

// Requests that share a prefix and arrive together: the first computes the shared blocks, the
// others wait for them (those behind them in the queue go on) and then compute only their own
// tokens, each prefix lookup counted once.
TEST(StepPlanner, RequestsSharingAPrefixWaitForTheOneComputingIt) {
  Harness h(/*blocks=*/64, options(/*step_tokens=*/16));
  const Tokens prefix = tokens_from(10, 40);  // 10 blocks
  auto with = [&](size_t n, Tokens tail) {
    Tokens t(prefix.begin(), prefix.begin() + static_cast<std::ptrdiff_t>(n));
    t.insert(t.end(), tail.begin(), tail.end());
    return t;
  };
  Sequence* a = h.submit(with(40, tokens_from(200, 5)));
  Sequence* b = h.submit(with(40, tokens_from(300, 6)));
  Sequence* c = h.submit(tokens_from(500, 8));            // shares nothing
  Sequence* d = h.submit(with(20, tokens_from(400, 3)));  // the first 5 blocks
  std::map<const Sequence*, uint32_t> computed;
  uint32_t lookups = 0;
  for (int i = 0; i < 12; ++i) {
    h.step();
    for (const auto& r : h.plan.rows)
      if (r.seq->state != SequenceState::decoding || r.n > 1) computed[r.seq] += r.n;
    lookups += h.plan.prefix_lookups;
    if (i == 0) {
      EXPECT_EQ(h.plan.admitted, (std::vector<Sequence*>{a, c}));
      EXPECT_EQ(b->state, SequenceState::waiting);
      EXPECT_FALSE(b->table.has_value());
    }
  }
  for (Sequence* s : {a, b, c, d}) EXPECT_EQ(s->state, SequenceState::decoding);
  EXPECT_EQ(computed[a], 45u);
  EXPECT_EQ(computed[c], 8u);
  EXPECT_EQ(b->cached_tokens, 40u);
  EXPECT_EQ(computed[b], 6u);
  EXPECT_EQ(d->cached_tokens, 20u);
  EXPECT_EQ(computed[d], 3u);
  EXPECT_EQ(lookups, 4u);
}

TEST(StepPlanner, ChunksPrefillsWithinTheStepBudgetAfterDecodeRows) {
  Harness h(/*blocks=*/64, options(/*step_tokens=*/8));
  Sequence* d = h.submit(tokens_from(10, 3));
  h.step();
  ASSERT_EQ(d->state, SequenceState::decoding);

  Sequence* p = h.submit(tokens_from(100, 20));
  std::vector<uint32_t> chunks;
  for (int i = 0; i < 3; ++i) {
    h.step();
    ASSERT_EQ(h.plan.rows.front().seq, d);  // the decode row comes first, every step
    EXPECT_EQ(h.rows_of(d), 1u);
    chunks.push_back(h.rows_of(p));
    const bool last = i == 2;
    EXPECT_EQ(h.plan.rows.back().wants_logits, last);  // logits only after the prompt's end
    EXPECT_EQ(p->state, last ? SequenceState::decoding : SequenceState::prefilling);
  }
  // 8 tokens a step: 1 for the decoding sequence, the rest for the prompt.
  EXPECT_EQ(chunks, (std::vector<uint32_t>{7, 7, 6}));
  h.step();
  EXPECT_EQ(h.rows_of(p), 1u);
}

TEST(StepPlanner, PreemptsTheYoungestFirstAndRequeuesItAtTheFront) {
  // Three sequences grow by a token a step in 6 blocks of 4: the cache runs out twice.
  Harness h(/*blocks=*/6, options(64));
  Sequence* a = h.submit(tokens_from(10, 3));
  Sequence* b = h.submit(tokens_from(20, 3));
  Sequence* c = h.submit(tokens_from(30, 3));
  h.step();
  ASSERT_EQ(h.planner.running(), 3u);

  std::vector<Sequence*> preempted;
  for (int i = 0; i < 16 && preempted.size() < 2; ++i) {
    h.step();
    for (Sequence* s : h.plan.preempted) {
      preempted.push_back(s);
      // Its blocks are back and its tokens kept; it computes them again when readmitted.
      EXPECT_EQ(s->state, SequenceState::preempted);
      EXPECT_FALSE(s->table.has_value());
      EXPECT_EQ(s->computed, 0u);
      EXPECT_GT(s->tokens.size(), 3u);
      EXPECT_EQ(h.rows_of(s), 0u);
    }
    EXPECT_GT(h.rows_of(a), 0u);  // the oldest keeps running
  }
  ASSERT_EQ(preempted, (std::vector<Sequence*>{c, b}));
  // Both wait ahead of anything submitted later, the older first.
  Sequence* later = h.submit(tokens_from(40, 3));
  const auto& waiting = h.planner.waiting_queue();
  ASSERT_EQ(waiting.size(), 3u);
  EXPECT_EQ(waiting[0].get(), b);
  EXPECT_EQ(waiting[1].get(), c);
  EXPECT_EQ(waiting[2].get(), later);

  // When the oldest leaves, the older preempted one resumes first.
  a->cancelled->store(true);
  h.step();
  ASSERT_FALSE(h.plan.admitted.empty());
  EXPECT_EQ(h.plan.admitted.front(), b);
  EXPECT_EQ(h.plan.prefix_hit_tokens, 0u);  // counted at first admission only
}

TEST(StepPlanner, ALoneSequenceThatOutgrowsTheCacheFailsWithAnError) {
  Harness h(/*blocks=*/2, options(64));
  Sequence* s = h.submit(tokens_from(10, 7));
  int steps = 0;
  while (h.planner.running() + h.planner.waiting() > 0 && steps++ < 8) h.step();
  ASSERT_EQ(h.plan.finished.size(), 1u);
  EXPECT_EQ(h.plan.finished[0].seq.get(), s);
  EXPECT_EQ(h.plan.finished[0].reason, FinishReason::error);
  EXPECT_EQ(h.plan.finished[0].error, "the KV cache is too small for this sequence");
  EXPECT_TRUE(h.plan.rows.empty());
  EXPECT_EQ(h.pool.available(), 2u);
}

TEST(StepPlanner, CancelledSequencesLeaveBeforeTheStepAndFreeTheirBlocks) {
  Harness h(/*blocks=*/16, options(64));
  Sequence* running = h.submit(tokens_from(10, 9));
  h.step();
  ASSERT_EQ(running->state, SequenceState::decoding);
  Sequence* queued = h.submit(tokens_from(50, 5));
  queued->cancelled->store(true);  // before it was ever admitted
  running->cancelled->store(true);
  h.step();
  EXPECT_TRUE(h.finished_in_plan(queued, FinishReason::cancelled));
  EXPECT_TRUE(h.finished_in_plan(running, FinishReason::cancelled));
  EXPECT_EQ(queued->state, SequenceState::finished);
  EXPECT_EQ(running->state, SequenceState::finished);
  EXPECT_TRUE(h.plan.rows.empty());
  EXPECT_TRUE(h.planner.idle());
  EXPECT_EQ(h.pool.stats().used, 0u);  // its full blocks stay cached, none is held
}

TEST(StepPlanner, AShortPromptBehindALongPrefillRunsOnceTheBudgetAllows) {
  // 16 tokens a step. A long prompt is in its prefill when a short one arrives; a decoding
  // sequence is there throughout.
  Harness h(/*blocks=*/64, options(16));
  Sequence* chat = h.submit(tokens_from(10, 2));
  h.step();
  ASSERT_EQ(chat->state, SequenceState::decoding);
  Sequence* lng = h.submit(tokens_from(100, 40));
  h.step();
  EXPECT_EQ(h.rows_of(lng), 15u);
  Sequence* shrt = h.submit(tokens_from(200, 5));

  // Admitted at once; the long prompt's remaining 25 tokens take the next step's budget, the
  // short prompt computes in the step after, beside the long prompt's last chunk.
  h.step();
  EXPECT_EQ(h.plan.admitted, std::vector<Sequence*>{shrt});
  EXPECT_EQ(h.rows_of(lng), 15u);
  EXPECT_EQ(h.rows_of(shrt), 0u);
  h.step();
  EXPECT_EQ(h.rows_of(lng), 10u);
  EXPECT_EQ(h.rows_of(shrt), 5u);
  EXPECT_EQ(shrt->state, SequenceState::decoding);
  EXPECT_EQ(lng->state, SequenceState::decoding);
  // From then on every sequence decodes every step.
  h.step();
  EXPECT_EQ(h.plan.rows.size(), 3u);
  for (const auto& r : h.plan.rows) EXPECT_EQ(r.n, 1u);
  EXPECT_EQ(h.applied.updates.size(), 3u);
}

TEST(StepPlanner, DecodingRowsNeverWaitForALongPrefill) {
  Harness h(/*blocks=*/128, options(8));
  Sequence* chat = h.submit(tokens_from(10, 2));
  h.step();
  Sequence* lng = h.submit(tokens_from(100, 100));
  for (int i = 0; i < 10; ++i) {
    h.step();
    EXPECT_EQ(h.rows_of(chat), 1u) << "step " << i;
    EXPECT_EQ(h.rows_of(lng), 7u) << "step " << i;
  }
}

TEST(StepPlanner, ApplyAppendsTokensAndFinishesOnStopOrLength) {
  Harness h(/*blocks=*/32, options(64));
  SequenceOptions three;
  three.num_predict = 3;
  Sequence* limited = h.submit(tokens_from(10, 4), three);
  Sequence* stopped = h.submit(tokens_from(20, 4));
  h.step(/*token=*/7);
  ASSERT_EQ(h.applied.updates.size(), 2u);
  const SequenceUpdate& first = h.applied.updates[0];
  EXPECT_EQ(first.seq, limited);
  EXPECT_TRUE(first.first_token);
  EXPECT_EQ(first.event.tokens, Tokens{7});
  EXPECT_EQ(first.event.prompt_tokens, 4u);
  EXPECT_EQ(first.event.finish, FinishReason::none);  // a finish is an event of its own
  EXPECT_EQ(limited->tokens.back(), 7);
  EXPECT_EQ(limited->generated, 1u);
  h.step(/*token=*/8);
  EXPECT_FALSE(h.applied.updates[0].first_token);
  EXPECT_EQ(h.applied.generated, 2u);

  // `limited` reaches num_predict; the end-of-generation token finishes `stopped` without
  // joining its tokens.
  h.step([&](const Sequence& s) { return &s == stopped ? kEndOfGeneration : 9; });
  ASSERT_EQ(h.applied.finished.size(), 2u);
  EXPECT_EQ(h.applied.finished[0].seq.get(), limited);
  EXPECT_EQ(h.applied.finished[0].reason, FinishReason::length);
  EXPECT_EQ(limited->tokens, (Tokens{10, 11, 12, 13, 7, 8, 9}));
  EXPECT_EQ(h.applied.finished[1].seq.get(), stopped);
  EXPECT_EQ(h.applied.finished[1].reason, FinishReason::stop);
  EXPECT_EQ(stopped->tokens, (Tokens{20, 21, 22, 23, 7, 8}));
  EXPECT_TRUE(h.applied.updates[1].event.tokens.empty());
  EXPECT_EQ(stopped->state, SequenceState::finished);
  EXPECT_TRUE(h.planner.idle());
  EXPECT_EQ(h.pool.stats().used, 0u);
}

TEST(StepPlanner, AFullContextShiftsOrFinishesWithLength) {
  Harness h(/*blocks=*/32, options(64));
  SequenceOptions shift;
  shift.num_ctx = 8;
  shift.num_keep = 2;
  SequenceOptions no_shift = shift;
  no_shift.shift = false;
  Sequence* shifting = h.submit(tokens_from(10, 6), shift);
  Sequence* fixed = h.submit(tokens_from(30, 6), no_shift);
  h.step(50);  // 7 tokens each
  h.step(51);  // 8: full
  ASSERT_TRUE(h.applied.finished.empty());
  h.step(52);  // 9 > num_ctx
  ASSERT_EQ(h.applied.finished.size(), 1u);
  EXPECT_EQ(h.applied.finished[0].seq.get(), fixed);
  EXPECT_EQ(h.applied.finished[0].reason, FinishReason::length);
  // Ollama's shift: the first num_keep tokens stay, half of the rest goes, the rest is
  // recomputed (prefilling again).
  EXPECT_EQ(shifting->tokens, (Tokens{10, 11, 15, 50, 51, 52}));
  EXPECT_EQ(shifting->state, SequenceState::prefilling);
  h.step(53);
  EXPECT_EQ(shifting->tokens.back(), 53);
  EXPECT_EQ(shifting->state, SequenceState::decoding);
}

TEST(StepPlanner, DraftModelIsAskedOnceAStepAndItsUnusedTokensGoToPrefill) {
  // Speculation mode draft: the draft model's proposals for every speculating sequence in one
  // call; a request holds its tokens of the step budget until the answer gives back what it
  // did not draft.
  PlannerOptions o = options(8);
  o.speculation.mode = SpeculationMode::draft;
  std::vector<std::vector<DraftRequest>> calls;
  std::vector<Tokens> contexts;
  o.propose_drafts = [&](std::span<const DraftRequest> requests) {
    calls.emplace_back(requests.begin(), requests.end());
    for (const auto& r : requests) contexts.emplace_back(r.context.begin(), r.context.end());
    return std::vector<Tokens>(requests.size(), Tokens{7});  // one token each, whatever asked
  };
  Harness h(/*blocks=*/64, std::move(o));
  SequenceOptions three, none;
  three.draft_num_predict = 3;
  none.draft_num_predict = 0;  // Ollama's option: no draft for this one
  Sequence* drafting = h.submit(tokens_from(10, 4), three);
  Sequence* plain = h.submit(tokens_from(20, 4), none);
  h.step();  // both prompts (8 tokens): nothing to draft before the first token
  EXPECT_TRUE(calls.empty());
  Sequence* lng = h.submit(tokens_from(100, 20));

  h.planner.plan(h.plan, SchedulerClock::now());
  ASSERT_EQ(calls.size(), 1u);
  ASSERT_EQ(calls[0].size(), 1u);
  EXPECT_EQ(calls[0][0].sequence, drafting->id);
  EXPECT_EQ(calls[0][0].max_tokens, 3u);  // draft_num_predict, within the gate and the budget
  EXPECT_EQ(contexts[0], drafting->tokens);
  // The drafting row verifies [pending token, draft]; 2 of the 3 held tokens come back to the
  // long prompt's chunk: 8 - 2 decode rows - 1 drafted token = 5.
  const auto row = std::find_if(h.plan.rows.begin(), h.plan.rows.end(),
                                [&](const PlannedRow& r) { return r.seq == drafting; });
  ASSERT_NE(row, h.plan.rows.end());
  EXPECT_EQ(row->draft, Tokens{7});
  EXPECT_EQ(row->input, (Tokens{100, 7}));
  EXPECT_EQ(row->n, 2u);
  EXPECT_TRUE(row->wants_logits);
  EXPECT_EQ(h.rows_of(plain), 1u);
  EXPECT_EQ(h.rows_of(lng), 5u);
}

TEST(StepPlanner, AModelWithRecurrentStateAndNoCheckpointsReusesNoPrefixAndDraftsNothing) {
  PlannerOptions o = options(64);
  o.recurrent_state = true;
  o.speculation.mode = SpeculationMode::ngram;
  Harness h(/*blocks=*/64, std::move(o), /*state_slots=*/8);
  const Tokens shared = tokens_from(10, 24);  // 6 full blocks, cached once computed
  Sequence* a = h.submit(shared);
  h.step();
  // The same prompt again: its blocks are in the prefix cache, but not the recurrent state.
  Sequence* again = h.submit(shared);
  h.step();
  EXPECT_EQ(again->cached_tokens, 0u);
  EXPECT_EQ(h.plan.prefix_hit_tokens, 0u);
  EXPECT_EQ(h.rows_of(again), 24u);
  // A repeating continuation that prompt lookup would draft for: decode rows only.
  for (int i = 0; i < 6; ++i) {
    h.step([](const Sequence& s) { return s.tokens[s.tokens.size() - 24]; });
    for (const auto& r : h.plan.rows) EXPECT_TRUE(r.draft.empty());
  }
  EXPECT_EQ(h.rows_of(a), 1u);
}

// State checkpoints: prefill chunks end at every second block and at the prompt's last block
// boundary (each keeps a checkpoint, only the last chunk wants logits), decoding keeps a rolling
// checkpoint at every block it fills; the same prompt resumes after its last full block, a chat's
// next turn after the first turn's answer, and the state always covers the committed tokens.
TEST(StepPlanner, AHybridResumesFromTheDeepestCheckpointOfItsPromptOrTheLastAnswer) {
  PlannerOptions o = options(64);
  o.recurrent_state = true;
  o.state_checkpoints = true;
  o.checkpoint_every_blocks = 2;  // 8 tokens
  Harness h(/*blocks=*/64, std::move(o), /*state_slots=*/8, /*checkpoints=*/16);
  const Tokens prompt = tokens_from(10, 22);
  SequenceOptions so;
  so.num_predict = 9;
  Sequence* a = h.submit(prompt, so);
  std::vector<uint32_t> chunks;
  std::vector<kv::Checkpoint> kinds;
  while (!a->started) {
    h.step();
    chunks.push_back(h.rows_of(a));
    kinds.push_back(h.plan.rows.at(0).checkpoint);
    EXPECT_EQ(h.plan.rows[0].wants_logits, a->started);
  }
  EXPECT_EQ(chunks, (std::vector<uint32_t>{8, 8, 4, 2}));
  EXPECT_EQ(kinds, (std::vector<kv::Checkpoint>{kv::Checkpoint::keep, kv::Checkpoint::keep,
                                                kv::Checkpoint::keep, kv::Checkpoint::none}));
  // Decoding: the tokens at positions 22.. fill block 5 (ends at 24) and block 6 (ends at 28).
  while (h.planner.running() > 0) h.step();
  EXPECT_EQ(a->generated, 9u);        // 30 tokens computed, the last chosen one not
  const Tokens answered = a->tokens;  // a is gone after the next step
  const kv::StateCheckpointStats st = h.pool.checkpoints().stats();
  EXPECT_EQ(st.taken, 5u);     // after 8, 16, 20, 24, 28
  EXPECT_EQ(st.replaced, 1u);  // 24, by the rolling one at 28
  EXPECT_EQ(st.held, 4u);

  // The same prompt: its 5 reusable blocks all have checkpoints.
  Sequence* again = h.submit(prompt, so);
  h.step();
  EXPECT_EQ(again->cached_tokens, 20u);
  EXPECT_EQ(h.rows_of(again), 2u);
  EXPECT_TRUE(again->started);
  again->cancelled->store(true);

  // The next turn of a's chat (its answer, then new tokens) resumes after the answer's last
  // full block.
  Tokens turn2(prompt);
  turn2.insert(turn2.end(), answered.begin() + 22, answered.end());
  const Tokens more = tokens_from(500, 6);
  turn2.insert(turn2.end(), more.begin(), more.end());
  Sequence* next = h.submit(turn2, so);
  h.step();
  EXPECT_EQ(next->cached_tokens, 28u);
  EXPECT_EQ(h.rows_of(next), 4u) << "to the next interval's boundary (32), keeping one there";
  EXPECT_EQ(h.plan.rows.back().checkpoint, kv::Checkpoint::keep);
}

}  // namespace
}  // namespace vkllm::sched

namespace vkllm::sched {
namespace {

// 5 text tokens, an image of 6 rows (ids from its hash, as the server gives them), 4 more.
SequenceRequest image_prompt(const std::string& hash) {
  SequenceRequest r;
  r.prompt = tokens_from(10, 5);
  SequenceImage img;
  img.offset = 5;
  img.n_tokens = 6;
  img.hash = hash;
  for (uint32_t i = 0; i < img.n_tokens; ++i) r.prompt.push_back(image_token_id(hash, i));
  for (int32_t t : {20, 21, 22, 23}) r.prompt.push_back(t);
  r.images.push_back(std::move(img));
  return r;
}

TEST(StepPlanner, AnImageIsNeverSplitAndEndsItsChunkAndItsContentKeysThePrefixCache) {
  Harness h(/*blocks=*/64, options(/*step_tokens=*/8));
  auto submit = [&h](const std::string& hash) {
    auto seq = std::make_unique<Sequence>(image_prompt(hash));
    Sequence* raw = seq.get();
    h.planner.enqueue(std::move(seq));
    return raw;
  };
  Sequence* a = submit("sha256:aaaa");
  std::vector<uint32_t> chunks;
  for (int i = 0; i < 3; ++i) {
    h.step();
    chunks.push_back(h.rows_of(a));
  }
  // 8 tokens would cut the image (tokens 5..10): the text before goes alone, then the image
  // ends its chunk (its tokens see each other both ways), then the text after.
  EXPECT_EQ(chunks, (std::vector<uint32_t>{5, 6, 4}));
  ASSERT_EQ(a->state, SequenceState::decoding);

  // The same picture again: its blocks come from the prefix cache (3 full blocks of 4, the
  // image's included), only the rest is computed.
  Sequence* same = submit("sha256:aaaa");
  h.step();
  EXPECT_EQ(same->cached_tokens, 12u);
  EXPECT_EQ(h.rows_of(same), 3u);
  // Another picture at the same place shares only the block before it.
  Sequence* other = submit("sha256:bbbb");
  h.step();
  EXPECT_EQ(other->cached_tokens, 4u);
  EXPECT_EQ(h.rows_of(other), 1u);  // the text before the image: the image does not fit 8 - 2
}

// Mistral 3's images are causal: one larger than a step goes in step-sized pieces (llama.cpp's
// mtmd splits it by n_batch); one that fits a step is still not split.
TEST(StepPlanner, ACausalImageLargerThanAStepGoesInPieces) {
  Harness h(/*blocks=*/64, options(/*step_tokens=*/4));
  SequenceRequest r = image_prompt("sha256:cccc");
  r.images[0].open = false;
  auto seq = std::make_unique<Sequence>(std::move(r));
  Sequence* a = seq.get();
  h.planner.enqueue(std::move(seq));
  std::vector<uint32_t> chunks;
  while (a->state != SequenceState::decoding && chunks.size() < 8) {
    h.step();
    chunks.push_back(h.rows_of(a));
  }
  // 4 text tokens, the fifth and 3 image rows, 3 rows, then the text after.
  EXPECT_EQ(chunks, (std::vector<uint32_t>{4, 4, 4, 3}));

  Harness fits(/*blocks=*/64, options(/*step_tokens=*/8));
  SequenceRequest small = image_prompt("sha256:dddd");
  small.images[0].open = false;
  auto s2 = std::make_unique<Sequence>(std::move(small));
  Sequence* b = s2.get();
  fits.planner.enqueue(std::move(s2));
  fits.step();
  EXPECT_EQ(fits.rows_of(b), 5u) << "an image that fits a step is not split";
}

}  // namespace
}  // namespace vkllm::sched
