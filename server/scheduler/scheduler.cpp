#include "server/scheduler/scheduler.h"

#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <optional>

#include "engine/sampling/sampler.h"
#include "engine/vision/image_prompt.h"
#include "engine/vulkan/vk_error.h"
#include "server/scheduler/metrics.h"
#include "server/scheduler/row_choice.h"

namespace vkllm::sched {

using Clock = SchedulerClock;

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

// The runner's limits cap the options' (0: the runner's).
SchedulerOptions within_runner(SchedulerOptions options, const runtime::RunnerOptions& ro) {
  if (options.max_running == 0 || options.max_running > ro.max_seqs) {
    options.max_running = ro.max_seqs;
  }
  if (options.step_tokens == 0 || options.step_tokens > ro.max_batch_tokens) {
    options.step_tokens = ro.max_batch_tokens;
  }
  return options;
}

PlannerOptions planner_options(const SchedulerOptions& options, const runtime::Runner& runner,
                               const tokenizer::Tokenizer& tokenizer) {
  PlannerOptions po;
  po.max_running = options.max_running;
  po.step_tokens = options.step_tokens;
  po.max_context = runner.options().max_context;
  po.max_logits_rows = runner.options().max_logits_rows;
  po.block_size = runner.block_size();
  po.add_bos = tokenizer.add_bos();
  po.recurrent_state = runner.spec().has_recurrent_state();
  po.draft_states = runner.options().draft_states;
  po.state_checkpoints = runner.pool().checkpoints().size() > 0;
  po.speculation = options.speculation;
  po.is_end_of_generation = [&tokenizer](int32_t token) {
    return tokenizer.is_end_of_generation(token);
  };
  if (Drafter* const drafter = options.draft_model) {
    po.propose_drafts = [drafter](std::span<const DraftRequest> requests) {
      return drafter->propose(requests);
    };
  }
  return po;
}

}  // namespace

void SequenceHandle::cancel() {
  if (cancelled_ && !cancelled_->exchange(true) && scheduler_) scheduler_->wake();
  cancelled_.reset();
}

Scheduler::Scheduler(runtime::Runner& runner, const tokenizer::Tokenizer& tokenizer,
                     SchedulerOptions options)
    : runner_(runner),
      options_(within_runner(std::move(options), runner.options())),
      max_context_(runner.options().max_context),
      labels_{{"model", options_.model_label}},
      draft_labels_{{"model", options_.model_label},
                    {"draft", options_.draft_model ? "model" : "ngram"}},
      planner_(runner.pool(), planner_options(options_, runner, tokenizer)) {
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

std::unique_ptr<Sequence> Scheduler::admit(SequenceRequest request) {
  if (request.prompt.empty()) throw std::invalid_argument("empty prompt");
  for (const SequenceImage& img : request.images) {
    if (!options_.images) throw http::StatusError(400, "this model runs no image encoder");
    // An image with two-way attention is never split across steps, so one step must hold it
    // (a causal one larger than a step goes in pieces).
    if (img.open && img.n_tokens > planner_.options().step_tokens)
      throw http::StatusError(400, "an image of " + std::to_string(img.n_tokens) +
                                       " tokens does not fit a step of " +
                                       std::to_string(planner_.options().step_tokens));
  }
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
  for (size_t i = from; i < seq->tokens.size(); ++i)
    if (seq->tokens[i] >= 0) seq->sampler.accept(seq->tokens[i]);  // not an image's rows
  return seq;
}

std::vector<SequenceHandle> Scheduler::enqueue(std::vector<std::unique_ptr<Sequence>> seqs) {
  std::vector<SequenceHandle> handles;
  for (const auto& seq : seqs)
    metrics().add("vkllm_prompt_tokens_total", labels_, double(seq->tokens.size()));
  {
    std::lock_guard lock(mutex_);
    if (stopping_) throw http::StatusError(503, stop_reason_);  // the model is going away
    for (auto& seq : seqs) {
      handles.emplace_back(this, seq->cancelled);
      seq->id = next_id_++;
      incoming_.push_back(std::move(seq));
      ++active_;
    }
  }
  cv_.notify_all();
  return handles;
}

SequenceHandle Scheduler::submit(SequenceRequest request) {
  std::vector<std::unique_ptr<Sequence>> one;
  one.push_back(admit(std::move(request)));
  return std::move(enqueue(std::move(one)).front());
}

std::vector<SequenceHandle> Scheduler::submit_all(std::vector<SequenceRequest> requests) {
  std::vector<std::unique_ptr<Sequence>> seqs;
  for (SequenceRequest& r : requests) seqs.push_back(admit(std::move(r)));
  return enqueue(std::move(seqs));
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
      cv_.wait(lock,
               [&] { return stopping_ || nudged_ || !incoming_.empty() || !planner_.idle(); });
      nudged_ = false;
      if (stopping_) break;
      for (auto& s : incoming_) planner_.enqueue(std::move(s));
      incoming_.clear();
    }
    try {
      step();
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
    for (auto& s : incoming_) planner_.enqueue(std::move(s));
    incoming_.clear();
  }
  for (auto& s : planner_.take_all()) {
    if (s->cancelled->load()) {
      finish(*s, FinishReason::cancelled);
    } else {
      finish(*s, FinishReason::unavailable, reason);
    }
  }
}

void Scheduler::fail_all(const std::string& error) {
  for (auto& s : planner_.take_all()) finish(*s, FinishReason::error, error);
  // The step's plan and results name sequences that are gone now.
  plan_.clear();
  applied_.clear();
}

void Scheduler::finish(Sequence& s, FinishReason reason, std::string error) {
  s.table.reset();  // blocks back to the pool (full ones stay cached for prefix reuse)
  s.state = SequenceState::finished;
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

void Scheduler::step() {
  const MetricLabels& labels = labels_;
  planner_.plan(plan_, Clock::now());
  for (auto& f : plan_.finished) finish(*f.seq, f.reason, std::move(f.error));
  plan_.finished.clear();  // gone now, as their streams may be
  if (plan_.prefix_lookups > 0) {
    metrics().add("vkllm_prefix_cache_hit_tokens_total", labels, plan_.prefix_hit_tokens);
  }
  if (!plan_.preempted.empty()) {
    metrics().add("vkllm_preemptions_total", labels, double(plan_.preempted.size()));
  }
  if (plan_.rows.empty()) return;

  const Clock::time_point now = execute();
  planner_.apply(plan_, output_, now, applied_);

  for (auto& u : applied_.updates) {
    const double seconds = std::chrono::duration<double>(u.latency).count();
    metrics().observe(
        u.first_token ? "vkllm_time_to_first_token_seconds" : "vkllm_inter_token_latency_seconds",
        labels, seconds);
    u.seq->stream->push(std::move(u.event));
  }
  // Finished sequences' last events follow their tokens.
  for (auto& f : applied_.finished) finish(*f.seq, f.reason, std::move(f.error));
  if (applied_.drafted > 0) {
    metrics().add("vkllm_speculative_drafted_tokens_total", draft_labels_,
                  double(applied_.drafted));
    metrics().add("vkllm_speculative_accepted_tokens_total", draft_labels_,
                  double(applied_.accepted));
  }
  metrics().add("vkllm_generated_tokens_total", labels, applied_.generated);
  // Finished sequences go now; the buffers keep their storage for the next step.
  applied_.clear();
  plan_.clear();
}

Clock::time_point Scheduler::execute() {
  const std::vector<PlannedRow>& rows = plan_.rows;
  batch_.clear();
  bool greedy_only = true;
  uint32_t total = 0, prefill_tokens = 0;
  spans_.resize(std::max(spans_.size(), rows.size()));
  rope_pos_.resize(std::max(rope_pos_.size(), rows.size()));
  const bool mrope = runner_.spec().uses_mrope();
  for (size_t r = 0; r < rows.size(); ++r) {
    const PlannedRow& p = rows[r];
    Sequence& s = *p.seq;
    spans_[r].clear();
    rope_pos_[r].clear();
    if (!s.images.empty() && p.draft.empty()) image_spans(s, p.n, spans_[r]);
    if (!p.draft.empty()) {
      batch_.push_back({&*s.table, p.input, runtime::LogitsWanted::All, /*provisional=*/true});
    } else {
      batch_.push_back({&*s.table, std::span<const int32_t>(s.tokens).subspan(s.computed, p.n),
                        p.wants_logits ? runtime::LogitsWanted::Last : runtime::LogitsWanted::None,
                        /*provisional=*/false, p.checkpoint});
    }
    batch_.back().embeddings = spans_[r];
    if (mrope && !s.images.empty()) {
      // Every token from an image on rotates by its M-RoPE positions (an image's grid, the text
      // after it moved by the image's extent); recomputed from the images for each row.
      std::vector<vision::MropeImage> placed;
      for (const SequenceImage& img : s.images)
        if (img.grid_width > 0) placed.push_back({img.offset, img.n_tokens, img.grid_width});
      const auto n = static_cast<uint32_t>(batch_.back().tokens.size());
      rope_pos_[r] = vision::mrope_positions(placed, s.computed, s.computed + n);
      batch_.back().rope_positions = rope_pos_[r];
    }
    if (p.wants_logits && !s.greedy_on_device()) greedy_only = false;
    total += p.n;
    if (!s.started) prefill_tokens += p.n;
  }
  maybe_inject_fault(options_.fault_inject_step);
  const runtime::StepResult result = runner_.step(batch_, greedy_only);
  const auto done = Clock::now();
  const MetricLabels& labels = labels_;
  metrics().add("vkllm_steps_total", labels);
  metrics().observe("vkllm_step_tokens", labels, total);
  metrics().add("vkllm_prompt_eval_tokens_total", labels, prefill_tokens);

  // Choose the next tokens of every row that produced logits (one, or with a draft the accepted
  // ones and one more); the sampler records each.
  output_.chosen.assign(rows.size(), Verified{});
  output_.logprobs.assign(rows.size(), std::nullopt);
  cpu_rows_.clear();
  for (size_t i = 0; i < rows.size(); ++i) {
    if (!rows[i].wants_logits) continue;
    Sequence& s = *rows[i].seq;
    if (!s.greedy_on_device()) {
      cpu_rows_.push_back(i);
      continue;
    }
    output_.chosen[i] = rows[i].draft.empty() ? Verified{{result.greedy[i]}, 0}
                                              : verify_greedy(rows[i].draft, result.greedy_rows[i]);
    for (int32_t tok : output_.chosen[i].tokens) s.sampler.accept(tok);
  }
  const uint32_t n_vocab = runner_.spec().n_vocab;
  parallel_for(cpu_rows_.size(), [&](size_t k) {
    const size_t i = cpu_rows_[k];
    Sequence& s = *rows[i].seq;
    if (!rows[i].draft.empty()) {
      output_.chosen[i] = verify_sampled(s.sampler, rows[i].draft, result.logits[i], n_vocab);
      return;
    }
    std::vector<float> row = result.logits[i];
    if (s.constraint) s.constraint->mask(row);
    const int32_t tok = s.sampler.greedy() ? best_token(row) : s.sampler.sample(row);
    s.sampler.accept(tok);
    output_.chosen[i] = Verified{{tok}, 0};
    if (s.options.logprobs) {
      output_.logprobs[i] = logprobs_of(result.logits[i], tok, s.options.top_logprobs);
    }
  });
  // Verified drafts: a hybrid model's recurrent state goes back to the tokens kept (the planner
  // commits them to the cache).
  kept_.clear();
  for (size_t i = 0; i < rows.size(); ++i)
    if (!rows[i].draft.empty())
      kept_.push_back({&*rows[i].seq->table, output_.chosen[i].accepted + 1});
  if (!kept_.empty()) runner_.keep_provisional(kept_);
  if (options_.draft_model && options_.draft_model->wants_hidden()) observe(result);
  return done;
}

void Scheduler::observe(const runtime::StepResult& result) {
  // Each row's committed tokens (a verified draft's kept ones) with their hidden states.
  const uint64_t E = runner_.spec().n_embd;
  seen_.clear();
  for (size_t i = 0; i < plan_.rows.size() && i < result.token_hidden.size(); ++i) {
    const PlannedRow& p = plan_.rows[i];
    const Sequence& s = *p.seq;
    if (!s.images.empty()) continue;  // an image's positions are not vocabulary tokens
    const std::span<const int32_t> tokens =
        p.draft.empty() ? std::span<const int32_t>(s.tokens).subspan(s.computed, p.n)
                        : std::span<const int32_t>(p.input).first(output_.chosen[i].accepted + 1);
    seen_.push_back({s.id, s.tokens, s.computed, tokens,
                     std::span(result.token_hidden[i]).first(tokens.size() * E)});
  }
  options_.draft_model->observe(seen_);
}

void Scheduler::image_spans(Sequence& s, uint32_t n, std::vector<runtime::EmbeddingSpan>& out) {
  const uint32_t from = s.computed, to = s.computed + n, width = runner_.spec().n_embd_inp();
  for (SequenceImage& img : s.images) {
    const uint32_t end = img.offset + img.n_tokens;
    if (end <= from || img.offset >= to) continue;
    if (!img.rows) {
      const uint64_t before = options_.images->images_encoded();
      img.rows = options_.images->encode(*img.picture, img.hash);
      img.picture.reset();  // the rows are what recomputes need
      metrics().add("vkllm_images_encoded_total", labels_,
                    double(options_.images->images_encoded() - before));
    }
    // A chunk may start inside an image whose first blocks came from the prefix cache.
    const uint32_t first = std::max(img.offset, from), last = std::min(end, to);
    out.push_back({first - from, last - first,
                   img.rows->data() + uint64_t(first - img.offset) * width, img.open});
    metrics().add("vkllm_image_tokens_prefilled_total", labels_, last - first);
  }
}

void Scheduler::publish_stats() {
  SchedulerStats st;
  st.running = static_cast<uint32_t>(planner_.running());
  {
    std::lock_guard lock(mutex_);
    st.waiting = static_cast<uint32_t>(planner_.waiting() + incoming_.size());
  }
  st.kv = runner_.pool().stats();
  const MetricLabels& labels = labels_;
  metrics().set("vkllm_running_sequences", labels, st.running);
  metrics().set("vkllm_queued_requests", labels, st.waiting);
  metrics().set("vkllm_kv_blocks", {{"model", options_.model_label}, {"state", "used"}},
                st.kv.used);
  metrics().set("vkllm_kv_blocks", {{"model", options_.model_label}, {"state", "free"}},
                st.kv.free);
  metrics().set("vkllm_kv_blocks", {{"model", options_.model_label}, {"state", "cached"}},
                st.kv.cached);
  if (runner_.pool().checkpoints().size() > 0)
    metrics().set("vkllm_state_checkpoints", labels, runner_.pool().checkpoints().stats().held);
  std::lock_guard lock(mutex_);
  stats_ = st;
}

}  // namespace vkllm::sched
