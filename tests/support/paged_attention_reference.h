// Paged attention in double precision over an f16 or quantized (q8_0, q4_0) KV cache, the
// reference both the Vulkan and the CPU attention kernels are checked against, and the random paged
// batch it runs on: several sequences whose blocks come from a shuffled pool with spare ones, and
// cache contents everywhere (unused slots too, so that a kernel reading them shows).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "engine/cpu/kv_rows.h"
#include "engine/kv/kv_layout.h"
#include "tests/support/f16.h"

namespace vkllm::test {

struct SeqSpec {
  uint32_t q_len, kv_len;
  // Queries at positions >= open_from also see the later keys (an image's tokens; kv_layout.h).
  uint32_t open_from = kv::kNoOpenSpan;
};

struct PagedBatch {
  std::vector<std::vector<uint32_t>> tables;  // per sequence, its blocks in order
  kv::BatchMeta meta;
  kv::KvLayout layout;
  std::vector<uint16_t> k_cache, v_cache;  // f16 bits, or quantized rows (layout.type)

  // The values of row (block, head, slot) of a cache region.
  std::vector<double> row(const std::vector<uint16_t>& cache, uint32_t block, uint32_t head,
                          uint32_t slot) const {
    std::vector<float> f(layout.head_dim);
    const uint64_t at = layout.row(block, head, slot) * layout.row_words() * 2;
    cpu::dequantize_kv_row(layout.type, reinterpret_cast<const uint32_t*>(cache.data() + at),
                           layout.head_dim, f.data());
    return {f.begin(), f.end()};
  }
};

inline PagedBatch random_paged_batch(std::mt19937& gen, const std::vector<SeqSpec>& specs,
                                     uint32_t n_kv_heads, uint32_t block_size, uint32_t head_dim,
                                     kv::CacheType type = kv::CacheType::F16) {
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
    seqs.push_back({p.tables[i], specs[i].q_len, specs[i].kv_len, 0, specs[i].open_from});
  p.meta = kv::build_batch_meta(seqs, B);
  p.layout = kv::KvLayout{num_blocks, n_kv_heads, B, head_dim, type};
  p.k_cache.resize(p.layout.region_elements());
  p.v_cache.resize(p.k_cache.size());
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  if (type == kv::CacheType::F16) {
    for (auto& x : p.k_cache) x = f16_bits(u(gen));
    for (auto& x : p.v_cache) x = f16_bits(u(gen));
    return p;
  }
  // Quantized rows of random values, each block with its own magnitude (so scales differ).
  std::vector<float> f(head_dim);
  const uint32_t halves = 2 * p.layout.row_words();
  for (auto* cache : {&p.k_cache, &p.v_cache}) {
    for (uint64_t at = 0; at < cache->size(); at += halves) {
      for (uint32_t b = 0; b < head_dim; b += kv::kQuantBlock) {
        const float mag = 0.25f + std::abs(u(gen));
        for (uint32_t i = b; i < b + kv::kQuantBlock; ++i) f[i] = mag * u(gen);
      }
      cpu::quantize_kv_row(type, f.data(), head_dim,
                           reinterpret_cast<uint32_t*>(cache->data() + at));
    }
  }
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
  const float* sinks = nullptr;  // n_q_heads logits in each softmax's denominator (gpt-oss)
  uint32_t chunk = 0;  // 0: none; else (causal) only keys from qp - qp % chunk on (Llama 4)
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
        // A query in its sequence's open span sees the later keys whatever the window.
        const bool open = qp >= specs[s].open_from;
        if (kp > qp && (open ? false : a.causal || (a.window && kp - qp >= a.window))) continue;
        if (kp <= qp && a.window && qp - kp >= a.window) continue;
        if (kp <= qp && a.chunk && kp < qp - qp % a.chunk) continue;
        const uint32_t blk = p.tables[s][kp / B];
        const std::vector<double> k = p.row(p.k_cache, blk, g, kp % B);
        double dot = 0;
        for (uint32_t d = 0; d < D; ++d)
          dot += double(a.q[size_t(t) * a.q_stride + h * D + d]) * k[d];
        dot *= a.scale;
        if (a.softcap > 0) dot = a.softcap * std::tanh(dot / a.softcap);
        score[kp] = dot;
        mx = std::max(mx, dot);
      }
      double sum = 0;
      if (a.sinks) {
        mx = std::max(mx, double(a.sinks[h]));
        sum = std::exp(a.sinks[h] - mx);
      }
      std::vector<double> o(D, 0.0);
      for (uint32_t kp = 0; kp < kv_len; ++kp) {
        if (score[kp] == -INFINITY) continue;
        const double e = std::exp(score[kp] - mx);
        sum += e;
        const uint32_t blk = p.tables[s][kp / B];
        const std::vector<double> v = p.row(p.v_cache, blk, g, kp % B);
        for (uint32_t d = 0; d < D; ++d) o[d] += e * v[d];
      }
      for (uint32_t d = 0; d < D; ++d) want[(size_t(t) * a.n_q_heads + h) * D + d] = o[d] / sum;
    }
  }
  return want;
}

}  // namespace vkllm::test
