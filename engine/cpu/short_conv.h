// LFM2's gated short convolution on the CPU, with the Vulkan kernel's semantics
// (shaders/short_conv.comp; runtime::ShortConvSpec): for one sequence's tokens in a step, each
// channel c runs y[t] = C[t] * sum_k w[c][k] * v[t - (L-1) + k] over v = B * X, the values before
// the step's first token taken from the sequence's state, which afterwards holds the last L-1 of
// them. Unit: a channel; a call takes one sequence's channels [begin, end).
#pragma once

#include <cstdint>

namespace vkllm::cpu {

struct ShortConvRows {
  const float* bcx = nullptr;  // the sequence's first token's B|C|X row (3 x n_embd)
  uint32_t bcx_stride = 0;     // elements from one token's row to the next
  float* out = nullptr;        // its first token's output row
  uint32_t out_stride = 0;
};

// w: [n_embd][l_cache] (channel c's taps contiguous, oldest input first). state: (l_cache - 1)
// rows of n_embd, oldest first; read as zeros when `fresh` (the sequence starts at position 0).
void short_conv(const ShortConvRows& rows, const float* w, float* state, uint32_t n_embd,
                uint32_t l_cache, uint32_t n_tokens, bool fresh, uint32_t begin, uint32_t end);

}  // namespace vkllm::cpu
