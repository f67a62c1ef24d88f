// The forward pass (Runner) on each backend, Vulkan (lavapipe here) and the CPU, against
// llama.cpp's recorded outputs and against the scalar reference forward, and the paged KV
// cache's guarantees: batching, block boundaries, prefix reuse and eviction never change a
// sequence's logits.
#include "engine/runtime/runner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <tuple>

#include "engine/gguf/gguf_writer.h"
#include "engine/model/model_maker.h"
#include "engine/runtime/generator.h"
#include "engine/runtime/host_model.h"
#include "engine/tokenizer/tokenizer.h"
#include "tests/engine/vk_test_context.h"
#include "tests/reference/llama_cpp_reference.h"
#include "tests/reference/reference_forward.h"
#include "tests/support/param_name.h"
#include "tests/support/seeded.h"

namespace vkllm::runtime {
namespace {

using reference::cosine;
using reference::max_abs_diff;

int32_t argmax(const std::vector<float>& v) {
  return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

enum class Backend { Vulkan, Cpu };

std::string backend_label(const ::testing::TestParamInfo<Backend>& info) {
  return info.param == Backend::Cpu ? "Cpu" : "Vulkan";
}

// A model file loaded for one backend: on the test's Vulkan device, or in host memory (pointing
// into the file's mapping) for the CPU.
struct LoadedModel {
  LoadedModel(const gguf::GgufFile& file, Backend backend) {
    if (backend == Backend::Cpu)
      host.emplace(file);
    else
      device.emplace(test::vk_context(), file);
  }
  const model::ModelSpec& spec() const { return host ? host->spec() : device->spec(); }
  std::unique_ptr<Runner> runner(const RunnerOptions& opts) {
    return host ? std::make_unique<Runner>(*host, opts) : std::make_unique<Runner>(*device, opts);
  }
  std::optional<HostModel> host;
  std::optional<Model> device;
};

void check_against_llama_cpp(const std::string& name, const RunnerOptions& opts,
                             Backend backend = Backend::Vulkan) {
  const auto ref = reference::load_llama_cpp_case(name);
  auto file = gguf::GgufFile::open(ref.model_path);
  auto tok = tokenizer::Tokenizer::from_gguf(file);
  EXPECT_EQ(tok->encode(ref.prompt_text, true, true), ref.prompt_tokens) << "prompt tokens";

  LoadedModel model(file, backend);
  auto runner = model.runner(opts);
  Generator gen(*runner);
  auto logits = gen.feed(ref.prompt_tokens);
  ASSERT_EQ(logits.size(), ref.last_logits.size());
  const double diff = max_abs_diff(logits, ref.last_logits);
  EXPECT_GE(cosine(logits, ref.last_logits), ref.min_cosine) << "max abs diff " << diff;

  int32_t next = argmax(logits);
  const float tie = reference::near_tie_margin(ref, diff);
  for (size_t i = 0; i < ref.greedy_tokens.size(); ++i) {
    if (ref.greedy_margins[i] < tie) break;
    ASSERT_EQ(next, ref.greedy_tokens[i]) << "greedy step " << i;
    next = gen.feed_greedy(next);
  }
}

class RunnerVsLlamaCpp : public ::testing::TestWithParam<std::tuple<Backend, std::string>> {};

TEST_P(RunnerVsLlamaCpp, TokensLogitsAndGreedyContinuationMatch) {
  RunnerOptions opts;
  // Several prefill chunks for the longer prompts, the first through the GEMM (> 64 tokens).
  opts.max_batch_tokens = 128;
  opts.int8_dot = vk::Int8Dot::Off;
  check_against_llama_cpp(std::get<1>(GetParam()), opts, std::get<0>(GetParam()));
}

INSTANTIATE_TEST_SUITE_P(SharedModels, RunnerVsLlamaCpp,
                         ::testing::Combine(::testing::Values(Backend::Vulkan, Backend::Cpu),
                                            ::testing::ValuesIn(reference::llama_cpp_case_names())),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param) == Backend::Cpu ? "Cpu_"
                                                                                      : "Vulkan_") +
                                  test::param_name(std::get<1>(info.param));
                         });

// The CPU kernels' portable code path (what VKLLM_CPU_ISA=scalar forces), whatever this CPU has,
// on one prompt per model: prefill in chunks and the greedy continuation.
class CpuPortablePath : public ::testing::TestWithParam<std::string> {};

TEST_P(CpuPortablePath, MatchesLlamaCpp) {
  RunnerOptions opts;
  opts.max_batch_tokens = 32;
  opts.cpu_isa = cpu::Isa::Portable;
  check_against_llama_cpp(GetParam(), opts, Backend::Cpu);
}

INSTANTIATE_TEST_SUITE_P(SharedModels, CpuPortablePath,
                         ::testing::Values("ref-llama-f16.fox", "ref-llama-q4_k_m.fox",
                                           "ref-llama-q8_0.fox"),
                         test::ParamName());

// The int8-dot decode products (activations quantized to q8 blocks), forced on where the device
// has integer dot products at all, on the quantized models: prefill (matvec-sized chunks) and the
// greedy continuation both go through them.
class RunnerInt8Dot : public ::testing::TestWithParam<std::string> {};

TEST_P(RunnerInt8Dot, QuantizedModelsMatchLlamaCpp) {
  if (!test::vk_context().caps().integer_dot_product) GTEST_SKIP() << "no integer dot product";
  // With and without the RoPE/KV-write epilogue fused into the Q|K|V product.
  for (const bool rope_kv : {false, true}) {
    SCOPED_TRACE(rope_kv ? "fused rope_kv" : "separate rope_kv");
    RunnerOptions opts;
    opts.int8_dot = vk::Int8Dot::On;
    opts.fused_rope_kv = rope_kv;
    check_against_llama_cpp(GetParam(), opts);
  }
}

INSTANTIATE_TEST_SUITE_P(QuantizedModels, RunnerInt8Dot,
                         ::testing::Values("ref-llama-q4_k_m.fox", "ref-llama-q8_0.fox"),
                         test::ParamName());

// A small real-shaped model shared by the paging tests, loaded for one backend.
struct RefModel {
  explicit RefModel(Backend backend) : model(file, backend) {}
  gguf::GgufFile file =
      gguf::GgufFile::open(reference::shared_testdata_dir() / "models/ref-llama-f16.gguf");
  LoadedModel model;
};

RefModel& ref_model(Backend backend) {
  if (backend == Backend::Cpu) {
    static RefModel host(Backend::Cpu);
    return host;
  }
  static RefModel vulkan(Backend::Vulkan);
  return vulkan;
}

class RunnerPaging : public ::testing::TestWithParam<Backend> {};
class RunnerErrors : public ::testing::TestWithParam<Backend> {};

std::vector<int32_t> random_tokens(std::mt19937& rng, size_t n) {
  std::uniform_int_distribution<int32_t> d(3, 31999);
  std::vector<int32_t> v(n);
  for (auto& t : v) t = d(rng);
  return v;
}

using Seeded = test::Seeded<>;

TEST_P(RunnerPaging, MatchesTheScalarReferenceAtBlockBoundaries) {
  Seeded s;
  SCOPED_TRACE("seed " + std::to_string(s.seed));
  auto& m = ref_model(GetParam());
  reference::ReferenceModel ref(m.file);
  RunnerOptions opts;
  opts.max_logits_rows = 40;
  auto runner_ptr = m.model.runner(opts);
  Runner& runner = *runner_ptr;
  for (size_t len : {15u, 16u, 17u, 31u, 32u, 33u}) {
    auto tokens = random_tokens(s.rng, len);
    ref.reset();
    auto want = ref.forward(tokens);
    Generator gen(runner);
    auto got = gen.feed(tokens, /*all_rows=*/true);
    const size_t V = m.model.spec().n_vocab;
    ASSERT_EQ(got.size(), len * V);
    for (size_t i = 0; i < len; ++i) {
      std::span<const float> row(got.data() + i * V, V);
      EXPECT_GE(cosine(row, want[i]), 0.9999) << "length " << len << " row " << i;
    }
  }
}

TEST_P(RunnerPaging, BatchedSequencesOfDifferentLengthsMatchEachAlone) {
  Seeded s;
  SCOPED_TRACE("seed " + std::to_string(s.seed));
  auto& m = ref_model(GetParam());
  auto runner_ptr = m.model.runner(RunnerOptions{});
  Runner& runner = *runner_ptr;
  const std::vector<size_t> lengths = {15, 16, 17, 31, 32, 33, 5};
  std::vector<std::vector<int32_t>> prompts;
  std::vector<std::vector<float>> alone;
  for (size_t len : lengths) {
    prompts.push_back(random_tokens(s.rng, len));
    Generator g(runner);
    alone.push_back(g.feed(prompts.back()));
    // Two decode steps alone, too.
    int32_t t = 7;
    alone.back() = g.feed(std::span(&t, 1));
  }
  // All together: one prefill step with every prompt, then one decode step for all.
  std::vector<kv::BlockTable> tables;
  tables.reserve(lengths.size());
  for (size_t i = 0; i < lengths.size(); ++i)
    tables.emplace_back(runner.pool(), runner.block_size());
  std::vector<SequenceStep> steps;
  for (size_t i = 0; i < lengths.size(); ++i)
    steps.push_back({&tables[i], prompts[i], LogitsWanted::Last});
  runner.step(steps);
  const std::vector<int32_t> seven(1, 7);
  for (size_t i = 0; i < lengths.size(); ++i) steps[i] = {&tables[i], seven, LogitsWanted::Last};
  auto together = runner.step(steps);
  // On GPUs with tensor cores the two runs take different roundings: alone, a 15-token prefill
  // multiplies in the f32 matvec and the 5-token one attends in the scalar kernel; together, the
  // 149-token step multiplies with f16 activations and attends with f16 Q and P. On an H100 the
  // F16 model's logits then differed by 0.0104 (each rounding alone: under 0.01). Elsewhere both
  // runs stay f32.
  const bool f16_paths = GetParam() == Backend::Vulkan && test::vk_context().caps().nv_f16_mma_16();
  const double max_diff = f16_paths ? 2e-2 : 1e-2;
  for (size_t i = 0; i < lengths.size(); ++i) {
    EXPECT_GE(cosine(together.logits[i], alone[i]), 0.99999) << "sequence of " << lengths[i];
    EXPECT_LT(max_abs_diff(together.logits[i], alone[i]), max_diff) << "sequence of " << lengths[i];
    EXPECT_EQ(together.greedy[i], argmax(alone[i]));
  }
}

TEST_P(RunnerPaging, PrefixCacheReuseGivesTheSameLogitsAsRecomputing) {
  Seeded s;
  SCOPED_TRACE("seed " + std::to_string(s.seed));
  auto& m = ref_model(GetParam());
  auto runner_ptr = m.model.runner(RunnerOptions{});
  Runner& runner = *runner_ptr;
  auto shared = random_tokens(s.rng, 40);
  auto tail = random_tokens(s.rng, 9);
  std::vector<int32_t> prompt = shared;
  prompt.insert(prompt.end(), tail.begin(), tail.end());

  std::vector<float> fresh;
  {
    kv::BlockTable first(runner.pool(), runner.block_size());
    SequenceStep st{&first, shared, LogitsWanted::Last};
    runner.step(std::span(&st, 1));
    kv::BlockTable second(runner.pool(), runner.block_size());
    SequenceStep st2{&second, prompt, LogitsWanted::Last};
    fresh = runner.step(std::span(&st2, 1)).logits[0];
  }
  const auto hits_before = runner.pool().stats().prefix_hits;
  kv::BlockTable reuse(runner.pool(), runner.block_size());
  const uint32_t cached = reuse.reuse_prefix(prompt);
  // The second sequence registered all three full blocks of its 49 tokens.
  EXPECT_EQ(cached, 48u);
  EXPECT_EQ(runner.pool().stats().prefix_hits, hits_before + 3);
  SequenceStep st{&reuse, std::span(prompt).subspan(cached), LogitsWanted::Last};
  auto reused = runner.step(std::span(&st, 1)).logits[0];
  // As in BatchedSequencesOfDifferentLengthsMatchEachAlone: on GPUs with tensor cores the fresh
  // 49-token step multiplies with f16 activations and attends with f16 Q and P, the reused
  // 1-token step stays f32 (on an H100 the F16 model's logits then differed by 0.0121).
  const bool f16_paths = GetParam() == Backend::Vulkan && test::vk_context().caps().nv_f16_mma_16();
  EXPECT_GE(cosine(reused, fresh), 0.99999);
  EXPECT_LT(max_abs_diff(reused, fresh), f16_paths ? 2e-2 : 1e-2);
}

TEST_P(RunnerPaging, EvictionUnderPressureNeverCorruptsALiveSequence) {
  Seeded s;
  SCOPED_TRACE("seed " + std::to_string(s.seed));
  auto& m = ref_model(GetParam());
  RunnerOptions opts;
  // Room for 12 blocks of 16 tokens: the live sequence holds 4, churn needs the rest.
  const auto& spec = m.model.spec();
  opts.kv_budget_bytes = 12ull * 2 * spec.n_layer * spec.n_head_kv * 16 * spec.head_dim * 2;
  auto runner_ptr = m.model.runner(opts);
  Runner& runner = *runner_ptr;
  ASSERT_EQ(runner.pool().num_blocks(), 12u);
  auto live_prompt = random_tokens(s.rng, 50);
  kv::BlockTable live(runner.pool(), runner.block_size());
  SequenceStep st{&live, live_prompt, LogitsWanted::None};
  runner.step(std::span(&st, 1));

  // Many short-lived sequences fill and evict the cache around the live one.
  for (int i = 0; i < 6; ++i) {
    kv::BlockTable churn(runner.pool(), runner.block_size());
    auto p = random_tokens(s.rng, 100);
    churn.reuse_prefix(p);
    SequenceStep c{&churn, std::span(p).subspan(churn.num_tokens()), LogitsWanted::None};
    runner.step(std::span(&c, 1));
  }
  EXPECT_GT(runner.pool().stats().evictions, 0u);
  const std::vector<int32_t> next(1, 11);
  SequenceStep d{&live, next, LogitsWanted::Last};
  auto after = runner.step(std::span(&d, 1)).logits[0];

  reference::ReferenceModel ref(m.file);
  ref.forward(live_prompt);
  auto want = ref.forward(next).back();
  EXPECT_GE(cosine(after, want), 0.9999);
}

TEST_P(RunnerErrors, RejectsBadTokensAndOversizedSteps) {
  auto& m = ref_model(GetParam());
  RunnerOptions opts;
  opts.max_batch_tokens = 8;
  opts.max_seqs = 2;
  auto runner_ptr = m.model.runner(opts);
  Runner& runner = *runner_ptr;
  kv::BlockTable t(runner.pool(), runner.block_size());
  std::vector<int32_t> bad = {1, 99999};
  SequenceStep s{&t, bad, LogitsWanted::Last};
  EXPECT_THROW(runner.step(std::span(&s, 1)), std::invalid_argument);
  EXPECT_EQ(t.num_tokens(), 0u);
  EXPECT_EQ(runner.pool().stats().used, 0u) << "a failed step gives its blocks back";
  std::vector<int32_t> many(9, 5);
  s.tokens = many;
  EXPECT_THROW(runner.step(std::span(&s, 1)), std::invalid_argument);
}

// A hybrid model's recurrent states come out of the default KV budget, so that budget must want
// them too: every sequence still gets its full context of blocks (a Qwen3.5-4B-shaped bench was
// left one block: "KV cache is full" on the first step).
TEST_P(RunnerErrors, AHybridModelsDefaultCacheHoldsEverySequenceAtFullContext) {
  model::MakeModelOptions o;
  o.arch = "qwen35";
  o.shape = model::parse_model_shape("test");
  o.file_type = model::FileType::F16;
  const gguf::GgufFile vocab =
      gguf::GgufFile::open(reference::shared_testdata_dir() / "vocab/ggml-vocab-llama-spm.gguf");
  gguf::GgufWriter w;
  model::build_random_model(o, vocab, w);
  const std::vector<uint8_t> bytes = w.serialize();  // the parsed file points into it
  const auto file = gguf::GgufFile::parse(bytes);
  LoadedModel m(file, GetParam());
  ASSERT_TRUE(m.spec().has_recurrent_state());
  RunnerOptions opts;
  opts.max_seqs = 4;
  opts.max_context = 96;
  auto runner = m.runner(opts);
  const uint32_t per_seq = (opts.max_context + runner->block_size() - 1) / runner->block_size();
  EXPECT_GE(runner->pool().num_blocks(), opts.max_seqs * per_seq);
}

// step_hidden (decoders used as embedders) gives the same hidden states on both backends, and a
// greedy-only step the argmax of the logits the same step returns in full.
TEST(RunnerBackends, HiddenStatesAgreeAndGreedyOnlyStepsMatchTheirLogits) {
  Seeded s;
  SCOPED_TRACE("seed " + std::to_string(s.seed));
  auto tokens = random_tokens(s.rng, 21);
  const auto prompt = std::span(tokens).first(20);
  const auto last = std::span(tokens).subspan(20);
  std::vector<std::vector<float>> hidden;
  for (Backend b : {Backend::Vulkan, Backend::Cpu}) {
    SCOPED_TRACE(b == Backend::Cpu ? "cpu" : "vulkan");
    auto& m = ref_model(b);
    auto runner = m.model.runner(RunnerOptions{});
    kv::BlockTable table(runner->pool(), runner->block_size());
    SequenceStep st{&table, prompt, LogitsWanted::All};
    auto h = runner->step_hidden(std::span(&st, 1));
    ASSERT_EQ(h.hidden[0].size(), 20u * m.model.spec().n_embd);
    EXPECT_TRUE(h.logits[0].empty());
    EXPECT_EQ(h.greedy[0], -1);
    EXPECT_EQ(table.num_tokens(), 20u) << "step_hidden commits its tokens";
    hidden.push_back(h.hidden[0]);
    st = {&table, last, LogitsWanted::Last};
    auto greedy = runner->step(std::span(&st, 1), /*greedy_only=*/true);
    EXPECT_TRUE(greedy.logits[0].empty());

    kv::BlockTable again(runner->pool(), runner->block_size());
    SequenceStep st2{&again, prompt, LogitsWanted::None};
    runner->step(std::span(&st2, 1));
    st2 = {&again, last, LogitsWanted::Last};
    auto full = runner->step(std::span(&st2, 1));
    EXPECT_EQ(greedy.greedy[0], argmax(full.logits[0]));
    EXPECT_EQ(full.greedy[0], argmax(full.logits[0]));
  }
  EXPECT_GE(cosine(hidden[0], hidden[1]), 0.99999);
}

// CPU Runners share the process's thread pool: two of them stepping at once from two engine
// threads (two loaded models) give what each gives alone.
TEST(RunnerCpu, RunnersSharingTheThreadPoolStepConcurrently) {
  Seeded s;
  SCOPED_TRACE("seed " + std::to_string(s.seed));
  auto& m = ref_model(Backend::Cpu);
  const std::vector<std::vector<int32_t>> prompts = {random_tokens(s.rng, 37),
                                                     random_tokens(s.rng, 23)};
  auto run = [&](Runner& runner, const std::vector<int32_t>& prompt) {
    Generator gen(runner);
    std::vector<float> logits = gen.feed(prompt);
    for (int i = 0; i < 4; ++i) {
      const int32_t next = argmax(logits);
      logits = gen.feed(std::span(&next, 1));
    }
    return logits;
  };
  auto a = m.model.runner(RunnerOptions{});
  auto b = m.model.runner(RunnerOptions{});
  const auto alone_a = run(*a, prompts[0]);
  const auto alone_b = run(*b, prompts[1]);
  std::vector<float> together_a;
  std::thread other([&] { together_a = run(*a, prompts[0]); });
  const auto together_b = run(*b, prompts[1]);
  other.join();
  EXPECT_EQ(together_a, alone_a);
  EXPECT_EQ(together_b, alone_b);
}

INSTANTIATE_TEST_SUITE_P(Backends, RunnerPaging, ::testing::Values(Backend::Vulkan, Backend::Cpu),
                         backend_label);
INSTANTIATE_TEST_SUITE_P(Backends, RunnerErrors, ::testing::Values(Backend::Vulkan, Backend::Cpu),
                         backend_label);

}  // namespace
}  // namespace vkllm::runtime
