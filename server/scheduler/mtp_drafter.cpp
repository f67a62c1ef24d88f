#include "server/scheduler/mtp_drafter.h"

#include <algorithm>
#include <exception>
#include <iostream>

#include "server/scheduler/draft_cache.h"

namespace vkllm::sched {

MtpDrafter::MtpDrafter(runtime::Runner& head) : head_(head), n_embd_(head.spec().n_embd) {}

MtpDrafter::Feed MtpDrafter::feed_for(const StepObservation& o) {
  const uint64_t E = n_embd_;
  auto& state = states_[o.sequence];
  Feed f;
  const auto rows = o.hidden.first(uint64_t(o.tokens.size() - 1) * E);  // before tokens[1..]
  if (state && state->table.num_tokens() == o.first) {
    f.hidden = state->last_hidden;
  } else {
    // A new sequence, a prefix the model took from its cache, or a recompute: the block's own
    // prefix cache where it has the positions, zero hidden states for the rest.
    state = std::make_unique<State>(head_.pool(), head_.block_size());
    const auto before = o.context.first(o.first);
    const uint32_t have = state->table.reuse_prefix(before);
    f.tokens.assign(before.begin() + have, before.end());
    f.hidden.assign(uint64_t(o.first - have + 1) * E, 0.0f);
  }
  f.tokens.insert(f.tokens.end(), o.tokens.begin(), o.tokens.end());
  f.hidden.insert(f.hidden.end(), rows.begin(), rows.end());
  state->last_hidden.assign(o.hidden.end() - E, o.hidden.end());
  state->last_used = clock_;
  f.state = state.get();
  return f;
}

void MtpDrafter::run_feeds(std::vector<Feed>& feeds) {
  const runtime::RunnerOptions& ro = head_.options();
  std::vector<runtime::SequenceStep> batch;
  std::vector<size_t> members;
  for (;;) {
    batch.clear();
    members.clear();
    uint32_t budget = ro.max_batch_tokens;
    for (size_t i = 0; i < feeds.size() && budget > 0 && batch.size() < ro.max_seqs; ++i) {
      Feed& f = feeds[i];
      if (f.done >= f.tokens.size()) continue;
      const uint32_t n = std::min<uint32_t>(budget, uint32_t(f.tokens.size() - f.done));
      runtime::SequenceStep s{&f.state->table, std::span(f.tokens).subspan(f.done, n),
                              runtime::LogitsWanted::None};
      s.hidden_in = std::span(f.hidden).subspan(f.done * n_embd_, uint64_t(n) * n_embd_);
      batch.push_back(s);
      members.push_back(i);
      budget -= n;
    }
    if (batch.empty()) return;
    head_.step(batch, /*greedy_only=*/true);
    for (size_t b = 0; b < batch.size(); ++b) feeds[members[b]].done += batch[b].tokens.size();
  }
}

void MtpDrafter::observe(std::span<const StepObservation> seen) {
  ++clock_;
  std::vector<Feed> feeds;
  const uint32_t max_context = head_.options().max_context;
  for (const StepObservation& o : seen) {
    if (o.tokens.empty() || o.first + o.tokens.size() > max_context ||
        o.hidden.size() != o.tokens.size() * n_embd_ || o.context.size() < o.first) {
      states_.erase(o.sequence);
      continue;
    }
    Feed f = feed_for(o);
    if (!reserve_evicting_idle(states_, *f.state, static_cast<uint32_t>(f.tokens.size()), clock_)) {
      states_.erase(o.sequence);
      continue;
    }
    feeds.push_back(std::move(f));
  }
  try {
    run_feeds(feeds);
  } catch (const std::exception& e) {
    // Drafts are an optimisation: the block stops following, the model's output is unaffected.
    std::cerr << "vkllm: multi-token-prediction head failed (" << e.what()
              << "); its sequences draft no more\n";
    states_.clear();
  }
}

std::vector<std::vector<int32_t>> MtpDrafter::propose(std::span<const DraftRequest> requests) {
  ++clock_;
  std::vector<std::vector<int32_t>> drafts(requests.size());
  struct Work {
    size_t request;
    State* state;
    std::vector<int32_t> tokens;  // the pending token, then the drafts so far
    std::vector<float> hidden;    // the states before each
  };
  std::vector<Work> work;
  const runtime::RunnerOptions& ro = head_.options();
  for (size_t i = 0; i < requests.size(); ++i) {
    const DraftRequest& r = requests[i];
    const auto it = states_.find(r.sequence);
    // The block must hold every position before the pending (last) token.
    if (it == states_.end() || r.max_tokens == 0 ||
        it->second->table.num_tokens() + 1 != r.context.size() ||
        r.context.size() + r.max_tokens > ro.max_context)
      continue;
    State& state = *it->second;
    state.last_used = clock_;
    if (!reserve_evicting_idle(states_, state, r.max_tokens, clock_)) continue;
    work.push_back({i, &state, {r.context.back()}, state.last_hidden});
  }
  std::vector<runtime::SequenceStep> batch;
  std::vector<size_t> members;
  try {
    for (;;) {
      batch.clear();
      members.clear();
      uint32_t budget = ro.max_batch_tokens;
      for (size_t w = 0; w < work.size() && batch.size() < ro.max_seqs; ++w) {
        const Work& x = work[w];
        if (drafts[x.request].size() >= requests[x.request].max_tokens) continue;
        if (x.tokens.size() > budget) break;
        runtime::SequenceStep s{&x.state->table, x.tokens, runtime::LogitsWanted::Last,
                                /*provisional=*/true};
        s.hidden_in = x.hidden;
        batch.push_back(s);
        members.push_back(w);
        budget -= static_cast<uint32_t>(x.tokens.size());
      }
      if (batch.empty()) break;
      const runtime::StepResult result = head_.step_draft(batch);
      for (size_t b = 0; b < batch.size(); ++b) {
        Work& x = work[members[b]];
        drafts[x.request].push_back(result.greedy[b]);
        x.tokens.push_back(result.greedy[b]);
        x.hidden.insert(x.hidden.end(), result.hidden[b].begin(), result.hidden[b].end());
      }
    }
  } catch (const std::exception& e) {
    std::cerr << "vkllm: multi-token-prediction head failed (" << e.what() << ")\n";
    for (auto& d : drafts) d.clear();
  }
  for (const Work& w : work) w.state->table.trim_reserved();
  return drafts;
}

void MtpDrafter::forget(uint64_t sequence) {
  states_.erase(sequence);
}

}  // namespace vkllm::sched
