// Paged attention on the CPU (engine/cpu/attention.h) on every code path this machine runs,
// against a double-precision scalar reference over the same f16 cache: several sequences of
// different lengths per batch, shuffled block tables, GQA, sliding window, soft-capping, sinks,
// decode after a long context and prefill chunks after a cached prefix, the units split over
// ranges.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "engine/cpu/attention.h"
#include "engine/kv/kv_layout.h"
#include "tests/support/paged_attention_reference.h"
#include "tests/unit/cpu/cpu_test_support.h"

namespace vkllm::cpu::test {
namespace {

using ::vkllm::test::SeqSpec;

struct Config {
  uint32_t head_dim = 64;
  uint32_t n_kv_heads = 2;
  uint32_t gqa = 1;
  uint32_t block_size = 16;
  float softcap = 0.f;
  uint32_t window = 0;
  bool causal = true;
  kv::CacheType cache = kv::CacheType::F16;
  bool sinks = false;     // a random sink logit per query head (gpt-oss)
  uint32_t chunk = 0;     // Llama 4's chunked attention
  bool open_span = true;  // false: the open spans ignored (Gemma 4's global layers)
  std::string describe() const {
    return std::string(open_span ? "" : "spans ignored ") + "head_dim=" + std::to_string(head_dim) +
           " gqa=" + std::to_string(gqa) + " block=" + std::to_string(block_size) +
           " softcap=" + std::to_string(softcap) + " window=" + std::to_string(window) +
           " causal=" + std::to_string(causal) + " cache " +
           std::string(kv::cache_type_name(cache)) + (sinks ? " sinks" : "") +
           " chunk=" + std::to_string(chunk);
  }
};

void check_attention(SeededRng& rng, const Config& c, const std::vector<SeqSpec>& specs) {
  SCOPED_TRACE(c.describe());
  const uint32_t D = c.head_dim, B = c.block_size, n_kv = c.n_kv_heads, n_q = n_kv * c.gqa;

  // Random f16 contents everywhere, unused slots too (they must not leak into results).
  const vkllm::test::PagedBatch batch =
      vkllm::test::random_paged_batch(rng.gen(), specs, n_kv, B, D, c.cache);
  const kv::BatchMeta& meta = batch.meta;
  const uint32_t T = meta.n_tokens;
  const uint32_t q_stride = n_q * D + 4;  // padded rows
  auto q = rng.vec(size_t(T) * q_stride, -2.f, 2.f);
  const float scale = 1.f / std::sqrt(float(D));
  // Sinks from well below to well above the scores, so some heads give them most of the weight.
  const std::vector<float> sinks = rng.vec(n_q, -3.f, 6.f);
  const float* sink = c.sinks ? sinks.data() : nullptr;

  // A layer that ignores the open spans attends as if the sequences had none.
  std::vector<SeqSpec> ref_specs = specs;
  if (!c.open_span)
    for (SeqSpec& s : ref_specs) s.open_from = kv::kNoOpenSpan;
  const std::vector<double> want = vkllm::test::reference_attention(batch, ref_specs,
                                                                    {.q = q.data(),
                                                                     .q_stride = q_stride,
                                                                     .n_q_heads = n_q,
                                                                     .gqa = c.gqa,
                                                                     .head_dim = D,
                                                                     .scale = scale,
                                                                     .softcap = c.softcap,
                                                                     .window = c.window,
                                                                     .causal = c.causal,
                                                                     .sinks = sink,
                                                                     .chunk = c.chunk});

  for (Isa isa : testable_isas()) {
    SCOPED_TRACE(std::string(isa_name(isa)));
    std::vector<float> out(want.size(), NAN);
    AttentionArgs a{.q = {q.data(), q_stride},
                    .k_cache = batch.k_cache.data(),
                    .v_cache = batch.v_cache.data(),
                    .cache_type = c.cache,
                    .n_kv_heads = n_kv,
                    .block_size = B,
                    .batch = {meta.words, T, meta.n_seqs},
                    .out = {out.data(), 0},
                    .n_q_heads = n_q,
                    .head_dim = D,
                    .scale = scale,
                    .softcap = c.softcap,
                    .window = c.window,
                    .chunk = c.chunk,
                    .causal = c.causal,
                    .open_span = c.open_span,
                    .sinks = sink};
    // The units in three ranges, as a thread pool would hand them out.
    const uint32_t units = attention_work_units(a);
    uint32_t cut[2] = {rng.below(units + 1), rng.below(units + 1)};
    std::sort(cut, cut + 2);
    attention(a, cut[1], units, isa);
    attention(a, 0, cut[0], isa);
    attention(a, cut[0], cut[1], isa);
    EXPECT_TRUE(near_all(out, want, 2e-5, 1e-4));

    // Split-K: slices of every group's positions (some empty for short sequences), then the
    // reduction over tokens in two ranges.
    std::vector<float> split_out(want.size(), NAN);
    a.out = {split_out.data(), 0};
    a.kv_splits = 2 + rng.below(4);
    std::vector<float> partials(attention_partials_floats(a), NAN);
    a.partials = partials.data();
    const uint32_t split_units = attention_work_units(a);
    EXPECT_EQ(split_units, units * a.kv_splits);
    const uint32_t mid = rng.below(split_units + 1);
    attention(a, mid, split_units, isa);
    attention(a, 0, mid, isa);
    const uint32_t tmid = rng.below(T + 1);
    attention_reduce(a, tmid, T);
    attention_reduce(a, 0, tmid);
    EXPECT_TRUE(near_all(split_out, want, 2e-5, 1e-4)) << "kv_splits " << a.kv_splits;
  }
}

// Decode: one query token per sequence at the end of its context (long ones included).
TEST(CpuAttention, DecodeWithGqaSoftcapAndWindow) {
  SeededRng rng;
  std::vector<SeqSpec> specs;
  for (uint32_t len : {1u, 15u, 16u, 17u, 64u, 65u, 100u + rng.below(50), 600u + rng.below(200)})
    specs.push_back({1, len});
  std::shuffle(specs.begin(), specs.end(), rng.gen());
  int i = 0;
  for (uint32_t block : {16u, 13u})
    for (uint32_t gqa : {1u, 4u}) {
      Config c{.head_dim = 64, .gqa = gqa, .block_size = block};
      c.softcap = (i % 2) ? 20.f : 0.f;
      c.window = (i % 3 == 1) ? 70 : 0;
      check_attention(rng, c, specs);
      ++i;
    }
  check_attention(rng, {.head_dim = 128, .gqa = 4, .block_size = 16, .window = 90}, specs);
  check_attention(rng, {.head_dim = 64, .gqa = 4, .block_size = 16, .window = 70, .sinks = true},
                  specs);
}

// Prefill: several query tokens per sequence, causal, from position 0 or after a cached prefix,
// mixed with decoding sequences in the same batch; chunks longer than one query tile.
TEST(CpuAttention, PrefillChunksAfterACachedPrefixMixedWithDecode) {
  SeededRng rng;
  const std::vector<SeqSpec> specs = {
      {15, 15}, {40, 40 + 100 + rng.below(40)}, {1, 33},
      {33, 33}, {5, 31 + rng.below(3)},         {70 + rng.below(10), 200}};
  int i = 0;
  for (uint32_t block : {16u, 7u})
    for (uint32_t gqa : {1u, 4u}) {
      Config c{.head_dim = 64, .gqa = gqa, .block_size = block};
      c.softcap = (i % 2) ? 30.f : 0.f;
      c.window = (i / 2 == 1) ? 50 : 0;
      check_attention(rng, c, specs);
      ++i;
    }
  check_attention(rng, {.head_dim = 64, .gqa = 4, .block_size = 16, .sinks = true}, specs);
  // Head dims that are not a multiple of the vector width take the scalar loops.
  check_attention(rng, {.head_dim = 20, .gqa = 2, .block_size = 16}, specs);
  check_attention(rng, {.head_dim = 72, .gqa = 2, .block_size = 5, .window = 9}, specs);
}

// Llama 4's chunked attention: a query sees only the keys of its own chunk of chunk positions
// (qp - qp % chunk to qp), decoding at chunk boundaries and inside chunks, prefill chunks that
// straddle a boundary after a cached prefix, split and unsplit, the query tiles' shared key range
// starting at the earliest query's chunk.
TEST(CpuAttention, ChunkedAttentionSeesOnlyTheQuerysChunk) {
  SeededRng rng;
  const std::vector<SeqSpec> specs = {{1, 24},  {1, 25}, {1, 90 + rng.below(30)},  {30, 30},
                                      {20, 61}, {5, 48}, {40 + rng.below(10), 130}};
  check_attention(rng, {.head_dim = 64, .gqa = 2, .block_size = 16, .chunk = 24}, specs);
  check_attention(rng, {.head_dim = 72, .gqa = 4, .block_size = 7, .chunk = 10}, specs);
}

TEST(CpuAttention, NonCausalSeesTheWholeSequence) {
  SeededRng rng;
  const std::vector<SeqSpec> specs = {{12, 12}, {1, 1}, {30 + rng.below(10), 40}};
  check_attention(rng, {.head_dim = 64, .gqa = 1, .causal = false}, specs);
  // With a window, as in the Vulkan kernel, a symmetric one: |qp - kp| < window (EmbeddingGemma).
  check_attention(rng, {.head_dim = 64, .gqa = 2, .window = 7, .causal = false}, specs);
}

// A sequence's open span (an image's tokens, llama.cpp's causal-off decode of them): its queries
// also see the later keys up to the sequence's end, the window applying backwards only; the text
// before it in the same chunk, and other sequences, stay causal.
TEST(CpuAttention, OpenSpansSeeTheRestOfTheirSequence) {
  SeededRng rng;
  const std::vector<SeqSpec> specs = {{20, 50, 40}, {1, 33}, {24, 24, 8}, {16, 40, 24}};
  check_attention(rng, {.head_dim = 64, .gqa = 2}, specs);
  check_attention(rng, {.head_dim = 64, .gqa = 2, .window = 12}, specs);
  // Gemma 4's global layers keep the image causal (AttentionArgs::open_span).
  check_attention(rng, {.head_dim = 64, .gqa = 2, .open_span = false}, specs);
}

// q8_0 / q4_0 caches: rows dequantized as they are loaded (one, three and four blocks of 32 a
// row), decode and prefill, with splits.
TEST(CpuAttention, QuantizedCache) {
  SeededRng rng;
  const std::vector<SeqSpec> specs = {{1, 90 + rng.below(40)}, {20, 20}, {6, 50}, {1, 17}};
  for (kv::CacheType type : {kv::CacheType::Q8_0, kv::CacheType::Q4_0})
    for (uint32_t head_dim : {32u, 96u, 128u})
      check_attention(rng, {.head_dim = head_dim, .gqa = 2, .softcap = 20.f, .cache = type}, specs);
}

TEST(CpuAttention, RejectsInconsistentArguments) {
  AttentionArgs a{.n_kv_heads = 2, .n_q_heads = 3, .head_dim = 64};
  EXPECT_THROW(attention_work_units(a), std::invalid_argument);
  a.n_q_heads = 4;
  a.head_dim = 0;
  EXPECT_THROW(attention_work_units(a), std::invalid_argument);
  a.head_dim = 64;
  a.block_size = 0;
  EXPECT_THROW(attention_work_units(a), std::invalid_argument);
  a.block_size = 16;
  a.cache_type = kv::CacheType::Q4_0;
  a.head_dim = 48;  // not whole blocks of 32
  EXPECT_THROW(attention_work_units(a), std::invalid_argument);
  a.cache_type = kv::CacheType::F16;
  a.head_dim = 64;
  a.kv_splits = 3;  // without partials
  EXPECT_THROW(attention_work_units(a), std::invalid_argument);
}

TEST(CpuAttention, SuggestedSplitsFillTheThreadsOnDecodeOnly) {
  std::vector<uint32_t> table(256, 0);
  std::vector<kv::BatchSequence> decode = {{table, 1, 4096}};
  kv::BatchMeta meta = kv::build_batch_meta(decode);
  AttentionArgs a;
  a.n_kv_heads = 8;
  a.n_q_heads = 32;
  a.head_dim = 64;
  a.batch = {meta.words, meta.n_tokens, meta.n_seqs};
  EXPECT_EQ(attention_suggested_splits(a, 4096, 2), 1u);   // 8 units for 2 threads
  EXPECT_EQ(attention_suggested_splits(a, 4096, 16), 4u);  // 32 units for 16 threads
  EXPECT_EQ(attention_suggested_splits(a, 300, 16), 1u);   // too short to split
}

}  // namespace
}  // namespace vkllm::cpu::test
