// Encoding throughput on War and Peace (3.2 MB of English) with the SentencePiece vocabulary of
// Llama 2 (llama-spm) and two byte-level BPE vocabularies (GPT-2, and Llama 3 built from
// encoder.json + vocab.bpe), plus decoding. Reports bytes of text per second.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include "engine/gguf/gguf_file.h"
#include "engine/tokenizer/llama3_vocab.h"
#include "engine/tokenizer/tokenizer.h"

namespace {

using vkllm::tokenizer::Tokenizer;

const std::filesystem::path kTestData = std::filesystem::path(VKLLM_SHARED_DIR) / "testdata";

const std::string& book() {
  static const std::string text = [] {
    std::ifstream in(kTestData / "text" / "war-and-peace.txt", std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }();
  return text;
}

const Tokenizer& tokenizer(const std::string& name) {
  static std::map<std::string, std::unique_ptr<Tokenizer>> cache;
  auto& slot = cache[name];
  if (!slot) {
    if (name == "llama-bpe") {
      const auto dir = kTestData / "vocab" / "llama3.2";
      const auto image =
          vkllm::tokenizer::build_llama3_vocab_gguf(dir / "encoder.json", dir / "vocab.bpe");
      slot = Tokenizer::from_gguf(vkllm::gguf::GgufFile::parse(image));
    } else {
      slot = Tokenizer::from_gguf(
          vkllm::gguf::GgufFile::open(kTestData / "vocab" / ("ggml-vocab-" + name + ".gguf")));
    }
  }
  return *slot;
}

void BM_Encode(benchmark::State& state, const std::string& name) {
  const Tokenizer& tok = tokenizer(name);
  const std::string& text = book();
  size_t n_tokens = 0;
  for (auto _ : state) {
    auto ids = tok.encode(text, true, false);
    n_tokens = ids.size();
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  state.counters["tokens"] = static_cast<double>(n_tokens);
}

void BM_Decode(benchmark::State& state, const std::string& name) {
  const Tokenizer& tok = tokenizer(name);
  const auto ids = tok.encode(book(), true, false);
  for (auto _ : state) {
    auto text = tok.decode(ids);
    benchmark::DoNotOptimize(text.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * book().size()));
}

BENCHMARK_CAPTURE(BM_Encode, llama_spm, std::string("llama-spm"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Encode, gpt2_bpe, std::string("gpt-2"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Encode, llama3_bpe, std::string("llama-bpe"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Decode, llama_spm, std::string("llama-spm"))->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
