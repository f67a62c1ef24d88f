// Single-threaded CPU quantize / dequantize throughput per format (elements per second).
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "engine/gguf/quants.h"

namespace {

using vkllm::gguf::TensorType;

constexpr size_t kElements = 256 * 1024;

std::vector<float> normal_data() {
  std::mt19937 rng(1234);
  std::normal_distribution<float> dist(0.0f, 0.02f);
  std::vector<float> x(kElements);
  for (auto& v : x) v = dist(rng);
  return x;
}

void BM_Quantize(benchmark::State& state, TensorType type) {
  const auto x = normal_data();
  std::vector<uint8_t> q(vkllm::gguf::quantized_size(type, kElements));
  for (auto _ : state) {
    vkllm::gguf::quantize(type, x.data(), q.data(), kElements, 1);
    benchmark::DoNotOptimize(q.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kElements));
}

void BM_Dequantize(benchmark::State& state, TensorType type) {
  const auto x = normal_data();
  std::vector<uint8_t> q(vkllm::gguf::quantized_size(type, kElements));
  vkllm::gguf::quantize(type, x.data(), q.data(), kElements, 1);
  std::vector<float> y(kElements);
  for (auto _ : state) {
    vkllm::gguf::dequantize(type, q.data(), y.data(), kElements, 1);
    benchmark::DoNotOptimize(y.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kElements));
}

#define VKLLM_QUANT_BENCH(T)                                                       \
  BENCHMARK_CAPTURE(BM_Quantize, T, TensorType::T)->Unit(benchmark::kMillisecond); \
  BENCHMARK_CAPTURE(BM_Dequantize, T, TensorType::T)->Unit(benchmark::kMillisecond);

VKLLM_QUANT_BENCH(F16)
VKLLM_QUANT_BENCH(BF16)
VKLLM_QUANT_BENCH(Q8_0)
VKLLM_QUANT_BENCH(Q4_0)
VKLLM_QUANT_BENCH(Q5_1)
VKLLM_QUANT_BENCH(Q2_K)
VKLLM_QUANT_BENCH(Q3_K)
VKLLM_QUANT_BENCH(Q4_K)
VKLLM_QUANT_BENCH(Q5_K)
VKLLM_QUANT_BENCH(Q6_K)

}  // namespace

BENCHMARK_MAIN();
