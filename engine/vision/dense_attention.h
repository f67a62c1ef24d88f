// Full (non-causal) multi-head attention over f32 rows held in memory, for vision towers: every
// query token attends to every token of the image. The text path's attention reads a paged f16
// KV cache (engine/cpu/attention.h); an image's keys live only for one forward, so they stay
// plain f32 rows here, and the two products of each head run on the CPU backend's matmul kernels
// (engine/cpu/quant_matmul.h: AVX2 / AVX-512 where present), which a 4096-token image (Gemma 3's
// 896 px) needs: 77 GFLOP of attention per layer.
#pragma once

#include <cstdint>

namespace vkllm::cpu {
class ThreadPool;
class MatmulWorkspace;
}  // namespace vkllm::cpu

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

// Head by head: K_h and V_h^T packed, then per tile of queries the scores (one matmul), a row
// softmax and the weighted sum of values (a second matmul), all spread over `pool`.
void dense_attention(const DenseAttentionArgs& a, cpu::ThreadPool& pool, cpu::MatmulWorkspace& ws);

}  // namespace vkllm::vision
