// Speculative decoding for the continuous batcher: a cheap guess of a sequence's next tokens (a
// draft) is scored by the target model in one step, [last token, d1..dk] with logits at every
// position, and the longest prefix the target agrees with is kept, plus the target's own next
// token. Greedy sequences keep a draft token when it is the target's argmax; sampled ones by the
// rejection rule (Sampler::sample_after_draft), so their output is distributed exactly as
// without speculation.
//
// The draft is prompt lookup (n-gram) here: the last n tokens of the sequence are looked up
// earlier in its own context and the tokens that followed are proposed. It costs nothing when it
// finds nothing, and pays on repetitive continuations (quoting, code edits). A model created with
// a draft model (Ollama's DRAFT) drafts with that instead (draft_model.h). A per-sequence
// acceptance estimate (DraftGate) stops drafting where it does not pay.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "engine/sampling/sampler.h"

namespace vkllm::sched {

// automatic: the draft model where the model has one; else ngram where the model runs on the CPU
// (the CPU backend or a CPU Vulkan device), off on GPUs, where a verification step costs what a
// decode step of as many sequences does and lookup lost 1-9% of decode speed where it found
// nothing (H200; it paid 1.1-4.9x where it did: bench/RESULTS.md, speculative decoding). draft is
// never configured: it is what a model with a draft resolves to unless speculation is off.
enum class SpeculationMode : uint8_t { off, ngram, automatic, draft };

// VKLLM_SPECULATIVE / VKLLM_DRAFT_MAX (server/config); passed to every model's scheduler.
struct SpeculationOptions {
  SpeculationMode mode = SpeculationMode::automatic;
  uint32_t draft_max = 7;     // drafted tokens per sequence and step at most (VKLLM_DRAFT_MAX)
  uint32_t ngram_max = 3;     // the longest suffix looked up
  uint32_t ngram_min = 1;     // the shortest
  uint32_t max_running = 16;  // no speculation once this many sequences run (decode is batched)
};

// Parses VKLLM_SPECULATIVE's values (auto, ngram, off); throws std::invalid_argument otherwise.
SpeculationMode parse_speculation_mode(std::string_view text);

// The options a model's scheduler runs with: automatic resolved for where the model runs, and
// draft for a model with a draft model (whatever the mode, but off).
SpeculationOptions speculation_for(SpeculationOptions options, bool model_on_cpu,
                                   bool has_draft_model = false);

// Ollama's draft_num_predict default: tokens a draft model proposes per step.
inline constexpr int32_t kDefaultDraftNumPredict = 4;

// A sequence that wants a draft model's draft this step (draft_model.h).
struct DraftRequest {
  uint64_t sequence = 0;             // the scheduler's id, stable for the sequence's life
  std::span<const int32_t> context;  // every token of the sequence (the last not yet computed)
  uint32_t max_tokens = 0;           // draft at most this many
};

// The tokens a sequence committed in a step, for a drafter that follows the model's hidden
// states (Drafter::wants_hidden: the multi-token-prediction head, mtp_drafter.h).
struct StepObservation {
  uint64_t sequence = 0;
  std::span<const int32_t> context;  // the sequence's tokens, at least its first `first`
  uint32_t first = 0;                // the position of the step's first committed token
  std::span<const int32_t> tokens;   // the tokens committed in the step
  std::span<const float> hidden;     // their hidden states after the final norm (n_embd each)
};

// What drafts for speculation mode draft: the model's draft model (DraftModel, draft_model.h),
// its multi-token-prediction head (MtpDrafter, mtp_drafter.h), or a scripted one in tests.
// Engine thread only.
class Drafter {
 public:
  virtual ~Drafter() = default;
  // Whether it reads the model's hidden states (the model's runner then delivers them:
  // runtime::RunnerOptions::token_hidden), passed to observe() after every step.
  virtual bool wants_hidden() const { return false; }
  virtual void observe(std::span<const StepObservation> /*seen*/) {}
  // One draft per request, in order: at most max_tokens tokens each (none: the sequence decodes
  // normally this step).
  virtual std::vector<std::vector<int32_t>> propose(std::span<const DraftRequest> requests) = 0;
  // A sequence left (finished, cancelled, or preempted).
  virtual void forget(uint64_t sequence) = 0;
};

// The tokens that followed the most recent earlier occurrence of the context's last n tokens,
// for n from n_max down to n_min (the longest match wins), at most max_tokens of them; empty
// when none of the suffixes occurs earlier.
std::vector<int32_t> ngram_draft(std::span<const int32_t> context, uint32_t max_tokens,
                                 uint32_t n_max, uint32_t n_min);

// A sequence's running estimate of how many of its drafted tokens the target accepts. Drafting
// pauses while the estimate is low (a verification step costs more than a decode step) and
// probes again now and then, since a continuation may turn repetitive later.
class DraftGate {
 public:
  // How many tokens to draft this step (0: decode normally), at most `max_tokens`.
  uint32_t budget(uint32_t max_tokens);
  // The outcome of a verification step.
  void record(uint32_t drafted, uint32_t accepted);
  double acceptance() const { return acceptance_; }

 private:
  double acceptance_ = 0.5;  // exponential average of accepted / drafted
  uint32_t paused_ = 0;      // decode steps left before drafting again
};

// The tokens a verification step yields: the accepted draft prefix, then the target's own next
// token (a correction, or one past the whole draft). tokens.size() == accepted + 1.
struct Verified {
  std::vector<int32_t> tokens;
  uint32_t accepted = 0;
};

// Greedy on the device: row_argmax[j] is the target's choice after the step's input j
// (input 0 the last committed token, input j > 0 the draft's token j - 1).
Verified verify_greedy(std::span<const int32_t> draft, std::span<const int32_t> row_argmax);

// With a sampler: rows holds draft.size() + 1 rows of n_vocab logits. Every token returned has
// been recorded in the sampler (Sampler::accept), so penalties see the accepted ones.
Verified verify_sampled(sampling::Sampler& sampler, std::span<const int32_t> draft,
                        std::span<const float> rows, uint32_t n_vocab);

}  // namespace vkllm::sched
