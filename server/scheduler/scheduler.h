// Continuous batching for one loaded model. Requests submit sequences (prompt tokens + options)
// from any thread and await their tokens on a TokenStream; the scheduler's engine thread runs
// the model step after step. Each step is planned, executed and applied:
//   plan     the step planner (step_planner.h) decides admission by free KV blocks, the step's
//            rows (decode rows, drafts to verify, prefill chunks within the token budget) and
//            preemption of the youngest sequences when blocks run out;
//   execute  here: the runner computes the rows, and the next tokens are chosen (greedy on the
//            device, or sampled, constrained and scored on the CPU; drafts verified);
//   apply    the planner appends the tokens, finishes sequences and shifts full contexts; the
//            scheduler streams the events and the metrics.
// A cancelled sequence's blocks are freed at the next step boundary.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "engine/runtime/runner.h"
#include "engine/sampling/token_constraint.h"
#include "engine/tokenizer/tokenizer.h"
#include "server/http/status_error.h"
#include "server/scheduler/draft_model.h"
#include "server/scheduler/image_inputs.h"
#include "server/scheduler/metrics.h"
#include "server/scheduler/sequence.h"
#include "server/scheduler/speculation.h"
#include "server/scheduler/step_planner.h"
#include "server/scheduler/token_stream.h"

namespace vkllm::sched {

struct SchedulerOptions {
  uint32_t max_running = 0;  // 0: the runner's max_seqs
  uint32_t step_tokens = 0;  // 0: the runner's max_batch_tokens
  std::string model_label;   // the `model` label of this scheduler's metrics
  // VKLLM_FAULT_INJECT=device_lost@N: the N-th engine step of the process fails as a lost
  // device would, once (0: never). Only for testing that a failure stays with its model and the
  // model reloads.
  long fault_inject_step = 0;
  // Speculative decoding of sequences whose sampling allows it (not with a format, logprobs or
  // mirostat), while fewer than speculation.max_running sequences run.
  SpeculationOptions speculation;
  // The model's draft model (mode draft: DraftModel, or a test's Drafter), or null; it outlives
  // the scheduler.
  Drafter* draft_model = nullptr;
  // A vision model's image encoder (image_inputs.h), or null; it outlives the scheduler.
  ImageInputs* images = nullptr;
};

struct SchedulerStats {
  uint32_t running = 0;
  uint32_t waiting = 0;
  kv::BlockPoolStats kv;
};

class Scheduler;

// A submitted sequence. Destroying it (or cancel()) cancels the sequence if still running.
class SequenceHandle {
 public:
  SequenceHandle() = default;
  SequenceHandle(Scheduler* scheduler, std::shared_ptr<std::atomic<bool>> cancelled)
      : scheduler_(scheduler), cancelled_(std::move(cancelled)) {}
  SequenceHandle(SequenceHandle&&) noexcept = default;
  SequenceHandle& operator=(SequenceHandle&& o) noexcept {
    cancel();
    scheduler_ = o.scheduler_;
    cancelled_ = std::move(o.cancelled_);
    return *this;
  }
  ~SequenceHandle() { cancel(); }
  void cancel();
  // Called when the sequence has finished on its own, so destruction cancels nothing.
  void release() { cancelled_.reset(); }

 private:
  Scheduler* scheduler_ = nullptr;
  std::shared_ptr<std::atomic<bool>> cancelled_;
};

class Scheduler {
 public:
  Scheduler(runtime::Runner& runner, const tokenizer::Tokenizer& tokenizer,
            SchedulerOptions options = {});
  ~Scheduler();  // shutdown("the model was unloaded")
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Stops the engine thread and waits for it: sequences still there finish as `unavailable`
  // with `reason` (as `cancelled` if their request already went away), and later submits
  // throw http::StatusError 503 with `reason`. Idempotent. Called before the I/O threads' executor
  // goes away, so no stream is pushed to after its executor is destroyed.
  void shutdown(const std::string& reason);

  // Thread-safe. The stream receives the tokens and, last, an event with a finish reason.
  SequenceHandle submit(SequenceRequest request);
  // Submits several sequences at once: they reach the planner in the same round, so none starts
  // before the others have arrived (a request for several completions of one prompt; tests that
  // need sequences to overlap).
  std::vector<SequenceHandle> submit_all(std::vector<SequenceRequest> requests);

  // Constrained decoding needs the model's vocabulary index; set once before such sequences.
  void set_vocabulary_index(std::shared_ptr<const sampling::VocabularyIndex> index);
  std::shared_ptr<const sampling::VocabularyIndex> vocabulary_index() const;

  SchedulerStats stats() const;
  uint32_t max_context() const { return max_context_; }
  // False after the engine failed in a way that leaves the model unusable (device lost).
  bool healthy() const { return healthy_.load(); }
  // Sequences submitted and not yet finished.
  uint32_t active() const { return active_.load(); }

 private:
  friend class SequenceHandle;
  // A sequence made from `request`, checked, its sampler fed the prompt; not yet queued.
  std::unique_ptr<Sequence> admit(SequenceRequest request);
  // Queues `seqs` for the engine thread under one lock; their handles.
  std::vector<SequenceHandle> enqueue(std::vector<std::unique_ptr<Sequence>> seqs);
  void wake();
  void run();
  // One step: plan, execute, apply (engine thread).
  void step();
  // Runs the plan's rows on the runner and chooses each logits row's tokens into output_;
  // returns when the runner's step ended (the tokens' time).
  SchedulerClock::time_point execute();
  // Shows a drafter that follows the model's hidden states (Drafter::wants_hidden) what each
  // row committed in the step just run.
  void observe(const runtime::StepResult& result);
  // The image rows a prefill row of `s` covers (encoded now where they are not yet), into out.
  void image_spans(Sequence& s, uint32_t n, std::vector<runtime::EmbeddingSpan>& out);
  void finish(Sequence& s, FinishReason reason, std::string error = {});
  void fail_all(const std::string& error);
  void publish_stats();

  runtime::Runner& runner_;
  SchedulerOptions options_;
  uint32_t max_context_;
  MetricLabels labels_;        // {model}: built once, not per step
  MetricLabels draft_labels_;  // {model, draft}: the speculation counters'
  std::shared_ptr<const sampling::VocabularyIndex> vocab_index_;

  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<Sequence>> incoming_;
  bool stopping_ = false;
  std::string stop_reason_;  // why sequences left when stopping_ was set
  bool nudged_ = false;
  std::atomic<bool> healthy_{true};
  std::atomic<uint32_t> active_{0};
  SchedulerStats stats_;
  uint64_t next_id_ = 0;

  // Engine thread only. The step's buffers are kept from step to step (no allocation per step
  // once they have grown).
  StepPlanner planner_;
  StepPlan plan_;
  StepOutput output_;
  AppliedStep applied_;
  std::vector<runtime::SequenceStep> batch_;
  std::vector<std::vector<runtime::EmbeddingSpan>> spans_;  // each row's image rows
  std::vector<std::vector<uint32_t>> rope_pos_;  // each row's M-RoPE positions (after an image)
  std::vector<size_t> cpu_rows_;
  std::vector<runtime::KeptTokens> kept_;  // verified drafts: the tokens each keeps
  std::vector<StepObservation> seen_;      // what a drafter reading hidden states is shown

  std::thread thread_;
};

}  // namespace vkllm::sched
