// Multi-token-prediction drafting: a model that ships a NextN block (Qwen3.5,
// engine/model/nextn_head.h) drafts with it, as llama.cpp's draft-mtp and vLLM's MTP speculators
// do. The block runs on its own Runner and paged KV cache (one attention layer), loaded from a
// view of the model's own file.
//
// Its KV cache follows the model's: after every model step, each sequence's committed tokens go
// through the block (observe), token p with the model's hidden state after p - 1 (the model's
// runner delivers every token's: RunnerOptions::token_hidden), so the block's cache holds the
// positions the model has computed. A draft then starts from the model's pending token at the next
// position with the last computed position's hidden state, and each further draft step feeds the
// drafted token with the block's own hidden state, all in provisional rows dropped afterwards:
// the block's cache only ever holds what the model committed. Greedy drafts (one-hot: the
// scheduler's rejection rule keeps sampled output the model's).
//
// A sequence whose start the model took from its prefix cache (or recomputed after preemption)
// has no hidden states for those positions: the block takes them from its own prefix cache where
// it has them, and computes the rest with zero hidden states (llama.cpp's value before the first
// token), which only makes those positions' drafts worse, never the output.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "engine/kv/block_table.h"
#include "engine/runtime/runner.h"
#include "server/scheduler/speculation.h"

namespace vkllm::sched {

class MtpDrafter final : public Drafter {
 public:
  // `head`: the NextN block's runner (model::ModelSpec::nextn_head; its own KV pool, and
  // RunnerOptions::embedding_inputs for the hidden inputs); it must outlive this.
  explicit MtpDrafter(runtime::Runner& head);
  MtpDrafter(const MtpDrafter&) = delete;
  MtpDrafter& operator=(const MtpDrafter&) = delete;

  bool wants_hidden() const override { return true; }
  void observe(std::span<const StepObservation> seen) override;
  // Up to max_tokens greedy tokens for each request whose sequence the block has followed to
  // the token before the context's last (none for the others).
  std::vector<std::vector<int32_t>> propose(std::span<const DraftRequest> requests) override;
  void forget(uint64_t sequence) override;

  size_t sequences() const { return states_.size(); }

 private:
  struct State {
    State(kv::BlockPool& pool, uint32_t block_size) : table(pool, block_size) {}
    kv::BlockTable table;
    std::vector<float> last_hidden;  // the model's state after the block's last position
    uint64_t last_used = 0;
  };
  // The tokens (and hidden inputs) a sequence's block cache takes in committed steps.
  struct Feed {
    State* state = nullptr;
    std::vector<int32_t> tokens;
    std::vector<float> hidden;
    size_t done = 0;
  };
  // The state of `o`'s sequence, started over (from the block's prefix cache) unless it holds
  // exactly the positions before o.first; the tokens it must take in before o's.
  Feed feed_for(const StepObservation& o);
  void run_feeds(std::vector<Feed>& feeds);

  runtime::Runner& head_;
  const uint32_t n_embd_;
  std::unordered_map<uint64_t, std::unique_ptr<State>> states_;
  uint64_t clock_ = 0;
};

}  // namespace vkllm::sched
