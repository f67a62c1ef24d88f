// Full (non-causal) multi-head attention over f32 rows held in memory, for vision towers: every
// query token attends to every token of the image. The text path's attention reads a paged f16
// KV cache (engine/cpu/attention.h); an image's keys live only for one forward, so they stay
// plain rows here.
#pragma once

#include <cstdint>

namespace vkllm::vision {

// out[t][h] = sum_s softmax_s(scale * q[t][h] . k[s][h]) * v[s][h], where x[t][h] is the
// head_dim values at x + t * stride + h * head_dim (out with out_stride).
struct DenseAttentionArgs {
  const float* q = nullptr;
  const float* k = nullptr;
  const float* v = nullptr;
  uint32_t stride = 0;  // q, k and v rows
  float* out = nullptr;
  uint32_t out_stride = 0;
  uint32_t n_tokens = 0;
  uint32_t n_head = 0;
  uint32_t head_dim = 0;
  float scale = 0.0f;
};

// Work units: (head, block of dense_attention_block() query tokens), numbered head-major.
constexpr uint32_t dense_attention_block() {
  return 8;
}
uint32_t dense_attention_units(const DenseAttentionArgs& a);
// Computes units [begin, end); units never write the same output. Scratch is per call.
void dense_attention(const DenseAttentionArgs& a, uint32_t unit_begin, uint32_t unit_end);

}  // namespace vkllm::vision
