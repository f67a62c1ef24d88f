// Qwen3-MoE fixtures (`vkllm dev make-model --arch qwen3moe --shape test`, F16, Q8_0 and Q4_K_M)
// and gpt-oss fixtures (F16 and MXFP4_MOE) on both backends (Vulkan: lavapipe here; the CPU
// backend) against llama.cpp's CPU backend
// on the same files (tests/reference/moe and tests/reference/gptoss: make-model regenerates them
// from the recorded seeds): prompt tokens, last logits and the greedy continuation, by the shared
// references' rules. On Vulkan the prompt takes the grouped expert GEMMs (on a device whose
// grouped threshold is lowered to 32 pairs: the prompt has 46, below the auto threshold), decode
// the indirect matvec; and (one quantized case per family) every step, prompt and decode, on the
// grouped products of the decode kernel.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>

#include "engine/runtime/generator.h"
#include "engine/runtime/host_model.h"
#include "engine/runtime/model.h"
#include "engine/runtime/runner.h"
#include "engine/tokenizer/tokenizer.h"
#include "tests/engine/moe_test_contexts.h"
#include "tests/engine/vk_test_context.h"
#include "tests/reference/model_reference.h"
#include "tests/support/fixture_model.h"
#include "tests/support/param_name.h"

namespace vkllm::runtime {
namespace {

using reference::cosine;
using reference::max_abs_diff;

std::filesystem::path reference_dir(const std::string& topic) {
  return std::filesystem::path(VKLLM_SOURCE_DIR) / "tests" / "reference" / topic;
}

// A case's fixture, made once per test process (quantizing takes a moment).
struct Fixture {
  reference::ModelCase c;
  std::vector<uint8_t> bytes;
  std::optional<gguf::GgufFile> file;
};

// name: "<topic>/<case>".
const Fixture& fixture(const std::string& name) {
  static std::map<std::string, std::unique_ptr<Fixture>> made;
  auto& f = made[name];
  if (!f) {
    const size_t slash = name.find('/');
    f = std::make_unique<Fixture>();
    f->c = reference::load_model_case(reference_dir(name.substr(0, slash)), name.substr(slash + 1));
    f->bytes = reference::model_case_bytes(f->c);
    f->file.emplace(gguf::GgufFile::parse(f->bytes));
  }
  return *f;
}

// VulkanInt8: int8 dot products forced on (as on GPUs that accelerate them), so the decode
// steps' per-pair expert products read the norm's and the GLU's q8 copies.
enum class Way { VulkanGemm, Cpu, VulkanGroupedMatvec, VulkanInt8 };

class MoeVsLlamaCpp : public ::testing::TestWithParam<std::tuple<Way, std::string>> {};

TEST_P(MoeVsLlamaCpp, LogitsAndGreedyContinuationMatchLlamaCpp) {
  const auto [way, name] = GetParam();
  const bool cpu = way == Way::Cpu, groups = way == Way::VulkanGroupedMatvec;
  const bool int8 = way == Way::VulkanInt8;
  if (int8 && !test::vk_context().caps().integer_dot_product)
    GTEST_SKIP() << "no integer dot product";
  const Fixture& f = fixture(name);
  const reference::LlamaCppCase& ref = f.c.expected;
  auto tok = tokenizer::Tokenizer::from_gguf(*f.file);
  EXPECT_EQ(tok->encode(ref.prompt_text, true, true), ref.prompt_tokens) << "prompt tokens";

  std::optional<HostModel> host;
  std::optional<Model> device;
  RunnerOptions opts;
  opts.max_batch_tokens = 64;
  opts.max_seqs = 2;
  opts.max_context = 128;
  opts.kv_budget_bytes = 8u << 20;
  if (int8) opts.int8_dot = vk::Int8Dot::On;
  std::unique_ptr<Runner> runner;
  if (cpu) {
    GgufFileSource source(*f.file);
    host.emplace(*f.file, source);
    runner = std::make_unique<Runner>(*host, opts);
  } else {
    // The grouped expert GEMMs from 32 pairs (auto: max(128, 2 x experts)), so the 23-token
    // prompts take them; or every step on the grouped decode kernel.
    device.emplace(groups ? test::grouped_matvec_context() : test::moe_context(32), *f.file);
    runner = std::make_unique<Runner>(*device, opts);
  }
  Generator gen(*runner);
  const std::vector<float> logits = gen.feed(ref.prompt_tokens);
  // Vulkan: the prompt's one step (23 tokens x 2 of 8 experts: 46 pairs) runs every MoE layer on
  // the grouped expert GEMMs; the greedy steps below (one token) stay on the indirect matvec.
  const uint64_t grouped = runner->moe_grouped_ffns();
  if (!cpu) {
    EXPECT_EQ(grouped, groups ? 0 : device->spec().n_layer) << "MoE layers on the grouped GEMMs";
    // (At least: on a GPU the runner records the next step ahead, while this one runs.)
    if (groups) {
      EXPECT_GE(runner->moe_grouped_matvec_ffns(), device->spec().n_layer)
          << "MoE layers on the grouped decode kernel";
    } else {
      EXPECT_EQ(runner->moe_grouped_matvec_ffns(), 0u) << "MoE layers on the grouped decode kernel";
    }
  }
  ASSERT_EQ(logits.size(), ref.last_logits.size());
  const double diff = max_abs_diff(logits, ref.last_logits);
  const double cos = cosine(logits, ref.last_logits);
  std::printf("%s on %s: cosine %.7f, max abs diff %.4f\n", name.c_str(), cpu ? "cpu" : "vulkan",
              cos, diff);
  EXPECT_GE(cos, ref.min_cosine) << "max abs diff " << diff;

  int32_t next = test::argmax(logits);
  const float tie = reference::near_tie_margin(ref, diff);
  size_t matched = 0;
  for (size_t i = 0; i < ref.greedy_tokens.size(); ++i) {
    if (ref.greedy_margins[i] < tie) break;
    ASSERT_EQ(next, ref.greedy_tokens[i]) << "greedy step " << i;
    next = gen.feed_greedy(next);
    ++matched;
  }
  EXPECT_EQ(runner->moe_grouped_ffns(), grouped) << "decode steps on the grouped GEMMs";
  if (groups) {
    EXPECT_GE(runner->moe_grouped_matvec_ffns(), (matched + 1) * device->spec().n_layer)
        << "decode steps on the grouped decode kernel";
  }
  if (int8) {
    EXPECT_GE(runner->moe_int8_ffns(), matched * device->spec().n_layer)
        << "decode steps' expert products on q8 inputs";
  }
  std::printf("%s on %s: %zu of %zu greedy tokens compared (up to the first near-tie)\n",
              name.c_str(), cpu ? "cpu" : "vulkan", matched, ref.greedy_tokens.size());
}

std::string case_label(const ::testing::TestParamInfo<std::tuple<Way, std::string>>& info) {
  const Way way = std::get<0>(info.param);
  return std::string(way == Way::Cpu                   ? "Cpu_"
                     : way == Way::VulkanGroupedMatvec ? "VulkanGroupedMatvec_"
                     : way == Way::VulkanInt8          ? "VulkanInt8_"
                                                       : "Vulkan_") +
         test::param_name(std::get<1>(info.param));
}

std::vector<std::string> case_names(const std::string& topic) {
  std::vector<std::string> names;
  for (const std::string& n : reference::model_case_names(reference_dir(topic)))
    names.push_back(topic + "/" + n);
  return names;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, MoeVsLlamaCpp,
                         ::testing::Combine(::testing::Values(Way::VulkanGemm, Way::Cpu),
                                            ::testing::ValuesIn(case_names("moe"))),
                         case_label);
INSTANTIATE_TEST_SUITE_P(GptOss, MoeVsLlamaCpp,
                         ::testing::Combine(::testing::Values(Way::VulkanGemm, Way::Cpu),
                                            ::testing::ValuesIn(case_names("gptoss"))),
                         case_label);
INSTANTIATE_TEST_SUITE_P(GroupedMatvec, MoeVsLlamaCpp,
                         ::testing::Combine(::testing::Values(Way::VulkanGroupedMatvec),
                                            ::testing::Values("moe/qwen3moe-q4_k_m",
                                                              "gptoss/gpt-oss-mxfp4_moe")),
                         case_label);
INSTANTIATE_TEST_SUITE_P(Int8Experts, MoeVsLlamaCpp,
                         ::testing::Combine(::testing::Values(Way::VulkanInt8),
                                            ::testing::Values("moe/qwen3moe-q4_k_m",
                                                              "moe/qwen3moe-q8_0")),
                         case_label);

}  // namespace
}  // namespace vkllm::runtime
