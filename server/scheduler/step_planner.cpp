#include "server/scheduler/step_planner.h"

#include "server/scheduler/context_shift.h"

#include <algorithm>
#include <span>
#include <utility>

namespace vkllm::sched {

namespace {

// Prefilling until the sequence's first token and while a recompute or prompt chunk is left;
// decoding while each step computes its one new token.
SequenceState running_state(const Sequence& s) {
  return s.started && s.pending() == 1 ? SequenceState::decoding : SequenceState::prefilling;
}

}  // namespace

void StepPlan::clear() {
  finished.clear();
  admitted.clear();
  rows.clear();
  preempted.clear();
  prefix_lookups = 0;
  prefix_hit_tokens = 0;
}

void AppliedStep::clear() {
  updates.clear();
  finished.clear();
  generated = 0;
  drafted = 0;
  accepted = 0;
}

StepPlanner::StepPlanner(kv::BlockPool& pool, PlannerOptions options)
    : pool_(pool), options_(std::move(options)) {}

void StepPlanner::enqueue(std::unique_ptr<Sequence> seq) {
  seq->state = SequenceState::waiting;
  waiting_.push_back(std::move(seq));
}

uint32_t StepPlanner::context_limit(const Sequence& s) const {
  return std::min(s.options.num_ctx, options_.max_context);
}

void StepPlanner::leave(std::unique_ptr<Sequence> seq, FinishReason reason, std::string error,
                        std::vector<FinishedSequence>& out) {
  seq->table.reset();  // blocks back to the pool (full ones stay cached for prefix reuse)
  seq->state = SequenceState::finished;
  out.push_back({std::move(seq), reason, std::move(error)});
}

std::vector<std::unique_ptr<Sequence>> StepPlanner::take_all() {
  std::vector<std::unique_ptr<Sequence>> all;
  all.reserve(waiting_.size() + running_.size());
  for (auto& s : waiting_) all.push_back(std::move(s));
  for (auto& s : running_) all.push_back(std::move(s));
  waiting_.clear();
  running_.clear();
  return all;
}

void StepPlanner::plan(StepPlan& plan, SchedulerClock::time_point now) {
  plan.clear();
  reap_cancelled(plan);  // first, so their blocks serve this step
  admit(plan, now);
  if (!running_.empty()) plan_rows(plan);
}

void StepPlanner::reap_cancelled(StepPlan& plan) {
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if ((*it)->cancelled->load()) {
      leave(std::move(*it), FinishReason::cancelled, {}, plan.finished);
      it = waiting_.erase(it);
    } else {
      ++it;
    }
  }
  std::erase_if(running_, [&](auto& s) {
    if (!s->cancelled->load()) return false;
    leave(std::move(s), FinishReason::cancelled, {}, plan.finished);
    return true;
  });
}

void StepPlanner::admit(StepPlan& plan, SchedulerClock::time_point now) {
  const uint32_t bs = options_.block_size;
  // In queue order; a sequence waiting for a shared prefix another one is computing stays in its
  // place while those behind it go on.
  for (size_t i = 0; i < waiting_.size() && running_.size() < options_.max_running;) {
    Sequence& s = *waiting_[i];
    if (!s.table) {
      s.table.emplace(pool_, bs);
      s.computed = s.table->reuse_prefix(s.tokens);
    }
    if (waits_for_shared_prefix(s)) {
      s.table.reset();
      s.computed = 0;
      ++i;
      continue;
    }
    // Blocks for the rest of the sequence, plus one spare block per running sequence so the
    // ones already decoding can grow for a while before anything is preempted.
    const uint32_t rest = s.pending();
    const uint32_t free_slots = s.table->capacity() - s.table->num_tokens();
    const uint32_t need = rest > free_slots ? (rest - free_slots + bs - 1) / bs : 0;
    const uint32_t spare = static_cast<uint32_t>(running_.size());
    if (pool_.available() < need + spare) {
      if (running_.empty()) {
        // Nothing else holds blocks: this sequence alone does not fit the cache.
        if (pool_.available() < need) {
          std::string error = "the sequence needs " + std::to_string(s.tokens.size()) +
                              " tokens of KV cache but the cache holds " +
                              std::to_string(uint64_t(pool_.num_blocks()) * bs) +
                              "; use a smaller num_ctx";
          leave(std::move(waiting_[i]), FinishReason::error, std::move(error), plan.finished);
          waiting_.erase(waiting_.begin() + static_cast<std::ptrdiff_t>(i));
          continue;
        }
      } else {
        s.table.reset();  // give its prefix references back while it waits
        s.computed = 0;
        break;
      }
    }
    if (s.first_admission) {
      // Counted once, as admitted (a sequence that waited looked the cache up again each time).
      s.cached_tokens = s.computed;
      ++plan.prefix_lookups;
      plan.prefix_hit_tokens += s.computed;
      s.admitted = now;
      s.first_admission = false;
    }
    s.state = running_state(s);
    plan.admitted.push_back(&s);
    running_.push_back(std::move(waiting_[i]));
    waiting_.erase(waiting_.begin() + static_cast<std::ptrdiff_t>(i));
  }
}

bool StepPlanner::waits_for_shared_prefix(const Sequence& s) const {
  const uint32_t bs = options_.block_size;
  // reuse_prefix leaves the prompt's last token to compute; the blocks it gave are whole.
  const size_t reusable = s.tokens.empty() ? 0 : s.tokens.size() - 1;
  const uint32_t have = s.computed / bs;
  if (reusable / bs <= have) return false;
  for (const auto& r : running_) {
    if (r->computed + 1 >= r->tokens.size()) continue;  // its prompt is computed (and cached)
    const size_t n = std::min(reusable, r->tokens.size());
    const size_t common = static_cast<size_t>(
        std::mismatch(s.tokens.begin(), s.tokens.begin() + static_cast<std::ptrdiff_t>(n),
                      r->tokens.begin())
            .first -
        s.tokens.begin());
    uint32_t blocks = static_cast<uint32_t>(common / bs);
    if (options_.state_checkpoints) {
      // A recurrent model resumes only where r leaves a state checkpoint: its prompt's last
      // block boundary, and every checkpoint_every_blocks blocks.
      const auto prompt_end = static_cast<uint32_t>(r->tokens.size() / bs);
      const uint32_t every = options_.checkpoint_every_blocks;
      if (blocks != prompt_end) blocks = every > 0 ? blocks / every * every : 0;
    }
    if (blocks > have && r->computed < blocks * bs) return true;
  }
  return false;
}

void StepPlanner::plan_rows(StepPlan& plan) {
  // Decoding sequences (one pending token, perhaps a draft after it) first, then prefill chunks
  // in admission order.
  uint32_t budget = options_.step_tokens;
  for (auto& s : running_) {
    if (s->pending() == 1 && budget > 0) {
      plan.rows.push_back({s.get(), 1, false, {}, {}, checkpoint_for_decode(*s)});
      --budget;
    }
  }
  add_drafts(plan, budget);
  for (auto& s : running_) {
    if (s->pending() > 1 && budget > 0) {
      kv::Checkpoint checkpoint = kv::Checkpoint::none;
      uint32_t n = cut_for_checkpoint(*s, std::min(s->pending(), budget), checkpoint);
      n = cut_for_images(*s, n);
      if (n == 0) continue;  // an image that does not fit what is left of the budget waits
      if (n < s->pending() && checkpoint != kv::Checkpoint::none &&
          (s->computed + n) % options_.block_size != 0)
        checkpoint = kv::Checkpoint::none;
      plan.rows.push_back({s.get(), n, false, {}, {}, checkpoint});
      budget -= n;
    }
  }
  // Blocks before the step: preempt the youngest sequences until every row fits.
  auto& rows = plan.rows;
  for (size_t i = 0; i < rows.size();) {
    Sequence& s = *rows[i].seq;
    if (s.table->reserve(rows[i].n)) {
      ++i;
      continue;
    }
    if (running_.size() == 1) {
      // Only this sequence holds blocks: it cannot fit the cache however long it waits.
      leave(std::move(running_.back()), FinishReason::error,
            "the KV cache is too small for this sequence", plan.finished);
      running_.clear();
      rows.clear();
      return;
    }
    const Sequence* victim = running_.back().get();
    auto vit = std::find_if(rows.begin(), rows.end(), [&](auto& r) { return r.seq == victim; });
    if (vit != rows.end()) {
      const size_t vi = static_cast<size_t>(vit - rows.begin());
      rows.erase(vit);
      if (vi < i) --i;
    }
    preempt_youngest(plan);
  }
  for (auto& r : rows) r.wants_logits = !r.draft.empty() || r.n == r.seq->pending();
}

kv::Checkpoint StepPlanner::checkpoint_for_decode(const Sequence& s) const {
  if (!options_.state_checkpoints || (s.computed + 1) % options_.block_size != 0)
    return kv::Checkpoint::none;
  // A prompt's last token (after a reused prefix) ends the prompt; a generated one is followed
  // by more.
  return s.started ? kv::Checkpoint::rolling : kv::Checkpoint::keep;
}

uint32_t StepPlanner::cut_for_checkpoint(const Sequence& s, uint32_t n,
                                         kv::Checkpoint& checkpoint) const {
  if (!options_.state_checkpoints) return n;
  const uint32_t bs = options_.block_size, from = s.computed;
  // The last block boundary of the sequence's tokens, and the next multiple of the interval.
  uint32_t at = static_cast<uint32_t>(s.tokens.size()) / bs * bs;
  if (options_.checkpoint_every_blocks > 0) {
    const uint32_t every = options_.checkpoint_every_blocks * bs;
    const uint32_t next = (from / every + 1) * every;
    if (at <= from || next < at) at = next;
  }
  if (at <= from || at > from + n) return n;
  checkpoint = kv::Checkpoint::keep;
  return at - from;
}

uint32_t StepPlanner::cut_for_images(const Sequence& s, uint32_t n) const {
  const uint32_t from = s.computed;
  for (const SequenceImage& img : s.images) {
    const uint32_t end = img.offset + img.n_tokens;
    if (end <= from) continue;          // computed (or its rest cached) already
    if (img.offset >= from + n) break;  // past the chunk
    // A causal image larger than a step (Pixtral's reach 2047 rows) goes in step-sized pieces,
    // as llama.cpp's mtmd decodes it in n_batch pieces: its rows attend as tokens do. Any other
    // image is never split.
    if (end > from + n && !img.open && img.n_tokens > options_.step_tokens) return n;
    if (end > from + n) return img.offset > from ? img.offset - from : 0;  // would be split
    if (img.open) return end - from;  // its two-way span ends the chunk
  }
  return n;
}

void StepPlanner::preempt_youngest(StepPlan& plan) {
  Sequence& s = *running_.back();
  s.table.reset();
  s.computed = 0;
  s.state = SequenceState::preempted;
  plan.preempted.push_back(&s);
  waiting_.push_front(std::move(running_.back()));
  running_.pop_back();
}

void StepPlanner::add_drafts(StepPlan& plan, uint32_t& budget) {
  const SpeculationOptions& spec = options_.speculation;
  const bool drafter = spec.mode == SpeculationMode::draft && options_.propose_drafts;
  // Under load the decode step is already batched: verifying drafts would only add work.
  if ((spec.mode != SpeculationMode::ngram && !drafter) || running_.size() >= spec.max_running)
    return;
  // Logits rows: every running sequence may need one; drafts take what is left (and on a
  // hybrid model what the runner can keep states for: PlannerOptions::draft_states).
  const uint32_t max_rows = options_.max_logits_rows;
  uint32_t rows =
      max_rows > running_.size() ? max_rows - static_cast<uint32_t>(running_.size()) : 0;
  if (options_.recurrent_state) rows = std::min(rows, options_.draft_states);
  auto verify = [](PlannedRow& p, std::vector<int32_t> draft) {
    p.draft = std::move(draft);
    if (p.draft.empty()) return;
    p.input.assign(1, p.seq->tokens.back());
    p.input.insert(p.input.end(), p.draft.begin(), p.draft.end());
    p.n = static_cast<uint32_t>(p.input.size());
  };
  draft_asks_.clear();  // for the draft model, all at once
  draft_rows_.clear();
  for (size_t r = 0; r < plan.rows.size(); ++r) {
    PlannedRow& p = plan.rows[r];
    Sequence& s = *p.seq;
    if (budget == 0 || rows == 0) break;
    if (!s.started || !s.may_speculate()) continue;  // the first token ends the prompt
    // Drafts read the tokens, and an image's are not the vocabulary's.
    if (!s.images.empty()) continue;
    const int32_t most = drafter ? std::min<int32_t>(s.options.draft_num_predict, spec.draft_max)
                                 : int32_t(spec.draft_max);
    if (most <= 0) continue;
    // Room in the context (no shift in the middle of a draft) and in num_predict (the token
    // after the draft counts too).
    const uint64_t ctx = context_limit(s);
    const int64_t room_predict = s.predict_limit() - s.generated - 1;
    if (s.tokens.size() >= ctx || room_predict <= 0) continue;
    const uint64_t cap = std::min<uint64_t>(
        {budget, rows, ctx - s.tokens.size(), static_cast<uint64_t>(room_predict)});
    const uint32_t k = std::min<uint32_t>(s.draft_gate.budget(uint32_t(most)), uint32_t(cap));
    if (k == 0) continue;
    if (drafter) {
      draft_asks_.push_back({s.id, s.tokens, k});
      draft_rows_.push_back(r);
    } else {
      verify(p, ngram_draft(s.tokens, k, spec.ngram_max, spec.ngram_min));
    }
    // A draft model's request holds its k tokens of the budget until it answers.
    const uint32_t taken = drafter ? k : static_cast<uint32_t>(p.draft.size());
    budget -= taken;
    rows -= taken;
  }
  if (draft_asks_.empty()) return;
  auto drafts = options_.propose_drafts(draft_asks_);
  for (size_t i = 0; i < draft_asks_.size(); ++i) {
    budget += draft_asks_[i].max_tokens - static_cast<uint32_t>(drafts[i].size());
    verify(plan.rows[draft_rows_[i]], std::move(drafts[i]));
  }
}

bool StepPlanner::fit_context(Sequence& s) {
  const uint32_t ctx = context_limit(s);
  if (s.tokens.size() <= ctx) return true;
  // An image's rows would have to move with its tokens: a sequence with images ends instead.
  if (!s.options.shift || !s.images.empty()) return false;
  // The kept start comes back from the prefix cache.
  shift_context(s.tokens, shift_keep(s.options.num_keep, s.prompt_len, options_.add_bos, ctx), ctx);
  s.table.reset();
  s.table.emplace(pool_, options_.block_size);
  s.computed = s.table->reuse_prefix(s.tokens);
  return true;
}

void StepPlanner::apply(const StepPlan& plan, StepOutput& output, SchedulerClock::time_point now,
                        AppliedStep& applied) {
  applied.clear();
  // Verified drafts: the pending token and the accepted draft tokens join the cache, the
  // rejected positions' blocks go back (their K/V was written but is never read). Other rows
  // were committed by the runner.
  for (size_t i = 0; i < plan.rows.size(); ++i) {
    const PlannedRow& row = plan.rows[i];
    Sequence& s = *row.seq;
    if (!row.draft.empty()) {
      const uint32_t accepted = output.chosen[i].accepted;
      s.table->commit(std::span<const int32_t>(row.input).first(accepted + 1));
      s.table->trim_reserved();
      s.draft_gate.record(static_cast<uint32_t>(row.draft.size()), accepted);
      applied.drafted += row.draft.size();
      applied.accepted += accepted;
    }
    s.computed = s.table->num_tokens();
  }

  for (size_t i = 0; i < plan.rows.size(); ++i) {
    const PlannedRow& row = plan.rows[i];
    if (!row.wants_logits) continue;
    Sequence& s = *row.seq;
    SequenceUpdate& update = applied.updates.emplace_back();
    update.seq = &s;
    TokenEvent& ev = update.event;
    if (!s.started) {
      s.started = true;
      update.first_token = true;
      update.latency = std::chrono::duration_cast<std::chrono::nanoseconds>(now - s.submitted);
      ev.prompt_tokens = s.prompt_len;
      ev.cached_tokens = s.cached_tokens;
      ev.prompt_eval = std::chrono::duration_cast<std::chrono::nanoseconds>(now - s.admitted);
    } else {
      update.latency = std::chrono::duration_cast<std::chrono::nanoseconds>(now - s.last_token);
    }
    s.last_token = now;
    FinishReason finish = FinishReason::none;
    std::string error;
    for (const int32_t tok : output.chosen[i].tokens) {
      ++applied.generated;
      if (s.constraint && !s.constraint->accept(tok)) {
        finish = FinishReason::error;
        error = "constrained decoding chose a token the format does not allow";
      }
      if (options_.is_end_of_generation && options_.is_end_of_generation(tok)) {
        finish = FinishReason::stop;
      } else {
        ++s.generated;
        s.tokens.push_back(tok);
        ev.tokens.push_back(tok);
        if (output.logprobs[i]) ev.logprobs.push_back(std::move(*output.logprobs[i]));
        if (s.constraint && s.constraint->finished()) {
          finish = FinishReason::stop;
        } else if (s.generated >= s.predict_limit()) {
          finish = FinishReason::length;
        }
      }
      if (finish != FinishReason::none) break;
    }
    if (finish == FinishReason::none && !fit_context(s)) finish = FinishReason::length;
    if (finish == FinishReason::none) {
      s.state = running_state(s);
      continue;
    }
    // Done: it leaves the running set now (its finish event goes out after this update's).
    s.cancelled->store(true);  // its handle then has nothing left to cancel
    auto it = std::find_if(running_.begin(), running_.end(),
                           [&](const auto& r) { return r.get() == &s; });
    std::unique_ptr<Sequence> owned = std::move(*it);
    running_.erase(it);
    leave(std::move(owned), finish, std::move(error), applied.finished);
  }
}

}  // namespace vkllm::sched
