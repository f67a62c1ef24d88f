// One sequence of the continuous batcher: a request's prompt and generated tokens, its place in
// the paged KV cache, its sampler, and where in its life it is. The step planner moves it through
// its states (step_planner.h); the scheduler's engine thread executes its rows and streams its
// tokens (scheduler.h).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/image/image.h"
#include "engine/kv/block_table.h"
#include "engine/sampling/sampler.h"
#include "engine/sampling/sampling_params.h"
#include "engine/sampling/token_constraint.h"
#include "server/scheduler/speculation.h"
#include "server/scheduler/token_stream.h"

namespace vkllm::sched {

struct SequenceOptions {
  sampling::SamplingParams sampling;
  int32_t num_predict = -1;  // < 0: until a stop; either way at most 10 x num_ctx, as Ollama
  uint32_t num_ctx = 2048;   // the sequence's context window (<= the scheduler's max_context)
  int32_t num_keep = 4;      // tokens kept at the start on a context shift; -1: all of the prompt
  bool shift = true;         // shift the context when it fills, else finish with `length`
  bool logprobs = false;
  int top_logprobs = 0;
  std::shared_ptr<const sampling::CompiledFormat> format;  // constrained decoding, or null
  // Ollama's option: tokens a draft model proposes per step (0: none), at most
  // SpeculationOptions::draft_max.
  int32_t draft_num_predict = kDefaultDraftNumPredict;
};

// An image among a sequence's tokens (issue 38): its rows (the projector's output, n_tokens x
// n_embd) replace the embeddings of tokens [offset, offset + n_tokens), whose ids are negative
// and derived from the image's content (image_inputs.h: image_token_id), so the prefix cache
// tells pictures apart. The picture waits here until the engine thread encodes it, when a
// prefill chunk first reaches it; the rows stay for recomputes after preemption.
struct SequenceImage {
  uint32_t offset = 0;
  uint32_t n_tokens = 0;
  bool open = true;  // the image's tokens attend to each other both ways (Gemma 3)
  // M-RoPE models (Qwen2.5-VL): the merged patches in a row of the image's grid, from which its
  // tokens' and the later tokens' rotary positions follow (vision::mrope_positions); else 0.
  uint32_t grid_width = 0;
  std::string hash;  // of the image's bytes (hex sha256)
  std::shared_ptr<const image::Image> picture;
  std::shared_ptr<const std::vector<float>> rows;
};

struct SequenceRequest {
  std::vector<int32_t> prompt;  // at least one token, at most num_ctx - 1
  SequenceOptions options;
  std::shared_ptr<TokenStream> stream;
  std::vector<SequenceImage> images;  // in token order, within the prompt
};

// A sequence's life. waiting -> prefilling -> decoding -> finished; preemption sends a running
// sequence back to the front of the queue as `preempted`, and its next admission recomputes it
// (prefilling again, mostly from the prefix cache). Cancellation finishes it from any state.
enum class SequenceState : uint8_t {
  waiting,     // submitted, holds no blocks
  prefilling,  // running, with more than one token to compute (prompt chunks, or a recompute)
  decoding,    // running, with one token to compute per step (and perhaps a draft)
  preempted,   // waiting again: its blocks were taken for others, its tokens kept
  finished,    // left the scheduler; its finish event is out
};

using SchedulerClock = std::chrono::steady_clock;

struct Sequence {
  uint64_t id = 0;
  SequenceState state = SequenceState::waiting;
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
  SchedulerClock::time_point submitted, admitted, last_token;
  bool first_admission = true;
  bool started = false;  // has produced a token
  DraftGate draft_gate;
  std::vector<SequenceImage> images;  // in token order; none shift out of a full context

  explicit Sequence(SequenceRequest&& r)
      : tokens(std::move(r.prompt)),
        prompt_len(static_cast<uint32_t>(tokens.size())),
        options(std::move(r.options)),
        stream(std::move(r.stream)),
        cancelled(std::make_shared<std::atomic<bool>>(false)),
        sampler(options.sampling),
        images(std::move(r.images)) {}

  uint32_t pending() const { return static_cast<uint32_t>(tokens.size()) - computed; }
  bool running() const {
    return state == SequenceState::prefilling || state == SequenceState::decoding;
  }
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

}  // namespace vkllm::sched
