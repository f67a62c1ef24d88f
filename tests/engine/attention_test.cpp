// Paged attention (prefill and decode, split-K, GQA, softcap, sliding window) against a scalar
// reference over the same f16 cache contents.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "engine/kv/kv_layout.h"
#include "engine/vulkan/attention.h"
#include "engine/vulkan/matmul_ops.h"
#include "tests/engine/kernel_test_support.h"
#include "tests/support/paged_attention_reference.h"

namespace vkllm::test {
namespace {

using vk::BufferSlice;
namespace ops = vk::ops;

struct Config {
  uint32_t head_dim = 64;
  uint32_t n_kv_heads = 2;
  uint32_t gqa = 1;
  uint32_t block_size = 16;
  float softcap = 0.f;
  uint32_t window = 0;
  uint32_t n_splits = 1;
  bool causal = true;
  bool tensor_cores = true;  // false: the scalar kernel even where tensor cores would run
  bool f16 = false;          // ask for the f16 copy of the output instead of the q8 one
  // Scores that rise along the context (by ~22 over 1000 positions), so that a row's maximum
  // keeps moving as the tiles go by: the tensor-core kernel's softmax must rescale what it summed.
  bool rising_scores = false;
  ops::DecodeKernel decode = ops::DecodeKernel::Auto;
  uint32_t head_groups = 0;  // chunked decode kernel: workgroups per KV head (0: from the grid)
  kv::CacheType cache = kv::CacheType::F16;
  bool int8_scores = true;  // q8_0 caches on the tiled kernel: int8 dot-product scores
  uint32_t max_kv_len = 0;  // the context the step claims (kernel choice only; 0: not given)
  bool sinks = false;       // a random logit per query head in each softmax's denominator (gpt-oss)
  uint32_t chunk = 0;       // Llama 4's chunked attention
  bool open_span = true;    // false: the open spans ignored (Gemma 4's global layers)
  std::string describe() const {
    const char* kernels[] = {"", " chunked", " tiled"};
    return "head_dim=" + std::to_string(head_dim) + " gqa=" + std::to_string(gqa) +
           " block=" + std::to_string(block_size) + " softcap=" + std::to_string(softcap) +
           " window=" + std::to_string(window) + " splits=" + std::to_string(n_splits) +
           (causal ? "" : " non-causal") + (tensor_cores ? "" : " scalar") + (f16 ? " f16" : "") +
           (rising_scores ? " rising" : "") + kernels[static_cast<int>(decode)] +
           (head_groups ? " head_groups=" + std::to_string(head_groups) : "") + " cache " +
           std::string(kv::cache_type_name(cache)) + (sinks ? " sinks" : "") +
           (open_span ? "" : " spans ignored") + " chunk=" + std::to_string(chunk) +
           (int8_scores ? "" : " f16 scores");
  }
};

// Returns whether the tensor-core kernel ran.
bool check_attention(SeededRng& rng, const Config& c, const std::vector<SeqSpec>& specs) {
  SCOPED_TRACE(c.describe());
  auto& pc = vk_context().pipelines();
  vk::Arena arena(vk_context().device(), "attention test", 64 << 20);
  const uint32_t D = c.head_dim, B = c.block_size, n_kv = c.n_kv_heads, n_q = n_kv * c.gqa;

  // Random f16 cache contents everywhere (unused slots too: they must not leak into results).
  PagedBatch batch = random_paged_batch(rng.gen(), specs, n_kv, B, D, c.cache);
  const kv::BatchMeta& meta = batch.meta;
  const uint32_t T = meta.n_tokens;
  auto q = random_vector(rng, size_t(T) * n_q * D);
  if (c.rising_scores) {
    // Dimension 0 of every query is 1 and of the key at position kp is kp / 4 (both exact in
    // f16), the rest stays random.
    for (size_t s = 0; s < specs.size(); ++s)
      for (uint32_t kp = 0; kp < specs[s].kv_len; ++kp)
        for (uint32_t g = 0; g < n_kv; ++g)
          batch.k_cache[batch.layout.element(batch.tables[s][kp / B], g, kp % B, 0)] =
              f16_bits(float(kp) / 4.f);
    for (size_t i = 0; i < q.size(); i += D) q[i] = 1.f;
  }
  BufferSlice dq = to_device(arena, q), dk = to_device(arena, batch.k_cache),
              dv = to_device(arena, batch.v_cache);
  BufferSlice dmeta = to_device(arena, meta.words);
  // Sinks around the scores' range (|q.k| * scale is about 1 here), so that they matter.
  std::vector<float> sinks;
  if (c.sinks) {
    sinks = random_vector(rng, n_q);
    for (float& s : sinks) s *= 3.f;
  }
  BufferSlice dsinks = c.sinks ? to_device(arena, sinks) : BufferSlice{};
  BufferSlice out = device_filled<float>(arena, q.size());
  BufferSlice scratch = arena.allocate(ops::attention_scratch_bytes(c.n_splits, T, n_q, D) + 16);
  // The q8 copy of the output (from the split reduction, or the kernel itself without splits),
  // poisoned first: every byte must be written.
  const uint64_t q8_bytes = vk::q8_activation_bytes(n_q * D, T);
  BufferSlice q8 = arena.allocate(q8_bytes), q8_want = arena.allocate(q8_bytes);
  BufferSlice f16 = arena.allocate(q.size() * 2 + 16);
  const float scale = 1.f / std::sqrt(float(D));
  bool wrote_q8 = false, wrote_f16 = false, tensor_cores = false;
  run([&](vk::CommandRecorder& rec) {
    rec.fill(q8, 0xDEADBEEFu);
    rec.fill(f16, 0xFFFFFFFFu);  // NaN halves: every one must be written
    rec.barrier();
    const ops::AttentionArgs args{.q = {dq, 0, 0},
                                  .k_cache = {dk, n_kv, B, c.cache},
                                  .v_cache = {dv, n_kv, B, c.cache},
                                  .batch = {dmeta, T, meta.n_seqs},
                                  .max_q_len = meta.max_q_len,
                                  .max_kv_len = c.max_kv_len,
                                  .out = {out, 0, 0},
                                  .n_q_heads = n_q,
                                  .head_dim = D,
                                  .scale = scale,
                                  .softcap = c.softcap,
                                  .window = c.window,
                                  .chunk = c.chunk,
                                  .causal = c.causal,
                                  .open_span = c.open_span,
                                  .n_splits = c.n_splits,
                                  .scratch = scratch,
                                  .q8 = c.f16 ? BufferSlice{} : q8,
                                  .f16 = c.f16 ? f16 : BufferSlice{},
                                  .sinks = dsinks,
                                  .tensor_cores = c.tensor_cores,
                                  .int8_scores = c.int8_scores,
                                  .decode_kernel = c.decode,
                                  .head_groups = c.head_groups};
    wrote_q8 = ops::attention_writes_q8(args);
    wrote_f16 = ops::attention_writes_f16(args, vk_context().device().caps());
    tensor_cores = ops::attention_on_tensor_cores(args, vk_context().device().caps());
    ops::attention(rec, pc, args);
  });
  auto got = from_device<float>(out, q.size());
  EXPECT_EQ(wrote_q8, !c.f16 && D % 32 == 0);
  EXPECT_EQ(wrote_f16, c.f16 && D % 32 == 0 && !tensor_cores);
  if (wrote_f16) {
    EXPECT_TRUE(f16_copy_matches(f16, got));
  }
  if (wrote_q8) {
    // Exactly what quantizing the f32 output in its own pass gives.
    vk::MatmulKernels kernels(pc);
    run([&](vk::CommandRecorder& rec) {
      kernels.record_quantize_q8(rec, out, n_q * D, T, 0, q8_want);
    });
    EXPECT_EQ(from_device<uint8_t>(q8, q8_bytes), from_device<uint8_t>(q8_want, q8_bytes));
  }

  // A layer that ignores the open spans attends as if the sequences had none.
  std::vector<SeqSpec> ref_specs = specs;
  if (!c.open_span)
    for (SeqSpec& s : ref_specs) s.open_from = kv::kNoOpenSpan;
  const std::vector<double> ref = reference_attention(batch, ref_specs,
                                                      {.q = q.data(),
                                                       .q_stride = n_q * D,
                                                       .n_q_heads = n_q,
                                                       .gqa = c.gqa,
                                                       .head_dim = D,
                                                       .scale = scale,
                                                       .softcap = c.softcap,
                                                       .window = c.window,
                                                       .causal = c.causal,
                                                       .sinks = c.sinks ? sinks.data() : nullptr,
                                                       .chunk = c.chunk});
  const std::vector<float> want(ref.begin(), ref.end());
  // The tensor-core kernel rounds Q and the softmax weights to f16 (relative 2^-11 each; the
  // outputs are weighted means of values in [-1, 1]).
  // A quantized cache's values are expanded to f16 as the kernels load them (relative 2^-11 on
  // top of the reference's exact dequantized values), or a q8_0 K is scored on the tiled kernel
  // against the queries quantized to q8 blocks (2^-8 of a block's largest value each).
  if (tensor_cores || c.cache != kv::CacheType::F16)
    EXPECT_TRUE(near_all(got, want, 2e-3, 2e-3));
  else
    EXPECT_TRUE(near_all(got, want, 2e-5, 1e-4));
  return tensor_cores;
}

bool device_has_tensor_cores() {
  return vk_context().device().caps().nv_f16_mma_16();
}

// Decode: one query token per sequence at the end of its context.
TEST(PagedAttention, DecodeWithGqaSoftcapWindowAndSplitK) {
  SeededRng rng;
  std::vector<SeqSpec> specs;
  for (uint32_t len : {15u, 16u, 17u, 31u, 32u, 33u, 100u + rng.below(50), 300u + rng.below(200)})
    specs.push_back({1, len});
  std::shuffle(specs.begin(), specs.end(), rng.gen());
  int i = 0;
  for (uint32_t head_dim : {64u, 128u})
    for (uint32_t gqa : {1u, 2u, 4u}) {
      Config c{.head_dim = head_dim, .gqa = gqa};
      c.softcap = (i % 2) ? 20.f : 0.f;
      c.window = (i % 3 == 1) ? 24 : 0;
      c.f16 = i % 2 == 0;  // the f16 copy instead of the q8 one, from the kernel and the reduction
      for (auto kernel : {ops::DecodeKernel::Chunked, ops::DecodeKernel::Tiled}) {
        c.decode = kernel;
        // The chunked kernel with each KV head's query heads in one workgroup, and one apiece.
        for (uint32_t groups : {1u, gqa}) {
          if (kernel == ops::DecodeKernel::Tiled && groups > 1) continue;
          c.head_groups = groups;
          c.n_splits = 1;
          check_attention(rng, c, specs);
          c.n_splits = 3 + rng.below(3);  // split-K path, incl. splits with no tiles for short seqs
          check_attention(rng, c, specs);
        }
        c.head_groups = 0;
      }
      ++i;
    }
}

// The chunked decode kernel's shapes: head dims that are not a multiple of 8 (word loads) or
// whose chunk shrinks to 64 positions (256), GQA ratios up to its limit of 16 and past it (the
// tiled kernel takes over), larger cache blocks, contexts of several chunks with a window that
// crosses chunk boundaries, split and unsplit.
TEST(PagedAttention, DecodeChunkedKernelShapes) {
  SeededRng rng;
  std::vector<SeqSpec> specs = {{1, 1}, {1, 127}, {1, 128}, {1, 129}, {1, 600 + rng.below(200)}};
  std::shuffle(specs.begin(), specs.end(), rng.gen());
  const struct {
    uint32_t head_dim, gqa, block, window;
  } shapes[] = {{20, 2, 16, 0}, {80, 3, 16, 150},   {256, 2, 16, 0},
                {64, 8, 32, 0}, {128, 16, 64, 200}, {64, 32, 16, 0}};
  for (const auto& sh : shapes)
    for (uint32_t splits : {1u, 4u}) {
      Config c{.head_dim = sh.head_dim,
               .n_kv_heads = sh.gqa >= 16 ? 1u : 2u,
               .gqa = sh.gqa,
               .block_size = sh.block,
               .window = sh.window,
               .n_splits = splits};
      c.softcap = splits == 4 ? 25.f : 0.f;
      c.decode = ops::DecodeKernel::Chunked;
      check_attention(rng, c, specs);
      // Query heads split over two workgroups per KV head, where the ratio allows.
      if (sh.gqa % 2 == 0 && sh.gqa <= 16) {
        c.head_groups = 2;
        check_attention(rng, c, specs);
        c.head_groups = 0;
      }
    }
}

// Speculative steps on the chunked decode kernel: sequences bringing a few tokens each (a last
// token and its drafts, up to kDecodeMaxQueryTokens) beside plain decodes, every query seeing the
// keys up to its own position; split and unsplit, a window inside the drafts' span, f16 and q8_0.
TEST(PagedAttention, DraftedTokensOnTheChunkedKernel) {
  SeededRng rng;
  std::vector<SeqSpec> specs = {
      {8, 100 + rng.below(60)}, {1, 40}, {3, 3}, {ops::kDecodeMaxQueryTokens, 300}};
  std::shuffle(specs.begin(), specs.end(), rng.gen());
  for (kv::CacheType cache : {kv::CacheType::F16, kv::CacheType::Q8_0})
    for (uint32_t splits : {1u, 3u}) {
      Config c{.head_dim = 64, .gqa = 4, .window = splits == 3 ? 5u : 0u, .n_splits = splits};
      c.cache = cache;
      c.decode = ops::DecodeKernel::Chunked;
      EXPECT_FALSE(check_attention(rng, c, specs));
    }
  // Past kDecodeMaxContext positions a sequence's 8-16 tokens run as prefill: on the tensor cores
  // where the device has them (f16 cache, unsplit), else the tiled kernel's several tokens a
  // workgroup.
  Config past{.head_dim = 64, .gqa = 4, .max_kv_len = ops::kDecodeMaxContext + 1};
  EXPECT_EQ(check_attention(rng, past, specs), device_has_tensor_cores());
  past.max_kv_len = ops::kDecodeMaxContext;
  EXPECT_FALSE(check_attention(rng, past, specs));
}

// Long contexts split up to 256 ways: the reduction spreads splits over its invocations (more
// splits than invocations, empty splits past a short sequence's tiles, head dims below and above
// the workgroup's width).
TEST(PagedAttention, DecodeWithManySplits) {
  SeededRng rng;
  for (uint32_t head_dim : {64u, 128u, 256u})
    for (uint32_t splits : {37u, 200u, 256u}) {
      // The long sequence fills every split (two tiles of up to 32 positions each, the last one
      // partial); the short one leaves most of its splits empty.
      const std::vector<SeqSpec> specs = {{1, 64 * splits - 1 - rng.below(16)}, {1, 40}};
      Config c{.head_dim = head_dim, .gqa = head_dim == 64 ? 4u : 2u, .n_splits = splits};
      check_attention(rng, c, specs);
    }
}

// Prefill: several query tokens per sequence, causal, from position 0 or after a cached prefix,
// mixed with decoding sequences in the same batch.
TEST(PagedAttention, PrefillChunksMixedWithDecode) {
  SeededRng rng;
  const std::vector<SeqSpec> specs = {
      {15, 15}, {17, 17}, {16, 48}, {1, 33}, {33, 33}, {5, 31 + rng.below(3)}, {1, 16}};
  int i = 0;
  for (uint32_t head_dim : {64u, 128u})
    for (uint32_t gqa : {1u, 2u, 4u}) {
      Config c{.head_dim = head_dim, .gqa = gqa};
      c.softcap = (i % 2) ? 30.f : 0.f;
      c.window = (i % 3 == 2) ? 10 : 0;
      check_attention(rng, c, specs);
      ++i;
    }
  Config split{.head_dim = 64, .gqa = 2, .window = 20, .n_splits = 2};
  check_attention(rng, split, specs);
  // A head dim that is not a multiple of 8 (tiny test models): word-sized cache loads.
  Config narrow{.head_dim = 20, .gqa = 2};
  check_attention(rng, narrow, specs);
  // Gemma 4 E2B's local layers: 8 query heads on each KV head of 256 (on tensor cores where the
  // device has them: 8 query tokens a workgroup).
  Config local256{.head_dim = 256, .n_kv_heads = 1, .gqa = 8};
  check_attention(rng, local256, specs);
  // Heads of 72 (SigLIP's, Qwen3-VL's towers): on tensor cores, where the device has them, as
  // heads of 80 whose padding is zeros and never written out.
  Config heads72{.head_dim = 72, .gqa = 2};
  EXPECT_EQ(check_attention(rng, heads72, specs), device_has_tensor_cores());
}

// Llama 4's chunked attention: a query sees only the keys of its own chunk (qp - qp % chunk to
// qp). Decode at and around chunk boundaries on both decode kernels, split and unsplit; prefill
// chunks straddling a boundary after a cached prefix, mixed with decoding sequences, on the scalar
// kernel and (where the device has it) the tensor-core one.
TEST(PagedAttention, ChunkedAttentionSeesOnlyTheQuerysChunk) {
  SeededRng rng;
  const std::vector<SeqSpec> decode = {{1, 24}, {1, 25}, {1, 47}, {1, 100 + rng.below(40)}};
  for (auto kernel : {ops::DecodeKernel::Chunked, ops::DecodeKernel::Tiled})
    for (uint32_t splits : {1u, 3u})
      check_attention(rng,
                      {.head_dim = 64, .gqa = 2, .n_splits = splits, .decode = kernel, .chunk = 24},
                      decode);
  const std::vector<SeqSpec> prefill = {{30, 30}, {20, 61}, {1, 33}, {40 + rng.below(10), 130}};
  check_attention(rng, {.head_dim = 64, .gqa = 2, .tensor_cores = false, .chunk = 24}, prefill);
  check_attention(rng, {.head_dim = 64, .gqa = 2, .chunk = 16}, prefill);
  check_attention(rng, {.head_dim = 64, .gqa = 2, .n_splits = 2, .chunk = 24}, prefill);
}

// A sequence's open span (an image's tokens): its queries also see the later keys up to the
// sequence's end, the window applying backwards only; the text before it in the same chunk, and
// the other sequences, stay causal. On every kernel the step may take (the tensor-core one where
// the device has it).
TEST(PagedAttention, OpenSpansSeeTheRestOfTheirSequence) {
  SeededRng rng;
  const std::vector<SeqSpec> specs = {{20, 50, 40}, {1, 33}, {24, 24, 8}, {16, 40, 24}};
  check_attention(rng, {.head_dim = 64, .gqa = 2}, specs);
  check_attention(rng, {.head_dim = 64, .gqa = 2, .window = 12, .tensor_cores = false}, specs);
  check_attention(rng, {.head_dim = 64, .gqa = 2, .window = 12, .n_splits = 2}, specs);
  // Gemma 4's global layers keep the image causal (AttentionArgs::open_span).
  check_attention(rng, {.head_dim = 64, .gqa = 2, .open_span = false}, specs);
}

// Heads of 512 (Gemma 4's global layers) run on the tiled kernel, the chunked decode kernel and
// the tensor-core one not taking them: prefill mixed with decode, whose workgroup's query tokens
// shrink to fit shared memory (lavapipe's 32 KiB: one token of 4 query heads), with a window,
// soft-capping and the q8 copy of the output; split decode with the f16 copy.
TEST(PagedAttention, HeadsOf512) {
  SeededRng rng;
  const std::vector<SeqSpec> prefill = {{15, 15}, {17, 40}, {1, 33}, {5, 31 + rng.below(3)}};
  Config c{.head_dim = 512, .n_kv_heads = 1, .gqa = 4, .softcap = 30.f, .window = 10};
  check_attention(rng, c, prefill);
  const std::vector<SeqSpec> decode = {{1, 17}, {1, 100 + rng.below(50)}};
  c.f16 = true;
  c.n_splits = 3;
  c.decode = ops::DecodeKernel::Chunked;  // asked for, but too large for it: the tiled kernel runs
  check_attention(rng, c, decode);
  // Gemma 4 E2B's global layers: 8 query heads on one KV head of 512 (one query token and tiles
  // of 8 positions a workgroup in 48 KiB), where the device has the shared memory for them.
  // (Heads of 384 take the same shape within lavapipe's 32 KiB.)
  {
    Config narrow{.head_dim = 384, .n_kv_heads = 1, .gqa = 8};
    check_attention(rng, narrow, prefill);
  }
  if (ops::attention_unsupported(512, 8, vk_context().device().caps()).empty()) {
    Config e2b{.head_dim = 512, .n_kv_heads = 1, .gqa = 8};
    check_attention(rng, e2b, prefill);
    check_attention(rng, e2b, decode);
  }

  // What a device cannot run is known before any step (the backend refuses such a model at
  // load): Gemma 4 E2B's global layers (8 query heads on one KV head of 512) need 33 KiB.
  vk::DeviceCapabilities caps = vk_context().device().caps();
  caps.max_shared_memory = 32 << 10;  // lavapipe's, and some integrated GPUs'
  EXPECT_NE(ops::attention_unsupported(512, 8, caps).find("shared memory"), std::string::npos);
  EXPECT_EQ(ops::attention_unsupported(512, 4, caps), "");
  EXPECT_EQ(ops::attention_unsupported(256, 16, caps), "");
  EXPECT_NE(ops::attention_unsupported(1024, 1, caps), "");
  EXPECT_NE(ops::attention_unsupported(510, 1, caps), "");
  caps.max_shared_memory = 48 << 10;  // NVIDIA's
  EXPECT_EQ(ops::attention_unsupported(512, 8, caps), "");

  // Heads of 512 split decode finer (16 positions a split, from 32 positions), the others from
  // 257 positions at 64 a split: one sequence of one KV head on 132 compute units.
  EXPECT_EQ(ops::attention_suggested_splits(512, 1, 1, 132, 4, 512), 32u);
  EXPECT_EQ(ops::attention_suggested_splits(100, 1, 1, 132, 4, 512), 6u);
  EXPECT_EQ(ops::attention_suggested_splits(16, 1, 1, 132, 4, 512), 1u);
  EXPECT_EQ(ops::attention_suggested_splits(512, 1, 1, 132, 4, 256), 8u);
  EXPECT_EQ(ops::attention_suggested_splits(256, 1, 1, 132, 4, 128), 1u);
}

// Prefill steps long enough for the tensor-core kernel (on devices with cooperative matrices;
// elsewhere the scalar one runs the same cases): query tiles cut by sequence ends, prefixes
// already cached, decoding sequences in the same step, every GQA ratio that divides 64, head dims
// with and without q8 output, windows, soft-capping and non-causal encoders; then, where the
// tensor-core kernel ran, the scalar one on the same shapes.
TEST(PagedAttention, PrefillOnTensorCores) {
  SeededRng rng;
  const uint32_t whole = 70 + rng.below(10);  // a whole prompt, 2 or 3 query tiles of 64 rows
  const std::vector<SeqSpec> specs = {
      {whole, whole}, {1, 40}, {33, 33 + 64 + rng.below(40)}, {130, 130}, {8, 8}};
  int i = 0;
  for (uint32_t head_dim : {64u, 80u, 128u, 256u})
    for (uint32_t gqa : {1u, 4u, 8u}) {
      // Without tensor cores these cases only repeat the scalar kernel's: three of the twelve
      // (three head dims, every GQA ratio once, with and without soft-capping, one window) keep
      // lavapipe's share of CI short; heads of 256 (Gemma 3, Qwen3.5) are the tensor cores' own.
      if (!device_has_tensor_cores() && i != 1 && i != 5 && i != 6) {
        ++i;
        continue;
      }
      Config c{.head_dim = head_dim, .n_kv_heads = gqa == 8 ? 1u : 2u, .gqa = gqa};
      c.softcap = (i % 2) ? 25.f : 0.f;
      c.window = (i % 3 == 1) ? 40 : 0;
      EXPECT_EQ(check_attention(rng, c, specs), device_has_tensor_cores()) << c.describe();
      // Without tensor cores the first check already ran the scalar kernel on these cases.
      if (device_has_tensor_cores()) {
        c.tensor_cores = false;
        EXPECT_FALSE(check_attention(rng, c, specs));
      }
      ++i;
    }
  Config encoder{.head_dim = 64, .gqa = 2, .causal = false};
  std::vector<SeqSpec> inputs = {{45, 45}, {9, 9}, {120, 120}};
  EXPECT_EQ(check_attention(rng, encoder, inputs), device_has_tensor_cores());
  encoder.window = 7;  // non-causal: a symmetric window, |qp - kp| < 7 (EmbeddingGemma)
  EXPECT_EQ(check_attention(rng, encoder, inputs), device_has_tensor_cores());
  if (device_has_tensor_cores()) {
    encoder.tensor_cores = false;
    EXPECT_FALSE(check_attention(rng, encoder, inputs));
  }
  // Split-K over a long prefix (the partials and their reduction), q8 output from the reduction.
  const std::vector<SeqSpec> long_prefix = {{40, 900 + rng.below(100)}, {20, 300}};
  for (uint32_t splits : {2u, 5u}) {
    Config split{.head_dim = 128, .gqa = 4, .n_splits = splits};
    EXPECT_EQ(check_attention(rng, split, long_prefix), device_has_tensor_cores());
  }
  // Each row's maximum moves over the context (rescaling what the tensor-core kernel summed),
  // with and without splits.
  for (uint32_t splits : {1u, 3u}) {
    Config rising{.head_dim = 128, .gqa = 4, .n_splits = splits, .rising_scores = true};
    EXPECT_EQ(check_attention(rng, rising, long_prefix), device_has_tensor_cores());
    if (device_has_tensor_cores()) {
      rising.tensor_cores = false;
      EXPECT_FALSE(check_attention(rng, rising, long_prefix));
    }
  }
  // GQA 3 does not divide the 64 rows of a workgroup: the scalar kernel.
  Config odd{.head_dim = 64, .n_kv_heads = 2, .gqa = 3};
  EXPECT_FALSE(check_attention(rng, odd, specs));
}

// gpt-oss's attention sinks in every kernel that normalises a row: the tiled and chunked decode
// kernels, unsplit and through the split-K reduction, the scalar prefill kernel and (on devices
// with them) the tensor-core one, with the q8 and the f16 output copies; GQA 2 with a window, as
// gpt-oss-20b's even layers.
TEST(PagedAttention, SinksJoinEverySoftmaxDenominator) {
  SeededRng rng;
  const std::vector<SeqSpec> decode = {{1, 17}, {1, 40 + rng.below(30)}, {1, 150 + rng.below(100)}};
  const std::vector<SeqSpec> prefill = {{70, 70}, {1, 40}, {20, 60}};
  // Full attention with the q8 output copy, then the window with the f16 one.
  for (const bool windowed : {false, true}) {
    Config c{
        .head_dim = 64, .gqa = 2, .window = windowed ? 24u : 0u, .f16 = windowed, .sinks = true};
    for (auto kernel : {ops::DecodeKernel::Chunked, ops::DecodeKernel::Tiled})
      for (const uint32_t splits : {1u, 3u}) {
        c.decode = kernel;
        c.n_splits = splits;
        check_attention(rng, c, decode);
      }
    c.n_splits = 1;
    EXPECT_EQ(check_attention(rng, c, prefill), device_has_tensor_cores());
    c.n_splits = 2;
    check_attention(rng, c, prefill);
  }
}

// Prefill splits: about 16 workgroups per compute unit, each split at least 1024 positions.
TEST(PagedAttention, PrefillSplitsFollowTheGridAndTheContext) {
  // 8B-shaped: 512 tokens after 32k of context, 8 KV heads, GQA 4, 132 SMs: 256 workgroups.
  EXPECT_EQ(ops::attention_prefill_splits(33280, 512, 1, 8, 4, 132), 8u);
  EXPECT_EQ(ops::attention_prefill_splits(4096, 512, 1, 8, 4, 132), 4u);   // 1024 positions each
  EXPECT_EQ(ops::attention_prefill_splits(2047, 512, 1, 8, 4, 132), 1u);   // short context
  EXPECT_EQ(ops::attention_prefill_splits(33280, 512, 8, 8, 4, 132), 1u);  // a full grid
  EXPECT_EQ(ops::attention_prefill_splits(1u << 20, 16, 1, 1, 1, 132), ops::kAttentionMaxSplits);
  // GQA 3 does not divide the tensor-core tile: the scalar kernel's 5 tokens a workgroup, so 824
  // workgroups already and 2 splits (16 tokens a workgroup would have made it 8).
  EXPECT_EQ(ops::attention_prefill_splits(33280, 512, 1, 8, 3, 132), 2u);
}

TEST(PagedAttention, LargerBlockSizes) {
  SeededRng rng;
  const std::vector<SeqSpec> specs = {{1, 65}, {20, 20}, {1, 31}, {3, 130 + rng.below(20)}};
  for (uint32_t block : {32u, 64u}) {
    Config c{.head_dim = 64, .gqa = 2, .block_size = block};
    check_attention(rng, c, specs);
    c.n_splits = 2;
    c.softcap = 15.f;
    check_attention(rng, c, specs);
  }
}

// q8_0 and q4_0 caches (blocks of 32 with an f16 scale each; rows of four blocks, of two (an odd
// word count: q8_0 rows of 64 take 4-byte loads), and of three
// with a padding half) through every kernel: decode (chunked and tiled, with splits), mixed
// prefill on tensor cores (where the device has them) and on the scalar kernel.
TEST(PagedAttention, QuantizedCacheInEveryKernel) {
  SeededRng rng;
  const std::vector<SeqSpec> decode = {{1, 70 + rng.below(40)}, {1, 17}};
  const std::vector<SeqSpec> prefill = {{40, 40}, {1, 30}, {12, 50 + rng.below(20)}};
  for (auto [type, head_dim] : {std::pair{kv::CacheType::Q8_0, 128u},
                                {kv::CacheType::Q8_0, 64u},
                                {kv::CacheType::Q4_0, 96u}}) {
    Config c{.head_dim = head_dim, .gqa = 4, .cache = type};
    c.decode = ops::DecodeKernel::Chunked;
    c.n_splits = 2;
    check_attention(rng, c, decode);
    c.decode = ops::DecodeKernel::Tiled;
    c.n_splits = 1;
    check_attention(rng, c, decode);
    if (type == kv::CacheType::Q8_0) {  // the f16 expansion (devices without int8 dot products)
      c.int8_scores = false;
      check_attention(rng, c, decode);
      c.int8_scores = true;
    }
    c.decode = ops::DecodeKernel::Auto;
    c.softcap = 20.f;
    EXPECT_EQ(check_attention(rng, c, prefill), device_has_tensor_cores());
    c.tensor_cores = false;
    EXPECT_FALSE(check_attention(rng, c, prefill));
  }
}

TEST(PagedAttention, RejectsInconsistentArguments) {
  auto& pc = vk_context().pipelines();
  vk::Arena arena(vk_context().device(), "attention args", 1 << 20);
  BufferSlice b = arena.allocate(4096);
  vk::CommandRecorder rec(vk_context().device());
  rec.begin();
  ops::AttentionArgs a{.q = {b, 0, 0},
                       .k_cache = {b, 2, 16},
                       .v_cache = {b, 2, 16},
                       .batch = {b, 1, 1},
                       .max_q_len = 1,
                       .out = {b, 0, 0},
                       .n_q_heads = 3,
                       .head_dim = 64,
                       .scale = 1.f,
                       .softcap = 0.f,
                       .window = 0,
                       .n_splits = 1,
                       .scratch = {}};
  EXPECT_THROW(ops::attention(rec, pc, a), std::invalid_argument);  // 3 heads over 2 KV heads
  a.n_q_heads = 4;
  a.n_splits = 4;
  EXPECT_THROW(ops::attention(rec, pc, a), std::invalid_argument);  // no scratch
  a.n_splits = 1;
  a.head_dim = 62;
  EXPECT_THROW(ops::attention(rec, pc, a), std::invalid_argument);
  a.head_dim = 48;  // a quantized cache needs whole blocks of 32
  a.k_cache.type = a.v_cache.type = kv::CacheType::Q8_0;
  EXPECT_THROW(ops::attention(rec, pc, a), std::invalid_argument);
  a.head_dim = 64;
  a.v_cache.type = kv::CacheType::Q4_0;  // K and V of different types
  EXPECT_THROW(ops::attention(rec, pc, a), std::invalid_argument);
  rec.submit_and_wait();
}

}  // namespace
}  // namespace vkllm::test
