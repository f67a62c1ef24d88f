// Paged attention in double precision over an f16 KV cache, the reference both the Vulkan and the
// CPU attention kernels are checked against, and the random paged batch it runs on: several
// sequences whose blocks come from a shuffled pool with spare ones, and cache contents everywhere
// (unused slots too, so that a kernel reading them shows).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "engine/kv/kv_layout.h"
#include "tests/support/f16.h"

namespace vkllm::test {

struct SeqSpec {
  uint32_t q_len, kv_len;
};

struct PagedBatch {
  std::vector<std::vector<uint32_t>> tables;  // per sequence, its blocks in order
  kv::BatchMeta meta;
  kv::KvLayout layout;
  std::vector<uint16_t> k_cache, v_cache;  // f16 bits
};

inline PagedBatch random_paged_batch(std::mt19937& gen, const std::vector<SeqSpec>& specs,
                                     uint32_t n_kv_heads, uint32_t block_size, uint32_t head_dim) {
  const uint32_t B = block_size;
  uint32_t blocks_needed = 0;
  for (auto& s : specs) blocks_needed += (s.kv_len + B - 1) / B;
  const uint32_t num_blocks = blocks_needed + 5;
  std::vector<uint32_t> pool(num_blocks);
  std::iota(pool.begin(), pool.end(), 0);
  std::shuffle(pool.begin(), pool.end(), gen);
  PagedBatch p;
  size_t next = 0;
  for (auto& s : specs) {
    p.tables.emplace_back(pool.begin() + next, pool.begin() + next + (s.kv_len + B - 1) / B);
    next += p.tables.back().size();
  }
  std::vector<kv::BatchSequence> seqs;
  for (size_t i = 0; i < specs.size(); ++i)
    seqs.push_back({p.tables[i], specs[i].q_len, specs[i].kv_len});
  p.meta = kv::build_batch_meta(seqs, B);
  p.layout = kv::KvLayout{num_blocks, n_kv_heads, B, head_dim};
  p.k_cache.resize(p.layout.region_elements());
  p.v_cache.resize(p.k_cache.size());
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (auto& x : p.k_cache) x = f16_bits(u(gen));
  for (auto& x : p.v_cache) x = f16_bits(u(gen));
  return p;
}

struct ReferenceAttention {
  const float* q;     // token t, head h at q[t * q_stride + h * head_dim]
  uint32_t q_stride;  // floats between tokens
  uint32_t n_q_heads, gqa, head_dim;
  float scale, softcap;  // softcap 0: none
  // 0: none; else keys within `window` positions before the query (not causal: on either side,
  // |qp - kp| < window)
  uint32_t window;
  bool causal = true;
};

// Output [token][q head][head_dim]; a query with no key in reach would divide by zero, so every
// test batch gives each query at least its own position.
inline std::vector<double> reference_attention(const PagedBatch& p,
                                               const std::vector<SeqSpec>& specs,
                                               const ReferenceAttention& a) {
  const uint32_t T = p.meta.n_tokens, D = a.head_dim, B = p.layout.block_size;
  std::vector<double> want(size_t(T) * a.n_q_heads * D);
  for (uint32_t t = 0; t < T; ++t) {
    const uint32_t s = p.meta.words[t], qp = p.meta.words[T + t], kv_len = specs[s].kv_len;
    for (uint32_t h = 0; h < a.n_q_heads; ++h) {
      const uint32_t g = h / a.gqa;
      std::vector<double> score(kv_len, -INFINITY);
      double mx = -INFINITY;
      for (uint32_t kp = 0; kp < kv_len; ++kp) {
        const uint32_t dist = kp > qp ? kp - qp : qp - kp;
        if ((a.causal && kp > qp) || (a.window && dist >= a.window)) continue;
        const uint32_t blk = p.tables[s][kp / B];
        double dot = 0;
        for (uint32_t d = 0; d < D; ++d)
          dot += double(a.q[size_t(t) * a.q_stride + h * D + d]) *
                 f16_value(p.k_cache[p.layout.element(blk, g, kp % B, d)]);
        dot *= a.scale;
        if (a.softcap > 0) dot = a.softcap * std::tanh(dot / a.softcap);
        score[kp] = dot;
        mx = std::max(mx, dot);
      }
      double sum = 0;
      std::vector<double> o(D, 0.0);
      for (uint32_t kp = 0; kp < kv_len; ++kp) {
        if (score[kp] == -INFINITY) continue;
        const double e = std::exp(score[kp] - mx);
        sum += e;
        const uint32_t blk = p.tables[s][kp / B];
        for (uint32_t d = 0; d < D; ++d)
          o[d] += e * f16_value(p.v_cache[p.layout.element(blk, g, kp % B, d)]);
      }
      for (uint32_t d = 0; d < D; ++d) want[(size_t(t) * a.n_q_heads + h) * D + d] = o[d] / sum;
    }
  }
  return want;
}

}  // namespace vkllm::test
