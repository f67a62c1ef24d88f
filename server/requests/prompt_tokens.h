// A generation request's prompt as tokens: rendered with the model's template (old messages
// dropped to fit num_ctx, as Ollama does), tokenized, then fitted into the context window by the
// scheduler's context-shift rule (sched::shift_context) or refused as Ollama refuses it.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "engine/tokenizer/tokenizer.h"
#include "engine/vision/image_prompt.h"
#include "server/prompt/prompt.h"
#include "server/requests/generation.h"
#include "server/scheduler/sequence.h"

namespace vkllm::requests {

struct PromptTokens {
  prompt::Rendered rendered;
  std::vector<int32_t> tokens;  // empty for a render-only request
  // A vision model's images, decoded, where the rendered [img-N] tags put them in `tokens`
  // (their rows' token ids from sched::image_token_id).
  std::vector<sched::SequenceImage> images;
};

// Throws http::StatusError 400 for a legacy `context` token outside the vocabulary (as
// /api/detokenize checks them).
void check_context_tokens(const GenerationRequest& req, const tokenizer::Tokenizer& tok);

// Renders and tokenizes the request's prompt (a raw generate prompt is taken verbatim; legacy
// `context` tokens go first). `check` runs between the renders and tokenizations of truncation
// and may throw to stop the work (the client left, the time budget is spent). With `images` (a
// vision model's layout) the images are decoded (http::StatusError 400 for one that is not a
// picture we read) and laid out where the template's [img-N] tags are (vision/image_prompt.h);
// without, they stay out of the tokens. Slow for long prompts: call it off the I/O threads.
PromptTokens build_prompt_tokens(const GenerationRequest& req, const prompt::PromptBuilder& builder,
                                 const tokenizer::Tokenizer& tok, uint32_t num_ctx,
                                 const std::function<void()>& check,
                                 const vision::ImageLayout* images = nullptr);

struct ContextFit {
  uint32_t num_ctx = 0;
  int32_t num_keep = 4;  // Ollama's option: tokens kept at the start by a shift
  bool add_bos = false;  // the tokenizer adds BOS (kept beside num_keep)
  bool truncate = true;  // the request's `truncate`: false refuses an over-long prompt
  bool shift = true;     // the request's `shift`: false refuses it too (Ollama's other text)
};

// Leaves room for at least one generated token: a prompt of num_ctx tokens or more is cut by
// the context-shift rule, or refused with http::StatusError 400 in the shape Ollama (v0.30+,
// through llama-server) gives when `truncate` or `shift` is false.
void fit_prompt(std::vector<int32_t>& tokens, const ContextFit& fit);

}  // namespace vkllm::requests
