// GPU time of the paged-attention and small kernels on Llama-3-8B shapes (32 query heads, 8 KV
// heads, head_dim 128, KV in blocks of 16: f16, or q8_0 / q4_0 with a fifth argument), measured
// with timestamp queries over repeated dispatches separated by barriers, as in a real step.
// Counters: achieved KV (or tensor) bandwidth in GB/s.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "engine/kv/kv_layout.h"
#include "engine/vulkan/attention.h"
#include "engine/vulkan/context.h"
#include "engine/vulkan/ops.h"

namespace {

using namespace vkllm;

vk::Context& context() {
  static vk::Context ctx;
  return ctx;
}

// Records `reps` copies of `body` with barriers in between and returns seconds per copy.
template <typename F>
double gpu_seconds(int reps, F&& body) {
  vk::CommandRecorder rec(context().device());
  rec.begin();
  body(rec);  // warm-up (and pipeline creation outside the timed range)
  rec.barrier();
  rec.timestamp("start");
  for (int i = 0; i < reps; ++i) {
    body(rec);
    rec.barrier();
  }
  rec.timestamp("end");
  rec.submit_and_wait();
  auto t = rec.timings();
  return t.size() == 2 ? t[1].ms * 1e-3 / reps : NAN;
}

template <typename T>
vk::BufferSlice fill_random(vk::Arena& arena, size_t n, std::mt19937& gen) {
  std::vector<T> v(n);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  for (auto& x : v) {
    if constexpr (std::is_same_v<T, uint16_t>) {
      _Float16 h = static_cast<_Float16>(d(gen));
      std::memcpy(&x, &h, 2);
    } else {
      x = d(gen);
    }
  }
  vk::BufferSlice s = arena.allocate(std::max<size_t>(n * sizeof(T), 16));
  vk::upload(context().device(), s, std::as_bytes(std::span<const T>(v)));
  return s;
}

// Args: sequences, context length, query tokens per sequence, splits (0: suggested), and
// optionally the cache type (0 f16, 1 q8_0, 2 q4_0; its random f16 halves make finite scales)
// and the decode kernel (0 auto, 1 chunked, 2 tiled).
void BM_PagedAttention(benchmark::State& state) {
  const uint32_t n_seqs = state.range(0), ctx = state.range(1), q_len = state.range(2);
  const uint32_t n_q = 32, n_kv = 8, D = 128, B = 16;
  const kv::CacheType type = state.range(4) == 1   ? kv::CacheType::Q8_0
                             : state.range(4) == 2 ? kv::CacheType::Q4_0
                                                   : kv::CacheType::F16;
  auto& dev = context().device();
  std::mt19937 gen(42);
  const uint32_t blocks_per_seq = (ctx + B - 1) / B;
  const uint32_t num_blocks = n_seqs * blocks_per_seq;
  kv::KvLayout layout{num_blocks, n_kv, B, D, type};
  vk::Arena kv_arena(dev, "kv", 2 * layout.region_bytes() + 4096, vk::MemoryKind::DeviceLocal,
                     layout.region_bytes() + 1024);
  vk::Arena act(dev, "act", 256 << 20);
  vk::BufferSlice kc = fill_random<uint16_t>(kv_arena, layout.region_elements(), gen);
  vk::BufferSlice vc = fill_random<uint16_t>(kv_arena, layout.region_elements(), gen);
  std::vector<uint32_t> ids(num_blocks);
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), gen);
  std::vector<kv::BatchSequence> seqs;
  for (uint32_t s = 0; s < n_seqs; ++s)
    seqs.push_back(
        {std::span<const uint32_t>(ids).subspan(s * blocks_per_seq, blocks_per_seq), q_len, ctx});
  kv::BatchMeta meta = kv::build_batch_meta(seqs, B);
  vk::BufferSlice dmeta = act.allocate(meta.words.size() * 4);
  vk::upload(dev, dmeta, std::span<const uint32_t>(meta.words));
  vk::BufferSlice q = fill_random<float>(act, size_t(meta.n_tokens) * n_q * D, gen);
  vk::BufferSlice out = act.allocate(size_t(meta.n_tokens) * n_q * D * 4);
  uint32_t splits = state.range(3);
  const uint32_t cus = dev.caps().compute_units ? dev.caps().compute_units : 16;
  if (splits == 0) splits = vk::ops::attention_suggested_splits(ctx, meta.n_tokens, n_kv, cus);
  vk::BufferSlice scratch =
      act.allocate(vk::ops::attention_scratch_bytes(splits, meta.n_tokens, n_q, D));
  vk::ops::AttentionArgs a{.q = {q, 0, 0},
                           .k_cache = {kc, n_kv, B, type},
                           .v_cache = {vc, n_kv, B, type},
                           .batch = {dmeta, meta.n_tokens, meta.n_seqs},
                           .max_q_len = q_len,
                           .out = {out, 0, 0},
                           .n_q_heads = n_q,
                           .head_dim = D,
                           .scale = 1.f / std::sqrt(float(D)),
                           .softcap = 0.f,
                           .window = 0,
                           .n_splits = splits,
                           .scratch = scratch};
  a.max_kv_len = ctx;
  a.decode_kernel = state.range(5) == 1   ? vk::ops::DecodeKernel::Chunked
                    : state.range(5) == 2 ? vk::ops::DecodeKernel::Tiled
                                          : vk::ops::DecodeKernel::Auto;
  double sec = 0;
  for (auto _ : state) {
    sec = gpu_seconds(
        10, [&](vk::CommandRecorder& rec) { vk::ops::attention(rec, context().pipelines(), a); });
    state.SetIterationTime(sec);
  }
  const double kv_bytes = 2.0 * n_seqs * ctx * n_kv * layout.row_words() * 4;
  state.counters["splits"] = splits;
  state.counters["KV_GB/s"] = kv_bytes / sec * 1e-9;
  state.counters["us"] = sec * 1e6;
}
BENCHMARK(BM_PagedAttention)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond)
    ->Args({1, 64, 1, 0, 0, 0})
    ->Args({1, 128, 1, 0, 0, 0})
    ->Args({1, 128, 1, 1, 0, 0})
    ->Args({1, 256, 1, 0, 0, 0})
    ->Args({1, 512, 1, 0, 0, 0})
    ->Args({1, 4096, 1, 1, 0, 0})
    ->Args({1, 4096, 1, 0, 0, 0})
    ->Args({16, 4096, 1, 0, 0, 0})
    ->Args({64, 1024, 1, 0, 0, 0})
    ->Args({64, 4096, 1, 0, 0, 0})
    ->Args({1, 512, 512, 1, 0, 0})
    ->Iterations(3);
// Short-context decode: one sequence, by split count (0: suggested).
BENCHMARK(BM_PagedAttention)
    ->Name("BM_PagedAttention/short")
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond)
    ->ArgsProduct({{1}, {64, 128, 256, 512, 1024, 2048}, {1}, {1, 2, 4, 8, 16}, {0}, {0}})
    ->Iterations(3);
// Long-context decode: one sequence at 4k/16k/32k positions, by split count (0: suggested).
BENCHMARK(BM_PagedAttention)
    ->Name("BM_PagedAttention/long")
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond)
    ->ArgsProduct({{1}, {4096, 16384, 32768}, {1}, {0, 16, 64, 128, 256}, {0}, {0}})
    ->Args({8, 16384, 1, 0, 0, 0})
    ->Args({32, 4096, 1, 0, 0, 0})
    ->Iterations(3);
// Quantized caches (issue 39) beside f16: decode after 4k/32k, 64 sequences at 1k/4k, a 512-token
// prefill chunk after 32k.
BENCHMARK(BM_PagedAttention)
    ->Name("BM_PagedAttention/kvtype")
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond)
    ->ArgsProduct({{1}, {4096, 32768}, {1}, {0}, {0, 1, 2}, {0}})
    ->ArgsProduct({{64}, {1024, 4096}, {1}, {0}, {0, 1, 2}, {0}})
    ->ArgsProduct({{1}, {32768}, {512}, {0}, {0, 1, 2}, {0}})
    ->Iterations(3);
// The same 512 workgroups of two 32-position tiles each (8 KV heads x splits x sequences), from
// one sequence or several: a step's grid, not its work, told apart.
BENCHMARK(BM_PagedAttention)
    ->Name("BM_PagedAttention/seqs")
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond)
    ->Args({1, 4096, 1, 64, 0, 2})
    ->Args({2, 2048, 1, 32, 0, 2})
    ->Args({8, 512, 1, 8, 0, 2})
    ->Args({64, 64, 1, 1, 0, 2})
    ->Args({1, 4096, 1, 64, 0, 2})
    ->Args({8, 4096, 1, 8, 0, 2})
    ->Args({8, 4096, 1, 64, 0, 2})
    ->Args({1, 32768, 1, 64, 0, 2})
    ->Iterations(5);
// Decode kernels on long contexts and many sequences, f16 and q8_0: chunked against tiled.
BENCHMARK(BM_PagedAttention)
    ->Name("BM_PagedAttention/kernels")
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond)
    ->ArgsProduct({{1}, {32768}, {1}, {0}, {0, 1}, {1, 2}})
    ->ArgsProduct({{64}, {4096}, {1}, {0, 4}, {0, 1}, {1, 2}})
    ->Iterations(3);
// Speculative verification: one sequence's last token and 7 drafts (8 queries) by context and
// kernel, beside 8 sequences decoding one token each (the same rows of queries).
BENCHMARK(BM_PagedAttention)
    ->Name("BM_PagedAttention/verify")
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond)
    ->ArgsProduct({{1}, {128, 512, 2048, 8192}, {8}, {0, 1}, {0}, {0, 1, 2}})
    ->ArgsProduct({{8}, {128, 512, 2048, 8192}, {1}, {0}, {0}, {0}})
    ->Iterations(3);

// RMSNorm of one 4096 row (decode), RoPE of 32+8 heads, argmax over a 128256 vocabulary.
void BM_SmallKernels(benchmark::State& state) {
  auto& dev = context().device();
  auto& pc = context().pipelines();
  std::mt19937 gen(7);
  vk::Arena act(dev, "act", 64 << 20);
  const uint32_t which = state.range(0), rows = state.range(1);
  vk::BufferSlice x = fill_random<float>(act, 128256 * rows, gen);
  vk::BufferSlice w = fill_random<float>(act, 4096, gen);
  vk::BufferSlice y = act.allocate(128256 * 4 * rows);
  std::vector<uint32_t> table(rows / 16 + 1);
  std::iota(table.begin(), table.end(), 0);
  std::vector<kv::BatchSequence> seqs = {{table, rows, rows}};
  kv::BatchMeta meta = kv::build_batch_meta(seqs);
  vk::BufferSlice dmeta = act.allocate(meta.words.size() * 4);
  vk::upload(dev, dmeta, std::span<const uint32_t>(meta.words));
  vk::BufferSlice scratch = act.allocate(vk::ops::argmax_scratch_bytes(128256, rows));
  double bytes = 0;
  auto body = [&](vk::CommandRecorder& rec) {
    if (which == 0) {
      vk::ops::rms_norm(rec, pc,
                        {.x = x,
                         .residual = {},
                         .weight = w,
                         .y = y,
                         .n = 4096,
                         .n_rows = rows,
                         .x_stride = 0,
                         .y_stride = 0,
                         .eps = 1e-5f});
      bytes = 2.0 * 4096 * 4 * rows;
    } else if (which == 1) {
      vk::ops::RopeParams rp{.head_dim = 128,
                             .n_dims = 128,
                             .neox = false,
                             .freq_base = 500000.f,
                             .freq_scale = 1.f,
                             .freq_factors = {}};
      vk::ops::rope(rec, pc, rp, {dmeta, meta.n_tokens, 1}, {x, 0, 0}, {y, 0, 0}, 40);
      bytes = 2.0 * 40 * 128 * 4 * rows;
    } else if (which == 2) {
      vk::ops::argmax(rec, pc, x, y, 128256, rows, 0, scratch);
      bytes = 128256.0 * 4 * rows;
    } else {
      // The floor of a dependent phase: one small dispatch and its barrier.
      vk::ops::scale(rec, pc, x, y, 64 * rows, 2.f);
      bytes = 2.0 * 64 * 4 * rows;
    }
  };
  double sec = 0;
  for (auto _ : state) {
    sec = gpu_seconds(20, body);
    state.SetIterationTime(sec);
  }
  state.counters["GB/s"] = bytes / sec * 1e-9;
  state.counters["us"] = sec * 1e6;
}
BENCHMARK(BM_SmallKernels)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond)
    ->ArgNames({"kernel(0 norm,1 rope,2 argmax,3 tiny)", "rows"})
    ->Args({0, 1})
    ->Args({0, 64})
    ->Args({1, 1})
    ->Args({1, 64})
    ->Args({2, 1})
    ->Args({2, 64})
    ->Args({3, 1})
    ->Args({3, 64})
    ->Iterations(3);

}  // namespace

BENCHMARK_MAIN();
