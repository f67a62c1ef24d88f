// The reader against real GGUF files produced by llama.cpp's converters (shared test data).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <string>

#include "engine/gguf/gguf_file.h"

namespace vkllm::gguf {
namespace {

namespace fs = std::filesystem;
const fs::path kShared = VKLLM_SHARED_DIR "/testdata";

// Every tensor's data must lie inside the file, aligned, and not overlap another.
void expect_sound_layout(const GgufFile& f) {
  const uint64_t size = f.bytes().size();
  EXPECT_EQ(f.data_offset() % f.alignment(), 0u);
  for (const TensorInfo& t : f.tensors()) {
    SCOPED_TRACE(t.name);
    auto data = f.tensor_data(t);
    EXPECT_EQ(data.size(), t.byte_size);
    EXPECT_GE(data.data(), f.bytes().data() + f.data_offset());
    EXPECT_LE(f.data_offset() + t.offset + t.byte_size, size);
    EXPECT_EQ(t.offset % f.alignment(), 0u);
    EXPECT_EQ(t.byte_size, row_bytes(t.type, t.shape[0]) * (t.element_count() / t.shape[0]));
    EXPECT_EQ(f.find_tensor(t.name), &t);
  }
}

TEST(GgufRealFiles, TinyRandomLlama) {
  auto f = GgufFile::open(kShared / "models/llama-2-tiny-random.gguf");
  EXPECT_TRUE(f.version() == 2 || f.version() == 3);
  EXPECT_EQ(f.get<std::string>("general.architecture"), "llama");
  EXPECT_EQ(f.get<uint32_t>("llama.embedding_length"), 8u);
  EXPECT_EQ(f.get<uint32_t>("llama.block_count"), 1u);
  EXPECT_EQ(f.get<uint32_t>("llama.attention.head_count"), 2u);
  const auto tokens = f.get_array<std::string>("tokenizer.ggml.tokens");
  ASSERT_EQ(tokens.size(), 32000u);
  EXPECT_EQ(tokens[0], "<unk>");
  EXPECT_EQ(tokens[1], "<s>");
  EXPECT_EQ(tokens[2], "</s>");
  const auto scores = f.get_array<float>("tokenizer.ggml.scores");
  ASSERT_EQ(scores.size(), 32000u);
  for (float s : scores) ASSERT_TRUE(std::isfinite(s));
  EXPECT_EQ(f.get_array<int32_t>("tokenizer.ggml.token_type").size(), 32000u);
  const TensorInfo* emb = f.find_tensor("token_embd.weight");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->shape, (std::vector<uint64_t>{8, 32000}));
  EXPECT_EQ(emb->type, TensorType::F16);
  EXPECT_EQ(emb->byte_size, 8u * 32000u * 2u);
  expect_sound_layout(f);
}

TEST(GgufRealFiles, RefLlamaF16MatchesReadme) {
  auto f = GgufFile::open(kShared / "models/ref-llama-f16.gguf");
  EXPECT_EQ(f.get<std::string>("general.architecture"), "llama");
  EXPECT_EQ(f.get<uint32_t>("llama.block_count"), 2u);
  EXPECT_EQ(f.get<uint64_t>("llama.embedding_length"), 256u);  // widening is allowed
  EXPECT_EQ(f.get<int64_t>("llama.attention.head_count"), 4);
  EXPECT_EQ(f.get<uint16_t>("llama.attention.head_count_kv"), 2u);  // narrowing when it fits
  EXPECT_EQ(f.get<uint32_t>("llama.feed_forward_length"), 768u);
  EXPECT_EQ(f.get<uint32_t>("llama.context_length"), 2048u);
  EXPECT_FLOAT_EQ(f.get_optional<float>("llama.rope.freq_base").value_or(10000.0f), 10000.0f);
  EXPECT_EQ(f.get<std::string>("tokenizer.ggml.model"), "llama");
  const auto tokens = f.get_array<std::string>("tokenizer.ggml.tokens");
  const auto scores = f.get_array<float>("tokenizer.ggml.scores");
  ASSERT_EQ(tokens.size(), 32000u);
  ASSERT_EQ(scores.size(), 32000u);
  bool any_nonzero = false;
  for (float s : scores) any_nonzero |= s != 0.0f;
  EXPECT_TRUE(any_nonzero) << "README: real scores";

  // 2 layers x 9 tensors + token_embd, output_norm, output (untied).
  EXPECT_EQ(f.tensors().size(), 21u);
  auto shape_of = [&](const char* name) {
    const TensorInfo* t = f.find_tensor(name);
    EXPECT_NE(t, nullptr) << name;
    return t ? t->shape : std::vector<uint64_t>{};
  };
  EXPECT_EQ(shape_of("token_embd.weight"), (std::vector<uint64_t>{256, 32000}));
  EXPECT_EQ(shape_of("output.weight"), (std::vector<uint64_t>{256, 32000}));
  EXPECT_EQ(shape_of("blk.1.attn_q.weight"), (std::vector<uint64_t>{256, 256}));
  EXPECT_EQ(shape_of("blk.1.attn_k.weight"), (std::vector<uint64_t>{256, 128}));  // 2 kv heads
  EXPECT_EQ(shape_of("blk.0.ffn_gate.weight"), (std::vector<uint64_t>{256, 768}));
  EXPECT_EQ(shape_of("blk.0.ffn_down.weight"), (std::vector<uint64_t>{768, 256}));
  EXPECT_EQ(shape_of("output_norm.weight"), (std::vector<uint64_t>{256}));
  EXPECT_EQ(f.find_tensor("blk.2.attn_q.weight"), nullptr);
  expect_sound_layout(f);
}

TEST(GgufRealFiles, QuantizedModelsUseTheirTypes) {
  auto q8 = GgufFile::open(kShared / "models/ref-llama-q8_0.gguf");
  EXPECT_EQ(q8.find_tensor("blk.0.attn_q.weight")->type, TensorType::Q8_0);
  expect_sound_layout(q8);
  auto q4 = GgufFile::open(kShared / "models/ref-llama-q4_k_m.gguf");
  bool has_q4k = false, has_q6k = false;
  for (const auto& t : q4.tensors()) {
    has_q4k |= t.type == TensorType::Q4_K;
    has_q6k |= t.type == TensorType::Q6_K;
  }
  EXPECT_TRUE(has_q4k);
  EXPECT_TRUE(has_q6k);
  expect_sound_layout(q4);
}

TEST(GgufRealFiles, EveryVocabFileParses) {
  int count = 0;
  for (const auto& entry : fs::directory_iterator(kShared / "vocab")) {
    if (entry.path().extension() != ".gguf") continue;
    SCOPED_TRACE(entry.path().string());
    auto f = GgufFile::open(entry.path());
    const auto tokens = f.get_array<std::string>("tokenizer.ggml.tokens");
    EXPECT_GT(tokens.size(), 1000u);
    EXPECT_FALSE(f.get<std::string>("tokenizer.ggml.model").empty());
    // Keys come back in file order, each exactly once.
    const auto keys = f.metadata_keys();
    EXPECT_EQ(keys.size(), f.metadata().size());
    for (auto k : keys) EXPECT_TRUE(f.has(k)) << k;
    expect_sound_layout(f);
    ++count;
  }
  EXPECT_GE(count, 10);
}

TEST(GgufRealFiles, MissingFileNamesThePath) {
  try {
    GgufFile::open(kShared / "models/does-not-exist.gguf");
    FAIL() << "expected GgufError";
  } catch (const GgufError& e) {
    EXPECT_NE(std::string(e.what()).find("does-not-exist.gguf"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace vkllm::gguf
