// CPU quantized matmul (engine/cpu/quant_matmul.h) on Llama-3.2-1B shapes: attention output and
// Q (2048x2048), K/V (512x2048), gate/up (8192x2048), down (2048x8192) and the 128256-row output
// head, at n = 1 and 8 tokens (decode) and 512 (prefill; not for the head, whose prefill needs
// only the last token). Arguments: weight type (ggml id), rows, cols, tokens, code path (0
// portable, 1 avx2, 2 avx512, 3 amx; lowered to what the CPU runs). Threads: VKLLM_THREADS, else
// the physical cores. Counters: GFLOP/s (2 * rows * cols * n per call) and GB/s of weights read.
// BM_ParallelForDispatch times one empty parallel_for, the fixed cost a decode step pays ~300
// times per token.
#include <benchmark/benchmark.h>
#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <random>
#include <vector>

#include "engine/cpu/quant_matmul.h"
#include "engine/gguf/quants.h"

namespace {

using namespace vkllm;
using gguf::TensorType;

cpu::ThreadPool& pool() {
  static cpu::ThreadPool p;
  return p;
}

// Weights on 2 MiB pages, as runtime::HostModel places the copies it serves from: with 4 KiB
// pages the decode stream takes a TLB miss every page (measured 1.3x slower on the 1B forward).
template <class T>
struct HugeAlloc {
  using value_type = T;
  HugeAlloc() = default;
  template <class U>
  HugeAlloc(const HugeAlloc<U>&) {}
  T* allocate(size_t n) {
    const size_t a = size_t{2} << 20, bytes = (n * sizeof(T) + a - 1) / a * a;
    void* p = std::aligned_alloc(a, bytes);
    if (!p) throw std::bad_alloc();
    madvise(p, bytes, MADV_HUGEPAGE);  // a hint; may fail
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t) { std::free(p); }
  bool operator==(const HugeAlloc&) const { return true; }
};
using Bytes = std::vector<std::byte, HugeAlloc<std::byte>>;

// A rows x cols weight in `type`: 32 properly quantized random rows, repeated (quantizing the
// 262M-element head row by row would take minutes; the kernels' speed does not depend on the
// values).
Bytes make_weight(TensorType type, uint64_t rows, uint64_t cols) {
  const uint64_t distinct = 32, row_bytes = gguf::row_bytes(type, cols);
  std::mt19937 gen(42);
  std::normal_distribution<float> dist(0.f, 0.02f);
  std::vector<float> src(distinct * cols);
  for (float& v : src) v = dist(gen);
  std::vector<std::byte> seed(distinct * row_bytes);
  gguf::quantize(type, src.data(), seed.data(), src.size(), 0);
  Bytes w(rows * row_bytes);
  for (uint64_t r = 0; r < rows; r += distinct) {
    const uint64_t k = std::min(distinct, rows - r);
    std::memcpy(w.data() + r * row_bytes, seed.data(), k * row_bytes);
  }
  return w;
}

void BM_CpuMatmul(benchmark::State& state) {
  const auto type = static_cast<TensorType>(state.range(0));
  const uint64_t rows = state.range(1), cols = state.range(2);
  const auto n = static_cast<uint32_t>(state.range(3));
  const auto isa = cpu::usable_isa(static_cast<cpu::Isa>(state.range(4)));
  Bytes bytes = make_weight(type, rows, cols);
  cpu::WeightView w{type, bytes.data(), cols, rows};
  std::mt19937 gen(7);
  std::normal_distribution<float> dist(0.f, 1.f);
  std::vector<float> x(n * cols), y(n * rows);
  for (float& v : x) v = dist(gen);
  cpu::MatmulWorkspace ws;
  const cpu::Product p{&w, y.data(), rows, false};
  for (auto _ : state) {
    cpu::matmul(std::span(&p, 1), x.data(), cols, n, pool(), ws, isa);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.SetLabel(std::string(gguf::type_name(type)) + " " + std::string(cpu::isa_name(isa)) +
                 " threads=" + std::to_string(pool().size()));
  using C = benchmark::Counter;
  state.counters["GFLOP/s"] = C(2.0 * rows * cols * n * 1e-9, C::kIsIterationInvariantRate);
  state.counters["weightGB/s"] = C(bytes.size() * 1e-9, C::kIsIterationInvariantRate);
}

void shapes(benchmark::internal::Benchmark* b) {
  const TensorType types[] = {TensorType::Q4_K, TensorType::Q6_K, TensorType::Q8_0, TensorType::F16,
                              TensorType::Q5_K, TensorType::Q4_0, TensorType::MXFP4};
  const int64_t dims[][2] = {{2048, 2048}, {512, 2048}, {8192, 2048}, {2048, 8192}, {128256, 2048}};
  for (int isa : {3, 2, 1, 0}) {
    for (TensorType t : types) {
      // The portable path (dequantize a row, float dots) only for MXFP4: what its kernel gains.
      if (isa == 0 && t != TensorType::MXFP4) continue;
      for (const auto& d : dims) {
        for (int64_t n : {1, 8, 512}) {
          if (d[0] == 128256 && n == 512) continue;
          b->Args({static_cast<int64_t>(t), d[0], d[1], n, isa});
        }
      }
    }
  }
}
BENCHMARK(BM_CpuMatmul)->Apply(shapes)->Unit(benchmark::kMicrosecond)->UseRealTime();

// The matmuls of one Llama-3.2-1B forward (16 layers of Q|K|V, O, gate|up, down, then the
// 128256-row head for the last token), all weights resident at once so decode streams them from
// DRAM as a real model does. Arguments: the file's type mix (0 Q4_K_M: Q4_K with Q6_K V/down in
// half the layers and a Q6_K head, as llama.cpp's Q4_K_M; 1 Q8_0; 2 F16) and the tokens per step
// (1 decode, 512 prefill). Counter: tokens per second of matmul work alone.
struct Layer {
  Bytes q, k, v, o, gate, up, down;
  cpu::WeightView vq, vk, vv, vo, vgate, vup, vdown;
};

struct Model1B {
  std::vector<Layer> layers;
  Bytes head;
  cpu::WeightView vhead;
};

Model1B& model_1b(int mix) {
  static std::unique_ptr<Model1B> cached[3];
  if (!cached[mix]) {
    // Keep at most one model in memory (the F16 one is 2.5 GB).
    for (auto& c : cached) c.reset();
    auto m = std::make_unique<Model1B>();
    const uint64_t d = 2048, kv = 512, ff = 8192, vocab = 128256;
    auto pick = [&](bool more_bits) {
      if (mix == 1) return TensorType::Q8_0;
      if (mix == 2) return TensorType::F16;
      return more_bits ? TensorType::Q6_K : TensorType::Q4_K;
    };
    auto make = [](Bytes& bytes, cpu::WeightView& view, TensorType t, uint64_t rows,
                   uint64_t cols) {
      bytes = make_weight(t, rows, cols);
      view = {t, bytes.data(), cols, rows};
    };
    m->layers.resize(16);
    for (int i = 0; i < 16; ++i) {
      Layer& l = m->layers[i];
      // llama.cpp's Q4_K_M gives V and down more bits in the first and last eighth of the
      // layers and every third one between.
      const bool more = i < 2 || i >= 14 || (i - 2) % 3 == 2;
      make(l.q, l.vq, pick(false), d, d);
      make(l.k, l.vk, pick(false), kv, d);
      make(l.v, l.vv, pick(more), kv, d);
      make(l.o, l.vo, pick(false), d, d);
      make(l.gate, l.vgate, pick(false), ff, d);
      make(l.up, l.vup, pick(false), ff, d);
      make(l.down, l.vdown, pick(more), d, ff);
    }
    make(m->head, m->vhead, pick(true), vocab, d);
    cached[mix] = std::move(m);
  }
  return *cached[mix];
}

void BM_Forward1BMatmuls(benchmark::State& state) {
  const int mix = static_cast<int>(state.range(0));
  const auto n = static_cast<uint32_t>(state.range(1));
  Model1B& m = model_1b(mix);
  const uint64_t d = 2048, kv = 512, ff = 8192, vocab = 128256;
  std::mt19937 gen(7);
  std::normal_distribution<float> dist(0.f, 1.f);
  std::vector<float> x(n * d), qkv(n * (d + 2 * kv)), gu(n * 2 * ff), y(n * d), logits(vocab);
  for (float& v : x) v = dist(gen);
  std::vector<float> act(n * ff);
  for (float& v : act) v = dist(gen);
  cpu::MatmulWorkspace ws;
  for (auto _ : state) {
    for (const Layer& l : m.layers) {
      const cpu::Product attn[] = {{&l.vq, qkv.data(), d + 2 * kv, false},
                                   {&l.vk, qkv.data() + d, d + 2 * kv, false},
                                   {&l.vv, qkv.data() + d + kv, d + 2 * kv, false}};
      cpu::matmul(attn, x.data(), d, n, pool(), ws);
      const cpu::Product o{&l.vo, y.data(), d, true};
      cpu::matmul(std::span(&o, 1), x.data(), d, n, pool(), ws);
      const cpu::Product ffn[] = {{&l.vgate, gu.data(), 2 * ff, false},
                                  {&l.vup, gu.data() + ff, 2 * ff, false}};
      cpu::matmul(ffn, x.data(), d, n, pool(), ws);
      const cpu::Product down{&l.vdown, y.data(), d, true};
      cpu::matmul(std::span(&down, 1), act.data(), ff, n, pool(), ws);
    }
    const cpu::Product head{&m.vhead, logits.data(), vocab, false};
    cpu::matmul(std::span(&head, 1), x.data() + (n - 1) * d, d, 1, pool(), ws);
    benchmark::DoNotOptimize(logits.data());
  }
  const char* names[] = {"Q4_K_M", "Q8_0", "F16"};
  state.SetLabel(std::string(names[mix]) + " threads=" + std::to_string(pool().size()));
  state.counters["tok/s"] = benchmark::Counter(n, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Forward1BMatmuls)
    ->ArgsProduct({{0, 1, 2}, {1, 8, 512}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_ParallelForDispatch(benchmark::State& state) {
  const auto tasks = static_cast<uint32_t>(state.range(0));
  for (auto _ : state) {
    pool().parallel_for(tasks, [](uint32_t t, unsigned) { benchmark::DoNotOptimize(t); });
  }
  state.SetLabel("threads=" + std::to_string(pool().size()));
}
BENCHMARK(BM_ParallelForDispatch)->Arg(2)->Arg(16)->UseRealTime();

}  // namespace
BENCHMARK_MAIN();
