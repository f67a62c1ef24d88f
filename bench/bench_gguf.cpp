// GGUF reader speed: opening a model with a 32000-token vocabulary (the tokenizer's load path)
// should take well under 100 ms.
#include <benchmark/benchmark.h>

#include <string>

#include "engine/gguf/gguf_file.h"

namespace {

const std::string kModel = VKLLM_SHARED_DIR "/testdata/models/ref-llama-f16.gguf";
const std::string kBpeVocab = VKLLM_SHARED_DIR "/testdata/vocab/ggml-vocab-gpt-2.gguf";

void BM_OpenModel(benchmark::State& state) {
  for (auto _ : state) {
    auto f = vkllm::gguf::GgufFile::open(kModel);
    benchmark::DoNotOptimize(f.tensors().size());
  }
}
BENCHMARK(BM_OpenModel)->Unit(benchmark::kMillisecond);

void BM_OpenModelAndReadVocab(benchmark::State& state) {
  for (auto _ : state) {
    auto f = vkllm::gguf::GgufFile::open(kModel);
    auto tokens = f.get_array<std::string>("tokenizer.ggml.tokens");
    auto scores = f.get_array<float>("tokenizer.ggml.scores");
    benchmark::DoNotOptimize(tokens.data());
    benchmark::DoNotOptimize(scores.data());
  }
}
BENCHMARK(BM_OpenModelAndReadVocab)->Unit(benchmark::kMillisecond);

void BM_OpenBpeVocabAndReadMerges(benchmark::State& state) {
  for (auto _ : state) {
    auto f = vkllm::gguf::GgufFile::open(kBpeVocab);
    auto tokens = f.get_array<std::string>("tokenizer.ggml.tokens");
    auto merges = f.get_array<std::string>("tokenizer.ggml.merges");
    benchmark::DoNotOptimize(tokens.data());
    benchmark::DoNotOptimize(merges.data());
  }
}
BENCHMARK(BM_OpenBpeVocabAndReadMerges)->Unit(benchmark::kMillisecond);

}  // namespace
BENCHMARK_MAIN();
