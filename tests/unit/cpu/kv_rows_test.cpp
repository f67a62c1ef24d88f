// The quantized KV cache rows (engine/cpu/kv_rows.h, layout engine/kv/kv_cache_type.h): GGML's
// q8_0 / q4_0 rules on hand-made blocks and random rows (scales, the extreme value exact, errors
// within half a step), and the CPU cache write storing exactly those rows into shuffled blocks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "engine/cpu/kv_rows.h"
#include "engine/cpu/ops.h"
#include "engine/kv/kv_layout.h"
#include "tests/unit/cpu/cpu_test_support.h"

namespace vkllm::cpu::test {
namespace {

using kv::CacheType;

float scale_of(const std::vector<uint32_t>& row, CacheType type, uint32_t head_dim, uint32_t b) {
  const auto* s = reinterpret_cast<const uint16_t*>(row.data() + kv::scale_word(type, head_dim));
  return f16_value(s[b]);
}

TEST(KvRows, SizesFollowGgmlBlocks) {
  // 32 values: 34 bytes (q8_0) and 18 (q4_0) in GGML; here a row's scales share words.
  EXPECT_EQ(kv::row_bytes(CacheType::F16, 128), 256u);
  EXPECT_EQ(kv::row_bytes(CacheType::Q8_0, 128), 136u);  // 4 blocks of 34
  EXPECT_EQ(kv::row_bytes(CacheType::Q4_0, 128), 72u);   // 4 blocks of 18
  EXPECT_EQ(kv::row_bytes(CacheType::Q8_0, 96), 104u);   // 3 blocks and a padding half
  EXPECT_EQ(kv::row_bytes(CacheType::Q4_0, 32), 20u);
  EXPECT_FALSE(kv::cache_type_fits(CacheType::Q8_0, 80));
  EXPECT_TRUE(kv::cache_type_fits(CacheType::F16, 80));
  EXPECT_EQ(kv::parse_cache_type("Q8_0"), CacheType::Q8_0);
  EXPECT_EQ(kv::parse_cache_type(""), CacheType::F16);
  EXPECT_THROW(kv::parse_cache_type("q5_1"), std::invalid_argument);
  std::vector<float> x(80, 1.f);
  std::vector<uint32_t> row(64);
  EXPECT_THROW(quantize_kv_row(CacheType::Q4_0, x.data(), 80, row.data()), std::invalid_argument);
}

TEST(KvRows, HandMadeBlocks) {
  // q8_0: d = max|x| / 127, q = round(x / d) (halves away from zero).
  std::vector<float> x(32);
  for (uint32_t i = 0; i < 32; ++i) x[i] = (float(i) - 16.f) / 16.f;  // -1 .. 0.9375
  std::vector<uint32_t> row(kv::row_words(CacheType::Q8_0, 32));
  quantize_kv_row(CacheType::Q8_0, x.data(), 32, row.data());
  const auto* q = reinterpret_cast<const int8_t*>(row.data());
  EXPECT_EQ(q[0], -127);
  EXPECT_EQ(q[16], 0);
  EXPECT_EQ(q[20], 32);   // 0.25 * 127 = 31.75
  EXPECT_EQ(q[31], 119);  // 0.9375 * 127 = 119.06
  EXPECT_EQ(scale_of(row, CacheType::Q8_0, 32, 0), f16_value(f16_bits(1.f / 127.f)));
  // q4_0: d = (the value of largest magnitude) / -8, q = min(15, trunc(x / d + 8.5)).
  std::fill(x.begin(), x.end(), 0.5f);
  x[3] = -2.f;   // the extreme: d = 0.25, q = 0
  x[4] = 1.99f;  // 7.96 + 8.5 -> 16, clamped to 15
  x[5] = -0.1f;  // -0.4 + 8.5 -> 8
  row.assign(kv::row_words(CacheType::Q4_0, 32), 0);
  quantize_kv_row(CacheType::Q4_0, x.data(), 32, row.data());
  const auto* b = reinterpret_cast<const uint8_t*>(row.data());
  EXPECT_EQ(b[1], 10u | (0u << 4));  // values 2 (0.5 -> 2 + 8.5 -> 10) and 3
  EXPECT_EQ(b[2], 15u | (8u << 4));  // values 4 and 5
  EXPECT_EQ(scale_of(row, CacheType::Q4_0, 32, 0), 0.25f);
  std::vector<float> back(32);
  dequantize_kv_row(CacheType::Q4_0, row.data(), 32, back.data());
  EXPECT_EQ(back[3], -2.f);
  EXPECT_EQ(back[4], 1.75f);
  // An all-zero block: scale 0, every value 0.
  std::fill(x.begin(), x.end(), 0.f);
  for (CacheType t : {CacheType::Q8_0, CacheType::Q4_0}) {
    row.assign(kv::row_words(t, 32), 0xFFFFFFFFu);
    quantize_kv_row(t, x.data(), 32, row.data());
    dequantize_kv_row(t, row.data(), 32, back.data());
    for (float v : back) EXPECT_EQ(v, 0.f);
  }
}

TEST(KvRows, RandomRowsWithinHalfAStep) {
  SeededRng rng;
  for (CacheType t : {CacheType::Q8_0, CacheType::Q4_0})
    for (uint32_t head_dim : {32u, 96u, 256u}) {
      SCOPED_TRACE(std::string(kv::cache_type_name(t)) + " head_dim " + std::to_string(head_dim));
      auto x = rng.vec(head_dim, -3.f, 3.f);
      std::vector<uint32_t> row(kv::row_words(t, head_dim));
      std::vector<float> back(head_dim);
      quantize_kv_row(t, x.data(), head_dim, row.data());
      dequantize_kv_row(t, row.data(), head_dim, back.data());
      for (uint32_t b = 0; b < head_dim / 32; ++b) {
        const float d = std::fabs(scale_of(row, t, head_dim, b));
        float amax = 0.f;
        for (uint32_t i = 32 * b; i < 32 * b + 32; ++i) amax = std::max(amax, std::fabs(x[i]));
        EXPECT_NEAR(d, amax / (t == CacheType::Q8_0 ? 127.f : 8.f), d * 4.9e-4);
        for (uint32_t i = 32 * b; i < 32 * b + 32; ++i) {
          // Half a step, plus the scale's f16 rounding; q4_0 clamps the top of the opposite sign
          // to 7 steps (up to a whole step off).
          const bool clamped = t == CacheType::Q4_0 && std::fabs(x[i]) > 7.4f * d;
          EXPECT_NEAR(back[i], x[i], (clamped ? 1.01f : 0.501f) * d + std::fabs(x[i]) * 4.9e-4)
              << "i=" << i;
        }
      }
    }
}

TEST(KvRows, CpuWriteStoresQuantizedRowsInShuffledBlocks) {
  SeededRng rng;
  for (CacheType t : {CacheType::Q8_0, CacheType::Q4_0}) {
    SCOPED_TRACE(std::string(kv::cache_type_name(t)));
    const uint32_t head_dim = 96, n_kv = 2, block_size = 16, num_blocks = 12;
    std::vector<uint32_t> ids(num_blocks);
    std::iota(ids.begin(), ids.end(), 0);
    std::shuffle(ids.begin(), ids.end(), rng.gen());
    std::vector<uint32_t> tab0(ids.begin(), ids.begin() + 3),
        tab1(ids.begin() + 3, ids.begin() + 8);
    std::vector<kv::BatchSequence> seqs = {{tab0, 17, 17}, {tab1, 1, 40 + rng.below(30)}};
    kv::BatchMeta meta = kv::build_batch_meta(seqs, block_size);
    const uint32_t T = meta.n_tokens;
    kv::KvLayout layout{num_blocks, n_kv, block_size, head_dim, t};
    auto v = rng.vec(size_t(T) * n_kv * head_dim);
    std::vector<uint16_t> vc(layout.region_elements(), 0);
    write_kv(nullptr, {meta.words, T, meta.n_seqs}, {v.data(), 0}, head_dim,
             {vc.data(), n_kv, block_size, t}, 0, T);
    std::vector<bool> written(vc.size(), false);
    const uint32_t halves = 2 * layout.row_words();
    std::vector<uint32_t> want(layout.row_words());
    for (uint32_t tok = 0; tok < T; ++tok) {
      const uint32_t s = meta.words[tok], pos = meta.words[T + tok];
      const auto& table = s == 0 ? tab0 : tab1;
      for (uint32_t h = 0; h < n_kv; ++h) {
        quantize_kv_row(t, v.data() + (size_t(tok) * n_kv + h) * head_dim, head_dim, want.data());
        const uint64_t at = layout.row(table[pos / block_size], h, pos % block_size) * halves;
        ASSERT_EQ(0, std::memcmp(vc.data() + at, want.data(), halves * 2)) << "token " << tok;
        std::fill(written.begin() + at, written.begin() + at + halves, true);
      }
    }
    for (uint64_t e = 0; e < vc.size(); ++e) {
      if (!written[e]) {
        ASSERT_EQ(vc[e], 0) << "stray write at " << e;
      }
    }
  }
}

}  // namespace
}  // namespace vkllm::cpu::test
