// The CPU backend's RoPE, paged KV writes and attention (engine/cpu) against the Vulkan kernels
// (engine/vulkan/ops.h, attention.h) on the same random inputs and batch metadata: a batch that
// decodes and prefills after cached prefixes writes its K/V into a cache both sides start from,
// and both attend over it. The two must agree up to float rounding of the rotation angles; with a
// q8_0 / q4_0 cache, up to a quantization step where that rounding (or the GPU's division) moves
// a value across a rounding boundary.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <numeric>

#include "engine/cpu/attention.h"
#include "engine/cpu/kv_rows.h"
#include "engine/cpu/ops.h"
#include "engine/kv/kv_layout.h"
#include "engine/vulkan/attention.h"
#include "engine/vulkan/ops.h"
#include "tests/engine/kernel_test_support.h"

namespace vkllm::test {
namespace {

using vk::BufferSlice;
namespace ops = vk::ops;

struct Case {
  uint32_t gqa, block_size;
  bool neox;
  float softcap;
  uint32_t window;
  kv::CacheType cache = kv::CacheType::F16;
};

TEST(CpuVulkanCrossCheck, RopeWriteKvAndAttentionAgree) {
  SeededRng rng;
  auto& pc = vk_context().pipelines();
  for (Case c : {Case{4, 16, false, 0.f, 0}, Case{1, 13, true, 25.f, 40},
                 Case{4, 16, false, 0.f, 0, kv::CacheType::Q8_0},
                 Case{2, 16, true, 25.f, 0, kv::CacheType::Q4_0}}) {
    SCOPED_TRACE("gqa=" + std::to_string(c.gqa) + " block=" + std::to_string(c.block_size) +
                 " cache " + std::string(kv::cache_type_name(c.cache)));
    const uint32_t D = 64, n_kv = 2, n_q = n_kv * c.gqa, B = c.block_size;
    // Decode after a long context, a prefill chunk after a cached prefix, a fresh prefill.
    const std::vector<std::pair<uint32_t, uint32_t>> specs = {
        {1, 200 + rng.below(100)}, {21, 60 + rng.below(20)}, {9, 9}};
    uint32_t blocks = 0;
    for (auto [q_len, kv_len] : specs) blocks += (kv_len + B - 1) / B;
    const uint32_t num_blocks = blocks + 3;
    std::vector<uint32_t> pool(num_blocks);
    std::iota(pool.begin(), pool.end(), 0);
    std::shuffle(pool.begin(), pool.end(), rng.gen());
    std::vector<std::vector<uint32_t>> tables;
    std::vector<kv::BatchSequence> seqs;
    size_t next = 0;
    for (auto [q_len, kv_len] : specs) {
      tables.emplace_back(pool.begin() + next, pool.begin() + next + (kv_len + B - 1) / B);
      next += tables.back().size();
    }
    for (size_t i = 0; i < specs.size(); ++i)
      seqs.push_back({tables[i], specs[i].first, specs[i].second});
    kv::BatchMeta meta = kv::build_batch_meta(seqs, B);
    const uint32_t T = meta.n_tokens, S = meta.n_seqs;
    kv::KvLayout layout{num_blocks, n_kv, B, D, c.cache};
    const bool quantized = c.cache != kv::CacheType::F16;

    // The cached prefix (and every unused slot) holds random values on both sides.
    std::vector<uint16_t> kc(layout.region_elements()), vc(kc.size());
    const uint32_t halves = 2 * layout.row_words();
    for (auto* cache : {&kc, &vc})
      for (size_t at = 0; at < cache->size(); at += halves) {
        const std::vector<float> row = random_vector(rng, D);
        cpu::quantize_kv_row(c.cache, row.data(), D, reinterpret_cast<uint32_t*>(&(*cache)[at]));
      }
    auto q = random_vector(rng, size_t(T) * n_q * D, -2.f, 2.f);
    auto k = random_vector(rng, size_t(T) * n_kv * D), v = random_vector(rng, k.size());
    std::vector<float> factors(D / 2);
    for (float& f : factors) f = rng.uniform(1.f, 4.f);
    const float scale = 1.f / std::sqrt(float(D)), base = 10000.f;

    // Vulkan.
    vk::Arena arena(vk_context().device(), "cross-check", 64 << 20);
    BufferSlice dq = to_device(arena, q), dk = to_device(arena, k), dv = to_device(arena, v);
    BufferSlice dkc = to_device(arena, kc), dvc = to_device(arena, vc);
    BufferSlice dmeta = to_device(arena, meta.words), dfac = to_device(arena, factors);
    BufferSlice dqr = device_filled<float>(arena, q.size());
    BufferSlice dout = device_filled<float>(arena, q.size());
    ops::RopeParams vrope{.head_dim = D,
                          .n_dims = D,
                          .neox = c.neox,
                          .freq_base = base,
                          .freq_scale = 1.f,
                          .freq_factors = dfac};
    ops::BatchInfo batch{dmeta, T, S};
    run([&](vk::CommandRecorder& rec) {
      ops::rope(rec, pc, vrope, batch, {dq, 0, 0}, {dqr, 0, 0}, n_q);
      ops::write_kv(rec, pc, &vrope, batch, {dk, 0, 0}, D, {dkc, n_kv, B, c.cache});
      ops::write_kv(rec, pc, nullptr, batch, {dv, 0, 0}, D, {dvc, n_kv, B, c.cache});
      rec.barrier();
      ops::attention(rec, pc,
                     {.q = {dqr, 0, 0},
                      .k_cache = {dkc, n_kv, B, c.cache},
                      .v_cache = {dvc, n_kv, B, c.cache},
                      .batch = batch,
                      .max_q_len = meta.max_q_len,
                      .out = {dout, 0, 0},
                      .n_q_heads = n_q,
                      .head_dim = D,
                      .scale = scale,
                      .softcap = c.softcap,
                      .window = c.window,
                      .n_splits = 1,
                      .scratch = {}});
    });
    auto vk_q = from_device<float>(dqr, q.size());
    auto vk_out = from_device<float>(dout, q.size());
    auto vk_kc = from_device<uint16_t>(dkc, kc.size());
    auto vk_vc = from_device<uint16_t>(dvc, vc.size());

    // CPU, on host copies of the same inputs, each call split over two work ranges.
    cpu::BatchView cbatch{meta.words, T, S};
    cpu::RopeParams crope{.head_dim = D,
                          .n_dims = D,
                          .neox = c.neox,
                          .freq_base = base,
                          .freq_scale = 1.f,
                          .freq_factors = factors.data()};
    std::vector<float> cpu_q(q.size()), cpu_out(q.size(), NAN);
    const uint32_t split = rng.below(T + 1);
    for (auto [lo, hi] : {std::pair{0u, split}, std::pair{split, T}}) {
      cpu::rope(crope, cbatch, {q.data(), 0}, {cpu_q.data(), 0}, n_q, lo, hi);
      cpu::write_kv(&crope, cbatch, {k.data(), 0}, D, {kc.data(), n_kv, B, c.cache}, lo, hi);
      cpu::write_kv(nullptr, cbatch, {v.data(), 0}, D, {vc.data(), n_kv, B, c.cache}, lo, hi);
    }
    cpu::AttentionArgs ca{.q = {cpu_q.data(), 0},
                          .k_cache = kc.data(),
                          .v_cache = vc.data(),
                          .cache_type = c.cache,
                          .n_kv_heads = n_kv,
                          .block_size = B,
                          .batch = cbatch,
                          .out = {cpu_out.data(), 0},
                          .n_q_heads = n_q,
                          .head_dim = D,
                          .scale = scale,
                          .softcap = c.softcap,
                          .window = c.window,
                          .causal = true};
    cpu::attention(ca, 0, cpu::attention_work_units(ca));

    // V is copied: bit-identical caches. K and Q are rotated with float angles on the GPU and
    // double ones here (positions < 300: angle errors ~1e-5): one f16 rounding step apart at most.
    if (quantized) {
      // Row by row: values within one quantization step (the row's scales agree), and nearly
      // every V quant identical (the GPU's 1 / d may differ from the host's in the last bit).
      size_t v_diff = 0;
      std::vector<float> a(D), b(D);
      for (size_t at = 0; at < kc.size(); at += halves) {
        for (const auto* pair : {&vk_kc, &vk_vc}) {
          const bool is_k = pair == &vk_kc;
          const auto& host = is_k ? kc : vc;
          cpu::dequantize_kv_row(c.cache, reinterpret_cast<const uint32_t*>(&(*pair)[at]), D,
                                 a.data());
          cpu::dequantize_kv_row(c.cache, reinterpret_cast<const uint32_t*>(&host[at]), D,
                                 b.data());
          for (uint32_t d = 0; d < D; ++d) {
            float amax = 0.f;
            for (uint32_t i = d / 32 * 32; i < d / 32 * 32 + 32; ++i)
              amax = std::max(amax, std::fabs(b[i]));
            const float step = amax / (c.cache == kv::CacheType::Q8_0 ? 127.f : 7.f);
            ASSERT_NEAR(a[d], b[d], 1.01f * step + 1e-3f * amax)
                << (is_k ? "K" : "V") << " row at " << at << " value " << d;
          }
        }
        for (uint32_t i = 0; i < halves; ++i) v_diff += vk_vc[at + i] != vc[at + i];
      }
      EXPECT_LE(v_diff, vc.size() / 100);
      EXPECT_TRUE(near_all(cpu_q, vk_q, 1e-4, 0));
      // Keys a step apart move scores by up to |q| * step: the outputs agree more loosely.
      EXPECT_TRUE(near_all(cpu_out, vk_out, 2e-2, 2e-2));
      continue;
    }
    EXPECT_EQ(vk_vc, vc);
    for (size_t i = 0; i < kc.size(); ++i) {
      const float a = float(std::bit_cast<_Float16>(vk_kc[i])),
                  b = float(std::bit_cast<_Float16>(kc[i]));
      ASSERT_NEAR(a, b, 1e-3 + 1e-3 * std::fabs(b)) << "K cache element " << i;
    }
    EXPECT_TRUE(near_all(cpu_q, vk_q, 1e-4, 0));
    EXPECT_TRUE(near_all(cpu_out, vk_out, 5e-4, 5e-4));
  }
}

}  // namespace
}  // namespace vkllm::test
