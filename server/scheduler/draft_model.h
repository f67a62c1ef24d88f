// Draft-model speculation: a small model sharing the target's vocabulary (Ollama's DRAFT, checked
// at create) guesses each speculating sequence's next k tokens, which the target then verifies in
// one step (speculation.h). The draft runs greedily on its own Runner and paged KV cache, beside
// the target on the same device, batched over the sequences that speculate in a step.
//
// Greedy drafting makes the draft distribution one-hot (q(d) = 1 for the drafted token), and for
// such a deterministic draft the rejection rule Sampler::sample_after_draft applies (keep d with
// probability p(d), else sample the target's distribution without d), so sampled output stays
// distributed exactly as the target's; greedy output stays the target's argmax token for token.
//
// Each sequence's draft KV holds only tokens the sequence has committed: every proposal first
// catches the draft up on the tokens added since its last one (the accepted draft tokens and the
// target's own next token), then drafts past them in provisional rows (written, never committed)
// that are dropped afterwards, so whatever the target rejected leaves nothing behind. A draft
// with recurrent layers (a hybrid) keeps a copy of each sequence's state after its context while
// it drafts ahead, and puts it back before each further step and at the end.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "engine/kv/block_table.h"
#include "engine/runtime/runner.h"
#include "server/scheduler/speculation.h"  // DraftRequest

namespace vkllm::sched {

class DraftModel final : public Drafter {
 public:
  // `runner` is the draft's (its own KV pool); it must outlive this.
  explicit DraftModel(runtime::Runner& runner);
  DraftModel(const DraftModel&) = delete;
  DraftModel& operator=(const DraftModel&) = delete;

  // One greedy draft per request, in order: max_tokens tokens each, or none for a sequence the
  // draft cannot take this step (its context would pass the draft's limit, or the draft's KV
  // cache is full). Runs max_tokens draft steps (more while a long context catches up), each
  // batched over every request. Engine thread only.
  std::vector<std::vector<int32_t>> propose(std::span<const DraftRequest> requests) override;

  // A sequence left (finished, cancelled, or preempted): its draft KV goes back to the pool.
  void forget(uint64_t sequence) override;

  size_t sequences() const { return states_.size(); }
  uint64_t steps() const { return runner_.steps(); }

 private:
  struct State {
    explicit State(kv::BlockPool& pool, uint32_t block_size) : table(pool, block_size) {}
    kv::BlockTable table;
    uint64_t last_used = 0;
  };
  // The sequence's draft KV, made or (after a context shift) remade so that its tokens are a
  // prefix of `context`.
  State& state_for(uint64_t sequence, std::span<const int32_t> context);

  runtime::Runner& runner_;
  std::unordered_map<uint64_t, std::unique_ptr<State>> states_;
  uint64_t clock_ = 0;  // proposals made, for least-recently-used eviction
};

}  // namespace vkllm::sched
