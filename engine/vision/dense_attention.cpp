#include "engine/vision/dense_attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace vkllm::vision {

namespace {

// A dot product with independent partial sums, so the compiler vectorizes it without
// reassociating floating-point math.
float dot_rows(const float* a, const float* b, uint32_t n) {
  float acc[8] = {};
  uint32_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (uint32_t j = 0; j < 8; ++j) acc[j] += a[i + j] * b[i + j];
  float sum = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
  for (; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

}  // namespace

uint32_t dense_attention_units(const DenseAttentionArgs& a) {
  const uint32_t blocks = (a.n_tokens + dense_attention_block() - 1) / dense_attention_block();
  return a.n_head * blocks;
}

void dense_attention(const DenseAttentionArgs& a, uint32_t unit_begin, uint32_t unit_end) {
  const uint32_t blocks = (a.n_tokens + dense_attention_block() - 1) / dense_attention_block();
  const uint32_t d = a.head_dim;
  std::vector<float> scores(a.n_tokens), acc(d);
  for (uint32_t unit = unit_begin; unit < unit_end; ++unit) {
    const uint32_t h = unit / blocks;
    const uint32_t t0 = (unit % blocks) * dense_attention_block();
    const uint32_t t1 = std::min(a.n_tokens, t0 + dense_attention_block());
    for (uint32_t t = t0; t < t1; ++t) {
      const float* q = a.q + size_t{t} * a.stride + size_t{h} * d;
      float max_score = -INFINITY;
      for (uint32_t s = 0; s < a.n_tokens; ++s) {
        scores[s] = a.scale * dot_rows(q, a.k + size_t{s} * a.stride + size_t{h} * d, d);
        max_score = std::max(max_score, scores[s]);
      }
      float total = 0.0f;
      for (uint32_t s = 0; s < a.n_tokens; ++s) {
        scores[s] = std::exp(scores[s] - max_score);
        total += scores[s];
      }
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (uint32_t s = 0; s < a.n_tokens; ++s) {
        const float* v = a.v + size_t{s} * a.stride + size_t{h} * d;
        const float p = scores[s];
        for (uint32_t i = 0; i < d; ++i) acc[i] += p * v[i];
      }
      float* out = a.out + size_t{t} * a.out_stride + size_t{h} * d;
      const float inv = 1.0f / total;
      for (uint32_t i = 0; i < d; ++i) out[i] = acc[i] * inv;
    }
  }
}

}  // namespace vkllm::vision
