// LoRA adapters in llama.cpp's GGUF format (engine/model/lora_adapter.h) and the make-lora
// fixtures (lora_maker.h): what is read, the scale llama.cpp applies, the update's arithmetic,
// and the errors a user meets for an adapter that is no adapter or does not fit the model.
#include "engine/model/lora_adapter.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>

#include "engine/gguf/gguf_writer.h"
#include "engine/gguf/quants.h"
#include "engine/model/lora_maker.h"
#include "engine/model/model_maker.h"

namespace vkllm::model {
namespace {

using gguf::TensorType;

std::vector<uint8_t> vocab_bytes() {
  gguf::GgufWriter w;
  w.set_string("tokenizer.ggml.model", "llama");
  std::vector<std::string> tokens{"<unk>", "<s>", "</s>"};
  while (tokens.size() < 64) tokens.push_back("tok" + std::to_string(tokens.size()));
  w.set_strings("tokenizer.ggml.tokens", tokens);
  w.set_f32s("tokenizer.ggml.scores", std::vector<float>(tokens.size(), 0.0f));
  return w.serialize();
}

std::vector<uint8_t> base_bytes(const std::string& arch, const std::string& shape) {
  const auto vocab_image = vocab_bytes();
  const auto vocab = gguf::GgufFile::parse(vocab_image);
  MakeModelOptions o;
  o.arch = arch;
  o.shape = parse_model_shape(shape);
  o.seed = 3;
  gguf::GgufWriter w;
  build_random_model(o, vocab, w);
  return w.serialize();
}

std::vector<uint8_t> lora_bytes(const gguf::GgufFile& base, const MakeLoraOptions& o = {}) {
  gguf::GgufWriter w;
  build_random_lora(o, base, w);
  return w.serialize();
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const LoraError& e) {
    return e.what();
  }
  return "(no LoraError)";
}

TEST(LoraAdapter, MakeLoraWritesLlamaCppsFormatDeterministically) {
  const auto base_image = base_bytes("llama", "64x2x4x2");
  const auto base = gguf::GgufFile::parse(base_image);
  MakeLoraOptions o;
  o.rank = 4;
  o.alpha = 8;
  o.seed = 5;
  const auto bytes = lora_bytes(base, o);
  EXPECT_EQ(bytes, lora_bytes(base, o));
  MakeLoraOptions other = o;
  other.seed = 6;
  EXPECT_NE(bytes, lora_bytes(base, other));

  const auto file = gguf::GgufFile::parse(bytes);
  EXPECT_EQ(file.get<std::string>("general.type"), "adapter");
  EXPECT_EQ(file.get<std::string>("adapter.type"), "lora");
  EXPECT_EQ(file.get<std::string>("general.architecture"), "llama");
  EXPECT_EQ(file.get<float>("adapter.lora.alpha"), 8.0f);
  // lora_a: [n_in, r]; lora_b: [r, n_out] (ggml order), 7 weights x 2 layers x 2.
  EXPECT_EQ(file.tensors().size(), 28u);
  const auto* a = file.find_tensor("blk.1.ffn_down.weight.lora_a");
  const auto* b = file.find_tensor("blk.1.ffn_down.weight.lora_b");
  const auto* w = base.find_tensor("blk.1.ffn_down.weight");
  ASSERT_TRUE(a && b && w);
  EXPECT_EQ(a->shape, (std::vector<uint64_t>{w->shape[0], 4}));
  EXPECT_EQ(b->shape, (std::vector<uint64_t>{4, w->shape[1]}));
  EXPECT_EQ(a->type, TensorType::F16);

  const auto adapter = LoraAdapter::from_bytes(bytes, 0.5f);
  EXPECT_EQ(adapter.size(), 14u);
  EXPECT_TRUE(adapter.adapts("blk.0.attn_q.weight"));
  EXPECT_FALSE(adapter.adapts("output.weight"));
  EXPECT_EQ(adapter.rank("blk.0.attn_q.weight"), 4u);
  EXPECT_FLOAT_EQ(adapter.scale("blk.0.attn_q.weight"), 0.5f * 8 / 4);  // user * alpha / r
  EXPECT_NO_THROW(adapter.check_base(base));
}

// W + scale * B A, computed here the long way from the file's own A and B.
TEST(LoraAdapter, DeltaIsScaleTimesBTimesA) {
  gguf::GgufWriter w;
  w.set_string("general.architecture", "llama");
  w.set_string("general.type", "adapter");
  w.set_string("adapter.type", "lora");
  w.set_f32("adapter.lora.alpha", 6.0f);
  const uint32_t n_in = 4, n_out = 3, r = 2;
  const std::vector<float> a = {1, 2, 3, 4, -1, 0, 1, 0.5f};  // r rows of n_in
  const std::vector<float> b = {1, -2, 0.5f, 3, 2, 0};        // n_out rows of r
  auto f32 = [](const std::vector<float>& v) {
    std::vector<uint8_t> out(v.size() * 4);
    std::memcpy(out.data(), v.data(), out.size());
    return out;
  };
  w.add_tensor("blk.0.attn_q.weight.lora_a", TensorType::F32, {n_in, r}, f32(a));
  w.add_tensor("blk.0.attn_q.weight.lora_b", TensorType::F32, {r, n_out}, f32(b));
  const auto adapter = LoraAdapter::from_bytes(w.serialize());
  EXPECT_FLOAT_EQ(adapter.scale("blk.0.attn_q.weight"), 3.0f);
  // Rows 1 and 2 of the weight, starting from ones.
  std::vector<float> rows(2 * n_in, 1.0f);
  adapter.add_delta("blk.0.attn_q.weight", 1, rows);
  for (uint32_t o = 1; o < 3; ++o) {
    for (uint32_t i = 0; i < n_in; ++i) {
      float d = 0;
      for (uint32_t k = 0; k < r; ++k) d += b[o * r + k] * a[k * n_in + i];
      EXPECT_FLOAT_EQ(rows[(o - 1) * n_in + i], 1.0f + 3.0f * d) << o << "," << i;
    }
  }
}

TEST(LoraAdapter, ClearErrorsForWhatIsNoAdapterOrDoesNotFit) {
  const auto llama_image = base_bytes("llama", "64x2x4x2");
  const auto llama = gguf::GgufFile::parse(llama_image);
  const auto adapter = LoraAdapter::from_bytes(lora_bytes(llama));

  // A model file given as an adapter.
  EXPECT_EQ(error_of([&] { (void)LoraAdapter::from_bytes(llama_image); }),
            "not a LoRA adapter: general.type is '', expected 'adapter'");
  // Another architecture.
  const auto qwen_image = base_bytes("qwen2", "64x2x4x2");
  EXPECT_EQ(error_of([&] { adapter.check_base(gguf::GgufFile::parse(qwen_image)); }),
            "the adapter is for architecture 'llama', the model is 'qwen2'");
  // Another width.
  const auto wide_image = base_bytes("llama", "128x2x4x2");
  EXPECT_EQ(error_of([&] { adapter.check_base(gguf::GgufFile::parse(wide_image)); }),
            "the adapter's 'blk.0.attn_k.weight' pair (lora_a [64, 8], lora_b [8, 32]) does not "
            "fit the model's [128, 64] weight");
  // More layers in the adapter than in the model.
  const auto deep_image = base_bytes("llama", "64x3x4x2");
  const auto deep_adapter = LoraAdapter::from_bytes(lora_bytes(gguf::GgufFile::parse(deep_image)));
  EXPECT_EQ(error_of([&] { deep_adapter.check_base(llama); }),
            "the adapter adapts 'blk.2.attn_k.weight', which the model does not have");

  // A pair without its B, and a tensor that is neither half of a pair.
  gguf::GgufWriter w;
  w.set_string("general.architecture", "llama");
  w.set_string("general.type", "adapter");
  w.set_string("adapter.type", "lora");
  w.add_tensor("blk.0.attn_q.weight.lora_a", TensorType::F32, {64, 2},
               std::vector<uint8_t>(64 * 2 * 4));
  gguf::GgufWriter w2 = w;
  EXPECT_EQ(error_of([&] { (void)LoraAdapter::from_bytes(w.serialize()); }),
            "LoRA pair for 'blk.0.attn_q.weight' is missing its lora_b");
  w2.add_tensor("blk.0.attn_q.weight.lora_b", TensorType::F32, {2, 64},
                std::vector<uint8_t>(64 * 2 * 4));
  w2.add_tensor("blk.0.attn_q.weight.extra", TensorType::F32, {4}, std::vector<uint8_t>(16));
  EXPECT_EQ(error_of([&] { (void)LoraAdapter::from_bytes(w2.serialize()); }),
            "LoRA tensor 'blk.0.attn_q.weight.extra' is neither a .lora_a nor a .lora_b");
  // adapter.type other than lora (e.g. a control vector's).
  gguf::GgufWriter w3;
  w3.set_string("general.type", "adapter");
  w3.set_string("adapter.type", "control_vector");
  EXPECT_EQ(error_of([&] { (void)LoraAdapter::from_bytes(w3.serialize()); }),
            "not a LoRA adapter: adapter.type is 'control_vector', expected 'lora'");
}

TEST(LoraAdapter, MakeLoraRefusesTargetsTheBaseLacks) {
  const auto base_image = base_bytes("llama", "64x2x4x2");
  const auto base = gguf::GgufFile::parse(base_image);
  MakeLoraOptions o;
  o.targets = {"attn_qkv"};
  gguf::GgufWriter w;
  EXPECT_THROW(build_random_lora(o, base, w), std::invalid_argument);
}

}  // namespace
}  // namespace vkllm::model
