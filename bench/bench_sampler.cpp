// Cost of choosing one token from one logit row with the sampler chain, at the
// vocabularies of Llama 2 (32000) and Llama 3 (128256). The sampler has accepted 64 tokens, so
// Ollama's default repeat penalty is active as in a real conversation. Time and CPU columns are
// µs per sample (CPU is the one to read on a shared machine).
//
// "peaked" rows look like a language model's: a few clear candidates well above a normal
// background. "flat" rows (normal, no clear candidates) are the worst case for the nucleus
// (top_p) search, which then spans thousands of tokens.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "engine/sampling/sampler.h"

namespace {

using vkllm::sampling::Sampler;
using vkllm::sampling::SamplingParams;

std::vector<float> make_logits(size_t n, bool peaked) {
  std::mt19937 rng(1234);
  std::normal_distribution<float> background(0.0f, peaked ? 1.5f : 3.0f);
  std::vector<float> logits(n);
  for (auto& x : logits) x = background(rng);
  if (peaked) {
    std::uniform_int_distribution<size_t> id(0, n - 1);
    for (int i = 0; i < 16; ++i) logits[id(rng)] = 18.0f - 0.7f * static_cast<float>(i);
  }
  return logits;
}

void BM_Sample(benchmark::State& state, SamplingParams params, bool peaked) {
  const auto n = static_cast<size_t>(state.range(0));
  const std::vector<float> logits = make_logits(n, peaked);
  params.seed = 7;
  Sampler sampler(params);
  std::mt19937 rng(99);
  std::uniform_int_distribution<int32_t> token(0, static_cast<int32_t>(n) - 1);
  for (int i = 0; i < 64; ++i) sampler.accept(token(rng));
  for (auto _ : state) {
    int32_t t = sampler.sample(logits);
    benchmark::DoNotOptimize(t);
  }
}

SamplingParams defaults() {
  return SamplingParams{};
}

SamplingParams top_k_0() {
  SamplingParams p;
  p.top_k = 0;
  return p;
}

SamplingParams greedy() {
  SamplingParams p;
  p.temperature = 0.0f;
  return p;
}

SamplingParams hot_top_p() {
  SamplingParams p;
  p.temperature = 1.5f;
  p.top_p = 0.95f;
  return p;
}

SamplingParams hot_top_p_no_top_k() {
  SamplingParams p = hot_top_p();
  p.top_k = 0;
  return p;
}

SamplingParams min_p_only() {
  SamplingParams p;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.05f;
  return p;
}

void vocabs(benchmark::internal::Benchmark* b) {
  b->Arg(32000)->Arg(128256)->Unit(benchmark::kMicrosecond);
}

}  // namespace

BENCHMARK_CAPTURE(BM_Sample, defaults, defaults(), true)->Apply(vocabs);
BENCHMARK_CAPTURE(BM_Sample, top_k_0, top_k_0(), true)->Apply(vocabs);
BENCHMARK_CAPTURE(BM_Sample, greedy, greedy(), true)->Apply(vocabs);
BENCHMARK_CAPTURE(BM_Sample, temp_1_5_top_p_0_95, hot_top_p(), true)->Apply(vocabs);
BENCHMARK_CAPTURE(BM_Sample, temp_1_5_top_p_0_95_top_k_0, hot_top_p_no_top_k(), true)
    ->Apply(vocabs);
BENCHMARK_CAPTURE(BM_Sample, min_p_0_05_top_k_0, min_p_only(), true)->Apply(vocabs);
BENCHMARK_CAPTURE(BM_Sample, top_k_0_flat, top_k_0(), false)->Apply(vocabs);

BENCHMARK_MAIN();
