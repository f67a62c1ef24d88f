// Embedding models on the Vulkan engine and the CPU backend against the scalar references, on
// fresh random fixture models from make-model: the encoders (bert: learned positions, GELU,
// biases; nomic-bert: rotary, SwiGLU; bert-rerank: the cross-encoder head) through
// runtime::Embedder and Encoder on both backends, every pooling type, several inputs per step and
// inputs packed into several steps; and a decoder
// used as an embedder (qwen3 with last-token pooling) through a Runner's hidden states, with
// inputs longer than one step, leaving no KV blocks behind.
#include <gtest/gtest.h>

#include <algorithm>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "engine/gguf/gguf_writer.h"
#include "engine/model/model_maker.h"
#include "engine/runtime/embedder.h"
#include "engine/runtime/encoder.h"
#include "engine/runtime/host_model.h"
#include "engine/runtime/model.h"
#include "engine/runtime/runner.h"
#include "engine/tokenizer/tokenizer.h"
#include "tests/engine/vk_test_context.h"
#include "tests/reference/llama_cpp_reference.h"
#include "tests/reference/reference_encoder.h"
#include "tests/reference/reference_forward.h"

namespace vkllm::runtime {
namespace {

using model::FileType;
using model::Pooling;
using reference::cosine;
using reference::max_abs_diff;

const gguf::GgufFile& bert_vocab() {
  static const gguf::GgufFile vocab = gguf::GgufFile::open(
      (reference::shared_testdata_dir() / "vocab" / "ggml-vocab-bert-bge.gguf").string());
  return vocab;
}

// A make-model fixture, optionally with its pooling_type replaced.
std::vector<uint8_t> make_fixture(const std::string& arch, FileType type, uint64_t seed,
                                  const gguf::GgufFile& vocab, int pooling = -1) {
  model::MakeModelOptions o;
  o.arch = arch;
  o.shape = model::parse_model_shape("128x2x4x4");
  o.shape.n_ff = 256;
  o.file_type = type;
  o.seed = seed;
  gguf::GgufWriter w;
  model::build_random_model(o, vocab, w);
  if (pooling >= 0) {
    const std::string gguf_arch = arch == "bert-rerank" ? "bert" : arch;
    w.set_u32(gguf_arch + ".pooling_type", static_cast<uint32_t>(pooling));
  }
  return w.serialize();
}

std::vector<int32_t> random_tokens(std::mt19937& rng, size_t n, int32_t vocab) {
  std::uniform_int_distribution<int32_t> tok(1000, vocab - 1);  // plain word pieces
  std::vector<int32_t> v(n);
  for (auto& t : v) t = tok(rng);
  return v;
}

bool is_float(FileType t) {
  return t == FileType::F32 || t == FileType::F16 || t == FileType::BF16;
}

// An Embedder on the Vulkan device (lavapipe in CI) or the CPU backend, with the model it runs.
struct BackendEmbedder {
  std::unique_ptr<Model> model;
  std::unique_ptr<HostModel> host;
  std::unique_ptr<Embedder> embedder;
  BackendEmbedder(const gguf::GgufFile& file, bool cpu, const EmbedderOptions& o = {}) {
    if (cpu) {
      host = std::make_unique<HostModel>(file);
      embedder = std::make_unique<Embedder>(*host, o);
    } else {
      model = std::make_unique<Model>(test::vk_context(), file);
      embedder = std::make_unique<Embedder>(*model, o);
    }
  }
};

struct EncoderCase {
  std::string arch;
  FileType type;
  int pooling;  // -1: what make-model writes
  bool cpu = false;
};

void PrintTo(const EncoderCase& c, std::ostream* os) {
  *os << c.arch << " " << model::file_type_name(c.type) << " pooling " << c.pooling
      << (c.cpu ? " on the CPU" : " on Vulkan");
}

std::string label(const ::testing::TestParamInfo<EncoderCase>& info) {
  static const char* names[] = {"none", "mean", "cls", "last", "rank"};
  std::string a = info.param.arch;
  std::replace(a.begin(), a.end(), '-', '_');
  return a + "_" + std::string(model::file_type_name(info.param.type)) +
         (info.param.pooling >= 0 ? std::string("_") + names[info.param.pooling] : "") +
         (info.param.cpu ? "_cpu" : "");
}

class EncoderModels : public ::testing::TestWithParam<EncoderCase> {};

// Inputs of several lengths (one of a single token, one crossing KV blocks) in one call; a small
// step limit so they are packed into several steps; every output against the reference.
TEST_P(EncoderModels, EmbedderMatchesReference) {
  const EncoderCase& c = GetParam();
  test::SeededRng rng;
  const std::vector<uint8_t> bytes =
      make_fixture(c.arch, c.type, rng.seed(), bert_vocab(), c.pooling);
  const auto file = gguf::GgufFile::parse(bytes);
  BackendEmbedder b(file, c.cpu, {.max_batch_tokens = 48, .max_inputs = 3});
  Embedder& embedder = *b.embedder;
  const reference::ReferenceEncoder ref(file);
  if (c.arch == "bert-rerank") {
    ASSERT_EQ(ref.spec().pooling, Pooling::Rank);
  }

  std::vector<std::vector<int32_t>> inputs;
  for (size_t n : {7u, 1u, 40u, 19u, 3u}) {
    inputs.push_back(random_tokens(rng.gen(), n, static_cast<int32_t>(embedder.spec().n_vocab)));
  }
  ASSERT_EQ(embedder.max_input_tokens(), 48u);
  const auto got = embedder.embed(inputs);
  ASSERT_EQ(got.size(), inputs.size());
  const double min_cos = is_float(c.type) ? 0.9999 : 0.999;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::vector<float> want = ref.embed(inputs[i]);
    ASSERT_EQ(got[i].size(), want.size()) << "input " << i;
    if (want.size() == 1) {  // a rank score: compare the value itself
      EXPECT_NEAR(got[i][0], want[0], is_float(c.type) ? 2e-3 : 2e-2) << "input " << i;
    } else {
      EXPECT_GE(cosine(got[i], want), min_cos)
          << "input " << i << " (" << inputs[i].size() << " tokens), max abs diff "
          << max_abs_diff(got[i], want);
    }
  }
}

std::vector<EncoderCase> encoder_cases() {
  std::vector<EncoderCase> cases = {
      {"bert", FileType::F16, -1},          {"bert", FileType::F16, 2},
      {"bert", FileType::F16, 0},           {"bert", FileType::F32, 3},
      {"bert", FileType::Q8_0, -1},         {"nomic-bert", FileType::F16, -1},
      {"nomic-bert", FileType::Q4_K_M, -1}, {"bert-rerank", FileType::F16, -1},
  };
  const size_t n = cases.size();
  for (size_t i = 0; i < n; ++i) {  // the same graph on the CPU backend
    cases.push_back(cases[i]);
    cases.back().cpu = true;
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(MakeModelFixtures, EncoderModels, ::testing::ValuesIn(encoder_cases()),
                         label);

// The same inputs give the same vectors whatever they are batched with.
TEST(EmbeddingBatching, OutputsDoNotDependOnStepPacking) {
  test::SeededRng rng;
  const auto bytes = make_fixture("nomic-bert", FileType::F16, rng.seed(), bert_vocab());
  const auto file = gguf::GgufFile::parse(bytes);
  Model model(test::vk_context(), file);
  std::vector<std::vector<int32_t>> inputs;
  for (int i = 0; i < 12; ++i) {
    inputs.push_back(random_tokens(rng.gen(), 1 + rng.below(30), 30522));
  }
  Embedder one_step(model, {.max_batch_tokens = 512, .max_inputs = 64});
  Embedder many_steps(model, {.max_batch_tokens = 32, .max_inputs = 2});
  const auto a = one_step.embed(inputs);
  std::vector<std::vector<float>> b;
  for (const auto& in : inputs) b.push_back(many_steps.embed(std::span(&in, 1)).at(0));
  for (size_t i = 0; i < inputs.size(); ++i) {
    EXPECT_GE(cosine(a[i], b[i]), 0.99999) << "input " << i;
  }
}

// Text through the real WordPiece tokenizer: [CLS] ... [SEP]; the rank path scores pairs built
// as a cross-encoder expects and agrees with the reference on which document ranks first.
class EmbeddingRerank : public ::testing::TestWithParam<bool> {};

TEST_P(EmbeddingRerank, ScoresPairsFromTheTokenizerLikeTheReference) {
  test::SeededRng rng;
  const auto bytes = make_fixture("bert-rerank", FileType::F16, rng.seed(), bert_vocab());
  const auto file = gguf::GgufFile::parse(bytes);
  const auto tok = tokenizer::Tokenizer::from_gguf(file);
  BackendEmbedder b(file, /*cpu=*/GetParam());
  Embedder& embedder = *b.embedder;
  const reference::ReferenceEncoder ref(file);

  const auto query = tok->encode("what is a llama", false, false);
  const std::vector<std::string> docs = {"a llama is a domesticated south american camelid",
                                         "paris is the capital of france",
                                         "the quick brown fox jumps over the lazy dog", "llama"};
  std::vector<std::vector<int32_t>> pairs;
  for (const auto& d : docs)
    pairs.push_back(rerank_input(*tok, query, tok->encode(d, false, false)));
  const auto& v = tok->vocab();
  ASSERT_EQ(pairs[0].front(), v.cls);
  ASSERT_EQ(pairs[0][query.size() + 1], v.sep);
  ASSERT_EQ(pairs[0].back(), v.sep);
  ASSERT_EQ(std::count(pairs[0].begin(), pairs[0].end(), v.sep), 2);

  const std::vector<float> got = embedder.rerank(pairs);
  ASSERT_EQ(got.size(), docs.size());
  std::vector<float> want;
  for (const auto& p : pairs) want.push_back(ref.embed(p).at(0));
  for (size_t i = 0; i < docs.size(); ++i) EXPECT_NEAR(got[i], want[i], 2e-3) << "doc " << i;
  auto order = [](const std::vector<float>& s) {
    std::vector<size_t> idx(s.size());
    for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
    std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return s[a] > s[b]; });
    return idx;
  };
  // Orders agree wherever the reference's neighbouring scores are clearly apart.
  const auto ow = order(want), og = order(got);
  for (size_t i = 0; i + 1 < ow.size(); ++i) {
    if (want[ow[i]] - want[ow[i + 1]] > 1e-2) {
      EXPECT_EQ(og[i], ow[i]) << "rank " << i;
    }
  }
  EXPECT_THROW(embedder.embed(std::vector<std::vector<int32_t>>(1)), std::invalid_argument);
}

INSTANTIATE_TEST_SUITE_P(Backends, EmbeddingRerank, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& i) {
                           return std::string(i.param ? "cpu" : "vulkan");
                         });

TEST(EmbeddingWarmUp, PassesAfterWarmUpCreateNoPipeline) {
  test::SeededRng rng;
  const auto bytes = make_fixture("bert-rerank", FileType::Q8_0, rng.seed(), bert_vocab());
  const auto file = gguf::GgufFile::parse(bytes);
  Model model(test::vk_context(), file);
  Embedder embedder(model, {.max_batch_tokens = 128, .max_inputs = 16});
  const auto warm = test::vk_context().pipelines().stats().created;
  const auto warm_keys = test::vk_context().pipelines().keys();
  std::vector<std::vector<int32_t>> inputs;
  for (size_t n : {3u, 70u, 1u, 17u, 9u}) inputs.push_back(random_tokens(rng.gen(), n, 30522));
  embedder.embed(inputs);
  embedder.embed(std::span(inputs).first(1));
  std::string built;
  for (const auto& key : test::vk_context().pipelines().keys())
    if (!std::binary_search(warm_keys.begin(), warm_keys.end(), key)) built += " " + key;
  EXPECT_EQ(test::vk_context().pipelines().stats().created, warm) << "built after:" << built;
}

TEST(EmbeddingLimits, EncoderRejectsWhatDoesNotFit) {
  test::SeededRng rng;
  const auto bytes = make_fixture("bert", FileType::F16, rng.seed(), bert_vocab());
  const auto file = gguf::GgufFile::parse(bytes);
  Model model(test::vk_context(), file);
  Embedder embedder(model, {.max_batch_tokens = 4096, .max_inputs = 8});
  EXPECT_EQ(embedder.max_input_tokens(), 512u);  // bert's learned positions end there
  std::vector<std::vector<int32_t>> too_long{std::vector<int32_t>(513, 1000)};
  EXPECT_THROW(embedder.embed(too_long), std::invalid_argument);
  std::vector<std::vector<int32_t>> bad_id{{1000, 40000}};
  EXPECT_THROW(embedder.embed(bad_id), std::invalid_argument);
  EXPECT_THROW(Runner(model, RunnerOptions{}), std::invalid_argument);  // no decoder path
}

// ---- Decoders as embedders

constexpr uint32_t kSmallVocab = 300;

std::vector<uint8_t> small_vocab_bytes() {
  gguf::GgufWriter w;
  w.set_string("tokenizer.ggml.model", "llama");
  std::vector<std::string> tokens{"<unk>", "<s>", "</s>"};
  while (tokens.size() < kSmallVocab) tokens.push_back("tok" + std::to_string(tokens.size()));
  w.set_strings("tokenizer.ggml.tokens", tokens);
  w.set_f32s("tokenizer.ggml.scores", std::vector<float>(tokens.size(), 0.0f));
  return w.serialize();
}

std::vector<uint8_t> qwen3_embedding_fixture(uint64_t seed, int pooling = -1) {
  const std::vector<uint8_t> vocab_bytes = small_vocab_bytes();
  const auto vocab = gguf::GgufFile::parse(vocab_bytes);
  model::MakeModelOptions o;
  o.arch = "qwen3-embedding";
  o.shape = model::parse_model_shape("128x2x4x2");
  o.seed = seed;
  gguf::GgufWriter w;
  model::build_random_model(o, vocab, w);
  if (pooling >= 0) w.set_u32("qwen3.pooling_type", static_cast<uint32_t>(pooling));
  return w.serialize();
}

// Inputs longer than one step (chunked, causal), last-token and mean pooling; a shared Runner's
// pool has no block in use afterwards.
TEST(DecoderEmbedder, Qwen3LastAndMeanPoolingMatchReferenceAndFreeTheirBlocks) {
  test::SeededRng rng;
  for (const Pooling pooling : {Pooling::Last, Pooling::Mean}) {
    SCOPED_TRACE(pooling == Pooling::Last ? "last" : "mean");
    const auto bytes = qwen3_embedding_fixture(rng.seed(), static_cast<int>(pooling));
    const auto file = gguf::GgufFile::parse(bytes);
    Model model(test::vk_context(), file);
    ASSERT_EQ(model.spec().pooling, pooling);
    ASSERT_TRUE(model.spec().causal_attn);
    RunnerOptions opts;
    opts.max_batch_tokens = 24;
    opts.max_seqs = 4;
    opts.max_context = 64;
    opts.max_logits_rows = 24;
    opts.kv_budget_bytes = 4u << 20;
    Runner runner(model, opts);
    Embedder embedder(runner);
    std::vector<std::vector<int32_t>> inputs;
    for (size_t n : {5u, 50u, 1u, 23u}) {
      std::uniform_int_distribution<int32_t> tok(3, kSmallVocab - 1);
      std::vector<int32_t> v(n);
      for (auto& t : v) t = tok(rng.gen());
      inputs.push_back(std::move(v));
    }
    const auto got = embedder.embed(inputs);
    ASSERT_EQ(got.size(), inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      reference::ReferenceModel ref(file, reference::ReferenceModel::EngineRounding{});
      const auto rows = ref.hidden_states(inputs[i]);
      std::vector<float> want(model.spec().n_embd, 0.0f);
      if (pooling == Pooling::Last) {
        want = rows.back();
      } else {
        for (const auto& r : rows) {
          for (size_t e = 0; e < want.size(); ++e) want[e] += r[e] / float(rows.size());
        }
      }
      ASSERT_EQ(got[i].size(), want.size());
      EXPECT_GE(cosine(got[i], want), 0.9999)
          << "input " << i << ", max abs diff " << max_abs_diff(got[i], want);
    }
    EXPECT_EQ(runner.pool().stats().used, 0u);
  }
}

}  // namespace
}  // namespace vkllm::runtime
