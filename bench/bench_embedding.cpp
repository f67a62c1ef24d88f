// Embedding throughput through runtime::Embedder: inputs/s and tokens/s at batch 1, 16 and 64
// (inputs per embed() call, all in one step when they fit), wall time including the upload of
// inputs and the download of pooled vectors.
//
// The model: VKLLM_BENCH_EMBED_MODEL (a GGUF path, e.g. nomic-embed-text), else a random
// make-model fixture of VKLLM_BENCH_EMBED_ARCH (bert, default; nomic-bert) with
// VKLLM_BENCH_EMBED_SHAPE (default 384x6x12x12, all-MiniLM-L6-v2's shape, n_ff 4x n_embd) and the
// BERT WordPiece vocabulary. VKLLM_BENCH_EMBED_TOKENS: tokens per input (default 32).
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"
#include "engine/model/model_maker.h"
#include "engine/runtime/embedder.h"
#include "engine/runtime/model.h"
#include "engine/vulkan/context.h"

namespace {

using namespace vkllm;

std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

struct Setup {
  vk::Context ctx;
  std::vector<uint8_t> bytes;  // the generated fixture, if any
  std::unique_ptr<gguf::GgufFile> file;
  std::unique_ptr<runtime::Model> model;
  std::unique_ptr<runtime::Embedder> embedder;
  uint32_t tokens_per_input = 32;

  Setup() {
    tokens_per_input = static_cast<uint32_t>(std::stoul(env_or("VKLLM_BENCH_EMBED_TOKENS", "32")));
    const std::string path = env_or("VKLLM_BENCH_EMBED_MODEL", "");
    if (!path.empty()) {
      file = std::make_unique<gguf::GgufFile>(gguf::GgufFile::open(path));
    } else {
      const auto vocab = gguf::GgufFile::open(
          (std::filesystem::path(VKLLM_SHARED_DIR) / "testdata/vocab/ggml-vocab-bert-bge.gguf")
              .string());
      model::MakeModelOptions o;
      o.arch = env_or("VKLLM_BENCH_EMBED_ARCH", "bert");
      o.shape = model::parse_model_shape(env_or("VKLLM_BENCH_EMBED_SHAPE", "384x6x12x12"));
      o.shape.n_ff = 4 * o.shape.n_embd;
      o.file_type = model::FileType::F16;
      gguf::GgufWriter w;
      model::build_random_model(o, vocab, w);
      bytes = w.serialize();
      file = std::make_unique<gguf::GgufFile>(gguf::GgufFile::parse(bytes));
    }
    model = std::make_unique<runtime::Model>(ctx, *file);
    embedder = std::make_unique<runtime::Embedder>(
        *model,
        runtime::EmbedderOptions{.max_batch_tokens = 64 * tokens_per_input, .max_inputs = 64});
  }
};

Setup& setup() {
  static Setup s;
  return s;
}

void BM_Embed(benchmark::State& state) {
  Setup& s = setup();
  const auto batch = static_cast<size_t>(state.range(0));
  std::mt19937 gen(42);
  std::uniform_int_distribution<int32_t> tok(1000,
                                             static_cast<int32_t>(s.model->spec().n_vocab) - 1);
  std::vector<std::vector<int32_t>> inputs(batch, std::vector<int32_t>(s.tokens_per_input));
  for (auto& in : inputs) {
    for (auto& t : in) t = tok(gen);
  }
  s.embedder->embed(inputs);  // warm-up: pipelines are created on first use
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(s.embedder->embed(inputs));
    state.SetIterationTime(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  state.counters["inputs/s"] =
      benchmark::Counter(double(batch), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["tokens/s"] = benchmark::Counter(double(batch) * s.tokens_per_input,
                                                  benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(s.model->spec().arch_name + " " + std::to_string(s.tokens_per_input) +
                 " tokens/input");
}
BENCHMARK(BM_Embed)
    ->ArgName("batch")
    ->Arg(1)
    ->Arg(16)
    ->Arg(64)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->MinTime(0.5);

}  // namespace

BENCHMARK_MAIN();
