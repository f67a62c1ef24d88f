// Constrained decoding cost per generated token: TokenConstraint::mask over the whole vocabulary
// plus accept, replaying a realistic JSON answer, for format "json" and a 5-property schema over
// the Llama 3 (128k) and llama-spm (32k) vocabularies. "warm" is the steady state (the format's
// token mask cache filled by earlier sequences); "cold" compiles the format anew every time, so
// it includes building the cache as the first request with a format does (compile_format keeps
// the recent formats, so later requests with the same one find their cache warm). The counter
// us_per_token is the figure to compare with a batch-1 decode step (bench/results/HISTORY.md,
// NVIDIA H200 2026-11-22: ~2 ms for 1B, ~6.5 ms for 8B). VKLLM_SHARED_DIR in the environment
// overrides where testdata/ is (for runs on other machines).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <random>

#include "engine/gguf/gguf_file.h"
#include "engine/sampling/compiled_format.h"
#include "engine/sampling/json_schema_compiler.h"
#include "engine/sampling/token_constraint.h"
#include "engine/tokenizer/llama3_vocab.h"
#include "engine/tokenizer/tokenizer.h"

namespace {

using vkllm::sampling::TokenConstraint;
using vkllm::tokenizer::Tokenizer;

std::filesystem::path testdata() {
  const char* env = std::getenv("VKLLM_SHARED_DIR");
  return std::filesystem::path(env ? env : VKLLM_SHARED_DIR) / "testdata";
}

struct Vocab {
  std::unique_ptr<Tokenizer> tok;
  std::shared_ptr<const vkllm::sampling::VocabularyIndex> index;
};

const Vocab& vocab(const std::string& name) {
  static std::map<std::string, Vocab> cache;
  Vocab& v = cache[name];
  if (!v.tok) {
    if (name == "llama3") {
      const auto dir = testdata() / "vocab" / "llama3.2";
      v.tok = Tokenizer::from_gguf(vkllm::gguf::GgufFile::parse(
          vkllm::tokenizer::build_llama3_vocab_gguf(dir / "encoder.json", dir / "vocab.bpe")));
    } else {
      v.tok = Tokenizer::from_gguf(
          vkllm::gguf::GgufFile::open(testdata() / "vocab" / ("ggml-vocab-" + name + ".gguf")));
    }
    v.index = vkllm::sampling::build_vocabulary_index(*v.tok);
  }
  return v;
}

const char* kAnswer =
    R"({"name": "Alice Smith", "age": 31, "email": "alice.smith@example.com", "tags": ["admin", "on-call", "europe"], "active": true})";

const char* kSchema = R"({"type": "object", "properties": {
  "name": {"type": "string", "maxLength": 64},
  "age": {"type": "integer", "minimum": 0, "maximum": 150},
  "email": {"type": "string", "format": "email"},
  "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 8},
  "active": {"type": "boolean"}},
  "required": ["name", "age", "email", "tags", "active"]})";

nlohmann::ordered_json format_of(const std::string& format) {
  return format == "json" ? nlohmann::ordered_json("json") : nlohmann::ordered_json::parse(kSchema);
}

// One answer: mask + accept per token, then end-of-generation.
void replay(const std::shared_ptr<const vkllm::sampling::CompiledFormat>& format, const Vocab& v,
            const std::vector<int32_t>& ids, std::vector<float>& logits) {
  TokenConstraint c(format, v.index);
  for (int32_t id : ids) {
    c.mask(logits);
    if (!c.accept(id)) throw std::runtime_error("the answer does not fit the format");
  }
  c.mask(logits);
  if (!c.accept(v.tok->eos())) throw std::runtime_error("end not allowed at the end");
}

void BM_Mask(benchmark::State& state, const std::string& vocab_name, const std::string& format,
             bool warm) {
  const Vocab& v = vocab(vocab_name);
  const auto ids = v.tok->encode(kAnswer, false, false);
  std::vector<float> logits(static_cast<size_t>(v.tok->vocab_size()));
  std::mt19937 rng(1);
  std::normal_distribution<float> d(0.0f, 2.0f);
  for (auto& x : logits) x = d(rng);
  auto compiled = vkllm::sampling::compile_format_ordered(format_of(format));
  if (warm) replay(compiled, v, ids, logits);
  for (auto _ : state) {
    if (!warm) {  // not through compile_format, which hands back the cached one
      compiled = std::make_shared<const vkllm::sampling::CompiledFormat>(
          vkllm::sampling::compile_json_grammar(format_of(format)));
    }
    replay(compiled, v, ids, logits);
    benchmark::DoNotOptimize(logits.data());
  }
  const double tokens = static_cast<double>(ids.size() + 1);
  state.counters["tokens"] = tokens;
  state.counters["us_per_token"] = benchmark::Counter(
      tokens / 1e6, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

void BM_Compile(benchmark::State& state, const std::string& format) {
  for (auto _ : state) {
    auto compiled = vkllm::sampling::compile_json_grammar(format_of(format));
    benchmark::DoNotOptimize(compiled.nodes.data());
  }
}

void BM_VocabularyIndex(benchmark::State& state, const std::string& vocab_name) {
  const Vocab& v = vocab(vocab_name);
  for (auto _ : state) {
    auto index = vkllm::sampling::build_vocabulary_index(*v.tok);
    benchmark::DoNotOptimize(index.get());
  }
}

BENCHMARK_CAPTURE(BM_Mask, llama3_json_warm, std::string("llama3"), std::string("json"), true)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Mask, llama3_schema_warm, std::string("llama3"), std::string("schema"), true)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Mask, spm_json_warm, std::string("llama-spm"), std::string("json"), true)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Mask, spm_schema_warm, std::string("llama-spm"), std::string("schema"), true)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Mask, llama3_json_cold, std::string("llama3"), std::string("json"), false)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Mask, llama3_schema_cold, std::string("llama3"), std::string("schema"), false)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Mask, spm_schema_cold, std::string("llama-spm"), std::string("schema"), false)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Compile, json, std::string("json"))->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Compile, schema, std::string("schema"))->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_VocabularyIndex, llama3, std::string("llama3"))->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
