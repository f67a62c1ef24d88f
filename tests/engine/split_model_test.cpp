// A model split by layers across Vulkan devices (SplitModel, engine/runtime/split_backend.h)
// gives the logits of the same model on one device, bit for bit: each layer runs the same kernels
// on the same inputs wherever it lives. Here the "devices" are the test's lavapipe device opened
// twice (two vk::Contexts: separate Vulkan devices, memory and queues). Through the Runner:
// prefill in chunks (matvec- and GEMM-sized), several sequences in one step, decode, prefix-cache
// reuse and eviction under a small KV cache.
#include "engine/runtime/split_model.h"

#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/runtime/runner.h"
#include "tests/engine/split_prefix_scenario.h"
#include "tests/engine/vk_test_context.h"
#include "tests/support/fixture_model.h"
#include "tests/support/seeded.h"

namespace vkllm::runtime {
namespace {

using test::Seeded;

TEST(SplitLayers, FollowsFreeMemoryWithOneLayerEachAtLeast) {
  EXPECT_EQ(split_layers(32, std::vector<uint64_t>{80, 80}), (std::vector<uint32_t>{16, 16}));
  EXPECT_EQ(split_layers(80, std::vector<uint64_t>{300, 100}), (std::vector<uint32_t>{60, 20}));
  EXPECT_EQ(split_layers(5, std::vector<uint64_t>{1, 1}), (std::vector<uint32_t>{3, 2}));
  EXPECT_EQ(split_layers(3, std::vector<uint64_t>{1000, 1, 1}), (std::vector<uint32_t>{1, 1, 1}));
  EXPECT_EQ(split_layers(4, std::vector<uint64_t>{0, 5}), (std::vector<uint32_t>{1, 3}));
  EXPECT_THROW(split_layers(2, std::vector<uint64_t>{1, 1, 1}), std::invalid_argument);
  EXPECT_THROW(split_layers(2, std::vector<uint64_t>{}), std::invalid_argument);
  EXPECT_THROW(split_layers(2, std::vector<uint64_t>{0, 0}), std::invalid_argument);
}

// A 4-layer llama (256 wide) at Q4_K_M: quantized products on both the matvec and the GEMM.
struct Fixture {
  Fixture()
      : bytes(test::random_model_bytes([] {
          model::MakeModelOptions o = test::wide_llama_options(model::FileType::Q4_K_M, 44);
          o.shape.n_layer = 4;
          return o;
        }())),
        file(gguf::GgufFile::parse(bytes)),
        whole(test::vk_context(), file) {}
  std::vector<uint8_t> bytes;
  gguf::GgufFile file;
  Model whole;
};

Fixture& fixture() {
  static Fixture f;
  return f;
}

std::vector<int32_t> tokens(Seeded<>& s, size_t n) {
  std::vector<int32_t> v(n);
  for (auto& t : v) t = static_cast<int32_t>(3 + s.rng() % (test::kFixtureVocab - 3));
  return v;
}

// The same steps on two runners: every logits row and greedy token must be identical.
struct Pair {
  Runner& a;
  Runner& b;
  void step(std::span<kv::BlockTable> ta, std::span<kv::BlockTable> tb,
            const std::vector<std::vector<int32_t>>& toks, LogitsWanted want) {
    std::vector<SequenceStep> sa, sb;
    for (size_t i = 0; i < toks.size(); ++i) {
      sa.push_back({&ta[i], toks[i], want});
      sb.push_back({&tb[i], toks[i], want});
    }
    const StepResult ra = a.step(sa), rb = b.step(sb);
    for (size_t i = 0; i < toks.size(); ++i) {
      EXPECT_EQ(ra.logits[i], rb.logits[i]) << "sequence " << i;
      EXPECT_EQ(ra.greedy_rows[i], rb.greedy_rows[i]) << "sequence " << i;
    }
  }
};

TEST(SplitModel, LogitsEqualTheWholeModelsBitForBit) {
  Seeded<> s;
  SCOPED_TRACE("seed " + std::to_string(s.seed));
  Fixture& f = fixture();
  RunnerOptions opts;
  opts.max_seqs = 4;
  opts.max_logits_rows = 64;
  opts.max_context = 256;
  opts.warm_up = false;  // pipelines as steps need them: each device compiles its own
  Runner whole(f.whole, opts);
  // Three stages on two devices, the first and last on the same one: every hand-off kind.
  vk::Context* devices[] = {&test::vk_context(), &test::second_vk_context(), &test::vk_context()};
  const uint32_t counts[] = {1, 2, 1};
  SplitModel split(devices, f.file, counts);
  EXPECT_FALSE(split.stage(0).find(model::Weight::Output));
  EXPECT_FALSE(split.stage(2).find(model::Weight::TokenEmbd));
  EXPECT_FALSE(split.stage(1).find(model::Weight::AttnNorm, 0));
  EXPECT_TRUE(split.stage(1).find(model::Weight::AttnNorm, 2));
  Runner parts(split, opts);
  EXPECT_EQ(parts.pool().num_blocks(), whole.pool().num_blocks());
  ASSERT_EQ(parts.device_bytes_by_device().size(), 3u);

  Pair run{whole, parts};
  std::vector<kv::BlockTable> ta, tb;
  for (int i = 0; i < 4; ++i) {
    ta.emplace_back(whole.pool(), whole.block_size());
    tb.emplace_back(parts.pool(), parts.block_size());
  }
  // Prefill: three prompts in one GEMM-sized step (every row's logits), then a fourth in two
  // matvec-sized chunks; decode the four together. (On lavapipe a GEMM step takes seconds.)
  run.step(std::span(ta).first(3), std::span(tb).first(3),
           {tokens(s, 20), tokens(s, 9), tokens(s, 17)}, LogitsWanted::All);
  run.step(std::span(ta).last(1), std::span(tb).last(1), {tokens(s, 14)}, LogitsWanted::None);
  run.step(std::span(ta).last(1), std::span(tb).last(1), {tokens(s, 11)}, LogitsWanted::Last);
  for (int step = 0; step < 2; ++step)
    run.step(ta, tb, {tokens(s, 1), tokens(s, 1), tokens(s, 1), tokens(s, 1)}, LogitsWanted::Last);
}

// Image rows (a vision model's prompt) enter the first stage in place of token embeddings: the
// split model gives the whole model's logits bit for bit, with a causal span and an open
// (two-way) one in the same prompt, then a decode step over them.
TEST(SplitModel, ImageRowsEnterTheFirstStageAndGiveTheWholeModelsLogits) {
  Seeded<> s;
  SCOPED_TRACE("seed " + std::to_string(s.seed));
  Fixture& f = fixture();
  RunnerOptions opts;
  opts.max_seqs = 2;
  opts.max_logits_rows = 64;
  opts.max_context = 128;
  opts.embedding_inputs = true;
  opts.warm_up = false;
  Runner whole(f.whole, opts);
  vk::Context* devices[] = {&test::vk_context(), &test::second_vk_context()};
  const uint32_t counts[] = {2, 2};
  SplitModel split(devices, f.file, counts);
  Runner parts(split, opts);

  const uint32_t E = f.whole.spec().n_embd;
  std::vector<float> rows(9 * E);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (float& x : rows) x = normal(s.rng);
  // (An open span ends its step's tokens.)
  const EmbeddingSpan spans[] = {{2, 4, rows.data(), false}, {12, 5, rows.data() + 4 * E, true}};
  kv::BlockTable ta(whole.pool(), whole.block_size()), tb(parts.pool(), parts.block_size());
  const std::vector<int32_t> prompt = tokens(s, 17), next = tokens(s, 1);
  auto step = [](Runner& r, kv::BlockTable& t, const std::vector<int32_t>& toks, LogitsWanted want,
                 std::span<const EmbeddingSpan> images) {
    SequenceStep one{&t, toks, want};
    one.embeddings = images;
    return r.step(std::span(&one, 1)).logits[0];
  };
  const std::vector<float> want = step(whole, ta, prompt, LogitsWanted::All, spans);
  ASSERT_EQ(want.size(), 17u * test::kFixtureVocab);
  EXPECT_EQ(step(parts, tb, prompt, LogitsWanted::All, spans), want);
  EXPECT_EQ(step(parts, tb, next, LogitsWanted::Last, {}),
            step(whole, ta, next, LogitsWanted::Last, {}));
  // The image rows matter: the same tokens without them give other logits.
  kv::BlockTable tc(whole.pool(), whole.block_size());
  EXPECT_NE(step(whole, tc, prompt, LogitsWanted::All, {}), want);
}

// A hybrid's stages each hold their own layers' recurrent states: Nemotron-H's Mamba-2 mixer,
// attention and FFN-only layers over three stages (the recurrent operations, gates and grouped
// norm go to the stage of their layer) give the whole model's logits bit for bit, with the state
// carried across a chunked prefill and decode steps.
TEST(SplitModel, MambaHybridLogitsEqualTheWholeModels) {
  Seeded<> s;
  SCOPED_TRACE("seed " + std::to_string(s.seed));
  model::MakeModelOptions o;
  o.arch = "nemotron_h";
  o.shape = model::parse_model_shape("64x3x2x1");
  const std::vector<uint8_t> bytes = test::random_model_bytes(o);
  const auto file = gguf::GgufFile::parse(bytes);
  Model whole_model(test::vk_context(), file);
  vk::Context* devices[] = {&test::vk_context(), &test::second_vk_context(), &test::vk_context()};
  const uint32_t counts[] = {1, 1, 1};
  SplitModel split(devices, file, counts);
  RunnerOptions opts;
  opts.max_seqs = 2;
  opts.max_context = 128;
  opts.warm_up = false;
  Runner whole(whole_model, opts), parts(split, opts);
  Pair run{whole, parts};
  std::vector<kv::BlockTable> ta, tb;
  for (int i = 0; i < 2; ++i) {
    ta.emplace_back(whole.pool(), whole.block_size());
    tb.emplace_back(parts.pool(), parts.block_size());
  }
  run.step(ta, tb, {tokens(s, 13), tokens(s, 6)}, LogitsWanted::Last);
  run.step(std::span(ta).first(1), std::span(tb).first(1), {tokens(s, 9)}, LogitsWanted::Last);
  for (int step = 0; step < 2; ++step)
    run.step(ta, tb, {tokens(s, 1), tokens(s, 1)}, LogitsWanted::Last);
}

// Gemma 3n's stages would have to hand each other its AltUp streams too: refused at load.
TEST(SplitModel, RefusesGemma3n) {
  model::MakeModelOptions o;
  o.arch = "gemma3n";
  o.shape = model::parse_model_shape("64x2x2x1");
  const std::vector<uint8_t> bytes = test::random_model_bytes(o);
  const auto file = gguf::GgufFile::parse(bytes);
  vk::Context* devices[] = {&test::vk_context(), &test::second_vk_context()};
  const uint32_t counts[] = {1, 1};
  try {
    SplitModel split(devices, file, counts);
    ADD_FAILURE() << "a gemma3n model was split";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("gemma3n model cannot be split"), std::string::npos)
        << e.what();
  }
}

// As the scheduler uses the Runner: prompts that share a prefix reuse its cached blocks, a step
// that finds no free block fails on both (all or nothing), the live sequence is preempted (its
// blocks released, the full ones cached) and the retried step evicts a cached block. Blocks of 4
// tokens keep every step on the matvec (fast on lavapipe).
TEST(SplitModel, PrefixReusePreemptionAndEvictionMatchTheWholeModel) {
  Seeded<> s;
  SCOPED_TRACE("seed " + std::to_string(s.seed));
  Fixture& f = fixture();
  RunnerOptions opts;
  opts.block_size = 4;
  opts.max_seqs = 2;
  opts.max_context = 64;
  opts.warm_up = false;
  const auto& spec = f.whole.spec();
  // 9 blocks in all.
  opts.kv_budget_bytes = 9ull * 2 * spec.n_layer * spec.n_head_kv * 4 * spec.head_dim * 2;
  Runner whole(f.whole, opts);
  vk::Context* devices[] = {&test::vk_context(), &test::second_vk_context()};
  const uint32_t counts[] = {3, 1};
  SplitModel split(devices, f.file, counts);
  Runner parts(split, opts);
  ASSERT_EQ(whole.pool().num_blocks(), 9u);
  ASSERT_EQ(parts.pool().num_blocks(), 9u) << "each stage its layers' share of the budget";
  Pair run{whole, parts};

  test_scenarios::prefix_reuse_and_preemption(run, whole, parts,
                                              [&](size_t n) { return tokens(s, n); });
}

}  // namespace
}  // namespace vkllm::runtime
