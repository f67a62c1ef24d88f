#include "server/scheduler/scheduler.h"

#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string_view>

#include "engine/sampling/sampler.h"
#include "engine/vulkan/vk_error.h"
#include "server/scheduler/metrics.h"
#include "server/scheduler/row_choice.h"

namespace vkllm::sched {

using Clock = std::chrono::steady_clock;

struct Scheduler::Sequence {
  uint64_t id = 0;
  std::vector<int32_t> tokens;  // prompt + generated; the last one is not yet computed
  uint32_t prompt_len = 0;
  uint32_t cached_tokens = 0;  // prefix-cache hits at first admission
  uint32_t computed = 0;       // tokens whose K/V are in the table
  uint32_t generated = 0;
  SequenceOptions options;
  std::shared_ptr<TokenStream> stream;
  std::shared_ptr<std::atomic<bool>> cancelled;
  std::optional<kv::BlockTable> table;
  sampling::Sampler sampler;
  std::optional<sampling::TokenConstraint> constraint;
  Clock::time_point submitted, admitted, last_token;
  bool first_admission = true;
  bool started = false;  // has produced a token
  DraftGate draft_gate;

  Sequence(SequenceRequest&& r)
      : tokens(std::move(r.prompt)),
        prompt_len(static_cast<uint32_t>(tokens.size())),
        options(std::move(r.options)),
        stream(std::move(r.stream)),
        cancelled(std::make_shared<std::atomic<bool>>(false)),
        sampler(options.sampling) {}

  uint32_t pending() const { return static_cast<uint32_t>(tokens.size()) - computed; }
  bool greedy_on_device() const { return sampler.greedy() && !constraint && !options.logprobs; }
  // Whether a verification step reproduces exactly what decoding would: not with a format
  // (the grammar state follows every token), logprobs (one row per token), or mirostat.
  bool may_speculate() const {
    return !constraint && !options.logprobs && options.sampling.mirostat == 0;
  }
  // Tokens generation may still add (num_predict, capped at 10 x num_ctx as Ollama caps it: a
  // runaway request must not hold its slot forever).
  int64_t predict_limit() const {
    const int64_t cap = int64_t(10) * options.num_ctx;
    return options.num_predict >= 0 ? std::min<int64_t>(options.num_predict, cap) : cap;
  }
};

struct Scheduler::Planned {
  Sequence* seq;
  uint32_t n;
  std::vector<int32_t> draft;  // speculation: tokens to verify after the pending one
  std::vector<int32_t> input;  // speculation: the pending token, then the draft
};

namespace {

const char* reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::stop:
      return "stop";
    case FinishReason::length:
      return "length";
    case FinishReason::cancelled:
      return "cancelled";
    case FinishReason::error:
      return "error";
    case FinishReason::unavailable:
      return "unavailable";
    default:
      return "none";
  }
}

// The process's engine steps, counted for SchedulerOptions::fault_inject_step.
void maybe_inject_fault(long at_step) {
  static std::atomic<long> steps{0};
  if (at_step > 0 && ++steps == at_step) {
    throw vk::VulkanError("vkQueueSubmit (injected by VKLLM_FAULT_INJECT)", VK_ERROR_DEVICE_LOST);
  }
}

}  // namespace

void SequenceHandle::cancel() {
  if (cancelled_ && !cancelled_->exchange(true) && scheduler_) scheduler_->wake();
  cancelled_.reset();
}

Scheduler::Scheduler(runtime::Runner& runner, const tokenizer::Tokenizer& tokenizer,
                     SchedulerOptions options)
    : runner_(runner),
      tokenizer_(tokenizer),
      options_(std::move(options)),
      max_context_(runner.options().max_context) {
  const auto& ro = runner.options();
  if (options_.max_running == 0 || options_.max_running > ro.max_seqs) {
    options_.max_running = ro.max_seqs;
  }
  if (options_.step_tokens == 0 || options_.step_tokens > ro.max_batch_tokens) {
    options_.step_tokens = ro.max_batch_tokens;
  }
  stats_.kv = runner_.pool().stats();
  thread_ = std::thread([this] { run(); });
}

Scheduler::~Scheduler() {
  shutdown("the model was unloaded");
}

void Scheduler::shutdown(const std::string& reason) {
  {
    std::lock_guard lock(mutex_);
    if (!stopping_) {
      stopping_ = true;
      stop_reason_ = reason;
    }
  }
  cv_.notify_all();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

SequenceHandle Scheduler::submit(SequenceRequest request) {
  if (request.prompt.empty()) throw std::invalid_argument("empty prompt");
  auto seq = std::make_unique<Sequence>(std::move(request));
  seq->submitted = Clock::now();
  if (seq->options.format) {
    auto index = vocabulary_index();
    if (!index) throw std::logic_error("constrained decoding without a vocabulary index");
    seq->constraint.emplace(seq->options.format, std::move(index));
  }
  // Penalties look back over the prompt too, as llama.cpp's sampler is fed it.
  const int32_t window = seq->options.sampling.repeat_last_n < 0
                             ? static_cast<int32_t>(seq->tokens.size())
                             : seq->options.sampling.repeat_last_n;
  const size_t from = seq->tokens.size() - std::min<size_t>(window, seq->tokens.size());
  for (size_t i = from; i < seq->tokens.size(); ++i) seq->sampler.accept(seq->tokens[i]);
  SequenceHandle handle(this, seq->cancelled);
  const MetricLabels labels{{"model", options_.model_label}};
  metrics().add("vkllm_prompt_tokens_total", labels, double(seq->tokens.size()));
  {
    std::lock_guard lock(mutex_);
    if (stopping_) throw http::StatusError(503, stop_reason_);  // the model is going away
    seq->id = next_id_++;
    incoming_.push_back(std::move(seq));
    ++active_;
  }
  cv_.notify_all();
  return handle;
}

void Scheduler::set_vocabulary_index(std::shared_ptr<const sampling::VocabularyIndex> index) {
  std::lock_guard lock(mutex_);
  vocab_index_ = std::move(index);
}

std::shared_ptr<const sampling::VocabularyIndex> Scheduler::vocabulary_index() const {
  std::lock_guard lock(mutex_);
  return vocab_index_;
}

SchedulerStats Scheduler::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

void Scheduler::wake() {
  {
    std::lock_guard lock(mutex_);
    nudged_ = true;
  }
  cv_.notify_all();
}

void Scheduler::run() {
  // Named so that top -H, perf and bench/bench_serve.mjs can tell the engine thread's CPU time
  // from the I/O threads' and a software Vulkan driver's.
  pthread_setname_np(pthread_self(), "vkllm-engine");
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      cv_.wait(lock, [&] {
        return stopping_ || nudged_ || !incoming_.empty() || !running_.empty() || !waiting_.empty();
      });
      nudged_ = false;
      if (stopping_) break;
      for (auto& s : incoming_) waiting_.push_back(std::move(s));
      incoming_.clear();
    }
    try {
      // Cancelled sequences leave first, so their blocks serve this step.
      for (auto it = waiting_.begin(); it != waiting_.end();) {
        if ((*it)->cancelled->load()) {
          finish(**it, FinishReason::cancelled);
          it = waiting_.erase(it);
        } else {
          ++it;
        }
      }
      std::erase_if(running_, [&](auto& s) {
        if (!s->cancelled->load()) return false;
        finish(*s, FinishReason::cancelled);
        return true;
      });
      admit();
      if (!running_.empty()) step();
    } catch (const std::exception& e) {
      // A failed step leaves the model's state unknown: fail what runs on it, keep serving
      // (the manager reloads a model whose device was lost).
      const auto* vk_error = dynamic_cast<const vk::VulkanError*>(&e);
      if (vk_error && vk_error->result() == VK_ERROR_DEVICE_LOST) {
        healthy_ = false;
        fail_all(std::string("the GPU device was lost (VK_ERROR_DEVICE_LOST): ") + e.what() +
                 "; the model will be reloaded by the next request");
      } else {
        fail_all(std::string("model runner failed: ") + e.what());
      }
    }
    publish_stats();
  }
  std::string reason;
  {
    std::lock_guard lock(mutex_);
    reason = stop_reason_;
    for (auto& s : incoming_) waiting_.push_back(std::move(s));
    incoming_.clear();
  }
  auto leave = [&](Sequence& s) {
    if (s.cancelled->load()) {
      finish(s, FinishReason::cancelled);
    } else {
      finish(s, FinishReason::unavailable, reason);
    }
  };
  for (auto& s : waiting_) leave(*s);
  for (auto& s : running_) leave(*s);
  waiting_.clear();
  running_.clear();
}

void Scheduler::fail_all(const std::string& error) {
  for (auto& s : waiting_) finish(*s, FinishReason::error, error);
  for (auto& s : running_) finish(*s, FinishReason::error, error);
  waiting_.clear();
  running_.clear();
}

void Scheduler::finish(Sequence& s, FinishReason reason, std::string error) {
  s.table.reset();  // blocks back to the pool (full ones stay cached for prefix reuse)
  if (options_.draft_model) options_.draft_model->forget(s.id);
  TokenEvent ev;
  ev.finish = reason;
  ev.error = std::move(error);
  ev.prompt_tokens = s.prompt_len;
  ev.cached_tokens = s.cached_tokens;
  s.stream->push(std::move(ev));
  --active_;
  metrics().add("vkllm_sequences_finished_total",
                {{"model", options_.model_label}, {"reason", reason_name(reason)}});
}

void Scheduler::preempt(Sequence& s) {
  s.table.reset();
  s.computed = 0;
  metrics().add("vkllm_preemptions_total", {{"model", options_.model_label}});
}

void Scheduler::admit() {
  kv::BlockPool& pool = runner_.pool();
  const uint32_t bs = runner_.block_size();
  while (!waiting_.empty() && running_.size() < options_.max_running) {
    Sequence& s = *waiting_.front();
    if (!s.table) {
      s.table.emplace(pool, bs);
      // A model with recurrent layers keeps a state only for the tokens a sequence computed
      // itself: a cached prefix would come without it, so the sequence computes from its first
      // token (and preemption recomputes from the start). State checkpoints at block boundaries
      // (issue 36, item 3) lift this.
      s.computed = runner_.spec().has_recurrent_state() ? 0 : s.table->reuse_prefix(s.tokens);
      if (s.first_admission) {
        s.cached_tokens = s.computed;
        metrics().add("vkllm_prefix_cache_hit_tokens_total", {{"model", options_.model_label}},
                      s.computed);
      }
    }
    // Blocks for the rest of the sequence, plus one spare block per running sequence so the
    // ones already decoding can grow for a while before anything is preempted.
    const uint32_t rest = s.pending();
    const uint32_t free_slots = s.table->capacity() - s.table->num_tokens();
    const uint32_t need = rest > free_slots ? (rest - free_slots + bs - 1) / bs : 0;
    const uint32_t spare = static_cast<uint32_t>(running_.size());
    if (pool.available() < need + spare) {
      if (running_.empty()) {
        // Nothing else holds blocks: this sequence alone does not fit the cache.
        if (pool.available() < need) {
          finish(s, FinishReason::error,
                 "the sequence needs " + std::to_string(s.tokens.size()) +
                     " tokens of KV cache but the cache holds " +
                     std::to_string(uint64_t(pool.num_blocks()) * bs) + "; use a smaller num_ctx");
          waiting_.pop_front();
          continue;
        }
      } else {
        s.table.reset();  // give its prefix references back while it waits
        s.computed = 0;
        break;
      }
    }
    if (s.first_admission) {
      s.admitted = Clock::now();
      s.first_admission = false;
    }
    running_.push_back(std::move(waiting_.front()));
    waiting_.pop_front();
  }
}

// After a token was appended: true if the sequence may go on.
bool Scheduler::handle_context_limit(Sequence& s) {
  if (s.tokens.size() <= std::min(s.options.num_ctx, max_context_)) return true;
  if (!s.options.shift) {
    finish(s, FinishReason::length);
    return false;
  }
  // Ollama's context shift: keep the first num_keep tokens, drop the older half of the rest,
  // recompute (the kept start comes back from the prefix cache).
  const uint32_t ctx = std::min(s.options.num_ctx, max_context_);
  uint32_t keep = s.options.num_keep < 0 ? s.prompt_len : uint32_t(s.options.num_keep);
  if (tokenizer_.add_bos() && s.options.num_keep >= 0) ++keep;
  keep = std::min<uint32_t>(keep, ctx - 1);
  const uint32_t total = static_cast<uint32_t>(s.tokens.size());
  const uint32_t discard = std::max<uint32_t>((total - keep) / 2, 1);
  s.tokens.erase(s.tokens.begin() + keep, s.tokens.begin() + keep + discard);
  s.table.reset();
  s.table.emplace(runner_.pool(), runner_.block_size());
  // Recurrent layers: recomputed from the start (no state for a reused prefix; see admit()).
  s.computed = runner_.spec().has_recurrent_state() ? 0 : s.table->reuse_prefix(s.tokens);
  return true;
}

void Scheduler::step() {
  // Plan: decoding sequences (one pending token, perhaps a draft after it) first, then prefill
  // chunks in admission order.
  std::vector<Planned> plan;
  uint32_t budget = options_.step_tokens;
  for (auto& s : running_) {
    if (s->pending() == 1 && budget > 0) {
      plan.push_back({s.get(), 1, {}, {}});
      --budget;
    }
  }
  add_drafts(plan, budget);
  for (auto& s : running_) {
    if (s->pending() > 1 && budget > 0) {
      const uint32_t n = std::min(s->pending(), budget);
      plan.push_back({s.get(), n, {}, {}});
      budget -= n;
    }
  }
  // Blocks before the step: preempt the youngest sequences until every chunk fits.
  for (size_t i = 0; i < plan.size();) {
    Sequence& s = *plan[i].seq;
    if (s.table->reserve(plan[i].n)) {
      ++i;
      continue;
    }
    Sequence* victim = running_.back().get();
    if (running_.size() == 1) {
      // Only this sequence holds blocks: it cannot fit the cache however long it waits.
      finish(s, FinishReason::error, "the KV cache is too small for this sequence");
      running_.clear();
      return;
    }
    auto vit = std::find_if(plan.begin(), plan.end(), [&](auto& p) { return p.seq == victim; });
    if (vit != plan.end()) {
      const size_t vi = static_cast<size_t>(vit - plan.begin());
      plan.erase(vit);
      if (vi < i) --i;
    }
    preempt(*victim);
    waiting_.push_front(std::move(running_.back()));
    running_.pop_back();
  }
  if (plan.empty()) return;

  std::vector<runtime::SequenceStep> batch;
  batch.reserve(plan.size());
  bool greedy_only = true;
  uint32_t total = 0;
  for (auto& p : plan) {
    Sequence& s = *p.seq;
    if (!p.draft.empty()) {
      batch.push_back({&*s.table, p.input, runtime::LogitsWanted::All, /*provisional=*/true});
      if (!s.greedy_on_device()) greedy_only = false;
      total += p.n;
      continue;
    }
    const bool last = p.n == s.pending();
    batch.push_back({&*s.table, std::span<const int32_t>(s.tokens).subspan(s.computed, p.n),
                     last ? runtime::LogitsWanted::Last : runtime::LogitsWanted::None});
    if (last && !s.greedy_on_device()) greedy_only = false;
    total += p.n;
  }
  maybe_inject_fault(options_.fault_inject_step);
  const runtime::StepResult result = runner_.step(batch, greedy_only);
  const auto now = Clock::now();
  const MetricLabels labels{{"model", options_.model_label}};
  metrics().add("vkllm_steps_total", labels);
  metrics().observe("vkllm_step_tokens", labels, total);

  // Choose the next tokens of every sequence that produced logits (one, or with a draft the
  // accepted ones and one more); the sampler records each.
  std::vector<size_t> rows;
  uint32_t prefill_tokens = 0;
  for (size_t i = 0; i < plan.size(); ++i) {
    if (batch[i].logits != runtime::LogitsWanted::None) rows.push_back(i);
    if (!plan[i].seq->started) prefill_tokens += plan[i].n;
  }
  metrics().add("vkllm_prompt_eval_tokens_total", labels, prefill_tokens);

  std::vector<Verified> chosen(plan.size());
  std::vector<std::optional<TokenLogprob>> lps(plan.size());
  std::vector<size_t> cpu_rows;
  for (size_t i : rows) {
    Sequence& s = *plan[i].seq;
    if (!s.greedy_on_device()) {
      cpu_rows.push_back(i);
    } else {
      chosen[i] = plan[i].draft.empty() ? Verified{{result.greedy[i]}, 0}
                                        : verify_greedy(plan[i].draft, result.greedy_rows[i]);
      for (int32_t tok : chosen[i].tokens) s.sampler.accept(tok);
    }
  }
  const uint32_t n_vocab = runner_.spec().n_vocab;
  parallel_for(cpu_rows.size(), [&](size_t k) {
    const size_t i = cpu_rows[k];
    Sequence& s = *plan[i].seq;
    if (!plan[i].draft.empty()) {
      chosen[i] = verify_sampled(s.sampler, plan[i].draft, result.logits[i], n_vocab);
      return;
    }
    std::vector<float> row = result.logits[i];
    if (s.constraint) s.constraint->mask(row);
    const int32_t tok = s.sampler.greedy() ? best_token(row) : s.sampler.sample(row);
    s.sampler.accept(tok);
    chosen[i] = Verified{{tok}, 0};
    if (s.options.logprobs) lps[i] = logprobs_of(result.logits[i], tok, s.options.top_logprobs);
  });
  // Verified drafts: the pending token and the accepted draft tokens join the cache, the
  // rejected positions' blocks go back (their K/V was written but is never read).
  uint64_t drafted = 0, accepted = 0;
  for (size_t i = 0; i < plan.size(); ++i) {
    Sequence& s = *plan[i].seq;
    if (!plan[i].draft.empty()) {
      s.table->commit(std::span<const int32_t>(plan[i].input).first(chosen[i].accepted + 1));
      s.table->trim_reserved();
      s.draft_gate.record(static_cast<uint32_t>(plan[i].draft.size()), chosen[i].accepted);
      drafted += plan[i].draft.size();
      accepted += chosen[i].accepted;
    }
    s.computed = s.table->num_tokens();
  }
  if (drafted > 0) {
    const MetricLabels by{{"model", options_.model_label},
                          {"draft", options_.draft_model ? "model" : "ngram"}};
    metrics().add("vkllm_speculative_drafted_tokens_total", by, double(drafted));
    metrics().add("vkllm_speculative_accepted_tokens_total", by, double(accepted));
  }

  uint32_t generated = 0;
  for (size_t i : rows) {
    Sequence& s = *plan[i].seq;
    TokenEvent ev;
    if (!s.started) {
      s.started = true;
      ev.prompt_tokens = s.prompt_len;
      ev.cached_tokens = s.cached_tokens;
      ev.prompt_eval = std::chrono::duration_cast<std::chrono::nanoseconds>(now - s.admitted);
      metrics().observe("vkllm_time_to_first_token_seconds", labels,
                        std::chrono::duration<double>(now - s.submitted).count());
    } else {
      metrics().observe("vkllm_inter_token_latency_seconds", labels,
                        std::chrono::duration<double>(now - s.last_token).count());
    }
    s.last_token = now;
    for (const int32_t tok : chosen[i].tokens) {
      ++generated;
      if (s.constraint && !s.constraint->accept(tok)) {
        ev.finish = FinishReason::error;
        ev.error = "constrained decoding chose a token the format does not allow";
      }
      if (tokenizer_.is_end_of_generation(tok)) {
        ev.finish = FinishReason::stop;
      } else {
        ++s.generated;
        s.tokens.push_back(tok);
        ev.tokens.push_back(tok);
        if (lps[i]) ev.logprobs.push_back(std::move(*lps[i]));
        if (s.constraint && s.constraint->finished()) {
          ev.finish = FinishReason::stop;
        } else if (s.generated >= s.predict_limit()) {
          ev.finish = FinishReason::length;
        }
      }
      if (ev.finish != FinishReason::none) break;
    }
    const FinishReason fin = ev.finish;
    const std::string err = ev.error;
    ev.finish = FinishReason::none;
    ev.error.clear();
    s.stream->push(std::move(ev));
    if (fin != FinishReason::none) {
      finish(s, fin, err);
      s.cancelled->store(true);  // marks it for removal below
    } else if (!handle_context_limit(s)) {
      s.cancelled->store(true);
    }
  }
  metrics().add("vkllm_generated_tokens_total", labels, generated);
  // Finished sequences leave now (their finish event is already out).
  std::erase_if(running_, [&](auto& s) {
    if (!s->cancelled->load()) return false;
    return !s->table.has_value();
  });
}

void Scheduler::add_drafts(std::vector<Planned>& plan, uint32_t& budget) {
  const SpeculationOptions& spec = options_.speculation;
  DraftModel* const drafter = spec.mode == SpeculationMode::draft ? options_.draft_model : nullptr;
  // Under load the decode step is already batched: verifying drafts would only add work.
  if ((spec.mode != SpeculationMode::ngram && !drafter) || running_.size() >= spec.max_running)
    return;
  // A recurrent state only advances: a rejected draft token would stay in it. Checkpoints
  // (issue 36, item 3) lift this for models with recurrent layers.
  if (runner_.spec().has_recurrent_state()) return;
  // Logits rows: every running sequence may need one; drafts take what is left.
  const uint32_t max_rows = runner_.options().max_logits_rows;
  uint32_t rows =
      max_rows > running_.size() ? max_rows - static_cast<uint32_t>(running_.size()) : 0;
  auto verify = [&](Planned& p, std::vector<int32_t> draft) {
    p.draft = std::move(draft);
    if (p.draft.empty()) return;
    p.input.assign(1, p.seq->tokens.back());
    p.input.insert(p.input.end(), p.draft.begin(), p.draft.end());
    p.n = static_cast<uint32_t>(p.input.size());
  };
  std::vector<DraftRequest> asks;  // for the draft model, all at once
  std::vector<Planned*> asking;
  for (Planned& p : plan) {
    Sequence& s = *p.seq;
    if (budget == 0 || rows == 0) break;
    if (!s.started || !s.may_speculate()) continue;  // the first token ends the prompt
    const int32_t most = drafter ? std::min<int32_t>(s.options.draft_num_predict, spec.draft_max)
                                 : int32_t(spec.draft_max);
    if (most <= 0) continue;
    // Room in the context (no shift in the middle of a draft) and in num_predict (the token
    // after the draft counts too).
    const uint64_t ctx = std::min(s.options.num_ctx, max_context_);
    const int64_t room_predict = s.predict_limit() - s.generated - 1;
    if (s.tokens.size() >= ctx || room_predict <= 0) continue;
    const uint64_t cap = std::min<uint64_t>(
        {budget, rows, ctx - s.tokens.size(), static_cast<uint64_t>(room_predict)});
    const uint32_t k = std::min<uint32_t>(s.draft_gate.budget(uint32_t(most)), uint32_t(cap));
    if (k == 0) continue;
    if (drafter) {
      asks.push_back({s.id, s.tokens, k});
      asking.push_back(&p);
    } else {
      verify(p, ngram_draft(s.tokens, k, spec.ngram_max, spec.ngram_min));
    }
    const uint32_t taken = drafter ? k : static_cast<uint32_t>(p.draft.size());
    budget -= taken;
    rows -= taken;
  }
  if (asks.empty()) return;
  auto drafts = drafter->propose(asks);
  for (size_t i = 0; i < asks.size(); ++i) {
    budget += asks[i].max_tokens - static_cast<uint32_t>(drafts[i].size());
    verify(*asking[i], std::move(drafts[i]));
  }
}

void Scheduler::publish_stats() {
  SchedulerStats st;
  st.running = static_cast<uint32_t>(running_.size());
  {
    std::lock_guard lock(mutex_);
    st.waiting = static_cast<uint32_t>(waiting_.size() + incoming_.size());
  }
  st.kv = runner_.pool().stats();
  const MetricLabels labels{{"model", options_.model_label}};
  metrics().set("vkllm_running_sequences", labels, st.running);
  metrics().set("vkllm_queued_requests", labels, st.waiting);
  metrics().set("vkllm_kv_blocks", {{"model", options_.model_label}, {"state", "used"}},
                st.kv.used);
  metrics().set("vkllm_kv_blocks", {{"model", options_.model_label}, {"state", "free"}},
                st.kv.free);
  metrics().set("vkllm_kv_blocks", {{"model", options_.model_label}, {"state", "cached"}},
                st.kv.cached);
  std::lock_guard lock(mutex_);
  stats_ = st;
}

}  // namespace vkllm::sched
