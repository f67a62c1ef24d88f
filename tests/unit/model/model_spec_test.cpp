#include "engine/model/model_spec.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "engine/gguf/gguf_writer.h"
#include "engine/model/weight_names.h"

namespace vkllm::model {
namespace {

const std::filesystem::path kModels = std::filesystem::path(VKLLM_SHARED_DIR) / "testdata/models";

TEST(ModelSpec, ReadsTheSharedReferenceLlama) {
  auto f = gguf::GgufFile::open(kModels / "ref-llama-f16.gguf");
  auto s = ModelSpec::from_gguf(f);
  EXPECT_EQ(s.arch, Arch::Llama);
  EXPECT_EQ(s.n_layer, 2u);
  EXPECT_EQ(s.n_embd, 256u);
  EXPECT_EQ(s.n_head, 4u);
  EXPECT_EQ(s.n_head_kv, 2u);
  EXPECT_EQ(s.head_dim, 64u);
  EXPECT_EQ(s.n_ff, 768u);
  EXPECT_EQ(s.n_vocab, 32000u);
  EXPECT_EQ(s.rope_ordering, RopeOrdering::Normal);
  EXPECT_FLOAT_EQ(s.rope_freq_base, 10000.0f);
  EXPECT_FALSE(s.tied_embeddings);
  EXPECT_FALSE(s.qkv_bias);
  EXPECT_FLOAT_EQ(s.attn_scale, 1.0f / 8.0f);
}

TEST(ModelSpec, ReadsTheTinyRandomLlama) {
  auto f = gguf::GgufFile::open(kModels / "llama-2-tiny-random.gguf");
  auto s = ModelSpec::from_gguf(f);
  EXPECT_EQ(s.n_layer, 1u);
  EXPECT_EQ(s.n_embd, 8u);
  EXPECT_EQ(s.n_head, 2u);
  EXPECT_EQ(s.head_dim, 4u);
  EXPECT_EQ(s.n_vocab, 32000u);
}

// A minimal metadata-only file for an architecture (tensors only where the spec looks).
gguf::GgufFile make_file(std::vector<uint8_t>& image, const std::string& arch, bool with_gate,
                         bool with_output) {
  gguf::GgufWriter w;
  w.set_string("general.architecture", arch);
  w.set_u32(arch + ".block_count", 12);
  w.set_u32(arch + ".embedding_length", 64);
  w.set_u32(arch + ".feed_forward_length", 128);
  w.set_u32(arch + ".attention.head_count", 4);
  w.set_u32(arch + ".attention.head_count_kv", 2);
  w.set_u32(arch + ".context_length", 4096);
  auto tensor = [&](const std::string& name, std::vector<uint64_t> shape) {
    uint64_t n = 1;
    for (auto d : shape) n *= d;
    w.add_tensor(name, gguf::TensorType::F32, shape, std::vector<uint8_t>(n * 4));
  };
  tensor(weight_name(Weight::TokenEmbd), {64, 100});
  if (with_output) tensor(weight_name(Weight::Output), {64, 100});
  if (with_gate) tensor(weight_name(Weight::FfnGate, 0), {64, 128});
  image = w.serialize();
  return gguf::GgufFile::parse(image);
}

TEST(ModelSpec, GemmaLayersAlternateSlidingWindowAndScaleEmbeddings) {
  std::vector<uint8_t> img2, img3;
  auto g2 = ModelSpec::from_gguf(make_file(img2, "gemma2", true, false));
  EXPECT_EQ(g2.activation, Activation::GeluTanh);
  EXPECT_TRUE(g2.tied_embeddings);
  EXPECT_TRUE(g2.post_norms);
  EXPECT_FLOAT_EQ(g2.embed_scale, 8.0f);
  EXPECT_FLOAT_EQ(g2.attn_softcap, 50.0f);
  EXPECT_FLOAT_EQ(g2.final_softcap, 30.0f);
  EXPECT_TRUE(g2.layer_is_swa[0]);
  EXPECT_FALSE(g2.layer_is_swa[1]);
  auto g3 = ModelSpec::from_gguf(make_file(img3, "gemma3", true, false));
  for (uint32_t l = 0; l < 12; ++l) EXPECT_EQ(g3.layer_is_swa[l], l % 6 != 5) << l;
  EXPECT_FLOAT_EQ(g3.rope_freq_base_swa, 10000.0f);
}

TEST(ModelSpec, PhiFusesGateAndUpAndQwenUsesNeoxRope) {
  std::vector<uint8_t> a, b;
  auto phi = ModelSpec::from_gguf(make_file(a, "phi3", false, true));
  EXPECT_TRUE(phi.fused_gate_up);
  EXPECT_EQ(phi.rope_ordering, RopeOrdering::NeoX);
  auto qwen = ModelSpec::from_gguf(make_file(b, "qwen2", true, true));
  EXPECT_EQ(qwen.rope_ordering, RopeOrdering::NeoX);
  EXPECT_FALSE(qwen.fused_gate_up);
}

TEST(ModelSpec, UnsupportedArchitectureIsAClearError) {
  std::vector<uint8_t> img;
  try {
    ModelSpec::from_gguf(make_file(img, "mamba", true, true));
    FAIL() << "mamba accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("unsupported model architecture 'mamba'"),
              std::string::npos);
  }
}

TEST(ModelSpec, MissingSizeKeyNamesTheKey) {
  gguf::GgufWriter w;
  w.set_string("general.architecture", "llama");
  auto img = w.serialize();
  try {
    ModelSpec::from_gguf(gguf::GgufFile::parse(img));
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("llama.block_count"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace vkllm::model
