// The continuous batcher's policy, apart from its execution (as vLLM v1 splits schedule() from
// update_from_output()). The planner owns the queues of one model's sequences and decides, step
// by step, against the KV block pool:
//   plan():  which cancelled sequences leave, which waiting ones are admitted (by free blocks;
//            prefix-cache hits are free), the rows of the step (a decode row for every decoding
//            sequence, perhaps a draft to verify, then prefill chunks in admission order within
//            the token budget), and which sequences are preempted (youngest first) when blocks
//            run out;
//   apply(): the executed step's chosen tokens onto the sequences: tokens appended, drafts
//            committed, finishes (end of generation, format complete, num_predict, a full context
//            without shift), context shifts.
// It never calls the model, the runner or a token stream: the scheduler (scheduler.h) executes
// the plan and streams what apply() returns, so the policy is tested on a bare block pool.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/kv/block_pool.h"
#include "server/scheduler/sequence.h"
#include "server/scheduler/speculation.h"
#include "server/scheduler/token_stream.h"

namespace vkllm::sched {

struct PlannerOptions {
  uint32_t max_running = 1;      // sequences running at once
  uint32_t step_tokens = 512;    // tokens one step carries (the chunked-prefill budget)
  uint32_t max_context = 2048;   // the runner's context limit (a sequence's num_ctx is capped)
  uint32_t max_logits_rows = 1;  // logits rows one step may return (drafts need one per token)
  uint32_t block_size = 16;      // tokens per KV block
  bool add_bos = false;          // the tokenizer adds BOS: a context shift keeps it past num_keep
  // The model has recurrent layers, whose state holds only the tokens a sequence computed itself
  // (or resumed from a checkpoint): prefix reuse only up to a block with a state checkpoint, and
  // at most draft_states drafted tokens a step (the runner keeps the state after each:
  // RunnerOptions::draft_states; a rejected token is taken back from there).
  bool recurrent_state = false;
  uint32_t draft_states = 0;
  // The pool keeps state checkpoints (kv::StateCheckpoints; recurrent models): rows ask for them
  // at the last block boundary of a sequence's tokens (a prefill chunk is cut there: a chat's
  // next turn resumes from the end of this prompt), every checkpoint_every_blocks blocks of a
  // long prompt (requests sharing its start resume there), and at every block a decoding
  // sequence fills (rolling: only the latest is kept; the next turn resumes after the answer).
  bool state_checkpoints = false;
  uint32_t checkpoint_every_blocks = 32;
  SpeculationOptions speculation;
  // Whether a token ends generation (the tokenizer's end-of-generation set).
  std::function<bool(int32_t)> is_end_of_generation;
  // Speculation mode draft: the draft model's drafts for the step's speculating sequences, one
  // per request in order, asked all at once (DraftModel::propose, draft_model.h). Unset: the
  // model has no draft model and mode draft drafts nothing.
  std::function<std::vector<std::vector<int32_t>>(std::span<const DraftRequest>)> propose_drafts;
};

// One sequence's part of a step.
struct PlannedRow {
  Sequence* seq = nullptr;
  uint32_t n = 0;              // tokens the row computes
  bool wants_logits = false;   // decode, verification, or the last chunk of a prefill
  std::vector<int32_t> draft;  // speculation: tokens to verify after the pending one
  std::vector<int32_t> input;  // speculation: the pending token, then the draft
  kv::Checkpoint checkpoint = kv::Checkpoint::none;  // of the state after the row
};

// A sequence that left the scheduler; its finish event is still to be sent.
struct FinishedSequence {
  std::unique_ptr<Sequence> seq;
  FinishReason reason = FinishReason::none;
  std::string error;
};

struct StepPlan {
  std::vector<FinishedSequence> finished;  // cancelled, or refused: they cannot fit the cache
  std::vector<Sequence*> admitted;         // moved from waiting to running, in order
  std::vector<PlannedRow> rows;            // decode and verification rows, then prefill chunks
  std::vector<Sequence*> preempted;        // youngest first; back at the front of the queue
  uint32_t prefix_lookups = 0;             // tables made (each looks up the prefix cache)
  uint32_t prefix_hit_tokens = 0;          // tokens those lookups found cached (first admissions)
  // Empties the plan, keeping its storage for the next step.
  void clear();
};

// What the executed step chose, row by row of the plan (empty where a row wanted no logits).
struct StepOutput {
  std::vector<Verified> chosen;
  std::vector<std::optional<TokenLogprob>> logprobs;
};

// One sequence's news from a step: the event for its stream (tokens, and on its first token the
// prompt's figures) and, for the metrics, the time since its submission or last token.
struct SequenceUpdate {
  Sequence* seq = nullptr;
  bool first_token = false;
  std::chrono::nanoseconds latency{0};
  TokenEvent event;
};

struct AppliedStep {
  std::vector<SequenceUpdate> updates;     // one per row that produced logits, in row order
  std::vector<FinishedSequence> finished;  // sequences done after this step
  uint32_t generated = 0;                  // tokens produced (end-of-generation ones included)
  uint64_t drafted = 0, accepted = 0;      // speculation
  void clear();
};

class StepPlanner {
 public:
  StepPlanner(kv::BlockPool& pool, PlannerOptions options);

  // A submitted sequence joins the back of the queue.
  void enqueue(std::unique_ptr<Sequence> seq);

  // Decides the next step into `plan` (cleared first). Cancelled and refused sequences are
  // already out of the queues and their blocks freed; rows name running sequences, whose
  // blocks for the step are reserved. No rows: nothing to run.
  void plan(StepPlan& plan, SchedulerClock::time_point now);

  // The executed `plan`'s output onto its sequences (into `applied`, cleared first; the
  // output's logprobs move into the events). Finished sequences leave the running set with
  // their blocks freed.
  void apply(const StepPlan& plan, StepOutput& output, SchedulerClock::time_point now,
             AppliedStep& applied);

  // Every sequence still queued or running (waiting ones first), leaving the planner empty:
  // for a failed step or shutdown.
  std::vector<std::unique_ptr<Sequence>> take_all();

  bool idle() const { return waiting_.empty() && running_.empty(); }
  size_t waiting() const { return waiting_.size(); }
  size_t running() const { return running_.size(); }
  const std::deque<std::unique_ptr<Sequence>>& waiting_queue() const { return waiting_; }
  const std::vector<std::unique_ptr<Sequence>>& running_set() const { return running_; }
  const PlannerOptions& options() const { return options_; }

 private:
  void reap_cancelled(StepPlan& plan);
  void admit(StepPlan& plan, SchedulerClock::time_point now);
  // In-flight prefix sharing: true when a running sequence is still prefilling full blocks that
  // `s` (its prefix-cache lookup done) starts with beyond what the cache gave it, so s waits for
  // them to be computed and cached instead of computing the same K/V again (requests that share a
  // system prompt or a document and arrive together: one computes the prefix, the others join).
  bool waits_for_shared_prefix(const Sequence& s) const;
  void plan_rows(StepPlan& plan);
  // Gives decoding rows drafted tokens to verify, within the step's token and logits budgets.
  void add_drafts(StepPlan& plan, uint32_t& budget);
  // The checkpoint a row of s asks for (PlannerOptions::state_checkpoints), and a prefill chunk
  // of n tokens cut to end where it is taken.
  kv::Checkpoint checkpoint_for_decode(const Sequence& s) const;
  uint32_t cut_for_checkpoint(const Sequence& s, uint32_t n, kv::Checkpoint& checkpoint) const;
  // A prefill chunk of n tokens cut so that no image is split across chunks and an image whose
  // tokens attend both ways ends its chunk (the runner's open span); 0 when the next image does
  // not fit in n.
  uint32_t cut_for_images(const Sequence& s, uint32_t n) const;
  // Frees the youngest running sequence's blocks and sends it back to the queue's front.
  void preempt_youngest(StepPlan& plan);
  // After a token was appended: true if the sequence may go on (perhaps after a context shift).
  bool fit_context(Sequence& s);
  void leave(std::unique_ptr<Sequence> seq, FinishReason reason, std::string error,
             std::vector<FinishedSequence>& out);
  uint32_t context_limit(const Sequence& s) const;

  kv::BlockPool& pool_;
  PlannerOptions options_;
  std::deque<std::unique_ptr<Sequence>> waiting_;
  std::vector<std::unique_ptr<Sequence>> running_;  // in admission order (youngest last)
  // add_drafts' requests to the draft model and the rows they are for, kept from step to step.
  std::vector<DraftRequest> draft_asks_;
  std::vector<size_t> draft_rows_;
};

}  // namespace vkllm::sched
