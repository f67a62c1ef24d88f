#include "server/scheduler/draft_model.h"

#include "server/scheduler/draft_cache.h"

#include <algorithm>
#include <optional>

namespace vkllm::sched {

DraftModel::DraftModel(runtime::Runner& runner) : runner_(runner) {}

DraftModel::State& DraftModel::state_for(uint64_t sequence, std::span<const int32_t> context) {
  auto& state = states_[sequence];
  const auto held = state ? state->table.tokens() : std::span<const int32_t>{};
  // The draft KV must hold a proper prefix of the context: the draft needs at least the last
  // token to compute. Otherwise (new sequence, a context shift, or a proposal repeated for the
  // same context after a preemption) it starts over from the draft's prefix cache.
  const bool prefix = !held.empty() && held.size() < context.size() &&
                      std::equal(held.begin(), held.end(), context.begin());
  if (!prefix) {
    state = std::make_unique<State>(runner_.pool(), runner_.block_size());
    state->table.reuse_prefix(context);
  }
  return *state;
}

std::vector<std::vector<int32_t>> DraftModel::propose(std::span<const DraftRequest> requests) {
  ++clock_;
  std::vector<std::vector<int32_t>> drafts(requests.size());
  struct Work {
    size_t request;
    State* state;
    uint32_t next;  // the first context token the draft has not computed yet
  };
  std::vector<Work> work;
  const uint32_t max_context = runner_.options().max_context;
  for (size_t i = 0; i < requests.size(); ++i) {
    const DraftRequest& r = requests[i];
    const auto length = r.context.size();
    // The context and every drafted token but the last pass through the draft.
    if (r.max_tokens == 0 || length == 0 || length + r.max_tokens - 1 > max_context) continue;
    State& state = state_for(r.sequence, r.context);
    state.last_used = clock_;
    const uint32_t done = state.table.num_tokens();
    if (!reserve_evicting_idle(states_, state,
                               static_cast<uint32_t>(length) - done + r.max_tokens - 1, clock_)) {
      states_.erase(r.sequence);
      continue;
    }
    work.push_back({i, &state, done});
  }
  if (work.empty()) return drafts;

  const runtime::RunnerOptions& ro = runner_.options();
  std::vector<runtime::SequenceStep> batch;
  std::vector<size_t> members;  // work index of each batch entry
  // Catch up on the committed tokens (chunked within the draft's step limits); the chunk that
  // reaches the context's end yields the first drafted token.
  for (;;) {
    batch.clear();
    members.clear();
    uint32_t budget = ro.max_batch_tokens;
    for (size_t w = 0; w < work.size() && budget > 0 && batch.size() < ro.max_seqs; ++w) {
      const auto context = requests[work[w].request].context;
      if (work[w].next >= context.size()) continue;
      const uint32_t n = std::min<uint32_t>(budget, uint32_t(context.size()) - work[w].next);
      const bool last = work[w].next + n == context.size();
      batch.push_back({&work[w].state->table, context.subspan(work[w].next, n),
                       last ? runtime::LogitsWanted::Last : runtime::LogitsWanted::None});
      members.push_back(w);
      budget -= n;
    }
    if (batch.empty()) break;
    const runtime::StepResult result = runner_.step(batch, /*greedy_only=*/true);
    for (size_t b = 0; b < batch.size(); ++b) {
      Work& w = work[members[b]];
      w.next += static_cast<uint32_t>(batch[b].tokens.size());
      if (batch[b].logits == runtime::LogitsWanted::Last) {
        drafts[w.request].push_back(result.greedy[b]);
      }
    }
  }
  // Each further token: the drafted ones so far in provisional rows after the committed context
  // (a provisional row always starts at the committed end, hence all of them each time), and
  // the argmax after the last. A draft with recurrent layers advances its state with every
  // row: a copy of the state after the context goes back before each further step, and at the
  // end (a sequence without a copy drafts one token).
  const bool recurrent = runner_.spec().has_recurrent_state();
  std::vector<std::optional<uint32_t>> saved;
  if (recurrent) {
    std::vector<const kv::BlockTable*> all;
    for (const Work& w : work) all.push_back(&w.state->table);
    saved = runner_.save_states(all);
  }
  std::vector<const kv::BlockTable*> tables;
  std::vector<uint32_t> slots;
  // The works whose state a provisional step has moved on (past their first drafted token).
  auto moved_on = [&] {
    tables.clear();
    slots.clear();
    for (size_t w = 0; w < work.size(); ++w) {
      if (!recurrent || !saved[w] || drafts[work[w].request].size() < 2) continue;
      tables.push_back(&work[w].state->table);
      slots.push_back(*saved[w]);
    }
  };
  for (;;) {
    batch.clear();
    members.clear();
    uint32_t budget = ro.max_batch_tokens;
    for (size_t w = 0; w < work.size() && batch.size() < ro.max_seqs; ++w) {
      const auto& draft = drafts[work[w].request];
      if (draft.empty() || draft.size() >= requests[work[w].request].max_tokens) continue;
      if (recurrent && !saved[w]) continue;
      if (draft.size() > budget) break;
      batch.push_back(
          {&work[w].state->table, draft, runtime::LogitsWanted::Last, /*provisional=*/true});
      members.push_back(w);
      budget -= static_cast<uint32_t>(draft.size());
    }
    if (batch.empty()) break;
    moved_on();
    runner_.load_saved_states(tables, slots);
    const runtime::StepResult result = runner_.step(batch, /*greedy_only=*/true);
    for (size_t b = 0; b < batch.size(); ++b) {
      drafts[work[members[b]].request].push_back(result.greedy[b]);
    }
  }
  moved_on();
  runner_.load_saved_states(tables, slots);
  slots.clear();
  for (const auto& slot : saved)
    if (slot) slots.push_back(*slot);
  runner_.release_saved_states(slots);
  for (const Work& w : work) w.state->table.trim_reserved();
  return drafts;
}

void DraftModel::forget(uint64_t sequence) {
  states_.erase(sequence);
}

}  // namespace vkllm::sched
