// LoRA adapters merged into the weights at load (engine/runtime/lora_merge.h), on both backends
// (Vulkan: lavapipe here; the CPU backend), against llama.cpp's CPU backend run with --lora on
// the same base and adapter (tests/reference/lora: make-model and make-lora regenerate both from
// the recorded seeds): prompt tokens, last logits and the greedy continuation, by the shared
// references' rules. Also: the adapter really changes the model, and the requantizing merge
// (kept quantized types) is measured against the widening one.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>

#include "engine/model/lora_adapter.h"
#include "engine/runtime/generator.h"
#include "engine/runtime/host_model.h"
#include "engine/runtime/lora_merge.h"
#include "engine/runtime/model.h"
#include "engine/runtime/runner.h"
#include "engine/tokenizer/tokenizer.h"
#include "tests/engine/vk_test_context.h"
#include "tests/reference/lora_reference.h"
#include "tests/reference/model_reference.h"
#include "tests/support/fixture_model.h"
#include "tests/support/param_name.h"

namespace vkllm::runtime {
namespace {

using reference::cosine;
using reference::max_abs_diff;

std::filesystem::path lora_dir() {
  return std::filesystem::path(VKLLM_SOURCE_DIR) / "tests" / "reference" / "lora";
}

enum class Backend { Vulkan, Cpu };

// A case's fixtures, made once per test process (a quantized base takes seconds to quantize).
struct Fixture {
  reference::LoraCase c;
  std::vector<uint8_t> base_bytes, adapter_bytes;
  std::optional<gguf::GgufFile> base;
  std::optional<model::LoraAdapter> adapter;
};

const Fixture& fixture(const std::string& name) {
  static std::map<std::string, std::unique_ptr<Fixture>> made;
  auto& f = made[name];
  if (!f) {
    f = std::make_unique<Fixture>();
    f->c = reference::load_lora_case(lora_dir(), name);
    f->base_bytes = reference::lora_case_base_bytes(f->c);
    f->base.emplace(gguf::GgufFile::parse(f->base_bytes));
    f->adapter_bytes = reference::lora_case_adapter_bytes(f->c, *f->base);
    f->adapter.emplace(model::LoraAdapter::from_bytes(f->adapter_bytes, f->c.scale));
  }
  return *f;
}

// The base with the adapter merged (or without it), loaded for one backend.
struct LoadedModel {
  LoadedModel(const Fixture& f, Backend backend, const LoraMergeOptions* merge) {
    GgufFileSource base_source(*f.base);
    if (merge) header.emplace(lora_merged_header(*f.base, *f.adapter, *merge));
    std::optional<LoraMergedSource> merged;
    if (merge) merged.emplace(*f.base, *header, base_source, *f.adapter, *merge);
    const gguf::GgufFile& h = merge ? *header : *f.base;
    TensorDataSource& source = merged ? static_cast<TensorDataSource&>(*merged) : base_source;
    if (backend == Backend::Cpu) {
      host.emplace(h, source);
    } else {
      device.emplace(test::vk_context(), h, source);
    }
  }
  std::unique_ptr<Runner> runner(const RunnerOptions& opts) {
    return host ? std::make_unique<Runner>(*host, opts) : std::make_unique<Runner>(*device, opts);
  }
  std::optional<gguf::GgufFile> header;
  std::optional<HostModel> host;
  std::optional<Model> device;
};

RunnerOptions small_runner() {
  RunnerOptions opts;
  opts.max_batch_tokens = 64;
  opts.max_seqs = 2;
  opts.max_context = 128;
  opts.kv_budget_bytes = 8u << 20;
  return opts;
}

std::vector<float> prompt_logits(LoadedModel& m, const reference::LlamaCppCase& ref) {
  auto runner = m.runner(small_runner());
  Generator gen(*runner);
  return gen.feed(ref.prompt_tokens);
}

class LoraVsLlamaCpp : public ::testing::TestWithParam<std::tuple<Backend, std::string>> {};

TEST_P(LoraVsLlamaCpp, MergedAdapterMatchesLlamaCppWithLora) {
  const auto [backend, name] = GetParam();
  const Fixture& f = fixture(name);
  const reference::LlamaCppCase& ref = f.c.expected;
  auto tok = tokenizer::Tokenizer::from_gguf(*f.base);
  EXPECT_EQ(tok->encode(ref.prompt_text, true, true), ref.prompt_tokens) << "prompt tokens";

  const LoraMergeOptions merge;
  LoadedModel m(f, backend, &merge);
  auto runner = m.runner(small_runner());
  Generator gen(*runner);
  const std::vector<float> logits = gen.feed(ref.prompt_tokens);
  ASSERT_EQ(logits.size(), ref.last_logits.size());
  const double diff = max_abs_diff(logits, ref.last_logits);
  const double cos = cosine(logits, ref.last_logits);
  std::printf("%s: cosine %.7f, max abs diff %.4f\n", name.c_str(), cos, diff);
  EXPECT_GE(cos, ref.min_cosine) << "max abs diff " << diff;

  int32_t next = test::argmax(logits);
  const float tie = reference::near_tie_margin(ref, diff);
  for (size_t i = 0; i < ref.greedy_tokens.size(); ++i) {
    if (ref.greedy_margins[i] < tie) break;
    ASSERT_EQ(next, ref.greedy_tokens[i]) << "greedy step " << i;
    next = gen.feed_greedy(next);
  }
}

std::string case_label(const ::testing::TestParamInfo<std::tuple<Backend, std::string>>& info) {
  return std::string(std::get<0>(info.param) == Backend::Cpu ? "Cpu_" : "Vulkan_") +
         test::param_name(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, LoraVsLlamaCpp,
    ::testing::Combine(::testing::Values(Backend::Vulkan, Backend::Cpu),
                       ::testing::ValuesIn(reference::model_case_names(lora_dir()))),
    case_label);

// Without the adapter the model is clearly another: a test that the merge happened at all.
TEST(Lora, BaseAloneIsFarFromTheAdaptedReference) {
  const Fixture& f = fixture("lora-llama-f16");
  LoadedModel m(f, Backend::Cpu, nullptr);
  const double cos = cosine(prompt_logits(m, f.c.expected), f.c.expected.last_logits);
  std::printf("base without adapter vs llama.cpp with it: cosine %.5f\n", cos);
  EXPECT_LT(cos, 0.99);
}

// Re-quantizing merged weights keeps the memory of a quantized model but rounds every adapted
// weight anew; widening them to F16 (the default) keeps llama.cpp's fidelity. Prints both.
TEST(Lora, WideningMergeBeatsRequantizingOnQuantizedBases) {
  for (const std::string name : {"lora-llama-q8_0", "lora-llama-q4_k_m"}) {
    const Fixture& f = fixture(name);
    LoraMergeOptions widen, requantize;
    requantize.requantize = true;
    LoadedModel wide(f, Backend::Cpu, &widen), same(f, Backend::Cpu, &requantize);
    const double cos_wide = cosine(prompt_logits(wide, f.c.expected), f.c.expected.last_logits);
    const double cos_same = cosine(prompt_logits(same, f.c.expected), f.c.expected.last_logits);
    std::printf("%s: widened to F16 cosine %.6f, requantized cosine %.6f\n", name.c_str(), cos_wide,
                cos_same);
    EXPECT_GE(cos_wide, f.c.expected.min_cosine);
    EXPECT_GT(cos_wide, cos_same);
  }
}

}  // namespace
}  // namespace vkllm::runtime
