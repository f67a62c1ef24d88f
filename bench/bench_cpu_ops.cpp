// CPU paged attention (engine/cpu/attention.h) on Llama-3.2-1B shapes: 32 query heads, 8 KV
// heads, head_dim 64, f16 KV in blocks of 16 with a shuffled block table; decode at contexts 512
// and 4096 and a 512-token prefill chunk, on 2 threads that claim units dynamically (as the
// backend's pool does). Arguments: context (decode) or chunk length (prefill), and the code path
// (0 portable, 1 avx2, 2 avx512; lowered to what the CPU runs). Counters: KV bytes read per
// second (decode) and query tokens per second.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <thread>
#include <vector>

#include "engine/cpu/attention.h"
#include "engine/kv/kv_layout.h"

namespace {

using namespace vkllm;

constexpr uint32_t kQHeads = 32, kKvHeads = 8, kHeadDim = 64, kBlock = 16;

// A second thread that runs `job` alongside the caller, once per run() call.
class TwoThreads {
 public:
  TwoThreads() : sync_(2), worker_([this](std::stop_token st) { loop(st); }) {}
  ~TwoThreads() {
    worker_.request_stop();
    sync_.arrive_and_wait();
  }
  void run(const std::function<void()>& job) {
    job_ = &job;
    sync_.arrive_and_wait();  // start
    job();
    sync_.arrive_and_wait();  // both done
  }

 private:
  void loop(std::stop_token st) {
    for (;;) {
      sync_.arrive_and_wait();
      if (st.stop_requested()) return;
      (*job_)();
      sync_.arrive_and_wait();
    }
  }
  std::barrier<> sync_;
  const std::function<void()>* job_ = nullptr;
  std::jthread worker_;
};

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
  TwoThreads threads;
  std::atomic<uint32_t> next{0};
  const std::function<void()> job = [&] {
    for (uint32_t u; (u = next.fetch_add(1)) < units;) cpu::attention(a, u, u + 1, isa);
  };
  for (auto _ : state) {
    next = 0;
    threads.run(job);
    benchmark::ClobberMemory();
  }
  state.SetLabel(std::string(cpu::isa_name(cpu::usable_isa(isa))) + ", 2 threads");
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
    ->ArgsProduct({{512, 4096}, {0, 1, 2}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK(BM_CpuAttentionPrefill)
    ->ArgsProduct({{512}, {0, 1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
