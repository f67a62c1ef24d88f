#include "engine/vision/dense_attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/cpu/quant_matmul.h"
#include "engine/cpu/thread_pool.h"

namespace vkllm::vision {

namespace {

// Queries per tile: the tile's scores (tile x n_tokens floats, 8 MiB at 4096 tokens) stay near
// the cache instead of a whole n_tokens^2 matrix per head.
constexpr uint32_t kQueryTile = 512;

// p = exp(scale * s - max) / sum over the row, in place, rows [begin, end).
void softmax_rows(float* scores, uint32_t n, float scale, uint32_t begin, uint32_t end) {
  for (uint32_t r = begin; r < end; ++r) {
    float* row = scores + size_t{r} * n;
    float max_score = -INFINITY;
    for (uint32_t i = 0; i < n; ++i) max_score = std::max(max_score, row[i]);
    float total = 0.0f;
    for (uint32_t i = 0; i < n; ++i) total += (row[i] = std::exp(scale * (row[i] - max_score)));
    const float inv = 1.0f / total;
    for (uint32_t i = 0; i < n; ++i) row[i] *= inv;
  }
}

}  // namespace

void dense_attention(const DenseAttentionArgs& a, cpu::ThreadPool& pool, cpu::MatmulWorkspace& ws) {
  const uint32_t N = a.n_tokens, d = a.head_dim;
  std::vector<float> k_head(size_t{N} * d), v_t(size_t{d} * N);
  std::vector<float> scores(size_t{std::min(N, kQueryTile)} * N);
  const uint32_t slices = std::max(1u, std::min(N / 64, pool.size() * 4));
  for (uint32_t h = 0; h < a.n_head; ++h) {
    // K_h as N rows of d (the scores' "weights"), V_h transposed as d rows of N.
    pool.parallel_for(slices, [&](uint32_t s, unsigned) {
      const uint32_t b = N * s / slices, e = N * (s + 1) / slices;
      for (uint32_t t = b; t < e; ++t) {
        const float* k = a.k + size_t{t} * a.stride + size_t{h} * d;
        const float* v = a.v + size_t{t} * a.stride + size_t{h} * d;
        std::copy_n(k, d, &k_head[size_t{t} * d]);
        for (uint32_t i = 0; i < d; ++i) v_t[size_t{i} * N + t] = v[i];
      }
    });
    const cpu::WeightView keys{gguf::TensorType::F32,
                               reinterpret_cast<const std::byte*>(k_head.data()), d, N};
    const cpu::WeightView values{gguf::TensorType::F32,
                                 reinterpret_cast<const std::byte*>(v_t.data()), N, d};
    for (uint32_t t0 = 0; t0 < N; t0 += kQueryTile) {
      const uint32_t nq = std::min(kQueryTile, N - t0);
      const cpu::Product qk{&keys, scores.data(), N, false};
      cpu::matmul({&qk, 1}, a.q + size_t{t0} * a.stride + size_t{h} * d, a.stride, nq, pool, ws);
      const uint32_t row_slices = std::max(1u, std::min(nq / 8, pool.size() * 4));
      pool.parallel_for(row_slices, [&](uint32_t s, unsigned) {
        softmax_rows(scores.data(), N, a.scale, nq * s / row_slices, nq * (s + 1) / row_slices);
      });
      const cpu::Product pv{&values, a.out + size_t{t0} * a.out_stride + size_t{h} * d,
                            a.out_stride, false};
      cpu::matmul({&pv, 1}, scores.data(), N, nq, pool, ws);
    }
  }
}

}  // namespace vkllm::vision
