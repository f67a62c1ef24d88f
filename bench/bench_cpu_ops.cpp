// CPU paged attention (engine/cpu/attention.h) on Llama-3.2-1B shapes: 32 query heads, 8 KV
// heads, head_dim 64, f16 KV in blocks of 16 with a shuffled block table; decode at contexts 512
// and 4096 and a 512-token prefill chunk, on a cpu::ThreadPool (one unit per task). Arguments:
// context (decode) or chunk length (prefill), the code path (0 portable, 1 avx2, 2 avx512;
// lowered to what the CPU runs) and the threads (1: CPU time is the kernel's cost even on a
// loaded machine; 2: the target configuration). Then RMSNorm, SwiGLU and RoPE per code path.
// Counters: KV bytes read per second (decode) and query tokens per second.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "engine/cpu/attention.h"
#include "engine/cpu/ops.h"
#include "engine/cpu/thread_pool.h"
#include "engine/kv/kv_layout.h"

namespace {

using namespace vkllm;

constexpr uint32_t kQHeads = 32, kKvHeads = 8, kHeadDim = 64, kBlock = 16;

struct Fixture {
  std::vector<uint16_t> k, v;
  std::vector<uint32_t> table;
  kv::BatchMeta meta;
  std::vector<float> q, out;

  Fixture(uint32_t q_len, uint32_t kv_len) {
    std::mt19937 gen(42);
    std::uniform_real_distribution<float> d(-1.f, 1.f);
    const uint32_t blocks = (kv_len + kBlock - 1) / kBlock;
    table.resize(blocks);
    std::iota(table.begin(), table.end(), 0);
    std::shuffle(table.begin(), table.end(), gen);
    k.resize(size_t(blocks) * kKvHeads * kBlock * kHeadDim);
    v.resize(k.size());
    for (auto* c : {&k, &v})
      for (auto& x : *c) {
        _Float16 h = static_cast<_Float16>(d(gen));
        std::memcpy(&x, &h, 2);
      }
    std::vector<kv::BatchSequence> seqs = {{table, q_len, kv_len}};
    meta = kv::build_batch_meta(seqs, kBlock);
    q.resize(size_t(q_len) * kQHeads * kHeadDim);
    for (auto& x : q) x = d(gen);
    out.resize(q.size());
  }

  cpu::AttentionArgs args() {
    return {.q = {q.data(), 0},
            .k_cache = k.data(),
            .v_cache = v.data(),
            .n_kv_heads = kKvHeads,
            .block_size = kBlock,
            .batch = {meta.words, meta.n_tokens, meta.n_seqs},
            .out = {out.data(), 0},
            .n_q_heads = kQHeads,
            .head_dim = kHeadDim,
            .scale = 0.125f,
            .softcap = 0.f,
            .window = 0,
            .causal = true};
  }
};

void run_attention(benchmark::State& state, uint32_t q_len, uint32_t kv_len) {
  const auto isa = static_cast<cpu::Isa>(state.range(1));
  Fixture f(q_len, kv_len);
  const cpu::AttentionArgs a = f.args();
  const uint32_t units = cpu::attention_work_units(a);
  const auto threads = static_cast<unsigned>(state.range(2));
  cpu::ThreadPool pool(threads);
  for (auto _ : state) {
    pool.parallel_for(units, [&](uint32_t u, unsigned) { cpu::attention(a, u, u + 1, isa); });
    benchmark::ClobberMemory();
  }
  state.SetLabel(std::string(cpu::isa_name(cpu::usable_isa(isa))) + ", " + std::to_string(threads) +
                 " thread(s)");
  state.counters["q_tok/s"] =
      benchmark::Counter(double(q_len), benchmark::Counter::kIsIterationInvariantRate);
  if (q_len == 1)
    state.counters["KV_GB/s"] =
        benchmark::Counter(double(kv_len) * kKvHeads * kHeadDim * 2 * 2 * 1e-9,
                           benchmark::Counter::kIsIterationInvariantRate);
}

void BM_CpuAttentionDecode(benchmark::State& state) {
  run_attention(state, 1, static_cast<uint32_t>(state.range(0)));
}
void BM_CpuAttentionPrefill(benchmark::State& state) {
  const auto n = static_cast<uint32_t>(state.range(0));
  run_attention(state, n, n);
}

BENCHMARK(BM_CpuAttentionDecode)
    ->ArgsProduct({{512, 4096}, {0, 1, 2}, {1, 2}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK(BM_CpuAttentionPrefill)
    ->ArgsProduct({{512}, {0, 1, 2}, {1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The row kernels on one thread over a 512-token prefill's rows (n_embd 2048, n_ff 8192):
// elements per second per code path.
void BM_CpuRmsNorm(benchmark::State& state) {
  const auto isa = static_cast<cpu::Isa>(state.range(0));
  const uint32_t n = 2048, rows = 512;
  std::vector<float> x(size_t(n) * rows, 0.5f), w(n, 1.1f), y(x.size());
  cpu::RmsNormArgs a{.x = x.data(), .weight = w.data(), .y = y.data(), .n = n};
  for (auto _ : state) {
    cpu::rms_norm(a, 0, rows, isa);
    benchmark::ClobberMemory();
  }
  state.SetLabel(std::string(cpu::isa_name(cpu::usable_isa(isa))));
  state.counters["elem/s"] =
      benchmark::Counter(double(n) * rows, benchmark::Counter::kIsIterationInvariantRate);
}
void BM_CpuGluSilu(benchmark::State& state) {
  const auto isa = static_cast<cpu::Isa>(state.range(0));
  const uint32_t n = 8192, rows = 64;
  std::vector<float> fused(size_t(2) * n * rows, 0.3f), out(size_t(n) * rows);
  cpu::GluArgs a{.gate = fused.data(),
                 .up = fused.data() + n,
                 .out = out.data(),
                 .n = n,
                 .gate_stride = 2 * n,
                 .up_stride = 2 * n};
  for (auto _ : state) {
    cpu::glu(a, 0, rows, isa);
    benchmark::ClobberMemory();
  }
  state.SetLabel(std::string(cpu::isa_name(cpu::usable_isa(isa))));
  state.counters["elem/s"] =
      benchmark::Counter(double(n) * rows, benchmark::Counter::kIsIterationInvariantRate);
}
void BM_CpuRopeQ(benchmark::State& state) {
  const auto isa = static_cast<cpu::Isa>(state.range(0));
  const uint32_t T = 512;
  std::vector<uint32_t> table(T / kBlock, 0);
  std::vector<kv::BatchSequence> seqs = {{table, T, T}};
  kv::BatchMeta meta = kv::build_batch_meta(seqs, kBlock);
  std::vector<float> q(size_t(T) * kQHeads * kHeadDim, 0.7f);
  cpu::RopeParams p{.head_dim = kHeadDim, .freq_base = 500000.f};
  const cpu::BatchView batch{meta.words, meta.n_tokens, meta.n_seqs};
  for (auto _ : state) {
    cpu::rope(p, batch, {q.data(), 0}, {q.data(), 0}, kQHeads, 0, T, isa);
    benchmark::ClobberMemory();
  }
  state.SetLabel(std::string(cpu::isa_name(cpu::usable_isa(isa))));
  state.counters["elem/s"] =
      benchmark::Counter(double(q.size()), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_CpuRmsNorm)->DenseRange(0, 2)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_CpuGluSilu)->DenseRange(0, 2)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_CpuRopeQ)->DenseRange(0, 2)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
