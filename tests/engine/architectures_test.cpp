// The Vulkan forward pass on every architecture make-model generates and every weight type,
// against the scalar reference forward on fresh random fixture models: prefill in two chunks
// (every row's logits), then decode steps; the newer families (mistral3, gemma-embedding) on the
// CPU backend as well, gemma-embedding through the Embedder (whole inputs, batched). Also:
// unsupported architectures fail at load.
//
// The cases are a representative subset of arch x type, to keep lavapipe under about a minute:
// every weight type on llama (the shared kernels), and every other architecture with F16 and
// Q4_K_M (its own code paths: biases, Q/K norms, post norms, softcaps, fused QKV and gate/up,
// NeoX RoPE, sliding windows, tied embeddings, qwen3moe's mixture of experts, which also runs
// on the CPU backend here, and qwen2moe's gated shared expert on both). Two shapes: 256-wide with
// head_dim 64 and an n_ff of 320 (ffn_down rows are no multiple of 256, so the K-quant mix falls
// back to Q5_0/Q5_1/Q8_0 there), and 128-wide with head_dim 32 (every K-quant tensor falls back).
// One 1024-wide llama (head_dim 64, n_ff 2816) at Q4_K_M, prefilled 17 tokens first so that its
// products run on the GEMMs (lavapipe's from 17 tokens, a GPU's K-quant ones from 13), with Q, K
// and V apart (layer 1's V is Q6_K); a GPU splits their K. Every chunk is one step
// (max_logits_rows): with the default of max_seqs rows, Generator::feed split each chunk into steps
// of 2 tokens, and no case ever reached a GEMM (Q left unrotated on the GEMM path then passed).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "engine/gguf/gguf_writer.h"
#include "engine/model/model_maker.h"
#include "engine/runtime/embedder.h"
#include "engine/runtime/generator.h"
#include "engine/runtime/host_model.h"
#include "engine/runtime/model.h"
#include "engine/runtime/runner.h"
#include "tests/engine/vk_test_context.h"
#include "tests/reference/llama_cpp_reference.h"
#include "tests/reference/reference_forward.h"
#include "tests/support/fixture_model.h"
#include "tests/support/param_name.h"

namespace vkllm::runtime {
namespace {

using model::FileType;
using reference::cosine;
using reference::max_abs_diff;

constexpr uint32_t kVocab = test::kFixtureVocab;
constexpr uint32_t kSmallWindow = 8;  // so 24 tokens cross the sliding window

struct ArchCase {
  std::string arch;
  FileType type;
  uint32_t width;    // 256: 256x?x4x2, head_dim 64, n_ff 320; 128: 128x?x4x2, head_dim 32, n_ff
                     // 512; 1024: 1024x?x16x4, head_dim 64, n_ff 2816
  bool cpu = false;  // the CPU backend instead of Vulkan
};

std::string label(const ::testing::TestParamInfo<ArchCase>& info) {
  return test::param_name(info.param.arch + "_" +
                          std::string(model::file_type_name(info.param.type)) + "_w" +
                          std::to_string(info.param.width) + (info.param.cpu ? "_cpu" : ""));
}

model::ModelShape shape_of(const ArchCase& c) {
  // Seven layers for gemma3: five local, its first global, one local again.
  const bool gemma3_layers = c.arch == "gemma3" || c.arch == "gemma-embedding";
  const std::string layers = gemma3_layers ? "7" : "2";
  const std::string heads = c.width == 1024 ? "x16x4" : "x4x2";
  model::ModelShape s = model::parse_model_shape(std::to_string(c.width) + "x" + layers + heads);
  if (c.width == 256) s.n_ff = 320;
  if (c.width == 1024) s.n_ff = 2816;
  // qwen3moe: 8 experts of width 256 (K-quant rows) at w256, 64 at w128, 2 per token.
  s.n_expert = 8;
  s.n_expert_used = 2;
  s.n_ff_exp = c.width == 256 ? 256 : 64;
  return s;
}

bool is_float(FileType t) {
  return t == FileType::F32 || t == FileType::F16 || t == FileType::BF16;
}

using test::argmax;

// Top-1 minus top-2, relative to the row's range: the reference's own confidence.
double relative_margin(const std::vector<float>& v) {
  std::vector<float> s = v;
  std::partial_sort(s.begin(), s.begin() + 2, s.end(), std::greater<>());
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  return (s[0] - s[1]) / std::max(1e-6f, *hi - *lo);
}

class Architectures : public ::testing::TestWithParam<ArchCase> {};

TEST_P(Architectures, RunnerMatchesReferenceOnPrefillChunksAndDecode) {
  const ArchCase& c = GetParam();
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(static_cast<uint32_t>(seed));

  model::MakeModelOptions o;
  o.arch = c.arch;
  o.shape = shape_of(c);
  o.file_type = c.type;
  o.seed = seed;
  const std::vector<uint8_t> bytes = test::random_model_bytes(o, [&](gguf::GgufWriter& w) {
    if (c.arch == "gemma2" || c.arch == "gemma3" || c.arch == "phi3" || c.arch == "gpt-oss") {
      w.set_u32(c.arch + ".attention.sliding_window", kSmallWindow);
    }
    if (c.arch == "mistral3") {
      // The temperature from position 8 on, and YaRN's magnitude factor (1 with Ministral's
      // log multiplier of 1) away from 1.
      w.set_u32("mistral3.rope.scaling.original_context_length", 8);
      w.set_f32("mistral3.rope.scaling.yarn_log_multiplier", 0.0f);
    }
  });
  const auto file = gguf::GgufFile::parse(bytes);

  std::optional<Model> model;
  std::optional<HostModel> host;
  if (c.cpu) {
    GgufFileSource source(file);
    host.emplace(file, source);
  } else {
    model.emplace(test::vk_context(), file);
  }
  RunnerOptions opts;
  opts.max_batch_tokens = 24;
  opts.max_logits_rows = 24;  // every row of a chunk in one step (Generator::feed's chunks)
  opts.max_seqs = 2;
  opts.max_context = 64;
  opts.kv_budget_bytes = 8u << 20;
  auto runner =
      c.cpu ? std::make_unique<Runner>(*host, opts) : std::make_unique<Runner>(*model, opts);
  Generator gen(*runner);
  // The CPU backend rounds activations to 8-bit blocks before quantized products, as llama.cpp's
  // CPU backend does; the reference then rounds them alike. (Against the f32 reference a router
  // with two nearly equal experts may pick the other one, and that token's output moves far.)
  reference::ReferenceModel ref =
      c.cpu ? reference::ReferenceModel(file)
            : reference::ReferenceModel(file, reference::ReferenceModel::EngineRounding{});
  if (c.arch == "gemma2" || c.arch == "gemma3" || c.arch == "phi3" || c.arch == "gpt-oss") {
    ASSERT_EQ(ref.spec().sliding_window, kSmallWindow);
  }

  const double min_cos = is_float(c.type) ? 0.9999 : 0.999;
  std::uniform_int_distribution<int32_t> token(3, kVocab - 1);
  std::vector<int32_t> prompt(20);
  for (auto& t : prompt) t = token(rng);

  // Two prefill chunks, every row compared. The 1024-wide model's first chunk of 17 tokens
  // leaves the matvec (K-quants stay on it up to 12 tokens on tensor-core GPUs, 16 elsewhere), so
  // its products run on the GEMMs; the others keep 12 and 8.
  const size_t first = c.width == 1024 ? 17 : 12;
  const std::span<const int32_t> chunks[] = {std::span(prompt).first(first),
                                             std::span(prompt).subspan(first)};
  std::vector<float> last_want;
  size_t row_index = 0;
  // Mixture of experts: a token whose router had its last selected and best unselected expert
  // within kRouteTie logits may go the other way on a backend that rounds differently, and its
  // output then moves far: such rows are routing near-ties, not compared (measured on the CPU
  // backend's Q4_K_M case: about one decision in 70 flipped, every one at a gap of 0.002-0.005).
  // A near-tie before the last layer also changes that token's K/V for the rows after it, so
  // comparison stops there.
  constexpr float kRouteTie = 0.05f;
  bool routes_diverged = false;
  int route_ties = 0;
  auto compare_row = [&](size_t r) {
    if (routes_diverged) return false;
    const std::vector<float>& gaps = ref.route_gaps()[r];
    for (size_t l = 0; l < gaps.size(); ++l) {
      if (gaps[l] >= kRouteTie) continue;
      ++route_ties;
      if (l + 1 < gaps.size()) routes_diverged = true;
      return false;
    }
    return true;
  };
  for (const auto chunk : chunks) {
    const std::vector<float> got = gen.feed(chunk, /*all_rows=*/true);
    const auto want = ref.forward(chunk, /*all_rows=*/true);
    ASSERT_EQ(got.size(), want.size() * kVocab);
    for (size_t r = 0; r < want.size(); ++r, ++row_index) {
      const std::span<const float> g(got.data() + r * kVocab, kVocab);
      if (!compare_row(r)) continue;
      EXPECT_GE(cosine(g, want[r]), min_cos)
          << "prefill row " << row_index << ", max abs diff " << max_abs_diff(g, want[r]);
    }
    last_want = want.back();
  }

  // Decode: both sides fed the reference's greedy token; argmax must agree where the
  // reference is clearly decided.
  int checked = 0;
  for (int step = 0; step < 4; ++step) {
    const int32_t next = argmax(last_want);
    const std::vector<int32_t> one{next};
    const std::vector<float> got = gen.feed(one);
    const auto want = ref.forward(one, /*all_rows=*/false).back();
    last_want = want;
    if (!compare_row(0)) continue;
    EXPECT_GE(cosine(got, want), min_cos)
        << "decode step " << step << ", max abs diff " << max_abs_diff(got, want);
    if (relative_margin(want) > 0.02) {
      EXPECT_EQ(argmax(got), argmax(want)) << "decode step " << step;
      ++checked;
    }
  }
  RecordProperty("greedy_checked", checked);
  RecordProperty("route_near_ties", route_ties);
}

std::vector<ArchCase> cases() {
  std::vector<ArchCase> v;
  for (FileType t : {FileType::F32, FileType::F16, FileType::BF16, FileType::Q8_0, FileType::Q4_0,
                     FileType::Q4_K_M, FileType::Q5_K_M, FileType::Q6_K}) {
    v.push_back({"llama", t, 256});
  }
  v.push_back({"llama", FileType::Q4_K_M, 128});
  v.push_back({"llama", FileType::Q4_K_M, 1024});
  for (const char* arch : {"qwen2", "qwen3", "qwen3moe", "gemma2", "gemma3", "phi3", "mistral3"}) {
    v.push_back({arch, FileType::F16, 128});
    v.push_back({arch, FileType::Q4_K_M, 256});
  }
  // The mixture of experts and mistral3 on the CPU backend too (the other architectures' CPU
  // coverage is tests/unit and cpu_vulkan_crosscheck_test).
  for (const char* arch : {"qwen3moe", "mistral3"}) {
    v.push_back({arch, FileType::F16, 128, true});
    v.push_back({arch, FileType::Q4_K_M, 256, true});
  }
  // qwen2moe: the shared expert beside the routed ones, gated per token (shared_expert.h), and
  // unnormalised expert weights, on both backends.
  for (const bool cpu : {false, true}) v.push_back({"qwen2moe", FileType::F16, 128, cpu});
  v.push_back({"qwen2moe", FileType::Q8_0, 256});
  // gpt-oss (sinks, biases, top-k softmax routing, clamped SwiGLU, window on even layers, YaRN)
  // on both backends.
  for (const bool cpu : {false, true}) {
    v.push_back({"gpt-oss", FileType::F16, 128, cpu});
    v.push_back({"gpt-oss", FileType::MXFP4_MOE, 256, cpu});
  }
  return v;
}

INSTANTIATE_TEST_SUITE_P(MakeModelFixtures, Architectures, ::testing::ValuesIn(cases()), label);

// Embedding models (gemma-embedding): two inputs of different lengths in one step, each longer
// than the symmetric window, against the scalar reference's whole-input pass.
class EmbeddingArchitectures : public ::testing::TestWithParam<ArchCase> {};

TEST_P(EmbeddingArchitectures, EmbedderMatchesReferenceOnBatchedInputs) {
  const ArchCase& c = GetParam();
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(static_cast<uint32_t>(seed));
  model::MakeModelOptions o;
  o.arch = c.arch;
  o.shape = shape_of(c);
  o.file_type = c.type;
  o.seed = seed;
  const std::vector<uint8_t> bytes = test::random_model_bytes(o, [&](gguf::GgufWriter& w) {
    w.set_u32(c.arch + ".attention.sliding_window", kSmallWindow);
  });
  const auto file = gguf::GgufFile::parse(bytes);
  std::optional<Model> device;
  std::optional<HostModel> host;
  if (c.cpu) {
    host.emplace(file);
  } else {
    device.emplace(test::vk_context(), file);
  }
  EmbedderOptions eo;
  eo.max_batch_tokens = 48;
  eo.max_inputs = 4;
  eo.warm_up = false;
  std::unique_ptr<Embedder> embedder =
      host ? std::make_unique<Embedder>(*host, eo) : std::make_unique<Embedder>(*device, eo);
  reference::ReferenceModel ref(file, reference::ReferenceModel::EngineRounding{});
  ASSERT_FALSE(ref.spec().causal_attn);
  ASSERT_GT(ref.spec().n_dense, 0u);

  std::uniform_int_distribution<int32_t> token(3, kVocab - 1);
  std::vector<std::vector<int32_t>> inputs{std::vector<int32_t>(20), std::vector<int32_t>(13)};
  for (auto& in : inputs)
    for (auto& t : in) t = token(rng);
  const auto got = embedder->embed(inputs);
  ASSERT_EQ(got.size(), inputs.size());
  const double min_cos = is_float(c.type) ? 0.9999 : 0.999;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::vector<float> want = ref.embed(inputs[i]);
    ASSERT_EQ(got[i].size(), want.size());
    EXPECT_GE(cosine(got[i], want), min_cos)
        << "input " << i << ", max abs diff " << max_abs_diff(got[i], want);
  }
}

INSTANTIATE_TEST_SUITE_P(MakeModelFixtures, EmbeddingArchitectures,
                         ::testing::Values(ArchCase{"gemma-embedding", FileType::F16, 128},
                                           ArchCase{"gemma-embedding", FileType::Q4_K_M, 256},
                                           ArchCase{"gemma-embedding", FileType::F16, 128, true},
                                           ArchCase{"gemma-embedding", FileType::Q4_K_M, 256,
                                                    true}),
                         label);

TEST(ArchitecturesLoad, UnsupportedArchitectureFailsAtLoadNamingIt) {
  gguf::GgufWriter w;
  w.set_string("general.architecture", "mamba");
  w.set_u32("mamba.block_count", 1);
  w.set_u32("mamba.embedding_length", 64);
  w.add_tensor("token_embd.weight", gguf::TensorType::F32, {64, 8},
               std::vector<uint8_t>(64 * 8 * sizeof(float)));
  const std::vector<uint8_t> bytes = w.serialize();
  const auto file = gguf::GgufFile::parse(bytes);
  try {
    Model model(test::vk_context(), file);
    FAIL() << "a mamba model loaded";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("unsupported model architecture 'mamba'"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace vkllm::runtime
