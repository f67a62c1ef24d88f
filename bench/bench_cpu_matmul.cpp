// CPU quantized matmul (engine/cpu/quant_matmul.h) on Llama-3.2-1B shapes: attention output and
// Q (2048x2048), K/V (512x2048), gate/up (8192x2048), down (2048x8192) and the 128256-row output
// head, at n = 1 and 8 tokens (decode) and 512 (prefill; not for the head, whose prefill needs
// only the last token). Arguments: weight type (ggml id), rows, cols, tokens, code path (0
// portable, 1 avx2, 2 avx512; lowered to what the CPU runs). Threads: VKLLM_THREADS, else the
// physical cores. Counters: GFLOP/s (2 * rows * cols * n per call) and GB/s of weights read.
// BM_ParallelForDispatch times one empty parallel_for, the fixed cost a decode step pays ~300
// times per token.
#include <benchmark/benchmark.h>

#include <cstring>
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

// A rows x cols weight in `type`: 32 properly quantized random rows, repeated (quantizing the
// 262M-element head row by row would take minutes; the kernels' speed does not depend on the
// values).
std::vector<std::byte> make_weight(TensorType type, uint64_t rows, uint64_t cols) {
  const uint64_t distinct = 32, row_bytes = gguf::row_bytes(type, cols);
  std::mt19937 gen(42);
  std::normal_distribution<float> dist(0.f, 0.02f);
  std::vector<float> src(distinct * cols);
  for (float& v : src) v = dist(gen);
  std::vector<std::byte> seed(distinct * row_bytes);
  gguf::quantize(type, src.data(), seed.data(), src.size(), 0);
  std::vector<std::byte> w(rows * row_bytes);
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
  std::vector<std::byte> bytes = make_weight(type, rows, cols);
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
  const TensorType types[] = {TensorType::Q4_K, TensorType::Q6_K, TensorType::Q8_0,
                              TensorType::F16,  TensorType::Q5_K, TensorType::Q4_0};
  const int64_t dims[][2] = {{2048, 2048}, {512, 2048}, {8192, 2048}, {2048, 8192}, {128256, 2048}};
  for (int isa : {2, 1}) {
    for (TensorType t : types) {
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
